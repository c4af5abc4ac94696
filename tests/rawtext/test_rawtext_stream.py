"""A text cut into pieces of whole paragraphs segments and writes as the whole text does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rawtext import N_CLASSES, segment, to_conllu
from rawtext.chars import PARAGRAPH_BREAK, line_feed_text
from rawtext.stream import LineFeeds, ParagraphCutter, paragraph_pieces

# Letters, spaces, every kind of line break, and a CR whose LF may come in the next chunk.
ALPHABET = ["a", "b", ".", " ", "\t", "\u00a0", "\n", "\r", "\r\n", "\u2028", "\n\n", "\r\n\r\n"]


@st.composite
def chunked_texts(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text and the same text in chunks cut anywhere (a CRLF included)."""
    text = "".join(draw(st.lists(st.sampled_from(ALPHABET), max_size=80)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    return text, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@given(chunked_texts(), st.integers(1, 25))
@settings(max_examples=400, deadline=None)
def test_pieces_are_the_text_cut_after_whole_paragraph_breaks(chunked, least: int) -> None:
    text, chunks = chunked
    pieces = list(paragraph_pieces(chunks, least))
    assert "".join(pieces) == text
    assert all(pieces)
    ends = {match.end() for match in PARAGRAPH_BREAK.finditer(text)}
    offset = 0
    for piece in pieces[:-1]:
        offset += len(piece)
        assert len(piece) >= least
        assert offset in ends  # the end of a whole break of the whole text
        assert text[offset:].strip()  # and text goes on after it


def test_a_text_with_breaks_is_cut_once_enough_of_it_is_known() -> None:
    # The check above passes for a text never cut; this one must be.
    text = "one.\n\ntwo.\r\n\r\nthree.\n \nfour."
    assert list(paragraph_pieces([text], 5)) == ["one.\n\n", "two.\r\n\r\n", "three.\n \n", "four."]
    assert list(paragraph_pieces(list(text), 5)) == list(paragraph_pieces([text], 5))
    # A break known to end only once its next paragraph starts: a CRLF split between chunks,
    # and blank lines that go on in the next chunk.
    assert list(paragraph_pieces(["one.\r", "\n\r", "\ntwo."], 1)) == ["one.\r\n\r\n", "two."]
    assert list(paragraph_pieces(["a.\n\n ", " \n", "b."], 1)) == ["a.\n\n  \n", "b."]
    assert list(paragraph_pieces(["a.\n\n"], 1)) == ["a.\n\n"]
    assert list(paragraph_pieces([], 1)) == list(paragraph_pieces(["", ""], 1)) == []


def test_a_paragraph_is_never_cut_however_long() -> None:
    text = "word " * 1000 + "\nline" * 10 + "\n"
    assert list(paragraph_pieces([text[:100], text[100:]], 10)) == [text]


def test_pieces_must_be_of_at_least_one_character() -> None:
    with pytest.raises(ValueError, match="min_characters=0"):
        list(paragraph_pieces(["a"], 0))


@given(chunked_texts(), st.integers(1, 25), st.data())
@settings(max_examples=300, deadline=None)
def test_pieces_segment_and_write_as_the_whole_text(chunked, least: int, data) -> None:
    text, chunks = chunked
    labels = np.array(
        data.draw(st.lists(st.integers(0, N_CLASSES - 1), min_size=len(text), max_size=len(text))),
        dtype=np.uint8,
    )
    whole = segment(text, labels)
    lines, spans, offset, written = [], [], 0, 0
    for piece in paragraph_pieces(chunks, least):
        document = segment(piece, labels[offset : offset + len(piece)])
        spans += [
            (token.start + offset, token.end + offset, token.form) for token in document.tokens()
        ]
        piece_lines = list(to_conllu(document, doc_id="d", first=written + 1))
        written += sum(line.startswith("# sent_id") for line in piece_lines)
        lines += piece_lines
        offset += len(piece)
    assert spans == [(token.start, token.end, token.form) for token in whole.tokens()]
    assert lines == list(to_conllu(whole, doc_id="d"))


def test_a_later_piece_numbers_on_and_opens_no_document() -> None:
    text = "a b.\n\nc."
    labels = np.zeros(len(text), dtype=np.uint8)
    labels[[0, 3, 6]] = 1  # token ends; the paragraphs end the sentences
    first, second = paragraph_pieces([text], 1)
    head = list(to_conllu(segment(first, labels[:6])))
    tail = list(to_conllu(segment(second, labels[6:]), first=2))
    assert head[:2] == ["# newdoc\n", "# newpar\n"]
    assert "# sent_id = 1\n" in head
    assert tail[:2] == ["# newpar\n", "# sent_id = 2\n"]


@given(chunked_texts())
@settings(max_examples=300, deadline=None)
def test_line_feeds_of_a_text_in_chunks_are_those_of_the_whole(chunked) -> None:
    text, chunks = chunked
    feeds = LineFeeds()
    assert "".join([*(feeds.add(chunk) for chunk in chunks), feeds.end()]) == line_feed_text(text)


def test_a_cr_ending_a_chunk_waits_for_the_next() -> None:
    feeds = LineFeeds()
    assert [feeds.add("a\r"), feeds.add("\nb\r"), feeds.add("c\r"), feeds.end()] == [
        "a",
        "\nb",
        "\nc",
        "\n",
    ]


class _CountingBreaks:
    """PARAGRAPH_BREAK, counting the characters its searches are given to read."""

    def __init__(self) -> None:
        self.read = 0

    def search(self, text: str, pos: int = 0):
        self.read += max(0, len(text) - pos)
        return PARAGRAPH_BREAK.search(text, pos)


@pytest.mark.parametrize(
    "chunk",
    ["   ", "\n \n\t ", "\n \n\t x", "word ", "\r\n"],
    ids=["spaces", "blank-lines", "short-paragraphs", "no-break", "line-breaks"],
)
def test_the_cutter_reads_each_character_a_bounded_number_of_times(
    chunk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run of 60,000 spaces before a word took 23 s (a search from each of its characters);
    # a text in small chunks must not be searched again from its start for each.
    import rawtext.stream

    counting = _CountingBreaks()
    monkeypatch.setattr(rawtext.stream, "PARAGRAPH_BREAK", counting)
    cutter = ParagraphCutter(1000)
    pieces = [piece for _ in range(20_000) for piece in cutter.add(chunk)]
    pieces += cutter.add("end.") + cutter.end()
    text = chunk * 20_000 + "end."
    assert "".join(pieces) == text
    assert counting.read <= 3 * len(text)


@given(chunked_texts(), st.lists(st.booleans(), min_size=7, max_size=7), st.integers(1, 25))
@settings(max_examples=400, deadline=None)
def test_a_pause_gives_the_text_to_its_last_paragraph_break(chunked, pauses, least: int) -> None:
    text, chunks = chunked
    cutter, pieces, flushed = ParagraphCutter(least), [], set()
    for chunk, pause in zip(chunks, pauses, strict=False):
        pieces += cutter.add(chunk)
        if pause:
            given = cutter.flush()
            flushed.update(len(pieces) + k for k in range(len(given)))
            pieces += given
    pieces += cutter.end()
    assert "".join(pieces) == text
    offset = 0
    for k, piece in enumerate(pieces):
        offset += len(piece)
        if k in flushed:  # text, ending with a whole break of the text given so far
            assert piece.strip()
            assert any(PARAGRAPH_BREAK.fullmatch(piece, start) for start in range(len(piece)))


def test_a_pause_gives_what_has_ended_whatever_its_length() -> None:
    cutter = ParagraphCutter(1000)
    assert cutter.add("one.\n\ntwo") == []
    assert cutter.flush() == ["one.\n\n"]
    assert cutter.flush() == []  # "two" may go on
    assert cutter.add(".\r\r") == []
    assert cutter.flush() == ["two.\r\r"]  # lone CRs: a writer waits for this answer
    assert cutter.add("\n") == []
    assert cutter.flush() == []  # whitespace alone is no piece
    assert cutter.end() == ["\n"]
    assert ParagraphCutter(1).flush() == []
