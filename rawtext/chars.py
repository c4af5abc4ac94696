r"""What counts as whitespace, a line break and a paragraph break, stated once for the package.

Whitespace is exactly Python's :meth:`str.isspace` (and the ``\s`` of :mod:`re`, which agrees
with it): the no-break space U+00A0 is whitespace, the zero-width space U+200B is not (it is an
ordinary character that belongs to a token). Line breaks are ``\r\n``, ``\r`` and ``\n``; a
paragraph break is two or more of them with only whitespace between.
"""

from __future__ import annotations

import re

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
_UNWRITABLE_CODES = np.array([ord(c) for c in UNWRITABLE], dtype=np.uint32)


def space_mask(text: str) -> npt.NDArray[np.bool_]:
    """bool[len(text)]: True where ``text[i].isspace()``."""
    return np.isin(_codes(text), SPACE_CODES)


def unwritable_mask(text: str) -> npt.NDArray[np.bool_]:
    """bool[len(text)]: True at each character of :data:`UNWRITABLE` (TAB, line breaks)."""
    return np.isin(_codes(text), _UNWRITABLE_CODES)


def _codes(text: str) -> npt.NDArray[np.uint32]:
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


def writable(text: str) -> str:
    """``text`` with each TAB and line-breaking character replaced by one space."""
    return _UNWRITABLE.sub(" ", text)
