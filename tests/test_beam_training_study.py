"""Issue 41's study script, end to end on the tiny treebank with every arm trained briefly."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize

from biaffine.api import Parser
from biaffine.data.conllu import read_conllu
from biaffine.metrics import score_corpus
from biaffine.training import train

ROOT = Path(__file__).parent.parent
SPEC = importlib.util.spec_from_file_location("study", ROOT / "experiments" / "beam_training.py")
study = importlib.util.module_from_spec(SPEC)
sys.modules["study"] = study  # its dataclass looks its module up while being defined
SPEC.loader.exec_module(study)

SMOKE = ["experiment=smoke", "trainer.threads=1"]
# What experiments/beam_training.sh trains, as train.py overrides (epochs for minutes).
ARMS = {
    "G": ["trainer.max_epochs=2"],
    "L_half": ["model=arc_hybrid", "trainer.max_epochs=1"],
    "C_half": ["model=combined", "trainer.max_epochs=1"],
}
BEAM_ARMS = {f"B{k}": ("L_half", [f"model.beam_loss.size={k}"]) for k in study.BEAMS}
BEAM_ARMS["C_beam"] = ("C_half", ["model.beam_loss.size=16", "model.beam_loss.graph_weight=0.5"])


@pytest.fixture(autouse=True)
def _compile_in_the_foreground(monkeypatch):
    monkeypatch.setenv("ROOTPARSE_COMPILE", "foreground")


def _train(overrides: list[str], run_dir: Path) -> None:
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=[*SMOKE, *overrides])
    train(cfg, run_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("runs")
    for name, overrides in ARMS.items():
        _train(overrides, folder / f"tiny.{name}")
    for name, (start, overrides) in BEAM_ARMS.items():
        model = "model=combined" if start == "C_half" else "model=arc_hybrid"
        init = f"trainer.init_from={folder / f'tiny.{start}' / 'best.pt'}"
        _train([model, "trainer.max_epochs=1", init, *overrides], folder / f"tiny.{name}")
    # L_full: L_half's folder, resumed for one more epoch.
    resumed = folder / "tiny.L_full"
    resumed.mkdir()
    for file in (folder / "tiny.L_half").iterdir():
        if file.is_file() and file.name != ".lock":
            (resumed / file.name).write_bytes(file.read_bytes())
    _train(["model=arc_hybrid", "trainer.max_epochs=2", "trainer.resume=true"], resumed)
    return folder


def test_a_resumed_runs_copied_epochs_count_once(tmp_path: Path) -> None:
    epoch = {"event": "epoch", "epoch": 1, "seconds": 60.0}
    first, second = tmp_path / "a", tmp_path / "b"
    for run, lines in ((first, [epoch]), (second, [epoch, epoch | {"epoch": 2}])):
        run.mkdir()
        text = "".join(json.dumps(line) + "\n" for line in [*lines, {"event": "test"}])
        (run / "metrics.jsonl").write_text(text)
    assert study.training_minutes([first]) == 1.0
    assert study.training_minutes([first, second]) == 2.0


def test_every_arm_is_parsed_and_the_paired_arm_is_the_apis_pairing(
    runs: Path, tmp_path: Path
) -> None:
    results, page = tmp_path / "beam.json", tmp_path / "beam.md"
    options = ["--results", str(results), "--page", str(page)]
    assert study.main([str(runs), "--treebanks", "tiny", *options]) == 0
    (treebank,) = json.loads(results.read_text())
    arms = {row["arm"]: row for row in treebank["arms"]}
    assert list(arms) == [arm.label for arm in study.arms()]
    local, paired = arms["(b) local"], arms["(e) graph + local transition at parse time"]
    graph = arms["(a) graph parser"]
    assert paired["minutes"] == pytest.approx(local["minutes"] + graph["minutes"])
    weights = paired["weights_on_dev"]
    assert list(weights) == [f"w={w}" for w in study.WEIGHTS]
    weight = max(study.WEIGHTS, key=lambda w: (weights[f"w={w}"], -w))
    # The same pairing through the Python API gives the row's scores.
    parser = Parser.load(runs / "tiny.L_full" / "best.pt", threads=1)
    parser.pair(runs / "tiny.G" / "best.pt")
    gold = list(read_conllu(ROOT / "tests" / "data" / "tiny.conllu"))
    trees = parser.parse(gold, search="beam", beam_size=16, graph_weight=weight)
    las = score_corpus(gold, [tree.sentence for tree in trees]).las
    assert paired["settings"]["paired 16"]["las"] == pytest.approx(las)
    measures = {"uas", "las", "word", "da", "cm", "ra", "sentences_per_second"}
    assert set(paired["settings"]["paired 16"]) == measures
    text = page.read_text()
    assert "| Combined [TMA] | 92.1 | 45.5 |" in text
    assert "| (c) beam-trained, k = 64 |" in text
