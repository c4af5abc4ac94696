"""The k best projective trees: Eisner's (1996) chart with a list of k items per span.

Every projective tree has exactly one derivation in Eisner's chart, so the k best derivations
are the k best trees. Each span keeps its k best items, best first, and merges those of its two
halves lazily over split points (Huang & Chiang 2005, Algorithm 1): O(n^3 + n^2 k log(n + k))
time and O(n^2 k) memory (about 128 (n+1)^2 k bytes), with k capped at the number of trees,
counted first. One-sentence kernel; :func:`decoding.kbest` validates its input.
"""

from __future__ import annotations

import numba
import numpy as np

from .types import FloatArray, IntArray

# Span kinds, as in decoding.eisner: a complete span [s, t] pointing left has its head at t,
# pointing right at s; an incomplete span also holds the arc between s and t.
_COMPLETE_LEFT, _COMPLETE_RIGHT, _INCOMPLETE_LEFT, _INCOMPLETE_RIGHT = range(4)


@numba.njit(cache=True, nogil=True)
def _before(keys: FloatArray, items: IntArray, a: int, b: int) -> bool:
    """Whether heap entry a comes first: higher sum, then lower (q, i, j), as tuples compare."""
    if keys[a] != keys[b]:
        return keys[a] > keys[b]
    for c in range(3):
        if items[a, c] != items[b, c]:
            return items[a, c] < items[b, c]
    return False


@numba.njit(cache=True, nogil=True)
def _swap(keys: FloatArray, items: IntArray, a: int, b: int) -> None:
    keys[a], keys[b] = keys[b], keys[a]
    for c in range(3):
        items[a, c], items[b, c] = items[b, c], items[a, c]


@numba.njit(cache=True, nogil=True)
def _sift_down(keys: FloatArray, items: IntArray, pos: int, size: int) -> None:
    while True:
        first = pos
        for child in (2 * pos + 1, 2 * pos + 2):
            if child < size and _before(keys, items, child, first):
                first = child
        if first == pos:
            return
        _swap(keys, items, pos, first)
        pos = first


