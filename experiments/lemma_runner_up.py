"""How many lemmas a runner-up script wins back, by the share of the best script's probability.

Parses a CoNLL-U file (a dev set) once with a model's taggers, keeping the lemmatizer's scores,
then writes each word's lemma as prediction does (:func:`biaffine.data.columns.strings`: the
lexicon first, then the best script) with the runner-up scripts of each share
(:func:`biaffine.inference.choices.runners_up`), or none, and prints one Markdown row per model:
the share of words whose lemma equals the file's. This chose
:data:`biaffine.inference.choices.LEMMA_RUNNER_UP` (docs/lemmas.md).

Usage::

    python experiments/lemma_runner_up.py --model en_ewt=DEV.conllu --model tr_imst=DEV.conllu
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np

from biaffine import models
from biaffine.api import Parser
from biaffine.data.columns import strings
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.inference import choices
from biaffine.models.scoring import THREADS

SHARES = (0.001, 0.01, 0.05, 0.1, 0.5)

Captured = list[tuple[dict[str, np.ndarray], list[Sentence]]]


def captured_scores(name: str, sentences: list[Sentence]) -> tuple[Captured, Parser]:
    """The tagger scores of each batch of ``sentences`` as the model parses them."""
    batches: Captured = []
    predict = choices.predicted_columns

    def keep(tag_scores, columns, vocabs, batch):  # the one prediction path, watched
        batches.append(({k: v.copy() for k, v in tag_scores.items()}, list(batch)))
        return predict(tag_scores, columns, vocabs, batch)

    parser = models.load(name, threads=THREADS)
    choices.predicted_columns = keep
    try:
        parser.parse(sentences, columns=["lemma"], overwrite=True)
    finally:
        choices.predicted_columns = predict
    return batches, parser


def accuracy(batches: Captured, parser: Parser, share: float | None) -> float:
    """Percent of the words whose lemma is the gold one, runner-ups of ``share`` (None: none)."""
    vocabs = parser.vocabs
    right = total = 0
    for scores, sentences in batches:
        lemma, upos = vocabs.columns["lemma"], vocabs.columns["upos"]
        best = choices.best_classes(scores["lemma"], lemma)
        tags = choices.best_classes(scores["upos"], upos)
        others = None if share is None else choices.runners_up(scores["lemma"], lemma, share)
        start = 0
        for sentence in sentences:
            end = start + len(sentence)
            found = strings(
                "lemma",
                best[start:end],
                sentence.forms,
                lexicon=vocabs.lexicon,
                upos=tags[start:end],
                runners_up=None if others is None else others[start:end],
            )
            right += sum(f == g for f, g in zip(found, sentence.lemmas, strict=True))
            total += len(sentence)
            start = end
    return 100.0 * right / total


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    options = argparse.ArgumentParser(description=__doc__)
    options.add_argument("--model", action="append", required=True, help="NAME=FILE.conllu")
    args = options.parse_args(argv)
    print("| model | none | " + " | ".join(str(s) for s in SHARES) + " |")
    print("|---|" + "--:|" * (len(SHARES) + 1))
    for item in args.model:
        name, path = item.split("=", 1)
        batches, parser = captured_scores(name, list(read_conllu(path)))
        row = [accuracy(batches, parser, share) for share in (None, *SHARES)]
        print(f"| {name} | " + " | ".join(f"{value:.2f}" for value in row) + " |")


if __name__ == "__main__":
    main()
