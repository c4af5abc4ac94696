"""Training steps of two configurations, paired batch by batch, in seconds per step.

Run from the repository root with UD_ROOT set::

    UD_ROOT=/path/to/ud python -m benchmarks.train_steps --steps 40 --b model.loss=crf
    UD_ROOT=/path/to/ud python -m benchmarks.train_steps --steps 20 --b trainer.bf16=true

Builds the parser of ``experiment=ewt_cpu_2h`` (plus ``--experiment`` overrides) twice, A with
``--a`` overrides and B with ``--b`` ones, from the same seed, and runs full training steps
(forward and loss, under bfloat16 autocast where ``trainer.bf16`` is set, then backward,
clipping, Adam) on the same EWT train batches (``trainer.max_tokens`` of the recipe, shuffled
as in training), alternating which goes first, so that both see the same machine load. Prints
the markdown report, with the CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir

from biaffine.data.batching import batches_by_tokens, encode
from biaffine.runtime import check_bf16, cpu_description
from biaffine.training.compose import (
    build_model,
    load_splits,
    prepare_training,
    training_vocabs,
)

CONF = Path(__file__).resolve().parents[1] / "conf"


def train_step(model, optimizer: torch.optim.Optimizer, batch, clip: float | None, bf16: bool):
    """One plain optimizer step (what the loop does on one process without accumulation)."""
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model.loss(model(batch), batch)
    loss.backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


def configuration(experiment: str, overrides: list[str]):
    with initialize_config_dir(config_dir=str(CONF), version_base=None):
        return compose(config_name="train", overrides=[f"experiment={experiment}", *overrides])


def build(cfg, splits):
    """The parser, its optimizer and its EWT train batches, as ``train.py`` prepares them.

    Transition parsers train on pseudo-projective trees with encoded labels, so the training
    sentences and the vocabularies are made per configuration; the batches hold the same
    sentences for every configuration (same lengths, same seed).
    """
    train = prepare_training(cfg.model, splits.train)
    vocabs = training_vocabs(splits.train, train, min_word_count=cfg.trainer.min_word_count)
    torch.manual_seed(cfg.trainer.seed)
    model = build_model(cfg.model, vocabs)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.9), eps=1e-12)
    batches = batches_by_tokens(encode(train, vocabs), cfg.trainer.max_tokens, shuffle=True, seed=1)
    return model, optimizer, batches


def main() -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--experiment", default="ewt_cpu_2h")
    parser.add_argument("--a", nargs="*", default=[], help="overrides of A (the baseline)")
    parser.add_argument("--b", nargs="*", default=[], help="overrides of B")
    args = parser.parse_args()
    configs = {
        "A": configuration(args.experiment, args.a),
        "B": configuration(args.experiment, args.b),
    }
    torch.set_num_threads(args.threads)
    splits = load_splits(configs["A"].data)
    runs = {}
    for name, cfg in configs.items():
        if cfg.trainer.bf16:
            check_bf16(torch.device("cpu"), setting="trainer.bf16")
        runs[name] = build(cfg, splits)
    times: dict[str, list[float]] = {"A": [], "B": []}
    paired = zip(runs["A"][2], runs["B"][2], strict=False)
    for step, (batch_a, batch_b) in zip(range(args.steps + 1), paired, strict=False):
        batch = {"A": batch_a, "B": batch_b}  # the same sentences, each run's vocabularies
        for name in ("A", "B") if step % 2 else ("B", "A"):
            model, optimizer, _ = runs[name]
            cfg = configs[name]
            start = time.perf_counter()
            train_step(model, optimizer, batch[name], cfg.trainer.clip, cfg.trainer.bf16)
            if step > 0:  # the first step warms up (numba compile, allocator)
                times[name].append(time.perf_counter() - start)
    a, b = times["A"], times["B"]
    ratios = [y / x for x, y in zip(a, b, strict=True)]
    print(
        f"# Training steps, A ({' '.join(args.a) or 'as is'}) vs B ({' '.join(args.b) or 'as is'})"
        f", experiment={args.experiment}\n\n"
        f"{cpu_description()}; torch {torch.__version__}, {args.threads} threads, load average "
        f"{os.getloadavg()[0]:.2f}; {len(a)} paired steps on EWT train\n\n"
        "| run | s/step (mean) | s/step (median) |\n|---|---|---|\n"
        f"| A | {statistics.mean(a):.3f} | {statistics.median(a):.3f} |\n"
        f"| B | {statistics.mean(b):.3f} | {statistics.median(b):.3f} |\n\n"
        f"B / A: {sum(b) / sum(a):.3f} in total, "
        f"{statistics.median(ratios):.3f} median of the per-step ratios"
    )


if __name__ == "__main__":
    main()
