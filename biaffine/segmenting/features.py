"""Characters as a network reads them: an id in the training text's vocabulary and a few flags.

Torch-free and vectorised: a text is turned into its code points once (numpy), and the flags and
ids are looked up per distinct character, so a megabyte of text costs a few numpy passes.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_WINDOW",
    "FEATURES",
    "PAD",
    "UNK",
    "CharVocab",
    "char_features",
    "code_points",
    "window_bounds",
]

PAD, UNK = 0, 1
"""Ids of padding (outside the text) and of characters the training text held too rarely."""

FEATURES = ("space", "newline", "punct", "symbol", "digit", "upper", "lower", "caseless_letter")
"""The flags of :func:`char_features`, in column order."""


def code_points(text: str) -> np.ndarray:
    """int64[len(text)]: the code point of each character."""
    return np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)


def _flags(char: str) -> tuple[bool, ...]:
    category = unicodedata.category(char)
    return (
        char.isspace(),
        char in "\n\r\u2028\u2029\x0b\x0c\x85",
        category.startswith("P"),
        category.startswith("S"),
        category == "Nd",
        char.isupper(),
        char.islower(),
        char.isalpha() and not char.isupper() and not char.islower(),
    )


def char_features(text: str) -> np.ndarray:
    """float32[len(text), len(FEATURES)]: the flags of :data:`FEATURES` per character, 0 or 1."""
    distinct, inverse = np.unique(code_points(text), return_inverse=True)
    table = np.array([_flags(chr(c)) for c in distinct], dtype=np.float32)
    return table.reshape(len(distinct), len(FEATURES))[inverse]


class CharVocab:
    """Character ids: ``PAD`` (0), ``UNK`` (1), then the known characters from 2 on.

    Args:
        chars: the known characters, in id order (ids 2, 3, ...).
    """

    def __init__(self, chars: Sequence[str]) -> None:
        """Index the characters.

        Raises:
            ValueError: if they are not distinct single characters.
        """
        self.chars = list(chars)
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("a character vocabulary holds distinct single characters")
        points = np.array([ord(c) for c in self.chars], dtype=np.int64)
        self._order = np.argsort(points)
        self._sorted = points[self._order]

    @classmethod
    def build(cls, texts: Iterable[str], min_count: int = 2) -> CharVocab:
        """The characters seen at least ``min_count`` times, most frequent first (ties by code)."""
        counts = Counter()
        for text in texts:
            counts.update(text)
        kept = sorted(
            (c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c)
        )
        return cls(kept)

    def __len__(self) -> int:
        """Number of ids, PAD and UNK included."""
        return len(self.chars) + 2

    def ids(self, text: str) -> np.ndarray:
        """int64[len(text)]: each character's id (``UNK`` for characters not in the vocabulary)."""
        points = code_points(text)
        if not len(self._sorted):
            return np.full(len(points), UNK, dtype=np.int64)
        where = np.minimum(np.searchsorted(self._sorted, points), len(self._sorted) - 1)
        known = self._sorted[where] == points
        return np.where(known, self._order[where] + 2, UNK).astype(np.int64)


DEFAULT_WINDOW = 512
"""Characters whose classes one network window gives (:func:`window_bounds`)."""
DEFAULT_CONTEXT = 64
"""Characters read on each side of a window besides its own."""


def window_bounds(length: int, window: int, context: int) -> list[tuple[int, int, int, int]]:
    """``(read_start, keep_start, keep_end, read_end)`` of each window over ``length`` characters.

    The kept ranges ``[keep_start, keep_end)`` tile the text; each is read from ``read_start``
    to ``read_end`` (up to ``context`` more characters on each side, within the text).
    """
    if window < 1 or context < 0:
        raise ValueError(f"window={window} must be positive and context={context} not negative")
    return [
        (
            max(0, start - context),
            start,
            min(length, start + window),
            min(length, start + window + context),
        )
        for start in range(0, length, window)
    ]
