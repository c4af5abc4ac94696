"""The background compilers' lock: in a private folder, never through a link, never a blocker."""

from __future__ import annotations

import os
import pickle
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from compiled import POSIX_WITH_JIT

from tiered import lock

ROOT = Path(__file__).parents[2]

pytestmark = POSIX_WITH_JIT

KERNEL = """
import numba

@numba.njit(cache=True)
def plus_one(x):
    return x + 1
"""


def _compile_in_background(tmp_path: Path, temp: Path, runtime: Path | None = None) -> Path:
    """Run ``python -m tiered`` on a one-line kernel with ``temp`` as TMPDIR; its numba cache."""
    (tmp_path / "kernel_module.py").write_text(KERNEL)
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env |= {"TMPDIR": str(temp), "NUMBA_CACHE_DIR": str(cache)}
    env |= {"PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    env |= {"XDG_RUNTIME_DIR": str(runtime)} if runtime is not None else {}
    import numba

    request = pickle.dumps(("kernel_module", "plus_one", (numba.int64,)))
    done = subprocess.run(
        [sys.executable, "-m", "tiered"], input=request, env=env, capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return cache


def _compiled(cache: Path) -> bool:
    return any(cache.rglob("*plus_one*.nbi")) and any(cache.rglob("*.nbc"))


@pytest.mark.parametrize("planted", ["link", "folder"])
def test_the_old_lock_path_is_neither_followed_nor_needed(tmp_path: Path, planted: str) -> None:
    # The old lock, a fixed name in the shared folder: a link there made the compiler create
    # the link's target; anything there that cannot be opened kept every kernel uncompiled.
    temp, victim = tmp_path / "tmp", tmp_path / "victim"
    temp.mkdir()
    old = temp / f"rootparse-compile-{os.getuid()}.lock"
    if planted == "link":
        old.symlink_to(victim)
    else:
        old.mkdir()
    cache = _compile_in_background(tmp_path, temp)
    assert not victim.exists()
    assert _compiled(cache)
    assert (temp / f"rootparse-{os.getuid()}" / lock.LOCK_NAME).is_file()


@pytest.mark.parametrize("planted", ["link", "open folder", "file"])
def test_a_lock_folder_that_is_not_private_is_not_used_and_the_kernel_still_compiles(
    tmp_path: Path, planted: str
) -> None:
    temp, elsewhere = tmp_path / "tmp", tmp_path / "elsewhere"
    temp.mkdir()
    elsewhere.mkdir(mode=0o700)
    folder = temp / f"rootparse-{os.getuid()}"
    if planted == "link":  # a link to a folder of this user's: still not the folder itself
        folder.symlink_to(elsewhere)
    elif planted == "open folder":
        folder.mkdir()
        folder.chmod(0o777)
    else:
        folder.write_text("")
    cache = _compile_in_background(tmp_path, temp)
    assert _compiled(cache)
    assert list(elsewhere.iterdir()) == []
    if planted == "open folder":
        assert list(folder.iterdir()) == []


def test_a_private_runtime_folder_holds_the_lock(tmp_path: Path) -> None:
    temp, runtime = tmp_path / "tmp", tmp_path / "run"
    temp.mkdir()
    runtime.mkdir(mode=0o700)
    cache = _compile_in_background(tmp_path, temp, runtime)
    assert _compiled(cache)
    assert (runtime / lock.LOCK_NAME).is_file()
    assert list(temp.iterdir()) == []


def test_the_lock_folder_is_created_0700_and_owned_by_the_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    previous = os.umask(0)  # the mode must not rest on the caller's umask
    try:
        folder = lock.lock_folder()
    finally:
        os.umask(previous)
    assert folder == str(tmp_path / f"rootparse-{os.getuid()}")
    info = os.lstat(folder)
    assert stat.S_ISDIR(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o700
    assert info.st_uid == os.getuid()
    with lock.compile_lock() as held:
        assert held
    assert stat.S_IMODE(os.lstat(Path(folder) / lock.LOCK_NAME).st_mode) == 0o600


def test_an_open_runtime_folder_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir()
    runtime.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    assert lock.lock_folder() == str(tmp_path / "tmp" / f"rootparse-{os.getuid()}")
