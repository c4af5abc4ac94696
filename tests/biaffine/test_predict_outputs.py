"""predict's output path: regular files atomically, pipes, devices and /dev/stdout in place."""

from __future__ import annotations

import contextlib
import gc
import os
import runpy
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import TINY_CONLLU
from signalled import default_signals

from biaffine import predicting
from biaffine.cli import report_user_errors
from biaffine.predicting import predict

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def expected(graph_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """What predict writes into a regular file: the reference for every other kind of output."""
    out = tmp_path_factory.mktemp("reference") / "out.conllu"
    predict(graph_checkpoint, TINY_CONLLU, out, threads=1)
    return out.read_text(encoding="utf-8")


def test_a_named_pipe_gets_the_output_and_stays_a_pipe(
    graph_checkpoint: Path, expected: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text("utf-8")), daemon=True)
    reader.start()
    predict(graph_checkpoint, TINY_CONLLU, fifo, threads=1, chunk_sentences=2)
    reader.join(timeout=60)
    assert not reader.is_alive(), "the reader never saw the end of the pipe"
    assert got == [expected]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.fifo"]


def test_a_character_device_stays_a_device(graph_checkpoint: Path, tmp_path: Path) -> None:
    # A private /dev/null (same device numbers), so a bug cannot break the system's.
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError, OSError) as error:
        pytest.skip(f"cannot make a character device here (needs root on Linux): {error}")
    predict(graph_checkpoint, TINY_CONLLU, null, threads=1)
    assert stat.S_ISCHR(null.lstat().st_mode)
    assert null.stat().st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """``command`` in bash with pipefail, so a failed predict fails the pipeline too."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "HYDRA_FULL_ERROR": "1"}
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_dev_stdout_appends_to_a_log_and_streams_into_a_pipe(
    graph_checkpoint: Path, expected: str, tmp_path: Path
) -> None:
    predict_py = f"{sys.executable} {ROOT / 'predict.py'} checkpoint={graph_checkpoint} "
    predict_py += f"input={TINY_CONLLU} threads=1 output=stdout"
    # A private link like /dev/stdout: were the code wrong, it would replace only this link.
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    (tmp_path / "log").write_text("earlier\n")
    appended = shell(f"{predict_py} >> log", tmp_path)
    assert appended.returncode == 0, appended.stderr[-3000:]
    assert (tmp_path / "log").read_text(encoding="utf-8") == "earlier\n" + expected
    piped = shell(f"{predict_py} | cat > f", tmp_path)
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert (tmp_path / "f").read_text(encoding="utf-8") == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f", "log", "stdout"]
    assert (tmp_path / "stdout").is_symlink()


def test_every_byte_but_head_deprel_and_a_leading_bom_comes_back(
    graph_checkpoint: Path, tmp_path: Path
) -> None:
    # CRLF on every other line, a BOM, no closing blank line: the README's "every byte" claim.
    lines = TINY_CONLLU.read_text(encoding="utf-8").splitlines()
    text = "".join(line + ("\r\n" if k % 2 else "\n") for k, line in enumerate(lines))
    text = text.rstrip("\r\n")
    source, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_bytes(("\ufeff" + text).encode("utf-8"))
    predict(graph_checkpoint, source, out, threads=1)
    written = out.read_bytes().decode("utf-8").splitlines(keepends=True)
    given = text.splitlines(keepends=True)
    assert len(written) == len(given)
    for new, old in zip(written, given, strict=True):
        if old.split("\t")[0].isdigit():  # a word line: all but HEAD and DEPREL kept
            assert without_tree(new) == without_tree(old)
        else:
            assert new == old


def without_tree(line: str) -> list[str]:
    """A word line's columns but HEAD and DEPREL (the line break stays with MISC)."""
    columns = line.split("\t")
    return columns[:6] + columns[8:]


