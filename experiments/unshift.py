r"""Seed 000: arc-eager with Unshift against the standard heuristic, one classifier per treebank.

Nivre & Fernandez-Gonzalez (2014, Table 1) on Universal Dependencies with a neural classifier.
Each model is an arc-eager classifier without a dummy ROOT (``model=arc_eager_unshift``: its
static oracle is arc-eager's, UNSHIFT never appears in it). The test set is parsed twice with the
same weights; the two parses take the same transitions until the input ends:

- *heuristic*: stop there and put the headless words left on the stack on ROOT (arc-eager as
  Nivre & Scholz 2004 ran it; ``get_system("arc_eager_unshift", attach_leftovers=True)``);
- *Unshift*: go on until one word is left: REDUCE or UNSHIFT where the buffer is empty (exactly
  one is legal), the classifier's choice among SHIFT, LEFT-ARC and RIGHT-ARC otherwise.

Measured as the paper's Table 1 (its columns 4-9), on the stack at the end of input, in the
sentences left fragmented there (more than one headless word: with one, that word is the root of
a complete tree and both parses are equal): the headless words, those whose gold head is on the
stack or is ROOT, and how many of those each parse attaches to their gold head (the recall of the
paper, 41% for the heuristic and 72% for Unshift with MaltParser on CoNLL-X). Gold heads are the
treebank's, predicted heads the final output's (after deprojectivization). Beside them: UAS,
LAS, DA, root accuracy, complete match (UEM) and the malformed rate of each parse, and the graph
parser of the root-constraint study on the same treebank (``docs/root-constraint.json``, MST
with one word on ROOT, the same training budget).

Usage (models as in ``conf/experiment/root_study.yaml``, EWT's under ``ewt_cpu_2h``)::

    python train.py -m experiment=root_study model=arc_eager_unshift \
      hydra.sweep.dir=multirun/unshift_study \
      'data=glob(ud_*,exclude=[ud_english_ewt,ud_upper_sorbian_ufal])'
    python train.py experiment=ewt_cpu_2h model=arc_eager_unshift trainer.max_minutes=20 \
      hydra.run.dir=outputs/ewt_unshift
    python experiments/unshift.py multirun/unshift_study outputs/ewt_unshift/best.pt

Rows are merged into ``--results`` by treebank, and the page and its plot are written from every
row there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import transitions
from biaffine import checkpoint
from biaffine.cli import report_user_errors
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse_with_decoders
from biaffine.inference.transition import scorer
from biaffine.metrics import AttachmentScores, dependency_accuracy_of, score_corpus
from biaffine.parsers.transition import TransitionParser
from biaffine.runtime import set_threads
from biaffine.training import load_splits

REPO = Path(__file__).resolve().parent.parent
PARSES = ("heuristic", "unshift")
METRICS = ("uas", "las", "dependency_accuracy", "root_accuracy", "uem", "malformed_rate")


METHOD = """\
Nivre & Fernandez-Gonzalez (2014) parse with one MaltParser classifier per language twice:
arc-eager with MaltParser's heuristic (headless words left on the stack go to ROOT) and arc-eager
with Unshift, which goes on from the end of input until one tree is left. Here the classifier is
neural (Kiperwasser & Goldberg 2016: BiLSTM states of s0-s2 and b0-b1, an MLP; labels from a
biaffine scorer on each arc), trained once per treebank on the static oracle of arc-eager without
a dummy ROOT (`model=arc_eager_unshift`, pseudo-projective trees), and both parses share every
transition up to the end of input. Without a dummy ROOT the root word itself stays headless on
the stack, so a sentence is *fragmented* when more than one headless word is left there; the
counts are over those sentences (with one left, both parses give the same tree). *Gold head on
stack*: the word's gold head is on the stack at the end of input or is ROOT (only those can be
attached right, by either parse); *correct*: the final output gives the word its gold head;
*recall*: correct / gold head on stack (the paper's columns 8-9: 40.60% for the heuristic, 72.12%
for Unshift, MaltParser on CoNLL-X dev sets). Test sets here.

