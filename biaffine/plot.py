"""Training curves of a run: dev UAS/LAS and train loss per epoch, drawn from ``metrics.jsonl``.

Example: ``python -m biaffine.plot outputs/2026-01-01/12-00-00 [RUN_DIR ...]`` writes
``curves.png`` into each run directory. Needs matplotlib (the ``bench`` extra), imported only
when drawing, so reading a run's metrics does not need it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biaffine import cli
from biaffine.files import atomic_open

__all__ = ["CURVES", "Curves", "main", "plot_run", "read_curves"]

CURVES = "curves.png"
METRICS = (
    "metrics.jsonl"  # the name biaffine.training.run_state writes (not imported: it needs torch)
)


@dataclass(frozen=True, slots=True)
class Curves:
    """Per-epoch values of one run, in epoch order (the last record of an epoch wins).

    Attributes:
        epochs: the epoch numbers (1-based).
        train_loss: mean training loss of each epoch.
        dev_uas, dev_las: dev scores (percent) after each epoch.
        seconds: wall seconds of each epoch, dev parsing included (NaN where not recorded).
        best_epoch: the epoch whose checkpoint is ``best.pt`` (0 when unknown).
        test: the test scores of the best model (``AttachmentScores.to_dict()``), when the
            run got that far.
    """

    epochs: list[int]
    train_loss: list[float]
    dev_uas: list[float]
    dev_las: list[float]
    seconds: list[float]
    best_epoch: int = 0
    test: dict[str, Any] | None = None

    @property
    def test_uas(self) -> float | None:
        """Test UAS of the best model, None before the test record."""
        return None if self.test is None else float(self.test["uas"])

    @property
    def test_las(self) -> float | None:
        """Test LAS of the best model, None before the test record."""
        return None if self.test is None else float(self.test["las"])


def read_curves(path: str | Path) -> Curves:
    """The curves in a ``metrics.jsonl`` file (``event: epoch`` and ``event: test`` records).

    Args:
        path: the file, as :class:`biaffine.training.run_state.RunWriter` writes it.

    Returns:
        The per-epoch values. A resumed run may repeat an epoch; the later record wins.

    Raises:
        ValueError: the file is missing, a line is not a JSON object, an epoch record lacks
            ``epoch``, ``train_loss`` or ``dev`` scores, or there is no epoch record at all.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file (is this a training run directory?)")
    epochs: dict[int, dict[str, Any]] = {}
    test: dict[str, Any] | None = None
    with path.open("rb") as lines:
        for lineno, text in enumerate(_decoded(lines, path), 1):
            if not text.strip():
                continue
            record = _record(text, path, lineno)
            if record.get("event") == "epoch":
                epoch = _epoch_number(record, path, lineno)
                epochs[epoch] = _epoch_values(record, path, lineno)
            elif record.get("event") == "test":
                test = _test_scores(record, path, lineno)
    if not epochs:
        raise ValueError(f"{path}: no epoch records (event 'epoch') to plot")
    order = sorted(epochs)
    last = epochs[order[-1]]
    return Curves(
        epochs=order,
        train_loss=[epochs[e]["train_loss"] for e in order],
        dev_uas=[epochs[e]["uas"] for e in order],
        dev_las=[epochs[e]["las"] for e in order],
        seconds=[epochs[e]["seconds"] for e in order],
        best_epoch=last["best_epoch"],
        test=test,
    )


def _decoded(lines: Iterable[bytes], path: Path) -> Iterator[str]:
    """The file's lines decoded one by one, so that a byte that is not UTF-8 names its line."""
    for lineno, raw in enumerate(lines, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}:{lineno}: not UTF-8 ({error.reason})") from None


def _record(text: str, path: Path, lineno: int) -> dict[str, Any]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{lineno}: not JSON ({error.msg})") from None
    except RecursionError:  # json nests one Python call per level
        raise ValueError(f"{path}:{lineno}: not JSON this plot reads (nested too deeply)") from None
    if not isinstance(record, dict):
        raise ValueError(f"{path}:{lineno}: expected a JSON object, found {type(record).__name__}")
    return record


def _epoch_number(record: dict[str, Any], path: Path, lineno: int) -> int:
    epoch = record.get("epoch")
    if not isinstance(epoch, int) or isinstance(epoch, bool):
        raise ValueError(f"{path}:{lineno}: epoch record without an integer 'epoch'")
    return epoch


def _epoch_values(record: dict[str, Any], path: Path, lineno: int) -> dict[str, Any]:
    """Loss and dev scores of one epoch record; NaN loss (a diverged epoch) is kept as NaN."""
    dev = record.get("dev")
    try:
        return {
            "train_loss": float(record["train_loss"]),
            "uas": float(dev["uas"]),
            "las": float(dev["las"]),
            "best_epoch": int(record.get("best_epoch", 0)),
            "seconds": float(record.get("seconds", math.nan)),
        }
    except (KeyError, TypeError, ValueError, OverflowError):  # int(1e400): OverflowError
        problem = "epoch record needs 'train_loss' and 'dev' with 'uas' and 'las'"
        raise ValueError(f"{path}:{lineno}: {problem}") from None


