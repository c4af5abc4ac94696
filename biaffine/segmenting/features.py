"""Characters as a network reads them: an id in the training text's vocabulary and a few flags.

Torch-free and vectorised: a text is turned into its code points once (numpy), and the flags and
ids are looked up per distinct character, so a megabyte of text costs a few numpy passes.

Where the training tokens hold whitespace (Vietnamese writes a word as syllables with spaces
between: "Hà Nội"), a vocabulary can also know those tokens (:class:`SpacedWords`): one more
flag marks each space that the longest known word read from left to right spans, so that the
network sees the dictionary's segmentation beside the characters.

A vocabulary can also know how the training words were cased inside sentences
(:class:`CasedWords`), the orthographic evidence of Punkt (Kiss & Strunk, 2006): a capital after
a word with no full stop is a new sentence when the word is otherwise written in lower case
("... a mold from that They sell ..."), and no evidence when it is a name ("Deb Price").
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_WINDOW",
    "FEATURES",
    "PAD",
    "UNK",
    "CasedWords",
    "CharVocab",
    "SpacedWords",
    "char_features",
    "code_points",
    "window_bounds",
]

PAD, UNK = 0, 1
"""Ids of padding (outside the text) and of characters the training text held too rarely."""

FEATURES = ("space", "newline", "punct", "symbol", "digit", "upper", "lower", "caseless_letter")
"""The flags of :func:`char_features`, in column order."""


LINE_BREAKS = "\n\r\u2028\u2029\x0b\x0c\x85"
"""Line-breaking characters: the ``newline`` flag marks them, and no spaced word crosses one."""


def code_points(text: str, offset: int = 0) -> np.ndarray:
    """int64[len(text)]: the code point of each character.

    ``offset``: where ``text`` starts in the text a lone surrogate's message counts from.

    Raises:
        ValueError: ``text`` holds a lone surrogate (U+D800..U+DFFF), which is no character
            and cannot be written as UTF-8 (a str decoded with ``surrogateescape``, or built
            from half of a UTF-16 pair).
    """
    try:
        encoded = text.encode("utf-32-le")
    except UnicodeEncodeError as error:
        found = f"U+{ord(text[error.start]):04X} at character {offset + error.start}"
        raise ValueError(f"the text holds a lone surrogate ({found}), not Unicode text") from None
    return np.frombuffer(encoded, dtype=np.uint32).astype(np.int64)


def _flags(char: str) -> tuple[bool, ...]:
    category = unicodedata.category(char)
    return (
        char.isspace(),
        char in LINE_BREAKS,
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


_CHUNK = re.compile(r"\S+")


def _core(chunk: str) -> str:
    """A chunk without the punctuation at its ends."""
    start, end = 0, len(chunk)
    while start < end and unicodedata.category(chunk[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(chunk[end - 1]).startswith("P"):
        end -= 1
    return chunk[start:end]


def _key(chunk: str) -> str:
    """A whitespace-free chunk as words are looked up: lower-cased, punctuation cut at its ends."""
    return _core(chunk).lower()


class SpacedWords:
    """The training tokens that hold whitespace, looked up as runs of chunks.

    Args:
        words: the tokens (any casing; whitespace inside each separates its chunks).
    """

    def __init__(self, words: Iterable[str]) -> None:
        """Keep each token as its run of lower-cased chunks (one chunk alone is no entry)."""
        runs = {tuple(_key(chunk) for chunk in word.split()) for word in words}
        self.runs = {run for run in runs if len(run) > 1 and all(run)}
        self.longest = max(map(len, self.runs), default=0)

    def to_data(self) -> list[str]:
        """The words as plain data, sorted: each run of chunks joined by one space."""
        return sorted(" ".join(run) for run in self.runs)

    def joined(self, text: str) -> np.ndarray:
        """float32[len(text)]: 1 at the whitespace inside each known word found in ``text``.

        Read left to right, the longest known run of chunks starting at each chunk wins and
        the search goes on after it; a run never crosses a line break.
        """
        found = np.zeros(len(text), dtype=np.float32)
        spans = [match.span() for match in _CHUNK.finditer(text)]
        keys = [_key(text[start:end]) for start, end in spans]
        gaps = [(end, start) for (_, end), (start, _) in itertools.pairwise(spans)]  # [k]: k..k+1
        breaks = [any(c in LINE_BREAKS for c in text[start:end]) for start, end in gaps]
        i = 0
        while i < len(spans):
            step = 1
            for n in range(min(self.longest, len(spans) - i), 1, -1):
                if tuple(keys[i : i + n]) in self.runs and not any(breaks[i : i + n - 1]):
                    for start, end in gaps[i : i + n - 1]:
                        found[start:end] = 1.0
                    step = n
                    break
            i += step
        return found


class CasedWords:
    """The words seen in lower case, and those seen capitalized, inside training sentences.

    Args:
        lower: keys (:func:`_key`: lower-cased, punctuation cut at the ends) of the words seen
            with a lower-case first letter after a sentence's first token.
        upper: those seen there with an upper-case first letter.
    """

    def __init__(self, lower: Iterable[str], upper: Iterable[str]) -> None:
        """Keep both sets of keys."""
        self.lower, self.upper = frozenset(lower), frozenset(upper)

    @classmethod
    def count(cls, sentences: Iterable[Sequence[str]], min_count: int = 2) -> CasedWords:
        """The keys seen at least ``min_count`` times in each casing, past each sentence's start.

        A sentence's first token is left out (its capital says nothing about the word), and so
        are words seen fewer times: the network then also meets known-nothing words in
        training, as it will in new text.

        Args:
            sentences: each sentence's token forms, in order.
            min_count: the fewest times a word must be seen in a casing to be known in it.
        """
        lower, upper = Counter(), Counter()
        for tokens in sentences:
            for token in tokens[1:]:
                core = _core(token)
                if core[:1].islower():
                    lower[core.lower()] += 1
                elif core[:1].isupper():
                    upper[core.lower()] += 1
        return cls(
            (key for key, n in lower.items() if n >= min_count),
            (key for key, n in upper.items() if n >= min_count),
        )

    def to_data(self) -> dict[str, list[str]]:
        """Both sets as plain data, sorted."""
        return {"lower": sorted(self.lower), "upper": sorted(self.upper)}

    @classmethod
    def from_data(cls, data: dict[str, list[str]]) -> CasedWords:
        """The sets :meth:`to_data` wrote."""
        return cls(data["lower"], data["upper"])

    def flags(self, text: str) -> np.ndarray:
        """float32[len(text), 2]: whether each character's word is known in lower case, capitalized.

        Both flags are set at every character of a whitespace-free chunk from its word
        (:func:`_key`), and are 0 at whitespace.
        """
        found = np.zeros((len(text), 2), dtype=np.float32)
        matches = list(_CHUNK.finditer(text))
        if not matches:
            return found
        chunks = [match.group() for match in matches]
        spans = np.array([match.span() for match in matches], dtype=np.int64)
        # Looked up once per distinct chunk and written per character by numpy: EWT test's text
        # (125,852 characters) took 0.035 s, against 0.09 s chunk by chunk (best of 3, loaded EPYC).
        keys = {chunk: _key(chunk) for chunk in set(chunks)}
        known = {chunk: (key in self.lower, key in self.upper) for chunk, key in keys.items()}
        table = np.array([known[chunk] for chunk in chunks], dtype=np.float32)  # [K, 2]
        lengths = spans[:, 1] - spans[:, 0]
        inside = np.repeat(spans[:, 0] - np.cumsum(lengths) + lengths, lengths)
        inside += np.arange(len(inside))  # each chunk's character offsets, in text order
        found[inside] = np.repeat(table, lengths, axis=0)
        return found


class CharVocab:
    """Character ids: ``PAD`` (0), ``UNK`` (1), then the known characters from 2 on.

    Args:
        chars: the known characters, in id order (ids 2, 3, ...).
        spaced_words: training tokens that hold whitespace, read as one more feature
            (:meth:`features`); none: the flags of :data:`FEATURES` alone.
        cased_words: the casing of training words inside sentences, read as two more features
            after those; None: not read.
    """

    def __init__(
        self,
        chars: Sequence[str],
        *,
        spaced_words: Iterable[str] = (),
        cased_words: CasedWords | None = None,
    ) -> None:
        """Index the characters.

        Raises:
            ValueError: if they are not distinct single characters.
        """
        spaced = SpacedWords(spaced_words)
        self.spaced = spaced if spaced.runs else None
        self.cased = cased_words
        self.chars = list(chars)
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("a character vocabulary holds distinct single characters")
        points = np.array([ord(c) for c in self.chars], dtype=np.int64)
        self._order = np.argsort(points)
        self._sorted = points[self._order]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> CharVocab:
        """The vocabulary of a checkpoint's (or an ONNX manifest's) plain data.

        It reads ``chars``, and ``spaced_words`` and ``cased_words`` where the data has them.
        """
        cased = data.get("cased_words")
        return cls(
            data["chars"],
            spaced_words=data.get("spaced_words", ()),
            cased_words=None if cased is None else CasedWords.from_data(cased),
        )

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        min_count: int = 2,
        *,
        spaced_words: Iterable[str] = (),
        cased_words: CasedWords | None = None,
    ) -> CharVocab:
        """The characters seen at least ``min_count`` times, most frequent first (ties by code)."""
        counts = Counter()
        for text in texts:
            counts.update(text)
        kept = sorted(
            (c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c)
        )
        return cls(kept, spaced_words=spaced_words, cased_words=cased_words)

    def __len__(self) -> int:
        """Number of ids, PAD and UNK included."""
        return len(self.chars) + 2

    @property
    def spaced_words(self) -> list[str]:
        """The known words with whitespace inside, as plain data (empty without them)."""
        return [] if self.spaced is None else self.spaced.to_data()

    @property
    def cased_words(self) -> dict[str, list[str]] | None:
        """The casing of the training words as plain data (None when not read)."""
        return None if self.cased is None else self.cased.to_data()

    @property
    def n_features(self) -> int:
        """Columns of :meth:`features`."""
        return len(FEATURES) + (self.spaced is not None) + 2 * (self.cased is not None)

    def features(self, text: str) -> np.ndarray:
        """float32[len(text), n_features]: the flags of every character.

        :func:`char_features`, then the spaced-word flag, then the two casing flags (each
        where the vocabulary has them).
        """
        columns = [char_features(text)]
        if self.spaced is not None:
            columns.append(self.spaced.joined(text)[:, None])
        if self.cased is not None:
            columns.append(self.cased.flags(text))
        return columns[0] if len(columns) == 1 else np.concatenate(columns, axis=1)

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


def window_bounds(
    length: int, window: int, context: int, *, first: int = 0, stop: int | None = None
) -> list[tuple[int, int, int, int]]:
    """``(read_start, keep_start, keep_end, read_end)`` of each window over ``length`` characters.

    The kept ranges ``[keep_start, keep_end)`` tile the text; each is read from ``read_start``
    to ``read_end`` (up to ``context`` more characters on each side, within the text). Only the
    windows whose ``keep_start`` lies in ``[first, stop)`` (``first`` a multiple of
    ``window``; ``stop`` None: the text's end) are listed.
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
        for start in range(first, length if stop is None else stop, window)
    ]
