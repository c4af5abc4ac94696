r"""Recipe ablations from finished training runs: learning curves, wall times and test scores.

Each run is a ``train.py`` run directory (``metrics.jsonl``, ``config.yaml``, ``train.log``),
named on the command line. Nothing is retrained or reparsed: dev scores per epoch, epoch wall
times and the best model's test scores come from ``metrics.jsonl``, the settings compared from
``config.yaml``, and how often the tree-CRF loss fell back to the local loss (log Z lost float64
precision; :mod:`biaffine.parsers.graph` logs every batch where it happens) from
``train.log``.

Usage (the runs of docs/results.md's "Pretrained inputs and the tree-CRF loss" section)::

    python experiments/ablation.py "glove + crf"=runs/abl_glove_crf \
        "glove + minilm + crf"=runs/abl_glove_minilm_crf --results docs/ablation.json

Rows are merged into ``--results`` by name (replaced when given again), and the page and its
plot (dev LAS against minutes, one panel per treebank) are written from all rows there, so runs
finished in separate sessions add up.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from biaffine.cli import report_user_errors
from biaffine.files import atomic_open
from biaffine.plot import read_curves

REPO = Path(__file__).resolve().parent.parent
TEST_MEASURES = ("uas", "las", "uem", "root_accuracy", "dependency_accuracy", "malformed_rate")
# The tree-CRF fallback's log line (biaffine.parsers.graph._crf_head_loss).
FALLBACK = re.compile(r"log Z lost precision in (\d+) of (\d+) sentences")
TRAIN_SIZE = re.compile(r"train: (\d+) sentences")
MILESTONES = (10, 20, 40, 60, 80, 100)  # minutes at which the page compares best dev LAS
# Epochs at which it compares them too: runs on different machines or thread counts train the
# same batches per epoch (same seed), so only this comparison holds across them.
EPOCH_MILESTONES = (5, 10, 20, 30, 40, 60, 80, 100, 120)


def parser_name(model: dict[str, Any]) -> str:
    """``biaffine`` for the graph parser; the system and oracle of a transition parser."""
    system = model.get("system")
    if system is None:
        return "biaffine"
    name = f"combined ({system})" if model.get("graph_loss_weight", 0) > 0 else system
    return f"{name}, {model.get('oracle', 'static')} oracle"


def settings(config_path: Path) -> dict[str, Any]:
    """What the ablations vary, from a run's ``config.yaml``: parser, loss, inputs, budget."""
    cfg = OmegaConf.to_container(OmegaConf.load(config_path), resolve=False)
    model, trainer = cfg.get("model", {}), cfg.get("trainer", {})
    encoder = model.get("encoder", {})
    pretrained = encoder.get("pretrained") or {}
    transformer = encoder.get("transformer") or {}
    return {
        "treebank": cfg.get("data", {}).get("treebank"),
        "parser": parser_name(model),
        # A transition parser's loss is the cross entropy of its transitions (no option).
        "loss": model.get("loss", "local") if "system" not in model else "-",
        "vectors": pretrained.get("path"),
        "transformer": transformer.get("model"),
        "threads": trainer.get("threads"),
        "max_minutes": trainer.get("max_minutes"),
    }


def fallbacks(log_path: Path) -> dict[str, int] | None:
    """Sentences that took the local loss, and sentence visits (train size x epochs begun).

    None when the run has no ``train.log``.
    """
    if not log_path.is_file():
        return None
    text = log_path.read_text(encoding="utf-8", errors="replace")
    lost = sum(int(m.group(1)) for m in FALLBACK.finditer(text))
    size = TRAIN_SIZE.search(text)
    return {"sentences": lost, "train_sentences": int(size.group(1)) if size else 0}


