"""What a training run keeps on disk: progress, checkpoints, metrics lines, and RNG states.

Everything is plain data, so ``last.pt`` loads with ``torch.load(weights_only=True)`` and a
resumed run continues exactly where the interrupted one stopped.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel

from biaffine import checkpoint
from biaffine.data.vocab import Vocabs
from biaffine.metrics import AttachmentScores
from biaffine.plot import plot_run

__all__ = [
    "BEST",
    "CONFIG",
    "LAST",
    "METRICS",
    "RunWriter",
    "TrainState",
    "carry_history",
    "find_resume_checkpoint",
    "get_rng_state",
    "remove_unused_run_dir",
    "restore",
    "set_rng_state",
]

BEST, LAST, METRICS, CONFIG = "best.pt", "last.pt", "metrics.jsonl", "config.yaml"
_COUNTERS = ("epoch", "step", "best_epoch", "bad_epochs")

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TrainState:
    """Progress of a run, saved in ``last.pt`` so a resumed run continues where it stopped.

    Attributes:
        epoch: epochs completed.
        step: optimizer steps completed.
        best_dev: the best dev scores so far (None before the first evaluation).
        best_epoch: the epoch that scored ``best_dev``.
        bad_epochs: epochs since ``best_epoch`` (the early-stopping counter).
    """

    epoch: int = 0
    step: int = 0
    best_dev: AttachmentScores | None = None
    best_epoch: int = 0
    bad_epochs: int = 0

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
            "rng": get_rng_state(),
        }
        if average is not None:
            training_state["average"] = average.state_dict()
        return self._save(LAST, model, state, training_state)

    def _save(self, name: str, model: nn.Module, state: TrainState, training: dict | None) -> Path:
        path = self.run_dir / name
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
        with (self.run_dir / METRICS).open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
        try:
            plot_run(self.run_dir)
        except ImportError:
            log.debug("matplotlib is not installed: no curves.png (python -m biaffine.plot)")
        except ValueError as error:  # a drawing problem never stops training
            log.warning("curves.png not drawn: %s", error)

    def truncate_metrics(self, last_epoch: int) -> None:
        """Keep only epoch records up to ``last_epoch`` (a resumed run rewrites what follows)."""
        path = self.run_dir / METRICS
        if not path.is_file():
            return
        lines = path.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        kept = [r for r in records if r.get("event") == "epoch" and r["epoch"] <= last_epoch]
        path.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")


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
    """
    if not resume:
        return None
    path = Path(resume_from) if resume_from else run_dir / LAST
    if not path.is_file():
        raise FileNotFoundError(
            f"trainer.resume=true but {path} does not exist: set hydra.run.dir to the folder of "
            "the run to continue, or trainer.resume_from to its last.pt"
        )
    log.info("resuming from %s", path)
    return checkpoint.load(path)


def carry_history(resume_from: str | None, run_dir: Path) -> None:
    """Copy ``best.pt`` and ``metrics.jsonl`` of a run resumed from another folder into this one.

    So that this run carries the whole history; nothing happens when ``resume_from`` is None or
    lies in ``run_dir`` already.
    """
    if resume_from is None or Path(resume_from).resolve().parent == run_dir.resolve():
        return
    for name in (BEST, METRICS):
        if (Path(resume_from).parent / name).is_file():
            shutil.copyfile(Path(resume_from).parent / name, run_dir / name)


# What a run directory holds before training writes anything: Hydra's record and log, our config.
_STARTUP_FILES = frozenset({".hydra", "train.log", CONFIG})


def remove_unused_run_dir(run_dir: Path) -> bool:
    """Delete a run folder that a failed start left with start-up files only; True if deleted.

    A folder holding anything else (a checkpoint, metrics, files of the user's) is kept, so a
    failed resume never loses the run it was resuming.
    """
    if not run_dir.is_dir() or any(p.name not in _STARTUP_FILES for p in run_dir.iterdir()):
        return False
    shutil.rmtree(run_dir)
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
        ValueError: if the checkpoint has no training state (a ``best.pt``), or the run kept a
            weight average and ``average`` is None, or the other way round.
    """
    training = saved.training_state
    if training is None:
        raise ValueError("this checkpoint has no training state: only last.pt files can resume")
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
    scheduler.load_state_dict(training["scheduler"])
    set_rng_state(training["rng"])
    return TrainState.from_dict(training["progress"])


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
