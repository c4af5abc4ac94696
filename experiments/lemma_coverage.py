"""How far lemma edit scripts learnt from a treebank's training set reach on its test set.

For every treebank folder under the root (``$UD_ROOT`` by default) that has a training file,
prints one Markdown row: the training words and how many have a lemma (``_`` is "none given"),
the distinct scripts of those (:func:`biaffine.data.lemmas.script_of`: the classes a lemmatizer
head learns) and the share of training words whose script is a whole lemma, then, on the test
words with a lemma, the share whose script was seen in training (a classifier could predict it:
its coverage), and of the rest (unseen scripts) the share of whole-lemma scripts (irregular
lemmas) and of lemmas equal to the form (those the fallback to the form gets right).
Torch-free; a few seconds for the 21 treebanks.

Usage::

    python experiments/lemma_coverage.py [UD_ROOT]      # the table of docs/lemmas.md
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from biaffine.cli import report_user_errors
from biaffine.data.conllu import read_conllu
from biaffine.data.lemmas import is_whole, script_of

HEADER = (
    "| treebank | train words | with lemma | scripts | whole-lemma | test words with lemma "
    "| covered | unseen: whole lemma | unseen: lemma = form |\n"
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
)


def scripts(path: Path) -> Iterator[tuple[str, str | None]]:
    """(form, script) of every word of a CoNLL-U file; None for an unannotated lemma."""
    cache: dict[tuple[str, str], str | None] = {}  # pairs repeat: make each script once
    for sentence in read_conllu(path):
        for pair in zip(sentence.forms, sentence.lemmas, strict=True):
            if pair not in cache:
                cache[pair] = script_of(*pair)
            yield pair[0], cache[pair]


def row(folder: Path, train: Path) -> str:
    """The table row of one treebank (test columns empty when it has no test file)."""
    train_scripts = Counter(script for _, script in scripts(train))
    n_train = sum(train_scripts.values())
    unannotated = train_scripts.pop(None, 0)
    annotated = n_train - unannotated
    whole = sum(count for script, count in train_scripts.items() if is_whole(script))
    cells = [
        folder.name.removeprefix("UD_"),
        f"{n_train:,}",
        _percent(annotated, n_train),
        f"{len(train_scripts):,}",
        _percent(whole, annotated),
    ]
    tests = sorted(folder.glob("*-test.conllu"))
    if not tests or not annotated:
        return "| " + " | ".join([*cells, "", "", "", ""]) + " |"
    test = [(form, script) for form, script in scripts(tests[0]) if script is not None]
    unseen = [(form, script) for form, script in test if script not in train_scripts]
    whole = sum(is_whole(script) for _, script in unseen)
    as_form = sum(script_of(form, form) == script for form, script in unseen)
    covered = _percent(len(test) - len(unseen), len(test))
    cells += [
        f"{len(test):,}",
        covered,
        _percent(whole, len(unseen)),
        _percent(as_form, len(unseen)),
    ]
    return "| " + " | ".join(cells) + " |"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%" if whole else "-"


def main() -> None:
    """Prints the table for the treebanks under the root given (or ``$UD_ROOT``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=os.environ.get("UD_ROOT"), type=Path)
    root = parser.parse_args().root
    if root is None or not root.is_dir():
        parser.error("give the folder of UD_* treebanks (or set UD_ROOT)")
    print(HEADER)
    for folder in sorted(root.glob("UD_*")):
        trains = sorted(folder.glob("*-train.conllu"))
        if trains:
            print(row(folder, trains[0]))


if __name__ == "__main__":
    report_user_errors(main)
