"""FEATS as whole-tag classes or per feature: what each can reach on a treebank's test set.

A whole-tag classifier predicts one of the FEATS strings seen in training, so a test word whose
FEATS string never occurs in training is always wrong; a per-feature classifier (one class per
feature, "absent" among them) can also build new combinations, so it is always wrong only where
some ``Feature=Value`` pair of the word was never seen. For every treebank folder under the root
(``$UD_ROOT`` by default) with a training file, prints one Markdown row: the distinct FEATS
strings of the training words, then over the test words the share whose whole string was seen
(the whole-tag ceiling) and the share whose every pair was seen (the per-feature ceiling).
Torch-free; a few seconds for the 21 treebanks.

Usage::

    python experiments/feats_coverage.py [UD_ROOT]      # the table of docs/tags.md
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from pathlib import Path

from biaffine.cli import report_user_errors
from biaffine.data.conllu import read_conllu

HEADER = (
    "| treebank | train FEATS strings | test words | whole-tag ceiling | per-feature ceiling |\n"
    "|---|--:|--:|--:|--:|"
)


def feats(path: Path) -> Iterator[str]:
    """The FEATS cell of every word of a CoNLL-U file."""
    for sentence in read_conllu(path):
        yield from sentence.feats


def pairs(value: str) -> set[str]:
    """The ``Feature=Value`` pairs of a FEATS cell (none for ``_``)."""
    return set() if value == "_" else set(value.split("|"))


def row(folder: Path) -> str | None:
    """The Markdown row of one treebank folder, or None without both a train and a test file."""
    train = next(iter(sorted(folder.glob("*-ud-train.conllu"))), None)
    test = next(iter(sorted(folder.glob("*-ud-test.conllu"))), None)
    if train is None or test is None:
        return None
    strings = set(feats(train))
    seen_pairs = set().union(*map(pairs, strings))
    words = list(feats(test))
    whole = sum(value in strings for value in words)
    per_feature = sum(pairs(value) <= seen_pairs for value in words)
    return (
        f"| {folder.name.removeprefix('UD_')} | {len(strings):,} | {len(words):,} "
        f"| {100 * whole / len(words):.2f} | {100 * per_feature / len(words):.2f} |"
    )


def main() -> None:
    """Print the table for every treebank under the root."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("root", nargs="?", type=Path, default=os.environ.get("UD_ROOT"))
    root = options.parse_args().root
    if root is None:
        options.error("give the UD root, or set UD_ROOT")
    print(HEADER)
    for folder in sorted(Path(root).glob("UD_*")):
        if (line := row(folder)) is not None:
            print(line)


if __name__ == "__main__":
    report_user_errors(main)
