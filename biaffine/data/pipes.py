"""Input read as its writer sends it: lines of a pipe or terminal, and whether more have come.

A reader of a regular file never waits, but one of a pipe may wait for good on a writer that
expects an answer first (a program that sends a sentence and reads its parse before sending
the next). :class:`PipeReader` keeps its own buffer over the file descriptor, so that besides
reading lines it can tell whether the next line is there already (:meth:`PipeReader.waiting`):
the CoNLL-U reader then gives a sentence at its closing blank line rather than at the next
sentence's first line, and ``predict.py`` parses the sentences that have come rather than wait
for a chunk's worth (:func:`biaffine.predicting.predict`).
"""

from __future__ import annotations

import io
import os
import select
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from biaffine.files import standard_input

__all__ = ["PAUSE_SECONDS", "READ_BYTES", "PipeReader", "Waits", "is_special", "open_pipe"]

READ_BYTES = 1 << 16
"""The most bytes one read of the descriptor takes (what a pipe holds is 64 KiB on Linux)."""

PAUSE_SECONDS = 0.05
"""How long the writer may pause before what has come is parsed. A writer of 4 KiB pieces a
millisecond apart left chunks of 30 to 170 EWT sentences when any pause counted, and EWT dev
took 1.8 times as long to parse as from a file; a writer waiting for its answer waits this
long more."""


class Waits(Protocol):
    """What may keep its reader waiting, and says so."""

    def waiting(self) -> bool:
        """Whether what the reader reads next has yet to come."""
        ...


class PipeReader(io.RawIOBase):
    """The bytes of a file descriptor read as they come, line by line.

    Attributes:
        name: the input's name in messages (``<stdin>`` or its path).
    """

    def __init__(
        self,
        fd: int,
        name: str,
        *,
        owned: bool = False,
        counts: Callable[[bytes], bool] | None = None,
    ) -> None:
        """Read ``fd``, closed by :meth:`close` where ``owned`` (else the caller's).

        ``counts``: whether a line (with its LF) is one a reader waits for (None: every line),
        as :meth:`waiting` asks: plain text's reader skips blank lines and waits on.
        """
        super().__init__()
        self.name = name
        self._fd = fd
        self._owned = owned
        self._counts = counts
        self._buffer = bytearray()
        self._ended = False
        self._paused = False  # the last waiting() found nothing, and nothing was read since

    def close(self) -> None:
        """Closes the descriptor where it is this reader's own."""
        if not self.closed and self._owned:
            os.close(self._fd)
        super().close()

    def fileno(self) -> int:
        """The descriptor read."""
        return self._fd

    def readable(self) -> bool:
        """Always: it is a reader."""
        return True

    def readline(self, size: int | None = -1) -> bytes:
        """The next line with its LF, at most ``size`` bytes of it; ``b""`` at the end."""
        limit = size if size is not None and size >= 0 else None
        start = 0
        while True:
            found = self._buffer.find(b"\n", start, limit)
            full = limit is not None and len(self._buffer) >= limit
            if found != -1 or full or self._ended:
                cut = found + 1 if found != -1 else len(self._buffer[:limit])
                line = bytes(self._buffer[:cut])
                del self._buffer[:cut]
                return line
            start = len(self._buffer)  # no line end there: look only at what comes next
            self._fill()

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        """What is buffered, else one read of the descriptor, into ``buffer``."""
        if not self._buffer and not self._ended:
            self._fill()
        count = min(len(buffer), len(self._buffer))
        buffer[:count] = self._buffer[:count]
        del self._buffer[:count]
        return count

    def waiting(self) -> bool:
        """Whether the next line that counts has yet to come, :data:`PAUSE_SECONDS` after now.

        What the writer sends meanwhile is read into the buffer.
        """
        # Asked again with nothing read since the last pause (the CoNLL-U reader at a closing
        # blank line, then the chunking), the writer has had its pause: no second one.
        deadline = time.monotonic() + (0.0 if self._paused else PAUSE_SECONDS)
        while not self._ended and not self._holds_line():
            left = deadline - time.monotonic()
            if not select.select([self._fd], [], [], max(left, 0.0))[0]:
                self._paused = True
                return True
            self._fill()
        return False

    def paused(self) -> bool:
        """Whether nothing more comes within :data:`PAUSE_SECONDS` of now, nor has come unread.

        Raw text's pause (:func:`biaffine.pipeline.RawSentences`): any byte, a line end or
        not, says the writer goes on. What comes meanwhile is read into the buffer.
        """
        if self._buffer or self._ended:
            return False
        wait = 0.0 if self._paused else PAUSE_SECONDS  # asked again with nothing read since
        if select.select([self._fd], [], [], wait)[0]:
            self._fill()
            return False
        self._paused = True
        return True

    def _holds_line(self) -> bool:
        """Whether the buffer holds a whole line that counts."""
        start = 0
        while (end := self._buffer.find(b"\n", start)) != -1:
            if self._counts is None or self._counts(bytes(self._buffer[start : end + 1])):
                return True
            start = end + 1
        return False

    def _fill(self) -> None:
        while True:
            try:
                block = os.read(self._fd, READ_BYTES)
                break
            except BlockingIOError:  # a descriptor in non-blocking mode: wait for it all the same
                select.select([self._fd], [], [])
        self._ended = not block
        self._buffer += block
        self._paused = False


def open_pipe(
    source: str | os.PathLike[str], counts: Callable[[bytes], bool] | None = None
) -> PipeReader | None:
    """A reader of ``source`` (``-``: standard input) as it comes, where it is no regular file.

    None for a regular file, a path that is missing or a folder (its reader names what is
    wrong), and a standard input without a descriptor. ``counts``: as :class:`PipeReader`'s.
    """
    if str(source) == "-":
        try:
            fd = standard_input().fileno()
        except (OSError, ValueError):  # io.UnsupportedOperation too: no descriptor
            return None
        return PipeReader(fd, "<stdin>", counts=counts) if is_special(fd) else None
    path = Path(source)
    if not path.exists() or path.is_dir() or path.is_file():
        return None
    return PipeReader(os.open(path, os.O_RDONLY), str(source), owned=True, counts=counts)


def is_special(fd: int) -> bool:
    """Whether ``fd`` is no regular file (a pipe, a terminal, a socket, a device)."""
    return not stat.S_ISREG(os.fstat(fd).st_mode)
