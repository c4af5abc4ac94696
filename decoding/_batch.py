"""Batch kernels: check and copy each sentence and decode it (:mod:`decoding._drive` calls them).

The loops are cached, GIL-free numba functions run on a few Python threads, instead of
``parallel=True`` drivers: those cannot be cached safely (numba #8578) and recompiling them cost
every process 10-30 s before its first decode. Each sentence is decoded on its own contiguous
copy with row 0 and the diagonal set to ``-inf``, so the kernels never see NaN there, and the copy
doubles as the value check (NaN, +inf, words without a finite head) that :mod:`decoding.api`
turns into error messages. The one exception is a sentence that fills its matrix, decoded by MST:
it is only checked, since the MST kernel never reads row 0 or the diagonal.
"""

from __future__ import annotations

import numba
import numpy as np

from tiered import cubic_work, tiered

from ._codes import BEST_OF_ROOTS, BLOCK, EISNER, GREEDY, MST, Where
from ._eisner import eisner_kernel
from .baselines import best_of_roots_kernel
from .status import HUGE, MAX_SCORE, NAN, NO_HEAD, NO_ROOT_ARC, OK, POSINF
from .tarjan import mst_kernel
from .trees import greedy_kernel
from .types import BoolArray, FloatArray, IntArray


@numba.njit(cache=True, nogil=True)
def _copy(sentence: FloatArray, n: int, need_root: bool, where: IntArray) -> FloatArray:
    """``sentence[:n+1, :n+1]`` as a contiguous float64[n+1, n+1], row 0 and diagonal ``-inf``.

    Checks values on the way, as :func:`_check` does.
    """
    matrix = np.empty((n + 1, n + 1))
    matrix[0, :] = -np.inf
    for d in range(1, n + 1):
        matrix[d, d] = -np.inf
    _check(sentence, n, need_root, where, matrix)
    return matrix


@numba.njit(cache=True, nogil=True)
def _check(
    sentence: FloatArray, n: int, need_root: bool, where: IntArray, copy: FloatArray
) -> None:
    """Check the first n words of ``sentence`` [N+1, N+1], copying them into ``copy`` [n+1, n+1].

    Copies nothing if ``copy`` is empty.

    Sets ``where = (status, d, h)`` for the first NaN, else the first +inf, else the first
    finite score beyond :data:`MAX_SCORE`, else the first word without a finite head, else (if
    ``need_root``) a ROOT column without any finite arc; leaves ``where[0] = OK`` otherwise.
    Row 0 and the diagonal are neither checked nor copied.
    """
    clean = True  # no NaN, +inf or huge score so far
    no_head = -1
    root_arcs = 0
    for d in range(1, n + 1):
        # Two spans around the diagonal, so the inner loops test nothing but the values.
        clean_left, best_left = _copy_span(sentence, d, 0, d, copy)
        clean_right, best_right = _copy_span(sentence, d, d + 1, n + 1, copy)
        clean = clean & clean_left & clean_right
        if max(best_left, best_right) == -np.inf and no_head < 0:
            no_head = d
        root_arcs += sentence[d, 0] > -np.inf
    where[0] = OK
    if not clean:  # rare: find the first NaN, else the first +inf, ..., in a second pass
        _locate_invalid(sentence, n, where)
    elif no_head >= 0:
        where[0], where[1], where[2] = NO_HEAD, no_head, 0
    elif need_root and root_arcs == 0:
        where[0] = NO_ROOT_ARC


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_span(
    sentence: FloatArray, d: int, lo: int, hi: int, matrix: FloatArray
) -> tuple[bool, float]:
    """Whether ``sentence[d, lo:hi]`` is free of NaN, +inf and huge scores, and its maximum.

    Copies the span into ``matrix`` unless that is empty.
    """
    copy = matrix.shape[0] > 0  # the same for every h: compiled as two loops, one per case
    clean = True
    best = -np.inf
    for h in range(lo, hi):
        value = sentence[d, h]
        if copy:
            matrix[d, h] = value
        # The first test rules out NaN and +inf too; -inf passes (a mask), -1e308 does not.
        clean = clean & (value <= MAX_SCORE) & ((value >= -MAX_SCORE) | (value == -np.inf))
        best = max(best, value)
    return clean, best


@numba.njit(cache=True, nogil=True)
def _locate_invalid(sentence: FloatArray, n: int, where: IntArray) -> None:
    """``where = (status, d, h)`` of the first NaN off the diagonal, else of the first +inf.

    Else of the first finite score beyond :data:`MAX_SCORE` (``HUGE``).
    """
    for status in (NAN, POSINF, HUGE):
        for d in range(1, n + 1):
            for h in range(n + 1):
                if h != d and _is_invalid(status, sentence[d, h]):
                    where[0], where[1], where[2] = status, d, h
                    return


@numba.njit(cache=True, nogil=True, inline="always")
def _is_invalid(status: int, value: float) -> bool:
    if status == NAN:
        return np.isnan(value)
    if status == POSINF:
        return value == np.inf
    return abs(value) > MAX_SCORE and value != -np.inf


# The drivers below are inlined (at numba's level) into one pair of entry points per algorithm,
# where ``algorithm`` is a constant: numba then drops the other algorithms' branches before
# typing them, so a process compiles only the kernels it calls. Each entry point is compiled
# once, with the kernels linked in; a kernel called from a separately compiled layer in between
# would be optimised once more for every such layer.


@numba.njit(cache=True, nogil=True, inline="always")
def _decode_one(algorithm: int, matrix: FloatArray, root_constraint: bool, heads: IntArray) -> int:
    if algorithm == MST:
        return mst_kernel(matrix, root_constraint, heads)
    if algorithm == EISNER:
        return eisner_kernel(matrix, root_constraint, heads)
    if algorithm == GREEDY:
        return greedy_kernel(matrix, heads)
    return best_of_roots_kernel(matrix, heads)


