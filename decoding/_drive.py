"""Batch drivers: spread a batch's sentences over threads and run the kernels on them.

The kernels (:mod:`decoding._batch`) check, copy and decode each sentence. They come from one of
two places (:func:`kernels`): numba's JIT (through :mod:`tiered`), imported on the first decode,
or the ahead-of-time build of the same functions (:mod:`decoding.aot`) once a process asks for it
(:func:`use_compiled`). This module imports neither, so ``import decoding`` costs no numba.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._codes import BLOCK, Where
from .types import FloatArray, IntArray

# Below this many score entries in a batch, threads cost more than they save.
_MIN_PARALLEL_WORK = 50_000


@dataclass(frozen=True, slots=True)
class Kernels:
    """The entry points decoding runs, by algorithm code.

    Attributes:
        single: ``f(matrix, root_constraint, heads) -> (status, d, h)``.
        blocks: ``f(scores, lengths, root_constraint, heads, where, claimed, start)``.
        threaded: the entry points release the GIL, so a batch is spread over threads.
    """

    single: dict[int, Callable[..., Any]]
    blocks: dict[int, Callable[..., Any]]
    threaded: bool


_chosen: Kernels | None = None  # set on first use, or by use_compiled


def kernels() -> Kernels:
    """The kernels this process decodes with: numba's JIT unless :func:`use_compiled` was called."""
    global _chosen
    if _chosen is None:
        from . import _batch  # numba

        _chosen = Kernels(_batch.SINGLE, _batch.BLOCKS, threaded=True)
    return _chosen


def use_compiled() -> bool:
    """Decode with the ahead-of-time build (:mod:`decoding.aot`) from now on, if there is one.

    For a process that would import numba only to decode (``predict.py runtime=onnx``): the build
    spares it numba's memory (about 130 MiB) and start-up, and decodes on one thread, since its
    entry points hold the GIL. The heads are the JIT's.

    Returns:
        Whether the build is used; False, changing nothing, where it has not been built.
    """
    global _chosen
    from . import aot

    compiled = aot.load()
    if compiled is None:
        return False
    _chosen = Kernels(compiled.single, compiled.blocks, threaded=False)
    return True


def decode_single(
    algorithm: int, matrix: FloatArray, root_constraint: bool, heads: IntArray
) -> Where:
    """One float64[n+1, n+1] matrix into ``heads`` int64[n+1], unspecified unless status is OK.

    Returns ``(status, d, h)`` as in ``where``. A separate entry point because a numba call costs
    about 1 microsecond per argument, and boxing a returned array as much again: that dominates
    the decoding time of short sentences. The caller's buffer and plain integers avoid the boxing.
    """
    return kernels().single[algorithm](matrix, root_constraint, heads)


def _default_threads() -> int:
    """The NUMBA_NUM_THREADS variable, else the cores this process may use (numba's default)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return int(os.environ.get("NUMBA_NUM_THREADS", 0)) or max(1, cores or 1)


_threads = _default_threads()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def set_num_threads(threads: int) -> None:
    """Decode batches on at most this many threads (default: all cores).

    Plain Python threads, not numba's threading layer: starting that layer would reset the
    OpenMP thread count that PyTorch shares with it.
    """
    global _threads
    # bool is an int, but True is no thread count (it is refused as one everywhere else).
    integer = isinstance(threads, (int, np.integer)) and not isinstance(threads, (bool, np.bool_))
    if not integer or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    _threads = int(threads)


def get_num_threads() -> int:
    """The number of threads batches are decoded on."""
    return _threads


def _executor(threads: int) -> ThreadPoolExecutor:
    """The process's pool, grown to at least ``threads`` workers.

    The pool outlives changes of the thread count: a fresh pool per change would start new
    threads (each with a new malloc arena) inside the next timed call.
    """
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < threads:
            # A caller may still be submitting to the old pool: dropping it (not shutting it
            # down) lets those jobs run; its idle workers exit once it is garbage-collected.
            _pool, _pool_size = ThreadPoolExecutor(max_workers=threads), threads
        return _pool


def decode(
    algorithm: int, scores: FloatArray, lengths: IntArray, root_constraint: bool
) -> tuple[IntArray, IntArray]:
    """Decode every sentence of a checked batch.

    Args:
        algorithm: MST, EISNER, GREEDY or BEST_OF_ROOTS.
        scores: float64[B, N+1, N+1], C-contiguous, dependent-major.
        lengths: int64[B], each in [1, N].
        root_constraint: exactly one word on ROOT (MST and EISNER only).

    Returns:
        heads int64[B, N+1] (-1 at ROOT, padding and failed sentences) and where int64[B, 3]:
        (status, d, h) per sentence, status OK or one of the codes above.
    """
    batch, width = scores.shape[0], scores.shape[1]
    heads = np.full((batch, width), -1, dtype=np.int64)
    where = np.zeros((batch, 3), dtype=np.int64)
    blocks = -(-batch // BLOCK)
    args = (scores, lengths, root_constraint, heads, where, np.zeros(blocks, np.bool_))
    chosen = kernels()
    run = chosen.blocks[algorithm]
    threads = min(_threads, blocks) if chosen.threaded else 1
    if threads <= 1 or int(np.square(lengths).sum()) < _MIN_PARALLEL_WORK:
        run(*args, 0)
        return heads, where
    # The calling thread works too: one thread fewer to wake, and it starts at once.
    pool = _executor(threads - 1)
    jobs = [pool.submit(run, *args, t * blocks // threads) for t in range(1, threads)]
    run(*args, 0)
    for job in jobs:
        job.result()
    return heads, where