def _test_scores(record: dict[str, Any], path: Path, lineno: int) -> dict[str, Any]:
    """The test record's scores, with the ``uas`` and ``las`` the plot reads as numbers.

    ``{"test": {"uas": 1}}`` was a KeyError traceback when the plot drew it.
    """
    test = record.get("test")
    try:
        float(test["uas"]), float(test["las"])
    except (KeyError, TypeError, ValueError):
        raise ValueError(
            f"{path}:{lineno}: test record needs 'test' with 'uas' and 'las'"
        ) from None
    return test


def plot_run(run_dir: str | Path) -> Path:
    """Draws ``run_dir/curves.png`` from ``run_dir/metrics.jsonl``, written atomically.

    The file gets the mode the umask gives (:func:`biaffine.files.atomic_open`).

    Two panels over a shared epoch axis: dev UAS and LAS (with the best epoch marked and the
    test scores of the best model, if any), and the mean train loss (log scale when it spans
    more than a factor of 10).

    Args:
        run_dir: a training run directory.

    Returns:
        The path of the written PNG.

    Raises:
        ValueError: no readable ``metrics.jsonl`` in ``run_dir`` (see :func:`read_curves`), or
            ``curves.png`` there is a special file (a pipe, a device).
        ImportError: matplotlib is not installed.
    """
    run_dir = Path(run_dir)
    curves = read_curves(run_dir / METRICS)
    figure_class = _figure_class()
    figure = figure_class(figsize=(7.0, 6.0), dpi=110, layout="constrained")
    scores, loss = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    _draw_scores(scores, curves)
    _draw_loss(loss, curves)
    figure.suptitle(f"{run_dir.resolve().name}: {len(curves.epochs)} epochs")
    path = run_dir / CURVES
    # A run-folder file: atomic, the umask's mode; a special file there is refused.
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format="png")
    return path


def _figure_class() -> type:
    """The Figure class of matplotlib, used without pyplot (no global state, no GUI backend)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as error:
        raise ImportError(
            "plotting training curves needs matplotlib: pip install 'rootparse[bench]' "
            "(or pip install matplotlib)"
        ) from error
    return Figure


def _draw_scores(axes: Any, curves: Curves) -> None:
    axes.plot(curves.epochs, curves.dev_uas, marker=".", label="dev UAS")
    axes.plot(curves.epochs, curves.dev_las, marker=".", label="dev LAS")
    if curves.best_epoch in curves.epochs:
        best_las = curves.dev_las[curves.epochs.index(curves.best_epoch)]
        axes.axvline(curves.best_epoch, color="0.6", linestyle="--", linewidth=1)
        axes.annotate(
            f"best: epoch {curves.best_epoch}, LAS {best_las:.2f}",
            (curves.best_epoch, best_las),
            xytext=(6, -14),
            textcoords="offset points",
            fontsize=8,
        )
    if curves.test_las is not None:
        last = curves.epochs[-1]
        axes.plot([last], [curves.test_uas], "^", color="C0", label="test UAS (best model)")
        axes.plot([last], [curves.test_las], "^", color="C1", label="test LAS (best model)")
    axes.set_ylabel("attachment score (%)")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize=8)


def _draw_loss(axes: Any, curves: Curves) -> None:
    axes.plot(curves.epochs, curves.train_loss, marker=".", color="C2", label="train loss")
    finite = [v for v in curves.train_loss if math.isfinite(v) and v > 0]
    if finite and max(finite) > 10 * min(finite):
        axes.set_yscale("log")
    axes.set_xlabel("epoch")
    axes.set_ylabel("mean train loss")
    axes.grid(alpha=0.3)
    axes.legend(loc="best", fontsize=8)
    axes.xaxis.get_major_locator().set_params(integer=True)


def build_parser() -> argparse.ArgumentParser:
    """The command line interface of ``python -m biaffine.plot``."""
    parser = cli.ArgumentParser(
        prog="python -m biaffine.plot",
        description=f"Draw {CURVES} (dev UAS/LAS and train loss per epoch) in each run "
        f"directory from its {METRICS}.",
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="training run directory")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Redraw the curves of each run; returns 0, or 2 if any run could not be drawn."""
    args = build_parser().parse_args(argv)
    status = 0
    for run_dir in args.run_dirs:
        try:
            print(plot_run(run_dir))
        except (OSError, ValueError, ImportError) as error:
            cli.print_error(f"error: {error}")  # the messages name the file
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
