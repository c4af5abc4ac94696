"""Tokens F1 and Sentences F1 of predicted character classes against gold ones, from spans.

Both sides segment the same characters, so a token is the same token on both sides exactly when
its span of characters is the same: span F1 is the CoNLL 2018 shared task's Tokens F1 and
Sentences F1 (its scorer aligns the two texts character by character, whitespace left out).
Torch-free.

Tokens and sentences are those :func:`rawtext.segment.segment` decodes from the classes, so the
dev score of training is the score of what a user gets. A span is (first character, one past
the last).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rawtext.segment import segment

__all__ = ["SpanCounts", "SpanScores", "count_spans", "score_spans", "segment_spans"]

Span = tuple[int, int]
"""Index of the first character of a token or sentence, and one past its last."""


@dataclass(frozen=True, slots=True)
class SpanCounts:
    """How many spans the system and gold sides hold and how many both hold (one kind)."""

    system: int = 0
    gold: int = 0
    correct: int = 0

    def __add__(self, other: SpanCounts) -> SpanCounts:
        """Counts of two texts together (micro-averaging)."""
        return SpanCounts(
            self.system + other.system, self.gold + other.gold, self.correct + other.correct
        )

    @property
    def f1(self) -> float:
        """F1 in percent: 2 correct / (system + gold); 100 when both sides are empty."""
        total = self.system + self.gold
        return 100.0 if total == 0 else 200.0 * self.correct / total


@dataclass(frozen=True, slots=True)
class SpanScores:
    """Token and sentence span counts; add up the scores of several documents with ``+``."""

    tokens: SpanCounts = SpanCounts()
    sentences: SpanCounts = SpanCounts()

    def __add__(self, other: SpanScores) -> SpanScores:
        """Counts of two texts together."""
        return SpanScores(self.tokens + other.tokens, self.sentences + other.sentences)

    def as_dict(self) -> dict[str, float]:
        """``tokens_f1`` and ``sentences_f1``, in percent."""
        return {"tokens_f1": self.tokens.f1, "sentences_f1": self.sentences.f1}


def segment_spans(text: str, labels: npt.NDArray[np.uint8]) -> tuple[list[Span], list[Span]]:
    """The token spans and sentence spans that per-character classes mark in ``text``.

    Args:
        text: the characters.
        labels: uint8[len(text)], a class of ``rawtext.labels`` per character.

    Returns:
        ``(tokens, sentences)``, each a list of (start, end) character offsets in text order.

    Raises:
        ValueError: labels of another length, or no class (see :func:`rawtext.segment.segment`).
    """
    document = segment(text, labels)
    tokens = [(token.start, token.end) for token in document.tokens()]
    sentences = [(sentence.start, sentence.end) for sentence in document.sentences()]
    return tokens, sentences


def score_spans(
    text: str, gold: npt.NDArray[np.uint8], system: npt.NDArray[np.uint8]
) -> SpanScores:
    """Token and sentence span counts of ``system`` classes against ``gold`` ones on ``text``."""
    gold_tokens, gold_sentences = segment_spans(text, gold)
    system_tokens, system_sentences = segment_spans(text, system)
    return SpanScores(
        count_spans(system_tokens, gold_tokens), count_spans(system_sentences, gold_sentences)
    )


def count_spans(system: Iterable[Span], gold: Iterable[Span]) -> SpanCounts:
    """How many spans each side holds, and how many both hold."""
    system, gold = set(system), set(gold)
    return SpanCounts(len(system), len(gold), len(system & gold))
