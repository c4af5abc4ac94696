"""Tokens F1 and Sentences F1 of predicted character classes against gold ones, from spans.

Both sides segment the same characters, so a token is the same token on both sides exactly when
its span of characters is the same: span F1 is the CoNLL 2018 shared task's Tokens F1 and
Sentences F1 (its scorer aligns the two texts character by character, whitespace left out).
Torch-free.

A token ends at each character whose class is not ``NONE``; it starts at the first
non-whitespace character after the previous token's end, and its span is that character up to
its last non-whitespace character (a token of whitespace alone is no token). Non-whitespace
characters after the last token end form one last token. A sentence ends with a token of a
sentence-end class, before a paragraph break (a blank line, ``PARAGRAPH_BREAK``, between two
tokens) and at the end of the text; its span runs from its first token's start to its last
token's end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rawtext.labels import MWT_SENTENCE_END, NONE, PARAGRAPH_BREAK, SENTENCE_END

__all__ = ["SpanCounts", "SpanScores", "score_spans", "segment_spans"]

Span = tuple[int, int]
"""First and last character index of a token or sentence, both included."""


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
        ``(tokens, sentences)``, each a list of (first, last) character indices in text order.
    """
    if len(labels) != len(text):
        raise ValueError(f"{len(labels)} labels for a text of {len(text)} characters")
    solid = np.array([not c.isspace() for c in text], dtype=bool)
    ends = np.flatnonzero(np.asarray(labels) != NONE).tolist()
    if solid.any() and (not ends or ends[-1] < np.flatnonzero(solid)[-1]):
        ends.append(len(text) - 1)  # characters after the last token end: one more token
    tokens: list[Span] = []
    sentences: list[Span] = []
    sentence_start = None
    start = 0
    for end in ends:
        chunk = np.flatnonzero(solid[start : end + 1])
        if len(chunk):
            first, last = start + int(chunk[0]), start + int(chunk[-1])
            if (
                tokens
                and sentence_start is not None
                and PARAGRAPH_BREAK in text[tokens[-1][1] : first]
            ):
                sentences.append((sentence_start, tokens[-1][1]))
                sentence_start = None
            tokens.append((first, last))
            sentence_start = first if sentence_start is None else sentence_start
        if sentence_start is not None and labels[end] in (SENTENCE_END, MWT_SENTENCE_END):
            sentences.append((sentence_start, tokens[-1][1]))
            sentence_start = None
        start = end + 1
    if sentence_start is not None:
        sentences.append((sentence_start, tokens[-1][1]))
    return tokens, sentences


def score_spans(
    text: str, gold: npt.NDArray[np.uint8], system: npt.NDArray[np.uint8]
) -> SpanScores:
    """Token and sentence span counts of ``system`` classes against ``gold`` ones on ``text``."""
    gold_tokens, gold_sentences = segment_spans(text, gold)
    system_tokens, system_sentences = segment_spans(text, system)
    return SpanScores(
        _counts(system_tokens, gold_tokens), _counts(system_sentences, gold_sentences)
    )


def _counts(system: Iterable[Span], gold: Iterable[Span]) -> SpanCounts:
    system, gold = set(system), set(gold)
    return SpanCounts(len(system), len(gold), len(system & gold))
