"""How much of each test set's multi-word tokens the MWT dictionary and its suffix rules expand.

For every treebank folder under the root (``$UD_ROOT`` by default) with a training and a test
file and a multi-word token in either, prints one Markdown row: the training and test MWTs,
the dictionary's entries and the suffix rules kept (:class:`rawtext.MwtExpander`), then the
share of test MWTs expanded exactly into the gold words (case-sensitive) by the dictionary
alone, by the dictionary with the rules as fallback, and, of the test MWTs the dictionary has
not seen, the share the rules get right. Given the gold token (the segmenter's part is not
measured here). Torch-free; a few seconds for the 21 treebanks.

Usage::

    python experiments/mwt_coverage.py [UD_ROOT]      # the table of docs/raw_text.md
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from biaffine.cli import report_user_errors
from rawtext import MwtExpander, TreebankToken, read_sentences

HEADER = (
    "| treebank | train MWTs | test MWTs | dictionary | rules | dictionary alone "
    "| with rules | rules on unseen |\n"
    "|---|--:|--:|--:|--:|--:|--:|--:|"
)


def mwts(path: Path) -> list[TreebankToken]:
    """The multi-word tokens of a CoNLL-U file, in order."""
    return [token for sentence in read_sentences(path) for token in sentence.tokens if token.is_mwt]


def row(folder: Path, train: Path, test: Path) -> str | None:
    """The table row of one treebank; None when neither file has a multi-word token."""
    n_train, gold = len(mwts(train)), mwts(test)
    if not n_train and not gold:
        return None
    expander = MwtExpander.from_conllu(train)
    by_dictionary = sum(expander.lookup(t.form) == list(t.words) for t in gold)
    with_rules = sum(expander(t.form) == list(t.words) for t in gold)
    unseen = [t for t in gold if expander.lookup(t.form) is None]
    by_rules = sum(expander.fallback(t.form) == list(t.words) for t in unseen)
    cells = [
        folder.name.removeprefix("UD_"),
        f"{n_train:,}",
        f"{len(gold):,}",
        f"{len(expander.dictionary):,}",
        f"{len(expander.rules):,}",
        _percent(by_dictionary, len(gold)),
        _percent(with_rules, len(gold)),
        f"{_percent(by_rules, len(unseen))} of {len(unseen):,}",
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
        trains, tests = sorted(folder.glob("*-train.conllu")), sorted(folder.glob("*-test.conllu"))
        if trains and tests and (line := row(folder, trains[0], tests[0])) is not None:
            print(line)


if __name__ == "__main__":
    report_user_errors(main)
