"""Slow exact baselines for tests and benchmarks: best of n roots, and the per-word argmax floor.

Never used by :func:`decoding.mst`; they exist to check and to time :mod:`decoding.tarjan`.
"""

from __future__ import annotations

import numba
import numpy as np

from .status import NO_SINGLE_ROOT, OK
from .tarjan import mst_kernel
from .trees import count_roots_kernel, tree_score_kernel
from .trees import greedy_kernel as argmax_floor_kernel
from .types import FloatArray, IntArray

__all__ = ["argmax_floor_kernel", "best_of_roots_kernel"]


@numba.njit(cache=True)
def best_of_roots_kernel(scores: FloatArray, heads: IntArray) -> int:
    """Best single-rooted tree by trying every root word, O(n^3) (as Stanza, SuPar and Trankit do).

    For each word r with a finite ROOT arc, runs the unconstrained Tarjan (1977) decoder with
    every other ROOT arc forbidden and keeps the best weight (first r on ties). Exact, like
    Gabow & Tarjan (1984), but n times slower; a test oracle and benchmark baseline.

    Args:
        scores: float64[n+1, n+1], C-contiguous, ``scores[d, h]`` scores the arc h -> d.
        heads: int64[n+1] output, ``heads[0] = -1``.

    Returns:
        OK, NO_TREE if no spanning arborescence exists, NO_SINGLE_ROOT if none has one root.
    """
    n = scores.shape[0] - 1
    code = mst_kernel(scores, False, heads)
    if code != OK or count_roots_kernel(heads, n) == 1:
        return code  # an unconstrained optimum with one root is also the constrained optimum
    work = scores.copy()
    candidate = np.empty(n + 1, dtype=np.int64)
    best = -np.inf
    found = False
    for r in range(1, n + 1):
        if scores[r, 0] == -np.inf:
            continue
        for d in range(1, n + 1):
            work[d, 0] = scores[d, 0] if d == r else -np.inf
        if mst_kernel(work, False, candidate) != 0:
            continue
        weight = tree_score_kernel(scores, candidate, n)
        if not found or weight > best:
            best = weight
            heads[:] = candidate
            found = True
    return OK if found else NO_SINGLE_ROOT