@numba.njit(cache=True, nogil=True, inline="always")
def _checked(algorithm: int, sentence: FloatArray, n: int, where: IntArray) -> FloatArray:
    """The matrix to decode the first n words of ``sentence`` [N+1, N+1] from, once checked.

    A copy, unless MST decodes a sentence that fills its matrix: the MST kernel never reads row 0
    or the diagonal, so it decodes a contiguous matrix in place, only checked.
    """
    need_root = algorithm != GREEDY  # a variable, so _check and _copy see a plain bool
    if algorithm == MST and n + 1 == sentence.shape[0]:
        _check(sentence, n, need_root, where, np.empty((0, 0)))
        return sentence
    return _copy(sentence, n, need_root, where)


@numba.njit(cache=True, nogil=True, inline="always")
def _decode_sentence(
    algorithm: int,
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    b: int,
) -> None:
    """Check, copy (see :func:`_checked`) and decode sentence b.

    Writes ``heads[b]`` [N+1] (only if decoding succeeds) and ``where[b]`` [3].
    """
    n = lengths[b]
    matrix = _checked(algorithm, scores[b], n, where[b])
    if where[b, 0] != OK:
        return
    sentence = np.empty(n + 1, dtype=np.int64)
    where[b, 0] = _decode_one(algorithm, matrix, root_constraint, sentence)
    if where[b, 0] == OK:
        for d in range(1, n + 1):  # a loop: slice assignment compiles numba's shape errors
            heads[b, d] = sentence[d]


@numba.njit(cache=True, nogil=True, inline="always")
def _decode_blocks(
    algorithm: int,
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    claimed: BoolArray,
    start: int,
) -> None:
    """Decode each block of ``BLOCK`` consecutive sentences that no other thread has claimed.

    ``claimed`` is bool[ceil(B / BLOCK)], shared by the threads. Each walks the blocks from its
    own ``start`` (so that they do not all begin on block 0), wrapping around, and takes every
    free one it meets (a dynamic schedule): a thread that starts late or gets less of the CPU
    takes fewer blocks instead of holding up the batch. A claim is a plain read then write, not
    an atomic operation: two threads that reach the same block at the same instant both decode
    it, into the same values, so the result stays exact.
    """
    batch = scores.shape[0]
    blocks = claimed.shape[0]
    for i in range(blocks):
        block = (start + i) % blocks
        if claimed[block]:
            continue
        claimed[block] = True
        for b in range(block * BLOCK, min((block + 1) * BLOCK, batch)):
            _decode_sentence(algorithm, scores, lengths, root_constraint, heads, where, b)


@numba.njit(cache=True, nogil=True, inline="always")
def _decode_single(
    algorithm: int, matrix: FloatArray, root_constraint: bool, heads: IntArray
) -> Where:
    where = np.zeros(3, dtype=np.int64)
    matrix = _checked(algorithm, matrix, matrix.shape[0] - 1, where)
    if where[0] == OK:
        where[0] = _decode_one(algorithm, matrix, root_constraint, heads)
    return where[0], where[1], where[2]


# Entry points: (one matrix, blocks of a batch) per algorithm; see decode_single and decode.


@numba.njit(cache=True, nogil=True)
def _mst_single(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> Where:
    return _decode_single(MST, matrix, root_constraint, heads)


@numba.njit(cache=True, nogil=True)
def _mst_blocks(
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    claimed: BoolArray,
    start: int,
) -> None:
    _decode_blocks(MST, scores, lengths, root_constraint, heads, where, claimed, start)


@numba.njit(cache=True, nogil=True)
def _eisner_single(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> Where:
    return _decode_single(EISNER, matrix, root_constraint, heads)


@numba.njit(cache=True, nogil=True)
def _eisner_blocks(
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    claimed: BoolArray,
    start: int,
) -> None:
    _decode_blocks(EISNER, scores, lengths, root_constraint, heads, where, claimed, start)


@numba.njit(cache=True, nogil=True)
def _greedy_single(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> Where:
    return _decode_single(GREEDY, matrix, root_constraint, heads)


@numba.njit(cache=True, nogil=True)
def _greedy_blocks(
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    claimed: BoolArray,
    start: int,
) -> None:
    _decode_blocks(GREEDY, scores, lengths, root_constraint, heads, where, claimed, start)


@numba.njit(cache=True, nogil=True)
def _best_of_roots_single(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> Where:
    return _decode_single(BEST_OF_ROOTS, matrix, root_constraint, heads)


@numba.njit(cache=True, nogil=True)
def _best_of_roots_blocks(
    scores: FloatArray,
    lengths: IntArray,
    root_constraint: bool,
    heads: IntArray,
    where: IntArray,
    claimed: BoolArray,
    start: int,
) -> None:
    _decode_blocks(BEST_OF_ROOTS, scores, lengths, root_constraint, heads, where, claimed, start)


# Tiered (see tiered): in a fresh environment they run as plain Python while a
# background process compiles them into numba's cache. decoding.aot compiles the same functions
# ahead of time, for a process that never imports numba.
SINGLE = {
    MST: tiered(_mst_single),
    EISNER: tiered(_eisner_single, work=cubic_work),
    GREEDY: tiered(_greedy_single),
    BEST_OF_ROOTS: tiered(_best_of_roots_single),
}
BLOCKS = {
    MST: tiered(_mst_blocks),
    EISNER: tiered(_eisner_blocks, work=cubic_work),
    GREEDY: tiered(_greedy_blocks),
    BEST_OF_ROOTS: tiered(_best_of_roots_blocks),
}
