"""The seed-000 Unshift study script: its counts by hand, and end to end on the tiny treebank."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize

from biaffine.training import TrainResult, train


@pytest.fixture(autouse=True)
def _compile_in_the_foreground(monkeypatch):
    # main() sets ROOTPARSE_COMPILE for its timings; set here, it is removed after each test.
    monkeypatch.setenv("ROOTPARSE_COMPILE", "foreground")


ROOT = Path(__file__).parent.parent
SPEC = importlib.util.spec_from_file_location("unshift", ROOT / "experiments" / "unshift.py")
study = importlib.util.module_from_spec(SPEC)
sys.modules["unshift"] = study  # its dataclass looks its module up while being defined
SPEC.loader.exec_module(study)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    # One epoch: a weak classifier leaves fragments at the end of input, which the study counts.
    overrides = ["experiment=smoke", "model=arc_eager_unshift", "trainer.max_epochs=1"]
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=overrides)
    return train(cfg, tmp_path_factory.mktemp("run"))


def test_leftovers_count_the_words_whose_gold_head_is_on_the_stack() -> None:
    left = study.Leftovers()
    gold = [0, 1, 1, 3, 3]  # words 1..5
    parsed = {"heuristic": [0, 1, 0, 3, 0], "unshift": [0, 1, 1, 3, 4]}
    # Stack [1, 3, 5] at the end of input, 3 and 5 headless besides the root word 1.
    left.add([1, 3, 5], [1, 3, 5], gold, parsed)
    assert (left.sentences, left.left, left.reachable, left.reachable_root) == (1, 3, 3, 1)
    assert left.correct == {"heuristic": 1, "unshift": 2}  # word 1 both; word 3 Unshift only
    assert left.correct_root == {"heuristic": 1, "unshift": 1}
    assert left.recall("unshift") == pytest.approx(200 / 3)
    left.add([2], [2], [0, 3, 0], {"heuristic": [0, 0, 0], "unshift": [0, 1, 0]})
    assert (left.left, left.reachable) == (4, 3)  # word 2's gold head (3) was popped


def test_study_parses_twice_and_its_counts_agree_with_the_scorer(
    trained: TrainResult, tmp_path: Path
) -> None:
    results, page = tmp_path / "unshift.json", tmp_path / "unshift.md"
    options = ["--results", str(results), "--page", str(page), "--threads", "1"]
    assert study.main([str(trained.run_dir), *options, "--graph-results", "none"]) == 0
    (row,) = json.loads(results.read_text())
    heuristic, unshift = row["parses"]["heuristic"], row["parses"]["unshift"]
    left = study.Leftovers(**row["leftovers"])
    assert unshift["malformed_rate"] == 0.0
    assert left.sentences > 0, "an untrained classifier should leave fragments"
    # Two independent counts: sentences the stack analysis finds fragmented are exactly the
    # heuristic's malformed outputs (several words on ROOT) in the scorer.
    malformed = heuristic["malformed_rate"] * row["test_sentences"] / 100
    assert round(malformed) == left.sentences
    assert left.left >= 2 * left.sentences
    assert left.reachable_root <= left.reachable <= left.left
    for name in study.PARSES:
        assert left.correct_root[name] <= left.correct[name] <= left.reachable
    text = page.read_text()
    assert "## Table 1 on UD" in text
    assert "| arc-eager, unshift |" in text
    assert page.with_suffix(".png").stat().st_size > 0


def test_a_checkpoint_of_another_system_is_refused(tmp_path: Path) -> None:
    overrides = ["experiment=smoke", "model=arc_hybrid", "trainer.max_epochs=1"]
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=overrides)
    run = train(cfg, tmp_path / "run")
    with pytest.raises(ValueError, match="needs a model=arc_eager_unshift checkpoint"):
        study.measure(run.run_dir / "best.pt", None, 5000)
