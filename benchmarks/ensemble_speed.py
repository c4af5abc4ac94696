"""Ensemble speed: an ensemble against one of its networks, parsing a test file from gold tokens.

Usage: ``python -m benchmarks.ensemble_speed ENSEMBLE ONE [--input FILE.conllu] [--rounds 4]
[--threads 2]`` (ENSEMBLE and ONE: installed model names or checkpoints; default input: the
ensemble's test set under $UD_ROOT when it is a shipped model).

Each round parses the whole file once with each parser, every column predicted
(``Parser.parse(..., columns=["all"], overwrite=True)``), in turn, so that both see the same
load; the best round of each is kept, and the ensemble's speed is printed as a fraction of the
one network's (two networks cannot do better than 0.5 but for what they share: the batches,
decoding and the columns). Prints a markdown row with the CPU and the load average, since
timings on shared cores are noisy.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from biaffine import installed, models
from biaffine.api import Parser
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.models.scoring import ud_test_file
from biaffine.runtime import cpu_description


def main() -> None:
    """Time both parsers in interleaved rounds; print seconds, sentences/s and the fraction."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("ensemble", help="an installed model's name or a checkpoint")
    options.add_argument("one", help="one of its networks: a model's name or a checkpoint")
    options.add_argument("--input", type=Path, default=None)
    options.add_argument("--rounds", type=int, default=4)
    options.add_argument("--threads", type=int, default=2)
    args = options.parse_args()
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")  # no plain-Python decoding timed
    source = args.input or _test_file(args.ensemble)
    sentences = list(read_conllu(source))
    parsers = {name: _load(name, args.threads) for name in (args.ensemble, args.one)}
    best = dict.fromkeys(parsers, float("inf"))
    for _ in range(args.rounds):
        for name, parser in parsers.items():
            best[name] = min(best[name], _seconds(parser, sentences))
    print(f"{source.name}: {len(sentences)} sentences; {args.threads} threads")
    print(f"{cpu_description()}; load average {os.getloadavg()[0]:.2f}\n")
    print(f"| parser | seconds (best of {args.rounds}) | sentences/s | of one network |")
    print("|---|--:|--:|--:|")
    for name, seconds in best.items():
        share = best[args.one] / seconds
        print(f"| {name} | {seconds:.2f} | {len(sentences) / seconds:,.0f} | {share:.2f} |")


def _test_file(name: str) -> Path:
    model = installed.find(name)
    return ud_test_file(Path(os.environ["UD_ROOT"]) / model.card["treebank"]["name"])


def _load(name: str, threads: int) -> Parser:
    if Path(name).is_file():
        return Parser.load(name, threads=threads)
    return models.load(name, threads=threads)


def _seconds(parser: Parser, sentences: list[Sentence]) -> float:
    started = time.perf_counter()
    parser.parse(sentences, columns=["all"], overwrite=True)
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
