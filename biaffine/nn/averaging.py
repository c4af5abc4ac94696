"""A moving average of a network's weights, for the trainers of the parser and the segmenter."""

from __future__ import annotations

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

__all__ = ["check_ema_decay", "weight_average"]


def check_ema_decay(decay: float) -> None:
    """Refuse a decay :func:`weight_average` cannot take.

    Raises:
        ValueError: if ``decay`` is not in (0, 1), naming the trainer setting.
    """
    if not 0.0 < decay < 1.0:
        raise ValueError(
            f"trainer.ema_decay={decay} must be in (0, 1), or null to score the weights"
        )


def weight_average(model: nn.Module, decay: float) -> AveragedModel:
    """An exponential moving average of ``model``'s weights, updated after every step.

    The average of the last few thousand steps generalizes better than the final weights of a
    short run whose learning rate is still far from zero (Polyak & Juditsky, 1992). The decay
    warms up as ``min(decay, (1 + k) / (10 + k))`` after k updates, so the first epochs are not
    dominated by the random initial weights.

    Raises:
        ValueError: if ``decay`` is not in (0, 1).
    """
    check_ema_decay(decay)

    def update(averaged: list[torch.Tensor], current: list[torch.Tensor], k: torch.Tensor) -> None:
        weight = 1.0 - min(decay, (1.0 + float(k)) / (10.0 + float(k)))
        torch._foreach_lerp_(averaged, current, weight)

    return AveragedModel(model, multi_avg_fn=update)
