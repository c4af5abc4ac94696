"""Atomic output files: old content until the new one is whole, never a mix, the umask's mode."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from biaffine import files
from biaffine.files import (
    atomic_open,
    check_file_output,
    check_output,
    is_plain_name,
    open_output,
    refuse_input_as_output,
    special_kind,
    umask_mode,
)


@pytest.fixture
def umask_027() -> Iterator[None]:
    old = os.umask(0o027)
    yield
    os.umask(old)


def test_umask_mode_reads_the_umask_without_changing_it(umask_027: None) -> None:
    assert umask_mode() == 0o640
    assert os.umask(0o027) == 0o027


def test_the_file_appears_whole_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with atomic_open(path, "w", encoding="utf-8") as out:
        out.write("new\n")
        out.flush()
        assert path.read_text() == "old\n"  # a reader still sees the old file
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left


@pytest.mark.parametrize("named", [False, True])  # O_TMPFILE, or mkstemp's named file
@pytest.mark.parametrize(
    "name",
    ["o" * 247 + ".conllu", "é" * 121 + ".conllu", "x" * 241],
    ids=["254-bytes", "249-bytes-utf8", "241-bytes"],
)
def test_a_name_of_up_to_255_bytes_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: bool, name: str
) -> None:
    """A legal name of 242-255 bytes failed with "File name too long": the hidden temporary
    name beside it adds 14 bytes."""
    if named:
        monkeypatch.setattr(files, "_unnamed_file", lambda folder: None)
    path = tmp_path / name
    path.write_text("old\n")
    with atomic_open(path, "w", encoding="utf-8") as out:
        out.write("new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == [name]


def test_a_failure_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old\n")

    def write_half() -> None:
        with atomic_open(path, "w") as out:
            out.write("half")
            raise RuntimeError("parse error")

    with pytest.raises(RuntimeError, match="parse error"):
        write_half()
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_two_interleaved_writers_leave_one_whole_file(tmp_path: Path) -> None:
    # With open(path, "w") both would share one inode and leave a mix of the two outputs.
    path = tmp_path / "out.txt"
    with atomic_open(path, "w") as first, atomic_open(path, "w") as second:
        for line in range(1000):
            first.write(f"first {line}\n")
            second.write(f"second {line}\n")
            if line % 100 == 0:
                first.flush()
                second.flush()
    assert path.read_text() == "".join(f"first {line}\n" for line in range(1000))


def test_the_mode_follows_the_umask_not_mkstemps_0600(tmp_path: Path, umask_027: None) -> None:
    path = tmp_path / "out.bin"
    with atomic_open(path, "wb") as out:
        out.write(b"x")
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_symbolic_link_is_followed(tmp_path: Path) -> None:
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old\n")
    link.symlink_to(target)
    with atomic_open(link, "w") as out:
        out.write("new\n")
    assert link.is_symlink()
    assert target.read_text() == "new\n"


def test_a_writer_killed_by_sigkill_leaves_the_old_file_and_nothing_beside_it(
    tmp_path: Path,
) -> None:
    """``kill -9`` (or the OOM killer) runs no cleanup: a named temporary file stayed behind."""
    try:
        os.close(os.open(tmp_path, os.O_TMPFILE | os.O_WRONLY))
    except (AttributeError, OSError) as error:
        pytest.skip(f"no O_TMPFILE in {tmp_path} ({error}): a killed writer leaves its temporary")
    path = tmp_path / "out.txt"
    path.write_text("old")
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(path)], capture_output=True, text=True
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert path.read_text() == "old"


_KILLED_WRITER = """
import os, signal, sys
from biaffine import files
with files.atomic_open(sys.argv[1], "w") as out:
    out.write("new, half written")
    out.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_missing_folder_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), atomic_open(tmp_path / "no" / "out.txt"):
        pass


def test_errors_name_the_destination_not_the_temporary_file(tmp_path: Path) -> None:
    # The OSError named ".out.xxxx.tmp", a file the user never gave and that no longer exists.
    missing = tmp_path / "no" / "out.txt"
    with pytest.raises(FileNotFoundError) as error, atomic_open(missing):
        pass
    assert error.value.filename == str(missing)
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as error, atomic_open(folder) as out:
        out.write("x")
    assert error.value.filename == str(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]  # no temporary left


