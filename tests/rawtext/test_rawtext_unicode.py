"""Unicode edge cases of segmentation and CoNLL-U out: nothing normalized, spans index the input."""

from __future__ import annotations

import importlib
import io
import re
import unicodedata

import conllu
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rawtext_cases import labelled

from rawtext import SENTENCE_END, TOKEN_END, segment, to_conllu
from rawtext.chars import SPACE_CODES, as_line_feeds, codes, flag_openers, joins, space_mask


def forms(document) -> list[str]:
    return [token.form for token in document.tokens()]


def written(document) -> str:
    return "".join(to_conllu(document, doc_id="d", sent_id_prefix="s"))


def test_the_whitespace_table_is_exactly_str_isspace() -> None:
    every = [chr(c) for c in range(0x110000) if c < 0xD800 or c > 0xDFFF]
    assert {ord(c) for c in every if c.isspace()} == set(SPACE_CODES.tolist())
    assert all(bool(re.fullmatch(r"\s", c)) == c.isspace() for c in every)
    sample = "a\u00a0b\u200bc\u3000\t\n\u2028"
    assert space_mask(sample).tolist() == [c.isspace() for c in sample]


@pytest.mark.parametrize("form", ["NFC", "NFD"])
def test_nfc_and_nfd_input_is_kept_as_given(form: str) -> None:
    word = unicodedata.normalize(form, "café")
    text, labels = labelled(f"{word}| crème#")
    document = segment(text, labels)
    first = next(document.tokens())
    assert first.form == word
    assert (first.start, first.end) == (0, len(word))  # 4 code points in NFC, 5 in NFD
    assert f"# text = {word} crème\n" in written(document)


def test_crlf_and_lone_cr_are_line_breaks_that_become_spaces_in_the_text_comment() -> None:
    text, labels = labelled("one|\r\ntwo|\rthree#\r\n\r\nfour#\r\r five#")
    document = segment(text, labels)
    assert [[[t.form for t in s.tokens] for s in p.sentences] for p in document.paragraphs] == [
        [["one", "two", "three"]],
        [["four"]],
        [["five"]],
    ]
    assert "# text = one  two three\n" in written(document)  # CR LF: two characters, two spaces


def test_tabs_separate_tokens_and_become_spaces() -> None:
    text, labels = labelled("a|\tb#")
    lines = written(segment(text, labels)).splitlines()
    assert "# text = a b" in lines
    assert "1\ta\t_\t_\t_\t_\t_\t_\t_\t_" in lines  # a TAB after it: a space, no SpaceAfter=No


def test_a_tab_ends_a_token_the_model_did_not_end() -> None:
    text, labels = labelled("a\tb#")
    assert forms(segment(text, labels)) == ["a", "b"]
    assert "# text = a b\n" in written(segment(text, labels))


def test_zero_width_space_is_a_character_of_a_token() -> None:
    text, labels = labelled("a|\u200bb#")
    document = segment(text, labels)
    assert forms(document) == ["a", "\u200bb"]
    assert "1\ta\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No" in written(document).splitlines()


def test_no_break_space_is_whitespace() -> None:
    text, labels = labelled("10\u00a0000#")
    assert forms(segment(text, labels)) == ["10\u00a0000"]  # inside a token when unlabelled
    text, labels = labelled("10|\u00a0000#")
    document = segment(text, labels)
    assert forms(document) == ["10", "000"]
    assert "SpaceAfter=No" not in written(document)


def test_emoji_sequences_index_code_points() -> None:
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"  # 5 code points, one glyph
    text, labels = labelled(f"hi| {family}|👍🏽#")
    document = segment(text, labels)
    assert forms(document) == ["hi", family, "👍🏽"]
    assert [(t.start, t.end) for t in document.tokens()] == [(0, 2), (3, 8), (8, 10)]
    (sentence,) = conllu.parse(written(document))
    assert [token["form"] for token in sentence] == ["hi", family, "👍🏽"]


def test_right_to_left_text_stays_in_logical_order() -> None:
    text, labels = labelled("\u05e9\u05dc\u05d5\u05dd| \u200f\u05e2\u05d5\u05dc\u05dd|.# ")
    document = segment(text, labels)
    assert forms(document) == ["\u05e9\u05dc\u05d5\u05dd", "\u200f\u05e2\u05d5\u05dc\u05dd", "."]
    (sentence,) = conllu.parse(written(document))
    assert sentence.metadata["text"] == text.strip()


