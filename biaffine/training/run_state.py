"""What a training run keeps on disk: progress, checkpoints, metrics lines, and RNG states.

Everything is plain data, so ``last.pt`` loads with ``torch.load(weights_only=True)`` and a
resumed run continues exactly where the interrupted one stopped.

A run owns its folder while it writes: :func:`locked_run_dir` holds a lock on ``.lock`` there,
so a second run into the same folder is refused at once, and :func:`start_afresh` refuses to
replace the results of an earlier run unless asked to (``trainer.overwrite=true``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import json
import logging
import os
import random
import shutil
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from biaffine import checkpoint
from biaffine.data.vocab import Vocabs
from biaffine.files import atomic_open
from biaffine.metrics import AttachmentScores
from biaffine.plot import CURVES, plot_run
from biaffine.training.optim import load_schedule

__all__ = [
    "BEST",
    "CONFIG",
    "HYDRA_RECORD",
    "LAST",
    "LOCK",
    "LOG",
    "METRICS",
    "DiskFullError",
    "RunFolderError",
    "RunLog",
    "RunWriter",
    "TrainState",
    "carry_history",
    "find_resume_checkpoint",
    "get_rng_state",
    "locked_run_dir",
    "read_metrics",
    "remove_stale_temporaries",
    "remove_unused_run_dir",
    "restore",
    "resumes_in",
    "run_files",
    "set_rng_state",
    "start_afresh",
    "writing",
]

BEST, LAST, METRICS, CONFIG = "best.pt", "last.pt", "metrics.jsonl", "config.yaml"
LOCK, LOG, HYDRA_RECORD = ".lock", "train.log", ".hydra"
# A run's results: a new run never replaces them unless trainer.overwrite=true.
_RESULTS = (LAST, BEST, METRICS)
# Every file a run writes, removed by a fresh start: last.pt first, so that a fresh start cut
# short never leaves a resumable mix of two runs. The .hydra folder holds Hydra's three files.
_RUN_FILES = (*_RESULTS, CURVES, CONFIG, LOG)
_HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")
_COUNTERS = ("epoch", "step", "best_epoch", "bad_epochs")
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})

log = logging.getLogger(__name__)


class RunFolderError(ValueError):
    """A run folder that cannot take this run: another run writes there, or it holds results."""


class DiskFullError(OSError):
    """No space left (or a quota reached) while a run wrote one of its files.

    ``str()`` is one line: the file, the problem, and how to go on.
    """

    def __str__(self) -> str:
        """``<file>: <problem and what to do>``."""
        return f"{self.filename}: {self.strerror}"


@dataclass(slots=True)
class TrainState:
    """Progress of a run, saved in ``last.pt`` so a resumed run continues where it stopped.

    Attributes:
        epoch: epochs completed.
        step: optimizer steps completed.
        best_dev: the best dev scores so far (None before the first evaluation).
        best_epoch: the epoch that scored ``best_dev``.
        bad_epochs: epochs since ``best_epoch`` (the early-stopping counter).
        seconds: wall seconds the run has trained, every leg of it, up to the last epoch
            saved: ``trainer.max_minutes`` counts them (kept in ``last.pt`` beside the
            progress, not in it, and left out of comparisons: no two runs take the same time).
    """

    epoch: int = 0
    step: int = 0
    best_dev: AttachmentScores | None = None
    best_epoch: int = 0
    bad_epochs: int = 0
    seconds: float = field(default=0.0, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (scores as their integer counts)."""
        best = dataclasses.asdict(self.best_dev) if self.best_dev is not None else None
        return {**{k: getattr(self, k) for k in _COUNTERS}, "best_dev": best}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainState:
        """Inverse of :meth:`to_dict`."""
        best = values["best_dev"]
        counters = {k: int(values[k]) for k in _COUNTERS}
        return cls(**counters, best_dev=AttachmentScores(**best) if best is not None else None)

    def record(self, dev_scores: AttachmentScores) -> bool:
        """Take the dev scores of the epoch just finished; True if they are the best so far."""
        improved = dev_scores.is_better_than(self.best_dev)
        if improved:
            self.best_dev, self.best_epoch, self.bad_epochs = dev_scores, self.epoch, 0
        else:
            self.bad_epochs += 1
        return improved


