r"""Beam search and the combined model (Zhang & Clark 2008) on UD: one table per treebank.

For each checkpoint, the test set is parsed once per setting with the network run once per
batch (:func:`biaffine.inference.parse_with_decoders`):

- a transition parser: greedy, then beams of ``--beams``;
- a combined model (``model=combined``: a transition classifier and a biaffine graph head on one
  encoder): the same, plus the graph head alone (``search=graph``, MST with one word on ROOT and
  Eisner), plus the combined search (transition log-probabilities + w * graph head
  log-probabilities) at every beam, with w chosen on the dev set at ``--tune-beam``;
- a graph parser: MST with one word on ROOT.

Each treebank's table also shows, when ``--graph-results`` has it, the separately trained graph
parser of the root-constraint study (``docs/root-constraint.json``: MST with one word on ROOT,
the same CPU budget as ``conf/experiment/root_study.yaml``; EWT's model is docs/results.md's).

Usage (checkpoints from ``python train.py model=combined experiment=ewt_cpu_2h`` and others)::

    python experiments/beam.py RUN/best.pt [RUN2/best.pt ...] \
        --results docs/beam_search.json --page docs/beam_search.md --threads 2

Rows are merged into ``--results`` (one per checkpoint, replaced when measured again), and the
page and its plot are written from all rows there, so runs can be measured in separate sessions.
Sentences per second count the whole parse (network, search, labels) of each setting on its own:
the shared network time plus that setting's search time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from biaffine import checkpoint
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence
from biaffine.inference import DecoderSettings, parse_with_decoders
from biaffine.metrics import dependency_accuracy_of, score_corpus
from biaffine.runtime import cpu_description, set_threads
from biaffine.training import load_splits

REPO = Path(__file__).resolve().parent.parent
METRICS = ("uas", "las", "dependency_accuracy", "uem", "root_accuracy", "malformed_rate")


def settings_for(model: torch.nn.Module, beams: Sequence[int], weight: float | None) -> dict:
    """Name -> settings: every search the checkpoint's parser can run."""
    if getattr(model, "family", None) == "graph":
        return {"graph mst": DecoderSettings()}
    found = {"greedy": DecoderSettings()}
    found |= {f"beam {k}": DecoderSettings(search="beam", beam_size=k) for k in beams if k > 1}
    if getattr(model, "graph", None) is not None:
        found["graph head mst"] = DecoderSettings(search="graph")
        found["graph head eisner"] = DecoderSettings("eisner", search="graph")
        if weight is not None:
            for k in (1, *beams):
                settings = DecoderSettings(search="beam", beam_size=k, graph_weight=weight)
                found[f"combined {k}"] = settings
    return found


def tune_weight(
    model: torch.nn.Module,
    saved: checkpoint.Checkpoint,
    dev: list[Sentence],
    weights: Sequence[float],
    beam: int,
    max_tokens: int,
) -> tuple[float, dict[str, float]]:
    """The graph weight with the best dev LAS at ``beam`` (ties: the smaller weight)."""
    candidates = {
        f"w={w}": DecoderSettings(search="beam", beam_size=beam, graph_weight=w) for w in weights
    }
    parsed = parse_with_decoders(model, saved.vocabs, dev, candidates, max_tokens=max_tokens)
    las = {name: score_corpus(dev, result.sentences).las for name, result in parsed.items()}
    best = max(weights, key=lambda w: (las[f"w={w}"], -w))
    return best, las


