"""Training loop: LR decay, progress bookkeeping, RNG state, early stopping, exact resume."""

from __future__ import annotations

import itertools
import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hydra import compose, initialize

from biaffine import checkpoint
from biaffine.metrics import AttachmentScores
from biaffine.nn.averaging import weight_average
from biaffine.training import FitSettings, TrainResult, loop, train
from biaffine.training.loop import _stop_reason
from biaffine.training.optim import lr_decay_scheduler
from biaffine.training.run_state import (
    RunFolderError,
    RunWriter,
    TrainState,
    get_rng_state,
    remove_unused_run_dir,
    set_rng_state,
)

# Several batches per epoch (max_tokens=20), so batch order and dropout RNG both matter.
TINY = ["experiment=smoke", "trainer.max_tokens=20", "trainer.progress_bar=false"]


def tiny_config(*overrides: str):
    with initialize(version_base="1.3", config_path="../../../conf"):
        return compose("train", overrides=[*TINY, *overrides])


def scores(heads: int, words: int = 10) -> AttachmentScores:
    return AttachmentScores(
        n_sentences=1, n_words=words, n_correct_heads=heads, n_correct_labeled=heads
    )


def epoch_records(run_dir: Path) -> list[dict]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for record in records:
        record.pop("seconds", None)  # wall-clock time is the one thing allowed to differ
    return records


def test_lr_decays_by_rate_every_decay_steps() -> None:
    optimizer = torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))], lr=2e-3)
    scheduler = lr_decay_scheduler(optimizer, rate=0.75, steps=100)
    for _ in range(200):
        optimizer.step()
        scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(2e-3 * 0.75**2)
    with pytest.raises(ValueError, match="lr_decay"):
        lr_decay_scheduler(optimizer, rate=1.5, steps=100)


def test_weight_average_warms_up_then_follows_the_decay() -> None:
    model = torch.nn.Linear(1, 1, bias=False)
    average = weight_average(model, decay=0.5)
    expected = None
    for k, value in enumerate([4.0, 8.0, 0.0, 2.0, 6.0]):
        with torch.no_grad():
            model.weight.fill_(value)
        average.update_parameters(model)
        # The first update copies; update k (k earlier ones) keeps min(0.5, (1 + k) / (10 + k))
        # of the average: 2/11, 3/12, 4/13, 5/14 here, the decay itself only from k = 8 on.
        keep = min(0.5, (1 + k) / (10 + k))
        expected = value if expected is None else keep * expected + (1 - keep) * value
        assert average.module.weight.item() == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"ema_decay=1\.0"):
        weight_average(model, decay=1.0)


def test_train_state_records_best_and_counts_bad_epochs() -> None:
    state = TrainState()
    for epoch, heads in enumerate([5, 7, 6, 7, 8], start=1):
        state.epoch = epoch
        state.record(scores(heads))
        if epoch == 4:
            assert (state.best_epoch, state.bad_epochs) == (2, 2)  # ties do not count as better
    assert (state.best_epoch, state.bad_epochs) == (5, 0)
    assert TrainState.from_dict(state.to_dict()) == state


def test_stop_reasons() -> None:
    settings = FitSettings(max_epochs=5, max_tokens=10, patience=2, max_steps=100)
    assert _stop_reason(TrainState(epoch=4, step=10), settings, started=1e18) is None
    assert _stop_reason(TrainState(epoch=5), settings, started=1e18) == "max_epochs"
    assert _stop_reason(TrainState(epoch=1, bad_epochs=2), settings, started=1e18) == "patience"
    assert _stop_reason(TrainState(epoch=1, step=100), settings, started=1e18) == "max_steps"
    timed = FitSettings(max_epochs=5, max_tokens=10, max_minutes=1e-9)
    assert _stop_reason(TrainState(epoch=1), timed, started=0.0) == "max_minutes"


def test_rng_state_is_plain_data_and_restores_every_generator(tmp_path: Path) -> None:
    torch.save(get_rng_state(), tmp_path / "rng.pt")
    expected = (random.random(), np.random.random(), torch.rand(3))  # noqa: NPY002
    set_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    again = (random.random(), np.random.random(), torch.rand(3))  # noqa: NPY002
    assert expected[:2] == again[:2]
    assert torch.equal(expected[2], again[2])


def test_truncate_metrics_keeps_epochs_up_to_the_resumed_one(tmp_path: Path) -> None:
    writer = RunWriter(tmp_path, parser="x", model_config={}, vocabs=None, metadata={})  # type: ignore[arg-type]
    for epoch in (1, 2, 3):
        writer.append_metrics({"event": "epoch", "epoch": epoch})
    writer.append_metrics({"event": "test", "epoch": 2})
    writer.truncate_metrics(2)
    assert [r["epoch"] for r in epoch_records(tmp_path)] == [1, 2]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    """Three epochs in one go: the reference for the resume and seed tests."""
    return train(tiny_config(), tmp_path_factory.mktemp("uninterrupted"))


