"""Output files: regular files written atomically, special files (pipes, devices) in place.

A regular file is written to a temporary file beside it and renamed at the end
(:func:`atomic_open`; on Linux the temporary file has no name until then, so a process killed
while writing leaves nothing behind): a reader, a crash or a second writer never sees half a
file; the destination holds its old content until the new one is complete, then the new one
whole. Two runs writing the same path each rename a complete file of their own, so the last one
to finish wins and nothing is mixed.

A name for something that is not a regular file cannot be renamed over without breaking it: a
character device (``/dev/null``), a named pipe or socket, and ``/dev/stdout`` or ``/dev/fd/N``,
which name a file descriptor the shell opened (a pipe, a terminal, or a file opened by ``>>`` for
appending). :func:`open_output` writes those in place, streamed, through the descriptor the shell
set up (so ``>> log`` appends); checkpoints and run-folder files use :func:`atomic_open` alone,
which refuses them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

__all__ = [
    "NO_SPACE",
    "atomic_open",
    "check_output",
    "checkpoint_digests",
    "file_digest",
    "fsync_dir",
    "is_plain_name",
    "named_when_full",
    "open_output",
    "refuse_input_as_output",
    "special_kind",
    "standard_input",
    "standard_output",
    "umask_mode",
]

_MAX_LINKS = 40  # as the kernel's limit on symbolic links in one lookup
_PROC_FDS = "/proc/self/fd"


def standard_input(
    refusal: str = "input=-: standard input is closed; give input=FILE",
) -> IO[bytes]:
    """The bytes of standard input (``input=-``).

    Raises:
        ValueError: ``refusal``, where the process has none (``<&-``: ``sys.stdin`` is None).
    """
    if sys.stdin is None:
        raise ValueError(refusal)
    return sys.stdin.buffer


def standard_output(
    refusal: str = "output=-: standard output is closed; give output=FILE",
    inputs: Iterable[str | os.PathLike[str]] = (),
) -> IO[str]:
    """Standard output (``output=-``), checked against the command's input files.

    Args:
        refusal: the message where the process has no standard output.
        inputs: the files the command reads (``-``: standard input), which standard output
            must not be: ``predict.py input=a.conllu >> a.conllu`` appended the parse to the
            user's file (``> a.conllu`` had emptied it before the command started).

    Returns:
        ``sys.stdout``, set to write UTF-8 without translating line ends.

    Raises:
        ValueError: ``refusal``, where the process has none (``>&-``: ``sys.stdout`` is None);
            naming the input where standard output is a regular file that is one of them.
    """
    if sys.stdout is None:
        raise ValueError(refusal)
    written = _file_identity(sys.stdout)
    if written is not None:
        for source in inputs:
            read = _file_identity(sys.stdin) if str(source) == "-" else _path_identity(source)
            if read == written:
                name = "standard input" if str(source) == "-" else f"the input file {source}"
                raise ValueError(f"standard output is {name}: redirect it to another file")
    # In UTF-8 whatever the locale, as every file is written, and with no line-end translation
    # (Windows' "\n" -> "\r\n" made CRLF input "\r\r\n"): under PYTHONIOENCODING=latin-1 an
    # "à" of the input came out as one byte, and "ascii" stopped the output midway.
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(encoding="utf-8", newline="")
    return sys.stdout


def _file_identity(stream: IO[Any] | None) -> tuple[int, int] | None:
    """(device, inode) of the regular file ``stream`` is open on; None for anything else."""
    try:
        found = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # None, closed, or no descriptor (pytest)
        return None
    return (found.st_dev, found.st_ino) if stat.S_ISREG(found.st_mode) else None


def _path_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(device, inode) of the file at ``path``, links followed; None where there is none."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def file_digest(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file's bytes, in hex, read in blocks (graphs are tens of MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checkpoint_digests(
    parser: str | os.PathLike[str], segmenter: str | os.PathLike[str] | None
) -> dict[str, str | None]:
    """The SHA-256 of a parser checkpoint and of a segmenter's (None without one).

    What an ONNX export records it was made from (``source`` in ``export.json``), by which a
    server tells its model's export from a stale one or another model's.
    """
    return {
        "parser_sha256": file_digest(parser),
        "segmenter_sha256": None if segmenter is None else file_digest(segmenter),
    }


def is_plain_name(value: object, suffix: str) -> bool:
    """Whether ``value`` is a file name ending in ``suffix``, with no folder in it.

    For a file a manifest names inside its own folder (an ONNX export's graphs): ``../x.onnx``
    or ``/tmp/x.onnx`` would be read from outside it.
    """
    return isinstance(value, str) and value.endswith(suffix) and value == Path(value).name


def umask_mode() -> int:
    """The mode a new file gets from ``open()`` under the process umask (``0o666 & ~umask``)."""
    # os.umask can only be read by setting it; set it straight back (one thread at start-up).
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def check_output(path: str | os.PathLike[str]) -> None:
    """Refuse an output path that cannot be written, before any work.

    Raises:
        FileNotFoundError: its folder does not exist.
        IsADirectoryError: it is a folder.
        NotADirectoryError: it ends in a slash, and names no folder.
        ValueError: it is empty.
    """
    _refuse_folder_syntax(path)
    folder = Path(path).parent
    if not folder.is_dir():
        raise FileNotFoundError(f"output {path}: the folder {folder} does not exist")
    if Path(path).is_dir():
        raise IsADirectoryError(f"output {path} is a folder: give the path of a file to write")


def check_file_output(
    path: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]] = ()
) -> None:
    """Refuse, before any work, an output written whole and renamed into place (a checkpoint).

    :func:`refuse_input_as_output` of ``inputs``, then :func:`check_output`, and a special
    file (:func:`special_kind`), which :func:`atomic_open` refuses only once the work is done.

    Raises:
        as those two, and ValueError for a special file.
    """
    refuse_input_as_output(path, inputs)
    check_output(path)
    _refuse_special(path)


def _refuse_special(path: str | os.PathLike[str]) -> None:
    """Raise ValueError where ``path`` names a special file, which a rename would replace."""
    kind = special_kind(path)
    if kind is not None:
        raise ValueError(f"{path} is a {kind}, not a regular file: give a file path")


def _refuse_folder_syntax(path: str | os.PathLike[str]) -> None:
    """Raise for a path that cannot name a file to write: empty, or ending in a slash.

    ``Path`` and ``realpath`` drop a final slash: ``-o out.html/`` wrote (or replaced)
    ``out.html``, where a shell's ``> out.html/`` says "Not a directory"; an empty path was read
    as the current folder.
    """
    text = os.fsdecode(os.fspath(path))
    if not text:
        raise ValueError("the output path is empty: give a file path")
    if text.endswith(os.sep) or (os.altsep is not None and text.endswith(os.altsep)):
        if os.path.isdir(text):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), text)
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), text)


def refuse_input_as_output(
    output: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str]]
) -> None:
    """Refuse an output path that is one of the command's inputs, before any work.

    Writing it would replace what the user gave (a checkpoint, a treebank) with the command's
    result. Device and inode are compared, not names: a hard or symbolic link to an input is
    that input, and so is the file standard input reads (``-``: ``input=- output=F < F``
    replaced the user's F with its parse). An output that does not exist yet, or an input
    that does not, is no clash.

    Raises:
        ValueError: naming both paths.
    """
    written = _path_identity(output)
    if written is None:
        return
    for source in inputs:
        if str(source) == "-" and _file_identity(sys.stdin) == written:
            raise ValueError(f"output {output} is the file standard input reads: choose another")
        if str(source) != "-" and _path_identity(source) == written:
            problem = f"output {output} is the input file {source}"
            raise ValueError(f"{problem}: choose another output path")


def special_kind(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` names when it is not a plain regular file; None for a regular file or none.

    Args:
        path: a destination path (symbolic links are followed).

    Returns:
        ``"file descriptor N"`` for a name of this process's descriptor N (``/dev/stdout``,
        ``/dev/fd/N``, ``/proc/self/fd/N``) whatever it is open on, ``"character device"``,
        ``"block device"``, ``"named pipe"`` or ``"socket"``; None for a regular file, a
        folder or a missing path.
    """
    fd = _descriptor(path)
    if fd is not None:
        return f"file descriptor {fd}"
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    kinds = (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISFIFO, "named pipe"),
        (stat.S_ISSOCK, "socket"),
    )
    return next((kind for test, kind in kinds if test(mode)), None)


def _descriptor(path: str | os.PathLike[str]) -> int | None:
    """N when ``path`` leads, link by link, to ``/proc/<this pid>/fd/N``; else None.

    The links are followed one at a time because the last one is magic: ``/proc/self/fd/1``
    reads as ``pipe:[123]`` or the name of the file the shell opened, neither of which is the
    open descriptor (with its offset and ``O_APPEND``) that writing must go through.
    """
    own = os.path.realpath("/proc/self/fd")  # /proc/<pid>/fd, where /dev/fd leads on Linux
    name = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        folder = os.path.realpath(os.path.dirname(name))
        base = os.path.basename(name)
        if folder == own and base.isdigit():
            return int(base)
        if not os.path.islink(name):
            return None
        name = os.path.join(os.path.dirname(name), os.readlink(name))
    return None


@contextlib.contextmanager
def open_output(path: str | os.PathLike[str], mode: str = "w", **options: Any) -> Iterator[IO]:
    """Open an output: a regular (or new) file atomically, a special file in place.

    A special file (see :func:`special_kind`) is written as a shell redirection would: a
    descriptor of this process through a duplicate of it (its offset and ``O_APPEND`` kept,
    nothing truncated), a character device or named pipe opened for writing (which waits for a
    reader of a pipe). What was written before an exception in the ``with`` block stays written
    there. A block device (a disk) is refused: parser output there is a mistake.

    Args:
        path: the destination.
        mode: ``"w"`` (text) or ``"wb"`` (binary).
        **options: passed to :func:`open`, e.g. ``encoding="utf-8", newline=""``.

    Raises:
        FileNotFoundError: if the destination folder does not exist.
        OSError: the special file cannot be opened for writing (a socket, a closed descriptor),
            or a write failed for want of space; the error names ``path``.
        ValueError: ``path`` is a block device.
    """
    _refuse_folder_syntax(path)
    with named_when_full(os.fspath(path)), _opened_output(path, mode, **options) as handle:
        yield handle


@contextlib.contextmanager
def named_when_full(name: str) -> Iterator[None]:
    """Give a write's want of space inside the block the output's ``name``.

    Python's write errors name no file: "No space left on device" alone.

    Raises:
        OSError: one of :data:`NO_SPACE` without a file name, as raised, with ``name``.
    """
    try:
        yield
    except OSError as error:
        if error.filename is not None or error.errno not in NO_SPACE:
            raise
        raise OSError(error.errno, error.strerror, name) from None


NO_SPACE = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
"""A write's errors that are its output's: a full device or disk, a file over a size limit."""


@contextlib.contextmanager
def _opened_output(path: str | os.PathLike[str], mode: str, **options: Any) -> Iterator[IO]:
    kind = special_kind(path)
    if kind is None:
        with atomic_open(path, mode, **options) as handle:
            yield handle
        return
    if kind == "block device":
        raise ValueError(f"{path} is a block device: give a file path")
    fd = _descriptor(path)
    try:
        # Opening the name again instead would truncate a file opened by ">> log".
        raw = os.dup(fd) if fd is not None else os.open(path, os.O_WRONLY)
    except OSError as error:
        raise OSError(error.errno, error.strerror, os.fspath(path)) from None
    with open(raw, mode, **options) as handle:
        yield handle


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str], mode: str = "w", **options: Any) -> Iterator[IO]:
    """Open a temporary file in ``path``'s folder; on success, flush, fsync and rename it there.

    The temporary file is unnamed until then where the system allows (:func:`_unnamed_file`).

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
        OSError: the file cannot be created, written or renamed into place (``path`` is a
            folder, say); the error names ``path``, never the temporary file.
        ValueError: ``path`` names a special file (:func:`special_kind`), which a rename would
            replace with a regular file.
    """
    _refuse_folder_syntax(path)
    _refuse_special(path)
    target = Path(os.path.realpath(path))
    temp_name = None
    with _naming(path, None):
        fd = _unnamed_file(target.parent)
        if fd is None:
            fd, temp_name = tempfile.mkstemp(
                prefix=f".{_temp_stem(target.name)}.", suffix=".tmp", dir=target.parent
            )
    try:
        with _naming(path, temp_name):
            if temp_name is not None:
                os.fchmod(fd, umask_mode())
        with open(fd, mode, **options) as handle:
            yield handle
            with _naming(path, temp_name):
                handle.flush()
                os.fsync(handle.fileno())
            if temp_name is None:
                with _naming(path, None):
                    _name_unnamed(handle.fileno(), target)
        if temp_name is not None:
            with _naming(path, temp_name):
                os.replace(temp_name, target)
    except BaseException:
        if temp_name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
        raise
    fsync_dir(target.parent)


