"""Input from a pipe, read as it comes: lines as a buffered file gives them, sentences as soon
as they have come, and predict.py answering a writer that waits for each answer."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.data.conllu import read_conllu
from biaffine.data.pipes import PAUSE_SECONDS, PipeReader

ROOT = Path(__file__).parents[3]
SENTENCE = "1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n2\tcat\t_\t_\t_\t_\t_\t_\t_\t_\n"


class Feed:
    """A pipe whose writer sends parts when told, a pipe reader on its other end."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        self.reader = PipeReader(self._read, "<pipe>", owned=True)

    def send(self, data: bytes) -> None:
        os.write(self._write, data)  # a pipe holds 64 KiB: the tests send less at a time

    def close(self) -> None:
        os.close(self._write)


def _sent_in(data: bytes, cuts: list[int]) -> Iterator[bytes]:
    """``data`` in the parts that ``cuts`` (offsets) make."""
    bounds = [0, *sorted({min(cut, len(data)) for cut in cuts}), len(data)]
    return (data[a:b] for a, b in itertools.pairwise(bounds) if b > a)


@settings(max_examples=60, deadline=None)
@given(
    st.binary(max_size=300).map(lambda b: b.replace(b"\r", b"\n")),
    st.lists(st.integers(0, 300), max_size=8),
    st.sampled_from([-1, 1, 2, 7, 64]),
)
def test_lines_are_those_of_a_buffered_file_however_the_writer_cuts_them(data, cuts, limit):
    feed = Feed()

    def write() -> None:
        for part in _sent_in(data, cuts):
            feed.send(part)
        feed.close()

    writer = threading.Thread(target=write)
    writer.start()
    expected, found = io.BytesIO(data), []
    while line := feed.reader.readline(limit):
        found.append(line)
    writer.join()
    feed.reader.close()
    assert found == list(iter(lambda: expected.readline(limit), b""))


def test_waiting_says_whether_the_next_line_has_come() -> None:
    feed = Feed()
    assert feed.reader.waiting()
    feed.send(b"a\nb")
    assert not feed.reader.waiting()
    assert feed.reader.readline() == b"a\n"
    assert feed.reader.waiting()  # "b" alone, no line end yet
    feed.send(b"\n")
    assert not feed.reader.waiting()
    assert feed.reader.readline() == b"b\n"
    feed.close()
    assert not feed.reader.waiting()  # the end has come: reading it does not wait
    assert feed.reader.readline() == b""
    feed.reader.close()


def test_a_sentence_is_given_at_its_closing_blank_line_and_no_byte_is_lost() -> None:
    # The reader gave a sentence only when the next one began: a writer waiting for the
    # answer to its sentence before sending the next waited for good.
    feed, trailer = Feed(), []
    sentences = read_conllu(feed.reader, trailer=trailer)
    sent = [f"# sent_id = 1\n{SENTENCE}\n", f"\n\n# sent_id = 2\n{SENTENCE}\n", "\n\n"]
    feed.send(sent[0].encode())
    first = _within_seconds(lambda: next(sentences), 30)
    feed.send(sent[1].encode())
    second = _within_seconds(lambda: next(sentences), 30)
    feed.send(sent[2].encode())
    feed.close()
    assert list(sentences) == []
    assert [first.line, second.line] == [1, 7]  # their first lines that are not blank
    written = "".join(first.lines) + "".join(second.lines) + "".join(trailer)
    assert written == "".join(sent)


def test_a_descriptor_in_non_blocking_mode_is_waited_on_all_the_same() -> None:
    # A non-blocking stdin ended the input at its first pause (EAGAIN), dropping the rest.
    feed = Feed()
    os.set_blocking(feed.reader.fileno(), False)
    sender = threading.Timer(0.2, feed.send, [b"late\n"])
    sender.start()
    assert _within_seconds(feed.reader.readline, 30) == b"late\n"
    sender.join()
    feed.close()
    assert feed.reader.readline() == b""
    feed.reader.close()


