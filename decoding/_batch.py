"""Parallel batch drivers: one ``prange`` iteration per sentence, each on its own contiguous copy.

Deliberately ``parallel=True`` without ``cache=True`` (that combination has a segfault history in
numba); the one-sentence kernels they call are cached. Inputs are trusted: :mod:`decoding.api`
validates them first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import numpy.typing as npt

from .baselines import best_of_roots_kernel
from .eisner import eisner_kernel
from .tarjan import mst_kernel
from .trees import greedy_kernel

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@numba.njit(cache=True)
def _sentence(scores: FloatArray, b: int, n: int) -> FloatArray:
    """Contiguous copy of sentence b's (n+1, n+1) block with row 0 and the diagonal set to -inf."""
    matrix = scores[b, : n + 1, : n + 1].copy()
    matrix[0, :] = -np.inf
    for d in range(1, n + 1):
        matrix[d, d] = -np.inf
    return matrix


# Adapters to the common kernel signature. Not cached: numba's cache would not notice edits to
# the modules of the kernels they call.
@numba.njit
def _greedy(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> int:
    return greedy_kernel(matrix, heads)


@numba.njit
def _best_of_roots(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> int:
    return best_of_roots_kernel(matrix, heads)


def _driver(kernel: Callable[[FloatArray, bool, IntArray], int]) -> Callable[..., Any]:
    """A parallel loop over sentences for one ``kernel(matrix, root_constraint, heads) -> status``.

    One driver per kernel, so a process links (and compiles) only the decoders it uses.
    """

    @numba.njit(parallel=True)
    def decode(scores: FloatArray, lengths: IntArray, root_constraint: bool):
        batch, width = scores.shape[0], scores.shape[1]
        heads = np.full((batch, width), -1, dtype=np.int64)
        status = np.zeros(batch, dtype=np.int64)
        for b in numba.prange(batch):
            n = lengths[b]
            sentence_heads = np.empty(n + 1, dtype=np.int64)
            status[b] = kernel(_sentence(scores, b, n), root_constraint, sentence_heads)
            heads[b, 1 : n + 1] = sentence_heads[1:]
        return heads, status

    return decode


_mst = _driver(mst_kernel)
_eisner = _driver(eisner_kernel)
_greedy_driver = _driver(_greedy)
_best_of_roots_driver = _driver(_best_of_roots)


def mst(scores: FloatArray, lengths: IntArray, root_constraint: bool) -> tuple[IntArray, IntArray]:
    """Tarjan / Gabow-Tarjan per sentence: (heads int64[B, N+1], status int64[B])."""
    return _mst(scores, lengths, root_constraint)


def eisner(
    scores: FloatArray, lengths: IntArray, root_constraint: bool
) -> tuple[IntArray, IntArray]:
    """Eisner per sentence: (heads int64[B, N+1], status int64[B])."""
    return _eisner(scores, lengths, root_constraint)


def greedy(scores: FloatArray, lengths: IntArray) -> tuple[IntArray, IntArray]:
    """Per-word argmax per sentence: (heads int64[B, N+1], status int64[B])."""
    return _greedy_driver(scores, lengths, False)


def best_of_roots(scores: FloatArray, lengths: IntArray) -> tuple[IntArray, IntArray]:
    """Exact single-root baseline (every root word in turn), for tests and benchmarks."""
    return _best_of_roots_driver(scores, lengths, True)
