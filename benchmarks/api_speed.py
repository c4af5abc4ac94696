"""The Python API against predict.py's function on the same file: seconds, best of N.

Usage: ``python benchmarks/api_speed.py CHECKPOINT [--input FILE] [--threads 2] [--repeats 3]``
(default input: EWT test under $UD_ROOT).

``Parser.parse`` gets the file's text (CoNLL-U in, trees out; the model loaded once, before
timing); ``biaffine.predicting.predict`` does what ``predict.py`` does, checkpoint loading and
writing the output file included. Runs alternate, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from biaffine.api import Parser
from biaffine.predicting import predict

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"


def main() -> None:
    """Time both, print the best of each and their ratio."""
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    api = Parser.load(args.checkpoint, threads=args.threads)
    text = source.read_text(encoding="utf-8")
    api.parse(text)  # warm: kernels loaded, allocator primed
    api_seconds, predict_seconds = [], []
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "out.conllu"
        for _ in range(args.repeats):
            started = time.perf_counter()
            api.parse(text)
            api_seconds.append(time.perf_counter() - started)
            started = time.perf_counter()
            predict(args.checkpoint, source, out, threads=args.threads)
            predict_seconds.append(time.perf_counter() - started)
    best_api, best_predict = min(api_seconds), min(predict_seconds)
    print(f"{source.name}, {args.threads} threads, best of {args.repeats}")
    print(f"Parser.parse {best_api:.2f} s, predict() {best_predict:.2f} s")
    print(f"API / predict: {best_api / best_predict:.3f}")


if __name__ == "__main__":
    main()
