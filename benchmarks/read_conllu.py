"""Time our CoNLL-U data path against bare ``conllu.parse_incr`` on UD English-EWT train.

Usage: ``python benchmarks/read_conllu.py [--ud-root DIR] [--repeats 3]`` (default root: $UD_ROOT).
Prints the best of ``repeats`` runs for (a) ``conllu.parse_incr`` alone and (b) read_conllu into
Sentences + build_vocabs + encode, their ratio (target <= 1.5), and the peak Python memory of (b)
measured by tracemalloc in a separate, untimed run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import conllu

from biaffine.data.batching import encode
from biaffine.data.conllu import read_conllu
from biaffine.data.vocab import build_vocabs

EWT_TRAIN = Path("UD_English-EWT") / "en_ewt-ud-train.conllu"


def parse_incr_only(path: Path) -> int:
    with open(path, encoding="utf-8") as file:
        return sum(1 for _ in conllu.parse_incr(file))


def our_pipeline(path: Path) -> int:
    sentences = list(read_conllu(path, require_trees=True))
    vocabs = build_vocabs(sentences)
    return len(encode(sentences, vocabs))


def time_once(function: Callable[[Path], int], path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    count = function(path)
    return time.perf_counter() - start, count


def best_times(path: Path, repeats: int) -> tuple[float, float, int]:
    """Best seconds of parse_incr and of ours, alternated so machine load hits both alike."""
    base, ours, count = float("inf"), float("inf"), 0
    for _ in range(repeats):
        seconds, count = time_once(parse_incr_only, path)
        base = min(base, seconds)
        seconds, ours_count = time_once(our_pipeline, path)
        ours = min(ours, seconds)
        if ours_count != count:
            raise RuntimeError(f"sentence counts differ: parse_incr {count}, ours {ours_count}")
    return base, ours, count


def peak_memory(function: Callable[[Path], int], path: Path) -> int:
    tracemalloc.start()
    function(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ud-root", type=Path, default=os.environ.get("UD_ROOT"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    if args.ud_root is None:
        parser.error("give --ud-root or set UD_ROOT")
    path = Path(args.ud_root) / EWT_TRAIN
    size = path.stat().st_size
    print(f"file: {path} ({size / 2**20:.1f} MiB), best of {args.repeats}")
    base, ours, count = best_times(path, args.repeats)
    print(f"conllu.parse_incr alone:             {base:6.2f} s  ({count} sentences)")
    print(f"read_conllu + build_vocabs + encode: {ours:6.2f} s")
    print(f"ratio: {ours / base:.2f}x (target <= 1.5x)")
    peak = peak_memory(our_pipeline, path)
    print(
        f"peak Python memory of our pipeline: {peak / 2**20:.1f} MiB = {peak / size:.1f}x file size"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
