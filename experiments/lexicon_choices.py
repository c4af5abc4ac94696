"""What the training lexicon's two checks win, by their thresholds, on a dev set.

Parses a CoNLL-U file (a dev set) once with a model's taggers, keeping the tagger scores of
each batch, then writes each word's LEMMA and FEATS as prediction does
(:func:`biaffine.data.columns.strings`) with each threshold and prints two Markdown tables, one
row per model:

- Lemmas: the share of words whose lemma equals the file's, with the runner-up scripts of each
  share of the best script's probability (:func:`biaffine.inference.choices.runners_up`), or
  none; this chose :data:`~biaffine.inference.choices.LEMMA_RUNNER_UP` (docs/lemmas.md);
- UPOS, XPOS and FEATS: the share of words whose UPOS (XPOS, whole FEATS) equal the file's,
  from the tagger alone, then with the lexicon's where the tagger's best class is below each
  probability (:func:`biaffine.inference.choices.doubtful`; above 1: every word the lexicon
  holds); this chose :data:`~biaffine.inference.choices.TAGGER_DOUBT` (docs/tags.md).

- with ``--train NAME=TRAIN.conllu``, XPOS and whole FEATS at that threshold with the lexicon's
  (form, UPOS) analyses kept only for the pairs seen at least 1, 2, 3 or 5 times in the
  training file: whether one occurrence is evidence enough (docs/tags.md).

Each table shows its column's choice alone: LEMMA, XPOS and FEATS are keyed by the tagger's
UPOS. A model without an XPOS tagger (Sequoia) gets no XPOS row.

Usage::

    PYTHONPATH=. python experiments/lexicon_choices.py --model en_ewt=DEV.conllu \
        --model tr_imst=DEV.conllu [--train tr_imst=TRAIN.conllu]
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from biaffine import models
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.columns import strings
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lexicon import Lexicon, LexiconCounts
from biaffine.inference import choices
from biaffine.models.scoring import THREADS

SHARES = (0.001, 0.01, 0.05, 0.1, 0.5)
DOUBTS = (0.5, 0.8, 0.9, 0.95, 0.99, 1.01)
MIN_COUNTS = (1, 2, 3, 5)

Captured = list[tuple[dict[str, np.ndarray], list[Sentence]]]
Choose = Callable[[dict[str, np.ndarray], Sentence, slice], list[str]]


def captured_scores(name: str, sentences: list[Sentence]) -> tuple[Captured, Parser]:
    """The tagger scores of each batch of ``sentences`` as the model parses them.

    Every word's LEMMA scores: parsing scores only the words whose lemma the lexicon cannot
    give (:func:`~biaffine.inference.choices.lemma_words`), which the watch makes every word.
    """
    batches: Captured = []
    predict, lemma_words = choices.predicted_columns, choices.lemma_words

    def keep(tag_scores, columns, vocabs, batch, *rest):  # the one prediction path, watched
        batches.append(({k: v.copy() for k, v in tag_scores.items()}, list(batch)))
        return predict(tag_scores, columns, vocabs, batch, *rest)

    parser = models.load(name, threads=THREADS)
    choices.predicted_columns = keep
    choices.lemma_words = lambda forms, lexicon: None  # None: every word
    try:
        parser.parse(sentences, columns=["all"], overwrite=True)
    finally:
        choices.predicted_columns, choices.lemma_words = predict, lemma_words
    return batches, parser


def accuracy(batches: Captured, column: str, choose: Choose) -> float:
    """Percent of the words whose ``column`` is the file's, each sentence's values by ``choose``."""
    right = total = 0
    for scores, sentences in batches:
        start = 0
        for sentence in sentences:
            words = slice(start, start + len(sentence))
            gold = getattr(sentence, "lemmas" if column == "lemma" else column)
            right += sum(f == g for f, g in zip(choose(scores, sentence, words), gold, strict=True))
            total += len(sentence)
            start = words.stop
    return 100.0 * right / total


def lemma_rule(parser: Parser, share: float | None) -> Choose:
    """Lemmas as prediction writes them, with runner-up scripts of ``share`` (None: none)."""
    vocabs = parser.vocabs
    lemma, upos = vocabs.columns["lemma"], vocabs.columns["upos"]

    def choose(scores: dict[str, np.ndarray], sentence: Sentence, words: slice) -> list[str]:
        found = scores["lemma"][words]
        others = None if share is None else choices.runners_up(found, lemma, share)
        return strings(
            "lemma",
            choices.best_classes(found, lemma),
            sentence.forms,
            lexicon=vocabs.lexicon,
            upos=choices.best_classes(scores["upos"][words], upos),
            runners_up=others,
        )

    return choose


def tag_rule(parser: Parser, column: str, doubt: float | None) -> Choose:
    """UPOS or FEATS as prediction writes them: the lexicon's below ``doubt`` (None: never)."""
    vocabs = parser.vocabs
    classes, upos = vocabs.columns[column], vocabs.columns["upos"]

    def choose(scores: dict[str, np.ndarray], sentence: Sentence, words: slice) -> list[str]:
        found = scores[column][words]
        return strings(
            column,
            choices.best_classes(found, classes),
            sentence.forms,
            lexicon=None if doubt is None else vocabs.lexicon,
            upos=choices.best_classes(scores["upos"][words], upos),
            doubtful=None if doubt is None else choices.doubtful(found, doubt),
        )

    return choose


