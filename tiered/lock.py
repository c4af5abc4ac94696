"""The lock that makes this user's background compilers take turns, kept where no one else writes.

A fixed name in the shared temporary folder (``/tmp/rootparse-compile-<uid>.lock``, opened
following links) let another user plant a symbolic link there, so that the next compiler, run
as root, created a file wherever the link pointed; with the kernel's link protection the open
failed instead, and since a background compiler's errors are discarded, no kernel compiled.

So the lock file lives in a folder that only this user can write: ``$XDG_RUNTIME_DIR`` (a
per-user folder the login manager creates) or else ``<temporary folder>/rootparse-<uid>``,
created with mode 0700; either is used only if it is a real folder (not a link), owned by this
user and closed to others. The file is opened with ``O_NOFOLLOW``. When no safe lock can be
taken (no such folder, a lock that fails, no ``fcntl`` on Windows) the compiler compiles
without it: processes may then compile the same kernel at once, which costs time, never a
wrong cache (numba replaces its cache files atomically).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator

__all__ = ["LOCK_NAME", "compile_lock", "lock_folder"]

LOCK_NAME = "rootparse-compile.lock"


@contextlib.contextmanager
def compile_lock() -> Iterator[bool]:
    """Hold this user's compile lock for the block; yields whether a lock is held.

    Never raises for want of a lock: the block runs without it (see the module docstring).
    """
    fd = _open_lock()
    if fd is None:
        yield False
        return
    try:
        yield _take(fd)
    finally:
        os.close(fd)  # releases the lock


def lock_folder() -> str | None:
    """The private folder that holds the lock file, created if needed; None if none is safe."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _private(runtime):
        return runtime
    if not hasattr(os, "getuid"):  # no owners to check (Windows): no shared-folder lock
        return None
    folder = os.path.join(tempfile.gettempdir(), f"rootparse-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)  # never follows a link planted at that name
    except FileExistsError:
        pass
    except OSError:
        return None
    return folder if _private(folder) else None


def _private(folder: str) -> bool:
    """Whether ``folder`` is a folder itself (not a link), owned by this user, closed to others."""
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    owner = os.getuid() if hasattr(os, "getuid") else info.st_uid
    return stat.S_ISDIR(info.st_mode) and info.st_uid == owner and not info.st_mode & 0o077


def _open_lock() -> int | None:
    """A descriptor of the lock file in :func:`lock_folder`, never through a link; None if none."""
    folder = lock_folder()
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    if folder is None or not nofollow:
        return None
    flags = os.O_RDWR | os.O_CREAT | nofollow | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(os.path.join(folder, LOCK_NAME), flags, 0o600)
    except OSError:
        return None


def _take(fd: int) -> bool:
    """Wait for the exclusive lock on ``fd``; False if this system cannot lock it."""
    try:
        import fcntl
    except ImportError:  # Windows
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError:  # e.g. a file system without locks
        return False
    return True