def measure(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One row: the checkpoint's treebank, the chosen graph weight, and every setting's scores."""
    saved = checkpoint.load(path)
    config = saved.metadata["config"]
    splits = load_splits(config["data"], root=args.ud_root)
    if splits.test is None or splits.dev is None:
        raise ValueError(f"{path}: {config['data']['treebank']} needs a dev and a test split")
    model = checkpoint.build_model(saved)
    weight, dev_las = None, {}
    if getattr(model, "graph", None) is not None:
        options = (args.weights, args.tune_beam, args.max_tokens)
        weight, dev_las = tune_weight(model, saved, splits.dev, *options)
    settings = settings_for(model, args.beams, weight)
    started = time.perf_counter()
    parsed = parse_with_decoders(
        model, saved.vocabs, splits.test, settings, max_tokens=args.max_tokens
    )
    total = time.perf_counter() - started
    network = total - sum(result.decode_seconds for result in parsed.values())
    results = {}
    for name, result in parsed.items():
        scores = score_corpus(splits.test, result.sentences)
        seconds = network + result.decode_seconds
        results[name] = {metric: getattr(scores, metric) for metric in METRICS} | {
            "search_seconds": result.decode_seconds,
            "sentences_per_second": len(splits.test) / seconds,
        }
    return {
        "treebank": config["data"]["treebank"],
        "checkpoint": str(path),
        "parser": saved.parser,
        "system": saved.model_config.get("system"),
        "train_sentences": len(splits.train),
        "test_sentences": len(splits.test),
        "graph_weight": weight,
        "dev_las_by_weight": dev_las,
        "network_seconds": network,
        "threads": torch.get_num_threads(),
        "settings": results,
        "separate_graph": separate_graph(args.graph_results, config["data"]["treebank"]),
    }


def separate_graph(results: Path | None, treebank: str) -> dict[str, Any] | None:
    """The root-constraint study's scores of a separately trained graph parser, if it has them."""
    if results is None or not results.is_file():
        return None
    for row in json.loads(results.read_text()):
        if row["treebank"] == treebank:
            scores = row["decoders"]["mst"] | {
                "dependency_accuracy": dependency_accuracy_of(row["decoders"]["mst"])
            }
            return {metric: scores[metric] for metric in METRICS} | {"source": row["checkpoint"]}
    return None


def merge(results_path: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows already in ``results_path`` with these added or replaced (by checkpoint), saved."""
    table = {}
    if results_path.is_file():
        table = {row["checkpoint"]: row for row in json.loads(results_path.read_text())}
    table |= {row["checkpoint"]: row for row in rows}
    merged = sorted(table.values(), key=lambda row: (-row["train_sentences"], row["checkpoint"]))
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def table(row: dict[str, Any]) -> list[str]:
    """Markdown table of one checkpoint's settings."""
    lines = [
        "| setting | UAS | LAS | DA | UEM | root acc. | malformed % | sent/s | search s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    separate = row.get("separate_graph")
    if separate:
        cells = ["graph parser, trained alone (mst)", *(_cell(separate, m) for m in METRICS)]
        lines.append("| " + " | ".join([*cells, "-", "-"]) + " |")
    for name, scores in row["settings"].items():
        cells = [name, *(_cell(scores, m) for m in METRICS)]
        cells += [f"{scores['sentences_per_second']:.0f}", f"{scores['search_seconds']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _cell(scores: dict[str, float], metric: str) -> str:
    # Rows measured before DA was reported lack it.
    return f"{scores[metric]:.2f}" if metric in scores else "-"


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Test LAS against beam size per checkpoint, transition-only and combined, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.6), dpi=100)
    for row in rows:
        label = row["treebank"].removeprefix("UD_")
        found = row["settings"]
        for prefix, style in (("beam", "-o"), ("combined", "--s")):
            points = sorted(
                (1 if name == "greedy" else int(name.split()[-1]), scores["las"])
                for name, scores in found.items()
                if name.startswith(prefix) or (prefix == "beam" and name == "greedy")
            )
            if points:
                xs, ys = zip(*points, strict=True)
                axes.plot(
                    xs, ys, style, label=f"{label} {prefix if prefix != 'beam' else 'transitions'}"
                )
        for name in ("graph head mst", "graph mst"):
            if name in found:
                axes.axhline(found[name]["las"], linestyle=":", color="grey", linewidth=1)
                axes.annotate(f"{label} {name}", (1, found[name]["las"]), fontsize=6)
    axes.set_xscale("log", base=2)
    axes.set_xlabel("beam size (log scale)")
    axes.set_ylabel("test LAS")
    axes.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_page(rows: Sequence[dict[str, Any]], page: Path, cpu: str) -> None:
    """The results page: one table per checkpoint, and the plot beside it.

    The findings, with beam training's, are on the hand-written docs/beam.md.
    """
    image = page.with_suffix(".png")
    plot(rows, image)
    lines = [
        "# Beam search and the combined search on locally trained models",
        "",
        "Written by `experiments/beam.py` from `" + page.with_suffix(".json").name + "`; "
        f"timings on {cpu}. The findings: [beam.md](beam.md).",
        "",
        f"![test LAS by beam size]({image.name})",
        "",
    ]
    for row in rows:
        weight = row["graph_weight"]
        tuned = ", ".join(f"{k}: {v:.2f}" for k, v in row["dev_las_by_weight"].items())
        lines += [
            f"## {row['treebank']}: {row['parser']} ({row['system'] or 'graph'})",
            "",
            f"Checkpoint `{row['checkpoint']}`, {row['train_sentences']} training sentences, "
            f"{row['test_sentences']} test sentences, {row['threads']} threads.",
            *(
                [f"Graph weight {weight}, chosen on dev LAS at the tuning beam ({tuned}).", ""]
                if weight is not None
                else [""]
            ),
            *table(row),
            "",
        ]
    page.write_text("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--ud-root", type=Path, default=None, help="default: each run's own")
    parser.add_argument("--beams", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--weights", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0])
    parser.add_argument("--tune-beam", type=int, default=4, help="beam for tuning the weight")
    parser.add_argument("--max-tokens", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "beam_search.json")
    parser.add_argument(
        "--graph-results", type=Path, default=REPO / "docs" / "root-constraint.json"
    )
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "beam_search.md")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    rows = []
    for path in args.checkpoints:
        print(f"measuring {path}", file=sys.stderr)
        rows.append(measure(path, args))
        print("\n".join(table(rows[-1])), file=sys.stderr)
    write_page(merge(args.results, rows), args.page, cpu_description())
    return 0


if __name__ == "__main__":
    sys.exit(report_user_errors(main))
