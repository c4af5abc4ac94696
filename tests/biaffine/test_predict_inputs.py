"""predict's inputs: an endless line and CoNLL-U given as text are one-line errors, status 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TINY_CONLLU

from biaffine.cli import report_user_errors
from biaffine.data.conllu import MAX_LINE
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
