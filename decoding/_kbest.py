"""The k best trees of a sentence, best first: Lawler (1972) on the exact MST decoder.

Projective trees come from the k-best Eisner chart of :mod:`decoding.kbest_eisner`.

Example::

    import numpy as np
    import decoding

    scores = np.random.default_rng(0).normal(size=(6, 6))  # float[n+1, n+1], n = 5 words
    best = decoding.kbest(scores, 3)  # single-rooted, projective or not
    best.heads  # int64[3, 6]: the 3 best trees, best first
    best.scores  # float64[3], non-increasing
    assert best.scores[0] == decoding.tree_score(scores, decoding.mst(scores))
    projective = decoding.kbest(scores, 3, algorithm="eisner", root_constraint=False)
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from tiered import cubic_work, tiered

from . import _batch, status
from ._constrained import check_sentence
from .api import _NO_TREE, _as_scores, _cut_off, _error, _lengths
from .checks import check_flag
from .kbest_eisner import kbest_eisner_kernel, tree_count
from .memory import available as _memory_bytes
from .memory import over_half
from .tarjan import mst_kernel
from .trees import tree_score_kernel
from .types import FloatArray, IntArray

__all__ = ["KBest", "kbest"]

_ALGORITHMS = ("eisner", "mst")


@dataclass(frozen=True, slots=True)
class KBest:
    """The best trees of one sentence, or of each sentence of a batch, best first.

    Attributes:
        heads: int64[K', n+1] for one sentence (K' <= k trees when fewer exist), or
            int64[B, K', N+1] for a batch (K' <= k the most trees of any sentence), where
            missing trees and padding are -1.
        scores: float64[K'] or float64[B, K'], each tree's score (sum of its arc scores),
            non-increasing (up to rounding); ``-inf`` for a missing tree of a batch.
    """

    heads: IntArray
    scores: FloatArray


@numba.njit(cache=True, nogil=True)
def _solve(
    matrix: FloatArray,
    root_constraint: bool,
    fixed: IntArray,
    banned: IntArray,
    work: FloatArray,
    heads: IntArray,
) -> float:
    """Best tree of a subproblem into ``heads`` and its score, ``-inf`` if it holds no tree.

    ``work`` is scratch space shaped like ``matrix``; O(n^2) plus the decoder.
    """
    n = matrix.shape[0] - 1
    work[:] = matrix
    for d in range(1, n + 1):
        if fixed[d] >= 0:
            kept = matrix[d, fixed[d]]
            work[d, :] = -np.inf
            work[d, fixed[d]] = kept
    for i in range(banned.shape[0]):
        work[banned[i, 0], banned[i, 1]] = -np.inf
    if mst_kernel(work, root_constraint, heads) != 0:
        return -np.inf
    return tree_score_kernel(matrix, heads, n)


@numba.njit(cache=True, nogil=True)
def _bounds(matrix: FloatArray, tree: IntArray, fixed: IntArray, banned: IntArray) -> FloatArray:
    """An upper bound on the best tree of each child of a subproblem.

    With d_1 < ... < d_m the words free in the subproblem, child j keeps the heads that
    ``tree`` (the subproblem's best) gives d_1..d_(j-1) and bans the one of d_j, so every other
    tree of the subproblem lies in exactly one child. Child j's bound sums, over words in
    order, the best head each may take there, tree or not; -inf when d_j has no other head.
    O(n^2). Returns float64[m].
    """
    n = matrix.shape[0] - 1
    blocked = np.zeros((n + 1, n + 1), dtype=np.bool_)
    for i in range(banned.shape[0]):
        blocked[banned[i, 0], banned[i, 1]] = True
    best = np.full(n + 1, -np.inf)  # best allowed head score of each free word
    other = np.full(n + 1, -np.inf)  # the same, the head in ``tree`` excluded
    for d in range(1, n + 1):
        for h in range(n + 1):
            if fixed[d] < 0 and not blocked[d, h]:
                best[d] = max(best[d], matrix[d, h])
                if h != tree[d]:
                    other[d] = max(other[d], matrix[d, h])
    free = np.flatnonzero(fixed[1:] < 0) + 1
    bounds = np.empty(free.shape[0])
    for j in range(free.shape[0]):
        total = 0.0
        for d in range(1, n + 1):  # in the order tree_score_kernel adds, so ties stay exact
            if fixed[d] >= 0 or d < free[j]:
                total += matrix[d, tree[d]]
            elif d == free[j]:
                total += other[d]
            else:
                total += best[d]
        bounds[j] = total
    return bounds


# A subproblem, the trees whose word d has head fixed[d] wherever fixed[d] >= 0 (int64[n+1])
# and that use none of the banned arcs (rows (d, h) of int64[m, 2]), as (fixed, banned, its
# best tree). Its children exist only as (parent, j) until popped.
Subproblem = tuple[IntArray, IntArray, IntArray]


@numba.njit(cache=True, nogil=True)
def _solve_child(
    matrix: FloatArray,
    root_constraint: bool,
    parent: Subproblem,
    j: int,
    work: FloatArray,
) -> tuple[Subproblem, float]:
    """Child j of ``parent`` (as :func:`_bounds` describes) with its best tree, and its score."""
    fixed, banned, tree = parent
    child_fixed = fixed.copy()
    child_banned = np.empty((banned.shape[0] + 1, 2), dtype=np.int64)
    child_banned[:-1] = banned
    seen = 0
    for d in range(1, fixed.shape[0]):
        if fixed[d] < 0:
            if seen == j:
                child_banned[-1, 0], child_banned[-1, 1] = d, tree[d]
                break
            child_fixed[d] = tree[d]
            seen += 1
    heads = np.full(fixed.shape[0], -1, dtype=np.int64)
    score = _solve(matrix, root_constraint, child_fixed, child_banned, work, heads)
    return (child_fixed, child_banned, heads), score


def _lawler(
    matrix: FloatArray, k: int, root_constraint: bool
) -> tuple[list[IntArray], list[float]]:
    """The k best trees of one checked sentence and their scores (fewer if fewer exist).

    Best first on a max-heap of subproblems. A child enters it unsolved, keyed by an upper
    bound on its best tree (:func:`_bounds`, capped by its parent's best), and is solved only
    when popped, then pushed back keyed by its best tree's score. A solved subproblem on top
    therefore beats every tree left, and most children are never solved when scores are
    peaked: their bound stays below the k-th tree.
    """
    n = matrix.shape[0] - 1
    work = np.empty_like(matrix)
    fixed = np.full(n + 1, -1, dtype=np.int64)
    banned = np.empty((0, 2), dtype=np.int64)
    tree = np.full(n + 1, -1, dtype=np.int64)
    score = tiered(_solve)(matrix, root_constraint, fixed, banned, work, tree)
    # Entries (-key, counter, tree or None if unsolved, subproblem or parent, j); the counter
    # breaks ties first in, first out and keeps arrays uncompared.
    queue: list = [(-score, 0, tree, (fixed, banned, tree), 0)] if score > -np.inf else []
    pushed = 1
    trees, weights = [], []
    solve_child, bounds = tiered(_solve_child), tiered(_bounds)
    while queue:
        negative, _, tree, node, j = heapq.heappop(queue)
        if tree is None:  # unsolved: node is the parent
            child, score = solve_child(matrix, root_constraint, node, j, work)
            if score > -np.inf:
                heapq.heappush(queue, (-score, pushed, child[2], child, 0))
                pushed += 1
            continue
        trees.append(tree)
        weights.append(-negative)
        if len(trees) == k:
            break
        fixed, banned, _ = node
        for child, bound in enumerate(bounds(matrix, tree, fixed, banned).tolist()):
            if bound > -np.inf:
                heapq.heappush(queue, (-min(bound, -negative), pushed, None, node, child))
                pushed += 1
    return trees, weights


_LAWLER_TREE_BYTES = 2048
_LAWLER_SOLVED_BYTES = 16
"""Memory Lawler's search keeps per tree it returns: a fixed part, and 16 (n+1)^2 bytes for the
arrays of its up to n children once solved (tracemalloc, n = 60 and 150: 30 KB and 212 KB a
tree on tied scores, where every child is solved; a tenth of that on random scores)."""

SMALLEST_REFUSED = 2**20
"""A k-best search needing less than this (1 MiB) is never refused, whatever memory is said to
be left: it is noise beside what the interpreter takes anyway (k=2 on a sentence at a cgroup's
limit was refused)."""

_CHART_BYTES = 128
"""Bytes per item of the k-best Eisner chart: a score (float64) and a back pointer (3 int64) in
each of 4 span kinds, so float64[4, n+1, n+1, k] and int64[4, n+1, n+1, k, 3] in all."""


def _sentence(
    matrix: FloatArray,
    k: int,
    algorithm: str,
    root_constraint: bool,
    b: int,
    memory: Callable[[], int | None],
) -> tuple[IntArray, FloatArray]:
    """The k best trees int64[K', n+1] of sentence ``b``, checked, and their scores float64[K'].

    Raises:
        ValueError: the trees up to ``k`` would take more than half of ``memory()``
            (:func:`decoding.memory.available`, read only for a search over
            :data:`SMALLEST_REFUSED`; a request for every tree of a long sentence):
            ``eisner``'s chart, or what Lawler's search keeps; or they did not fit.
    """
    if algorithm == "eisner":
        count = tiered(tree_count, work=cubic_work)(matrix, root_constraint, k)
        asked = f"{count} projective trees, whose chart would take"
        needed = _CHART_BYTES * matrix.shape[0] ** 2 * count
        search = functools.partial(tiered(kbest_eisner_kernel, work=_chart_work), matrix, count)
    else:
        per_tree = _LAWLER_TREE_BYTES + _LAWLER_SOLVED_BYTES * matrix.shape[0] ** 2
        count, needed = k, k * per_tree  # counted only where k trees may be too many
        if needed > SMALLEST_REFUSED and over_half(needed, memory()):
            trees = _tree_count(matrix, root_constraint)
            count = k if trees >= k else round(trees)  # a float count may fall a hair short
            needed = count * per_tree
        asked = f"{count} trees, whose search would keep"
        search = functools.partial(_lawler_arrays, matrix, k)
    if needed > SMALLEST_REFUSED and over_half(needed, left := memory()):
        why = f"more than half of the {left / 2**30:.1f} GiB this process may use"
        raise _refused(b, k, asked, needed, why)
    try:
        return search(root_constraint)
    except MemoryError:  # within the limits read, but not there to take
        raise _refused(b, k, asked, needed, "which did not fit in memory") from None


def _lawler_arrays(
    matrix: FloatArray, k: int, root_constraint: bool
) -> tuple[IntArray, FloatArray]:
    """:func:`_lawler`'s trees int64[K', n+1] and scores float64[K']."""
    trees, weights = _lawler(matrix, k, root_constraint)
    if not trees:
        return np.empty((0, matrix.shape[0]), dtype=np.int64), np.empty(0)
    return np.stack(trees), np.array(weights)


def _refused(b: int, k: int, asked: str, needed: int, why: str) -> ValueError:
    return ValueError(
        f"sentence {b}: k={k} asks for {asked} {needed / 2**30:.1f} GiB, {why}; ask for fewer trees"
    )


_LOG_FLOAT_MAX = math.log(np.finfo(np.float64).max)


def _tree_count(matrix: FloatArray, root_constraint: bool) -> float:
    """How many trees the ``-inf`` masks of a checked sentence float64[n+1, n+1] leave.

    The matrix-tree theorem on the allowed arcs (Tutte 1948; one root as Koo et al. 2007 count
    it), in floats: for sizing memory, not for the trees themselves (inf beyond float64).
    """
    n = matrix.shape[0] - 1
    allowed = np.isfinite(matrix[1:]).astype(np.float64)  # [d - 1, h]: the arc h -> d
    allowed[np.arange(n), np.arange(1, n + 1)] = 0.0  # the diagonal is ignored
    laplacian = -allowed[:, 1:]  # dependents by word heads
    heads = allowed if not root_constraint else allowed[:, 1:]
    laplacian[np.diag_indices(n)] = heads.sum(1)
    if root_constraint:
        laplacian[:, 0] = allowed[:, 0]  # one word on ROOT: the first column its arcs
    sign, log_count = np.linalg.slogdet(laplacian)
    if sign <= 0:
        return 0.0
    return math.exp(log_count) if log_count < _LOG_FLOAT_MAX else math.inf


def _chart_work(args: tuple) -> int:
    """A k-best Eisner call's work: Eisner's times the k items kept per span (``args[1]``)."""
    return cubic_work(args) * max(args[1], 1)


def _no_tree(b: int, matrix: FloatArray, algorithm: str, root_constraint: bool) -> ValueError:
    """Why sentence ``b`` has no tree: a word cut off from ROOT, or no tree of the kind asked.

    The single-root rule was blamed where the masks allowed no tree at all.
    """
    if _cut_off(matrix):
        return ValueError(f"sentence {b}: {_NO_TREE}")
    kind = "projective " if algorithm == "eisner" else ""
    single = " with a single root" if root_constraint else ""
    return ValueError(f"sentence {b}: no {kind}tree{single} exists under the -inf masks")


def kbest(
    scores: npt.ArrayLike,
    k: int,
    *,
    algorithm: str = "mst",
    root_constraint: bool = True,
    lengths: npt.ArrayLike | None = None,
) -> KBest:
    """The k highest-scoring trees per sentence, best first (Lawler 1972; Huang & Chiang 2005).

    Exact; tied trees come in any order among themselves.

    - ``"mst"``: Lawler's partition. The trees found so far split the remaining ones into
      disjoint subproblems (arcs forced in, arcs banned), and each subproblem's best tree comes
      from the exact MST decoder (Tarjan 1977; Gabow & Tarjan 1984 for one root) on the masked
      matrix, so the i-th tree returned is the best of all trees not returned before. Each tree
      returned spawns at most n subproblems of O(n^2) each: O(k n^3) time in the worst case;
      a subproblem is solved only once an upper bound on it reaches the top of the queue, which
      skips 70-90% of them on random scores (n = 20-80, k = 10-50). Camerini, Fratta &
      Maffioli (1980) and Zmigrod, Vieira & Cotterell (2021) reach O(k n^2).
    - ``"eisner"``: projective trees only, from Eisner's (1996) chart with the k best items per
      span (see :mod:`decoding.kbest_eisner`): O(n^3 + n^2 k log(n + k)) time, O(n^2 k) memory.

    Args:
        scores: float[n+1, n+1] or float[B, N+1, N+1]; ``scores[..., d, h]`` scores the arc
            h -> d. Row 0, the diagonal and padding are ignored; ``-inf`` forbids an arc.
        k: how many trees to return per sentence, >= 1.
        algorithm: ``"mst"`` (any tree) or ``"eisner"`` (projective trees only).
        root_constraint: exactly one word attaches to ROOT in every tree if True.
        lengths: int[B], words per sentence excluding ROOT (batches only). Defaults to N.

    Returns:
        :class:`KBest` with heads int64[K', n+1] and scores float64[K'] for one sentence (K' = k,
        or fewer when fewer trees exist), or heads int64[B, K', N+1] and scores float64[B, K']
        for a batch, K' the most trees found for any sentence (missing trees are rows of -1
        scoring ``-inf``).

    Raises:
        ValueError: on bad input, as :func:`decoding.mst`, a bad ``k`` or ``algorithm``, a
            sentence that has no tree at all, or more of a sentence's trees than half of the
            memory this process may use holds (Eisner's chart, or what Lawler's search keeps;
            never under :data:`SMALLEST_REFUSED`). The message names the sentence.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    # The Eisner kernel takes an int64 and caps its float tree counts at k: 2**62 is exact in
    # both (2**63 - 1 rounds up to 2**63, which overflowed int64 once compiled); no sentence
    # has that many trees to return anyway.
    k = min(int(k), 2**62)
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(_ALGORITHMS)}, got {algorithm!r}")
    root_constraint = check_flag(root_constraint, "root_constraint")
    array = _as_scores(scores)
    memory = functools.cache(_memory_bytes)  # read once, and only for a large search
    if array.ndim == 2:
        if lengths is not None:
            raise ValueError("lengths is only for batched scores float[B, N+1, N+1]")
        heads, weights = _sentence(check_sentence(array), k, algorithm, root_constraint, 0, memory)
        if not weights.size:
            raise _no_tree(0, array, algorithm, root_constraint)
        return KBest(heads, weights)
    sizes = _lengths(lengths, array.shape[0], array.shape[1] - 1)
    return _batch_kbest(array, sizes, k, algorithm, root_constraint, memory)


def _batch_kbest(
    array: FloatArray,
    sizes: IntArray,
    k: int,
    algorithm: str,
    root_constraint: bool,
    memory: Callable[[], int | None],
) -> KBest:
    """The k best trees of each sentence of a batch float64[B, N+1, N+1], one after another."""
    found = []
    where = np.zeros(3, dtype=np.int64)
    copy = tiered(_batch._copy)
    for b, n in enumerate(sizes):
        matrix = copy(array[b], n, True, where)
        if where[0] != status.OK:
            raise _error(b, where, False, {})
        trees, weights = _sentence(matrix, k, algorithm, root_constraint, b, memory)
        if not weights.size:
            raise _no_tree(b, matrix, algorithm, root_constraint)
        found.append((trees, weights))
    # As many rows as the sentence with the most trees has, not k: k may be far beyond that.
    # An empty batch has no trees at all, so zero rows: heads int64[0, 0, N+1].
    rows = max((len(weights) for _, weights in found), default=0)
    heads = np.full((array.shape[0], rows, array.shape[1]), -1, dtype=np.int64)
    scores = np.full((array.shape[0], rows), -np.inf)
    for b, (trees, weights) in enumerate(found):
        heads[b, : len(trees), : sizes[b] + 1] = trees
        scores[b, : len(trees)] = weights
    return KBest(heads, scores)
