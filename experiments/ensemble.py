"""What an ensemble of graph parsers scores against each of its members, on one CoNLL-U file.

The ensemble is the library's (:class:`biaffine.parsers.ensemble.EnsembleParser`, which
``python -m biaffine.training.ensemble`` writes as one checkpoint): the members' mean head,
label and tagger probabilities, decoded as one parser's scores (the MST of the log of the mean
head probabilities, UD's ``root`` rule on labels, the training lexicon of the first member).
It measures what issue 40's "ensembling or distillation of several models into one" can win
before anything is shipped: the members must be graph parsers trained on the same treebank with
the same vocabularies. Scores are the CoNLL 2018 shared task's (gold tokenization).

Usage::

    PYTHONPATH=. python experiments/ensemble.py --gold DEV.conllu RUN1/best.pt RUN2/best.pt
    PYTHONPATH=. python experiments/ensemble.py --gold DEV.conllu --pairs ENSEMBLE.pt RUN/best.pt

An ensemble checkpoint among the inputs counts as its members (``PATH[0]``, ``PATH[1]``, ...).
With ``--pairs``, every pair of the members is scored instead of each member and all of them.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Sequence

import torch

from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.metrics import evaluate_corpus
from biaffine.parsers.ensemble import EnsembleParser


def joined(parsers: Sequence[Parser]) -> Parser:
    """The members as one parser (they must share their vocabularies)."""
    first = parsers[0]
    for parser in parsers[1:]:
        if parser.vocabs.to_dict() != first.vocabs.to_dict():
            raise SystemExit("the members' vocabularies differ")
    ensemble = EnsembleParser([parser.model for parser in parsers]).eval()
    return Parser(ensemble, first.vocabs, device=first.device)


def report(name: str, gold: Sequence[Sentence], predicted: Sequence[Sentence], seconds: float):
    """One Markdown row: the CoNLL 2018 scores and the seconds taken."""
    evaluation = evaluate_corpus(gold, predicted)
    attachment, words = evaluation.attachment, evaluation.words.scores
    cells = [f"{attachment.uas:.2f}", f"{attachment.las_universal:.2f}"]
    cells += [f"{words[m].f1:.2f}" for m in ("UPOS", "UFeats", "Lemmas", "MLAS")]
    print(f"| {name} | " + " | ".join(cells) + f" | {seconds:.1f} |", flush=True)


def parsed(parser: Parser, gold: Sequence[Sentence]) -> tuple[list[Sentence], float]:
    """Every sentence with every column predicted, and the seconds it took."""
    started = time.perf_counter()
    found = [t.sentence for t in parser.parse(gold, columns=["all"], overwrite=True)]
    return found, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--gold`` with each member, then with the ensemble; print one table."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    gold = list(read_conllu(args.gold))
    parsers = {
        name: parser
        for path in args.checkpoints
        for name, parser in members(Parser.load(path, threads=args.threads), path)
    }
    print("| model | UAS | LAS | UPOS | UFeats | Lemmas | MLAS | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    if args.pairs:
        for pair in itertools.combinations(parsers, 2):
            report(" + ".join(pair), gold, *parsed(joined([parsers[n] for n in pair]), gold))
        return
    for name, parser in parsers.items():
        report(name, gold, *parsed(parser, gold))
    report(f"ensemble of {len(parsers)}", gold, *parsed(joined(list(parsers.values())), gold))


def members(parser: Parser, path: str) -> list[tuple[str, Parser]]:
    """``parser`` named by ``path``, or each member of an ensemble as ``path[i]``."""
    if not isinstance(parser.model, EnsembleParser):
        return [(path, parser)]
    return [
        (f"{path}[{i}]", Parser(member, parser.vocabs, device=parser.device))
        for i, member in enumerate(parser.model.members)
    ]


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="a CoNLL-U file with gold trees")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", action="store_true", help="score every pair of the members")
    parser.add_argument("checkpoints", nargs="+", help="graph parsers' checkpoints (best.pt)")
    return parser


if __name__ == "__main__":
    report_user_errors(main)
