"""Multi-word tokens from raw text: the segmenter's class, and the tokens training always split.

For a shipped model's segmenter and its treebank's dev and test text (rebuilt as the model cards
read it), a token is a multi-word token where the segmenter's class says so, or where the
token, lower-cased, was a multi-word token in at least SHARE of its training occurrences
(:data:`rawtext.mwt.ALWAYS_SHARE` is the share chosen). Prints, per split and share, the
multi-word tokens found, right, and their F1 against the gold ones (the same token ends).

Usage::

    PYTHONPATH=. python experiments/mwt_always.py tr_imst [--shares 0.5 0.9 0.99]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from biaffine import installed
from biaffine.cli import report_user_errors
from biaffine.segmenting import Segmenter
from biaffine.segmenting.spans import segment_spans
from rawtext import labelled_corpus
from rawtext.labels import is_mwt_class
from rawtext.mwt import split_shares


def mwt_ends(text: str, classes: np.ndarray, always: set[str]) -> set[int]:
    """The last characters of the multi-word tokens: by class, or by form in ``always``."""
    tokens, _ = segment_spans(text, classes)
    return {
        end - 1
        for start, end in tokens
        if is_mwt_class(int(classes[end - 1])) or text[start:end].lower() in always
    }


def report(segmenter: Segmenter, path: Path, shares: dict[str, float], cuts: Sequence[float]):
    """One Markdown row per share (the first: the class alone) for the file at ``path``."""
    corpus = labelled_corpus(path)
    text, gold = corpus.text, corpus.labels
    truth = mwt_ends(text, gold, set())
    classes = segmenter.classes(text)
    for cut in (None, *cuts):
        always = set() if cut is None else {form for form, s in shares.items() if s >= cut}
        found = mwt_ends(text, classes, always)
        right = len(found & truth)
        f1 = 200 * right / max(len(found) + len(truth), 1)
        name = "class alone" if cut is None else f"share >= {cut}"
        print(f"| {path.name} | {name} | {len(truth)} | {len(found)} | {right} | {f1:.1f} |")


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table for one installed model."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("model", help="an installed model with a segmenter")
    options.add_argument("--shares", type=float, nargs="+", default=[0.5, 0.9, 0.99])
    options.add_argument("--root", type=Path, default=os.environ.get("UD_ROOT"))
    args = options.parse_args(argv)
    model = installed.find(args.model)
    segmenter = Segmenter.load(model.segmenter)
    folder = args.root / segmenter.treebank
    shares = split_shares(next(folder.glob("*-train.conllu")))
    print("| file | multi-word tokens | gold | found | right | F1 |")
    print("|---|---|--:|--:|--:|--:|")
    for split in ("dev", "test"):
        report(segmenter, next(folder.glob(f"*-{split}.conllu")), shares, args.shares)


if __name__ == "__main__":
    report_user_errors(main)