def test_resume_after_interruption_equals_uninterrupted_run(
    tmp_path: Path, uninterrupted: TrainResult
) -> None:
    first = train(tiny_config("trainer.max_epochs=1"), tmp_path)
    assert (first.epochs, first.stop_reason) == (1, "max_epochs")
    resumed = train(tiny_config("trainer.resume=true"), tmp_path)
    assert resumed.epochs == 3
    assert resumed.steps == uninterrupted.steps
    assert resumed.best_dev == uninterrupted.best_dev
    assert resumed.test == uninterrupted.test
    assert epoch_records(tmp_path) == epoch_records(uninterrupted.run_dir)
    for name in ("last.pt", "best.pt"):
        ours = checkpoint.load(tmp_path / name)
        reference = checkpoint.load(uninterrupted.run_dir / name)
        assert ours.state_dict.keys() == reference.state_dict.keys()
        for key, value in ours.state_dict.items():
            assert torch.equal(value, reference.state_dict[key]), (name, key)
    ours = checkpoint.load(tmp_path / "last.pt").training_state
    reference = checkpoint.load(uninterrupted.run_dir / "last.pt").training_state
    assert ours["progress"] == reference["progress"]
    assert ours["scheduler"] == reference["scheduler"]
    for key, value in ours["optimizer"]["state"].items():
        for name, tensor in value.items():
            assert torch.equal(tensor, reference["optimizer"]["state"][key][name])


def test_a_run_stopped_while_writing_last_pt_resumes_with_every_epoch_line_once(
    tmp_path: Path, uninterrupted: TrainResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    # last.pt was written before the epoch's metrics line: a stop between them lost the line.
    save_last = RunWriter.save_last

    def stopped_at_epoch_2(self, model, optimizer, scheduler, state, average=None) -> None:
        if state.epoch == 2:
            raise KeyboardInterrupt
        save_last(self, model, optimizer, scheduler, state, average)

    monkeypatch.setattr(RunWriter, "save_last", stopped_at_epoch_2)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(), tmp_path)
    monkeypatch.setattr(RunWriter, "save_last", save_last)
    assert [record["epoch"] for record in epoch_records(tmp_path)] == [1, 2]
    resumed = train(tiny_config("trainer.resume=true"), tmp_path)
    assert resumed.best_dev == uninterrupted.best_dev
    assert epoch_records(tmp_path) == epoch_records(uninterrupted.run_dir)


def test_same_seed_gives_the_same_first_epoch_and_another_seed_does_not(
    tmp_path: Path, uninterrupted: TrainResult
) -> None:
    # The interrupted run above already reproduces epoch 1 with the same seed; here the seed
    # itself must matter (batch order, initial weights, dropout).
    train(tiny_config("trainer.max_epochs=1", "trainer.seed=2"), tmp_path)
    other = checkpoint.load(tmp_path / "last.pt").state_dict
    reference = epoch_records(uninterrupted.run_dir)[0]
    assert epoch_records(tmp_path)[0]["train_loss"] != reference["train_loss"]
    assert any(not torch.equal(v, torch.zeros_like(v)) for v in other.values())


def test_resume_without_last_checkpoint_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"last\.pt does not exist.*hydra\.run\.dir"):
        train(tiny_config("trainer.resume=true"), tmp_path)


def test_a_run_stopped_before_its_first_last_pt_is_told_to_start_again(
    tmp_path: Path, uninterrupted: TrainResult
) -> None:
    # Killed in its first epoch after best.pt: resume said "last.pt does not exist", a new run
    # "holds a run already ... continue it with trainer.resume=true": each sent to the other.
    for name in ("best.pt", "metrics.jsonl"):
        shutil.copyfile(uninterrupted.run_dir / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match=r"stopped before it wrote last\.pt .*overwrite"):
        train(tiny_config("trainer.resume=true"), tmp_path)
    with pytest.raises(RunFolderError, match=r"\(best\.pt, metrics\.jsonl\): replace it with"):
        train(tiny_config(), tmp_path)
    assert train(tiny_config("trainer.overwrite=true"), tmp_path).epochs == 3


def test_resume_from_another_run_dir_carries_best_and_metrics(
    tmp_path: Path, uninterrupted: TrainResult
) -> None:
    last = uninterrupted.run_dir / "last.pt"
    result = train(
        tiny_config("trainer.resume=true", f"trainer.resume_from={last}", "trainer.max_epochs=3"),
        tmp_path,
    )
    assert result.epochs == 3  # nothing left to do, but the test split is scored again
    assert result.test == uninterrupted.test
    assert (tmp_path / "best.pt").is_file()
    records = epoch_records(tmp_path)
    assert records == epoch_records(uninterrupted.run_dir)


def test_patience_stops_early_when_dev_does_not_improve(tmp_path: Path) -> None:
    # lr=0: the weights never change, so dev never improves after epoch 1.
    cfg = tiny_config("trainer.patience=1", "trainer.max_epochs=5", "optimizer.lr=0.0")
    result = train(cfg, tmp_path)
    assert (result.stop_reason, result.epochs, result.best_epoch) == ("patience", 2, 1)


