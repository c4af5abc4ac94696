"""Report on the transition systems and their static oracles over the UD treebanks.

Run from the repository root (the package installed, or ``PYTHONPATH=.``)::

    python benchmarks/transition_systems.py --ud-root ../shared/ud --out docs/transition-systems.md

Per treebank (train, dev and test together): sentences and words, non-projective sentences and
arcs, arcs changed by lifting (Nivre & Nilsson 2005, ``transitions.projective``) and the share
of non-projective arcs that deprojectivization restores, transitions per word of every
system's static oracle (projective systems on the projectivized trees), swaps per sentence of
the eager and lazy swap oracles; then the time each static oracle takes over all of
English-EWT train (best of ``--repeats`` runs after a warm-up, one thread, gold validation
included; CPU and wall time). The markdown goes to stdout and ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np

import transitions
from biaffine.data.conllu import read_conllu
from transitions.projective import projectivity_stats, projectivize

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


def read_trees(paths: list[Path]) -> tuple[list[np.ndarray], list[list[str]]]:
    """Gold heads (int64[n+1], ``heads[0] == -1``) and deprels of every sentence in ``paths``."""
    heads, deprels = [], []
    for path in paths:
        for sentence in read_conllu(path, require_trees=True):
            heads.append(np.array([-1, *sentence.heads], dtype=np.int64))
            deprels.append(sentence.deprels)
    return heads, deprels


def lifted(heads: list[np.ndarray], deprels: list[list[str]]) -> list[np.ndarray]:
    return [projectivize(h, d).heads for h, d in zip(heads, deprels, strict=True)]


def treebank_row(folder: Path) -> list[str]:
    heads, deprels = read_trees(sorted(folder.glob("*.conllu")))
    stats = projectivity_stats(zip(heads, deprels, strict=True))
    projective = lifted(heads, deprels)
    cells = [
        folder.name.removeprefix("UD_"),
        f"{stats.sentences:,}",
        f"{stats.words:,}",
        f"{100 * stats.nonprojective_sentences / stats.sentences:.1f}",
        f"{100 * stats.nonprojective_arcs / stats.words:.2f}",
        f"{stats.lifted_arcs:,}",
        f"{100 * stats.recovered:.1f}",
    ]
    swaps = {}
    for name, options in ORACLES:
        system = transitions.get_system(name, **options)
        seq = transitions.oracle_sequences(system, projective if system.projective else heads)
        cells.append(f"{len(seq.actions) / stats.words:.3f}")
        swaps[options.get("swap_oracle")] = seq.swaps
    cells += [f"{swaps['eager'].mean():.3f}", f"{swaps['lazy'].mean():.3f}"]
    cells.append(f"{int(swaps['eager'].max())} / {int(swaps['lazy'].max())}")
    return cells


def time_oracles(path: Path, repeats: int) -> list[str]:
    heads, deprels = read_trees([path])
    projective = lifted(heads, deprels)
    lines = [
        "| oracle | trees | transitions | CPU time (s) | wall time (s) | transitions/CPU s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, options in ORACLES:
        system = transitions.get_system(name, **options)
        trees = projective if system.projective else heads
        transitions.oracle_sequences(system, trees[:10])  # compile or load the cache
        cpu_s, wall_s, steps = np.inf, np.inf, 0
        for _ in range(repeats):
            start, start_cpu = time.perf_counter(), time.process_time()
            steps = len(transitions.oracle_sequences(system, trees).actions)
            cpu_s = min(cpu_s, time.process_time() - start_cpu)
            wall_s = min(wall_s, time.perf_counter() - start)
        lines.append(
            f"| {label(name, options)} | {len(trees):,} | {steps:,} | {cpu_s:.3f} | {wall_s:.3f} "
            f"| {steps / cpu_s:,.0f} |"
        )
    return lines


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


INTRO = """\
# Transition systems and their oracles: measures on the UD treebanks

Generated on {date} by

    {command}

The systems, their root handling and the tests are described in `transitions/systems.py` and
`../shared/docs/transition-systems.md`.

What the tables say:

- Every static oracle rebuilds every tree (projective systems: the tree lifted by
  `transitions.projective.projectivize`) with exactly one word on ROOT: checked by
  `tests/transitions/test_oracles_on_ud.py` on train, dev and test of every treebank below.
- Transitions per word: arc-standard and arc-hybrid take exactly 2n; arc-eager fewer (words
  left headed on the stack at the end need no REDUCE); arc-eager with Unshift adds the REDUCEs
  of the end phase (its oracle never needs UNSHIFT on a gold tree); swap 2n + 2 per SWAP.
- Lifted arcs count every arc whose head lifting changed; "restored %" is the share of the
  originally non-projective arcs that deprojectivization puts back.
- The lazy swap oracle (Nivre, Kuhlmann & Hall 2009) never swaps more than the eager one
  (Nivre 2009) on any sentence (checked by the same test file).
"""


def report(ud_root: Path, repeats: int, command: str) -> str:
    header = [
        "| treebank | sentences | words | non-proj. sent. % | non-proj. arcs % | lifted arcs "
        "| restored % "
        + "".join(f"| {label(n, o)} " for n, o in ORACLES)
        + "| swaps/sent. eager | swaps/sent. lazy | max swaps eager / lazy |",
        "|---" + "|---:" * (6 + len(ORACLES) + 3) + "|",
    ]
    rows = [
        "| " + " | ".join(treebank_row(folder)) + " |"
        for folder in sorted(p for p in ud_root.iterdir() if p.is_dir())
    ]
    timing = time_oracles(ud_root / EWT_TRAIN, repeats)
    return "\n".join(
        [
            INTRO.format(command=command, date=time.strftime("%Y-%m-%d")),
            "## Oracles on the UD treebanks (train + dev + test)",
            "",
            "Transitions per word for each oracle (projective systems on the projectivized "
            "trees), then SWAP transitions per sentence.",
            "",
            *header,
            *rows,
            "",
            f"## Static oracle time over all of English-EWT train (best of {repeats})",
            "",
            f"CPU: {cpu()}, shared with other jobs (load average "
            f"{os.getloadavg()[0]:.1f} at the end), one thread; numba {numba.__version__}, "
            f"numpy {np.__version__}. Time of `transitions.oracle_sequences` (validation, "
            "the oracle, features, legal masks) after a warm-up call, best of the runs: the "
            "process's CPU time, which other jobs on the machine disturb less, and wall time.",
            "",
            *timing,
            "",
        ]
    )


def main() -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ud-root", type=Path, required=True, help="folder of UD_* treebanks")
    parser.add_argument("--out", type=Path, help="also write the markdown here")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per oracle")
    args = parser.parse_args()
    command = "python benchmarks/transition_systems.py " + " ".join(sys.argv[1:])
    text = report(args.ud_root, args.repeats, command)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