def test_k_best_copies_from_a_pipe_are_the_bytes_of_a_file_whatever_the_pauses(
    graph_checkpoint: Path, tmp_path: Path
) -> None:
    # Each k-best copy repeats its sentence's blank lines: given at its first blank line, a
    # sentence left its others to the next one's copies, and the bytes hung on the pauses.
    from biaffine.predict_options import PredictOptions
    from biaffine.predicting import predict

    parts = [f"{SENTENCE}\n", f"\n\n{SENTENCE}\n\n"]
    source, fifo = tmp_path / "in.conllu", tmp_path / "in.fifo"
    source.write_text("".join(parts), encoding="utf-8")
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w", encoding="utf-8") as feed:
            for part in parts:
                feed.write(part)
                feed.flush()
                threading.Event().wait(3 * PAUSE_SECONDS)

    writer = threading.Thread(target=write)
    writer.start()
    options = PredictOptions(kbest=2)
    for path in (fifo, source):
        predict(graph_checkpoint, path, tmp_path / f"{path.name}.out", threads=1, options=options)
    writer.join()
    assert (tmp_path / "in.fifo.out").read_bytes() == (tmp_path / "in.conllu.out").read_bytes()


def _within_seconds(call, seconds: float):
    """``call()``, which must end within ``seconds`` (a test that would hang fails instead)."""
    found: list = []
    worker = threading.Thread(target=lambda: found.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert found, f"still waiting after {seconds} s"
    return found[0]


@pytest.mark.parametrize("fmt", ["conllu", "text"])
def test_predict_py_answers_each_sentence_while_its_writer_waits(
    graph_checkpoint: Path, tmp_path: Path, fmt: str
) -> None:
    # predict.py read 10,000 sentences (chunk_sentences) from a pipe before parsing any, and
    # a CoNLL-U sentence only once the next began: a program sending a sentence and reading
    # its parse before the next one waited for good. Files read as they did.
    # A blank line after a line of text was read as the next line's start, and waited on.
    text = "The cat sat .\n\n" if fmt == "text" else f"{SENTENCE}\n"
    given = [text, text, "\n\n"]
    source = tmp_path / f"in.{fmt}"
    source.write_text("".join(given), encoding="utf-8")
    command = [sys.executable, str(ROOT / "predict.py"), f"checkpoint={graph_checkpoint}"]
    command += [f"format={fmt}", "threads=1", "output=-"]
    from_file = subprocess.run(
        [*command, f"input={source}"], capture_output=True, text=True, check=True
    ).stdout
    process = subprocess.Popen(
        [*command, "input=-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        answers = []
        for part in given[:2]:
            process.stdin.write(part)
            process.stdin.flush()
            answers.append(_within_seconds(lambda: _answer(process.stdout), 120))
        process.stdin.write(given[2])
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    assert "".join(answers) + rest == from_file
    assert all(answer.endswith("\t_\n\n") for answer in answers)  # a whole sentence each time


def _answer(stdout) -> str:
    """The lines of one sentence written to ``stdout``, up to its blank line."""
    lines = [stdout.readline()]
    while lines[-1] not in ("\n", ""):
        lines.append(stdout.readline())
    return "".join(lines)


def test_a_pause_is_no_byte_for_a_while_a_line_end_or_not() -> None:
    # Raw text's pause: bytes coming without a line end (a long line, lone CRs) were read as
    # a pause, and paragraphs were cut where a file is not.
    feed = Feed()
    try:
        assert feed.reader.paused()  # nothing has come
        feed.send(b"no line end")
        assert not feed.reader.paused()  # it came meanwhile
        assert not feed.reader.paused()  # unread: the writer went on
        assert feed.reader.read(100) == b"no line end"
        writer = threading.Timer(PAUSE_SECONDS / 5, feed.send, args=(b"\r",))
        writer.start()
        assert not feed.reader.paused()  # a CR within the pause
        writer.join()
        assert feed.reader.read(100) == b"\r"
        assert feed.reader.paused()
        feed.close()
        assert feed.reader.read(100) == b""
        assert not feed.reader.paused()  # the end is no pause
    finally:
        feed.reader.close()
