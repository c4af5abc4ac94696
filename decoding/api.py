"""Public decoders: validate once, normalise to float64 C-contiguous batches, dispatch to kernels.

Every check on scores and lengths happens here, in Python, so the numba kernels can trust their
input. Nothing here imports numba (:mod:`decoding._drive` picks the kernels).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from . import _codes, _drive, status
from .checks import as_array, check_flag, check_float, check_integer
from .types import FloatArray, IntArray

__all__ = [
    "DECODERS",
    "check_algorithm",
    "decode",
    "eisner",
    "greedy",
    "mst",
]


def _prefix(b: int) -> str:
    return f"sentence {b}: "


def _as_scores(scores: npt.ArrayLike) -> FloatArray:
    """Scores as C-contiguous float64[n+1, n+1] or float64[B, N+1, N+1], checked for shape."""
    array = as_array(scores, "scores")
    if array.ndim not in (2, 3):
        raise ValueError(
            f"scores must be float[n+1, n+1] or float[B, N+1, N+1], got shape {array.shape}"
        )
    if array.shape[-1] != array.shape[-2]:
        raise ValueError(f"scores must be square in its last two axes, got shape {array.shape}")
    check_float(array, "scores")
    if array.shape[-1] < 2:
        raise ValueError(f"scores must cover ROOT and at least one word, got shape {array.shape}")
    return np.ascontiguousarray(array, dtype=np.float64)


def _lengths(lengths: npt.ArrayLike | None, size: int, width: int) -> IntArray:
    """Lengths as int64[size], each in [1, width]."""
    if lengths is None:
        return np.full(size, width, dtype=np.int64)
    array = as_array(lengths, "lengths")
    if array.shape != (size,):
        raise ValueError(f"lengths must have shape ({size},) to match scores, got {array.shape}")
    if array.size:  # [] reads as float64, yet is the lengths of an empty batch
        check_integer(array, "lengths")
    bad = np.flatnonzero((array < 1) | (array > width))
    if bad.size:
        b = bad[0]
        raise ValueError(f"{_prefix(b)}lengths[{b}]={array[b]} is outside [1, N={width}]")
    return array.astype(np.int64)


def _error(
    b: int, where: IntArray | tuple[int, int, int], single: bool, reasons: dict[int, str]
) -> ValueError:
    """The error for sentence b, whose check or decoding failed with ``where = (status, d, h)``."""
    code, d, h = (int(v) for v in where)
    index = f"[{d}, {h}]" if single else f"[{b}, {d}, {h}]"
    messages = {
        status.NAN: f"NaN at scores{index} (arc {h} -> {d})",
        status.POSINF: f"+inf at scores{index} (arc {h} -> {d})",
        status.HUGE: (
            f"scores{index} (arc {h} -> {d}) is finite but beyond +-{status.MAX_SCORE:g}: sums "
            "of a tree's scores would overflow (forbid an arc with -inf)"
        ),
        status.NO_HEAD: f"word {d} has no finite head score: every arc into it is -inf",
        status.NO_ROOT_ARC: "no word can attach to ROOT: column 0 is all -inf",
        **reasons,
    }
    return ValueError(f"{_prefix(b)}{messages[code]}")


def _run(
    algorithm: int,
    scores: npt.ArrayLike,
    lengths: npt.ArrayLike | None,
    root_constraint: bool,
    reasons: dict[int, str],
) -> IntArray:
    root_constraint = check_flag(root_constraint, "root_constraint")
    array = _as_scores(scores)
    if array.ndim == 2:
        if lengths is not None:
            raise ValueError("lengths is only for batched scores float[B, N+1, N+1]")
        heads = np.full(array.shape[0], -1, dtype=np.int64)
        code, d, h = _drive.decode_single(algorithm, array, root_constraint, heads)
        if code != status.OK:
            raise _error(0, (code, d, h), True, reasons)
        return heads
    sizes = _lengths(lengths, array.shape[0], array.shape[1] - 1)
    heads, where = _drive.decode(algorithm, array, sizes, root_constraint)
    failed = np.flatnonzero(where[:, 0])
    if failed.size:
        raise _error(int(failed[0]), where[failed[0]], False, reasons)
    return heads


_NO_TREE = "no spanning tree exists: the -inf masks cut some word off from ROOT"


def _cut_off(matrix: FloatArray) -> bool:
    """Whether the ``-inf`` masks of ``matrix`` float[n+1, n+1] cut some word off from ROOT.

    A word no path of allowed arcs (``matrix[dependent, head] > -inf``) reaches from ROOT has
    no tree at all, single-rooted or not, projective or not.
    """
    allowed = matrix > -np.inf
    reached = np.zeros(matrix.shape[0], dtype=np.bool_)
    reached[0], frontier = True, [0]
    while frontier:
        found = allowed[:, frontier.pop()] & ~reached
        reached |= found
        frontier.extend(np.flatnonzero(found).tolist())
    return not reached.all()


_NO_SINGLE_ROOT = "no tree with a single root exists under the -inf masks"


def mst(
    scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None, *, root_constraint: bool = True
) -> IntArray:
    """Maximum spanning tree per sentence (Tarjan 1977; Gabow & Tarjan 1984 for one root).

    Exact in O(n^2) per sentence, projective or not. With ``root_constraint`` the result is the
    best tree with exactly one word on ROOT (Zmigrod et al. 2020), as UD requires; without it the
    best arborescence, which may attach several words to ROOT (Chu & Liu 1965; Edmonds 1967).

    Args:
        scores: float[B, N+1, N+1] or float[n+1, n+1] (float16, float32 or float64; any
            array-like, such as a CPU tensor without grad); ``scores[..., d, h]`` scores the arc
            h -> d. Row 0, the diagonal and padding are ignored; ``-inf`` forbids an arc.
        lengths: int[B], words per sentence excluding ROOT. Defaults to N for every sentence.
        root_constraint: exactly one word attaches to ROOT if True.

    Returns:
        int64 heads shaped like ``scores[..., 0]``; ``-1`` at ROOT and at padding.

    Raises:
        ValueError: on a bad shape or dtype, a tensor that requires grad, lives off the CPU or
            holds bfloat16, lengths outside [1, N], a ``root_constraint`` that is not a bool,
            NaN or +inf inside a sentence, or when the ``-inf`` masks leave no (single-rooted)
            tree. The message names the sentence.
    """
    reasons = {status.NO_TREE: _NO_TREE, status.NO_SINGLE_ROOT: _NO_SINGLE_ROOT}
    return _run(_codes.MST, scores, lengths, root_constraint, reasons)


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
        _codes.EISNER,
        scores,
        lengths,
        root_constraint,
        {status.NO_TREE: f"{reason} exists under the -inf masks"},
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
    return _run(_codes.GREEDY, scores, lengths, False, {})


def _best_of_roots(scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None) -> IntArray:
    """Exact single-root MST by trying every root word (O(n^3)); for tests and benchmarks only."""
    reasons = {status.NO_TREE: _NO_TREE, status.NO_SINGLE_ROOT: _NO_SINGLE_ROOT}
    return _run(_codes.BEST_OF_ROOTS, scores, lengths, True, reasons)


def _greedy_ignoring_root(
    scores: npt.ArrayLike, lengths: npt.ArrayLike | None = None, *, root_constraint: bool = True
) -> IntArray:
    check_flag(root_constraint, "root_constraint")  # read by no argmax, but "no" is no flag
    return greedy(scores, lengths)


DECODERS: dict[str, Callable[..., IntArray]] = {
    "mst": mst,
    "eisner": eisner,
    "greedy": _greedy_ignoring_root,
}
"""The decoder menu: name -> ``f(scores, lengths=None, *, root_constraint=True) -> heads``."""


def decode(
    scores: npt.ArrayLike,
    lengths: npt.ArrayLike | None = None,
    *,
    algorithm: str = "mst",
    root_constraint: bool = True,
) -> IntArray:
    """Decode with the decoder named ``algorithm`` in :data:`DECODERS` (the one entry point).

    Args:
        scores: as :func:`mst`.
        lengths: as :func:`mst`.
        algorithm: ``"mst"`` (non-projective, :func:`mst`), ``"eisner"`` (projective,
            :func:`eisner`) or ``"greedy"`` (argmax per word, :func:`greedy`; may not be a tree,
            and ignores ``root_constraint``).
        root_constraint: exactly one word attaches to ROOT (mst and eisner).

    Raises:
        ValueError: for an unknown algorithm, and as the chosen decoder.
    """
    check_algorithm(algorithm)
    return DECODERS[algorithm](scores, lengths, root_constraint=root_constraint)


def check_algorithm(algorithm: str) -> None:
    """Raise a ValueError naming the menu if ``algorithm`` is not a key of :data:`DECODERS`."""
    if not isinstance(algorithm, str) or algorithm not in DECODERS:  # ["mst"]: unhashable
        raise ValueError(f"algorithm={algorithm!r}; expected one of {', '.join(DECODERS)}")
