"""Micro-benchmark: forward + backward of the tree-CRF loss against the local head cross entropy.

Run from the repository root (as a module, so that this checkout's ``biaffine`` is imported)::

    UD_ROOT=/path/to/ud python -m benchmarks.treecrf             # EWT train lengths
    python -m benchmarks.treecrf --batches 5 --repeats 3         # smoke run, fixed lengths 10..60

Each batch holds ``--batch-size`` sentences whose lengths are drawn from UD English EWT train
(``$UD_ROOT/UD_English-EWT``; fixed lengths 10..60 when it is not there), with float32 scores
shaped as the parser emits them (``-inf`` on the diagonal and beyond each length) and random
single-rooted gold trees. Times are medians over batches of the best of ``--repeats`` runs,
on ``--threads`` torch threads; the markdown report goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812

from biaffine.data.conllu import read_conllu
from biaffine.nn.treecrf import tree_log_prob


def sentence_lengths() -> tuple[np.ndarray, str]:
    """Word counts of EWT train under $UD_ROOT, or 10..60 when it is not available."""
    path = Path(os.environ.get("UD_ROOT", "")) / "UD_English-EWT" / "en_ewt-ud-train.conllu"
    if os.environ.get("UD_ROOT") and path.is_file():
        return np.array([len(s.forms) for s in read_conllu(path)]), f"EWT train ({path})"
    return np.arange(10, 61), "fixed lengths 10..60 (UD_ROOT not set)"


def make_batch(lengths: np.ndarray, rng: np.random.Generator):
    """(scores float32[B, N+1, N+1] requiring grad, heads int64[B, N+1], lengths int64[B])."""
    size = int(lengths.max()) + 1
    scores = torch.from_numpy(rng.normal(size=(len(lengths), size, size)).astype(np.float32))
    heads = torch.full((len(lengths), size), -1, dtype=torch.int64)
    for b, n in enumerate(lengths):
        order = rng.permutation(np.arange(1, n + 1))
        heads[b, order[0]] = 0  # one word on ROOT, every other under an earlier one in `order`
        for i in range(1, n):
            heads[b, order[i]] = order[rng.integers(0, i)]
        scores[b, :, n + 1 :] = -torch.inf
    scores[:, torch.arange(size), torch.arange(size)] = -torch.inf
    return scores.requires_grad_(), heads, torch.from_numpy(lengths.astype(np.int64))


def local_loss(scores: torch.Tensor, heads: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The parser's head cross entropy: mean over words of -log softmax at the gold head."""
    mask = heads >= 0
    return F.cross_entropy(scores[mask], heads[mask])


def tree_nll(
    scores: torch.Tensor, heads: torch.Tensor, lengths: torch.Tensor, **options: bool
) -> torch.Tensor:
    """The parser's tree-CRF head loss (``model.loss=crf``): -log P(gold tree) per word."""
    return (
        -tree_log_prob(scores.double(), heads, lengths, **options).sum() / lengths.sum()
    ).float()


def time_loss(loss_fn: Callable[..., torch.Tensor], batch, repeats: int) -> float:
    """Best of ``repeats`` forward + backward times, in ms."""
    scores, heads, lengths = batch
    best = float("inf")
    for _ in range(repeats):
        scores.grad = None
        start = time.perf_counter()
        loss_fn(scores, heads, lengths).backward()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--batches", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--projective", action="store_true", help="also Eisner's inside (slow)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    pool, source = sentence_lengths()
    batches = [make_batch(rng.choice(pool, size=args.batch_size), rng) for _ in range(args.batches)]
    losses = {
        "local cross entropy": local_loss,
        "tree CRF (one root)": tree_nll,
        "tree CRF (multi-root)": lambda s, h, n: tree_nll(s, h, n, root_constraint=False),
    }
    if args.projective:
        losses["tree CRF (projective)"] = lambda s, h, n: tree_nll(s, h, n, projective=True)
    for loss_fn in losses.values():  # warm-up
        time_loss(loss_fn, batches[0], 1)
    medians = {
        name: statistics.median(time_loss(fn, batch, args.repeats) for batch in batches)
        for name, fn in losses.items()
    }
    widths = [int(b[2].max()) for b in batches]
    print(
        f"# Tree-CRF loss micro-benchmark\n\n{platform.processor() or platform.machine()}, "
        f"torch {torch.__version__}, {args.threads} threads, load average "
        f"{os.getloadavg()[0]:.2f}; {args.batches} batches of {args.batch_size} sentences "
        f"from {source}, N = {min(widths)}..{max(widths)}\n"
    )
    print("| loss | ms per batch (fwd + bwd) | ratio to local |\n|---|---|---|")
    local = medians["local cross entropy"]
    for name, ms in medians.items():
        print(f"| {name} | {ms:.2f} | {ms / local:.1f}x |")


if __name__ == "__main__":
    main()