def test_treebank_without_train_split_cannot_be_trained(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no train split"):
        train(tiny_config("data.train=null"), tmp_path)


def test_weight_average_is_scored_kept_and_resumed_exactly(tmp_path: Path) -> None:
    ema = "trainer.ema_decay=0.9"
    whole = train(tiny_config(ema), tmp_path / "whole")
    first = train(tiny_config(ema, "trainer.max_epochs=1"), tmp_path / "parts")
    assert first.epochs == 1
    resumed = train(tiny_config(ema, "trainer.resume=true"), tmp_path / "parts")
    assert (resumed.best_dev, resumed.test) == (whole.best_dev, whole.test)
    assert epoch_records(tmp_path / "parts") == epoch_records(whole.run_dir)
    last = checkpoint.load(whole.run_dir / "last.pt")
    average = last.training_state["average"]
    assert int(average["n_averaged"]) == whole.steps
    best = checkpoint.load(whole.run_dir / "best.pt").state_dict
    resumed_best = checkpoint.load(tmp_path / "parts" / "best.pt").state_dict
    assert all(torch.equal(best[k], resumed_best[k]) for k in best)
    if whole.best_epoch == whole.epochs:  # then best.pt holds the final average
        assert all(torch.equal(best[k], average[f"module.{k}"]) for k in best)
    # The average is not the weights: best.pt of an averaged run is not last.pt's weights.
    assert any(not torch.equal(average[f"module.{k}"], v) for k, v in last.state_dict.items())


def test_resume_refuses_to_add_or_drop_the_weight_average(tmp_path: Path) -> None:
    train(tiny_config("trainer.max_epochs=1"), tmp_path)
    with pytest.raises(ValueError, match=r"trainer\.ema_decay=0\.9 \(was None\)"):
        train(tiny_config("trainer.resume=true", "trainer.ema_decay=0.9"), tmp_path)


def test_a_conflicting_resume_is_refused_before_the_run_dir_changes(tmp_path: Path) -> None:
    train(tiny_config("trainer.max_epochs=1"), tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    overrides = ("trainer.resume=true", "model.encoder.lstm_hidden=32", "trainer.seed=3")
    message = r"model\.encoder\.lstm_hidden=32 \(was 16\), trainer\.seed=3 \(was 1\)"
    with pytest.raises(ValueError, match=message):
        train(tiny_config(*overrides), tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # config.yaml too
    # Limits may change: this resume runs.
    assert train(tiny_config("trainer.resume=true", "trainer.max_epochs=2"), tmp_path).epochs == 2


def test_max_minutes_stops_at_the_first_step_past_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A clock that ticks one second per reading: fit's start (0), the stop check (1), the
    # epoch's start (2), then the check after the first step (3) reaches the 3 s budget.
    ticks = itertools.count()
    monkeypatch.setattr(loop, "time", SimpleNamespace(monotonic=lambda: float(next(ticks))))
    # max_tokens=20 gives several batches per epoch: the old check stopped after a whole one.
    result = train(tiny_config("trainer.max_minutes=0.05"), tmp_path)
    assert (result.stop_reason, result.epochs, result.steps) == ("max_minutes", 1, 1)
    assert (tmp_path / "best.pt").is_file()
    last = checkpoint.load(tmp_path / "last.pt").training_state["progress"]
    assert (last["epoch"], last["step"]) == (1, 1)
    assert [r["step"] for r in epoch_records(tmp_path) if r["event"] == "epoch"] == [1]


def test_max_minutes_counts_the_training_time_of_the_runs_earlier_legs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each start had the whole budget again, so a run cut off and resumed trained longer than
    # one that never stopped.
    ticks = itertools.count(step=10)  # ten seconds a clock reading
    monkeypatch.setattr(loop, "time", SimpleNamespace(monotonic=lambda: float(next(ticks))))
    train(tiny_config("trainer.max_epochs=1"), tmp_path)
    spent = checkpoint.load(tmp_path / "last.pt").training_state["seconds"]
    assert spent >= 10
    resumed = ("trainer.resume=true", f"trainer.max_minutes={spent / 60}")  # nothing left
    stopped = train(tiny_config(*resumed), tmp_path)
    assert (stopped.stop_reason, stopped.epochs) == ("max_minutes", 1)
    more = ("trainer.resume=true", f"trainer.max_minutes={spent / 60 + 60}")
    assert train(tiny_config(*more), tmp_path).epochs == 3
    assert checkpoint.load(tmp_path / "last.pt").training_state["seconds"] > spent


def test_a_failed_start_removes_the_run_dir_it_left_empty(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / "train.log").write_text("")
    with pytest.raises(FileNotFoundError, match="data=tiny"):
        train(tiny_config("data.train=absent.conllu"), run_dir)
    assert remove_unused_run_dir(run_dir)
    assert not run_dir.exists()
    kept = tmp_path / "kept"
    train(tiny_config("trainer.max_epochs=1"), kept)
    assert not remove_unused_run_dir(kept)  # it holds checkpoints
    assert (kept / "last.pt").is_file()
