"""Public decoders: validate once, normalise to float64 C-contiguous batches, dispatch to kernels.

Every check on scores and lengths happens here, in Python, so the numba kernels can trust their
input. ``is_tree`` and ``tree_score`` live in :mod:`decoding.trees` and are re-exported.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from . import _batch
from .trees import is_tree, tree_score

__all__ = ["eisner", "greedy", "is_tree", "mst", "tree_score"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _prefix(b: int) -> str:
    return f"sentence {b}: "


def _as_batch(
    scores: npt.ArrayLike, lengths: npt.ArrayLike | None
) -> tuple[FloatArray, IntArray, bool]:
    """Scores as C-contiguous float64[B, N+1, N+1], lengths as int64[B], and whether 2-D."""
    array = np.asarray(scores)
    if array.ndim not in (2, 3):
        raise ValueError(
            f"scores must be float[n+1, n+1] or float[B, N+1, N+1], got shape {array.shape}"
        )
    if array.shape[-1] != array.shape[-2]:
        raise ValueError(f"scores must be square in its last two axes, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.floating):
        raise ValueError(
            f"scores must be float32 or float64 (-inf masks arcs), got dtype {array.dtype}"
        )
    if array.shape[-1] < 2:
        raise ValueError(f"scores must cover ROOT and at least one word, got shape {array.shape}")
    single = array.ndim == 2
    batch = np.ascontiguousarray(array.reshape(-1, *array.shape[-2:]), dtype=np.float64)
    return batch, _lengths(lengths, batch.shape[0], batch.shape[1] - 1, single), single


def _lengths(lengths: npt.ArrayLike | None, size: int, width: int, single: bool) -> IntArray:
    """Lengths as int64[size], each in [1, width]."""
    if lengths is None:
        return np.full(size, width, dtype=np.int64)
    if single:
        raise ValueError("lengths is only for batched scores float[B, N+1, N+1]")
    array = np.asarray(lengths)
    if array.shape != (size,):
        raise ValueError(f"lengths must have shape ({size},) to match scores, got {array.shape}")
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"lengths must hold integers, got dtype {array.dtype}")
    bad = np.flatnonzero((array < 1) | (array > width))
    if bad.size:
        b = bad[0]
        raise ValueError(f"{_prefix(b)}lengths[{b}]={array[b]} is outside [1, N={width}]")
    return array.astype(np.int64)


def _inside(lengths: IntArray, width: int) -> BoolArray:
    """bool[B, N+1, N+1]: arcs h -> d with 1 <= d <= n, 0 <= h <= n, h != d, per sentence."""
    positions = np.arange(width + 1)
    heads_ok = positions[None, :] <= lengths[:, None]  # [B, N+1]
    words_ok = heads_ok & (positions[None, :] >= 1)  # [B, N+1]
    return words_ok[:, :, None] & heads_ok[:, None, :] & ~np.eye(width + 1, dtype=np.bool_)


def _first(mask: BoolArray) -> tuple[int, ...] | None:
    hits = np.argwhere(mask)
    return tuple(int(i) for i in hits[0]) if hits.size else None


def _check_values(scores: FloatArray, lengths: IntArray, single: bool, need_root: bool) -> None:
    """Raise on NaN or +inf inside a sentence and on words (or ROOT) without any finite arc."""
    inside = _inside(lengths, scores.shape[1] - 1)
    for problem, test in (("NaN", np.isnan), ("+inf", np.isposinf)):
        where = _first(test(scores) & inside)
        if where is not None:
            b, d, h = where
            index = f"[{d}, {h}]" if single else f"[{b}, {d}, {h}]"
            raise ValueError(f"{_prefix(b)}{problem} at scores{index} (arc {h} -> {d})")
    finite = np.isfinite(scores) & inside  # [B, N+1, N+1]
    where = _first(~finite.any(axis=2) & inside.any(axis=2))
    if where is not None:
        b, d = where
        raise ValueError(
            f"{_prefix(b)}word {d} has no finite head score: every arc into it is -inf"
        )
    if need_root:
        where = _first(~finite[:, :, 0].any(axis=1))
        if where is not None:
            raise ValueError(f"{_prefix(where[0])}no word can attach to ROOT: column 0 is all -inf")


def _raise_for_status(status: IntArray, reasons: dict[int, str]) -> None:
    bad = np.flatnonzero(status)
    if bad.size:
        b = int(bad[0])
        raise ValueError(f"{_prefix(b)}{reasons[int(status[b])]}")


_Driver = Callable[[FloatArray, IntArray], tuple[IntArray, IntArray]]


def _run(
    driver: _Driver,
    scores: npt.ArrayLike,
    lengths: npt.ArrayLike | None,
    need_root: bool,
    reasons: dict[int, str],
) -> IntArray:
    batch, sizes, single = _as_batch(scores, lengths)
    _check_values(batch, sizes, single, need_root)
    heads, status = driver(batch, sizes)
    _raise_for_status(status, reasons)
    return heads[0] if single else heads


_NO_TREE = "no spanning tree exists: the -inf masks cut some word off from ROOT"
_NO_SINGLE_ROOT = "no tree with a single root exists under the -inf masks"


def mst(
    scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None, *, root_constraint: bool = True
) -> IntArray:
    """Maximum spanning tree per sentence (Tarjan 1977; Gabow & Tarjan 1984 for one root).

    Exact in O(n^2) per sentence, projective or not. With ``root_constraint`` the result is the
    best tree with exactly one word on ROOT (Zmigrod et al. 2020), as UD requires; without it the
    best arborescence, which may attach several words to ROOT (Chu & Liu 1965; Edmonds 1967).

    Args:
        scores: float[B, N+1, N+1] or float[n+1, n+1] (float32 or float64, any array-like such
            as a CPU tensor); ``scores[..., d, h]`` scores the arc h -> d. Row 0, the diagonal and
            padding are ignored; ``-inf`` forbids an arc.
        lengths: int[B], words per sentence excluding ROOT. Defaults to N for every sentence.
        root_constraint: exactly one word attaches to ROOT if True.

    Returns:
        int64 heads shaped like ``scores[..., 0]``; ``-1`` at ROOT and at padding.

    Raises:
        ValueError: on a bad shape or dtype, lengths outside [1, N], NaN or +inf inside a
            sentence, or when the ``-inf`` masks leave no (single-rooted) tree. The message names
            the sentence.
    """
    return _run(
        lambda batch, sizes: _batch.mst(batch, sizes, root_constraint),
        scores,
        lengths,
        True,
        {1: _NO_TREE, 2: _NO_SINGLE_ROOT},
    )


def eisner(
    scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None, *, root_constraint: bool = True
) -> IntArray:
    """Best projective tree per sentence (Eisner 1996), O(n^3).

    Args:
        scores: float[B, N+1, N+1] or float[n+1, n+1]; ``scores[..., d, h]`` scores the arc
            h -> d. Row 0, the diagonal and padding are ignored; ``-inf`` forbids an arc.
        lengths: int[B], words per sentence excluding ROOT. Defaults to N for every sentence.
        root_constraint: exactly one word attaches to ROOT if True.

    Returns:
        int64 heads shaped like ``scores[..., 0]``; ``-1`` at ROOT and at padding.

    Raises:
        ValueError: as :func:`mst`, and when the masks leave no projective tree.
    """
    reason = "no projective tree" + (" with a single root" if root_constraint else "")
    return _run(
        lambda batch, sizes: _batch.eisner(batch, sizes, root_constraint),
        scores,
        lengths,
        True,
        {1: f"{reason} exists under the -inf masks"},
    )


def greedy(scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None) -> IntArray:
    """Best head of each word on its own (argmax per row, ties to the lowest head).

    Fast, but the result need not be a tree: it may contain cycles or several roots.

    Args:
        scores: float[B, N+1, N+1] or float[n+1, n+1]; ``scores[..., d, h]`` scores the arc
            h -> d. Row 0, the diagonal and padding are ignored; ``-inf`` forbids an arc.
        lengths: int[B], words per sentence excluding ROOT. Defaults to N for every sentence.

    Returns:
        int64 heads shaped like ``scores[..., 0]``; ``-1`` at ROOT and at padding.

    Raises:
        ValueError: on a bad shape, dtype or lengths, NaN or +inf inside a sentence, or a word
            whose every head is ``-inf``.
    """
    return _run(_batch.greedy, scores, lengths, False, {1: "a word has no finite head score"})


def _best_of_roots(scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None) -> IntArray:
    """Exact single-root MST by trying every root word (O(n^3)); for tests and benchmarks only."""
    return _run(_batch.best_of_roots, scores, lengths, True, {1: _NO_TREE, 2: _NO_SINGLE_ROOT})
