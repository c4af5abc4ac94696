"""Constrained decoding: the best tree with some heads fixed, some arcs forbidden or a given root.

Exact by masking: every arc a constraint rules out scores ``-inf`` (a fixed head h of word d
forbids every other head of d), and the exact decoders of :mod:`decoding.tarjan` and
:mod:`decoding.eisner` run on the masked matrix, so their optimum is the best tree that keeps
every constraint. Constraints that no tree can satisfy are reported in words before decoding.

Example::

    import numpy as np
    import decoding

    scores = np.log(np.full((4, 4), 1 / 3))  # float[n+1, n+1], n = 3 words
    fixed = np.array([-1, 2, -1, -1])  # word 1 must hang from word 2; -1 = free
    heads = decoding.constrained(scores, fixed_heads=fixed, root=3)
    assert heads[1] == 2 and heads[3] == 0
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tiered import tiered

from . import _batch, status
from ._eisner import eisner_kernel
from .api import _as_scores, _cut_off, _error
from .checks import as_array, check_flag
from .tarjan import mst_kernel
from .types import BoolArray, FloatArray, IntArray

__all__ = ["check_sentence", "constrained"]


_ALGORITHMS = {"mst": mst_kernel, "eisner": eisner_kernel}

_NO_TREE = "no tree satisfies the constraints"


def check_sentence(scores: npt.ArrayLike) -> FloatArray:
    """One sentence, checked as :func:`decoding.mst` checks it, copied with ``-inf`` on row 0.

    The diagonal is ``-inf`` too, so masks and decoders never meet garbage there.

    Args:
        scores: float[n+1, n+1]; ``scores[d, h]`` scores the arc h -> d.

    Returns:
        float64[n+1, n+1], C-contiguous, a fresh copy.

    Raises:
        ValueError: on a bad shape or dtype, batched scores, NaN or +inf, or a word without any
            finite head.
    """
    array = _as_scores(scores)
    if array.ndim != 2:
        raise ValueError(f"scores must be one sentence, float[n+1, n+1], got shape {array.shape}")
    where = np.zeros(3, dtype=np.int64)
    matrix = tiered(_batch._copy)(array, array.shape[0] - 1, True, where)
    if where[0] != status.OK:
        raise _error(0, where, True, {})
    return matrix


def _restrict(matrix: FloatArray, fixed: IntArray) -> None:
    """Set every head of word d but ``fixed[d]`` to ``-inf`` in ``matrix``, where fixed[d] >= 0."""
    words = np.flatnonzero(fixed >= 0)
    kept = matrix[words, fixed[words]]  # [n_fixed]
    matrix[words] = -np.inf
    matrix[words, fixed[words]] = kept


def _fixed_heads(fixed_heads: npt.ArrayLike | None, n: int) -> IntArray:
    """The fixed heads as int64[n+1], -1 where free, each fixed head in 0..n but the word itself."""
    if fixed_heads is None:
        return np.full(n + 1, -1, dtype=np.int64)
    array = as_array(fixed_heads, "fixed_heads")
    if array.shape != (n + 1,):
        raise ValueError(f"fixed_heads must have shape ({n + 1},) like scores, got {array.shape}")
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"fixed_heads must hold integers, got dtype {array.dtype}")
    if array[0] != -1:
        raise ValueError(f"fixed_heads[0] must be -1 (ROOT has no head), got {array[0]}")
    bad = np.flatnonzero((array < -1) | (array > n) | (array == np.arange(n + 1)))
    if bad.size:
        d = bad[0]
        if array[d] == d:
            raise ValueError(f"fixed_heads[{d}]={d}: a word cannot head itself")
        raise ValueError(f"fixed_heads[{d}]={array[d]} is not -1 (free) or a head in 0..{n}")
    return array.astype(np.int64)


def _forbidden(forbidden: npt.ArrayLike | None, n: int) -> BoolArray:
    """The mask of forbidden arcs as bool[n+1, n+1] (False everywhere when None)."""
    if forbidden is None:
        return np.zeros((n + 1, n + 1), dtype=np.bool_)
    array = as_array(forbidden, "forbidden")
    if array.shape != (n + 1, n + 1):
        raise ValueError(
            f"forbidden must have shape ({n + 1}, {n + 1}) to match scores, got {array.shape}"
        )
    if array.dtype != np.bool_:
        raise ValueError(f"forbidden must be a bool mask, got dtype {array.dtype}")
    return array


def _add_root(fixed: IntArray, root: int | None, n: int) -> None:
    """Fix ROOT as the head of word ``root`` in ``fixed``, unless it is None."""
    if root is None:
        return
    if isinstance(root, (bool, np.bool_)) or not isinstance(root, (int, np.integer)):
        raise ValueError(f"root must be a word index in 1..{n}, got {root!r}")
    if not 1 <= root <= n:
        raise ValueError(f"root={root} is outside the words 1..{n}")
    if fixed[root] > 0:
        raise ValueError(f"{_NO_TREE}: root word {root} has the fixed head {fixed[root]}")
    fixed[root] = 0


def _check_fixed(
    matrix: FloatArray, fixed: IntArray, root: int | None, root_constraint: bool, projective: bool
) -> None:
    """Raise a ValueError naming the first fixed arc (or pair, or cycle) that no tree can hold."""
    for d in np.flatnonzero(fixed >= 0):
        if matrix[d, fixed[d]] == -np.inf:
            what = f"root word {d}" if d == root else f"fixed arc {fixed[d]} -> {d}"
            raise ValueError(f"{_NO_TREE}: {what} is forbidden (masked or -inf)")
    cycle = _fixed_cycle(fixed)
    if cycle:
        path = " -> ".join(str(v) for v in [*cycle, cycle[0]])
        raise ValueError(f"{_NO_TREE}: fixed heads form the cycle {path}")
    on_root = np.flatnonzero(fixed == 0)
    if root_constraint and on_root.size > 1:
        raise ValueError(
            f"{_NO_TREE}: words {on_root[0]} and {on_root[1]} are fixed on ROOT,"
            " but root_constraint allows one"
        )
    if projective:
        _check_crossing(fixed)


def _fixed_cycle(fixed: IntArray) -> list[int]:
    """Words on a cycle of fixed arcs (a head before its dependent on the list), or []."""
    state = np.zeros(fixed.shape[0], dtype=np.int64)  # 0 unseen, start+1 on its walk, -1 done
    for start in range(1, fixed.shape[0]):
        v = start
        while v > 0 and state[v] == 0:
            state[v] = start + 1
            v = fixed[v]
        if v > 0 and state[v] == start + 1:
            cycle = [int(v)]
            while fixed[cycle[-1]] != v:
                cycle.append(int(fixed[cycle[-1]]))
            return cycle[::-1]
        v = start
        while v > 0 and state[v] == start + 1:
            state[v] = -1
            v = fixed[v]
    return []


def _check_crossing(fixed: IntArray) -> None:
    """Raise if two fixed arcs cross, since then no projective tree holds both."""
    words = np.flatnonzero(fixed >= 0)
    for i, a in enumerate(words):
        lo_a, hi_a = sorted((a, fixed[a]))
        for b in words[i + 1 :]:
            lo_b, hi_b = sorted((b, fixed[b]))
            if lo_a < lo_b < hi_a < hi_b or lo_b < lo_a < hi_b < hi_a:
                raise ValueError(
                    f"{_NO_TREE}: fixed arcs {fixed[a]} -> {a} and {fixed[b]} -> {b} cross,"
                    " so no projective tree holds both"
                )


def constrained(
    scores: npt.ArrayLike,
    *,
    algorithm: str = "mst",
    root_constraint: bool = True,
    fixed_heads: npt.ArrayLike | None = None,
    forbidden: npt.ArrayLike | None = None,
    root: int | None = None,
) -> IntArray:
    """Best tree of one sentence that keeps the given heads, avoids the given arcs, or has a root.

    Exact: constraints become ``-inf`` masks and the exact decoders run on the masked matrix
    (Tarjan 1977 and Gabow & Tarjan 1984 as in :func:`decoding.mst`, or Eisner 1996 as in
    :func:`decoding.eisner`), O(n^2) or O(n^3) plus O(n^2) for the masks.

    Args:
        scores: float[n+1, n+1] (one sentence); ``scores[d, h]`` scores the arc h -> d. Row 0
            and the diagonal are ignored; ``-inf`` forbids an arc.
        algorithm: ``"mst"`` (any tree) or ``"eisner"`` (projective trees only).
        root_constraint: exactly one word attaches to ROOT if True.
        fixed_heads: int[n+1], the head each word must take, ``-1`` where free (and at 0).
        forbidden: bool[n+1, n+1], dependent-major like ``scores``: True bans the arc h -> d.
        root: a word in 1..n that must attach to ROOT (with ``root_constraint``, the only one).

    Returns:
        int64[n+1] heads, ``heads[0] == -1``.

    Raises:
        ValueError: on bad input (as :func:`decoding.mst`, or constraints of the wrong shape or
            type), and when no tree satisfies the constraints: a fixed or root arc that is
            forbidden, fixed heads that form a cycle, two words fixed on ROOT under
            ``root_constraint``, crossing fixed arcs for ``"eisner"``, or masks that leave none.
    """
    if not isinstance(algorithm, str) or algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {sorted(_ALGORITHMS)}, got {algorithm!r}")
    root_constraint = check_flag(root_constraint, "root_constraint")
    matrix = check_sentence(scores)
    n = matrix.shape[0] - 1
    fixed = _fixed_heads(fixed_heads, n).copy()
    _add_root(fixed, root, n)
    matrix[_forbidden(forbidden, n)] = -np.inf
    _check_fixed(matrix, fixed, root, root_constraint, algorithm == "eisner")
    _restrict(matrix, fixed)
    no_head = np.flatnonzero(np.max(matrix[1:], axis=1) == -np.inf)  # [n] -> words without heads
    if no_head.size:
        raise ValueError(f"{_NO_TREE}: every head of word {no_head[0] + 1} is forbidden")
    heads = np.full(n + 1, -1, dtype=np.int64)
    if _ALGORITHMS[algorithm](matrix, root_constraint, heads) != 0:
        if _cut_off(matrix):  # not the single-root rule's doing
            raise ValueError(f"{_NO_TREE}: the masks cut some word off from ROOT")
        kind = "projective " if algorithm == "eisner" else ""
        single = " with a single root" if root_constraint else ""
        raise ValueError(f"{_NO_TREE}: the masks leave no {kind}tree{single}")
    return heads
