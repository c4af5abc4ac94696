"""Output files written atomically: a temporary file beside the destination, renamed at the end.

A reader, a crash or a second writer never sees half a file: the destination holds its old
content until the new one is complete, then the new one whole. Two runs writing the same path
each rename a complete file of their own, so the last one to finish wins and nothing is mixed.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_open", "fsync_dir", "umask_mode"]


def umask_mode() -> int:
    """The mode a new file gets from ``open()`` under the process umask (``0o666 & ~umask``)."""
    # os.umask can only be read by setting it; set it straight back (one thread at start-up).
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **options: Any) -> Iterator[IO]:
    """Open a temporary file in ``path``'s folder; on success, flush, fsync and rename it there.

    On an exception in the ``with`` block the temporary file is removed and ``path`` is left as
    it was. The file gets the mode a plain ``open()`` would give it (the umask applies;
    ``tempfile.mkstemp`` alone would make it 0600). A symbolic link at ``path`` is followed: its
    target is replaced, as writing through the link would.

    Args:
        path: destination file; its folder must exist.
        mode: ``"w"`` (text) or ``"wb"`` (binary).
        **options: passed to :func:`open`, e.g. ``encoding="utf-8", newline=""``.

    Raises:
        FileNotFoundError: if the destination folder does not exist.
    """
    target = Path(os.path.realpath(path))
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, umask_mode())
        with open(fd, mode, **options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name)
        raise
    fsync_dir(target.parent)


def fsync_dir(folder: Path) -> None:
    """Persist a rename in ``folder`` (POSIX); not possible on every platform, hence best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
