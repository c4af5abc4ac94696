"""Best projective dependency tree (Eisner 1996), with an optional single-root condition.

One-sentence kernel only; :mod:`decoding.api` validates and :mod:`decoding._batch` batches.
"""

from __future__ import annotations

import numba
import numpy as np

from .status import NO_TREE, OK
from .types import FloatArray, IntArray

# Span kinds on the reconstruction stack. A complete span [s, t] pointing left has its head at t,
# pointing right at s; an incomplete span additionally holds the arc between s and t.
_COMPLETE_LEFT = 0
_COMPLETE_RIGHT = 1
_INCOMPLETE_LEFT = 2
_INCOMPLETE_RIGHT = 3


@numba.njit(cache=True)
def _arc(scores: FloatArray, head: int, dep: int) -> float:
    """Score of head -> dep; ROOT never depends on anything."""
    if dep == 0:
        return -np.inf
    return scores[dep, head]


@numba.njit(cache=True, inline="always")
def _store(chart: FloatArray, column: FloatArray, kind: int, s: int, t: int, value: float) -> None:
    """Write the best score of span [s, t] into the chart and into the column of its end t."""
    chart[kind, s, t] = value
    column[kind, s] = value


@numba.njit(cache=True)
def _fill_incomplete(
    scores: FloatArray, chart: FloatArray, column: FloatArray, split: IntArray, s: int, t: int
) -> None:
    best = -np.inf
    best_q = s
    for q in range(s, t):  # strict '>' keeps the lowest split on ties
        value = chart[_COMPLETE_RIGHT, s, q] + column[_COMPLETE_LEFT, q + 1]
        if value > best:
            best = value
            best_q = q
    _store(chart, column, _INCOMPLETE_LEFT, s, t, best + _arc(scores, t, s))
    _store(chart, column, _INCOMPLETE_RIGHT, s, t, best + _arc(scores, s, t))
    split[_INCOMPLETE_LEFT, s, t] = best_q
    split[_INCOMPLETE_RIGHT, s, t] = best_q


@numba.njit(cache=True)
def _fill_complete(chart: FloatArray, column: FloatArray, split: IntArray, s: int, t: int) -> None:
    best = -np.inf
    best_q = s
    for q in range(s, t):
        value = chart[_COMPLETE_LEFT, s, q] + column[_INCOMPLETE_LEFT, q]
        if value > best:
            best = value
            best_q = q
    _store(chart, column, _COMPLETE_LEFT, s, t, best)
    split[_COMPLETE_LEFT, s, t] = best_q
    best = -np.inf
    best_q = t
    for q in range(s + 1, t + 1):
        value = chart[_INCOMPLETE_RIGHT, s, q] + column[_COMPLETE_RIGHT, q]
        if value > best:
            best = value
            best_q = q
    _store(chart, column, _COMPLETE_RIGHT, s, t, best)
    split[_COMPLETE_RIGHT, s, t] = best_q


@numba.njit(cache=True)
def _chart(scores: FloatArray) -> tuple[FloatArray, IntArray]:
    """Best score and split point of every span [s, t] of nodes 0..n, indexed [kind, s, t].

    Spans are filled by end t, then by start s from t - 1 down to 0, so every span that [s, t]
    splits into is already known: [s, q] with q < t from an earlier end, [q, t] with q > s from
    this one. The spans ending at t also go into ``column`` [kind, q], a copy of column t of the
    chart, so each loop over the split point q reads two contiguous rows: row s of the chart and
    the column, which stays in cache. Read from the chart, the column costs a cache miss per q
    once the chart outgrows the cache: filled by width with a single chart, the kernel took
    26 s at n = 1,500 (6x its time now), 5x what its time at n = 320 predicted.
    """
    m = scores.shape[0]
    chart = np.zeros((4, m, m))  # single-node complete spans score 0
    chart[_INCOMPLETE_LEFT] = -np.inf
    chart[_INCOMPLETE_RIGHT] = -np.inf
    split = np.zeros((4, m, m), dtype=np.int64)
    column = np.empty((4, m))
    for t in range(1, m):
        column[:, t] = chart[:, t, t]
        for s in range(t - 1, -1, -1):
            _fill_incomplete(scores, chart, column, split, s, t)
            _fill_complete(chart, column, split, s, t)
    return chart, split


