"""A tiny segmenter training run on a few hundred real sentences learns to segment."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from segmenter_builders import head, scoring_outlasts_the_budget

from biaffine.segmenting import Segmenter, score_spans
from biaffine.segmenting.features import FEATURES, SpacedWords
from biaffine.segmenting.spans import SpanScores
from biaffine.segmenting.training import (
    BEST,
    METRICS,
    SegmenterData,
    TrainSettings,
    cased_words,
    hold_out_dev,
    load_documents,
    settings_from,
    spaced_tokens,
    train,
)
from biaffine.training.run_state import locked_run_dir
from rawtext.labels import SENTENCE_END, TOKEN_END, LabelledText

ROOT = Path(__file__).parents[3]
TINY_MODEL = {"embed_dim": 16, "channels": 24, "dilations": [1, 2, 4], "rnn_hidden": 24}


def whitespace_baseline(text: str) -> np.ndarray:
    """A token ends before each whitespace run; one sentence per line."""
    labels = np.zeros(len(text), dtype=np.uint8)
    for i in range(len(text) - 1):
        if not text[i].isspace() and text[i + 1].isspace():
            labels[i] = SENTENCE_END if text[i + 1] == "\n" else TOKEN_END
    return labels


@pytest.mark.ud
def test_a_tiny_run_beats_the_whitespace_baseline(ewt_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "UD_Tiny"
    folder.mkdir()
    head(ewt_dir / "en_ewt-ud-train.conllu", folder / "train.conllu", 300)
    head(ewt_dir / "en_ewt-ud-dev.conllu", folder / "dev.conllu", 100)
    config = {"root": str(tmp_path), "treebank": "UD_Tiny", "download": False, "base_url": ""}
    config |= {"train": "train.conllu", "dev": "dev.conllu", "test": None}
    config |= {"discover": False, "dev_fraction": 0.1, "split_seed": 1}
    data = load_documents(config)
    settings = TrainSettings(max_epochs=6, patience=None, window=128, lr=0.005, threads=1)
    result = train(data, TINY_MODEL, settings, tmp_path)

    baseline = SpanScores()
    for document in data.dev:
        gold, guess = document.labels, whitespace_baseline(document.text)
        baseline += score_spans(document.text, gold, guess)
    assert baseline.tokens.f1 < 92  # EWT splits "don't", "cat." and the like
    assert result.best_dev["tokens_f1"] > baseline.tokens.f1 + 3
    assert result.test is None
    lines = [json.loads(line) for line in (tmp_path / METRICS).read_text().splitlines()]
    assert len(lines) == settings.max_epochs + 1
    assert lines[-1]["best_epoch"] == result.best_epoch
    segmenter = Segmenter.load(tmp_path / BEST)
    assert segmenter.mwt is not None
    assert segmenter.mwt("don't") == ["do", "n't"]  # learned from EWT's multi-word tokens
    dev = SpanScores()
    for document in data.dev:
        dev += score_spans(document.text, document.labels, segmenter.classes(document.text))
    assert dev.as_dict() == result.best_dev  # the checkpoint is the best epoch's model


def test_a_treebank_without_dev_holds_out_blocks_of_sentences() -> None:
    text = "A b. C d. E f. G h."
    labels = np.zeros(len(text), dtype=np.uint8)
    labels[[0, 2, 3, 5, 7, 8, 10, 12, 13, 15, 17, 18]] = [1, 1, 2] * 4
    train_part, dev = hold_out_dev([LabelledText(text, labels)], 0.5, seed=1)
    assert sorted(d.text for d in train_part + dev) == [" C d.", " E f.", " G h.", "A b."]
    assert len(dev) == 2
    for block in train_part + dev:
        assert block.labels[-1] == SENTENCE_END


def test_unknown_trainer_settings_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown trainer setting\(s\): epochs"):
        settings_from({"epochs": 3})
    assert settings_from({"window": 64}).window == 64


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        # each trained with a rising loss and ended with status 0
        ({"lr_decay": -1.0}, r"trainer\.lr_decay=-1\.0 must be in \(0, 1\]"),
        ({"lr_decay": 5.0}, r"trainer\.lr_decay=5\.0 must be in \(0, 1\]"),
        ({"lr_decay": 0.0}, r"trainer\.lr_decay=0\.0 must be in \(0, 1\]"),
        ({"clip": -1.0}, r"trainer\.clip=-1\.0 must be above 0"),
        ({"sentence_weight": -3.0}, r"trainer\.sentence_weight=-3\.0 must be >= 0"),
        ({"lr": 0.0}, r"trainer\.lr=0\.0 must be above 0"),
        ({"lr": float("inf")}, r"trainer\.lr=inf must be finite"),
        # torch's overflow from inside Adam; NaN weights written with status 0; numpy's words
        ({"lr": 1e39}, r"trainer\.lr=1e\+39 must be finite and at most 3\.403e\+38"),
        ({"sentence_weight": float("inf")}, r"trainer\.sentence_weight=inf must be finite"),
        ({"seed": -1}, r"trainer\.seed=-1: give a seed in 0\.\.2\*\*32-1"),
        ({"seed": 2**32}, r"trainer\.seed=4294967296: give a seed in 0\.\.2\*\*32-1"),
    ],
)
def test_rates_that_train_backwards_are_refused(setting: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}"):
        settings_from(setting)
    assert settings_from({"lr_decay": 1.0, "clip": None}).clip is None  # no clipping
    assert settings_from({"sentence_weight": 0.0, "min_char_count": 0}).sentence_weight == 0


def test_the_sentence_models_rates_are_refused_below_0() -> None:
    from biaffine.segmenting.sentence_training import SentenceSettings

    for name in ("lr", "clip"):
        with pytest.raises(ValueError, match=rf"^trainer\.{name}=-1\.0 must be above 0"):
            SentenceSettings.from_mapping({name: -1.0})
        with pytest.raises(ValueError, match=rf"^trainer\.{name}=1e\+39 must be finite"):
            SentenceSettings.from_mapping({name: 1e39})
    with pytest.raises(ValueError, match=r"^trainer\.seed=-1: give a seed in 0\.\.2\*\*32-1"):
        SentenceSettings.from_mapping({"seed": -1})


def test_training_data_without_a_paragraph_of_two_tokens_is_refused() -> None:
    """The sentence model trained no step and was written untrained, with status 0."""
    from biaffine.segmenting.sentence_training import refuse_no_paragraphs
    from biaffine.segmenting.training import SegmenterData

    ends = np.array([SENTENCE_END, 0, 0, SENTENCE_END], dtype=np.uint8)
    alone = SegmenterData("one_token", [LabelledText("a\n\nb", ends)], [], None)
    with pytest.raises(ValueError, match=r"^one_token: no training paragraph has two tokens"):
        refuse_no_paragraphs(alone)
    two = np.array([TOKEN_END, 0, SENTENCE_END], dtype=np.uint8)
    refuse_no_paragraphs(SegmenterData("two", [LabelledText("a b", two)], [], None))


def test_a_diverging_training_stops_rather_than_write_nan_weights(tmp_path: Path) -> None:
    done = run_entry_point(
        tmp_path, "data=tiny", "trainer.max_epochs=2", "trainer.threads=1", "trainer.lr=1e10"
    )
    assert done.returncode != 0
    assert "FloatingPointError: loss is nan at epoch " in done.stderr
    if (tmp_path / BEST).exists():  # an epoch before it, whose weights were finite
        weights = torch.load(tmp_path / BEST, weights_only=True)["weights"]
        assert all(bool(torch.isfinite(w).all()) for w in weights.values())


def test_a_sentence_bias_that_is_not_finite_is_refused_before_the_folder(tmp_path: Path) -> None:
    """NaN made every character a sentence end: 23 sentences of "Hello world. This is a test."."""
    run = tmp_path / "run"
    done = run_entry_point(run, "data=tiny", "model.sentence_bias=nan", "trainer.threads=1")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "error: model.sentence_bias=nan must be finite and at most 3.403e+38"
    )
    assert not run.exists()


def run_entry_point(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "train_segmenter.py", f"hydra.run.dir={tmp_path}", *overrides]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_the_entry_point_writes_a_run_folder(tmp_path: Path) -> None:
    done = run_entry_point(tmp_path, "data=tiny", "trainer.max_epochs=1", "trainer.threads=1")
    assert done.returncode == 0, done.stderr
    names = {BEST, METRICS, "train_segmenter.log", ".hydra", ".lock"}
    assert names == {p.name for p in tmp_path.iterdir()}
    assert "trainer.max_epochs=1" in (tmp_path / ".hydra" / "overrides.yaml").read_text()
    assert "epoch 1" in (tmp_path / "train_segmenter.log").read_text()
    assert Segmenter.load(tmp_path / BEST).treebank == "tests/data"
    # A second run refused there leaves the first one's record and log as they were.
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    again = run_entry_point(tmp_path, "data=tiny", "trainer.max_epochs=2", "trainer.threads=1")
    assert again.returncode == 2
    assert f"{tmp_path} holds a run already" in again.stderr
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_run_into_a_folder_another_run_writes_is_refused(tmp_path: Path) -> None:
    # Two runs given one folder both trained, their logs interleaved, one's best.pt kept.
    with locked_run_dir(tmp_path):
        done = run_entry_point(tmp_path, "data=tiny", "trainer.max_epochs=1")
    assert done.returncode == 2
    assert f"{tmp_path}: another run is writing to this folder" in done.stderr
    assert {p.name for p in tmp_path.iterdir()} <= {".lock", "train_segmenter.log"}


def test_a_refused_run_leaves_no_folder_it_made(tmp_path: Path) -> None:
    done = run_entry_point(tmp_path / "run", "data=tiny", "trainer.lr=fast")
    assert done.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_the_entry_point_reports_a_missing_treebank_in_one_line(tmp_path: Path) -> None:
    done = run_entry_point(
        tmp_path / "run", "data=ud", f"data.root={tmp_path}", "data.treebank=UD_No"
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: treebank folder {tmp_path}/UD_No not found: check data.treebank and data.root "
        "(or the UD_ROOT environment variable)"
    ]


def tiny_documents():
    config = {"root": str(ROOT), "treebank": "tests/data", "download": False, "base_url": ""}
    config |= {"train": "tiny.conllu", "dev": "tiny.conllu", "test": None}
    config |= {"discover": False, "dev_fraction": 0.1, "split_seed": 1}
    return load_documents(config)


def best_weights(tmp_path: Path, name: str, ema_decay: float | None) -> dict:
    run = tmp_path / name
    run.mkdir()
    settings = TrainSettings(
        max_epochs=3, patience=None, window=32, batch_windows=2, threads=1,
        tune_sentence_bias=False, ema_decay=ema_decay,
    )  # fmt: skip
    result = train(tiny_documents(), TINY_MODEL, settings, run)
    segmenter = Segmenter.load(run / BEST)
    dev = SpanScores()
    for document in tiny_documents().dev:
        dev += score_spans(document.text, document.labels, segmenter.classes(document.text))
    assert dev.as_dict() == result.best_dev  # dev scored the weights best.pt keeps
    return {k: v.clone() for k, v in segmenter.model.state_dict().items()}


def test_ema_keeps_the_average_of_the_weights(tmp_path: Path) -> None:
    # The average does not touch the training itself (same seed, same steps), so an average
    # that forgets at once keeps the weights, and a slow one keeps something else.
    weights = best_weights(tmp_path, "plain", None)
    instant = best_weights(tmp_path, "instant", 1e-9)
    slow = best_weights(tmp_path, "slow", 0.99)
    for name, value in weights.items():
        torch.testing.assert_close(instant[name], value, rtol=0, atol=1e-6)
    assert any(not torch.allclose(slow[k], v, atol=1e-4) for k, v in weights.items())


def test_time_that_runs_out_while_dev_is_scored_ends_the_run_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The next epoch found the time gone before its first step, and was recorded all the same:
    # loss null, dev scored again, the learning rate decayed.
    from biaffine.segmenting import training

    scoring_outlasts_the_budget(monkeypatch, training, "evaluate")
    settings = TrainSettings(
        max_epochs=5, max_minutes=1.0, patience=None, window=32, batch_windows=2, threads=1,
        tune_sentence_bias=False,
    )  # fmt: skip
    result = train(tiny_documents(), TINY_MODEL, settings, tmp_path)
    assert (result.epochs, result.stop_reason) == (1, "max_minutes")
    assert [line["loss"] is not None for line in result.history[:-1]] == [True]


def test_an_ema_decay_outside_0_1_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"ema_decay=1\.0 must be in"):
        train(tiny_documents(), TINY_MODEL, TrainSettings(max_epochs=1, ema_decay=1.0), tmp_path)


def test_spaced_tokens_are_the_training_tokens_with_whitespace_inside() -> None:
    text = "Hà Nội là thủ đô."
    labels = np.zeros(len(text), dtype=np.uint8)
    labels[[5, 8, 15]] = TOKEN_END  # "Hà Nội" "là" "thủ đô"
    labels[16] = SENTENCE_END  # "."
    assert spaced_tokens([LabelledText(text, labels)]) == {"Hà Nội", "thủ đô"}


def tiny_run(
    treebank: Path, tmp_path: Path, sentences: int, settings: TrainSettings
) -> tuple[SegmenterData, Segmenter]:
    """A run on the first ``sentences`` training and 20 dev sentences of ``treebank``: its
    data and its segmenter."""
    folder = tmp_path / "UD_Tiny"
    folder.mkdir()
    head(next(treebank.glob("*-train.conllu")), folder / "train.conllu", sentences)
    head(next(treebank.glob("*-dev.conllu")), folder / "dev.conllu", 20)
    config = {"root": str(tmp_path), "treebank": "UD_Tiny", "download": False, "base_url": ""}
    config |= {"train": "train.conllu", "dev": "dev.conllu", "test": None}
    config |= {"discover": False, "dev_fraction": 0.1, "split_seed": 1}
    data = load_documents(config)
    train(data, TINY_MODEL, settings, tmp_path)
    return data, Segmenter.load(tmp_path / BEST)


@pytest.mark.ud
def test_a_run_with_spaced_words_keeps_them_and_reads_one_more_flag(
    ud_root: Path, tmp_path: Path
) -> None:
    vtb = ud_root / "UD_Vietnamese-VTB"
    if not vtb.is_dir():
        pytest.skip(f"{vtb} not found")
    settings = TrainSettings(max_epochs=1, window=64, threads=1, spaced_words=True)
    data, segmenter = tiny_run(vtb, tmp_path, 60, settings)
    assert segmenter.model.settings["n_features"] == len(FEATURES) + 1
    words = spaced_tokens(data.train)
    assert "bê bối" in {word.lower() for word in words}  # a word of the first 60 sentences
    assert segmenter.vocab.spaced_words == SpacedWords(words).to_data()


@pytest.mark.ud
def test_a_run_with_cased_words_keeps_them_and_reads_two_more_flags(
    ewt_dir: Path, tmp_path: Path
) -> None:
    settings = TrainSettings(max_epochs=1, window=64, threads=1, cased_words=True)
    data, segmenter = tiny_run(ewt_dir, tmp_path, 200, settings)
    assert segmenter.model.settings["n_features"] == len(FEATURES) + 2
    known = segmenter.vocab.cased_words
    assert known == cased_words(data.train).to_data()
    assert "the" in known["lower"]
    assert "american" in known["upper"]
