"""Decoding per-character classes into documents (rawtext.segment), rule by rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from rawtext_cases import labelled, texts_and_labels

from rawtext import segment


def shape(document) -> list[list[list[str]]]:
    """Token forms by sentence by paragraph."""
    return [
        [[token.form for token in sentence.tokens] for sentence in paragraph.sentences]
        for paragraph in document.paragraphs
    ]


def test_tokens_sentences_and_paragraphs_follow_the_classes() -> None:
    text, labels = labelled("Hello| world|!# It| is|.#\n\nNew| one#")
    assert shape(segment(text, labels)) == [
        [["Hello", "world", "!"], ["It", "is", "."]],
        [["New", "one"]],
    ]


def test_spans_index_the_input() -> None:
    text, labels = labelled("  ab|c# d#")
    document = segment(text, labels)
    assert [(t.start, t.end, t.form) for t in document.tokens()] == [
        (2, 4, "ab"),
        (4, 5, "c"),
        (6, 7, "d"),
    ]
    assert all(text[t.start : t.end] == t.form for t in document.tokens())


def test_a_token_may_hold_spaces_when_the_model_says_so() -> None:
    text, labels = labelled("Tiếp theo| là#")
    assert shape(segment(text, labels)) == [[["Tiếp theo", "là"]]]


def test_a_blank_line_ends_the_sentence_and_the_token() -> None:
    text, labels = labelled("no label here\n \t\nnext|")
    assert shape(segment(text, labels)) == [[["no label here"]], [["next"]]]


@pytest.mark.parametrize("blank", ["\n\n", "\r\n\r\n", "\r\r", "\n \u00a0\r\n", "\r\n\n\n\r"])
def test_every_kind_of_blank_line_breaks_paragraphs(blank: str) -> None:
    text, labels = labelled(f"a#{blank}b#")
    assert shape(segment(text, labels)) == [[["a"]], [["b"]]]


@pytest.mark.parametrize("single", ["\n", "\r\n", "\r", "\n\u200b\n"])
def test_one_line_break_is_no_paragraph_break(single: str) -> None:
    text, labels = labelled(f"a#{single}b#")
    assert len(segment(text, labels).paragraphs) == 1


def test_text_after_the_last_label_is_a_final_token_and_sentence() -> None:
    text, labels = labelled("one| two three  \n")
    (paragraph,) = segment(text, labels).paragraphs
    assert [[t.form for t in s.tokens] for s in paragraph.sentences] == [["one", "two three"]]


def test_a_class_on_whitespace_is_ignored() -> None:
    text, labels = labelled("a |#b c#")
    assert shape(segment(text, labels)) == [[["a b c"]]]


def test_the_paragraph_end_ends_a_sentence_without_a_sentence_class() -> None:
    text, labels = labelled("a| b|\n\nc+")
    document = segment(text, labels, expand=lambda form: [form, form])
    assert shape(document) == [[["a", "b"]], [["c"]]]
    assert document.paragraphs[1].sentences[0].tokens[0].words == ("c", "c")


def test_mwt_tokens_are_expanded_and_others_are_not() -> None:
    text, labels = labelled("Du+ vin| au* ")
    calls = []

    def expand(form: str) -> list[str]:
        calls.append(form)
        return {"Du": ["De", "le"], "au": ["à"]}[form]

    tokens = list(segment(text, labels, expand=expand).tokens())
    assert calls == ["Du", "au"]
    assert [t.words for t in tokens] == [("De", "le"), ("vin",), ("au",)]
    assert [t.is_mwt for t in tokens] == [True, False, False]
    assert [t.words for t in segment(text, labels).tokens()] == [("Du",), ("vin",), ("au",)]


def test_a_token_always_split_in_training_is_expanded_whatever_its_class() -> None:
    text, labels = labelled("Du| vin| au* ")
    document = segment(text, labels, expand=lambda form: [form[0], form[1:]], always=str.istitle)
    assert [t.words for t in document.tokens()] == [("D", "u"), ("vin",), ("a", "u")]
    first = next(segment(text, labels, lambda form: [form[0], form[1:]]).tokens())
    assert first.words == ("Du",)  # without always: the class alone decides


def test_an_expansion_with_a_blank_word_is_refused() -> None:
    text, labels = labelled("Du+")
    with pytest.raises(ValueError, match="'Du' gave a blank word"):
        segment(text, labels, expand=lambda form: ["de", " "])


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        (np.zeros(2, np.uint8), r"shape \(2,\), expected \(3,\)"),
        (np.zeros((3, 1), np.uint8), r"shape \(3, 1\)"),
        (np.array([0, 5, 0]), r"labels\[1\]=5 is not a class"),
        (np.array([0, 0, -1]), r"labels\[2\]=-1"),
        (np.zeros(3, np.float32), "must be integers"),
    ],
)
def test_bad_labels_are_refused_in_words(labels: np.ndarray, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        segment("abc", labels)


@given(texts_and_labels())
def test_every_non_space_character_lands_in_exactly_one_token_in_order(case) -> None:
    text, labels = case
    document = segment(text, labels)
    covered = np.zeros(len(text), dtype=int)
    previous_end = 0
    for token in document.tokens():
        assert previous_end <= token.start < token.end
        assert token.form == text[token.start : token.end]
        assert not token.form[0].isspace()
        assert not token.form[-1].isspace()
        covered[token.start : token.end] += 1
        previous_end = token.end
    assert all(covered[i] == 1 for i, char in enumerate(text) if not char.isspace())
    assert covered.max(initial=0) <= 1
    assert all(paragraph.sentences for paragraph in document.paragraphs)
    assert all(sentence.tokens for sentence in document.sentences())


@given(texts_and_labels())
def test_tokens_end_exactly_at_labelled_non_space_characters(case) -> None:
    text, labels = case
    ends = {i for i, char in enumerate(text) if labels[i] and not char.isspace()}
    document = segment(text, labels)
    for paragraph in document.paragraphs:
        tokens = [token for sentence in paragraph.sentences for token in sentence.tokens]
        assert {t.end - 1 for t in tokens[:-1]} <= ends
        inside = {i for t in tokens for i in range(t.start, t.end - 1)}
        assert not inside & ends
