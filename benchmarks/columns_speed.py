"""What the tagged columns cost: one model parsing with and without ``columns=all``.

Usage: ``python benchmarks/columns_speed.py CHECKPOINT [--input FILE] [--threads 2]
[--rounds 5] [--slices 1]`` (default input: EWT test under $UD_ROOT).

The same loaded model parses the same CoNLL-U text twice per round, once for HEAD and DEPREL
alone (the tagger heads are not run) and once with every column it tags (UPOS, XPOS, FEATS,
LEMMA: the heads run, the lemma edit scripts are applied and the cells written). Rounds
alternate the two, so both see the same machine load; the report gives the median of each in
sentences per second, their ratio, and the median of each round's own ratio (the tree alone's
time over the time with every column, in the same round): on a shared machine whose speed
drifts by a tenth over a minute, the rounds' ratios vary less than the medians' ratio. With
``--slices K`` each round parses the text as K slices of its batches (:func:`slices`), both
ways on each slice in turn (which goes first alternating), and adds up each way's seconds: a
drift within a parse then falls on both ways alike.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time
from pathlib import Path

import numpy as np

from biaffine.api import Parser
from biaffine.cli import freeze_loaded
from biaffine.data.conllu import read_conllu
from biaffine.data.encoding import plan_batches

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"
MAX_TOKENS = 5000
"""Words per batch, as ``Parser.parse`` batches by default."""


def seconds(parser: Parser, text: str, columns: list[str]) -> float:
    """Wall-clock seconds of one ``Parser.parse`` of ``text``."""
    started = time.perf_counter()
    parser.parse(text, columns=columns)
    return time.perf_counter() - started


def slices(text: str, count: int, max_tokens: int = MAX_TOKENS) -> list[str]:
    """The sentences of CoNLL-U ``text`` in ``count`` slices of whole batches.

    The batches a parse of the whole text forms (:func:`plan_batches`, by length, up to
    ``max_tokens`` words), cut into ``count`` runs of consecutive batches, each slice holding
    its sentences in the file's order (their lines as read): a slice then parses in the very
    batches it had within the whole text, and slicing adds no padding (slices of consecutive
    sentences did: 40% more time in 8 slices of EWT test).
    """
    sentences = list(read_conllu(io.StringIO(text)))
    batches = plan_batches([len(s) for s in sentences], max_tokens, shuffle=False)
    groups = np.array_split(np.arange(len(batches)), min(count, len(batches)))
    rows = [sorted(i for b in group for i in batches[b].tolist()) for group in groups]
    return ["".join(line for i in slice_rows for line in sentences[i].lines) for slice_rows in rows]


def round_seconds(parser: Parser, pieces: list[str], first: int) -> tuple[float, float]:
    """Seconds of the tree alone and with every column over ``pieces``, alternately per piece.

    On piece k the tree alone goes first where ``first + k`` is even.
    """
    tree = every = 0.0
    for k, piece in enumerate(pieces):
        if (first + k) % 2 == 0:
            tree += seconds(parser, piece, [])
            every += seconds(parser, piece, ["all"])
        else:
            every += seconds(parser, piece, ["all"])
            tree += seconds(parser, piece, [])
    return tree, every


def main() -> None:
    """Time both ways in alternating rounds; print medians and the ratio."""
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("checkpoint", type=Path)
    options.add_argument("--input", type=Path, default=None)
    options.add_argument("--threads", type=int, default=2)
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--slices", type=int, default=1)
    args = options.parse_args()
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    parser = Parser.load(args.checkpoint, threads=args.threads)
    text = source.read_text(encoding="utf-8")
    n_sentences = len(parser.parse(text, columns=["all"]))  # warm-up, both paths' kernels
    freeze_loaded()  # as predict.py does: no full collection walks the model within a round
    pieces = slices(text, args.slices)
    ways: dict[str, list[float]] = {"tree only": [], "columns=all": []}
    for number in range(args.rounds):
        tree, every = round_seconds(parser, pieces, number)
        ways["tree only"].append(tree)
        ways["columns=all"].append(every)
    print(
        f"{source.name}: {n_sentences} sentences in {len(pieces)} slices, "
        f"{args.threads} threads, {args.rounds} rounds"
    )
    print(f"model tags: {', '.join(parser.model.tagged_columns) or 'nothing'}")
    rates = {way: n_sentences / statistics.median(times) for way, times in ways.items()}
    for way, rate in rates.items():
        print(f"{way:>12}: {rate:7.1f} sentences/s (median)")
    print(f"columns=all / tree only: {rates['columns=all'] / rates['tree only']:.3f}")
    paired = [tree / every for tree, every in zip(*ways.values(), strict=True)]
    spread = f"{min(paired):.3f}-{max(paired):.3f}"
    print(f"median of the rounds' ratios: {statistics.median(paired):.3f} ({spread})")


if __name__ == "__main__":
    main()
