"""Training steps with loss=local against loss=crf, paired batch by batch, in seconds per step.

Run from the repository root with UD_ROOT set::

    UD_ROOT=/path/to/ud python -m benchmarks.crf_steps --steps 40

Builds the parser of ``experiment=ewt_cpu_2h`` twice (same seed, same weights), once per head
loss, and runs full training steps (forward, loss, backward, clipping, Adam) on the same EWT
train batches (``trainer.max_tokens`` of the recipe, shuffled as in training), alternating
which loss goes first, so that both see the same machine load. Prints the markdown report.
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
from biaffine.data.vocab import build_vocabs
from biaffine.training.compose import build_model, load_splits


def train_step(model, optimizer: torch.optim.Optimizer, batch, clip: float | None) -> None:
    """One plain optimizer step (what the loop does on one process without accumulation)."""
    optimizer.zero_grad(set_to_none=True)
    model.loss(model(batch), batch).backward()
    if clip is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()


def main() -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (decoding.tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base=None):
        cfg = compose(config_name="train", overrides=["experiment=ewt_cpu_2h"])
    torch.set_num_threads(args.threads)
    splits = load_splits(cfg.data)
    vocabs = build_vocabs(splits.train, min_word_count=cfg.trainer.min_word_count)
    data = encode(splits.train, vocabs)
    runs = {}
    for loss in ("local", "crf"):
        cfg.model.loss = loss
        torch.manual_seed(cfg.trainer.seed)
        model = build_model(cfg.model, vocabs)
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.9), eps=1e-12)
        runs[loss] = (model, optimizer, [])
    batches = batches_by_tokens(data, cfg.trainer.max_tokens, shuffle=True, seed=1)
    for step, batch in zip(range(args.steps + 1), batches, strict=False):
        order = ("local", "crf") if step % 2 else ("crf", "local")
        for loss in order:
            model, optimizer, times = runs[loss]
            start = time.perf_counter()
            train_step(model, optimizer, batch, cfg.trainer.clip)
            if step > 0:  # the first step warms up (numba compile, allocator)
                times.append(time.perf_counter() - start)
    local, crf = runs["local"][2], runs["crf"][2]
    ratios = [c / loc for c, loc in zip(crf, local, strict=True)]
    print(
        f"# Training steps, loss=local vs loss=crf (experiment=ewt_cpu_2h)\n\n"
        f"torch {torch.__version__}, {args.threads} threads, load average "
        f"{os.getloadavg()[0]:.2f}; {len(local)} paired steps on EWT train\n\n"
        "| loss | s/step (mean) | s/step (median) |\n|---|---|---|\n"
        f"| local | {statistics.mean(local):.3f} | {statistics.median(local):.3f} |\n"
        f"| crf | {statistics.mean(crf):.3f} | {statistics.median(crf):.3f} |\n\n"
        f"crf / local: {sum(crf) / sum(local):.3f} in total, "
        f"{statistics.median(ratios):.3f} median of the per-step ratios"
    )


if __name__ == "__main__":
    main()