def test_a_frozen_parse_writes_the_same_bytes_and_only_predict_py_asks_for_it(
    graph_checkpoint: Path, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = gc.get_freeze_count()
    predict(graph_checkpoint, TINY_CONLLU, tmp_path / "plain.conllu", threads=1)
    assert gc.get_freeze_count() == before  # a library call leaves the collector alone
    try:
        predict(graph_checkpoint, TINY_CONLLU, tmp_path / "frozen.conllu", threads=1, freeze=True)
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
    assert (tmp_path / "frozen.conllu").read_text(encoding="utf-8") == expected
    asked: list[bool] = []
    monkeypatch.setattr(predicting, "predict", lambda *a, **kw: asked.append(kw["freeze"]))
    monkeypatch.setattr(sys, "argv", ["predict.py", f"checkpoint={graph_checkpoint}", "input=x"])
    runpy.run_path(str(ROOT / "predict.py"), run_name="__main__")
    assert asked == [True]


def test_an_output_that_is_a_folder_is_refused_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.pt"  # read after the arguments' check: never, here
    with pytest.raises(SystemExit) as stopped:
        report_user_errors(lambda: predict(missing, TINY_CONLLU, tmp_path, threads=1))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err == f"error: output {tmp_path} is a folder: give the path of a file to write\n"
    assert list(tmp_path.iterdir()) == []


def predict_py(checkpoint: Path, *settings: str) -> list[str]:
    return [sys.executable, str(ROOT / "predict.py"), f"checkpoint={checkpoint}", *settings]


@pytest.mark.parametrize(
    ("closed", "setting", "message"),
    [
        (0, "input=-", "error: input=-: standard input is closed; give input=FILE\n"),
        (
            1,
            f"input={TINY_CONLLU}",
            "error: output=-: standard output is closed; give output=FILE\n",
        ),
    ],
    ids=["stdin", "stdout"],
)
def test_a_closed_standard_stream_is_one_line_before_the_model_loads(
    graph_checkpoint: Path, closed: int, setting: str, message: str
) -> None:
    # Python sets sys.stdin or sys.stdout to None: an AttributeError traceback, after the
    # whole parse for standard output.
    done = subprocess.run(
        predict_py(graph_checkpoint, setting),
        preexec_fn=lambda: os.close(closed),  # in the child, before predict.py starts
        stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (2, message)


def test_a_full_device_is_named_in_the_error(graph_checkpoint: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    command = predict_py(graph_checkpoint, f"input={TINY_CONLLU}", "output=/dev/full")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, done.stderr[-42:]) == (
        2,
        "error: /dev/full: No space left on device\n",
    )


@pytest.mark.parametrize(("stop", "status"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_parse_stopped_by_a_signal_keeps_the_old_output_and_no_temporary_file(
    graph_checkpoint: Path, tmp_path: Path, stop: str, status: int
) -> None:
    # SIGTERM ended the process at once, leaving the atomic write's temporary file behind;
    # SIGINT printed a traceback. The input is a named pipe held open, so the parse waits
    # for more sentences after writing its first chunk into the temporary file (unnamed,
    # where the system has O_TMPFILE).
    source, output = tmp_path / "in.fifo", tmp_path / "out.conllu"
    os.mkfifo(source)
    output.write_text("mine\n")
    command = predict_py(graph_checkpoint, f"input={source}", f"output={output}")
    process = subprocess.Popen(
        [*command, "chunk_sentences=1"], stderr=subprocess.PIPE, text=True,
        preexec_fn=default_signals,
    )  # fmt: skip
    with open(source, "w", encoding="utf-8") as feed:
        feed.write(TINY_CONLLU.read_text(encoding="utf-8"))
        feed.flush()
        while not _writes_a_file_in(process.pid, tmp_path, besides=source):
            assert process.poll() is None, process.communicate()[1]
            threading.Event().wait(0.05)
        process.send_signal(getattr(signal, stop))
        _, err = process.communicate(timeout=120)
    assert process.returncode == status
    assert "Traceback" not in err
    assert output.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.fifo", "out.conllu"]


def _writes_a_file_in(pid: int, folder: Path, besides: Path) -> bool:
    """Whether process ``pid`` holds a file of ``folder`` open, other than ``besides``."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed since it was listed
            held.add(os.readlink(fd))
    return any(Path(name).parent == folder and name != str(besides) for name in held)


def test_an_output_that_is_the_model_is_refused_before_the_model_loads(
    graph_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # output=best.pt wrote the parse over the checkpoint, and exited 0.
    model = tmp_path / "best.pt"
    model.write_bytes(graph_checkpoint.read_bytes())
    with pytest.raises(SystemExit) as stopped:
        report_user_errors(lambda: predict(model, TINY_CONLLU, model, threads=1))
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"error: output {model} is the input file {model}: " + (
        "choose another output path\n"
    )
    assert model.read_bytes() == graph_checkpoint.read_bytes()


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_standard_output_gets_utf_8_whatever_the_locale(
    graph_checkpoint: Path, tmp_path: Path, encoding: str
) -> None:
    # Written in the locale's encoding: "à" came out as the one byte 0xE0 under latin-1, and
    # "ascii" stopped the output midway with a UnicodeEncodeError naming no file.
    source = tmp_path / "in.conllu"
    text = TINY_CONLLU.read_text(encoding="utf-8")
    first_form = text.split("\n1\t", 1)[1].split("\t", 1)[0]
    source.write_text(text.replace(f"\t{first_form}\t", "\tà\t", 1), encoding="utf-8")
    into_file = tmp_path / "out.conllu"
    predict(graph_checkpoint, source, into_file, threads=1)
    env = {**os.environ, "PYTHONIOENCODING": encoding, "NUMBA_DISABLE_JIT": "1"}
    done = subprocess.run(
        predict_py(graph_checkpoint, f"input={source}", "threads=1"),
        capture_output=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "\tà\t".encode() in done.stdout
    assert done.stdout == into_file.read_bytes()
