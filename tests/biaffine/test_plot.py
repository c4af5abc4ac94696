"""Training curves from metrics.jsonl: reading, drawing, errors and the command line."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from biaffine.metrics import AttachmentScores
from biaffine.plot import CURVES, main, plot_run, read_curves


def _scores(words: int, heads: int, labelled: int) -> dict:
    counts = {"n_sentences": 10, "n_words": words, "n_correct_heads": heads}
    return AttachmentScores(**counts, n_correct_labeled=labelled).to_dict()


def _epoch(epoch: int, loss: float, heads: int, labelled: int, best: int) -> dict:
    """A record shaped like biaffine.training._report_epoch's."""
    return {
        "event": "epoch", "epoch": epoch, "step": 50 * epoch, "lr": 2e-3, "train_loss": loss,
        "dev": _scores(200, heads, labelled), "best_epoch": best, "seconds": 12.5,
    }  # fmt: skip


def _run(tmp_path: Path, records: list[dict], name: str = "run") -> Path:
    run = tmp_path / name
    run.mkdir()
    lines = [json.dumps(r) for r in records]
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return run


RECORDS = [
    _epoch(1, 3.2, 120, 100, 1),
    _epoch(2, 1.5, 150, 130, 2),
    _epoch(3, 0.9, 160, 140, 3),
    _epoch(3, 0.8, 166, 150, 3),  # a resumed run wrote epoch 3 again: the later record counts
    _epoch(4, 0.2, 164, 148, 3),
    {"event": "test", "epoch": 4, "test": _scores(300, 240, 222)},
]


def test_read_curves(tmp_path: Path):
    curves = read_curves(_run(tmp_path, RECORDS) / "metrics.jsonl")
    assert curves.epochs == [1, 2, 3, 4]
    assert curves.train_loss == [3.2, 1.5, 0.8, 0.2]
    assert curves.dev_uas == [60.0, 75.0, 83.0, 82.0]
    assert curves.dev_las == [50.0, 65.0, 75.0, 74.0]
    assert curves.seconds == [12.5] * 4
    assert curves.best_epoch == 3
    assert (curves.test_uas, curves.test_las) == (80.0, 74.0)
    assert curves.test["n_words"] == 300


def test_plot_run_writes_a_readable_png(tmp_path: Path):
    image = pytest.importorskip("matplotlib.image", reason="matplotlib (the bench extra) missing")
    run = _run(tmp_path, RECORDS)
    (run / CURVES).write_bytes(b"old")
    path = plot_run(run)
    assert path == run / CURVES
    pixels = image.imread(path)[..., :3]
    assert pixels.shape == (660, 770, 3)  # 7 x 6 inches at 110 dpi
    # The three curves in matplotlib's first three colours (C0 blue, C1 orange, C2 green).
    for colour in ("#1f77b4", "#ff7f0e", "#2ca02c"):
        rgb = np.array([int(colour[k : k + 2], 16) for k in (1, 3, 5)]) / 255
        assert (np.abs(pixels - rgb).max(axis=2) < 0.02).sum() > 100, colour
    assert sorted(p.name for p in run.iterdir()) == [CURVES, "metrics.jsonl"]  # no temp file


EPOCH = '{"event": "epoch", "epoch": 1, "train_loss": 1.0, "dev": {"uas": 1, "las": 1}}\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"event": "epoch"\n', r"metrics.jsonl:1: not JSON"),
        ("[1, 2]\n", r"metrics.jsonl:1: expected a JSON object, found list"),
        ('\n{"event": "epoch", "epoch": 1, "train_loss": 1.0}\n', r"metrics.jsonl:2: epoch record"),
        ('{"event": "epoch", "epoch": "1"}\n', r"metrics.jsonl:1: .* integer 'epoch'"),
        ("\n", r"metrics.jsonl: no epoch records"),
        # Each was a traceback (KeyError, TypeError, OverflowError, RecursionError), or named
        # the wrong line (the first, decoding a block of lines at once).
        ('{"event": "test", "test": {"uas": 1}}\n', r"metrics.jsonl:1: test record needs"),
        ('{"event": "test", "test": 5}\n', r"metrics.jsonl:1: test record needs"),
        (EPOCH + EPOCH.replace('"epoch": 1,', '"epoch": 2, "best_epoch": 1e400,'), r":2: epoch"),
        ("[" * 100_000 + "\n", r"metrics.jsonl:1: not JSON this plot reads \(nested too deeply"),
        (EPOCH + EPOCH + "\udcff\n", r"metrics.jsonl:3: not UTF-8"),
    ],
)
def test_bad_metrics_are_reported_with_file_and_line(tmp_path: Path, text: str, message: str):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=message):
        plot_run(run)
    assert not (run / CURVES).exists()


def test_without_matplotlib_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    run = _run(tmp_path, RECORDS)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert read_curves(run / "metrics.jsonl").epochs == [1, 2, 3, 4]  # reading needs no plotting
    with pytest.raises(ImportError, match=r"needs matplotlib: pip install 'rootparse\[bench\]'"):
        plot_run(run)


def test_cli_draws_every_run_and_reports_the_bad_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("matplotlib", reason="matplotlib (the bench extra) missing")
    good, other = _run(tmp_path, RECORDS, "good"), _run(tmp_path, RECORDS[:1], "other")
    missing = tmp_path / "missing"
    assert main([str(good), str(missing), str(other)]) == 2
    out, err = capsys.readouterr()
    assert out.split() == [str(good / CURVES), str(other / CURVES)]
    assert (
        err
        == f"error: {missing / 'metrics.jsonl'}: no such file (is this a training run directory?)\n"
    )


def test_curves_get_the_umasks_mode_not_0600(tmp_path: Path):
    pytest.importorskip("matplotlib", reason="matplotlib (the bench extra) missing")
    run = _run(tmp_path, RECORDS)
    old = os.umask(0o022)
    try:
        path = plot_run(run)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_pipe_named_curves_png_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("matplotlib", reason="matplotlib (the bench extra) missing")
    run = _run(tmp_path, RECORDS)
    os.mkfifo(run / CURVES)
    assert main([str(run)]) == 2
    assert capsys.readouterr().err == (
        f"error: {run / CURVES} is a named pipe, not a regular file: give a file path\n"
    )
    assert stat.S_ISFIFO((run / CURVES).lstat().st_mode)
