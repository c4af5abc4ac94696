"""Process set-up shared by training and prediction: the device, CPU threads and random seeds."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import torch

from biaffine.cli import check_threads

__all__ = [
    "best_seconds",
    "check_bf16",
    "check_device",
    "cpu_description",
    "one_thread",
    "seed_everything",
    "select_device",
    "set_threads",
]


def select_device(device: str) -> torch.device:
    """The torch device named by ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (cuda when available).

    Raises:
        ValueError: if that device is not on this machine (see :func:`check_device`).
    """
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return check_device(device)


def check_device(device: str | torch.device) -> torch.device:
    """``device`` as a torch device, refused now if this machine lacks it.

    Without the check, a missing GPU surfaces deep inside ``torch.load`` or the first batch,
    in words that suggest a broken checkpoint.

    Raises:
        ValueError: an unknown device name, or a CUDA device that is not present.
    """
    try:
        device = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device={device!r}: {error}") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if (device.index or 0) >= count:
            raise ValueError(
                f"device={device} is not available: this machine has {count} CUDA device(s); "
                "use device=cpu (or device=auto)"
            )
    return device


def set_threads(threads: int | None) -> None:
    """Set torch's CPU thread count; None keeps torch's default.

    Raises:
        ValueError: for a count :func:`check_threads` refuses (torch's own error is a traceback).
    """
    check_threads(threads)
    if threads is not None:
        torch.set_num_threads(threads)


# torch's count of each thread is its own (OpenMP's, set per thread), but a thread reads the
# last count set anywhere the first time it calls torch. So overlapping blocks on different
# threads share one saved count, read before the first entered: one reading its own count
# inside another's block would read that block's 1. Each thread sets its own count to 1 and
# restores the saved count when its outermost block ends; restoring only when the last block
# of all ends would leave the others' threads (a server's pool) on 1 for good.
_one_thread_lock = threading.Lock()
_one_thread_depth = 0
_one_thread_saved = 1
_one_thread_nesting = threading.local()  # .depth: this thread's open blocks


@contextlib.contextmanager
def one_thread() -> Iterator[int]:
    """Run the block on one torch CPU thread, then restore the count it had, which it yields.

    Safe to overlap from several threads: the count before the first of the overlapping blocks
    is yielded to each, and each thread has it again when its own (outermost) block ends.
    """
    global _one_thread_depth, _one_thread_saved
    nesting = getattr(_one_thread_nesting, "depth", 0)
    with _one_thread_lock:
        # Read on every thread: a thread's first read sets its count to the last one set
        # anywhere, which would undo the 1 set below if it came inside the block.
        own = torch.get_num_threads()
        if _one_thread_depth == 0:
            _one_thread_saved = own
        _one_thread_depth += 1
        threads = _one_thread_saved
        torch.set_num_threads(1)
    _one_thread_nesting.depth = nesting + 1
    try:
        yield threads
    finally:
        _one_thread_nesting.depth = nesting
        with _one_thread_lock:
            _one_thread_depth -= 1
            if nesting == 0:
                torch.set_num_threads(threads)


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's legacy global and torch's random number generators."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002  (legacy global RNG, for any third-party code using it)
    torch.manual_seed(seed)


def check_bf16(device: torch.device, setting: str = "bf16") -> None:
    """Refuse bfloat16 on a CPU without native support, before oneDNN fails with its own words.

    Without AVX512-BF16 or AMX, oneDNN has no bfloat16 LSTM ("could not create a primitive
    descriptor"); emulated, it would be slower than float32 anyway.

    Args:
        device: where the network runs.
        setting: the option the error names (``bf16`` of prediction, ``trainer.bf16``).

    Raises:
        ValueError: on a CPU device that lacks native bfloat16.
    """
    if device.type == "cpu" and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        capability = torch.backends.cpu.get_cpu_capability()
        raise ValueError(
            f"{setting}=true needs a CPU with native bfloat16 (AVX512-BF16 or AMX); this one "
            f"offers {capability}: run in float32 ({setting}=false)"
        )


def cpu_description() -> str:
    """The CPU behind a timing: model name, logical CPUs and its widest x86 vector extension.

    Read from ``/proc/cpuinfo`` (Linux); elsewhere the model is "unknown CPU".
    """
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    model = next((ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")), "")
    flags = set(next((ln.split(":", 1)[1] for ln in lines if ln.startswith("flags")), "").split())
    simd = next((f for f in ("avx512f", "avx2", "avx") if f in flags), None)
    vector = {"avx512f": "AVX-512", "avx2": "AVX2, no AVX-512", "avx": "AVX, no AVX2"}
    details = [f"{os.cpu_count()} logical CPUs", vector.get(simd, "no AVX")]
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        details.append("native bf16")
    return f"{model or 'unknown CPU'} ({', '.join(details)})"


def best_seconds(run: Callable[[], object], rounds: int = 3) -> float:
    """The shortest wall time of ``rounds`` calls of ``run()``: the least disturbed by load."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)
