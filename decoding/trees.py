"""Tree checks and scores for head vectors: is_tree, is_projective, count_roots, tree_score, greedy.

Python functions accept one head vector ``int[n+1]`` or a padded batch ``int[B, N+1]`` (``-1`` at
position 0 and padding); the ``@njit`` kernels below them work on one sentence.
:func:`tree_problem_kernel` is the one tree checker of ``decoding``, ``transitions`` (gold trees
at the oracles' door) and ``biaffine.metrics`` (malformed predictions).
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from tiered import tiered

from .checks import as_array, check_flag, check_float, check_integer
from .types import BoolArray, FloatArray, IntArray

# What tree_problem_kernel finds first, checked in this order.
OK, OUT_OF_RANGE, CYCLE, ROOTS, NON_PROJECTIVE = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def _out_of_range(heads: IntArray, n: int) -> int:
    """The first word 1..n whose head is not another word or ROOT, 0 if there is none."""
    for d in range(1, n + 1):
        if heads[d] < 0 or heads[d] > n or heads[d] == d:
            return d
    return 0


@numba.njit(cache=True)
def _on_cycle(heads: IntArray, n: int) -> int:
    """A word on a cycle that never reaches ROOT, 0 if every word reaches it (heads in range)."""
    state = np.zeros(n + 1, dtype=np.int64)  # 0 unseen, 1 on the current path, 2 reaches ROOT
    state[0] = 2
    for start in range(1, n + 1):
        v = start
        while state[v] == 0:
            state[v] = 1
            v = heads[v]
        if state[v] == 1:  # the walk came back to a word of its own path
            return v
        v = start
        while state[v] == 1:
            state[v] = 2
            v = heads[v]
    return 0


@numba.njit(cache=True)
def count_roots_kernel(heads: IntArray, n: int) -> int:
    """Number of words 1..n whose head is ROOT."""
    roots = 0
    for d in range(1, n + 1):
        if heads[d] == 0:
            roots += 1
    return roots


@numba.njit(cache=True)
def _crossing(heads: IntArray, n: int, detail: IntArray) -> bool:
    """Whether two arcs cross; if so, ``detail`` = (d, e): e inside the arc into d, its head not.

    ROOT sits left of every word, so a tree (heads in range, acyclic) is projective iff no two
    arcs cross iff no word inside an arc's span has its head outside the span.
    """
    for d in range(1, n + 1):
        lo, hi = min(d, heads[d]), max(d, heads[d])
        for e in range(lo + 1, hi):
            if heads[e] < lo or heads[e] > hi:
                detail[0], detail[1] = d, e
                return True
    return False


@numba.njit(cache=True)
def tree_problem_kernel(
    heads: IntArray, n: int, root_constraint: bool, projective: bool, detail: IntArray
) -> int:
    """The first reason heads[1..n] are not a tree of the requested kind, or OK.

    The one tree checker of the three packages (``heads[0]`` is not read). Checks, in order:
    every head in 0..n and not the word itself (OUT_OF_RANGE), no cycle (CYCLE), exactly one
    word on ROOT if ``root_constraint`` (ROOTS), no crossing arcs if ``projective``
    (NON_PROJECTIVE).

    Args:
        heads: int64[n+1].
        n: words.
        root_constraint: require exactly one word on ROOT.
        projective: require a projective tree.
        detail: int64[2], overwritten on a problem: (word, its head) for OUT_OF_RANGE and
            CYCLE (the word lies on the cycle), (number of roots, -1) for ROOTS, (word d, word
            e) for NON_PROJECTIVE (e lies inside the arc into d and has its head outside it).

    Returns:
        One of OK, OUT_OF_RANGE, CYCLE, ROOTS, NON_PROJECTIVE.
    """
    d = _out_of_range(heads, n)
    if d:
        detail[0], detail[1] = d, heads[d]
        return OUT_OF_RANGE
    d = _on_cycle(heads, n)
    if d:
        detail[0], detail[1] = d, heads[d]
        return CYCLE
    roots = count_roots_kernel(heads, n)
    if root_constraint and roots != 1:
        detail[0], detail[1] = roots, -1
        return ROOTS
    if projective and _crossing(heads, n, detail):
        return NON_PROJECTIVE
    return OK


@numba.njit(cache=True)
def first_problem_kernel(
    heads: IntArray, lengths: IntArray, root_constraint: bool, projective: bool, detail: IntArray
) -> tuple[int, int]:
    """(sentence, problem) of the first sentence of a batch that is not a tree, or (-1, OK).

    Args:
        heads: int64[S, N+1], as for :func:`tree_problem_kernel` row by row.
        lengths: int64[S], words per sentence.
        root_constraint: as for :func:`tree_problem_kernel`.
        projective: as for :func:`tree_problem_kernel`.
        detail: as for :func:`tree_problem_kernel`, for the sentence found.
    """
    for s in range(lengths.shape[0]):
        code = tree_problem_kernel(heads[s], lengths[s], root_constraint, projective, detail)
        if code != OK:
            return s, code
    return -1, OK


@numba.njit(cache=True)
def is_tree_kernel(heads: IntArray, n: int, root_constraint: bool, projective: bool) -> bool:
    """Whether heads[1..n] form a dependency tree rooted at 0 (``heads[0]`` is not read)."""
    detail = np.zeros(2, dtype=np.int64)
    return n >= 1 and tree_problem_kernel(heads, n, root_constraint, projective, detail) == OK


@numba.njit(cache=True)
def greedy_kernel(scores: FloatArray, heads: IntArray) -> int:
    """Per-word argmax head (ties to the lowest head); may not be a tree.

    Returns 0, or 1 if some word has no finite head score (its head is then -1).
    """
    n = scores.shape[0] - 1
    heads[:] = -1
    status = 0
    for d in range(1, n + 1):
        best = -np.inf
        for h in range(n + 1):
            if h != d and scores[d, h] > best:
                best = scores[d, h]
                heads[d] = h
        if heads[d] < 0:
            status = 1
    return status


@numba.njit(cache=True)
def tree_score_kernel(scores: FloatArray, heads: IntArray, n: int) -> float:
    """Sum of ``scores[d, heads[d]]`` over words 1..n (heads already in range)."""
    total = 0.0
    for d in range(1, n + 1):
        total += scores[d, heads[d]]
    return total


def _as_heads(heads: npt.ArrayLike, lengths: npt.ArrayLike | None) -> tuple[IntArray, IntArray]:
    """Heads as int64[B, N+1] and lengths int64[B]; lengths default to the last non -1 position."""
    array = as_array(heads, "heads")
    if array.ndim not in (1, 2) or array.shape[-1] < 1:
        raise ValueError(f"heads must be int[n+1] or int[B, N+1], got shape {array.shape}")
    check_integer(array, "heads")
    batch = np.ascontiguousarray(array.reshape(-1, array.shape[-1]), dtype=np.int64)
    if array.ndim == 1:
        if lengths is not None:
            raise ValueError("lengths is only for a batch of head vectors (2-D heads)")
        return batch, np.array([batch.shape[1] - 1], dtype=np.int64)
    if lengths is None:
        if batch.shape[1] == 1:  # no word at all (argmax of an empty row was numpy's error)
            return batch, np.zeros(batch.shape[0], dtype=np.int64)
        present = batch[:, 1:] != -1  # [B, N]
        last = present.shape[1] - np.argmax(present[:, ::-1], axis=1)
        return batch, np.where(present.any(axis=1), last, 0).astype(np.int64)
    sizes = as_array(lengths, "lengths")
    if sizes.shape != (batch.shape[0],):
        raise ValueError(f"lengths must be int[{batch.shape[0]}], got shape {sizes.shape}")
    check_integer(sizes, "lengths")
    bad = np.flatnonzero((sizes < 0) | (sizes >= batch.shape[1]))
    if bad.size:
        b = bad[0]
        raise ValueError(f"sentence {b}: lengths[{b}]={sizes[b]} outside [0, {batch.shape[1] - 1}]")
    return batch, sizes.astype(np.int64)


def is_tree(
    heads: npt.ArrayLike,
    lengths: npt.ArrayLike | None = None,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> bool | BoolArray:
    """Whether each head vector is a dependency tree rooted at position 0.

    A tree gives each word 1..n one head in 0..n other than itself and has no cycle; with
    ``root_constraint`` exactly one word attaches to ROOT, with ``projective`` no two arcs cross.

    Args:
        heads: int[n+1] (one sentence of n words) or int[B, N+1] (padded batch). Position 0 is
            not read.
        lengths: int[B], words per sentence, batch only. Defaults to the last position whose head
            is not ``-1``, so decoder output with ``-1`` padding needs no lengths.
        root_constraint: require exactly one child of ROOT.
        projective: require a projective tree.

    Returns:
        A bool for one sentence, bool[B] for a batch.

    Raises:
        ValueError: on a shape, dtype or lengths problem, a flag that is not a bool, or a tensor
            numpy cannot read (not on a malformed tree).
    """
    root_constraint = check_flag(root_constraint, "root_constraint")
    projective = check_flag(projective, "projective")
    batch, sizes = _as_heads(heads, lengths)
    check = tiered(is_tree_kernel)
    result = np.array(
        [check(row, n, root_constraint, projective) for row, n in zip(batch, sizes, strict=True)],
        dtype=np.bool_,
    )
    return bool(result[0]) if np.ndim(heads) == 1 else result


def is_projective(heads: npt.ArrayLike) -> bool:
    """Whether one tree ``int[n+1]`` has no crossing arcs (ROOT arcs included).

    Raises:
        ValueError: if ``heads`` is not a tree (without the single-root condition).
    """
    heads = as_array(heads, "heads")
    if heads.ndim != 1:
        raise ValueError(f"heads must be int[n+1], got shape {heads.shape}")
    batch, sizes = _as_heads(heads, None)
    detail = np.zeros(2, dtype=np.int64)
    problem = tiered(tree_problem_kernel)(batch[0], sizes[0], False, True, detail)
    if sizes[0] < 1 or problem in (OUT_OF_RANGE, CYCLE):
        raise ValueError("heads is not a tree, so projectivity is undefined")
    return bool(problem == OK)


def count_roots(heads: npt.ArrayLike) -> int:
    """Number of words attached to ROOT in one head vector ``int[n+1]``.

    Raises:
        ValueError: on a shape other than ``int[n+1]`` or a head outside 0..n.
    """
    if np.ndim(heads) != 1:
        raise ValueError(f"heads must be int[n+1], got shape {np.shape(heads)}")
    batch, sizes = _as_heads(heads, None)
    words = batch[0, 1 : sizes[0] + 1]
    if (bad := np.flatnonzero((words < 0) | (words > sizes[0]))).size:  # [-1, 5, 0] counted 1
        d = bad[0] + 1
        raise ValueError(f"heads[{d}]={words[d - 1]} is not a head in 0..{sizes[0]}")
    return int(tiered(count_roots_kernel)(batch[0], sizes[0]))


def tree_score(
    scores: npt.ArrayLike, heads: npt.ArrayLike, lengths: npt.ArrayLike | None = None
) -> float | FloatArray:
    """Total score of the arcs in ``heads``: the sum of ``scores[d, heads[d]]`` over words d.

    Works for any head vector with heads in range, trees or not (e.g. :func:`decoding.greedy`).

    Args:
        scores: float[n+1, n+1] or float[B, N+1, N+1], dependent-major (``scores[..., d, h]``);
            float16, float32 or float64, as for the decoders.
        heads: int[n+1] or int[B, N+1], matching ``scores``.
        lengths: int[B], batch only; defaults as in :func:`is_tree`.

    Returns:
        A float for one sentence, float64[B] for a batch.

    Raises:
        ValueError: on mismatched shapes, a dtype other than these, a tensor numpy cannot read
            (one that requires grad, lives off the CPU or holds bfloat16), a head outside 0..n
            (or pointing at its own word), or arcs of ``heads`` that sum to NaN (a NaN
            among them, or both +inf and -inf).
    """
    matrix = as_array(scores, "scores")
    check_float(matrix, "scores")
    batch, sizes = _as_heads(heads, lengths)
    expected = (*np.shape(heads), np.shape(heads)[-1])
    if matrix.shape != expected:
        raise ValueError(f"scores shape {matrix.shape} does not match heads: expected {expected}")
    matrix = np.ascontiguousarray(matrix.reshape(-1, *matrix.shape[-2:]), dtype=np.float64)
    totals = np.empty(batch.shape[0])
    out_of_range, score = tiered(_out_of_range), tiered(tree_score_kernel)
    for b, (row, n) in enumerate(zip(batch, sizes, strict=True)):
        if d := out_of_range(row, n):
            raise ValueError(
                f"sentence {b}: heads[{d}]={row[d]} is not a head in 0..{n} other than {d}"
            )
        with np.errstate(invalid="ignore"):  # +inf plus -inf, refused below (NUMBA_DISABLE_JIT)
            totals[b] = score(matrix[b], row, n)
        if np.isnan(totals[b]):  # NaN is refused, as the decoders refuse it
            raise ValueError(
                f"sentence {b}: the arcs of heads score NaN (a NaN among them, or +inf and -inf)"
            )
    return float(totals[0]) if np.ndim(heads) == 1 else totals
