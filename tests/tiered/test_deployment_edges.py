"""Deployment edges: no writable cache folder, a corrupted cache, an unwritable build folder.

Each test runs a fresh interpreter on a tiny kernel of its own (a second of compilation), in a
folder of its own, with every cache location numba would use pointed at ``tmp_path``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from compiled import POSIX_WITH_JIT

ROOT = Path(__file__).parents[2]

pytestmark = POSIX_WITH_JIT

KERNEL = """
import numba

@numba.njit(cache=True)
def inner(x):
    return x + 1

@numba.njit(cache=True)
def outer(x):
    return inner(x) * 2
"""

# Calls the kernel through its entry point, waits for the background compiler, calls it again.
# Imports tiered first, as the project's kernel modules are imported (after ``from tiered ...``).
CALL = """
import tiered, kernel
tiered.prefer_machine_code()  # a call this small would run interpreted
entry = tiered.tiered(kernel.outer)
first = entry(3)
entry.wait()
print(first, entry(3), entry.is_compiled)
"""


def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment, with every cache and lock location under ``tmp_path``."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("ROOTPARSE_COMPILE", "NUMBA_CACHE_DIR")
    }
    return {
        **environment,
        "PYTHONPATH": os.pathsep.join((str(tmp_path / "code"), str(ROOT))),
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_CACHE_HOME": str(tmp_path / "home-cache"),
        **extra,
    }


def _run(tmp_path: Path, script: str, **extra: str) -> subprocess.CompletedProcess[str]:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "kernel.py").write_text(KERNEL)
    return subprocess.run(
        [sys.executable, "-c", script],
        env=_environment(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_any_writable_cache_folder_the_kernel_still_runs_and_compiles(
    tmp_path: Path,
) -> None:
    # A read-only install with an unwritable home: numba finds no folder to cache in (neither
    # ``__pycache__`` beside the sources nor ``$XDG_CACHE_HOME/numba``: a file blocks each), and
    # its ``njit(cache=True)`` refused to define the kernel at import.
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "__pycache__").write_text("not a folder")
    (tmp_path / "home-cache").write_text("not a folder")
    done = _run(tmp_path, CALL)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["8", "8", "True"]


def test_a_truncated_cache_index_is_recompiled_not_raised(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = _run(tmp_path, CALL, NUMBA_CACHE_DIR=str(cache))
    assert done.returncode == 0, done.stderr[-3000:]
    indexes = list(cache.rglob("*.nbi"))
    assert len(indexes) == 2  # inner and outer
    for index in indexes:  # e.g. a disk that filled up, or a copy cut short
        index.write_bytes(index.read_bytes()[:10])
    again = _run(tmp_path, CALL, NUMBA_CACHE_DIR=str(cache))
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stdout.split() == ["8", "8", "True"]
    # ... and the cache healed: the next process loads the machine code at once.
    healed = _run(tmp_path, CALL.replace("entry.wait()", ""), NUMBA_CACHE_DIR=str(cache))
    assert healed.stdout.split() == ["8", "8", "True"], healed.stderr[-3000:]


def test_an_unwritable_build_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    done = subprocess.run(
        [sys.executable, "-m", "decoding.aot"],
        cwd=ROOT,
        env=_environment(tmp_path, NUMBA_CACHE_DIR=str(blocker / "cache")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "NUMBA_CACHE_DIR" in line
    assert str(blocker) in line


def test_an_unknown_compile_mode_is_refused_by_name() -> None:
    # ROOTPARSE_COMPILE=forground (a typo) was read as the default, background, silently.
    code = "import decoding, numpy as np; decoding.mst(np.random.rand(4, 4))"
    env = {**os.environ, "ROOTPARSE_COMPILE": "forground"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "ROOTPARSE_COMPILE='forground': expected background or foreground" in done.stderr
