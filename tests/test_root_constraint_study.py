"""The root-constraint study script on a model trained on the tiny fixture treebank."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from hydra import compose, initialize

from biaffine.training import TrainResult, train


@pytest.fixture(autouse=True)
def _compile_in_the_foreground(monkeypatch):
    # main() sets ROOTPARSE_COMPILE for its timings; set here, it is removed after each test.
    monkeypatch.setenv("ROOTPARSE_COMPILE", "foreground")


ROOT = Path(__file__).parent.parent
SPEC = importlib.util.spec_from_file_location(
    "root_constraint", ROOT / "experiments" / "root_constraint.py"
)
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    overrides = ["experiment=smoke", "trainer.max_epochs=2", "decoder=mst_multiroot"]
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=overrides)
    return train(cfg, tmp_path_factory.mktemp("run"))


def test_study_measures_every_decoder_and_writes_the_page(
    trained: TrainResult, tmp_path: Path
) -> None:
    results, page = tmp_path / "results.json", tmp_path / "page.md"
    args = [str(trained.run_dir), "--results", str(results), "--page", str(page), "--no-plot"]
    study.main(args)
    rows = json.loads(results.read_text())
    assert len(rows) == 1
    row = rows[0]
    assert row["treebank"] == "tests/data"
    assert (row["train_sentences"], row["test_sentences"]) == (7, 7)
    assert set(row["decoders"]) == {"mst_multiroot", "mst", "eisner"}
    assert row["decoders"]["mst"]["malformed_rate"] == 0.0
    assert row["decoders"]["eisner"]["malformed_rate"] == 0.0
    for scores in row["decoders"].values():
        assert scores["n_sentences"] == 7
        assert scores["decode_seconds"] >= 0.0
    text = page.read_text()
    assert "| tests/data |" in text
    assert "Not in the table (test split only" in text

    study.main(args)  # measured again: the row is replaced, not duplicated
    assert len(json.loads(results.read_text())) == 1


def test_rows_from_earlier_runs_are_kept(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    earlier = {"treebank": "UD_Earlier", "train_sentences": 20, "decoders": {}}
    results.write_text(json.dumps([earlier]))
    merged = study.merge(results, [{"treebank": "UD_Later", "train_sentences": 5, "decoders": {}}])
    assert [row["treebank"] for row in merged] == ["UD_Later", "UD_Earlier"]


def test_plot_is_written(trained: TrainResult, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    page = tmp_path / "page.md"
    study.main(
        [
            str(trained.run_dir / "best.pt"),
            "--results",
            str(tmp_path / "r.json"),
            "--page",
            str(page),
        ]
    )
    assert page.with_suffix(".png").stat().st_size > 1000
    assert "page.png" in page.read_text()