def test_a_one_megabyte_line_segments_and_writes() -> None:
    text = "word, " * ((1 << 20) // 6) + "end"  # one line, no line break
    labels = np.zeros(len(text), np.uint8)
    labels[3::6] = TOKEN_END
    labels[4::6] = SENTENCE_END
    labels[-1] = SENTENCE_END
    document = segment(text, labels)
    (paragraph,) = document.paragraphs
    assert len(paragraph.sentences) == text.count(",") + 1
    assert sum(len(s.tokens) for s in paragraph.sentences) == 2 * text.count(",") + 1
    lines = list(to_conllu(document))
    assert lines[-3:] == ["# text = end\n", "1\tend\t_\t_\t_\t_\t_\t_\t_\t_\n", "\n"]


def test_one_megabyte_unlabelled_is_one_token_that_the_conllu_package_reads() -> None:
    text = "x" * (1 << 20)
    document = segment(text, np.zeros(len(text), np.uint8))
    assert forms(document) == [text]
    (sentence,) = conllu.parse(written(document))
    assert sentence[0]["form"] == text


@pytest.mark.parametrize("text", ["", "   ", "\r\n\r\n", "\u00a0\u3000\t"])
def test_empty_and_whitespace_only_documents_have_no_sentences(text: str) -> None:
    document = segment(text, np.full(len(text), TOKEN_END, np.uint8))
    assert document.paragraphs == ()
    assert list(document.sentences()) == []
    assert written(document) == ""
    assert conllu.parse(written(document)) == []


def test_the_biaffine_reader_reads_every_edge_case_back() -> None:
    from biaffine.data.conllu import read_conllu

    family = "\U0001f469\u200d\U0001f467"
    marked = f"cafe\u0301| a\u200bb|\u00a0c\td#\r\n\r\n{family}| \u05e9\u05dc\u05d5\u05dd#"
    text, labels = labelled(marked)
    sentences = list(read_conllu(io.StringIO(written(segment(text, labels)))))
    assert [s.forms for s in sentences] == [
        ["cafe\u0301", "a\u200bb", "c", "d"],
        [family, "\u05e9\u05dc\u05d5\u05dd"],
    ]
    assert sentences[0].metadata["text"] == "cafe\u0301 a\u200bb\u00a0c d"


def positions(text: str) -> np.ndarray:
    """A stand-in segmenter's classes: each character's position, so every move shows."""
    return np.arange(len(text), dtype=np.uint8)


def test_a_segmenter_reads_each_crlf_and_lone_cr_as_one_line_feed() -> None:
    seen = []

    def classify(text: str) -> np.ndarray:
        seen.append(text)
        return positions(text) + 1

    text = "a.\r\nb\rc\n\r\n\rd\r"
    classes = as_line_feeds(text, classify)
    assert seen == ["a.\nb\nc\n\n\nd\n"]
    # Each character takes the class of the one it became; a CRLF's CR takes none (0).
    assert classes.tolist() == [1, 2, 0, 3, 4, 5, 6, 7, 0, 8, 9, 10, 11]
    assert as_line_feeds("no carriage return\n", positions).tolist() == list(range(19))


@given(st.text(alphabet="ab \r\n", max_size=30))
def test_line_feeds_leave_every_other_character_its_own_class(text: str) -> None:
    plain = text.replace("\r\n", "\n").replace("\r", "\n")
    classes = as_line_feeds(text, positions)
    crlf_cr = [i for i in range(len(text)) if text[i : i + 2] == "\r\n"]
    assert len(classes) == len(text)
    assert classes[crlf_cr].tolist() == [0] * len(crlf_cr)
    assert np.delete(classes, crlf_cr).tolist() == positions(plain).tolist()


FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # man ZWJ woman ZWJ girl: one emoji
FLAG = "\U0001f1eb\U0001f1f7"  # regional indicators F and R
GERMAN = "\U0001f1e9\U0001f1ea"  # D and E


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        # The shipped EWT segmenter ended a token after the woman: "man ZWJ woman", "ZWJ girl".
        ("Hi| \U0001f468\u200d\U0001f469|\u200d\U0001f467 there#", ["Hi", FAMILY, "there"]),
        ("cafe|\u0301 noir#", ["cafe\u0301", "noir"]),  # NFD: the accent is the e's
        ("cafe#\u0301 noir#", ["cafe\u0301", "noir"]),  # with the class it had
        (f"Go| {FLAG[0]}|{FLAG[1]} now#", ["Go", FLAG, "now"]),
        # Two flags side by side are two characters: a token may end between them (a run of
        # regional indicators was one character whatever its length).
        (f"{FLAG}|{GERMAN}| {FLAG}{GERMAN[0]}|{GERMAN[1]}#", [FLAG, GERMAN, FLAG + GERMAN]),
        ("ok\u200d| x#", ["ok\u200d", "x"]),  # a joiner before a space joins nothing
    ],
    ids=[
        "family-emoji",
        "combining-accent",
        "sentence-end-moves",
        "flag",
        "two-flags",
        "joiner-at-the-end",
    ],
)
def test_a_token_never_ends_inside_a_character_of_several_code_points(
    marked: str, expected: list[str]
) -> None:
    text, labels = labelled(marked)
    document = segment(text, labels)
    assert forms(document) == expected
    assert len(document.paragraphs[0].sentences) == (2 if "#\u0301" in marked else 1)


JOINING = st.sampled_from(["a", "e", " ", "\u0301", "\u200d", "\U0001f469", "\ufe0f", *FLAG])


@given(st.data())
def test_no_token_ends_between_code_points_that_join(data: st.DataObject) -> None:
    text = data.draw(st.text(JOINING, max_size=30))
    labels = np.array(
        data.draw(st.lists(st.integers(0, 4), min_size=len(text), max_size=len(text))),
        dtype=np.uint8,
    )
    document = segment(text, labels)
    tokens = list(document.tokens())
    assert "".join("".join(token.form.split()) for token in tokens) == "".join(text.split())
    opens = flag_openers(codes(text)) if text else []
    for token in tokens:
        end = token.end
        assert end == len(text) or not joins(text[end - 1], text[end], opens_flag=opens[end - 1])


def test_a_chain_of_joined_code_points_is_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each labelled code point of a chain walked it to its end: 16,000 code points of ")" and
    # U+200D, every ")" labelled (as the shipped segmenters label them), took 59 s.
    calls = 0

    def counted(before: str, after: str, **flags: bool) -> bool:
        nonlocal calls
        calls += 1
        return joins(before, after, **flags)

    # The module, which the package's segment() function hides by name.
    monkeypatch.setattr(importlib.import_module("rawtext.segment"), "joins", counted)
    chain = ")\u200d" * 1000
    text = f"Hi {chain} end"
    labels = np.zeros(len(text), dtype=np.uint8)
    labels[3 : 3 + len(chain) : 2] = TOKEN_END
    labels[1] = labels[-1] = TOKEN_END
    document = segment(text, labels)
    assert forms(document) == ["Hi", chain, "end"]  # nothing ends inside the joined run
    assert calls <= len(text)
