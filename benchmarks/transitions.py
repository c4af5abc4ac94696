"""Report on the transition systems and their static oracles over the UD treebanks.

Run from the repository root (the package installed, or ``PYTHONPATH=.``)::

    python benchmarks/transitions.py --ud-root ../shared/ud --out docs/transition-systems.md

Per treebank (train, dev and test together): sentences and words, non-projective sentences and
arcs, transitions per word of every system's static oracle (projective systems on the
projective trees), swaps per sentence of the eager and lazy swap oracles; then the time each
static oracle takes over all of English-EWT train (best of ``--repeats`` runs after a warm-up,
one thread, gold validation included). Projectivization columns appear once
``transitions.projective`` exists. The markdown goes to stdout and ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import subprocess
import sys
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would shadow the
# `transitions` package: take the folder off before importing it.
if Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import numba
import numpy as np

import transitions
from biaffine.conllu_io import read_conllu
from transitions.trees import pad_trees

EWT_TRAIN = Path("UD_English-EWT") / "en_ewt-ud-train.conllu"
ORACLES = [
    ("arc_standard", {}),
    ("arc_eager", {}),
    ("arc_eager_unshift", {}),
    ("arc_hybrid", {}),
    ("swap", {"swap_oracle": "eager"}),
    ("swap", {"swap_oracle": "lazy"}),
]


def label(name: str, options: dict) -> str:
    return f"{name} ({options['swap_oracle']})" if options else name


@numba.njit(cache=True)
def nonprojective_arcs(heads, lengths, out):
    """``out[s]`` = arcs h -> d of sentence s with a word between them that h does not dominate."""
    for s in range(lengths.shape[0]):
        count = 0
        for d in range(1, lengths[s] + 1):
            h = heads[s, d]
            for w in range(min(h, d) + 1, max(h, d)):
                node = w
                while node != 0 and node != h:
                    node = heads[s, node]
                if node != h:
                    count += 1
                    break
        out[s] = count


def read_trees(folder: Path) -> list[np.ndarray]:
    trees = []
    for path in sorted(folder.glob("*.conllu")):
        for sentence in read_conllu(path, require_trees=True):
            trees.append(np.array([-1, *sentence.heads], dtype=np.int64))
    return trees


def treebank_row(folder: Path) -> list[str]:
    trees = read_trees(folder)
    heads, lengths = pad_trees(trees)
    crossing = np.zeros(len(trees), dtype=np.int64)
    nonprojective_arcs(heads, lengths, crossing)
    projective = [t for t, c in zip(trees, crossing, strict=True) if c == 0]
    words, proj_words = int(lengths.sum()), sum(len(t) - 1 for t in projective)
    cells = [
        folder.name.removeprefix("UD_"),
        f"{len(trees):,}",
        f"{words:,}",
        f"{100 * (crossing > 0).mean():.1f}",
        f"{100 * crossing.sum() / words:.2f}",
    ]
    swaps = {}
    for name, options in ORACLES:
        system = transitions.get_system(name, **options)
        subset = projective if system.projective else trees
        seq = transitions.oracle_sequences(system, subset)
        cells.append(f"{len(seq.actions) / (proj_words if system.projective else words):.3f}")
        swaps[options.get("swap_oracle")] = seq.swaps
    cells += [f"{swaps['eager'].mean():.3f}", f"{swaps['lazy'].mean():.3f}"]
    cells.append(f"{int(swaps['eager'].max())} / {int(swaps['lazy'].max())}")
    return cells


def time_oracles(path: Path, repeats: int) -> list[str]:
    trees = read_trees_file(path)
    heads, lengths = pad_trees(trees)
    crossing = np.zeros(len(trees), dtype=np.int64)
    nonprojective_arcs(heads, lengths, crossing)
    projective = [t for t, c in zip(trees, crossing, strict=True) if c == 0]
    lines = [
        "| oracle | trees | transitions | best time (s) | transitions/s |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, options in ORACLES:
        system = transitions.get_system(name, **options)
        subset = projective if system.projective else trees
        transitions.oracle_sequences(system, subset[:10])  # compile or load the cache
        best, seq = np.inf, None
        for _ in range(repeats):
            start = time.perf_counter()
            seq = transitions.oracle_sequences(system, subset)
            best = min(best, time.perf_counter() - start)
        steps = len(seq.actions)
        lines.append(
            f"| {label(name, options)} | {len(subset):,} | {steps:,} | {best:.3f} "
            f"| {steps / best:,.0f} |"
        )
    return lines


def read_trees_file(path: Path) -> list[np.ndarray]:
    return [np.array([-1, *s.heads], dtype=np.int64) for s in read_conllu(path, require_trees=True)]


def cpu() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return platform.processor() or "unknown CPU"
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    flags = set(fields.get("Flags", "").split())
    simd = " ".join(f for f in ("sse4_2", "avx", "avx2", "avx512f") if f in flags)
    model = fields.get("Model name", "?").strip()
    return f"{model}, {fields.get('CPU(s)', '?').strip()} logical CPUs, {simd or 'no AVX'}"


def report(ud_root: Path, repeats: int) -> str:
    header = [
        "| treebank | sentences | words | non-proj. sent. % | non-proj. arcs % "
        + "".join(f"| {label(n, o)} " for n, o in ORACLES)
        + "| swaps/sent. eager | swaps/sent. lazy | max swaps eager / lazy |",
        "|---" + "|---:" * (4 + len(ORACLES) + 3) + "|",
    ]
    rows = [
        "| " + " | ".join(treebank_row(folder)) + " |"
        for folder in sorted(p for p in ud_root.iterdir() if p.is_dir())
    ]
    timing = time_oracles(ud_root / EWT_TRAIN, repeats)
    has_projective = importlib.util.find_spec("transitions.projective") is not None
    return "\n".join(
        [
            "## Oracles on the UD treebanks",
            "",
            "Columns after the non-projective counts: transitions per word of each static "
            "oracle (projective systems over the projective trees only"
            + ("" if has_projective else "; `transitions.projective` is not there yet")
            + "), then SWAP transitions per sentence over all trees.",
            "",
            *header,
            *rows,
            "",
            f"## Static oracle time over all of English-EWT train (best of {repeats})",
            "",
            f"CPU: {cpu()}; numba {numba.__version__}, numpy {np.__version__}.",
            "",
            *timing,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ud-root", type=Path, required=True, help="folder of UD_* treebanks")
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per oracle")
    args = parser.parse_args()
    text = report(args.ud_root, args.repeats)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