@numba.njit(cache=True, nogil=True)
def _push(keys: FloatArray, items: IntArray, size: int, key: float, q: int, i: int, j: int) -> int:
    """Add (key, q, i, j) to the heap of ``size`` entries; returns the new size."""
    keys[size], items[size, 0], items[size, 1], items[size, 2] = key, q, i, j
    pos = size
    while pos > 0 and _before(keys, items, pos, (pos - 1) // 2):
        _swap(keys, items, pos, (pos - 1) // 2)
        pos = (pos - 1) // 2
    return size + 1


@numba.njit(cache=True, nogil=True)
def _merge(
    left: FloatArray,
    right: FloatArray,
    offset: FloatArray,
    base: int,
    values: FloatArray,
    back: IntArray,
    keys: FloatArray,
    items: IntArray,
) -> None:
    """The k best sums ``left[q, i] + right[q, j] + offset[q]`` over split q and ranks i, j.

    ``left`` and ``right`` are float[Q, k], each row sorted best first with ``-inf`` for missing
    items. Writes ``values`` float[k], best first (``-inf`` where fewer exist), and ``back``
    int[k, 3] rows (base + q, i, j). Pair (i, j) enters the frontier after (i, j - 1), or after
    (i - 1, 0) when j = 0, which never scores less: every pair enters once, none before its
    turn. The frontier is a binary max-heap in ``keys`` float[>= Q + k] and ``items``
    int[>= Q + k, 3], scratch space; ties go to the lowest split, as in decoding._eisner.
    """
    k = values.shape[0]
    values[:] = -np.inf
    size = 0
    for q in range(left.shape[0]):
        value = left[q, 0] + right[q, 0] + offset[q]
        if value > -np.inf:
            keys[size], items[size, 0], items[size, 1], items[size, 2] = value, q, 0, 0
            size += 1
    for pos in range(size // 2 - 1, -1, -1):  # heapify in O(Q)
        _sift_down(keys, items, pos, size)
    for rank in range(k):
        if size == 0:
            return
        q, i, j = items[0, 0], items[0, 1], items[0, 2]
        values[rank] = keys[0]
        back[rank, 0], back[rank, 1], back[rank, 2] = base + q, i, j
        size -= 1
        _swap(keys, items, 0, size)
        _sift_down(keys, items, 0, size)
        if j + 1 < k and left[q, i] + right[q, j + 1] > -np.inf:
            size = _push(keys, items, size, left[q, i] + right[q, j + 1] + offset[q], q, i, j + 1)
        if j == 0 and i + 1 < k and left[q, i + 1] + right[q, 0] > -np.inf:
            size = _push(keys, items, size, left[q, i + 1] + right[q, 0] + offset[q], q, i + 1, 0)


@numba.njit(cache=True, nogil=True)
def _fill_span(
    scores: FloatArray,
    chart: FloatArray,
    back: IntArray,
    s: int,
    t: int,
    keys: FloatArray,
    items: IntArray,
) -> None:
    """The k best items of the four spans over [s, t], from narrower spans."""
    zero = np.zeros(t - s)  # no offsets: t - s split points in each of the three merges
    # Incomplete: s's right half [s, q] and t's left half [q + 1, t], plus the arc between.
    inner = chart[_INCOMPLETE_RIGHT, s, t]
    _merge(
        chart[_COMPLETE_RIGHT, s, s:t],
        chart[_COMPLETE_LEFT, s + 1 : t + 1, t],
        zero,
        s,
        inner,
        back[_INCOMPLETE_LEFT, s, t],
        keys,
        items,
    )
    back[_INCOMPLETE_RIGHT, s, t] = back[_INCOMPLETE_LEFT, s, t]
    to_left = scores[s, t] if s > 0 else -np.inf  # the arc t -> s; ROOT has no head
    for rank in range(chart.shape[3]):
        chart[_INCOMPLETE_LEFT, s, t, rank] = inner[rank] + to_left
        inner[rank] += scores[t, s]  # the arc s -> t
    _merge(
        chart[_COMPLETE_LEFT, s, s:t],
        chart[_INCOMPLETE_LEFT, s:t, t],
        zero,
        s,
        chart[_COMPLETE_LEFT, s, t],
        back[_COMPLETE_LEFT, s, t],
        keys,
        items,
    )
    _merge(
        chart[_INCOMPLETE_RIGHT, s, s + 1 : t + 1],
        chart[_COMPLETE_RIGHT, s + 1 : t + 1, t],
        zero,
        s + 1,
        chart[_COMPLETE_RIGHT, s, t],
        back[_COMPLETE_RIGHT, s, t],
        keys,
        items,
    )


@numba.njit(cache=True, nogil=True)
def _chart(scores: FloatArray, k: int) -> tuple[FloatArray, IntArray]:
    """The k best items of every span, float[4, m, m, k], and back pointers int[4, m, m, k, 3]."""
    m = scores.shape[0]
    chart = np.full((4, m, m, k), -np.inf)
    back = np.zeros((4, m, m, k, 3), dtype=np.int64)
    for s in range(m):  # a single node is one complete span of score 0
        chart[_COMPLETE_LEFT, s, s, 0] = chart[_COMPLETE_RIGHT, s, s, 0] = 0.0
    keys, items = _frontier(m, k)
    for width in range(1, m):
        for s in range(m - width):
            _fill_span(scores, chart, back, s, s + width, keys, items)
    return chart, back


@numba.njit(cache=True, nogil=True)
def _frontier(m: int, k: int) -> tuple[FloatArray, IntArray]:
    """Scratch space for :func:`_merge` over at most m split points: keys and items."""
    return np.empty(m + k), np.empty((m + k, 3), dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def tree_count(scores: FloatArray, root_constraint: bool, cap: int) -> int:
    """How many projective trees use only finite arcs, or ``cap`` if more.

    Eisner's recursion with sums of products; counts saturate at ``cap``, so they never
    overflow (and never meet inf * 0).
    """
    m = scores.shape[0]
    count = np.zeros((4, m, m))
    for s in range(m):
        count[_COMPLETE_LEFT, s, s] = count[_COMPLETE_RIGHT, s, s] = 1.0
    for width in range(1, m):
        for s in range(m - width):
            t = s + width
            inner = 0.0
            for q in range(s, t):
                inner += count[_COMPLETE_RIGHT, s, q] * count[_COMPLETE_LEFT, q + 1, t]
            count[_INCOMPLETE_LEFT, s, t] = min(cap, inner) * (s > 0 and scores[s, t] > -np.inf)
            count[_INCOMPLETE_RIGHT, s, t] = min(cap, inner) * (scores[t, s] > -np.inf)
            left = right = 0.0
            for q in range(s, t):
                left += count[_COMPLETE_LEFT, s, q] * count[_INCOMPLETE_LEFT, q, t]
                right += count[_INCOMPLETE_RIGHT, s, q + 1] * count[_COMPLETE_RIGHT, q + 1, t]
            count[_COMPLETE_LEFT, s, t] = min(cap, left)
            count[_COMPLETE_RIGHT, s, t] = min(cap, right)
    n = m - 1
    if not root_constraint:
        return int(count[_COMPLETE_RIGHT, 0, n])
    total = 0.0
    for r in range(1, n + 1):
        if scores[r, 0] > -np.inf:
            total += count[_COMPLETE_LEFT, 1, r] * count[_COMPLETE_RIGHT, r, n]
    return int(min(cap, total))


@numba.njit(cache=True, nogil=True)
def _backtrack(back: IntArray, stack: IntArray, top: int, heads: IntArray) -> None:
    """Pop items (kind, s, t, rank) from ``stack`` until it is empty, writing heads."""
    while top > 0:
        top -= 1
        kind, s, t, rank = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if s == t:
            continue
        q, i, j = back[kind, s, t, rank, 0], back[kind, s, t, rank, 1], back[kind, s, t, rank, 2]
        if kind == _COMPLETE_LEFT:
            stack[top] = (_COMPLETE_LEFT, s, q, i)
            stack[top + 1] = (_INCOMPLETE_LEFT, q, t, j)
        elif kind == _COMPLETE_RIGHT:
            stack[top] = (_INCOMPLETE_RIGHT, s, q, i)
            stack[top + 1] = (_COMPLETE_RIGHT, q, t, j)
        else:
            if kind == _INCOMPLETE_LEFT:
                heads[s] = t
            else:
                heads[t] = s
            stack[top] = (_COMPLETE_RIGHT, s, q, i)
            stack[top + 1] = (_COMPLETE_LEFT, q + 1, t, j)
        top += 2


@numba.njit(cache=True, nogil=True)
def kbest_eisner_kernel(
    scores: FloatArray, k: int, root_constraint: bool
) -> tuple[IntArray, FloatArray]:
    """The k best projective trees of one sentence, best first (ties in any order).

    With ``root_constraint`` ROOT takes exactly one child r, whose item combines the complete
    spans [1, r] and [r, n] (as in :func:`decoding._eisner.eisner_kernel`), merged over r.

    Args:
        scores: float64[n+1, n+1], C-contiguous; ``scores[d, h]`` scores h -> d, ``-inf``
            forbids it. No NaN; row 0 and the diagonal are never read.
        k: how many trees to return, >= 0 and at most the number of projective trees with
            only finite arcs (:func:`tree_count` with ``k`` as its cap): the chart holds k
            items per span.
        root_constraint: exactly one word attaches to ROOT if True.

    Returns:
        heads int64[k, n+1] (``heads[:, 0] == -1``) and their scores float64[k].
    """
    n = scores.shape[0] - 1
    if k == 0:
        return np.empty((0, n + 1), dtype=np.int64), np.empty(0)
    chart, back = _chart(scores, k)
    values = np.empty(k)
    top_back = np.zeros((k, 3), dtype=np.int64)
    if root_constraint:
        offset = np.empty(n)
        for r in range(1, n + 1):
            offset[r - 1] = scores[r, 0]
        left, right = chart[_COMPLETE_LEFT, 1, 1:], chart[_COMPLETE_RIGHT, 1:, n]  # [n, k]
        keys, items = _frontier(n, k)
        _merge(left, right, offset, 1, values, top_back, keys, items)
    else:
        values[:] = chart[_COMPLETE_RIGHT, 0, n]
    found = 0
    while found < k and values[found] > -np.inf:
        found += 1
    heads = np.full((found, n + 1), -1, dtype=np.int64)
    # Rows (kind, s, t, rank); open items overlap only at their ends, so 4n + 4 rows are plenty.
    stack = np.empty((4 * n + 4, 4), dtype=np.int64)
    for rank in range(found):
        if root_constraint:
            r, i, j = top_back[rank, 0], top_back[rank, 1], top_back[rank, 2]
            heads[rank, r] = 0
            stack[0] = (_COMPLETE_LEFT, 1, r, i)
            stack[1] = (_COMPLETE_RIGHT, r, n, j)
            _backtrack(back, stack, 2, heads[rank])
        else:
            stack[0] = (_COMPLETE_RIGHT, 0, n, rank)
            _backtrack(back, stack, 1, heads[rank])
    return heads, values[:found].copy()
