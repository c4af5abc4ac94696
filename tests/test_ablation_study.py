"""The ablation page script: rows from real run folders, milestones, fallbacks, merging."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize

from biaffine.training import TrainResult, train

ROOT = Path(__file__).parent.parent
SPEC = importlib.util.spec_from_file_location("ablation", ROOT / "experiments" / "ablation.py")
study = importlib.util.module_from_spec(SPEC)
sys.modules["ablation"] = study
SPEC.loader.exec_module(study)


@pytest.fixture(scope="module")
def crf_run(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    overrides = ["experiment=smoke", "model.loss=crf", "trainer.max_epochs=3"]
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=overrides)
    return train(cfg, tmp_path_factory.mktemp("crf"))


def _epoch(epoch: int, las: float, seconds: float, best: int) -> dict:
    dev = {"uas": las + 5, "las": las}
    return {"event": "epoch", "epoch": epoch, "train_loss": 1.0, "dev": dev, "best_epoch": best,
            "seconds": seconds}  # fmt: skip


GRAPH_CONFIG = (
    "data:\n  treebank: UD_Test\nmodel:\n  loss: crf\n  encoder:\n    pretrained: null\n"
    "trainer:\n  threads: 2\n"
)


def _fake_run(
    folder: Path, las: list[float], seconds: float, log: str | None, config: str = GRAPH_CONFIG
) -> Path:
    folder.mkdir()
    best = max(range(len(las)), key=las.__getitem__) + 1
    records = [_epoch(e + 1, v, seconds, best) for e, v in enumerate(las)]
    records.append({"event": "test", "epoch": best, "test": {"uas": 90.0, "las": 88.5}})
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    (folder / "metrics.jsonl").write_text(text)
    (folder / "config.yaml").write_text(config)
    if log is not None:
        (folder / "train.log").write_text(log)
    return folder


def test_a_real_crf_run_gives_its_settings_curve_and_test_scores(crf_run: TrainResult) -> None:
    row = study.measure("crf", crf_run.run_dir)
    assert (row["parser"], row["loss"]) == ("biaffine", "crf")
    assert row["vectors"] is None
    assert row["transformer"] is None
    assert row["epochs"] == 3
    assert len(row["curve"]["minutes"]) == 3
    assert row["curve"]["minutes"] == sorted(row["curve"]["minutes"])
    assert set(row["test"]) == set(study.TEST_MEASURES)
    assert row["best_dev"]["las"] == max(row["curve"]["dev_las"])


@pytest.mark.parametrize(
    ("model", "parser"),
    [
        ("system: arc_hybrid", "arc_hybrid, static oracle"),
        ("system: arc_eager\n  oracle: dynamic", "arc_eager, dynamic oracle"),
        ("system: arc_hybrid\n  graph_loss_weight: 1.0", "combined (arc_hybrid), static oracle"),
    ],
)
def test_transition_runs_name_their_system_and_oracle_and_no_graph_loss(
    tmp_path: Path, model: str, parser: str
) -> None:
    config = f"data:\n  treebank: UD_Test\nmodel:\n  {model}\n"
    row = study.measure("t", _fake_run(tmp_path / "t", [50.0], 60.0, None, config))
    assert (row["parser"], row["loss"]) == (parser, "-")
    assert study.runs_table([row])[-1].startswith(f"| t | {parser} | - |")


def test_fallbacks_add_up_the_logged_sentences(tmp_path: Path) -> None:
    log = (
        "[x][biaffine.training.compose][INFO] - train: 400 sentences, 5000 words\n"
        "[x][biaffine.parsers.graph][INFO] - tree-CRF: log Z lost precision in 2 of 30 "
        "sentences; local loss for them\n"
        "[x][biaffine.parsers.graph][INFO] - tree-CRF: log Z lost precision in 1 of 31 "
        "sentences; local loss for them\n"
    )
    run = _fake_run(tmp_path / "a", [50.0, 60.0], 60.0, log)
    assert study.fallbacks(run / "train.log") == {"sentences": 3, "train_sentences": 400}
    assert study.fallbacks(tmp_path / "missing.log") is None
    page_rows = study.runs_table([study.measure("a", run)])
    assert "| 3 of ~800 |" in page_rows[-1]  # 400 sentences x 2 epochs


def test_milestones_take_the_best_so_far_and_skip_runs_that_had_stopped(tmp_path: Path) -> None:
    long = study.measure("long", _fake_run(tmp_path / "long", [50, 70, 65, 72, 71], 600.0, None))
    short = study.measure("short", _fake_run(tmp_path / "short", [60.0, 75.0], 600.0, None))
    assert long["curve"]["minutes"] == [10, 20, 30, 40, 50]
    assert study.best_by(long, 10) == 50
    assert study.best_by(long, 39) == 70
    assert study.best_by(long, 40) == 72
    assert study.best_by(short, 20) == 75
    assert study.best_by(short, 40) is None
    table = study.curve_table([long, short])
    assert table[2:] == ["| 10 | 50.00 | 60.00 |", "| 20 | 70.00 | 75.00 |", "| 40 | 72.00 | - |"]
    assert study.best_at_epoch(long, 3) == 70
    assert study.best_at_epoch(long, 5) == 72
    assert study.best_at_epoch(short, 5) is None
    assert study.curve_table([long, short], by="epoch")[2:] == ["| 5 | 72.00 | - |"]


def test_main_merges_rows_by_name_and_writes_the_page_and_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot needs matplotlib (the bench extra)")
    first = _fake_run(tmp_path / "first", [50.0, 60.0], 60.0, None)
    second = _fake_run(tmp_path / "second", [55.0, 66.0], 90.0, None)
    results, page = tmp_path / "out.json", tmp_path / "out.md"
    args = ["--results", str(results), "--page", str(page)]
    assert study.main([f"one={first}", f"two={first}", *args]) == 0
    assert study.main([f"two={second}", *args]) == 0
    rows = json.loads(results.read_text())
    assert [row["name"] for row in rows] == ["one", "two"]
    assert rows[1]["best_dev"]["las"] == 66.0
    assert rows[1]["first_epoch_seconds"] == 90.0
    text = page.read_text()
    assert "## UD_Test" in text
    # vectors, transformer, threads, epochs
    assert "| two | biaffine | crf | - | - | 2 | 2 |" in text
    assert page.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_a_folder_without_metrics_is_a_one_line_error(tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit):
        study.main([f"x={tmp_path}"])
    assert "no metrics.jsonl" in capsys.readouterr().err