@numba.njit(cache=True)
def _best_root_word(scores: FloatArray, chart: FloatArray) -> tuple[float, int]:
    """Single root: ROOT -> r with r heading words 1..r on its left and r..n on its right."""
    n = scores.shape[0] - 1
    best = -np.inf
    best_r = 1
    for r in range(1, n + 1):
        # Added in the order decoding.kbest_eisner adds them: equal sums round alike, so the
        # two break near-ties (trees equal up to rounding) the same way.
        value = chart[_COMPLETE_LEFT, 1, r] + chart[_COMPLETE_RIGHT, r, n] + scores[r, 0]
        if value > best:
            best = value
            best_r = r
    return best, best_r


@numba.njit(cache=True)
def _backtrack(stack: IntArray, top: int, split: IntArray, heads: IntArray) -> None:
    """Pop spans from ``stack`` (rows of (kind, s, t)) until empty, writing heads."""
    while top > 0:
        top -= 1
        kind, s, t = stack[top, 0], stack[top, 1], stack[top, 2]
        if s == t:
            continue
        q = split[kind, s, t]
        if kind == _COMPLETE_LEFT:
            stack[top] = (_COMPLETE_LEFT, s, q)
            stack[top + 1] = (_INCOMPLETE_LEFT, q, t)
        elif kind == _COMPLETE_RIGHT:
            stack[top] = (_INCOMPLETE_RIGHT, s, q)
            stack[top + 1] = (_COMPLETE_RIGHT, q, t)
        else:
            if kind == _INCOMPLETE_LEFT:
                heads[s] = t
            else:
                heads[t] = s
            stack[top] = (_COMPLETE_RIGHT, s, q)
            stack[top + 1] = (_COMPLETE_LEFT, q + 1, t)
        top += 2


@numba.njit(cache=True)
def eisner_kernel(scores: FloatArray, root_constraint: bool, heads: IntArray) -> int:
    """Heads of the best projective tree for one sentence (Eisner 1996).

    With ``root_constraint`` ROOT takes exactly one child: the best root word r is chosen jointly
    with complete spans over words 1..r and r..n, which never contain ROOT (the single-root variant
    of Koo et al. 2007 in the first-order case). O(n^3) time and O(n^2) memory (64 (n+1)^2 bytes:
    the chart and its split points, 144 MB at n = 1,500); the tree is read back with an explicit
    stack. Ties go to the lowest split point and the lowest root word. On one core of an AMD EPYC
    (AVX2; CPU time on a shared machine) it takes about 0.55 ms at n = 80, 35 ms at n = 320 and
    4.4 s at n = 1,500, within 1.25x of cubic growth from n = 320 (see :func:`_chart`).

    Args:
        scores: float64[n+1, n+1], C-contiguous; ``scores[d, h]`` scores h -> d, ``-inf`` forbids
            it. No NaN; row 0 and the diagonal are never read.
        root_constraint: exactly one word attaches to ROOT if True.
        heads: int64[n+1], overwritten with the heads; ``heads[0] = -1``.

    Returns:
        0 on success, 1 if every projective tree uses a forbidden arc (``heads`` is then all -1).
    """
    n = scores.shape[0] - 1
    heads[:] = -1
    chart, split = _chart(scores)
    # Rows (kind, s, t); the open spans overlap only at their ends, so 4n + 4 rows are plenty.
    stack = np.empty((4 * n + 4, 3), dtype=np.int64)
    if root_constraint:
        best, root_word = _best_root_word(scores, chart)
        heads[root_word] = 0
        stack[0] = (_COMPLETE_LEFT, 1, root_word)
        stack[1] = (_COMPLETE_RIGHT, root_word, n)
        top = 2
    else:
        best = chart[_COMPLETE_RIGHT, 0, n]
        stack[0] = (_COMPLETE_RIGHT, 0, n)
        top = 1
    if best == -np.inf:
        heads[:] = -1
        return NO_TREE
    _backtrack(stack, top, split, heads)
    return OK