class RunWriter:
    """Writes a run's checkpoints and metrics lines into its run directory."""

    def __init__(
        self, run_dir: Path, *, parser: str, model_config: dict, vocabs: Vocabs, metadata: dict
    ) -> None:
        """Remember what every checkpoint of this run carries besides weights and progress.

        Args:
            run_dir: an existing folder.
            parser: the parser kind (``model.kind``).
            model_config: ``model.config()``, enough to rebuild the model.
            vocabs: the training vocabularies.
            metadata: plain data kept in every checkpoint (resolved config, treebank, ...).
        """
        self.run_dir = run_dir
        self.parser = parser
        self.model_config = model_config
        self.vocabs = vocabs
        self.metadata = metadata

    def save_best(self, model: nn.Module, state: TrainState) -> Path:
        """Write ``best.pt``: the model for parsing, no optimizer state."""
        return self._save(BEST, model, state, None)

    def save_last(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        scheduler: torch.optim.lr_scheduler.LRScheduler,
        state: TrainState,
        average: AveragedModel | None = None,
    ) -> Path:
        """Write ``last.pt``: the model plus all that :func:`restore` needs to continue."""
        training_state = {
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "progress": state.to_dict(),
            "seconds": state.seconds,
            "rng": get_rng_state(),
        }
        if average is not None:
            training_state["average"] = average.state_dict()
        return self._save(LAST, model, state, training_state)

    def _save(self, name: str, model: nn.Module, state: TrainState, training: dict | None) -> Path:
        path = self.run_dir / name
        with writing(path, self.run_dir):
            checkpoint.save(
                path,
                parser=self.parser,
                model_config=self.model_config,
                vocabs=self.vocabs,
                state_dict=model.state_dict(),
                metadata={**self.metadata, "progress": state.to_dict()},
                training_state=training,
            )
        return path

    def append_metrics(self, record: dict[str, Any]) -> None:
        """Add one JSON line to ``metrics.jsonl`` and redraw ``curves.png`` from it.

        The plot needs matplotlib (an optional dependency): without it the run goes on, and
        ``python -m biaffine.plot RUN_DIR`` draws it later.
        """
        path = self.run_dir / METRICS
        with writing(path, self.run_dir), path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        try:
            with writing(self.run_dir / CURVES, self.run_dir):
                plot_run(self.run_dir)
        except ImportError:
            log.debug("matplotlib is not installed: no curves.png (python -m biaffine.plot)")
        except ValueError as error:  # a drawing problem never stops training
            log.warning("curves.png not drawn: %s", error)

    def truncate_metrics(self, last_epoch: int) -> None:
        """Keep only epoch records up to ``last_epoch`` (a resumed run rewrites what follows).

        A torn last line (an append cut short) is dropped with a warning, see
        :func:`read_metrics`; the file is rewritten atomically.
        """
        path = self.run_dir / METRICS
        if not path.is_file():
            return
        records = read_metrics(path)
        kept = [r for r in records if r.get("event") == "epoch" and r["epoch"] <= last_epoch]
        with writing(path, self.run_dir), atomic_open(path, "w", encoding="utf-8") as out:
            out.write("".join(json.dumps(r) + "\n" for r in kept))


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl``, one JSON object with an integer ``epoch`` a line.

    A last line that does not parse is what an append cut short leaves (a kill, a full disk):
    it is dropped, with a warning naming it. A bad line before it is an error.

    Raises:
        ValueError: naming ``path``, the line number and the problem of a bad line that is
            not the last one.
    """
    lines = [
        (number, line)
        for number, line in enumerate(path.read_bytes().split(b"\n"), 1)
        if line.strip()
    ]
    records = []
    for index, (number, line) in enumerate(lines):
        try:
            records.append(_metrics_record(line))
        except ValueError as error:
            if index < len(lines) - 1:
                raise ValueError(f"{path}:{number}: {error}") from None
            log.warning("%s:%d: dropped a torn last line (%s)", path, number, error)
    return records


def _metrics_record(line: bytes) -> dict[str, Any]:
    # UnicodeDecodeError and JSONDecodeError are ValueErrors.
    record = json.loads(line.decode("utf-8"))
    if not isinstance(record, dict) or not isinstance(record.get("epoch"), int):
        raise ValueError("not a metrics record (a JSON object with an integer epoch)")
    return record


class RunLog(logging.FileHandler):
    """A run's ``train.log``: a full disk stops the run as for its other files.

    :class:`logging.Handler` would print a traceback for every record it cannot write and go
    on; a full disk or quota raises :class:`DiskFullError` from the logging call instead, one
    line naming the log (another write error is still reported the standard way).
    """

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        """Raise a full disk as :class:`DiskFullError`; leave other errors to logging."""
        path = Path(self.baseFilename)
        error = _disk_full_cause(sys.exc_info()[1])
        if error is None:
            super().handleError(record)
            return
        with writing(path, path.parent):
            raise error


@contextlib.contextmanager
def writing(path: Path, run_dir: Path) -> Iterator[None]:
    """Turn a full disk or quota while writing ``path`` into a :class:`DiskFullError`.

    Its message names ``path`` and how to go on: resume from ``run_dir/last.pt`` (written
    atomically, so intact) when there is one, else start again. torch reports a failed write
    as a RuntimeError whose context is the OSError; both are recognised.
    """
    try:
        yield
    except DiskFullError:
        raise
    except (OSError, RuntimeError) as error:
        full = _disk_full_cause(error)
        if full is None:
            raise
        if (run_dir / LAST).is_file():
            then = "free some space, then continue the run with trainer.resume=true"
        else:
            then = "free some space, then start the run again with trainer.overwrite=true"
        problem = f"{os.strerror(full.errno)} (the checkpoints written so far are intact): {then}"
        raise DiskFullError(full.errno, problem, str(path)) from error


def _disk_full_cause(error: BaseException | None) -> OSError | None:
    """The ENOSPC or EDQUOT OSError among ``error`` and its causes, if any."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, OSError) and error.errno in _DISK_FULL:
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


