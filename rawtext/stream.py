"""A long text in pieces of whole paragraphs, so that it is segmented without being held whole.

Paragraphs are independent in :func:`rawtext.segment` (a class never moves across a paragraph
break, and a break ends the sentence), so a text cut just after paragraph breaks segments
piece by piece into the paragraphs of the whole. :func:`paragraph_pieces` makes those cuts
from text arriving in chunks of any size (a file read block by block, standard input), and
:func:`to_conllu` numbers the sentences of later pieces on from the earlier ones'.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .chars import PARAGRAPH_BREAK, line_feed_text

__all__ = ["PIECE_CHARACTERS", "LineFeeds", "ParagraphCutter", "paragraph_pieces"]

PIECE_CHARACTERS = 1 << 18
"""Characters a piece holds at least (the last excepted), 262,144: raw text is segmented whole
up to this length (EWT's test text is 125,537 characters), and beyond it in pieces of this
size or a little more, at the first paragraph break after it."""


_MOST_ADDED = 1 << 16
"""The most characters :meth:`ParagraphCutter.add` takes in at a time (a larger chunk in parts)."""


def paragraph_pieces(
    chunks: Iterable[str], min_characters: int = PIECE_CHARACTERS
) -> Iterator[str]:
    """The text of ``chunks`` (concatenated) cut just after paragraph breaks.

    Every piece but the last holds at least ``min_characters`` characters and ends at the end
    of a paragraph break (:data:`rawtext.chars.PARAGRAPH_BREAK`) that the text goes on after
    with a character other than whitespace (perhaps after spaces): the break is whole (a CRLF
    is never cut, and the break could not go on in a later chunk), and the next piece starts
    with its paragraph. A run of blank lines is held, as a paragraph is, until text follows.
    The pieces, joined, are the text exactly; a text with no such break after
    ``min_characters`` is one piece, however long (a paragraph is never cut).

    Args:
        chunks: the text in consecutive parts of any size (empty ones included).
        min_characters: the fewest characters of a piece before it may be cut (at least 1).
    """
    cutter = ParagraphCutter(min_characters)
    for chunk in chunks:
        yield from cutter.add(chunk)
    yield from cutter.end()


class ParagraphCutter:
    """:func:`paragraph_pieces` a chunk at a time: the pieces each chunk completes.

    Time is linear in the text whatever its chunks: held chunks are joined only to give a
    piece (a large chunk is taken in parts, so what follows the piece, copied, is short), and
    a search reads only what follows the last one's least end or the text's last character
    other than whitespace (a run of spaces or blank lines is read once).
    """

    def __init__(self, min_characters: int = PIECE_CHARACTERS) -> None:
        """Start with no text."""
        if min_characters < 1:
            raise ValueError(f"min_characters={min_characters}: must be at least 1")
        self.min_characters = min_characters
        self.parts: list[str] = []  # the text not yet given as a piece
        self.length = 0  # its characters
        self.trailing = 0  # where the whitespace that ends it starts
        self.searched = 0  # no break of the text to come starts before it

    def add(self, chunk: str) -> list[str]:
        """The pieces that end in the text so far, now that ``chunk`` follows it."""
        if len(chunk) > _MOST_ADDED:  # each piece given copies the text held after it
            step = range(0, len(chunk), _MOST_ADDED)
            return [piece for at in step for piece in self.add(chunk[at : at + _MOST_ADDED])]
        if not chunk:
            return []
        self.parts.append(chunk)
        self.length += len(chunk)
        if chunk.isspace():
            return []  # no cut: a break may end a piece only once text follows it
        self.trailing = self.length - (len(chunk) - len(chunk.rstrip()))
        pieces = []
        while True:
            # Searched from a piece's least end: a match starting inside a longer break still
            # ends where the whole break ends (the pattern is greedy), so every end found is a
            # true one; a break ending past the least end but starting before it may be
            # passed over for a later one, which only makes the piece longer.
            start = max(self.searched, self.min_characters - 1)
            offset, tail = self._tail(start)
            found = PARAGRAPH_BREAK.search(tail, start - offset)
            if found is None or offset + found.end() >= self.trailing:
                # No break, or only whitespace after it so far (the break may go on): a break
                # of the text to come starts in the whitespace that ends this text, or later.
                self.searched = self.trailing
                return pieces
            pieces.append(self._take(offset + found.end()))

    def flush(self) -> list[str]:
        """The held text to the end of its last paragraph break, as a piece (or none).

        For a writer that paused: the paragraphs before the break have ended, whatever its
        length, and the text to come starts a paragraph of its own. None where the held text
        holds no break after text. A CR that ends the piece and the held text is a line
        break of its own: an LF after the pause is another, at the next piece's start.
        """
        text = "".join(self.parts)
        end = max((found.end() for found in PARAGRAPH_BREAK.finditer(text)), default=0)
        if not text[:end].strip():
            return []
        return [self._take(end)]

    def end(self) -> list[str]:
        """The last piece (none if no text is left): the text has ended."""
        last = self._take(self.length)
        return [last] if last else []

    def _tail(self, start: int) -> tuple[int, str]:
        """The held text from the start of the chunk that holds character ``start`` on."""
        offset, first = self.length, len(self.parts)
        while first > 0 and offset > start:
            first -= 1
            offset -= len(self.parts[first])
        return offset, "".join(self.parts[first:])

    def _take(self, end: int) -> str:
        """The held text's first ``end`` characters, no longer held."""
        text = "".join(self.parts)
        rest = text[end:]
        self.parts, self.length = ([rest] if rest else []), len(rest)
        self.trailing, self.searched = max(0, self.trailing - end), 0
        return text[:end]


class LineFeeds:
    """:func:`rawtext.chars.line_feed_text` of a text given in chunks, a chunk at a time.

    A CR that ends a chunk is held back until the next shows whether a LF follows it (a CRLF
    is one LF), so the parts given, joined, are ``line_feed_text`` of the whole text.
    """

    def __init__(self) -> None:
        """Start with no text."""
        self.held = ""

    def add(self, chunk: str) -> str:
        """The next part of the text with LF line breaks, now that ``chunk`` follows."""
        text = self.held + chunk
        self.held = "\r" if text.endswith("\r") else ""
        return line_feed_text(text[: len(text) - len(self.held)])

    def end(self) -> str:
        """The last part: the text has ended (or its writer paused: a held CR ends its line)."""
        last, self.held = line_feed_text(self.held), ""
        return last
