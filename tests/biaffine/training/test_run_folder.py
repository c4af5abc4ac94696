"""Run folders: locked while a run writes, never overwritten unasked, torn metrics, a full disk."""

from __future__ import annotations

import errno
import fcntl
import gc
import json
import logging
import os
import re
import weakref
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize
from omegaconf import OmegaConf

from biaffine import checkpoint, distributed
from biaffine.cli import report_user_errors
from biaffine.data.treebanks import locate_treebank
from biaffine.training import compose as training_compose
from biaffine.training import train
from biaffine.training.compose import check_resume_config
from biaffine.training.run_state import (
    DiskFullError,
    RunFolderError,
    RunLog,
    find_resume_checkpoint,
    read_metrics,
    remove_unused_run_dir,
    writing,
)

ONE_EPOCH = ["experiment=smoke", "trainer.progress_bar=false", "trainer.max_epochs=1"]


def tiny_config(*overrides: str):
    with initialize(version_base="1.3", config_path="../../../conf"):
        return compose("train", overrides=[*ONE_EPOCH, *overrides])


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def events(run_dir: Path) -> list[tuple[str, int]]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [(r["event"], r["epoch"]) for r in map(json.loads, lines)]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder holding a finished one-epoch run (tests copy it before changing it)."""
    run_dir = tmp_path_factory.mktemp("finished")
    train(tiny_config(), run_dir)
    return run_dir


def copy_run(source: Path, dest: Path) -> Path:
    dest.mkdir()
    for name, data in snapshot(source).items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    return dest


@pytest.mark.parametrize(
    "override",
    ["data.train=NOT_CONLLU", "trainer.init_from=NOT_CONLLU"],
    ids=["treebank", "init-from"],
)
def test_an_overwrite_refused_for_its_inputs_leaves_the_earlier_run(
    finished: Path, tmp_path: Path, override: str
) -> None:
    # The earlier run's checkpoints and metrics were removed first, then the input refused.
    run_dir = copy_run(finished, tmp_path / "run")
    before = snapshot(run_dir)
    bad = tmp_path / "bad.conllu"
    bad.write_text("not CoNLL-U\n")
    cfg = tiny_config("trainer.overwrite=true", override.replace("NOT_CONLLU", str(bad)))
    with pytest.raises(ValueError, match=str(bad)):
        train(cfg, run_dir)
    assert snapshot(run_dir) == before


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["trainer.init_from=SOURCE", "model.encoder.lstm_hidden=32"], "another model config"),
        (["trainer.distill_from=[SOURCE]", "trainer.distill_weight=-1"], "distill_weight=-1"),
        (["trainer.distill_from=[MISSING]"], "trainer.distill_from: MISSING: no such"),
        # Refused for the relations it lacks (those of a transition parser are other labels).
        (["model=arc_hybrid", "trainer.init_from=SOURCE"], "holds a biaffine parser, this run a"),
        # Refused by the loss, once the folder was cleared (or for the teacher's relations).
        (["model=arc_hybrid", "trainer.distill_from=[SOURCE]"], "only a graph parser (model="),
    ],
    ids=["init-from-config", "distill-weight", "missing-teacher", "init-from-kind", "student"],
)
def test_an_overwrite_refused_for_what_it_starts_from_leaves_the_earlier_run(
    finished: Path, tmp_path: Path, overrides: list[str], message: str
) -> None:
    # best.pt, last.pt and metrics.jsonl were removed, then the model built or the teachers
    # loaded, and the run refused for them.
    run_dir = copy_run(finished, tmp_path / "run")
    before = snapshot(run_dir)
    given = {"SOURCE": str(finished / "best.pt"), "MISSING": str(tmp_path / "missing.pt")}
    for key, value in given.items():
        overrides = [o.replace(key, value) for o in overrides]
        message = message.replace(key, value)
    with pytest.raises(ValueError, match=re.escape(message)):
        train(tiny_config("trainer.overwrite=true", *overrides), run_dir)
    assert snapshot(run_dir) == before


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.encoder.lstm_hidden=-3", "lstm_hidden"),
        ("model.arc_mlp=0", "arc_mlp"),
        ("+model.encoder.pretrained={path:MISSING,format:text}", "MISSING: no such file"),
    ],
    ids=["lstm-hidden", "arc-mlp", "missing-vectors"],
)
def test_an_overwrite_refused_for_its_model_settings_leaves_the_earlier_run(
    finished: Path, tmp_path: Path, override: str, message: str
) -> None:
    # The model was built once the folder was cleared: best.pt, last.pt and metrics.jsonl gone.
    run_dir = copy_run(finished, tmp_path / "run")
    before = snapshot(run_dir)
    missing = str(tmp_path / "missing.txt")
    overrides = ["trainer.overwrite=true", override.replace("MISSING", missing)]
    with pytest.raises(ValueError, match=re.escape(message.replace("MISSING", missing))):
        train(tiny_config(*overrides), run_dir)
    assert snapshot(run_dir) == before


SHIPPED_PARSER = Path(__file__).parents[3] / "models" / "en_ewt_small" / "parser.pt"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # Refused once the folder was opened: config.yaml rewritten, a copy left to block a retry.
        ("gone", r"trainer\.distill_from: TEACHER: "),
        # Refused once config.yaml had been rewritten for the run it did not continue.
        ("other vocabularies", "has another relation vocabulary"),
    ],
)
def test_a_resume_whose_teacher_changed_is_refused_and_changes_nothing(
    finished: Path, tmp_path: Path, change: str, message: str
) -> None:
    teacher = tmp_path / "teacher.pt"
    teacher.write_bytes((finished / "best.pt").read_bytes())
    distilled = [f"trainer.distill_from=[{teacher}]"]
    run_dir = tmp_path / "run"
    train(tiny_config(*distilled), run_dir)
    if change == "gone":
        teacher.unlink()
    else:  # EWT's relations, not the tiny treebank's
        teacher.write_bytes(SHIPPED_PARSER.read_bytes())
    before = snapshot(run_dir)
    with pytest.raises(ValueError, match=message.replace("TEACHER", re.escape(str(teacher)))):
        train(tiny_config(*distilled, "trainer.resume=true", "trainer.max_epochs=2"), run_dir)
    assert snapshot(run_dir) == before


def test_the_teachers_are_let_go_once_their_targets_are_computed(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each teacher stayed in memory for the whole run: hundreds of MB for hours.
    loaded: list[weakref.ref] = []
    alive_in_fit: list[int] = []
    load, fit = training_compose.load_teachers, training_compose.fit

    def load_teachers(paths):
        teachers = load(paths)
        loaded.extend(weakref.ref(model) for model, _ in teachers)
        return teachers

    def counting_fit(*args, **kwargs):
        gc.collect()
        alive_in_fit.append(sum(ref() is not None for ref in loaded))
        return fit(*args, **kwargs)

    monkeypatch.setattr(training_compose, "load_teachers", load_teachers)
    monkeypatch.setattr(training_compose, "fit", counting_fit)
    train(tiny_config(f"trainer.distill_from=[{finished / 'best.pt'}]"), tmp_path / "run")
    assert (len(loaded), alive_in_fit) == (1, [0])


def test_a_resume_on_another_number_of_processes_is_refused_and_changes_nothing(
    finished: Path, tmp_path: Path
) -> None:
    # Two processes resumed as one trained other steps (5 a epoch for 3) without a word.
    assert checkpoint.load(finished / "last.pt").metadata["processes"] == 1
    run_dir = copy_run(finished, tmp_path / "run")
    last = checkpoint.load(run_dir / "last.pt")  # as torchrun --nproc_per_node=2 writes it
    checkpoint.rewrite(last, run_dir / "last.pt", vocabs=last.vocabs, metadata={"processes": 2})
    before = snapshot(run_dir)
    message = r"cannot resume on 1 process\(es\) a run trained on 2: .*nproc_per_node=2"
    with pytest.raises(ValueError, match=message):
        train(tiny_config("trainer.resume=true", "trainer.max_epochs=2"), run_dir)
    assert snapshot(run_dir) == before


def test_a_resume_removes_the_temporary_files_a_killed_run_left(
    finished: Path, tmp_path: Path
) -> None:
    # A SIGKILL while last.pt or curves.png was written left .last.pt.XXXX.tmp: they piled up.
    run_dir = copy_run(finished, tmp_path / "run")
    stale = [".last.pt.k2j9x.tmp", ".curves.png.a8b7c.tmp", ".metrics.jsonl.q1w2e.tmp"]
    mine = [".notes.txt.z9z9z.tmp", "x.tmp"]  # not the run's own files: kept
    for name in stale + mine:
        (run_dir / name).write_bytes(b"half")
    refused = tiny_config("trainer.resume=true", "trainer.seed=5")  # changes a fixed setting
    with pytest.raises(ValueError, match="cannot resume with settings"):
        train(refused, run_dir)
    assert all((run_dir / name).exists() for name in stale + mine)  # a refused run changes none
    train(tiny_config("trainer.resume=true", "trainer.max_epochs=2"), run_dir)
    assert not any((run_dir / name).exists() for name in stale)
    assert all((run_dir / name).exists() for name in mine)


def test_a_new_run_into_a_finished_run_folder_is_refused_and_changes_nothing(
    finished: Path, tmp_path: Path
) -> None:
    run_dir = copy_run(finished, tmp_path / "run")
    before = snapshot(run_dir)
    message = (
        r"holds a run already \(last\.pt, best\.pt, metrics\.jsonl\): continue it with "
        r"trainer\.resume=true, replace it with trainer\.overwrite=true"
    )
    with pytest.raises(RunFolderError, match=message):
        train(tiny_config("trainer.seed=2"), run_dir)
    assert snapshot(run_dir) == before
    # A resume from another run into this folder would replace best.pt and metrics.jsonl too.
    other = f"trainer.resume_from={finished / 'last.pt'}"
    with pytest.raises(RunFolderError, match="holds a run already"):
        train(tiny_config("trainer.resume=true", other, "trainer.max_epochs=2"), run_dir)
    assert snapshot(run_dir) == before


def test_overwrite_starts_afresh_and_keeps_the_other_files(finished: Path, tmp_path: Path):
    run_dir = copy_run(finished, tmp_path / "run")
    (run_dir / "notes.txt").write_text("mine")
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "overrides.yaml").write_text("- the earlier run's\n")
    (run_dir / ".hydra" / "mine.txt").write_text("mine too")
    result = train(tiny_config("trainer.seed=2", "trainer.overwrite=true"), run_dir)
    assert events(run_dir) == [("epoch", 1), ("test", 1)]  # one run, not two
    assert checkpoint.load(run_dir / "best.pt").metadata["config"]["trainer"]["seed"] == 2
    assert result.test is not None
    assert (run_dir / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in (run_dir / ".hydra").iterdir()) == ["mine.txt"]


def test_a_resume_from_a_best_pt_is_refused_before_anything_is_copied(
    finished: Path, tmp_path: Path
) -> None:
    # Its best.pt and metrics.jsonl were copied in first, and the folder they were left in
    # refused every new run after ("holds a run already").
    run_dir = tmp_path / "run"
    best = f"trainer.resume_from={finished / 'best.pt'}"
    with pytest.raises(ValueError, match=r"best\.pt: this checkpoint has no training state"):
        train(tiny_config("trainer.resume=true", best), run_dir)
    assert set(snapshot(run_dir)) <= {".lock"}  # train.py removes the folder itself


@pytest.mark.parametrize("kind", ["folder", "device"])
def test_a_resume_from_what_is_no_file_says_what_it_is(tmp_path: Path, kind: str) -> None:
    # A folder or /dev/null "does not exist", said the message.
    given = tmp_path if kind == "folder" else Path("/dev/null")
    expected = f"is a folder: give {tmp_path / 'last.pt'}" if kind == "folder" else "is not a file"
    with pytest.raises(FileNotFoundError, match=re.escape(f"resume_from={given} {expected}")):
        find_resume_checkpoint(True, str(given), tmp_path / "run")


def test_a_treebank_split_read_from_a_pipe_is_not_missing(tmp_path: Path) -> None:
    # data.train=<(zcat train.conllu.gz) was "treebank file(s) not found".
    fifo = tmp_path / "train.conllu"
    os.mkfifo(fifo)
    files = locate_treebank(tmp_path.parent, tmp_path.name, {"train": fifo.name})
    assert files.train == fifo


def test_overwrite_and_resume_of_the_same_run_contradict(finished: Path, tmp_path: Path):
    run_dir = copy_run(finished, tmp_path / "run")
    before = snapshot(run_dir)
    with pytest.raises(RunFolderError, match="pass one of them"):
        train(tiny_config("trainer.resume=true", "trainer.overwrite=true"), run_dir)
    assert snapshot(run_dir) == before


def test_a_second_run_started_while_one_trains_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fit, tries = training_compose.fit, []

    def fit_and_start_another(*args, **kwargs):
        if not tries:  # the second run starts while the first one trains
            tries.append(tmp_path)
            with pytest.raises(RunFolderError, match="another run is writing to this folder"):
                train(tiny_config("trainer.seed=2"), tmp_path)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(training_compose, "fit", fit_and_start_another)
    result = train(tiny_config(), tmp_path)
    assert tries
    assert events(tmp_path) == [("epoch", 1), ("test", 1)]  # nothing interleaved
    assert checkpoint.load(tmp_path / "best.pt").metadata["config"]["trainer"]["seed"] == 1
    assert result.test is not None


def test_a_folder_locked_by_another_process_is_left_as_it_was(tmp_path: Path) -> None:
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(RunFolderError, match=f"^{re.escape(str(tmp_path))}: another run"):
            train(tiny_config(), tmp_path)
    finally:
        os.close(fd)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]


def test_a_refused_run_never_removes_the_folder_of_the_run_starting_there(tmp_path: Path):
    # The locked folder holds start-up files only, as while the other run reads its data.
    (tmp_path / ".hydra").mkdir()
    (tmp_path / "config.yaml").write_text("the other run's\n")
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert not remove_unused_run_dir(tmp_path)
    finally:
        os.close(fd)
    assert (tmp_path / "config.yaml").is_file()
    assert remove_unused_run_dir(tmp_path)  # unlocked now: a failed start's leftovers
    assert not tmp_path.exists()


def test_a_planted_lock_link_is_refused_and_not_followed(tmp_path: Path) -> None:
    run_dir, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run_dir.mkdir()
    (run_dir / ".lock").symlink_to(elsewhere)
    with pytest.raises(RunFolderError, match=r"\.lock is a symbolic link"):
        train(tiny_config(), run_dir)
    assert not elsewhere.exists()


def test_rank_0_refusing_the_folder_stops_the_other_ranks_before_they_train(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rank 1 of two: rank 0 found the folder locked and broadcasts why.
    monkeypatch.setattr(distributed, "world", lambda: distributed.World(rank=1, size=2))
    monkeypatch.setattr(distributed, "broadcast", lambda value, here: "run: another run is ...")
    with pytest.raises(RunFolderError, match="another run is"):
        train(tiny_config(), tmp_path / "rank1")
    assert not (tmp_path / "rank1").exists()  # rank 1 writes nothing


def write_metrics(path: Path, *lines: str) -> None:
    path.write_text("".join(lines))


def test_a_torn_last_metrics_line_is_dropped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "metrics.jsonl"
    write_metrics(path, '{"event": "epoch", "epoch": 1}\n', '{"event": "epoch", "epoch": 2, "st')
    with caplog.at_level(logging.WARNING):
        assert read_metrics(path) == [{"event": "epoch", "epoch": 1}]
    assert f"{path}:2: dropped a torn last line" in caplog.text
    write_metrics(path, '{"event": "epoch", "epoch": 1}\n', "\x00\x00\x00\n")  # disk full
    assert read_metrics(path) == [{"event": "epoch", "epoch": 1}]


def test_a_bad_metrics_line_before_the_last_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    write_metrics(
        path, '{"event": "epoch", "epoch": 1}\n', '{"ev\n', '{"event": "test", "epoch": 1}\n'
    )
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}:2: "):
        read_metrics(path)
    write_metrics(path, "[1]\n", '{"event": "test", "epoch": 1}\n')
    with pytest.raises(ValueError, match=r":1: not a metrics record"):
        read_metrics(path)


def test_a_run_resumes_over_a_torn_last_metrics_line(finished: Path, tmp_path: Path) -> None:
    run_dir = copy_run(finished, tmp_path / "run")
    with (run_dir / "metrics.jsonl").open("a") as out:
        out.write('{"event": "epoch", "epoch": 2, "step": 2, "lr": 0.0')  # killed mid-append
    result = train(tiny_config("trainer.resume=true", "trainer.max_epochs=2"), run_dir)
    assert result.epochs == 2
    assert events(run_dir) == [("epoch", 1), ("epoch", 2), ("test", result.best_epoch)]


class _FullDisk:
    """A file that takes no byte: every write fails as on a full disk."""

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def flush(self) -> None:
        pass


def test_a_full_disk_is_one_line_naming_the_file_and_the_run_resumes(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    run_dir = copy_run(finished, tmp_path / "run")
    real_save = torch.save
    # torch reports the failed write as a RuntimeError whose context is the OSError.
    monkeypatch.setattr(torch, "save", lambda payload, handle: real_save(payload, _FullDisk()))
    resume = tiny_config("trainer.resume=true", "trainer.max_epochs=2")
    with pytest.raises(SystemExit) as exited:
        report_user_errors(lambda: train(resume, run_dir))
    assert exited.value.code == 2
    error = capsys.readouterr().err
    expected = (
        rf"error: {re.escape(str(run_dir))}/(best|last)\.pt: No space left on device \(the "
        r"checkpoints written so far are intact\): free some space, then continue the run "
        r"with trainer\.resume=true\n"
    )
    assert re.fullmatch(expected, error), error
    monkeypatch.undo()
    assert train(resume, run_dir).epochs == 2  # the checkpoints stayed intact


def test_a_full_disk_before_any_checkpoint_says_to_start_again(tmp_path: Path) -> None:
    with pytest.raises(DiskFullError) as raised, writing(tmp_path / "metrics.jsonl", tmp_path):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
    assert str(raised.value) == (
        f"{tmp_path / 'metrics.jsonl'}: {os.strerror(errno.EDQUOT)} (the checkpoints written "
        "so far are intact): free some space, then start the run again with "
        "trainer.overwrite=true"
    )
    with pytest.raises(PermissionError), writing(tmp_path / "metrics.jsonl", tmp_path):
        raise PermissionError(errno.EACCES, "other errors pass unchanged")


def test_a_full_disk_under_the_log_file_is_one_error_naming_it(tmp_path: Path) -> None:
    handler = RunLog(tmp_path / "train.log")
    logger = logging.getLogger("test_run_folder.full_disk")
    logger.addHandler(handler)
    try:
        handler.stream.close()
        handler.stream = _FullDisk()  # type: ignore[assignment]
        with pytest.raises(DiskFullError, match=r"train\.log: No space left on device \(the"):
            logger.warning("epoch 2: ...")
    finally:
        logger.removeHandler(handler)


def test_a_resume_refuses_keys_its_command_line_adds_or_removes_but_not_new_defaults() -> None:
    saved = {"model": {"encoder": {"hidden": 8}}, "optimizer": {"lr": 0.1}}
    now = OmegaConf.create(
        {"model": {"encoder": {"hidden": 8, "pretrained": {"path": "v.txt"}, "new": 1}}}
    )
    with pytest.raises(ValueError, match="cannot resume") as refused:
        check_resume_config(saved, now, given=["model.encoder.pretrained", "optimizer"])
    assert str(refused.value) == (
        "cannot resume with settings the interrupted run did not have: "
        "model.encoder.pretrained.path='v.txt' (the interrupted run had no such setting), "
        "optimizer.lr removed (was 0.1); drop those overrides, or start a new run"
    )
    check_resume_config(saved | {"optimizer": {}}, now, given=["trainer.max_epochs"])


def test_a_resume_keeps_its_start_as_it_was() -> None:
    # trainer.init_from added to a resume was ignored in silence, and recorded in its config;
    # one dropped was lost from the record, and the next leg, given the first command, refused.
    saved = {"trainer": {"init_from": "a.pt"}}
    check_resume_config(saved, OmegaConf.create(saved))
    for before, now in (("a.pt", None), ("a.pt", "b.pt"), (None, "b.pt")):
        with pytest.raises(ValueError, match="cannot resume") as refused:
            check_resume_config(
                {"trainer": {"init_from": before}},
                OmegaConf.create({"trainer": {"init_from": now}}),
            )
        assert f"trainer.init_from={now!r} (was {before!r})" in str(refused.value)
