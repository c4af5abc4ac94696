"""Tokens F1 and Sentences F1 from character classes, against hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest

from biaffine.segmenting.spans import SpanCounts, score_spans, segment_spans
from rawtext.labels import MWT_END, MWT_SENTENCE_END, SENTENCE_END, TOKEN_END


def labels(text: str, marks: dict[int, int]) -> np.ndarray:
    out = np.zeros(len(text), dtype=np.uint8)
    for index, label in marks.items():
        out[index] = label
    return out


TEXT = "Hi there. Ok"  # H0 i1 _2 t3 h4 e5 r6 e7 .8 _9 O10 k11
GOLD = labels(TEXT, {1: TOKEN_END, 7: TOKEN_END, 8: SENTENCE_END, 11: SENTENCE_END})


def test_spans_of_tokens_and_sentences() -> None:
    tokens, sentences = segment_spans(TEXT, GOLD)
    assert tokens == [(0, 2), (3, 8), (8, 9), (10, 12)]
    assert sentences == [(0, 9), (10, 12)]


def test_a_missed_sentence_end_costs_both_sentences_and_no_token() -> None:
    system = GOLD.copy()
    system[8] = TOKEN_END  # one sentence "Hi there. Ok" instead of two
    scores = score_spans(TEXT, GOLD, system)
    assert scores.tokens == SpanCounts(system=4, gold=4, correct=4)
    assert scores.sentences == SpanCounts(system=1, gold=2, correct=0)
    assert scores.as_dict() == {"tokens_f1": 100.0, "sentences_f1": 0.0}


def test_a_merged_token_is_one_wrong_token_and_two_missed() -> None:
    system = GOLD.copy()
    system[7] = 0  # "there." as one token
    scores = score_spans(TEXT, GOLD, system)
    # system: Hi, there., Ok (3); gold: Hi, there, ., Ok (4); correct: Hi, Ok
    assert scores.tokens == SpanCounts(3, 4, 2)
    assert scores.tokens.f1 == pytest.approx(200 * 2 / 7)
    assert scores.sentences == SpanCounts(2, 2, 2)


def test_whitespace_never_starts_or_ends_a_span() -> None:
    text = "  ab  c \n"
    tokens, sentences = segment_spans(text, labels(text, {3: TOKEN_END, 6: SENTENCE_END}))
    assert tokens == [(2, 4), (6, 7)]
    assert sentences == [(2, 7)]


def test_a_class_on_whitespace_ends_the_token_before_it() -> None:
    # As rawtext.segment decodes: the class moves onto the last character before the space.
    text = "a b c"
    tokens, sentences = segment_spans(text, labels(text, {1: SENTENCE_END, 2: TOKEN_END}))
    assert tokens == [(0, 1), (2, 3), (4, 5)]
    assert sentences == [(0, 1), (2, 5)]


def test_text_after_the_last_end_is_one_more_token_and_sentence() -> None:
    text = "a b c"
    tokens, sentences = segment_spans(text, labels(text, {0: SENTENCE_END}))
    assert tokens == [(0, 1), (2, 5)]
    assert sentences == [(0, 1), (2, 5)]


def test_a_paragraph_break_ends_a_sentence() -> None:
    text = "a b\n\nc"
    tokens, sentences = segment_spans(
        text, labels(text, {0: TOKEN_END, 2: TOKEN_END, 5: TOKEN_END})
    )
    assert tokens == [(0, 1), (2, 3), (5, 6)]
    assert sentences == [(0, 3), (5, 6)]


def test_multi_word_token_classes_end_tokens_and_sentences_alike() -> None:
    text = "du vin"
    mwt = labels(text, {1: MWT_END, 5: MWT_SENTENCE_END})
    plain = labels(text, {1: TOKEN_END, 5: SENTENCE_END})
    assert segment_spans(text, mwt) == segment_spans(text, plain)


@pytest.mark.parametrize("text", ["", " ", " \n\n\t "])
def test_empty_and_whitespace_texts_hold_no_tokens_and_no_sentences(text: str) -> None:
    assert segment_spans(text, np.zeros(len(text), dtype=np.uint8)) == ([], [])
    assert segment_spans(text, np.full(len(text), SENTENCE_END, dtype=np.uint8)) == ([], [])
    assert score_spans(
        text, np.zeros(len(text), np.uint8), np.zeros(len(text), np.uint8)
    ).as_dict() == {
        "tokens_f1": 100.0,
        "sentences_f1": 100.0,
    }


def test_labels_of_another_length_are_refused() -> None:
    with pytest.raises(ValueError, match="expected"):
        segment_spans("ab", np.zeros(3, dtype=np.uint8))


def test_counts_add_up_over_documents() -> None:
    assert SpanCounts(1, 2, 1) + SpanCounts(3, 2, 2) == SpanCounts(4, 4, 3)
    assert (SpanCounts(1, 2, 1) + SpanCounts(3, 2, 2)).f1 == pytest.approx(75.0)
