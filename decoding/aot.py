"""The batch decoders compiled ahead of time, for processes that never import numba.

Importing numba costs a process about 65 MiB and its first call of any cached kernel about 60 MiB
more (numba's typing and lowering registries, llvmlite), before a single sentence is decoded: half
the resident memory of ``predict.py runtime=onnx``. ``python -m decoding.aot`` (and ``python -m
biaffine.export``) compiles the very same kernels of :mod:`decoding._batch` into a Python
extension module with numba's ahead-of-time compiler (``numba.pycc``); loading it imports neither
numba nor llvmlite.

A process decodes with the build once it calls ``decoding.use_compiled()``, as ``runtime=onnx``
does; others keep numba's JIT kernels, which decode a batch on several threads (an ahead-of-time
function holds the GIL). Both give the same heads: ``tests/decoding/test_aot.py``.

A build is named by a hash of :mod:`decoding`'s sources, numba's version and the Python ABI, so a
changed kernel is never served from an old build. It lives where numba keeps its cache:
``$NUMBA_CACHE_DIR`` when set, else ``decoding/__pycache__``. It is compiled for a generic x86-64
(or whatever the machine is), not for the building machine's CPU, so a shared folder serves any
CPU of that architecture.

Usage: ``python -m decoding.aot`` prints the build's path (compiling it first if missing, about
30 s of one core and 260 MiB).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import sys
import tempfile
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._codes import ALGORITHMS, Where
from .types import BoolArray, FloatArray, IntArray

__all__ = ["Compiled", "build", "ensure", "load", "path"]

PACKAGE = Path(__file__).parent

# One signature for every entry point, as decoding._drive calls them: scores float64[B, N+1, N+1],
# lengths int64[B], root_constraint, heads int64[B, N+1], where int64[B, 3], claimed bool[blocks],
# start. Every array is C-contiguous (decoding.api makes them so).
SIGNATURE = "void(f8[:, :, ::1], i8[::1], b1, i8[:, ::1], i8[:, ::1], b1[::1], i8)"

Blocks = Callable[[FloatArray, IntArray, bool, IntArray, IntArray, BoolArray, int], None]
Single = Callable[[FloatArray, bool, IntArray], Where]


@dataclass(frozen=True, slots=True)
class Compiled:
    """The entry points of a build, by algorithm code (``decoding._codes.MST``...).

    Attributes:
        blocks: as ``decoding._batch.BLOCKS``.
        single: as ``decoding._batch.SINGLE``: one matrix decoded as a batch of one.
    """

    blocks: dict[int, Blocks]
    single: dict[int, Single]


def _key() -> str:
    """Hex digest of what the machine code depends on: the sources, numba, the Python ABI."""
    digest = hashlib.sha256()
    for source in sorted(PACKAGE.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    numba = importlib.metadata.version("numba")  # its metadata: importing it is what we avoid
    digest.update("\0".join((numba, sys.implementation.cache_tag, platform.machine())).encode())
    return digest.hexdigest()[:16]


def _name() -> str:
    return f"_decoders_{_key()}"


def _folder() -> Path:
    cache = os.environ.get("NUMBA_CACHE_DIR")
    return Path(cache) if cache else PACKAGE / "__pycache__"


def path() -> Path:
    """Where this version's build lives (whether or not it has been built)."""
    return _folder() / (_name() + importlib.machinery.EXTENSION_SUFFIXES[0])


def _single(blocks: Blocks) -> Single:
    """A one-matrix entry point from a batch one: the same checks and kernel, a batch of one."""

    def single(matrix: FloatArray, root_constraint: bool, heads: IntArray) -> Where:
        where = np.zeros((1, 3), dtype=np.int64)
        lengths = np.array([matrix.shape[0] - 1], dtype=np.int64)
        claimed = np.zeros(1, dtype=np.bool_)
        blocks(matrix[None], lengths, root_constraint, heads[None], where, claimed, 0)
        code, d, h = where[0].tolist()
        return code, d, h

    return single


def load() -> Compiled | None:
    """This version's build, or None where it has not been built (``python -m decoding.aot``).

    A file the dynamic loader refuses (truncated, or of another platform) counts as no build:
    ``python -m decoding.aot`` replaces it.
    """
    file = path()
    if not file.is_file():
        return None
    spec = importlib.util.spec_from_file_location(file.name.split(".")[0], file)
    if spec is None or spec.loader is None:
        return None
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return _entries(module)
    except (ImportError, OSError, AttributeError):  # dlopen's "file too short", a missing entry
        return None


def _entries(module: types.ModuleType) -> Compiled:
    blocks = {code: getattr(module, f"{name}_blocks") for code, name in ALGORITHMS.items()}
    return Compiled(blocks, {code: _single(run) for code, run in blocks.items()})


def build() -> Path:
    """Compile this version's build (about 30 s of one core).

    Written atomically: a process that loads it meanwhile sees the whole file or none.

    Raises:
        OSError: the folder cannot be written.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc warns that it is pending deprecation
        from numba.pycc import CC

    from . import _batch  # numba: only the build needs it

    target = path()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        cc = CC(_name())
        cc.output_dir = scratch
        cc.verbose = False
        for name in ALGORITHMS.values():
            cc.export(f"{name}_blocks", SIGNATURE)(getattr(_batch, f"_{name}_blocks").py_func)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cc.compile()
        built = Path(scratch) / target.name
        os.replace(built, target)
        shutil.rmtree(Path(scratch) / "build", ignore_errors=True)
    return target


def ensure() -> Path:
    """This version's build, compiled first if missing or unloadable (:func:`load`)."""
    return path() if load() is not None else build()


def main() -> int:
    """``python -m decoding.aot``: print the build's path; exit 2, in one line, if unwritable.

    A read-only install without ``NUMBA_CACHE_DIR`` cannot hold the build beside its sources:
    say so and what to set, rather than a traceback.
    """
    try:
        print(ensure())
    except OSError as error:
        print(
            f"decoding.aot: cannot write the build to {_folder()} ({error.strerror or error}): "
            "set NUMBA_CACHE_DIR to a writable folder",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