def _unnamed_file(folder: Path) -> int | None:
    """A new file in ``folder`` that has no name until :func:`_name_unnamed` gives it one.

    Linux's ``O_TMPFILE``: a process killed while writing (``kill -9``, the OOM killer) leaves
    nothing behind, where a named temporary file would stay beside the output. None where the
    system or the folder's file system has no such files, or ``/proc`` is not mounted (naming
    one goes through it): the caller falls back on a named temporary file.
    """
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir(_PROC_FDS):
        return None
    try:
        # 0o666 and the umask: the mode a plain open() gives a new file.
        return os.open(folder, flag | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as error:
        if error.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None  # a kernel or file system without O_TMPFILE
        raise


def _name_unnamed(fd: int, target: Path) -> None:
    """Give the unnamed file ``fd`` the name ``target``, replacing what was there at once.

    A link cannot replace a file, so the file is linked under a fresh hidden name and renamed
    over ``target``: the hidden name exists only between those two calls.
    """
    folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        while True:
            temp_name = f".{_temp_stem(target.name)}.{secrets.token_hex(4)}.tmp"
            try:
                # A folder's descriptor makes os.link call linkat(), which follows the /proc
                # link to the file (AT_SYMLINK_FOLLOW); link() would link the link itself.
                os.link(f"{_PROC_FDS}/{fd}", temp_name, dst_dir_fd=folder, follow_symlinks=True)
                break
            except FileExistsError:
                continue
        try:
            os.replace(temp_name, target.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name, dir_fd=folder)
            raise
    finally:
        os.close(folder)


NAME_MAX = 255
"""The longest file name in bytes that Linux's file systems take."""

_TEMP_EXTRA = len(".") + len(".") + 8 + len(".tmp")
"""What a hidden temporary name adds to its stem: ``.{stem}.{8 random characters}.tmp``."""


def _temp_stem(name: str) -> str:
    """``name`` cut short enough for its hidden temporary name to be a legal file name.

    An output name of 242 to 255 bytes is legal, but ``.NAME.XXXXXXXX.tmp`` was not: the write
    failed with "File name too long" once the whole input had been parsed.
    """
    stem = name
    while len(os.fsencode(stem)) > NAME_MAX - _TEMP_EXTRA:
        stem = stem[:-1]
    return stem


@contextlib.contextmanager
def _naming(path: str | os.PathLike[str], temp_name: str | None) -> Iterator[None]:
    """Re-raise an OSError of the temporary file (or of none) as one naming ``path``.

    The temporary file is ours, not the user's: "out.html: Is a directory" says what to fix,
    ".out.html.x1y2.tmp: Is a directory" does not. ``temp_name`` None renames any file's error
    (the temporary file being created has no name yet).
    """
    try:
        yield
    except OSError as error:
        if temp_name is not None and error.filename not in (None, temp_name):
            raise
        # OSError(errno, ...) is the subclass of its errno (IsADirectoryError, ...).
        raise OSError(error.errno, error.strerror, os.fspath(path)) from error


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
