r"""Root-constraint study: how often unconstrained decoding breaks UD's single-root rule.

In the spirit of Zmigrod, Vieira & Cotterell (2020, "Please Mind the Root"): every trained model
scores its treebank's test set once, and the same scores are decoded by

- ``mst_multiroot``: the best arborescence (Chu-Liu-Edmonds / Tarjan), any number of ROOT arcs;
- ``mst``: the best single-rooted tree (Gabow & Tarjan 1984), the parser's default;
- ``eisner``: the best projective single-rooted tree.

Usage (after the training runs of ``conf/experiment/root_study.yaml`` and ``ewt_cpu_2h``)::

    python experiments/root_constraint.py multirun/root_study outputs/ewt/best.pt \
        --results docs/root-constraint.json --page docs/root-constraint.md

Each argument is a checkpoint or a folder searched for ``best.pt``. Rows are merged into the
``--results`` JSON (one per treebank, replaced when measured again), and the page and its plot
are written from all rows there, so treebanks can be measured in separate sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from biaffine import checkpoint
from biaffine.cli import report_user_errors
from biaffine.data.treebanks import Splits
from biaffine.inference import DecoderSettings, parse_with_decoders
from biaffine.metrics import dependency_accuracy_of, score_corpus
from biaffine.training import load_splits

REPO = Path(__file__).resolve().parent.parent

DECODERS = {
    "mst_multiroot": DecoderSettings("mst", root_constraint=False),
    "mst": DecoderSettings("mst", root_constraint=True),
    "eisner": DecoderSettings("eisner", root_constraint=True),
}
SMALL = 1000  # the paper's split: treebanks with fewer training sentences than this
# Zmigrod, Vieira & Cotterell (2020), malformed (multi-rooted) trees under unconstrained decoding
# with edge weights of pretrained models on 63 UD treebanks: share of test sentences.
PAPER = {"all": 1.80, "small": 6.21, "kurmanji": 24.0}
TEST_ONLY = ["UD_Upper_Sorbian-UFAL"]  # no train split: nothing to train, nothing to measure


def load_treebank(config: dict[str, Any], ud_root: Path | None) -> Splits:
    """The splits a model was trained on, read from ``ud_root`` (default: its recorded root)."""
    return load_splits(config["data"], root=ud_root)


def measure(path: Path, ud_root: Path | None, max_tokens: int) -> dict[str, Any]:
    """One row: the treebank's sizes and, per decoder, its test scores and decoding time."""
    saved = checkpoint.load(path)
    config = saved.metadata["config"]
    splits = load_treebank(config, ud_root)
    if splits.test is None:
        raise ValueError(f"{path}: {config['data']['treebank']} has no test split")
    model = checkpoint.build_model(saved)
    started = time.perf_counter()
    parsed = parse_with_decoders(model, saved.vocabs, splits.test, DECODERS, max_tokens=max_tokens)
    total = time.perf_counter() - started
    decoders = {}
    for name, result in parsed.items():
        scores = score_corpus(splits.test, result.sentences).to_dict()
        decoders[name] = scores | {"decode_seconds": result.decode_seconds}
    return {
        "treebank": config["data"]["treebank"],
        "checkpoint": str(path),
        "train_sentences": len(splits.train),
        "train_words": sum(len(s) for s in splits.train),
        "dev_held_out": config["data"]["dev"] is None,
        "test_sentences": len(splits.test),
        "test_words": sum(len(s) for s in splits.test),
        "parse_seconds": total,
        "decoders": decoders,
    }