def seen_at_least(lexicon: Lexicon, counts: LexiconCounts, times: int) -> Lexicon:
    """``lexicon`` with only the (form, UPOS) analyses seen ``times`` or more in ``counts``."""
    analyses = {
        column: {
            key: value
            for key, value in table.items()
            if counts.analyses[column][key].total() >= times
        }
        for column, table in lexicon.analyses.items()
    }
    return dataclasses.replace(lexicon, analyses=analyses)


def min_count_rows(name: str, batches: Captured, parser: Parser, train: str) -> list[str]:
    """One row per column of :data:`~biaffine.data.lexicon.ANALYSED`: accuracy by minimum count."""
    counts = LexiconCounts()
    for sentence in read_conllu(train):
        counts.add(sentence)
    vocabs, shipped = parser.vocabs, parser.vocabs.lexicon
    rows = []
    for column in shipped.analyses:
        values = []
        for times in MIN_COUNTS:
            vocabs.lexicon = seen_at_least(shipped, counts, times)
            values.append(accuracy(batches, column, tag_rule(parser, column, choices.TAGGER_DOUBT)))
        vocabs.lexicon = shipped
        rows.append(f"| {name} | {column} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
    return rows


def _named(text: str) -> tuple[str, str]:
    """``NAME=PATH`` as (name, path)."""
    name, equals, path = text.partition("=")
    if not (name and equals and path):  # "not enough values to unpack" before
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=PATH")
    return name, path


def main(argv: Sequence[str] | None = None) -> None:
    """Print the two tables."""
    options = argparse.ArgumentParser(description=__doc__)
    named = ["NAME=FILE.conllu", "NAME=TRAIN.conllu"]
    options.add_argument("--model", action="append", type=_named, required=True, help=named[0])
    options.add_argument("--train", action="append", type=_named, default=[], help=named[1])
    args = options.parse_args(argv)
    trains = dict(args.train)
    rows: dict[str, list[str]] = {"lemma": [], "upos": [], "xpos": [], "feats": [], "count": []}
    for name, path in args.model:
        batches, parser = captured_scores(name, list(read_conllu(path)))
        lemmas = [accuracy(batches, "lemma", lemma_rule(parser, s)) for s in (None, *SHARES)]
        tags = {
            column: [
                accuracy(batches, column, tag_rule(parser, column, d)) for d in (None, *DOUBTS)
            ]
            for column in ("upos", "xpos", "feats")
        }
        for column, values in (("lemma", lemmas), *tags.items()):
            rows[column].append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in values) + " |")
        if name in trains:
            rows["count"] += min_count_rows(name, batches, parser, trains[name])
    for title, column, thresholds in (
        ("Lemmas; runner-up share", "lemma", SHARES),
        ("UPOS; lexicon below", "upos", DOUBTS),
        ("XPOS; lexicon below", "xpos", DOUBTS),
        ("whole FEATS; lexicon below", "feats", DOUBTS),
    ):
        first = "no runner-up" if column == "lemma" else "tagger alone"
        print(f"\n{title}\n\n| model | {first} | " + " | ".join(map(str, thresholds)) + " |")
        print("|---|" + "--:|" * (len(thresholds) + 1))
        print("\n".join(rows[column]))
    if rows["count"]:
        print(f"\nAnalyses kept if seen at least (lexicon below {choices.TAGGER_DOUBT})\n")
        print("| model | column | " + " | ".join(map(str, MIN_COUNTS)) + " |")
        print("|---|---|" + "--:|" * len(MIN_COUNTS))
        print("\n".join(rows["count"]))


if __name__ == "__main__":
    report_user_errors(main)
