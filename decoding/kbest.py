"""The k best dependency trees of a sentence, in order of score (Lawler 1972 on exact decoders).

Example::

    import numpy as np
    import decoding

    scores = np.random.default_rng(0).normal(size=(6, 6))  # float[n+1, n+1], n = 5 words
    best = decoding.kbest(scores, 3)  # single-rooted, non-projective
    best.heads  # int64[3, 6]: the 3 best trees, best first
    best.scores  # float64[3], non-increasing
    assert best.scores[0] == decoding.tree_score(scores, decoding.mst(scores))
    projective = decoding.kbest(scores, 3, algorithm="eisner", root_constraint=False)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from . import _batch
from .api import _as_scores, _error, _lengths
from .constrained import ALGORITHMS, check_sentence, restrict
from .trees import tree_score_kernel

__all__ = ["KBest", "kbest"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Kernel = Callable[[FloatArray, bool, IntArray], int]
# A subproblem: the trees whose word d has head fixed[d] wherever fixed[d] >= 0, and that use
# none of the banned arcs (d, h).
Arcs = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class KBest:
    """The best trees of one sentence, or of each sentence of a batch, best first.

    Attributes:
        heads: int64[K', n+1] for one sentence (K' <= k trees when fewer exist), or
            int64[B, k, N+1] for a batch, where missing trees and padding are -1.
        scores: float64[K'] or float64[B, k], each tree's score (sum of its arc scores),
            non-increasing; ``-inf`` for a missing tree of a batch.
    """

    heads: IntArray
    scores: FloatArray


def _solve(
    matrix: FloatArray, fixed: IntArray, banned: Arcs, kernel: Kernel, root_constraint: bool
) -> tuple[IntArray, float] | None:
    """Best tree (and its score) of a subproblem, or None when it holds no tree; O(n^2) + kernel."""
    work = restrict(matrix.copy(), fixed)
    if banned:
        deps, heads_ = zip(*banned, strict=True)
        work[list(deps), list(heads_)] = -np.inf  # [n_banned]
    heads = np.full(matrix.shape[0], -1, dtype=np.int64)
    if kernel(work, root_constraint, heads) != 0:
        return None
    return heads, tree_score_kernel(matrix, heads, matrix.shape[0] - 1)


def _children(
    matrix: FloatArray,
    heads: IntArray,
    fixed: IntArray,
    banned: Arcs,
    kernel: Kernel,
    root_constraint: bool,
) -> list[tuple[float, IntArray, IntArray, Arcs]]:
    """Split a subproblem without its best tree ``heads`` into disjoint subproblems, each solved.

    With d_1 < ... < d_m the words free in the subproblem, child j keeps the heads of ``heads``
    for d_1..d_(j-1) and bans the one of d_j, so every other tree of the subproblem lies in
    exactly one child. Returns (score, best tree, fixed, banned) of each child that holds a tree.
    """
    fixed = fixed.copy()
    children = []
    for d in np.flatnonzero(fixed < 0)[1:]:  # skip ROOT, whose fixed entry is -1
        arcs = (*banned, (int(d), int(heads[d])))
        solved = _solve(matrix, fixed, arcs, kernel, root_constraint)
        if solved is not None:
            children.append((solved[1], solved[0], fixed.copy(), arcs))
        fixed[d] = heads[d]
    return children


def _sentence(
    matrix: FloatArray, k: int, kernel: Kernel, root_constraint: bool
) -> tuple[list[IntArray], list[float]]:
    """The k best trees of one checked sentence and their scores (fewer if fewer exist)."""
    free = np.full(matrix.shape[0], -1, dtype=np.int64)
    first = _solve(matrix, free, (), kernel, root_constraint)
    if first is None:
        return [], []
    # Max-heap on score; the counter breaks ties first in, first out and keeps arrays uncompared.
    queue = [(-first[1], 0, first[0], free, ())]
    pushed = 1
    trees, weights = [], []
    while queue:
        negative, _, heads, fixed, banned = heapq.heappop(queue)
        trees.append(heads)
        weights.append(-negative)
        if len(trees) == k:
            break
        for weight, child, child_fixed, child_banned in _children(
            matrix, heads, fixed, banned, kernel, root_constraint
        ):
            heapq.heappush(queue, (-weight, pushed, child, child_fixed, child_banned))
            pushed += 1
    return trees, weights


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
    """The k highest-scoring trees per sentence, best first (Lawler 1972's partition).

    Exact: the trees found so far split the remaining ones into disjoint subproblems (arcs
    forced in, arcs banned), and each subproblem's best tree comes from the exact decoder on
    the masked matrix, so the i-th tree returned is the best of all trees not returned before.
    Tied trees come in any order among themselves. Each tree returned spawns at most n
    subproblems, so with ``"mst"`` (Tarjan 1977; Gabow & Tarjan 1984 for one root) this costs
    O(k n^3) time, and O(k n^4) with ``"eisner"`` (Eisner 1996, projective trees only). Camerini,
    Fratta & Maffioli (1980) and Zmigrod, Vieira & Cotterell (2021) reach O(k n^2) for "mst".

    Args:
        scores: float[n+1, n+1] or float[B, N+1, N+1]; ``scores[..., d, h]`` scores the arc
            h -> d. Row 0, the diagonal and padding are ignored; ``-inf`` forbids an arc.
        k: how many trees to return per sentence, >= 1.
        algorithm: ``"mst"`` (any tree) or ``"eisner"`` (projective trees only).
        root_constraint: exactly one word attaches to ROOT in every tree if True.
        lengths: int[B], words per sentence excluding ROOT (batches only). Defaults to N.

    Returns:
        :class:`KBest` with heads int64[K', n+1] and scores float64[K'] for one sentence (K' = k,
        or fewer when fewer trees exist), or heads int64[B, k, N+1] and scores float64[B, k]
        for a batch (missing trees are rows of -1 scoring ``-inf``).

    Raises:
        ValueError: on bad input, as :func:`decoding.mst`, a bad ``k`` or ``algorithm``, or a
            sentence that has no tree at all. The message names the sentence.
    """
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(ALGORITHMS)}, got {algorithm!r}")
    kernel = ALGORITHMS[algorithm]
    array = _as_scores(scores)
    if array.ndim == 2:
        if lengths is not None:
            raise ValueError("lengths is only for batched scores float[B, N+1, N+1]")
        trees, weights = _sentence(check_sentence(array), int(k), kernel, root_constraint)
        if not trees:
            raise _no_tree(0, algorithm, root_constraint)
        return KBest(np.stack(trees), np.array(weights))
    sizes = _lengths(lengths, array.shape[0], array.shape[1] - 1)
    heads = np.full((array.shape[0], k, array.shape[1]), -1, dtype=np.int64)
    weights_out = np.full((array.shape[0], k), -np.inf)
    where = np.zeros(3, dtype=np.int64)
    for b, n in enumerate(sizes):
        matrix = _batch._copy(array, b, n, True, where)
        if where[0] != _batch.OK:
            raise _error(b, where, False, {})
        trees, weights = _sentence(matrix, int(k), kernel, root_constraint)
        if not trees:
            raise _no_tree(b, algorithm, root_constraint)
        heads[b, : len(trees), : n + 1] = trees
        weights_out[b, : len(trees)] = weights
    return KBest(heads, weights_out)