@contextlib.contextmanager
def locked_run_dir(run_dir: Path) -> Iterator[None]:
    """Create ``run_dir`` if needed and hold an exclusive lock on its ``.lock`` for the block.

    The lock (``flock``) is released when the process ends, however it ends; the empty
    ``.lock`` file stays. It is opened without following a symbolic link, so a link planted
    there cannot make the run create or lock a file elsewhere.

    Raises:
        RunFolderError: another process holds the lock (a run writing to ``run_dir``), or
            ``.lock`` is a symbolic link or not a regular file.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / LOCK
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as error:
        if error.errno != errno.ELOOP:
            raise
        raise RunFolderError(
            f"{path} is a symbolic link: remove it (runs lock that file)"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunFolderError(f"{path} is not a regular file: remove it (runs lock this file)")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderError(
                f"{run_dir}: another run is writing to this folder (it holds {LOCK}); wait for "
                "it to end, or choose another run folder (hydra.run.dir; hydra.sweep.dir in a "
                "sweep)"
            ) from None
        yield
    finally:
        os.close(fd)


def remove_stale_temporaries(run_dir: Path) -> list[str]:
    """Remove the temporary files a killed run left beside its own files; their names.

    An atomic write (:func:`biaffine.files.atomic_open`) goes to ``.NAME.XXXX.tmp`` first: a
    SIGKILL leaves it behind, and they piled up run after run (and kept an unused folder from
    being removed). Only those of the run's own files (``last.pt``, ``curves.png``, ...) go, and
    only under :func:`locked_run_dir`, where no other run writes.
    """
    stale = [
        entry
        for entry in run_dir.glob(".*.tmp")
        if entry.is_file() and any(entry.name.startswith(f".{name}.") for name in _RUN_FILES)
    ]
    for entry in stale:
        entry.unlink(missing_ok=True)
    return sorted(entry.name for entry in stale)


def start_afresh(run_dir: Path, *, overwrite: bool) -> None:
    """Ready ``run_dir`` for a new run: remove the files an earlier run left there.

    Only the run's own files go (``last.pt`` first, then ``best.pt``, ``metrics.jsonl``,
    ``curves.png``, ``config.yaml``, ``train.log`` and Hydra's files in ``.hydra/``); anything
    else in the folder is kept. Call it holding :func:`locked_run_dir`.

    Raises:
        RunFolderError: the folder holds an earlier run's checkpoints or metrics, or files of
            a run's names without a run's record (``.hydra/config.yaml``: the user's own
            ``config.yaml`` or ``curves.png``), and
            ``overwrite`` is False.
    """
    results = [name for name in _RESULTS if os.path.lexists(run_dir / name)]
    if not overwrite and not (run_dir / HYDRA_RECORD / "config.yaml").exists():
        # Without a run's record, a config.yaml or curves.png there is the user's own (not
        # train.log: Hydra's logging has opened it by now).
        others = [name for name in (CONFIG, CURVES) if os.path.lexists(run_dir / name)]
        if others and not results:
            raise RunFolderError(
                f"{run_dir} holds {', '.join(others)}, which no run there wrote: replace them "
                "with trainer.overwrite=true, or choose another run folder (hydra.run.dir; "
                "hydra.sweep.dir in a sweep)"
            )
    if results and not overwrite:
        # Without last.pt (a run stopped in its first epoch) there is nothing to continue.
        go_on = "continue it with trainer.resume=true, " if LAST in results else ""
        raise RunFolderError(
            f"{run_dir} holds a run already ({', '.join(results)}): {go_on}replace it with "
            "trainer.overwrite=true, or choose another run folder (hydra.run.dir; "
            "hydra.sweep.dir in a sweep)"
        )
    for name in _RUN_FILES:
        (run_dir / name).unlink(missing_ok=True)
    record = run_dir / HYDRA_RECORD
    for name in _HYDRA_FILES:
        (record / name).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        record.rmdir()  # only when empty: a file of the user's there stays


def run_files(run_dir: Path) -> list[Path]:
    """Every file a run writes or removes in ``run_dir`` (:func:`start_afresh` removes them)."""
    record = run_dir / HYDRA_RECORD
    return [*(run_dir / name for name in (*_RUN_FILES, LOCK)), *(record / n for n in _HYDRA_FILES)]


def find_resume_checkpoint(
    resume: bool, resume_from: str | None, run_dir: Path
) -> checkpoint.Checkpoint | None:
    """The ``last.pt`` to continue from, or None when not resuming.

    Nothing is written: :func:`carry_history` copies the old run's files once the resumed
    config has been checked.

    Args:
        resume: whether to resume at all.
        resume_from: an explicit ``last.pt``; None means ``run_dir/last.pt``.
        run_dir: the run directory.

    Raises:
        FileNotFoundError: resuming, but the checkpoint does not exist.
        ValueError: the checkpoint has no training state (a ``best.pt``): refused before
            anything is copied into ``run_dir`` (its best.pt and metrics were, which then kept
            the folder from a new run).
    """
    if not resume:
        return None
    path = Path(resume_from) if resume_from else run_dir / LAST
    if not path.is_file() and resume_from is None and (run_dir / BEST).is_file():
        raise FileNotFoundError(
            f"trainer.resume=true but the run in {run_dir} stopped before it wrote last.pt "
            "(in its first epoch): nothing to resume; start it again with "
            "trainer.overwrite=true"
        )
    if path.is_dir():  # "does not exist" said the folder was not there
        raise FileNotFoundError(f"trainer.resume_from={path} is a folder: give {path / LAST}")
    if path.exists() and not path.is_file():
        raise FileNotFoundError(f"trainer.resume_from={path} is not a file, so not a last.pt")
    if not path.is_file():
        raise FileNotFoundError(
            f"trainer.resume=true but {path} does not exist: set hydra.run.dir to the folder of "
            "the run to continue, or trainer.resume_from to its last.pt"
        )
    log.info("resuming from %s", path)
    found = checkpoint.load(path)
    if found.training_state is None:
        raise ValueError(f"{path}: this checkpoint has no training state: only last.pt resumes")
    return found


def carry_history(resume_from: str | None, run_dir: Path) -> None:
    """Copy ``best.pt`` and ``metrics.jsonl`` of a run resumed from another folder into this one.

    So that this run carries the whole history; nothing happens when ``resume_from`` is None or
    lies in ``run_dir`` already.
    """
    if resume_from is None or resumes_in(resume_from, run_dir):
        return
    for name in (BEST, METRICS):
        if (Path(resume_from).parent / name).is_file():
            with writing(run_dir / name, run_dir):
                shutil.copyfile(Path(resume_from).parent / name, run_dir / name)


def resumes_in(resume_from: str | None, run_dir: Path) -> bool:
    """Whether resuming from ``resume_from`` (None: ``run_dir/last.pt``) continues run_dir's run."""
    return resume_from is None or Path(resume_from).resolve().parent == run_dir.resolve()