def merge(results_path: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows already in ``results_path`` with these added or replaced; saved back, sorted."""
    table = {}
    if results_path.is_file():
        table = {row["treebank"]: row for row in json.loads(results_path.read_text())}
    table |= {row["treebank"]: row for row in rows}
    merged = sorted(table.values(), key=lambda row: row["train_sentences"])
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def _cell(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _change(row: dict[str, Any], metric: str) -> str:
    """Unconstrained -> constrained value of a metric, with the relative change."""
    before = row["decoders"]["mst_multiroot"][metric]
    after = row["decoders"]["mst"][metric]
    relative = 100.0 * (after - before) / before if before else 0.0
    return f"{before:.2f} -> {after:.2f} ({relative:+.1f}%)"


def table_rows(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Markdown table of one row per treebank, smallest training set first."""
    lines = [
        "| treebank | train sents | test sents | malformed % (multi-root) | malformed % (mst) "
        "| UAS | LAS | UEM | LEM | eisner LAS | decode ms: multi / mst / eisner |",
        "|---|---:|---:|---:|---:|---|---|---|---|---:|---|",
    ]
    for row in rows:
        d = row["decoders"]
        held = " (dev held out of train)" if row["dev_held_out"] else ""
        times = " / ".join(f"{1000 * d[name]['decode_seconds']:.0f}" for name in DECODERS)
        cells = [
            f"{row['treebank']}{held}",
            str(row["train_sentences"]),
            str(row["test_sentences"]),
            _cell(d["mst_multiroot"]["malformed_rate"]),
            _cell(d["mst"]["malformed_rate"]),
            *(_change(row, metric) for metric in ("uas", "las", "uem", "lem")),
            _cell(d["eisner"]["las"]),
            times,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def averages(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Macro averages of the malformed rate by training size, beside the paper's figures."""
    groups = {
        f"fewer than {SMALL:,} training sentences": [
            r for r in rows if r["train_sentences"] < SMALL
        ],
        f"{SMALL:,} or more": [r for r in rows if r["train_sentences"] >= SMALL],
        "all": list(rows),
    }
    paper = {0: f"{PAPER['small']:.2f}", 1: "-", 2: f"{PAPER['all']:.2f}"}
    lines = [
        "| treebanks | count | malformed % multi-root (ours) | (Zmigrod et al. 2020) "
        "| malformed % mst | mean LAS change (points) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for i, (name, group) in enumerate(groups.items()):
        if not group:
            continue
        mean = statistics.fmean
        malformed = mean(r["decoders"]["mst_multiroot"]["malformed_rate"] for r in group)
        constrained = mean(r["decoders"]["mst"]["malformed_rate"] for r in group)
        las = mean(
            r["decoders"]["mst"]["las"] - r["decoders"]["mst_multiroot"]["las"] for r in group
        )
        cells = [
            name,
            str(len(group)),
            _cell(malformed),
            paper[i],
            _cell(constrained),
            f"{las:+.2f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def measures(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Seed 003's measures (Nivre & Scholz 2004): DA, RA and CM of every decoder, with LAS."""
    lines = [
        "| treebank | decoder | UAS | LAS | DA | RA | CM (UEM) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        for name in DECODERS:
            d = row["decoders"][name]
            cells = [d["uas"], d["las"], dependency_accuracy_of(d), d["root_accuracy"], d["uem"]]
            lines.append(f"| {row['treebank']} | {name} | " + " | ".join(map(_cell, cells)) + " |")
    return lines


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Malformed rate of unconstrained decoding against training size (log axis), as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [row["train_sentences"] for row in rows]
    rates = [row["decoders"]["mst_multiroot"]["malformed_rate"] for row in rows]
    figure, axes = plt.subplots(figsize=(6, 3.6), dpi=100)
    axes.scatter(sizes, rates, color="tab:red", zorder=3)
    for row, x, y in zip(rows, sizes, rates, strict=True):
        label = row["treebank"].removeprefix("UD_")
        axes.annotate(label, (x, y), fontsize=6, xytext=(3, 2), textcoords="offset points")
    axes.axvline(SMALL, color="grey", linestyle=":", linewidth=1)
    axes.set_xscale("log")
    axes.set_xlabel("training sentences (log scale)")
    axes.set_ylabel("multi-rooted test trees (%)")
    axes.set_title("Unconstrained MST: malformed trees vs training size", fontsize=9)
    axes.grid(True, which="both", linewidth=0.3)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_page(rows: Sequence[dict[str, Any]], page: Path, plot_path: Path | None) -> None:
    """The markdown report: method, the per-treebank table, averages and the plot."""
    trained = {row["treebank"] for row in rows}
    untrained = [name for name in TEST_ONLY if name not in trained]
    lines = [
        "# Root-constraint study",
        "",
        "How often does unconstrained maximum spanning tree decoding give a tree with more than",
        "one word on ROOT, which UD forbids, and what does enforcing exactly one root",
        "(Gabow & Tarjan 1984; Zmigrod, Vieira & Cotterell 2020) change? Each model scores its",
        "treebank's test set once; the same scores are decoded unconstrained (`mst_multiroot`),",
        "with the root constraint (`mst`, the default) and projectively (`eisner`, one root).",
        "Gold tokenization, punctuation included, LAS on full labels. Malformed: a predicted tree",
        "with more than one word on ROOT. `A -> B (r%)`: unconstrained -> constrained, relative",
        "change. Decoding time: the tree decoder alone (heads from the network's scores), whole",
        "test set.",
        "",
        "Reproduce (models as in `conf/experiment/root_study.yaml` and `ewt_cpu_2h.yaml`):",
        "",
        "    python train.py -m experiment=root_study hydra.sweep.dir=multirun/root_study \\",
        "      'data=glob(ud_*,exclude=[ud_english_ewt,ud_upper_sorbian_ufal])'",
        "    python train.py experiment=ewt_cpu_2h hydra.run.dir=outputs/ewt",
        "    python experiments/root_constraint.py multirun/root_study outputs/ewt/best.pt",
        "",
        "## Per treebank",
        "",
        *table_rows(rows),
        "",
    ]
    if untrained:
        lines += [
            f"Not in the table (test split only, nothing to train on): {', '.join(untrained)}.",
            "",
        ]
    lines += ["## Averages", "", *averages(rows), ""]
    if plot_path is not None:
        lines += [f"![malformed rate against training size]({plot_path.name})", ""]
    lines += [
        "## Seed 003's measures",
        "",
        "As Nivre & Scholz (2004) report them, after Yamada & Matsumoto (2003): DA, non-root",
        "words with the right head; RA, gold root words attached to ROOT; CM, sentences with every",
        "head right (UEM). Punctuation included.",
        "",
        *measures(rows),
        "",
    ]
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="checkpoints or folders of runs")
    parser.add_argument(
        "--ud-root", type=Path, help="folder of UD_* treebanks (default: the one trained on)"
    )
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "root-constraint.json")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "root-constraint.md")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib)")
    parser.add_argument("--max-tokens", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    rows = []
    for path in checkpoint.find(args.paths):
        row = measure(path, args.ud_root, args.max_tokens)
        malformed = row["decoders"]["mst_multiroot"]["malformed_rate"]
        print(f"{row['treebank']}: malformed {malformed:.2f}% unconstrained", file=sys.stderr)
        rows.append(row)
    merged = merge(args.results, rows)
    plot_path = None if args.no_plot else args.page.with_suffix(".png")
    if plot_path is not None:
        plot(merged, plot_path)
    write_page(merged, args.page, plot_path)


if __name__ == "__main__":
    report_user_errors(main)
