"""What choosing UPOS, XPOS and FEATS together wins on a dev set: each column apart, and together.

Parses each model's dev set (gold tokens) through ``Parser.parse`` with every column it tags
predicted over the file's, twice: with the model's lexicon without tag sets (each column's
best class, then the lexicon's choices), and with the tag sets of its treebank's training file
(:func:`biaffine.inference.choices.joint_tags`, then the same choices). Prints a Markdown row
per model: UPOS, UFeats, AllTags and MLAS (CoNLL 2018 F1) apart and together (docs/tags.md).

Usage::

    PYTHONPATH=. python experiments/joint_tags.py en_ewt fr_sequoia tr_imst [--threads 1]

Each model's treebank is the one its card names, under ``$UD_ROOT``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

from biaffine import installed, models
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lexicon import build_lexicon
from biaffine.data.treebanks import discover_files
from biaffine.metrics import evaluate_corpus

METRICS = ("UPOS", "UFeats", "AllTags", "MLAS")


def scores(parser: Parser, gold: Sequence[Sentence]) -> dict[str, float]:
    """CoNLL 2018 F1 of ``parser``'s analyses of ``gold``'s words, by metric of :data:`METRICS`."""
    parsed = parser.parse(gold, columns=["all"], overwrite=True)
    found = evaluate_corpus(gold, [tree.sentence for tree in parsed]).words.scores
    return {metric: found[metric].f1 for metric in METRICS}


def compare(name: str, root: Path, threads: int) -> tuple[dict[str, float], dict[str, float]]:
    """Model ``name``'s dev scores with each column apart and with the columns together."""
    treebank = root / installed.find(name).card["treebank"]["name"]
    files = discover_files(treebank, {"train": None, "dev": None})
    gold = list(read_conllu(treebank / files["dev"]))
    parser = models.load(name, threads=threads)
    lexicon = parser.vocabs.lexicon
    tag_sets = build_lexicon(read_conllu(treebank / files["train"])).tag_sets
    parser.vocabs.lexicon = dataclasses.replace(lexicon, tag_sets=frozenset())
    apart = scores(parser, gold)
    parser.vocabs.lexicon = dataclasses.replace(lexicon, tag_sets=tag_sets)
    return apart, scores(parser, gold)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table's header, then one row per model as it is measured."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("models", nargs="+", help="installed models' names")
    options.add_argument("--threads", type=int, default=1)
    args = options.parse_args(argv)
    root = Path(os.environ["UD_ROOT"])
    cells = " | ".join(f"{metric} apart | together" for metric in METRICS)
    print(f"| model | {cells} |")
    print("|---|" + "--:|" * 2 * len(METRICS))
    for name in args.models:
        apart, together = compare(name, root, args.threads)
        row = " | ".join(f"{apart[m]:.2f} | {together[m]:.2f}" for m in METRICS)
        print(f"| {name} | {row} |", flush=True)


if __name__ == "__main__":
    report_user_errors(main)