def measure(name: str, run: Path) -> dict[str, Any]:
    """One row: the run's settings, its dev curve against minutes and its test scores."""
    curves = read_curves(run / "metrics.jsonl")
    minutes = [round(elapsed / 60, 2) for elapsed in itertools.accumulate(curves.seconds)]
    best = curves.epochs.index(curves.best_epoch) if curves.best_epoch in curves.epochs else -1
    test = curves.test or {}
    return {
        "name": name,
        "run": str(run),
        **settings(run / "config.yaml"),
        "epochs": len(curves.epochs),
        "minutes": minutes[-1],
        "first_epoch_seconds": curves.seconds[0],
        "median_epoch_seconds": statistics.median(curves.seconds[1:] or curves.seconds),
        "best_epoch": curves.best_epoch,
        "best_dev": {"uas": curves.dev_uas[best], "las": curves.dev_las[best]},
        "curve": {"minutes": minutes, "dev_las": curves.dev_las, "dev_uas": curves.dev_uas},
        "test": {key: test[key] for key in TEST_MEASURES if key in test},
        "crf_fallbacks": fallbacks(run / "train.log"),
    }


def merge(results_path: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of ``results_path`` with ``rows`` added or replaced by name; rewritten atomically."""
    table: dict[str, dict[str, Any]] = {}
    if results_path.is_file():
        table = {row["name"]: row for row in json.loads(results_path.read_text())}
    table |= {row["name"]: row for row in rows}
    merged = list(table.values())
    with atomic_open(results_path, encoding="utf-8") as handle:
        handle.write(json.dumps(merged, indent=1) + "\n")
    return merged


def best_by(row: dict[str, Any], minute: float) -> float | None:
    """Best dev LAS of the epochs that ended by ``minute``.

    None if no epoch had, or if the run stopped before ``minute``: its best would not compare
    with that of a run still going.
    """
    curve = row["curve"]
    if minute > row["minutes"]:
        return None
    scores = [s for m, s in zip(curve["minutes"], curve["dev_las"], strict=True) if m <= minute]
    return max(scores) if scores else None


def best_at_epoch(row: dict[str, Any], epoch: int) -> float | None:
    """Best dev LAS of the first ``epoch`` epochs; None if the run trained fewer."""
    if epoch > row["epochs"]:
        return None
    return max(row["curve"]["dev_las"][:epoch])


def _short(path: str | None) -> str:
    """How the page names vectors or a model: a ``pkg://`` path's package, else its last part."""
    if not path:
        return "-"
    if path.startswith("pkg://"):
        return path.removeprefix("pkg://").split("/", 1)[0]
    return path.rstrip("/").rsplit("/", 1)[-1]


def runs_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Settings, time and test scores per run."""
    lines = [
        "| run | parser | loss | vectors | transformer | threads | epochs | minutes "
        "| s/epoch (1st, median) | best dev LAS (epoch) | test UAS | LAS | UEM | RA | DA "
        "| malformed | CRF fallbacks |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        test = row["test"]
        cells = [f"{test[key]:.2f}" if key in test else "-" for key in TEST_MEASURES]
        lost = row["crf_fallbacks"]
        fell = "-"
        if row["loss"] == "crf" and lost is not None:
            visits = lost["train_sentences"] * row["epochs"]
            fell = f"{lost['sentences']} of ~{visits:,}"
        lines.append(
            f"| {row['name']} | {row['parser']} | {row['loss']} | {_short(row['vectors'])} "
            f"| {_short(row['transformer'])} | {row['threads'] or '-'} | {row['epochs']} "
            f"| {row['minutes']:.0f} "
            f"| {row['first_epoch_seconds']:.0f}, {row['median_epoch_seconds']:.0f} "
            f"| {row['best_dev']['las']:.2f} ({row['best_epoch']}) | "
            + " | ".join(cells)
            + f" | {fell} |"
        )
    return lines


def curve_table(rows: Sequence[dict[str, Any]], by: str = "minutes") -> list[str]:
    """Best dev LAS reached by each milestone, one column per run.

    Args:
        rows: the runs.
        by: ``"minutes"`` (wall time, :data:`MILESTONES`) or ``"epoch"``
            (:data:`EPOCH_MILESTONES`).
    """
    best, milestones = (
        (best_by, MILESTONES) if by == "minutes" else (best_at_epoch, EPOCH_MILESTONES)
    )
    lines = [
        f"| {by} | " + " | ".join(row["name"] for row in rows) + " |",
        "|---:|" + "---:|" * len(rows),
    ]
    for milestone in milestones:
        values = [best(row, milestone) for row in rows]
        if all(v is None for v in values):
            continue
        cells = ["-" if v is None else f"{v:.2f}" for v in values]
        lines.append(f"| {milestone} | " + " | ".join(cells) + " |")
    return lines


def by_treebank(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by treebank, in the order the treebanks first appear."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["treebank"] or "?", []).append(row)
    return groups


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Dev LAS against minutes, one line per run, one panel per treebank, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = by_treebank(rows)
    # One panel a row, its legend to its right: EWT has some thirty runs, whose legend inside
    # a panel hid the curves.
    heights = [max(3.5, 0.16 * len(group)) for group in groups.values()]
    figure, panels = plt.subplots(
        len(groups),
        1,
        figsize=(14.0, sum(heights)),
        dpi=100,
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for axes, (treebank, group) in zip(panels[:, 0], groups.items(), strict=True):
        for row in group:
            curve = row["curve"]
            axes.plot(curve["minutes"], curve["dev_las"], marker=".", label=row["name"])
        axes.set_title(treebank.removeprefix("UD_"), fontsize=10)
        axes.set_xlabel("minutes of training (dev parsing included)")
        axes.set_ylabel("dev LAS")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.tight_layout()
    with atomic_open(path, "wb") as handle:
        figure.savefig(handle, format="png", bbox_inches="tight")
    plt.close(figure)


def write_page(rows: Sequence[dict[str, Any]], page: Path) -> None:
    """The results page from every row of the results file, with its plot beside it."""
    image = page.with_suffix(".png")
    plot(rows, image)
    lines = [
        "# Recipe ablations: the tree-CRF loss, pretrained vectors, a pretrained encoder",
        "",
        "Written by `experiments/ablation.py` from `" + page.with_suffix(".json").name + "` "
        "(finished `train.py` runs; nothing reparsed). Test scores of the best dev epoch, gold "
        "tokenization, punctuation included, LAS on full labels; RA: root accuracy; DA: "
        "non-root words with the right head. Minutes and seconds per epoch are wall time, dev "
        "parsing included; threads: the trainer's CPU threads (one-thread runs went in pairs, "
        "side by side, one core each). CRF fallbacks: sentences whose log Z lost float64 "
        "precision and took the local loss, of the sentence visits of the run (train size x "
        "epochs).",
        "",
        f"![dev LAS against minutes]({image.name})",
        "",
    ]
    for treebank, group in by_treebank(rows).items():
        lines += [f"## {treebank}", "", *runs_table(group), "", "Best dev LAS by minute:", ""]
        lines += [*curve_table(group), "", "Best dev LAS by epoch:", ""]
        lines += [*curve_table(group, by="epoch"), ""]
    with atomic_open(page, encoding="utf-8") as handle:
        handle.write("\n".join(lines))


def named_run(text: str) -> tuple[str, Path]:
    """``NAME=RUN_DIR`` as (name, folder)."""
    name, sep, folder = text.partition("=")
    if not sep or not name or not folder:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=RUN_DIR")
    if not (Path(folder) / "metrics.jsonl").is_file():
        raise argparse.ArgumentTypeError(f"{folder}: no metrics.jsonl (not a training run?)")
    return name, Path(folder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=named_run, help="NAME=RUN_DIR")
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "ablation.json")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "ablation.md")
    args = parser.parse_args(argv)
    rows = [measure(name, run) for name, run in args.runs]
    merged = merge(args.results, rows)
    write_page(merged, args.page)
    for group in by_treebank(merged).values():
        print("\n".join(runs_table(group)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(report_user_errors(main))