# What a run directory holds before training writes anything: Hydra's record and log, our config,
# the lock.
_STARTUP_FILES = frozenset({HYDRA_RECORD, LOG, CONFIG, LOCK})


def remove_unused_run_dir(run_dir: Path) -> bool:
    """Delete a run folder that a failed start left with start-up files only; True if deleted.

    A folder holding anything else (a checkpoint, metrics, files of the user's) is kept, so a
    failed resume never loses the run it was resuming; so is a folder another run has locked
    (it may be starting there, with start-up files only so far).
    """
    if not run_dir.is_dir():
        return False
    try:
        with locked_run_dir(run_dir):
            # Hydra's log is named after the command (train.log, train_segmenter.log).
            if any(p.name not in _STARTUP_FILES and p.suffix != ".log" for p in run_dir.iterdir()):
                return False
            shutil.rmtree(run_dir)
    except RunFolderError:
        return False
    log.info("removed %s: the run wrote nothing", run_dir)
    return True


def restore(
    saved: checkpoint.Checkpoint,
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    average: AveragedModel | None = None,
) -> TrainState:
    """Load weights, optimizer, scheduler and RNG states from a ``last.pt``; return its progress.

    Args:
        saved: a loaded ``last.pt``.
        model: receives the weights.
        optimizer: receives the optimizer state.
        scheduler: receives the learning-rate schedule's state.
        average: receives the weight average, when the run keeps one.

    Raises:
        ValueError: the run kept a weight average and ``average`` is None, or the other way
            round.
    """
    training = saved.training_state
    assert training is not None  # find_resume_checkpoint refuses a checkpoint without it
    if ("average" in training) != (average is not None):
        kept = "kept" if "average" in training else "did not keep"
        raise ValueError(
            f"the run being resumed {kept} a weight average (trainer.ema_decay): resume it "
            "with the ema_decay it started with"
        )
    if average is not None:
        average.load_state_dict(training["average"])
    model.load_state_dict(saved.state_dict)
    optimizer.load_state_dict(training["optimizer"])
    load_schedule(scheduler, training["scheduler"])
    set_rng_state(training["rng"])
    state = TrainState.from_dict(training["progress"])
    state.seconds = float(training.get("seconds", 0.0))  # 0: a last.pt from before it was kept
    return state


def get_rng_state() -> dict[str, Any]:
    """Every global RNG state a training step may draw from, as plain data."""
    # Legacy global numpy RNG: nothing here draws from it, but third-party code might.
    name, keys, pos, has_gauss, cached = np.random.get_state()  # noqa: NPY002
    numpy_state = {
        "name": name,
        "keys": torch.from_numpy(keys.astype(np.int64)),
        "pos": int(pos),
        "has_gauss": int(has_gauss),
        "cached_gaussian": float(cached),
    }
    states = {"python": random.getstate(), "numpy": numpy_state, "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def set_rng_state(states: dict[str, Any]) -> None:
    """Inverse of :func:`get_rng_state`."""
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    n = states["numpy"]
    keys = n["keys"].numpy().astype(np.uint32)
    state = (n["name"], keys, n["pos"], n["has_gauss"], n["cached_gaussian"])
    np.random.set_state(state)  # noqa: NPY002
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])
