"""The k best dependency trees of a sentence, best first: Lawler (1972) on the exact MST decoder.

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

import heapq
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from . import _batch
from .api import _as_scores, _error, _lengths
from .constrained import check_sentence
from .kbest_eisner import kbest_eisner_kernel
from .tarjan import mst_kernel
from .trees import tree_score_kernel

__all__ = ["KBest", "kbest"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
_ALGORITHMS = ("eisner", "mst")
# A subproblem: the trees whose word d has head fixed[d] wherever fixed[d] >= 0 (int64[n+1]),
# and that use none of the banned arcs, rows (d, h) of int64[m, 2].


@dataclass(frozen=True, slots=True)
class KBest:
    """The best trees of one sentence, or of each sentence of a batch, best first.

    Attributes:
        heads: int64[K', n+1] for one sentence (K' <= k trees when fewer exist), or
            int64[B, K', N+1] for a batch (K' <= k the most trees of any sentence), where
            missing trees and padding are -1.
        scores: float64[K'] or float64[B, K'], each tree's score (sum of its arc scores),
            non-increasing; ``-inf`` for a missing tree of a batch.
    """

    heads: IntArray
    scores: FloatArray


@numba.njit(cache=True)
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


@numba.njit(cache=True)
def _children(
    matrix: FloatArray,
    root_constraint: bool,
    tree: IntArray,
    fixed: IntArray,
    banned: IntArray,
) -> tuple[IntArray, FloatArray]:
    """Split a subproblem without its best tree into disjoint subproblems, and solve each.

    With d_1 < ... < d_m the words free in the subproblem, child j keeps the heads that ``tree``
    gives d_1..d_(j-1) and bans the one of d_j, so every other tree of the subproblem lies in
    exactly one child. Returns each child's best tree int64[m, n+1] and score float64[m]
    (``-inf`` for a child without trees).
    """
    n = matrix.shape[0] - 1
    free = np.flatnonzero(fixed[1:] < 0) + 1
    heads = np.full((free.shape[0], n + 1), -1, dtype=np.int64)
    scores = np.empty(free.shape[0])
    child_fixed = fixed.copy()
    child_banned = np.empty((banned.shape[0] + 1, 2), dtype=np.int64)
    child_banned[:-1] = banned
    work = np.empty_like(matrix)
    for j in range(free.shape[0]):
        d = free[j]
        child_banned[-1, 0], child_banned[-1, 1] = d, tree[d]
        scores[j] = _solve(matrix, root_constraint, child_fixed, child_banned, work, heads[j])
        child_fixed[d] = tree[d]
    return heads, scores


# A subproblem as (fixed, banned, its best tree); its children exist only as (parent, j) until
# popped, since most of them never are.
Subproblem = tuple[IntArray, IntArray, IntArray]


def _child(parent: Subproblem, j: int) -> tuple[IntArray, IntArray]:
    """Fixed heads and banned arcs of child j of ``parent``, as :func:`_children` builds them."""
    fixed, banned, tree = parent
    free = np.flatnonzero(fixed[1:] < 0) + 1
    child_fixed = fixed.copy()
    child_fixed[free[:j]] = tree[free[:j]]
    d = free[j]
    return child_fixed, np.vstack((banned, [(d, tree[d])]))  # [n+1], [m+1, 2]


def _lawler(
    matrix: FloatArray, k: int, root_constraint: bool
) -> tuple[list[IntArray], list[float]]:
    """The k best trees of one checked sentence and their scores (fewer if fewer exist)."""
    n = matrix.shape[0] - 1
    fixed = np.full(n + 1, -1, dtype=np.int64)
    banned = np.empty((0, 2), dtype=np.int64)
    first = np.full(n + 1, -1, dtype=np.int64)
    score = _solve(matrix, root_constraint, fixed, banned, np.empty_like(matrix), first)
    if score == -np.inf:
        return [], []
    # Max-heap on score; the counter breaks ties first in, first out and keeps arrays uncompared.
    # Entries (-score, counter, the best trees of a parent's children, j, parent): child j's
    # tree is row j of that array.
    queue: list = [(-score, 0, first[None], 0, None)]
    pushed = 1
    trees, weights = [], []
    while queue:
        negative, _, candidates, j, parent = heapq.heappop(queue)
        tree = candidates[j]
        trees.append(tree)
        weights.append(-negative)
        if len(trees) == k:
            break
        if parent is not None:
            fixed, banned = _child(parent, j)
        heads, scores = _children(matrix, root_constraint, tree, fixed, banned)
        node = (fixed, banned, tree)
        for child, value in enumerate(scores.tolist()):
            if value > -np.inf:
                heapq.heappush(queue, (-value, pushed, heads, child, node))
                pushed += 1
    return trees, weights


def _sentence(
    matrix: FloatArray, k: int, algorithm: str, root_constraint: bool
) -> tuple[IntArray, FloatArray]:
    """The k best trees int64[K', n+1] of one checked sentence and their scores float64[K']."""
    if algorithm == "eisner":
        return kbest_eisner_kernel(matrix, k, root_constraint)
    trees, weights = _lawler(matrix, k, root_constraint)
    if not trees:
        return np.empty((0, matrix.shape[0]), dtype=np.int64), np.empty(0)
    return np.stack(trees), np.array(weights)


def _no_tree(b: int, algorithm: str, root_constraint: bool) -> ValueError:
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
      returned spawns at most n subproblems of O(n^2) each: O(k n^3) time. Camerini, Fratta &
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
        ValueError: on bad input, as :func:`decoding.mst`, a bad ``k`` or ``algorithm``, or a
            sentence that has no tree at all. The message names the sentence.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {list(_ALGORITHMS)}, got {algorithm!r}")
    array = _as_scores(scores)
    if array.ndim == 2:
        if lengths is not None:
            raise ValueError("lengths is only for batched scores float[B, N+1, N+1]")
        heads, weights = _sentence(check_sentence(array), int(k), algorithm, root_constraint)
        if not weights.size:
            raise _no_tree(0, algorithm, root_constraint)
        return KBest(heads, weights)
    sizes = _lengths(lengths, array.shape[0], array.shape[1] - 1)
    return _batch_kbest(array, sizes, int(k), algorithm, root_constraint)


def _batch_kbest(
    array: FloatArray, sizes: IntArray, k: int, algorithm: str, root_constraint: bool
) -> KBest:
    """The k best trees of each sentence of a batch float64[B, N+1, N+1], one after another."""
    found = []
    where = np.zeros(3, dtype=np.int64)
    for b, n in enumerate(sizes):
        matrix = _batch._copy(array, b, n, True, where)
        if where[0] != _batch.OK:
            raise _error(b, where, False, {})
        trees, weights = _sentence(matrix, k, algorithm, root_constraint)
        if not weights.size:
            raise _no_tree(b, algorithm, root_constraint)
        found.append((trees, weights))
    # As many rows as the sentence with the most trees has, not k: k may be far beyond that.
    rows = max(len(weights) for _, weights in found)
    heads = np.full((array.shape[0], rows, array.shape[1]), -1, dtype=np.int64)
    scores = np.full((array.shape[0], rows), -np.inf)
    for b, (trees, weights) in enumerate(found):
        heads[b, : len(trees), : sizes[b] + 1] = trees
        scores[b, : len(trees)] = weights
    return KBest(heads, scores)
