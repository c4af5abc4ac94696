"""predict's inputs: an endless line, CoNLL-U given as text, invalid UTF-8 on stdin and a
sentence over the word limit are one-line errors, status 2."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from conftest import TINY_CONLLU

from biaffine import predict_options
from biaffine.cli import report_user_errors
from biaffine.data.conllu import MAX_LINE, ConlluError, read_conllu
from biaffine.predict_options import read_sentences
from biaffine.predicting import predict


def user_error(capsys: pytest.CaptureFixture[str], checkpoint: Path, source: Path, **kwargs) -> str:
    """The one stderr line of a predict call that fails as predict.py's would (status 2)."""
    out = source.parent / "out.conllu"
    with pytest.raises(SystemExit) as stopped:
        report_user_errors(lambda: predict(checkpoint, source, out, threads=1, **kwargs))
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert not out.exists()
    return err


def test_conllu_given_as_text_is_refused(
    graph_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.conllu"
    source.write_bytes(TINY_CONLLU.read_bytes())
    err = user_error(capsys, graph_checkpoint, source, input_format="text")
    assert err == (
        f"error: {source}:1: a CoNLL-U sentence comment in plain text input: "
        "for CoNLL-U pass format=conllu\n"
    )


@pytest.mark.parametrize("fmt", ["conllu", "text"])
def test_a_line_over_the_limit_is_refused(
    graph_checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_bytes(b"x" * (MAX_LINE + 1))
    err = user_error(capsys, graph_checkpoint, source, input_format=fmt)
    assert (
        err == f"error: {source}:1: line longer than 1048576 bytes (1 MiB; is this a text file?)\n"
    )


@pytest.mark.parametrize("fmt", ["conllu", "text"])
def test_invalid_utf8_on_stdin_names_stdin_and_the_line(
    monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    good = TINY_CONLLU.read_bytes() if fmt == "conllu" else b"The cat sat .\n"
    line = good.count(b"\n") + 1
    # sys.stdin as Python opens it under C.UTF-8: surrogateescape turns a bad byte into text.
    stdin = io.BufferedReader(io.BytesIO(good + b"It \xff slept .\n"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stdin, "utf-8", "surrogateescape"))
    with pytest.raises(ConlluError, match=rf"^<stdin>:{line}: not valid UTF-8: byte 0xff at "):
        list(read_sentences("-", fmt))


def test_a_sentence_over_the_word_limit_is_refused_naming_its_line(
    graph_checkpoint: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The limit (1000 words) made small: a sentence of 40,000 words would take 6.4 GB.
    monkeypatch.setattr(predict_options, "MAX_SENTENCE_WORDS", 4)
    long = next(s for s in read_conllu(TINY_CONLLU) if len(s) > 4)
    source = tmp_path / "in.conllu"
    source.write_bytes(TINY_CONLLU.read_bytes())
    err = user_error(capsys, graph_checkpoint, source)
    assert err == (
        f"error: {source}:{long.line}: a sentence of {len(long)} words; at most 4 are parsed: "
        "split it into shorter sentences\n"
    )
