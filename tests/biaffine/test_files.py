"""Atomic output files: old content until the new one is whole, never a mix, the umask's mode."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from biaffine.files import atomic_open, umask_mode


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


def test_a_missing_folder_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), atomic_open(tmp_path / "no" / "out.txt"):
        pass
