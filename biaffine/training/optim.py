"""What the optimizer updates at which rate: parameter groups and the learning-rate schedule.

A fine-tuned transformer learns at its own rate, lower for layers nearer the input (layer-wise
decay, as ELECTRA and UDPipe 2's fine-tuning do: the lower layers hold what pretraining
learned that a parser needs least changed); every other weight learns at the optimizer's rate.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from biaffine.nn.transformer import TransformerEmbedding

__all__ = ["check_schedule", "load_schedule", "lr_decay_scheduler", "parameter_groups"]

_LAYER = re.compile(r"(?:^|\.)layer\.(\d+)\.")


def parameter_groups(
    model: nn.Module, *, transformer_lr: float | None = None, layer_decay: float = 1.0
) -> list[dict[str, Any]]:
    """The optimizer's groups: ``{"params": [...]}`` with an ``lr`` where it is not the default.

    A fine-tuned transformer of ``L`` layers puts its embeddings at depth 0, layer ``k`` (from
    0) at depth ``k + 1`` and anything above (a pooler) at ``L``; depth ``d`` learns at
    ``transformer_lr * layer_decay ** (L - d)``. Without a fine-tuned transformer, or with
    ``transformer_lr`` None and ``layer_decay`` 1, there is one group: every parameter at the
    optimizer's own rate.

    Args:
        model: the parser.
        transformer_lr: rate of the transformer's top layer; None = the optimizer's rate (then
            ``layer_decay`` must be 1, since there is no rate to decay from).
        layer_decay: factor per layer below the top, in (0, 1].

    Raises:
        ValueError: on a decay outside (0, 1], or a decay without ``transformer_lr``.
    """
    if not 0.0 < layer_decay <= 1.0:
        raise ValueError(f"trainer.layer_decay={layer_decay} must be in (0, 1]")
    if transformer_lr is None:
        if layer_decay != 1.0:
            raise ValueError("trainer.layer_decay needs trainer.transformer_lr (the top rate)")
        return [{"params": list(model.parameters())}]
    by_rate: dict[float, list[nn.Parameter]] = {}
    tuned: set[int] = set()
    for module in model.modules():
        if isinstance(module, TransformerEmbedding) and module.finetune:
            n_layers = module.network.config.num_hidden_layers
            for name, parameter in module.network.named_parameters():
                rate = transformer_lr * layer_decay ** (n_layers - _depth(name, n_layers))
                by_rate.setdefault(rate, []).append(parameter)
                tuned.add(id(parameter))
    rest = [p for p in model.parameters() if id(p) not in tuned]
    return [{"params": rest}] + [{"params": ps, "lr": rate} for rate, ps in by_rate.items()]


def _depth(name: str, n_layers: int) -> int:
    """0 for the embeddings, k + 1 for ``...layer.k...``, ``n_layers`` for anything else."""
    if name.startswith("embeddings."):
        return 0
    found = _LAYER.search(name)
    return int(found.group(1)) + 1 if found else n_layers


def check_schedule(rate: float, steps: int, warmup: int) -> None:
    """Refuse a decay schedule :func:`lr_decay_scheduler` cannot follow.

    Raises:
        ValueError: naming the trainer setting.
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"trainer.lr_decay={rate} must be in (0, 1]")
    if steps < 1:
        raise ValueError(f"trainer.lr_decay_steps={steps} must be >= 1")
    if warmup < 0:
        raise ValueError(f"trainer.warmup_steps={warmup} must be >= 0")


def lr_decay_scheduler(
    optimizer: torch.optim.Optimizer, *, rate: float, steps: int, warmup: int = 0
) -> torch.optim.lr_scheduler.LambdaLR:
    """Each group's rate times ``rate ** (step / steps)``, and ``(step + 1) / warmup`` before.

    Decay per batch as Dozat & Manning (2017): x0.75 every 5000 steps; a linear warm-up over the
    first ``warmup`` steps keeps the first updates of a fine-tuned transformer from wiping out
    what it learned in pretraining (Devlin et al., 2019).
    """
    check_schedule(rate, steps, warmup)

    def factor(step: int) -> float:
        return rate ** (step / steps) * min(1.0, (step + 1) / warmup if warmup else 1.0)

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def load_schedule(scheduler: torch.optim.lr_scheduler.LambdaLR, state: dict[str, Any]) -> None:
    """Restore ``scheduler`` from a ``last.pt``, including one saved before warm-up existed.

    Those runs saved an ``ExponentialLR``, whose state lacks ``lr_lambdas``; its step count
    (``last_epoch``) is all the closed form of :func:`lr_decay_scheduler` needs.
    """
    scheduler.load_state_dict({"lr_lambdas": [None] * len(scheduler.base_lrs), **state})
