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

__all__ = ["READ_BYTES", "PipeReader", "is_special"]

READ_BYTES = 1 << 16
"""The most bytes one read of the descriptor takes (what a pipe holds is 64 KiB on Linux)."""


class PipeReader(io.RawIOBase):
    """The bytes of a file descriptor read as they come, line by line.

    Attributes:
        name: the input's name in messages (``<stdin>`` or its path).
    """

    def __init__(self, fd: int, name: str, *, owned: bool = False) -> None:
        """Read ``fd``, closed by :meth:`close` where ``owned`` (else the caller's)."""
        super().__init__()
        self.name = name
        self._fd = fd
        self._owned = owned
        self._buffer = bytearray()
        self._ended = False

    def close(self) -> None:
        """Closes the descriptor where it is this reader's own."""
        if not self.closed and self._owned:
            os.close(self._fd)
        super().close()

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
        """Whether the next line has yet to come (reading it would wait for the writer)."""
        if self._ended or b"\n" in self._buffer:
            return False
        readable, _, _ = select.select([self._fd], [], [], 0)
        return not readable

    def _fill(self) -> None:
        block = os.read(self._fd, READ_BYTES)
        self._ended = not block
        self._buffer += block


def is_special(fd: int) -> bool:
    """Whether ``fd`` is no regular file (a pipe, a terminal, a socket, a device)."""
    return not stat.S_ISREG(os.fstat(fd).st_mode)
