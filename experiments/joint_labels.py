"""Heads decoded alone, then labelled, against heads decoded with their labels (``joint_labels``).

For each graph parser given (a checkpoint, or an installed model's name), parses one CoNLL-U
file from its gold words twice, ``joint_labels=False`` then ``True``, and prints one Markdown row
of the CoNLL 2018 shared task's UAS and LAS for each, with the seconds each parse took (on the
threads asked for): with ``--rounds R`` the two alternate R times, so that a busy machine slows
both alike, and the median of each is shown.

Usage::

    PYTHONPATH=. python experiments/joint_labels.py --gold DEV.conllu en_ewt RUN/best.pt
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

import torch

from biaffine import installed, models
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.metrics import evaluate_corpus


def load(name: str, threads: int) -> Parser:
    """An installed model by name, or a checkpoint by path."""
    if name in installed.installed():
        return models.load(name, threads=threads)
    return Parser.load(name, threads=threads)


def scores(parser: Parser, gold: Sequence[Sentence], joint: bool) -> tuple[float, float, float]:
    """UAS, LAS (universal relations, as the CoNLL 2018 scorer) and the seconds of one parse."""
    started = time.perf_counter()
    found = [t.sentence for t in parser.parse(gold, joint_labels=joint)]
    seconds = time.perf_counter() - started
    attachment = evaluate_corpus(gold, found).attachment
    return attachment.uas, attachment.las_universal, seconds


def main(argv: Sequence[str] | None = None) -> None:
    """One table row per parser: heads first, then jointly, and the difference in LAS."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    gold = list(read_conllu(args.gold))
    print("| parser | UAS, LAS heads first | UAS, LAS joint | LAS gain | seconds (first, joint) |")
    print("|---|--:|--:|--:|--:|")
    for name in args.parsers:
        parser = load(name, args.threads)
        rounds = [
            (scores(parser, gold, False), scores(parser, gold, True)) for _ in range(args.rounds)
        ]
        first, joint = rounds[0]
        seconds = [statistics.median(r[i][2] for r in rounds) for i in (0, 1)]
        print(
            f"| {name} | {first[0]:.2f}, {first[1]:.2f} | {joint[0]:.2f}, {joint[1]:.2f} "
            f"| {joint[1] - first[1]:+.2f} | {seconds[0]:.2f}, {seconds[1]:.2f} |",
            flush=True,
        )


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="a CoNLL-U file with gold trees")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1, help="alternations timed (median)")
    parser.add_argument("parsers", nargs="+", help="installed model names or checkpoints")
    return parser


if __name__ == "__main__":
    report_user_errors(main)
