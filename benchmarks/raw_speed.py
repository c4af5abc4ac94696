"""Raw text against gold tokens: the raw-text pipeline's speed as a fraction of parsing gold tokens.

Usage: ``python -m benchmarks.raw_speed [MODEL ...] [--input FILE.conllu] [--rounds 3]
[--threads 2]`` (MODEL: installed model names, every shipped one when none is named; default
input: each model's test set under $UD_ROOT).

Each round parses the test set once from its gold tokens, every column predicted
(``Parser.parse(sentences, columns=["all"], overwrite=True)``), and once from its raw text,
rebuilt as UD's conllu-to-text conversion does (``Parser.parse(text=...)``: the segmenter,
then the same parse), in turn, so that both see the same load; then the segmenter alone on
the same text. The best round of each is kept. The fraction is the gold-token seconds over the
raw-text seconds for the same text (issue 36 asks for at least 0.8): sentences per second
would mislead, since the segmenter finds more or fewer sentences than the gold file has.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from biaffine import models
from biaffine.api import Parser
from biaffine.data.conllu import read_conllu
from biaffine.installed import SHIPPED, find, installed
from biaffine.models.scoring import ud_test_file
from biaffine.runtime import best_seconds, cpu_description
from rawtext import corpus_text

STEPS = ("gold tokens", "raw text", "segmenter alone")


def main(argv: list[str] | None = None) -> None:
    """Time every model's three steps in interleaved rounds; print one markdown table."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("models", nargs="*", help="installed models (default: every shipped one)")
    options.add_argument("--input", type=Path, default=None, help="a CoNLL-U file for all models")
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--threads", type=int, default=2)
    args = options.parse_args(argv)
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")  # no plain-Python decoding timed
    names = args.models or sorted(n for n, m in installed().items() if m.folder.parent == SHIPPED)
    print(f"{cpu_description()}; {args.threads} threads; best of {args.rounds} rounds\n")
    print("| model | characters | gold tokens, s | raw text, s | segmenter, s | fraction |")
    print("|---|--:|--:|--:|--:|--:|")
    for name in names:
        treebank = Path(os.environ["UD_ROOT"]) / find(name).card["treebank"]["name"]
        source = args.input or ud_test_file(treebank)
        best = _best_seconds(models.load(name, threads=args.threads), source, args.rounds)
        gold, raw, alone = (best[step] for step in STEPS)
        cells = [f"{gold:.2f}", f"{raw:.2f}", f"{alone:.2f}", f"{gold / raw:.2f}"]
        print(f"| {name} | {best['characters']:,} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


def _best_seconds(parser: Parser, source: Path, rounds: int) -> dict[str, float]:
    """Each of :data:`STEPS`' best seconds over ``rounds`` interleaved rounds; the text's length."""
    sentences, text = list(read_conllu(source)), corpus_text(source)
    segmenter = parser.segmenter
    steps: dict[str, Callable[[], object]] = {
        "gold tokens": lambda: parser.parse(sentences, columns=["all"], overwrite=True),
        "raw text": lambda: parser.parse(text=text),
        "segmenter alone": lambda: segmenter.segment(text),
    }
    parser.parse(sentences[:8], columns=["all"], overwrite=True)  # warm: first-call costs untimed
    parser.parse(text=text[:2000])
    best = dict.fromkeys(STEPS, float("inf"))
    for _ in range(rounds):
        for step, run in steps.items():
            best[step] = min(best[step], best_seconds(run, rounds=1))
    return best | {"characters": len(text)}


if __name__ == "__main__":
    main()
