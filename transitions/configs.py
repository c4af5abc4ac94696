"""A batch of parser configurations held in numpy arrays, with cheap row copies for a beam."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_count
from decoding.types import BoolArray, IntArray
from tiered import tiered

from . import _kernels


@dataclass(slots=True)
class Configs:
    """C configurations (sentences of at most N words), one per row; mutated in place by apply.

    Attributes:
        stack: int64[C, N+1]; ``stack[c, :stack_size[c]]`` bottom to top, so s0 is the last.
        stack_size: int64[C].
        buffer: int64[C, N+1]; the buffer **reversed**: b0 is ``buffer[c, buffer_size[c] - 1]``
            (SWAP and UNSHIFT put a word back in front of the buffer by appending it).
        buffer_size: int64[C].
        heads: int64[C, N+1]; the head of each word so far, -1 for none, at ROOT and padding.
        labels: int64[C, N+1]; the label given with the arc's transition, -1 where none.
        ended: bool[C]; the buffer has been empty once (the flag *e* of Nivre &
            Fernandez-Gonzalez 2014; only Unshift's system reads it).
        lengths: int64[C], words per sentence.
        steps: int64[C], transitions applied so far (beam items compare at equal steps).
    """

    stack: IntArray
    stack_size: IntArray
    buffer: IntArray
    buffer_size: IntArray
    heads: IntArray
    labels: IntArray
    ended: BoolArray
    lengths: IntArray
    steps: IntArray

    @classmethod
    def empty(cls, size: int, max_words: int) -> Configs:
        """``size`` uninitialised rows for sentences of up to ``max_words`` words."""
        width = max_words + 1
        return cls(
            stack=np.full((size, width), -1, dtype=np.int64),
            stack_size=np.zeros(size, dtype=np.int64),
            buffer=np.full((size, width), -1, dtype=np.int64),
            buffer_size=np.zeros(size, dtype=np.int64),
            heads=np.full((size, width), -1, dtype=np.int64),
            labels=np.full((size, width), -1, dtype=np.int64),
            ended=np.zeros(size, dtype=np.bool_),
            lengths=np.zeros(size, dtype=np.int64),
            steps=np.zeros(size, dtype=np.int64),
        )

    def __len__(self) -> int:
        """C, the number of configurations."""
        return self.stack_size.shape[0]

    @property
    def max_words(self) -> int:
        """N, the longest sentence the rows can hold."""
        return self.heads.shape[1] - 1

    def kernel_state(self) -> tuple[IntArray, ...]:
        """The arrays the kernels read and update: stack, sizes, buffer, heads, labels, ended."""
        return (
            self.stack,
            self.stack_size,
            self.buffer,
            self.buffer_size,
            self.heads,
            self.labels,
            self.ended,
        )

    def take(self, rows: npt.ArrayLike) -> Configs:
        """A new batch holding copies of ``rows`` (int[K]), in that order (repeats allowed).

        Raises:
            ValueError: ``rows`` is not int[K] of rows of this batch.
        """
        index = check_rows(self, rows)
        return Configs(*(getattr(self, f.name)[index] for f in fields(self)))

    def copy_rows(self, source: npt.ArrayLike, target: npt.ArrayLike) -> None:
        """Copies row ``source[k]`` into row ``target[k]`` for every k (beam re-ranking).

        All sources are read before any target is written, so the two may overlap.

        Raises:
            ValueError: ``source`` or ``target`` is not int[K] of rows of this batch, or their
                shapes differ.
        """
        src = check_rows(self, source, "source")
        dst = check_rows(self, target, "target")
        if src.shape != dst.shape:
            raise ValueError(f"source {src.shape} and target {dst.shape} must have one shape")
        for f in fields(self):
            array = getattr(self, f.name)
            array[dst] = array[src]  # fancy-index read copies first: overlap-safe

    def positions(self, n_stack: int = 3, n_buffer: int = 2) -> IntArray:
        """Feature positions for a classifier (Kiperwasser & Goldberg 2016).

        Args:
            n_stack: how many stack slots, from the top (s0, s1, ...).
            n_buffer: how many buffer slots, from the front (b0, b1, ...).

        Returns:
            int64[C, n_stack + n_buffer]: word positions (0 is ROOT), -1 for an empty slot.
        """
        n_stack, n_buffer = check_count(n_stack, "n_stack"), check_count(n_buffer, "n_buffer")
        out = np.empty((len(self), n_stack + n_buffer), dtype=np.int64)
        tiered(_kernels.positions_batch)(
            n_stack, self.stack, self.stack_size, self.buffer, self.buffer_size, out
        )
        return out

    def describe(self, row: int) -> str:
        """One line showing configuration ``row``: stack (top last), buffer (b0 first), arcs.

        Raises:
            ValueError: ``row`` is no row of the batch (5 of 2 was an IndexError, -1 the last).
        """
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)):
            raise ValueError(f"row must be an integer, got {row!r}")
        if not 0 <= row < len(self):
            raise ValueError(f"row={row} is not a row of the {len(self)} configurations")
        stack = self.stack[row, : self.stack_size[row]].tolist()
        buffer = self.buffer[row, : self.buffer_size[row]][::-1].tolist()
        arcs = [f"{h}->{d}" for d, h in enumerate(self.heads[row]) if h >= 0]
        flag = ", e=true" if self.ended[row] else ""
        return f"stack={stack} buffer={buffer} arcs=[{', '.join(arcs)}]{flag}"


def check_rows(configs: Configs, rows: npt.ArrayLike, name: str = "rows") -> IntArray:
    """``rows`` as int64[R], each a row of ``configs``: the kernels index with them unchecked.

    Raises:
        ValueError: not a one-dimensional array of integers (floats were truncated), or a row
            outside the batch; named ``name``.
    """
    return check_indices(rows, len(configs), name, "a row of the {} configurations")


def check_indices(values: npt.ArrayLike, count: int, name: str, what: str) -> IntArray:
    """``values`` as int64[R], each in ``0 .. count - 1`` (a negative one would wrap around).

    Args:
        values: the indices given.
        count: how many things they index.
        name: the argument's name, for the message.
        what: what an index names, with ``{}`` for ``count`` ("a row of the {} configurations").

    Raises:
        ValueError: not a one-dimensional array of integers (floats were truncated), or an
            index outside ``0 .. count - 1``.
    """
    array = as_array(values, name)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{name} must be int[R], got {array.dtype} {array.shape}")
    outside = np.flatnonzero((array < 0) | (array >= count))
    if outside.size:
        i = int(outside[0])
        raise ValueError(f"{name}[{i}]={array[i]} is not {what.format(count)}")
    return array.astype(np.int64, copy=False)
