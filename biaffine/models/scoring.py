"""What a model card's scores are: a UD test set parsed from gold tokens and from raw text.

Both runs score every word of the test file with the CoNLL 2018 shared task's metrics
(:func:`biaffine.alignment.evaluate_end_to_end`, words aligned by characters): from gold
tokenization, the gold file's words are tagged, lemmatized and parsed (every column replaced);
from raw text, the file's text as UD's ``conllu_to_text`` rebuilds it goes through the
segmenter first. One torch thread, so that the card's figures are reproduced exactly
(the card test, ``tests/models``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from biaffine.alignment import EndToEndScores, evaluate_end_to_end
from biaffine.data.conllu import Sentence, read_conllu
from rawtext import corpus_text

if TYPE_CHECKING:
    from biaffine.api import Parser

__all__ = ["GOLD", "PRECISION", "RAW", "THREADS", "card_scores", "f1_table", "ud_test_file"]

GOLD = "gold_tokenization"
RAW = "raw_text"
PRECISION = 2
"""Decimals of the F1 figures a card prints (and its test compares)."""
THREADS = 1


def ud_test_file(treebank: Path) -> Path:
    """The treebank folder's ``*-ud-test.conllu``.

    Raises:
        FileNotFoundError: the folder has none.
    """
    found = sorted(treebank.glob("*-ud-test.conllu"))
    if not found:
        raise FileNotFoundError(f"{treebank}: no *-ud-test.conllu")
    return found[0]


def f1_table(scores: EndToEndScores) -> dict[str, float]:
    """Every score the evaluator reports, as F1 rounded to :data:`PRECISION` decimals."""
    return {name: round(score.f1, PRECISION) for name, score in scores.reported().items()}


def card_scores(parser: Parser, gold_path: Path) -> dict[str, dict[str, float]]:
    """The test file scored from gold tokenization and, with a segmenter, from raw text.

    Args:
        parser: the model (loaded with :data:`THREADS` threads for reproducible figures).
        gold_path: the UD test file.

    Returns:
        ``{GOLD: {"Tokens": ..., "LAS": ...}, RAW: {...}}`` (no ``RAW`` without a segmenter).
    """
    gold = list(read_conllu(gold_path))
    scores = {GOLD: f1_table(evaluate_end_to_end(gold, _tagged(parser, gold)))}
    if parser.segmenter is not None:
        from_text = parser.parse(text=corpus_text(gold_path))
        scores[RAW] = f1_table(evaluate_end_to_end(gold, [t.sentence for t in from_text]))
    return scores


TAGGED = ("upos", "xpos", "feats", "lemma")
"""The columns a model may tag, each scored from what it predicts."""


def _tagged(parser: Parser, gold: Sequence[Sentence]) -> list[Sentence]:
    """``gold`` as the model tags and parses it; a column it has no tagger for left empty.

    A column the model cannot predict kept the gold cells, scoring 100 from gold tokens (and 0
    from raw text), on the card of a model trained without an XPOS tagger.
    """
    trees = parser.parse(gold, columns=["all"], overwrite=True)
    untagged = [name for name in TAGGED if name not in parser.model.tagged_columns]
    if not untagged:
        return [tree.sentence for tree in trees]
    blank = [{name: ["_"] * len(tree.sentence) for name in untagged} for tree in trees]
    return [tree.sentence.with_columns(cells) for tree, cells in zip(trees, blank, strict=True)]