Reproduce (the budget of the root-constraint study, `conf/experiment/root_study.yaml`; EWT with
the recipe's sizes):

    python train.py -m experiment=root_study model=arc_eager_unshift \\
      hydra.sweep.dir=multirun/unshift_study \\
      'data=glob(ud_*,exclude=[ud_english_ewt,ud_upper_sorbian_ufal])'
    python train.py experiment=ewt_cpu_2h model=arc_eager_unshift trainer.max_minutes=20 \\
      hydra.run.dir=outputs/ewt_unshift
    python experiments/unshift.py multirun/unshift_study outputs/ewt_unshift/best.pt
"""


@dataclass
class Leftovers:
    """Table 1's columns 4-9, summed over the fragmented sentences of a test set.

    Attributes:
        sentences: sentences with more than one headless word on the stack at the end of input.
        left: headless words on the stack there (column 4).
        reachable: of those, words whose gold head is on the stack or is ROOT (column 5).
        reachable_root: of ``reachable``, words whose gold head is ROOT.
        correct: parse -> words of ``reachable`` attached to their gold head (columns 6-7).
        correct_root: parse -> the same, for the words whose gold head is ROOT.
    """

    sentences: int = 0
    left: int = 0
    reachable: int = 0
    reachable_root: int = 0
    correct: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARSES, 0))
    correct_root: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PARSES, 0))

    def add(
        self,
        stack: Iterable[int],
        headless: Sequence[int],
        gold: Sequence[int],
        parsed: Mapping[str, Sequence[int]],
    ) -> None:
        """Count one fragmented sentence.

        Args:
            stack: the words on the stack at the end of input.
            headless: those of them without a head.
            gold: gold HEAD of words 1..n (index 0 is word 1).
            parsed: parse name -> predicted HEAD of words 1..n.
        """
        on_stack = {0, *stack}
        self.sentences += 1
        self.left += len(headless)
        for word in headless:
            head = gold[word - 1]
            if head not in on_stack:
                continue
            self.reachable += 1
            self.reachable_root += head == 0
            for name, heads in parsed.items():
                hit = heads[word - 1] == head
                self.correct[name] += hit
                self.correct_root[name] += hit and head == 0

    def __add__(self, other: Leftovers) -> Leftovers:
        """The counts of both, field by field (totals over treebanks)."""
        return Leftovers(
            sentences=self.sentences + other.sentences,
            left=self.left + other.left,
            reachable=self.reachable + other.reachable,
            reachable_root=self.reachable_root + other.reachable_root,
            correct={name: self.correct[name] + other.correct[name] for name in PARSES},
            correct_root={
                name: self.correct_root[name] + other.correct_root[name] for name in PARSES
            },
        )

    def recall(self, name: str) -> float:
        """Percent of the reachable words the parse ``name`` attaches to their gold head."""
        return 100.0 * self.correct[name] / self.reachable if self.reachable else 0.0


def stacks_at_end_of_input(
    model: TransitionParser, vocabs: Vocabs, sentences: Sequence[Sentence], max_tokens: int
) -> list[tuple[list[int], list[int]]]:
    """Per sentence, the stack when the input ends and its headless words, greedy as parsed.

    ``model.system`` must be the heuristic one (terminal at the end of input).
    """
    found: list[tuple[list[int], list[int]]] = [([], [])] * len(sentences)
    model.eval()
    options = {"n_stack": model.n_stack, "n_buffer": model.n_buffer}
    with torch.inference_mode():
        for batch in batches_by_tokens(encode(sentences, vocabs), max_tokens, shuffle=False):
            encoded = model.encode(batch, tag=False)
            lengths = batch.lengths.numpy()
            score = scorer(model, encoded)
            configs, _ = transitions.greedy_configs(model.system, lengths, score, **options)
            for row, index in enumerate(batch.indices.tolist()):
                stack = configs.stack[row, : configs.stack_size[row]].tolist()
                headless = [w for w in stack if configs.heads[row, w] == -1]
                found[index] = (stack, headless)
    return found


def measure(path: Path, ud_root: Path | None, max_tokens: int) -> dict[str, Any]:
    """One row: both parses' scores and Table 1's leftover counts on the checkpoint's test set."""
    saved = checkpoint.load(path)
    config = saved.metadata["config"]
    model = checkpoint.build_model(saved)
    if not isinstance(model, TransitionParser) or model.system.name != "arc_eager_unshift":
        raise ValueError(f"{path}: needs a model=arc_eager_unshift checkpoint")
    splits = load_splits(config["data"], root=ud_root)
    if splits.test is None:
        raise ValueError(f"{path}: {config['data']['treebank']} has no test split")
    test = splits.test
    systems = {
        "heuristic": transitions.get_system("arc_eager_unshift", attach_leftovers=True),
        "unshift": model.system,
    }
    parsed, scores, seconds = {}, {}, {}
    for name, system in systems.items():
        model.system = system
        started = time.perf_counter()
        result = parse_with_decoders(
            model, saved.vocabs, test, {name: DecoderSettings()}, max_tokens=max_tokens
        )
        seconds[name] = time.perf_counter() - started
        parsed[name] = result[name].sentences
        scores[name] = score_corpus(test, parsed[name])
    model.system = systems["heuristic"]
    stacks = stacks_at_end_of_input(model, saved.vocabs, test, max_tokens)
    leftovers = Leftovers()
    for index, (stack, headless) in enumerate(stacks):
        if len(headless) > 1:
            heads = {name: parsed[name][index].heads for name in PARSES}
            leftovers.add(stack, headless, test[index].heads, heads)
    return {
        "treebank": config["data"]["treebank"],
        "checkpoint": str(path),
        "train_sentences": len(splits.train),
        "test_sentences": len(test),
        "test_words": sum(len(s) for s in test),
        "parses": {name: _scores(scores[name]) | {"seconds": seconds[name]} for name in PARSES},
        "leftovers": asdict(leftovers),
    }


def _scores(scores: AttachmentScores) -> dict[str, float]:
    return {metric: getattr(scores, metric) for metric in METRICS}


def graph_scores(results: Path | None, treebank: str) -> dict[str, float] | None:
    """The root-constraint study's graph parser (MST, one root) on ``treebank``, with DA."""
    if results is None or not results.is_file():
        return None
    for row in json.loads(results.read_text()):
        if row["treebank"] == treebank:
            counts = row["decoders"]["mst"]
            return {metric: counts[metric] for metric in METRICS if metric in counts} | {
                "dependency_accuracy": dependency_accuracy_of(counts)
            }
    return None


def merge(results_path: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows already in ``results_path`` with these added or replaced (by treebank), saved."""
    table = {}
    if results_path.is_file():
        table = {row["treebank"]: row for row in json.loads(results_path.read_text())}
    table |= {row["treebank"]: row for row in rows}
    merged = sorted(table.values(), key=lambda row: (row["train_sentences"], row["treebank"]))
    results_path.parent.mkdir(parents=True, exist_ok=True)
    results_path.write_text(json.dumps(merged, indent=1) + "\n")
    return merged


def _leftovers_of(row: dict[str, Any]) -> Leftovers:
    return Leftovers(**row["leftovers"])


def leftover_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Table 1 of the paper: attachment scores and the leftovers of each treebank, and totals."""
    lines = [
        "| treebank | train sents | UAS heur. | UAS Unshift | LAS heur. | LAS Unshift "
        "| fragmented sents | left | gold head on stack | of which ROOT | correct heur. "
        "| correct Unshift | recall heur. % | recall Unshift % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = Leftovers()
    for row in rows:
        left, parses = _leftovers_of(row), row["parses"]
        total = total + left
        lines.append(
            f"| {row['treebank']} | {row['train_sentences']} "
            f"| {parses['heuristic']['uas']:.2f} | {parses['unshift']['uas']:.2f} "
            f"| {parses['heuristic']['las']:.2f} | {parses['unshift']['las']:.2f} "
            f"| {left.sentences} | {left.left} | {left.reachable} | {left.reachable_root} "
            f"| {left.correct['heuristic']} | {left.correct['unshift']} "
            f"| {left.recall('heuristic'):.1f} | {left.recall('unshift'):.1f} |"
        )
    mean = {
        (name, metric): np.mean([row["parses"][name][metric] for row in rows])
        for name in PARSES
        for metric in ("uas", "las")
    }
    lines.append(
        f"| **all {len(rows)}** (mean scores, summed counts) | "
        f"| {mean['heuristic', 'uas']:.2f} | {mean['unshift', 'uas']:.2f} "
        f"| {mean['heuristic', 'las']:.2f} | {mean['unshift', 'las']:.2f} "
        f"| {total.sentences} | {total.left} | {total.reachable} | {total.reachable_root} "
        f"| {total.correct['heuristic']} | {total.correct['unshift']} "
        f"| {total.recall('heuristic'):.1f} | {total.recall('unshift'):.1f} |"
    )
    return lines


def measures_table(rows: Sequence[dict[str, Any]], graph_results: Path | None) -> list[str]:
    """Seed 003's measures (DA, RA, CM) with UAS, LAS and malformed, for the three parsers."""
    lines = [
        "| treebank | parser | UAS | LAS | DA | RA | CM (UEM) | malformed % |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        found = {f"arc-eager, {name}": row["parses"][name] for name in PARSES}
        graph = graph_scores(graph_results, row["treebank"])
        if graph is not None:
            found["graph, MST one root"] = graph
        for parser, scores in found.items():
            cells = " | ".join(f"{scores[metric]:.2f}" for metric in METRICS)
            lines.append(f"| {row['treebank']} | {parser} | {cells} |")
    return lines


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Recall of the reachable leftovers (left) and LAS change (right) per treebank, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [row["treebank"].removeprefix("UD_") for row in rows]
    recalls = {name: [_leftovers_of(row).recall(name) for row in rows] for name in PARSES}
    gains = [row["parses"]["unshift"]["las"] - row["parses"]["heuristic"]["las"] for row in rows]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 0.28 * len(rows) + 1.5), dpi=100)
    ys = np.arange(len(rows))
    left.barh(ys - 0.2, recalls["heuristic"], height=0.4, label="heuristic (leftovers on ROOT)")
    left.barh(ys + 0.2, recalls["unshift"], height=0.4, label="Unshift")
    left.set_yticks(ys, names, fontsize=7)
    left.set_xlabel("% of leftovers with gold head on the stack, attached right")
    left.legend(fontsize=7)
    right.barh(ys, gains, color=["tab:green" if g >= 0 else "tab:red" for g in gains])
    right.axvline(0, color="grey", linewidth=0.8)
    right.set_yticks(ys, [])
    right.set_xlabel("test LAS, Unshift - heuristic (points)")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def write_page(rows: Sequence[dict[str, Any]], page: Path, graph_results: Path | None) -> None:
    """The results page, from every row of the results file, with its plot beside it."""
    image = page.with_suffix(".png")
    plot(rows, image)
    lines = [
        "# Arc-eager with Unshift against the heuristic, one classifier (seed 000)",
        "",
        "Written by `experiments/unshift.py` from `" + page.with_suffix(".json").name + "`. "
        "Test sets, gold tokenization, punctuation included, LAS on full labels.",
        "",
        METHOD,
        f"![recall of the leftovers and LAS change per treebank]({image.name})",
        "",
        "## Table 1 on UD",
        "",
        *leftover_table(rows),
        "",
        "## Seed 003's measures",
        "",
        "DA: non-root words with the right head; RA: gold root words on ROOT; CM: sentences "
        "with every head right (Nivre & Scholz 2004, after Yamada & Matsumoto 2003). Malformed: "
        "not a single-rooted tree, or the root label rule broken.",
        "",
        *measures_table(rows, graph_results),
        "",
    ]
    page.write_text("\n".join(lines))


def main(argv: Sequence[str] | None = None) -> int:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path, help="checkpoints or folders of runs")
    parser.add_argument("--ud-root", type=Path, default=None, help="default: each run's own")
    parser.add_argument("--max-tokens", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", type=Path, default=REPO / "docs" / "unshift.json")
    parser.add_argument(
        "--graph-results", type=Path, default=REPO / "docs" / "root-constraint.json"
    )
    parser.add_argument("--page", type=Path, default=REPO / "docs" / "unshift.md")
    args = parser.parse_args(argv)
    set_threads(args.threads)
    rows = []
    for path in checkpoint.find(args.paths):
        print(f"measuring {path}", file=sys.stderr)
        rows.append(measure(path, args.ud_root, args.max_tokens))
    merged = merge(args.results, rows)
    write_page(merged, args.page, args.graph_results)
    print("\n".join(leftover_table(merged)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(report_user_errors(main))
