r"""Issue 41's fair experiment: local against beam-trained transition parsers, at equal minutes.

``experiments/beam_training.sh`` trains the arms of each treebank into ``RUNS/<data>.<arm>``,
one thread each, every arm with T minutes of training in all (the graph parser's and the
local transition parser's T; the beam-trained models' T/2 of local training, then T/2 with
the beam):

- ``G``: the graph parser (biaffine, MST with one word on ROOT), T minutes;
- ``L_half``: arc-hybrid with the local loss, T/2 (the start of every beam-trained arm);
  ``L_full``: the same run resumed for T/2 more (T in all);
- ``B1``, ``B4``, ``B16``, ``B64``: ``L_half`` then T/2 of beam training with k items;
- ``C_half``: the combined model (arc-hybrid + graph head, one encoder), local, T/2;
  ``C_beam``: ``C_half`` then T/2 of beam training with k = 16 and the graph head's
  log-probabilities in the items' scores (weight 0.5);
- and, at parsing time only, ``L_full`` paired with ``G`` (Zhang & Clark's combination of two
  separately trained models, 2T minutes): the weight chosen on dev LAS at beam 16.

This script parses each treebank's test set (gold tokenization) with every arm and search,
then writes ``--results`` (JSON) and ``--page`` (Markdown, with Zhang & Clark's Table 5)::

    python experiments/beam_training.py RUNS --treebanks ud_english_ewt ud_turkish_imst \
        --results docs/beam_training.json --page docs/beam_training.md --threads 1

UAS and LAS count punctuation (CoNLL 2018); "Word" and "CM" leave it out, as Zhang & Clark's
precision of lexical heads and complete match do, and so do DA (Yamada & Matsumoto's dependency
accuracy: non-root words) and RA (root accuracy).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biaffine import checkpoint
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence
from biaffine.inference import DecoderSettings, parse_with_decoders
from biaffine.metrics import score_corpus
from biaffine.parsers.transition import check_partner
from biaffine.runtime import cpu_description, set_threads
from biaffine.training import load_splits

REPO = Path(__file__).resolve().parent.parent
BEAMS = (1, 4, 16, 64)
WEIGHTS = (0.25, 0.5, 1.0, 2.0)
TUNE_BEAM = 16
COMBINED_WEIGHT = 0.5  # C_beam's training weight (experiments/beam_training.sh)
# Zhang & Clark (2008), Table 5 (English PTB test, punctuation excluded): Word / Complete.
ZHANG_CLARK = [
    ("Graph [M] (beam, MSTParser features)", 91.2, 40.8),
    ("Graph [MA] (beam, + arity features)", 91.4, 42.5),
    ("Transition (beam 64, trained with the beam)", 91.4, None),
    ("Combined [TM]", 92.0, None),
    ("Combined [TMA]", 92.1, 45.5),
]


def beam(k: int, weight: float = 0.0) -> DecoderSettings:
    """A beam of k items (k = 1: greedy on the model's own score), with a graph weight."""
    return DecoderSettings(search="beam", beam_size=k, graph_weight=weight)


@dataclass
class Arm:
    """One trained model of a treebank and the searches it is parsed with.

    Attributes:
        label: the row's name (which arm of the issue it is).
        runs: the run folders whose epochs add up to its training minutes (a beam-trained
            arm: its local start, then itself); the last one's ``best.pt`` is parsed.
        settings: search name -> settings.
        partner: a graph parser's run folder paired at parsing time (arm e), or None.
    """

    label: str
    runs: list[str]
    settings: dict[str, DecoderSettings]
    partner: str | None = None
    weights_on_dev: dict[str, float] = field(default_factory=dict)


def arms() -> list[Arm]:
    """The issue's arms (a) to (e), in the page's order."""
    transitions = {"greedy": DecoderSettings()} | {f"beam {k}": beam(k) for k in BEAMS[1:]}
    found = [
        Arm("(a) graph parser", ["G"], {"mst": DecoderSettings()}),
        Arm("(b) local, T/2 (start of c, d)", ["L_half"], transitions),
        Arm("(b) local", ["L_half", "L_full"], transitions),
    ]
    for k in BEAMS:
        searches = {"greedy": DecoderSettings()} | ({f"beam {k}": beam(k)} if k > 1 else {})
        found.append(Arm(f"(c) beam-trained, k = {k}", ["L_half", f"B{k}"], searches))
    graph_head = {"graph head mst": DecoderSettings(search="graph")}
    combined = {f"combined {k}": beam(k, COMBINED_WEIGHT) for k in (TUNE_BEAM, 64)}
    searches = graph_head | combined
    found.append(Arm("(d) combined, local, T/2", ["C_half"], searches))
    found.append(Arm("(d) combined, beam-trained k = 16", ["C_half", "C_beam"], searches))
    paired = ["L_half", "L_full", "G"]  # L_full's best.pt, paired with G's
    found.append(Arm("(e) graph + local transition at parse time", paired, {}, "G"))
    return found


def training_minutes(runs: Sequence[Path]) -> float:
    """Minutes of the runs' training epochs (each with its dev scoring).

    A resumed run's folder is a copy of the earlier one's, whose epoch lines it keeps: a line
    seen twice is counted once.
    """
    epochs = set()
    for run in runs:
        epochs |= {line for line in (run / "metrics.jsonl").read_text().splitlines() if line}
    events = (json.loads(line) for line in epochs)
    return sum(event["seconds"] for event in events if event.get("event") == "epoch") / 60


def scores_of(gold: list[Sentence], parsed: list[Sentence]) -> dict[str, float]:
    """UAS, LAS with punctuation; Word (UAS), DA, CM and RA without it.

    As Zhang & Clark count, and Yamada & Matsumoto (DA: the heads of non-root words).
    """
    every = score_corpus(gold, parsed)
    content = score_corpus(gold, parsed, exclude_punct=True)
    return {
        "uas": every.uas,
        "las": every.las,
        "word": content.uas,
        "da": content.dependency_accuracy,
        "cm": content.uem,
        "ra": content.root_accuracy,
    }


def measure_arm(arm: Arm, folder: Path, data: str, splits: Any, max_tokens: int) -> dict:
    """Parse test (and dev, to choose arm e's weight) with the arm's model; its row."""
    runs = [folder / f"{data}.{name}" for name in arm.runs]
    path = runs[-2 if arm.partner else -1] / "best.pt"
    saved = checkpoint.load(path)
    model = checkpoint.build_model(saved)
    settings = dict(arm.settings)
    if arm.partner is not None:
        partner_saved = checkpoint.load(folder / f"{data}.{arm.partner}" / "best.pt")
        partner = checkpoint.build_model(partner_saved).eval()
        check_partner(partner, saved.vocabs, partner_saved.vocabs)
        model.pair(partner)
        weight = tune_weight(model, saved, splits.dev, max_tokens, arm)
        settings = {f"paired {k}": beam(k, weight) for k in (TUNE_BEAM, 64)}
    started = time.perf_counter()
    parsed = parse_with_decoders(model, saved.vocabs, splits.test, settings, max_tokens=max_tokens)
    network = time.perf_counter() - started - sum(p.decode_seconds for p in parsed.values())
    results = {}
    for name, result in parsed.items():
        seconds = network + result.decode_seconds
        results[name] = scores_of(splits.test, result.sentences) | {
            "sentences_per_second": len(splits.test) / seconds
        }
    return {
        "arm": arm.label,
        "runs": [str(run) for run in runs],
        "minutes": training_minutes(runs),
        "weights_on_dev": arm.weights_on_dev,
        "settings": results,
    }


def tune_weight(model: Any, saved: Any, dev: list[Sentence], max_tokens: int, arm: Arm) -> float:
    """Arm e's graph weight: the best dev LAS at :data:`TUNE_BEAM` (ties: the smaller)."""
    candidates = {f"w={w}": beam(TUNE_BEAM, w) for w in WEIGHTS}
    parsed = parse_with_decoders(model, saved.vocabs, dev, candidates, max_tokens=max_tokens)
    las = {name: score_corpus(dev, result.sentences).las for name, result in parsed.items()}
    arm.weights_on_dev = las
    return max(WEIGHTS, key=lambda w: (las[f"w={w}"], -w))


def measure(folder: Path, data: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every arm of one treebank whose runs are all in ``folder``."""
    config = checkpoint.load(folder / f"{data}.G" / "best.pt").metadata["config"]
    splits = load_splits(config["data"], root=args.ud_root)
    rows = []
    for arm in arms():
        if all((folder / f"{data}.{name}" / "best.pt").is_file() for name in arm.runs):
            print(f"{data}: {arm.label}", file=sys.stderr)
            rows.append(measure_arm(arm, folder, data, splits, args.max_tokens))
    return {
        "treebank": config["data"]["treebank"],
        "train_sentences": len(splits.train),
        "test_sentences": len(splits.test),
        "arms": rows,
    }


def merge(results: Path, measured: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The treebanks already in ``results`` with these added or replaced, saved there.

    Treebanks can so be measured by separate runs; the largest comes first.
    """
    found = {}
    if results.is_file():
        found = {row["treebank"]: row for row in json.loads(results.read_text())}
    found |= {row["treebank"]: row for row in measured}
    rows = sorted(found.values(), key=lambda row: -row["train_sentences"])
    results.write_text(json.dumps(rows, indent=1) + "\n")
    return rows


def table(treebank: dict[str, Any]) -> list[str]:
    """Markdown table of one treebank: one line per arm and search."""
    lines = [
        "| arm | minutes | search | UAS | LAS | Word | DA | CM | RA | sent/s |",
        "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for row in treebank["arms"]:
        for name, s in row["settings"].items():
            cells = [row["arm"], f"{row['minutes']:.1f}", name]
            # Rows measured before DA was reported lack it.
            cells += [
                f"{s[m]:.2f}" if m in s else "-" for m in ("uas", "las", "word", "da", "cm", "ra")
            ]
            cells.append(f"{s['sentences_per_second']:.0f}")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def write_page(treebanks: Sequence[dict[str, Any]], page: Path, cpu: str, threads: int) -> None:
    """The results page: Zhang & Clark's Table 5, then one table per treebank."""
    lines = [
        "# Beam training at equal minutes (issue 41)",
        "",
        f"Written by `experiments/beam_training.py` from `{page.with_suffix('.json').name}`; "
        f"parsed on {cpu}, {threads} thread(s); the findings are in [beam.md](beam.md).",
        "",
        "Zhang & Clark (2008), Table 5, English Penn Treebank test (punctuation excluded):",
        "",
        "| model | Word | Complete |",
        "|---|--:|--:|",
        *(f"| {name} | {word} | {'-' if cm is None else cm} |" for name, word, cm in ZHANG_CLARK),
        "",
    ]
    for treebank in treebanks:
        lines += [
            f"## {treebank['treebank']}",
            "",
            f"{treebank['train_sentences']} training sentences, "
            f"{treebank['test_sentences']} test sentences (gold tokenization).",
            "",
            *table(treebank),
            "",
        ]
        for row in treebank["arms"]:
            if row["weights_on_dev"]:
                tuned = ", ".join(f"{k}: {v:.2f}" for k, v in row["weights_on_dev"].items())
                lines += [f"Arm (e)'s weight on dev LAS at beam {TUNE_BEAM}: {tuned}.", ""]
    page.write_text("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="the folder of experiments/beam_training.sh")
    parser.add_argument("--treebanks", nargs="+", required=True, help="data= names")
    parser.add_argument("--ud-root", type=Path, default=None, help="default: each run's own")
    parser.add_argument("--max-tokens", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "beam_training.json")
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "beam_training.md")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    measured = [measure(args.runs, data, args) for data in args.treebanks]
    treebanks = merge(args.results, measured)
    write_page(treebanks, args.page, cpu_description(), args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(report_user_errors(main))
