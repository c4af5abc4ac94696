"""The character model's word vectors for ``runtime=onnx``: each distinct form through it once.

The torch path runs the character BiLSTM on the distinct forms of each batch
(:class:`biaffine.nn.modules.CharEncoder`), so a form that recurs in many batches is encoded
again in each, and each batch's forms are padded to its longest. Here ``chars.onnx`` (the
same network, :meth:`~biaffine.nn.modules.CharEncoder.dense_rows`) encodes a form the first
time a batch holds it, in a group of forms of its own length (no padding), and later batches
read its kept vector. On EWT test in batches of 500 words (25,094 words, 5,629 distinct forms)
the BiLSTM reads 38,154 characters instead of 444,319; it was a quarter of ``scores.onnx``'s
time.

Nothing here imports torch.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from biaffine.data.encoding import char_ids
from biaffine.data.vocab import ROOT, Vocab

__all__ = ["MAX_FORMS", "CharVectors"]

MAX_FORMS = 100_000
"""Forms whose vectors are kept at most; then the table starts again, so a server that parses
for months holds bounded memory (40 MB of vectors of 100 floats, resident only as rows fill)."""

_PADDING_ROW, _ROOT_ROW, _FIRST_FORM_ROW = 0, 1, 2


class Graph(Protocol):
    """What is run here of a loaded graph (:class:`biaffine.onnxrun.LoadedGraph`)."""

    def run(self, outputs: Sequence[str] | None, feed: Mapping[str, np.ndarray]) -> list:
        """The graph's ``outputs`` (None: all) for the inputs in ``feed``."""
        ...


class CharVectors:
    """The vector of every word form ``chars.onnx`` has encoded, by form.

    Thread-safe: one lock guards the table, so a parser may be shared by threads.
    """

    def __init__(self, session: Graph, chars: Vocab, *, limit: int = MAX_FORMS) -> None:
        """Open the table.

        Args:
            session: ``chars.onnx``'s session: long[U, C] -> float[U, D].
            chars: the checkpoint's character vocabulary.
            limit: forms kept at most before the table starts again (at least 1).
        """
        if limit < 1:
            raise ValueError(f"limit={limit}: keep at least one form")
        self._session = session
        self._chars = chars
        self._limit = limit
        self._rows: dict[str, int] = {}
        self._lock = threading.Lock()
        root = self._encode(np.array([[ROOT]], dtype=np.int64))  # ROOT's row, as encode makes it
        self._table = np.zeros((_FIRST_FORM_ROW + limit, root.shape[1]), dtype=np.float32)
        self._table[_ROOT_ROW] = root[0]

    def __len__(self) -> int:
        """Forms kept now."""
        return len(self._rows)

    def of(self, forms: Sequence[Sequence[str]], positions: int) -> np.ndarray:
        """float32[B, positions, D]: ROOT's vector at 0, word i's at i, zeros after the words.

        Args:
            forms: the word forms of B sentences, each at most ``positions - 1`` words.
            positions: N+1, the batch's padded length with ROOT.
        """
        index = np.full((len(forms), positions), _PADDING_ROW, dtype=np.int64)
        index[:, 0] = _ROOT_ROW
        with self._lock:
            self._add(dict.fromkeys(itertools.chain.from_iterable(forms)))
            rows = self._rows
            for b, sentence in enumerate(forms):
                index[b, 1 : len(sentence) + 1] = [rows[form] for form in sentence]
            # Fancy indexing copies: the rows may be reused once the lock is released.
            return self._table[index]

    def _add(self, distinct: dict[str, None]) -> None:
        """Encode the forms of ``distinct`` (in order) that the table lacks."""
        new = [form for form in distinct if form not in self._rows]
        if len(self._rows) + len(new) > self._limit:
            self._rows.clear()
            new = list(distinct)
            if len(new) > self._limit:  # one batch with more distinct forms than the limit
                self._limit = len(new)
                table = np.zeros((_FIRST_FORM_ROW + self._limit, self.dim), dtype=np.float32)
                table[_ROOT_ROW] = self._table[_ROOT_ROW]
                self._table = table
        ids = [char_ids(form, self._chars) for form in new]
        by_length: dict[int, list[int]] = {}
        for k, row in enumerate(ids):
            by_length.setdefault(len(row), []).append(k)
        start = _FIRST_FORM_ROW + len(self._rows)
        for members in by_length.values():
            vectors = self._encode(np.array([ids[k] for k in members], dtype=np.int64))
            self._table[[start + k for k in members]] = vectors
        self._rows.update(zip(new, range(start, start + len(new)), strict=True))

    @property
    def dim(self) -> int:
        """D, the size of a vector."""
        return self._table.shape[1]

    def _encode(self, chars: np.ndarray) -> np.ndarray:
        """float32[U, D] from long[U, C] through ``chars.onnx``."""
        return self._session.run(None, {"chars": chars})[0]
