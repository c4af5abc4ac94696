"""Decoding per-character classes into documents (rawtext.segment), rule by rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rawtext_cases import labelled, texts_and_labels

from rawtext import SENTENCE_END, TOKEN_END, Sentence, segment, split_long
from rawtext.chars import UNWRITABLE, paragraph_spans, space_mask
from rawtext.segment import normalized


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


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        ("a |#b c#", [[["a"], ["b c"]]]),
        # en_ewt_small on CRLF text: the sentence end on the CR, none on the full stop.
        ("mat|.\r#\nIt|.#", [[["mat", "."], ["It", "."]]]),
        ("mat|.|\r#\nIt|.#", [[["mat", "."], ["It", "."]]]),
        ("mat|. \r#\n", [[["mat", "."]]]),
        ("du+ \r#\nvin#", [[["du"], ["vin"]]]),
        ("du \t+vin#", [[["du", "vin"]]]),
        ("a#\n\n #b#", [[["a"]], [["b"]]]),  # nothing before it in its paragraph
    ],
)
def test_a_class_on_whitespace_moves_to_the_character_before_it(marked, expected) -> None:
    text, labels = labelled(marked)
    assert shape(segment(text, labels)) == expected


def test_a_moved_class_keeps_the_characters_own_multi_word_token() -> None:
    text, labels = labelled("du+\r#\nau|\r*\nvin#")
    tokens = list(segment(text, labels, expand=lambda form: [form[0], form[1:]]).tokens())
    assert [t.words for t in tokens] == [("d", "u"), ("au",), ("vin",)]
    assert [len(s.tokens) for s in segment(text, labels).sentences()] == [1, 1, 1]


def test_a_class_on_the_next_paragraphs_leading_space_stays_out_of_the_paragraph_before() -> None:
    # The multi-word class on paragraph 2's leading space moved back onto paragraph 1's last
    # token, "du", which became "de le" (a mutation no test saw).
    text, labels = labelled("Hi| du\n\n +Next one#")
    tokens = list(segment(text, labels, expand=lambda form: ["de", "le"]).tokens())
    assert [t.words for t in tokens] == [("Hi",), ("du",), ("Next one",)]


@pytest.mark.parametrize("unwritable", [*"\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"])
def test_a_tab_or_line_break_ends_a_token(unwritable: str) -> None:
    text, labels = labelled(f"The cat{unwritable}sat#")
    assert shape(segment(text, labels)) == [[["The cat", "sat"]]]


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


def token_ends(text: str, labels: np.ndarray) -> set[int]:
    """Where rule 2 ends tokens: the last non-space character at or before each labelled
    character, TAB or line break, in its paragraph (a plain loop, not the numpy code)."""
    ends = set()
    for start, stop in paragraph_spans(text):
        for i in range(start, stop):
            if labels[i] or text[i] in UNWRITABLE:
                j = i
                while j >= start and text[j].isspace():
                    j -= 1
                if j >= start:
                    ends.add(j)
    return ends


@given(texts_and_labels())
def test_tokens_end_exactly_at_labelled_non_space_characters(case) -> None:
    text, labels = case
    ends = token_ends(text, labels)
    document = segment(text, labels)
    for paragraph in document.paragraphs:
        tokens = [token for sentence in paragraph.sentences for token in sentence.tokens]
        assert {t.end - 1 for t in tokens[:-1]} <= ends
        inside = {i for t in tokens for i in range(t.start, t.end - 1)}
        assert not inside & ends
        assert not any(char in UNWRITABLE for t in tokens for char in t.form)


TEN_WORDS = " ".join(f"w{i}|" for i in range(10))


@pytest.mark.parametrize(
    ("max_words", "sizes"),
    [(10, [10]), (11, [10]), (5, [5, 5]), (4, [3, 3, 4]), (3, [2, 3, 2, 3]), (1, [1] * 10)],
)
def test_a_long_sentence_is_cut_into_pieces_of_about_equal_length(max_words, sizes) -> None:
    text, labels = labelled(TEN_WORDS)
    whole = segment(text, labels)
    document = split_long(whole, max_words)
    assert [len(sentence.tokens) for sentence in document.sentences()] == sizes
    assert list(document.tokens()) == list(whole.tokens())
    assert document.text == text


def test_pieces_count_the_words_of_multi_word_tokens_and_keep_paragraphs() -> None:
    text, labels = labelled("du+ vin| au+ lit#\n\nOui#")
    document = split_long(segment(text, labels, expand=lambda form: [form, form]), 3)
    assert shape(document) == [[["du", "vin"], ["au", "lit"]], [["Oui"]]]


@pytest.mark.parametrize("limit", [0, -3, 1.5, "2", True, None])
def test_a_limit_that_is_no_whole_number_of_words_is_refused(limit) -> None:
    """1.5 was read as 1 and "2" was a TypeError of comparison."""
    text, labels = labelled(TEN_WORDS)
    with pytest.raises(ValueError, match=rf"max_words={limit!r} must be a whole number >= 1"):
        split_long(segment(text, labels), limit)


@given(texts_and_labels(), st.integers(1, 4))
def test_pieces_keep_every_token_in_order_and_hold_at_most_the_limit(case, max_words) -> None:
    text, labels = case
    whole = segment(text, labels, expand=lambda form: [form, form])
    document = split_long(whole, max_words)
    assert list(document.tokens()) == list(whole.tokens())
    assert len(document.paragraphs) == len(whole.paragraphs)
    for sentence in document.sentences():  # a token is never cut, even one over the limit
        words = sum(len(token.words) for token in sentence.tokens)
        assert words <= max_words or len(sentence.tokens) == 1
    for paragraph, before in zip(document.paragraphs, whole.paragraphs, strict=True):
        fewest = sum(_fewest_pieces(s, max_words) for s in before.sentences)
        assert len(paragraph.sentences) == fewest


def _fewest_pieces(sentence: Sentence, max_words: int) -> int:
    """Pieces of at most ``max_words`` words, filled in order as full as they go (the fewest)."""
    pieces = fill = 0
    for token in sentence.tokens:
        if pieces == 0 or fill + len(token.words) > max_words:
            pieces, fill = pieces + 1, 0
        fill += len(token.words)
    return pieces


@pytest.mark.parametrize("after", ["\n", "\t", " "])
@pytest.mark.parametrize("joined", ["\u0301def.", "\u200d\U0001f600x."])
def test_a_class_on_whitespace_never_moves_forward(after: str, joined: str) -> None:
    # A line break or TAB kept its token end after moving it back, and rule 2b then carried
    # it forward onto a combining mark or joiner after it: "abc", "\u0301", "def.".
    text = f"abc{after}{joined}"
    labels = np.zeros(len(text), np.uint8)
    labels[2], labels[-1] = TOKEN_END, SENTENCE_END
    assert [token.form for token in segment(text, labels).tokens()] == ["abc", joined]
    assert not normalized(text, labels)[space_mask(text)].any()


def test_a_sentence_is_cut_into_the_fewest_pieces() -> None:
    # [1, 1, 3] words under a limit of 2 came out as 3 pieces: the equal share forced a cut.
    text, labels = labelled("a| b| c+")
    sizes = {"a": 1, "b": 1, "c": 3}
    whole = segment(text, labels, expand=lambda form: [form] * sizes[form])
    pieces = split_long(whole, 2).sentences()
    assert [[token.form for token in sentence.tokens] for sentence in pieces] == [["a", "b"], ["c"]]