def test_an_error_of_the_callers_own_file_keeps_its_name(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as error, atomic_open(tmp_path / "out.txt"):
        (tmp_path / "input.txt").read_text()
    assert error.value.filename == str(tmp_path / "input.txt")


# Special files: written in place, never renamed over (a rename would replace them with a file).

ROOT = Path(__file__).parents[2]


@contextlib.contextmanager
def reading(fifo: Path) -> Iterator[list[bytes]]:
    """A thread that reads ``fifo`` to its end; the bytes are in the list after the block."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    yield got
    reader.join(timeout=60)
    assert not reader.is_alive(), "the reader never saw the end of the pipe"


def test_a_named_pipe_is_written_in_place_and_stays_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with reading(fifo) as got, open_output(fifo, "w", encoding="utf-8") as out:
        for line in range(10_000):  # more than a pipe's buffer: streamed while the reader reads
            out.write(f"line {line}\n")
    assert got == ["".join(f"line {line}\n" for line in range(10_000)).encode()]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]  # no temporary file beside it


def private_null(tmp_path: Path) -> Path:
    """A character device like /dev/null (1, 3), made in ``tmp_path``; skips unless allowed."""
    path = tmp_path / "null"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as error:
        pytest.skip(f"cannot make a character device here (needs root on Linux): {error}")
    return path


def test_a_character_device_is_written_in_place_and_stays_a_device(tmp_path: Path) -> None:
    null = private_null(tmp_path)
    with open_output(null, "wb") as out:
        out.write(b"discarded\n")
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert null.stat().st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_a_link_to_a_device_is_followed_to_the_device(tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(private_null(tmp_path))
    with open_output(link, "w") as out:
        out.write("discarded\n")
    assert link.is_symlink()
    assert stat.S_ISCHR(link.stat().st_mode)


def test_a_descriptor_name_writes_through_the_descriptor_and_appends(tmp_path: Path) -> None:
    # /dev/fd/N of a file opened for appending: opening the name with "w" would truncate it.
    log = tmp_path / "log"
    log.write_text("earlier\n")
    with log.open("a") as appended:
        name = f"/dev/fd/{appended.fileno()}"
        assert special_kind(name) == f"file descriptor {appended.fileno()}"
        with open_output(name, "w") as out:
            out.write("new\n")
    assert log.read_text() == "earlier\nnew\n"


def test_a_descriptor_name_of_a_pipe_writes_into_the_pipe() -> None:
    read_end, write_end = os.pipe()
    try:
        with open_output(f"/proc/self/fd/{write_end}", "wb") as out:
            out.write(b"through the pipe\n")
        os.close(write_end)
        assert os.read(read_end, 100) == b"through the pipe\n"
    finally:
        os.close(read_end)
        with contextlib.suppress(OSError):
            os.close(write_end)


def test_a_regular_file_through_open_output_is_still_atomic(tmp_path: Path, umask_027: None):
    path = tmp_path / "out.txt"
    path.write_text("old\n")
    with open_output(path, "w") as out:
        out.write("new\n")
        out.flush()
        assert path.read_text() == "old\n"
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640


def test_atomic_open_refuses_a_special_file_in_one_line(tmp_path: Path) -> None:
    # Checkpoints and run-folder files are regular files: a pipe or a device there is a mistake.
    fifo = tmp_path / "best.pt"
    os.mkfifo(fifo)
    refused = pytest.raises(ValueError, match=r"best.pt is a named pipe, not a regular file")
    with refused as error, atomic_open(fifo, "wb"):
        pass
    assert "\n" not in str(error.value)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    stdout = private_stdout(tmp_path)
    refused = pytest.raises(ValueError, match="stdout is a file descriptor 1, not a regular file")
    with refused, atomic_open(stdout):
        pass
    assert stdout.is_symlink()


def test_check_file_output_refuses_a_special_file_where_check_output_takes_it(
    tmp_path: Path,
) -> None:
    """The tools that write checkpoints refused /dev/stdout only in atomic_open, at the end."""
    fifo = tmp_path / "best.pt"
    os.mkfifo(fifo)
    check_output(fifo)  # predict.py writes CoNLL-U into a pipe in place
    with pytest.raises(ValueError, match=r"best.pt is a named pipe, not a regular file"):
        check_file_output(fifo)
    check_file_output(tmp_path / "new.pt")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        check_file_output(tmp_path / "none" / "new.pt")


def private_stdout(folder: Path) -> Path:
    """``folder/stdout``, a link like /dev/stdout: were the code wrong, only it would break."""
    link = folder / "stdout"
    link.symlink_to("/proc/self/fd/1")
    return link


def test_the_systems_names_are_recognised_without_writing_to_them() -> None:
    assert special_kind("/dev/stdout") == "file descriptor 1"
    assert special_kind("/dev/fd/2") == "file descriptor 2"
    assert special_kind("/dev/null") == "character device"
    assert special_kind("/dev") is None


# The scripts write to a private link like /dev/stdout (to /proc/self/fd/1), not to the system's.
WRITE_STDOUT = (
    "from biaffine.files import open_output\n"
    "with open_output('stdout', 'w') as out:\n"
    "    out.write('new\\n')\n"
)


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_dev_stdout_appended_by_the_shell_keeps_the_earlier_content(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(WRITE_STDOUT)
    private_stdout(tmp_path)
    (tmp_path / "log").write_text("earlier\n")
    result = shell(f"{sys.executable} script.py >> log", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "log").read_text() == "earlier\nnew\n"


def test_dev_stdout_into_a_pipe_streams_through_it(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(WRITE_STDOUT)
    private_stdout(tmp_path)
    result = shell(f"{sys.executable} script.py | cat > f", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "f").read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "script.py", "stdout"]
    assert (tmp_path / "stdout").is_symlink()


def test_a_socket_is_an_error_naming_it_not_a_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(OSError, match="No such device") as error, open_output(path, "w"):
            pass
        assert error.value.filename == str(path)
        assert stat.S_ISSOCK(path.lstat().st_mode)


def test_a_closed_descriptor_is_an_error_naming_the_path() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    os.close(write_end)  # both numbers are free now (until the next open)
    name = f"/dev/fd/{write_end}"
    with pytest.raises(OSError, match="Bad file descriptor") as error, open_output(name):
        pass
    assert error.value.filename == name


def test_a_block_device_is_refused(tmp_path: Path) -> None:
    # Major number 0 has no driver: were the code wrong, opening it would fail, not write a disk.
    disk = tmp_path / "disk"
    try:
        os.mknod(disk, stat.S_IFBLK | 0o600, os.makedev(0, 0))
    except (PermissionError, AttributeError, OSError) as error:
        pytest.skip(f"cannot make a block device here (needs root on Linux): {error}")
    refused = pytest.raises(ValueError, match="disk is a block device: give a file path")
    with refused, open_output(disk, "w"):
        pass
    assert stat.S_ISBLK(disk.lstat().st_mode)


def test_an_output_that_is_an_input_is_refused_whatever_it_is_called(tmp_path: Path) -> None:
    source, other = tmp_path / "train.conllu", tmp_path / "other.conllu"
    source.write_text("mine\n")
    other.write_text("other\n")
    (tmp_path / "hard").hardlink_to(source)
    (tmp_path / "soft").symlink_to(source)
    for output in (source, tmp_path / "hard", tmp_path / "soft", tmp_path / "." / "train.conllu"):
        with pytest.raises(ValueError, match=f"^output {output} is the input file {source}: "):
            refuse_input_as_output(output, [other, source])
    refuse_input_as_output(other, [source])  # another file
    refuse_input_as_output(tmp_path / "new.pt", [source])  # not there yet
    refuse_input_as_output(source, [tmp_path / "missing.conllu"])  # an input not there
    assert source.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ("scores.onnx", True),
        ("../scores.onnx", False),
        ("/tmp/scores.onnx", False),
        ("sub/scores.onnx", False),
        ("scores.onnx.bak", False),
        (".onnx", True),
        (3, False),
        (None, False),
    ],
)
def test_a_plain_name_has_the_suffix_and_no_folder(value: object, plain: bool) -> None:
    assert is_plain_name(value, ".onnx") is plain


@pytest.mark.parametrize("write", [atomic_open, open_output, check_output])
def test_a_path_ending_in_a_slash_or_empty_names_no_file(tmp_path: Path, write) -> None:
    # "out.html/" wrote, or replaced, out.html; "" was read as the current folder.
    existing = tmp_path / "out.html"
    existing.write_text("mine")

    def opened(path: str) -> None:
        if write is check_output:
            write(path)
        else:
            with write(path, "w") as out:
                out.write("new")

    for path, error in [
        (f"{existing}/", NotADirectoryError),
        (f"{tmp_path}/new.html/", NotADirectoryError),
        (f"{tmp_path}/", IsADirectoryError),
        ("", ValueError),
    ]:
        with pytest.raises(error):
            opened(path)
    assert existing.read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.html"]
