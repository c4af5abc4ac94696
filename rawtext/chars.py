r"""What counts as whitespace, a line break and a paragraph break, stated once for the package.

Whitespace is exactly Python's :meth:`str.isspace` (and the ``\s`` of :mod:`re`, which agrees
with it): the no-break space U+00A0 is whitespace, the zero-width space U+200B is not (it is an
ordinary character that belongs to a token). Line breaks are ``\r\n``, ``\r`` and ``\n``; a
paragraph break is two or more of them with only whitespace between.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

# Every whitespace code point lies below U+3001 (U+3000, the ideographic space, is the last).
SPACE_CODES = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)
# A CR followed by LF is one break (CRLF), never a lone CR and then a LF.
_LINE_BREAK = r"(?:\r\n|\r(?!\n)|\n)"
PARAGRAPH_BREAK = re.compile(rf"{_LINE_BREAK}(?:[^\S\r\n]*{_LINE_BREAK})+")
UNWRITABLE = "\t\n\v\f\r\x1c\x1d\x1e\x85\u2028\u2029"
"""What a CoNLL-U line cannot hold inside a field or comment: TAB, and every character that
:meth:`str.splitlines` breaks a line at (all of them whitespace)."""
_UNWRITABLE = re.compile(f"[{UNWRITABLE}]")
_CR = re.compile(r"\r\n?")
_UNWRITABLE_CODES = np.array([ord(c) for c in UNWRITABLE], dtype=np.uint32)


def space_mask(text: str) -> npt.NDArray[np.bool_]:
    """bool[len(text)]: True where ``text[i].isspace()``."""
    return np.isin(codes(text), SPACE_CODES)


def unwritable_mask(text: str) -> npt.NDArray[np.bool_]:
    """bool[len(text)]: True at each character of :data:`UNWRITABLE` (TAB, line breaks)."""
    return np.isin(codes(text), _UNWRITABLE_CODES)


def codes(text: str) -> npt.NDArray[np.uint32]:
    """uint32[len(text)]: each character's code point (a lone surrogate keeps its own)."""
    # surrogatepass: a lone surrogate is one character of the str, so it keeps one code unit.
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def paragraph_spans(text: str) -> list[tuple[int, int]]:
    """The ``[start, end)`` spans of ``text`` between paragraph breaks (some may be blank)."""
    spans, start = [], 0
    for found in PARAGRAPH_BREAK.finditer(text):
        spans.append((start, found.start()))
        start = found.end()
    spans.append((start, len(text)))
    return spans


def as_line_feeds(
    text: str, classify: Callable[[str], npt.NDArray[np.uint8]]
) -> npt.NDArray[np.uint8]:
    """uint8[len(text)]: ``classify``'s classes of ``text`` read with every line break a LF.

    Segmenters learn from UD's text, whose line breaks are LFs; a CR would be a character
    they never saw, and a CRLF two breaks. So ``classify`` reads :func:`line_feed_text` of
    ``text``, and :func:`classes_of_line_feeds` gives its classes back to ``text``.
    """
    return classes_of_line_feeds(text, classify(line_feed_text(text)))


def line_feed_text(text: str) -> str:
    """``text`` with each CRLF and each lone CR one LF (a text without a CR as it is)."""
    return _CR.sub("\n", text) if "\r" in text else text


def classes_of_line_feeds(text: str, classes: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """uint8[len(text)]: the classes of :func:`line_feed_text` of ``text``, given to ``text``.

    Each character gets the class of the character it became: a CRLF's LF the LF's, its CR
    none (:data:`rawtext.labels.NONE`, 0).

    Args:
        text: the text as given.
        classes: uint8[len(line_feed_text(text))].
    """
    if "\r" not in text:
        return classes
    points = codes(text)
    kept = ~((points[:-1] == ord("\r")) & (points[1:] == ord("\n")))  # [len - 1]: no CRLF's CR
    kept = np.append(kept, True)
    out = np.zeros(len(text), dtype=classes.dtype)
    out[kept] = classes
    return out


_ZWJ = "\u200d"
_MARKS = ("Mn", "Mc", "Me")  # combining marks: an accent of NFD text, a vowel sign
_EXTENDERS = (  # code point ranges that extend the character before them
    (0x200C, 0x200D),  # zero-width non-joiner and joiner
    (0xFE00, 0xFE0F),  # variation selectors (VS16: emoji presentation)
    (0x1F3FB, 0x1F3FF),  # emoji skin tone modifiers
    (0xE0020, 0xE007F),  # tag characters (subdivision flags)
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
_REGIONAL = (0x1F1E6, 0x1F1FF)  # regional indicator letters: a flag is two of them
FIRST_EXTENDER = 0x300
"""The lowest code point that may extend the character before it (U+0300, combining grave)."""


def joins(before: str, after: str, *, opens_flag: bool = True) -> bool:
    """Whether ``after`` belongs to the same user-perceived character as ``before``.

    An approximation of Unicode's extended grapheme clusters (UAX 29) that the standard
    library can tell: a combining mark (NFD's ``e`` + U+0301), a zero-width joiner and what
    follows it (the family emoji), a variation selector, a skin tone, a tag character, and the
    second regional indicator of a flag. A token never ends between two such code points.

    Args:
        before: a character.
        after: the character after it.
        opens_flag: where ``before`` is a regional indicator, whether it is the first of a
            flag: an odd one of its run (:func:`flag_openers`). Two flags side by side are four
            indicators, joined as two pairs, never as one character.
    """
    if after.isspace():
        return False
    if before == _ZWJ:
        return True
    code = ord(after)
    if any(low <= code <= high for low, high in _EXTENDERS):
        return True
    if _is_regional(code) and _is_regional(ord(before)):
        return opens_flag
    return code >= FIRST_EXTENDER and unicodedata.category(after) in _MARKS


def flag_openers(points: npt.NDArray[np.uint32]) -> npt.NDArray[np.bool_]:
    """bool[len(points)]: the regional indicators that open a flag, the odd ones of each run."""
    regional = _is_regional(points)
    index = np.arange(len(points))
    starts = regional & ~np.concatenate([[False], regional[:-1]])  # a run's first indicator
    run_start = np.maximum.accumulate(np.where(starts, index, 0))
    return regional & ((index - run_start) % 2 == 0)


def _is_regional(code: Any) -> Any:
    """Whether a code point (int, or each of an array) is a regional indicator letter."""
    return (code >= _REGIONAL[0]) & (code <= _REGIONAL[1])


def writable(text: str) -> str:
    """``text`` with each TAB and line-breaking character replaced by one space."""
    return _UNWRITABLE.sub(" ", text)
