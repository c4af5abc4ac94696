"""The project's parser against spaCy's and UDPipe 1's on EWT test: speed, CPU, memory, LAS.

Usage: ``UD_ROOT=... python -m benchmarks.peers [--model en_ewt_small | --model CKPT]
--peers FOLDER [--rounds 3] [--threads 2] [--input FILE] [--json OUT]``.

Trains nothing: ``--peers`` is a folder of ``python -m benchmarks.peer_models`` (a UDPipe 1
model and a spaCy pipeline trained from EWT train); a peer whose package (the ``bench`` extra)
or model is missing is skipped with the reason printed, as are ``bf16=true`` on a CPU without
native bfloat16 and ``runtime=onnx`` without the ``export`` extra.

Every system reads the same input: the gold tokenization of the file with LEMMA, UPOS, XPOS,
FEATS, HEAD, DEPREL and DEPS blanked (``benchmarks.peer_models.blank_columns``), and in every round
(the systems in the same order, round after round) each is measured twice, in fresh child
processes so none inherits another's memory or threads:

- parse only: the child loads the model, reads the input into the system's own sentence
  objects, warms up on the first sentences, then times parsing all of them once (no writing);
  sentences/s, median over rounds;
- whole command: a child that does what a user's command does (``predict.py`` for ours; for a
  peer, import it, load the model, read the CoNLL-U, parse, write CoNLL-U): wall seconds, its
  user + system CPU seconds and its peak resident memory (``os.wait4``'s rusage).

Each output of the last round is scored against the gold file with ``python -m
biaffine.evaluate`` (CoNLL 2018 LAS: universal DEPREL, punctuation included). Threads: ours
``threads=N`` (torch, or onnxruntime's intra-op threads); spaCy has no thread setting for one
process (its CPU kernels, thinc on blis, run on one thread), the BLAS variables are set to N all
the same; UDPipe 1 parses on one thread, with no setting. Prints a markdown report with the CPU
(``lscpu``) and the load (``uptime``) before and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.peer_models import SPACY_MODEL, UDPIPE_MODEL, blank_columns
from biaffine.files import atomic_open

ROOT = Path(__file__).parents[1]
EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", *BF16_FLAGS, "amx_int8")


@dataclass(frozen=True)
class System:
    """One parser the benchmark runs.

    Attributes:
        key: its name on the command line of a child (``fp32``, ``spacy``, ...).
        label: its row in the table.
        threads: how its thread count is set.
    """

    key: str
    label: str
    threads: str


SYSTEMS = (
    System("fp32", "rootparse, fp32", "threads=N (torch)"),
    System("int8", "rootparse, `int8=true`", "threads=N (torch)"),
    System("bf16", "rootparse, `bf16=true`", "threads=N (torch)"),
    System("onnx", "rootparse, `runtime=onnx`", "threads=N (onnxruntime intra-op)"),
    System("onnx_int8", "rootparse, `runtime=onnx`, `int8=true` export", "threads=N (onnxruntime)"),
    System("spacy", "spaCy 3.8 parser (efficiency CNN)", "1 (no setting; BLAS variables = N)"),
    System("udpipe", "UDPipe 1 parser (Parsito)", "1 (no setting)"),
)
BY_KEY = {system.key: system for system in SYSTEMS}


@dataclass
class Summary:
    """What the table says of one system.

    Attributes:
        key: the system's key.
        label: its row label.
        threads: how its threads are set.
        rate: median parse-only sentences/s over rounds.
        wall: median whole-command wall seconds; wall_low, wall_high: the fastest and slowest.
        cpu: median whole-command user + system CPU seconds.
        memory: the largest peak resident memory of the command over rounds, MiB.
        las: LAS of its output (CoNLL 2018: universal DEPREL, punctuation included), or None
            if unscored.
    """

    key: str
    label: str
    threads: str
    rate: float
    wall: float
    wall_low: float
    wall_high: float
    cpu: float
    memory: float
    las: float | None


def interleaved(keys: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """The order of the runs: every system in turn, round after round (A B C A B C ...).

    Args:
        keys: the systems, in the order each round runs them.
        rounds: how many rounds.

    Returns:
        (round, key) pairs, in run order.
    """
    return [(k, key) for k in range(rounds) for key in keys]


def summarize(
    system: System,
    rates: Sequence[float],
    commands: Sequence[Mapping[str, float]],
    las: float | None,
) -> Summary:
    """Reduce one system's rounds to its row.

    Args:
        system: the system.
        rates: parse-only sentences/s, one per round.
        commands: whole-command measurements, one per round, each with ``wall``, ``cpu``
            (seconds) and ``memory`` (MiB).
        las: LAS of its output.
    """
    walls = [c["wall"] for c in commands]
    return Summary(
        system.key, system.label, system.threads, statistics.median(rates),
        statistics.median(walls), min(walls), max(walls),
        statistics.median(c["cpu"] for c in commands), max(c["memory"] for c in commands), las,
    )  # fmt: skip


def table(rows: Sequence[Summary], reference: str = "udpipe") -> str:
    """The markdown table of the rows; the ratio column divides by ``reference``'s rate.

    A ratio reads ``-`` when the reference did not run.
    """
    base = next((row.rate for row in rows if row.key == reference), None)
    lines = [
        "| parser | threads | parse only, sentences/s (median) | x UDPipe 1 | whole command, "
        "wall s (median, range) | CPU s (user+sys) | peak memory MiB | LAS |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = "-" if base is None else f"{row.rate / base:.2f}"
        las = "-" if row.las is None else f"{row.las:.2f}"
        lines.append(
            f"| {row.label} | {row.threads} | {row.rate:,.0f} | {ratio} | {row.wall:.2f} "
            f"({row.wall_low:.2f}-{row.wall_high:.2f}) | {row.cpu:.2f} | {row.memory:.0f} "
            f"| {las} |"
        )
    return "\n".join(lines)


def targets(rows: Sequence[Summary]) -> list[str]:
    """The issue's targets, each a line saying PASS, FAIL or that it could not be judged.

    Parse only: the fastest precision or runtime whose LAS is within 0.1 of fp32's at >= 1.5x
    UDPipe 1's sentences/s, and the faster float32 runtime (torch, or the float32 export in
    ``runtime=onnx``) at >= 0.85x; ``runtime=onnx`` as a command: wall <= UDPipe 1's and peak
    memory <= 200 MiB.
    """
    by_key = {row.key: row for row in rows}
    udpipe, fp32 = by_key.get("udpipe"), by_key.get("fp32")
    if udpipe is None or fp32 is None:
        return ["targets: not judged (UDPipe 1 or the fp32 parser did not run)"]
    # Any precision or runtime of ours whose LAS stays within 0.1 of fp32's (torch int8 or bf16,
    # an ONNX export in float32 or int8).
    best = fastest_within(by_key, ("int8", "bf16", "onnx", "onnx_int8"), fp32)
    # runtime=onnx: the export with the shortest command whose LAS stays within 0.1 of fp32's.
    exports = [by_key[k] for k in ("onnx", "onnx_int8") if k in by_key]
    onnx = min(
        (row for row in exports if within(row.las, fp32.las)), key=lambda r: r.wall, default=None
    )
    # float32 arithmetic in either runtime: torch, or the float32 export in onnxruntime.
    fastest = fastest_within(by_key, ("fp32", "onnx"), fp32)
    lines = [
        verdict(f"parse only, best precision within 0.1 LAS ({best.label})",
                best.rate / udpipe.rate, 1.5, "x UDPipe 1", at_least=True),
        verdict(f"parse only, fp32 ({fastest.label})",
                fastest.rate / udpipe.rate, 0.85, "x UDPipe 1", at_least=True),
    ]  # fmt: skip
    if onnx is None:
        return [*lines, "runtime=onnx targets: not judged (runtime=onnx did not run)"]
    name = "runtime=onnx (int8 export)" if onnx.key == "onnx_int8" else "runtime=onnx"
    return [
        *lines,
        verdict(f"{name} command wall", onnx.wall / udpipe.wall, 1.0, "x UDPipe 1's"),
        verdict(f"{name} command peak memory", onnx.memory, 200, "MiB"),
    ]


def fastest_within(by_key: dict[str, Summary], keys: Sequence[str], fp32: Summary) -> Summary:
    """The fastest row of ``keys`` whose LAS is within 0.1 of fp32's; ``fp32`` if there is none."""
    rows = [by_key[k] for k in keys if k in by_key and within(by_key[k].las, fp32.las)]
    return max(rows, key=lambda row: row.rate, default=fp32)


def within(las: float | None, reference: float | None, tolerance: float = 0.1) -> bool:
    """Whether a LAS lies within ``tolerance`` points of the reference (False if unknown)."""
    return las is not None and reference is not None and abs(las - reference) <= tolerance + 1e-9


def verdict(name: str, value: float, bound: float, unit: str, *, at_least: bool = False) -> str:
    """One target line: ``PASS``/``FAIL``, the value and the bound."""
    passed = value >= bound if at_least else value <= bound
    sign = ">=" if at_least else "<="
    return f"{'PASS' if passed else 'FAIL'} {name}: {value:.2f} {unit} (target {sign} {bound})"


def cpu_description() -> tuple[str, list[str]]:
    """``lscpu``'s model name and which of :data:`CPU_FLAGS` the CPU has."""
    name, flags = "unknown CPU", []
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("Flags:"):
            present = set(line.split(":", 1)[1].split())
            flags = [flag for flag in CPU_FLAGS if flag in present]
    return name, flags


def skip_reasons(flags: Sequence[str], peers: Path, onnx_export: bool) -> dict[str, str]:
    """Why each system that cannot run here is skipped (systems that can are absent).

    Args:
        flags: the CPU's flags among :data:`CPU_FLAGS`.
        peers: the folder of ``benchmarks/peer_models.py``.
        onnx_export: whether ``onnx`` and ``onnxruntime`` are installed.
    """
    reasons = {}
    if not any(flag in flags for flag in BF16_FLAGS):
        reasons["bf16"] = "the CPU has neither avx512_bf16 nor amx_bf16 (no native bfloat16)"
    if not onnx_export:
        for key in ("onnx", "onnx_int8"):
            reasons[key] = 'onnx or onnxruntime not installed (pip install -e ".[export]")'
    models = {"spacy": ("spacy", SPACY_MODEL), "udpipe": ("ufal.udpipe", UDPIPE_MODEL)}
    for key, (package, model) in models.items():
        if not importable(package):
            reasons[key] = f'{package} not installed (pip install -e ".[bench]")'
        elif not (peers / model).exists():
            reasons[key] = f"no {peers / model}: python -m benchmarks.peer_models {peers}"
    return reasons


def importable(module: str) -> bool:
    """Whether ``module`` (dotted names included) can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


def resolve_checkpoint(model: str) -> Path:
    """A checkpoint path, or the parser of the installed model of that name."""
    if Path(model).is_file():
        return Path(model)
    from biaffine import installed

    return installed.require(model).parser


@dataclass(frozen=True)
class Setup:
    """What a child needs: where everything is.

    Attributes:
        checkpoint: the project's parser checkpoint.
        onnx: its export folder.
        onnx_int8: its export folder with int8 weights (``int8=true``).
        peers: the peers' model folder.
        source: the blanked input.
        threads: threads per system.
    """

    checkpoint: Path
    onnx: Path
    onnx_int8: Path
    peers: Path
    source: Path
    threads: int


def child_environment(threads: int) -> dict[str, str]:
    """The environment of every child: N threads for BLAS and OpenMP, kernels compiled first."""
    environment = {**os.environ, **{name: str(threads) for name in THREAD_VARIABLES}}
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered/).
    environment.setdefault("ROOTPARSE_COMPILE", "foreground")
    return environment


def command_argv(key: str, setup: Setup, dest: Path) -> list[str]:
    """The whole command of a system: ``predict.py`` for ours, a child of this module else."""
    predict = [sys.executable, str(ROOT / "predict.py"), f"input={setup.source}",
               f"output={dest}", f"threads={setup.threads}"]  # fmt: skip
    extra = {
        "fp32": [f"checkpoint={setup.checkpoint}"],
        "int8": [f"checkpoint={setup.checkpoint}", "int8=true"],
        "bf16": [f"checkpoint={setup.checkpoint}", "bf16=true"],
        "onnx": ["runtime=onnx", f"onnx={setup.onnx}"],
        "onnx_int8": ["runtime=onnx", f"onnx={setup.onnx_int8}"],
    }
    if key in extra:
        return [*predict, *extra[key]]
    return [*child_argv("command", key, setup), str(dest)]


def child_argv(mode: str, key: str, setup: Setup) -> list[str]:
    """``python -m benchmarks.peer_children MODE KEY ...``: one measurement, a fresh process."""
    onnx = setup.onnx_int8 if key == "onnx_int8" else setup.onnx
    return [
        sys.executable, "-m", "benchmarks.peer_children", mode, key,
        str(setup.checkpoint), str(onnx), str(setup.peers), str(setup.source),
        str(setup.threads),
    ]  # fmt: skip


def measure_command(argv: Sequence[str], environment: Mapping[str, str]) -> dict[str, float]:
    """Wall seconds, user + system CPU seconds and peak resident MiB of one command."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, cwd=ROOT, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{stderr.decode(errors='replace')}")
    # ru_maxrss is in KiB on Linux.
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "memory": usage.ru_maxrss / 1024}


def measure_parse(key: str, setup: Setup, environment: Mapping[str, str]) -> float:
    """Parse-only sentences/s of one fresh child."""
    done = subprocess.run(
        child_argv("parse", key, setup), cwd=ROOT, env=environment, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"parse-only child {key} failed:\n{done.stderr}")
    return float(json.loads(done.stdout.strip().splitlines()[-1])["rate"])


def score(gold: Path, predicted: Path) -> float:
    """LAS of ``predicted`` against ``gold``, as the model cards give it.

    CoNLL 2018's: universal DEPREL (no subtypes), punctuation included
    (``python -m biaffine.evaluate``).
    """
    done = subprocess.run(
        [sys.executable, "-m", "biaffine.evaluate", "--json", str(gold), str(predicted)],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout)["las_universal"])


def load_text() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def export_onnx(checkpoint: Path, folder: Path, *, int8: bool = False) -> None:
    """``python -m biaffine.export`` of the checkpoint into ``folder`` (``int8=true``)."""
    settings = [f"checkpoint={checkpoint}", f"output={folder}", f"int8={str(int8).lower()}"]
    subprocess.run(
        [sys.executable, "-m", "biaffine.export", *settings],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip


def run_rounds(
    keys: Sequence[str], setup: Setup, rounds: int, outputs: Path
) -> tuple[dict[str, list[float]], dict[str, list[dict[str, float]]]]:
    """Every (round, system) of :func:`interleaved`: a parse-only child, then the command."""
    environment = child_environment(setup.threads)
    rates: dict[str, list[float]] = {key: [] for key in keys}
    commands: dict[str, list[dict[str, float]]] = {key: [] for key in keys}
    for k, key in interleaved(keys, rounds):
        rates[key].append(measure_parse(key, setup, environment))
        dest = outputs / f"{key}.conllu"
        commands[key].append(measure_command(command_argv(key, setup, dest), environment))
        print(f"round {k + 1} {key}: {rates[key][-1]:.0f} sentences/s, "
              f"{commands[key][-1]['wall']:.2f} s", file=sys.stderr)  # fmt: skip
    return rates, commands


def report(rows: Sequence[Summary], skipped: Mapping[str, str], header: Mapping[str, str]) -> str:
    """The whole markdown report: header lines, the table, skips and targets."""
    lines = [f"# Parsing against the peers: {header['input']}", ""]
    lines += [f"- {name}: {value}" for name, value in header.items() if name != "input"]
    lines += ["", table(rows), ""]
    if skipped:
        lines += [f"- skipped {BY_KEY[key].label}: {why}" for key, why in skipped.items()]
        lines.append("")
    lines += targets(rows)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="en_ewt_small", help="installed model name or checkpoint"
    )
    parser.add_argument("--peers", type=Path, required=True, help="benchmarks.peer_models folder")
    parser.add_argument("--input", type=Path, default=None, help="default: EWT test")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--systems", nargs="+", default=[s.key for s in SYSTEMS],
                        choices=[s.key for s in SYSTEMS])  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    gold = args.input or Path(os.environ.get("UD_ROOT", "")) / EWT_TEST
    if not gold.is_file():
        raise SystemExit(f"{gold} not found: give --input or set UD_ROOT")
    cpu, flags = cpu_description()
    export = importable("onnx") and importable("onnxruntime")
    reasons = skip_reasons(flags, args.peers, export)
    skipped = {key: reasons[key] for key in args.systems if key in reasons}
    keys = [key for key in args.systems if key not in reasons]
    for key, why in skipped.items():
        print(f"skipping {BY_KEY[key].label}: {why}", file=sys.stderr)
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        source = work / "input.conllu"
        text = blank_columns(gold.read_text(encoding="utf-8"))
        source.write_text(text, encoding="utf-8")
        setup = Setup(resolve_checkpoint(args.model), work / "onnx", work / "onnx_int8",
                      args.peers, source, args.threads)  # fmt: skip
        if "onnx" in keys:
            export_onnx(setup.checkpoint, setup.onnx)
        if "onnx_int8" in keys:
            export_onnx(setup.checkpoint, setup.onnx_int8, int8=True)
        load_before = load_text()
        rates, commands = run_rounds(keys, setup, args.rounds, work)
        load_after = load_text()
        rows = [
            summarize(BY_KEY[key], rates[key], commands[key], score(gold, work / f"{key}.conllu"))
            for key in keys
        ]
    sentences = sum(1 for line in text.splitlines() if line.startswith("1\t"))
    header = {
        "input": f"{gold.name}, {sentences} sentences, gold tokenization, no gold tags",
        "model": f"{args.model} ({setup.checkpoint})",
        "peers": str(args.peers),
        "CPU": f"{cpu}, {os.cpu_count()} logical CPUs; flags: {' '.join(flags) or 'none'}",
        "threads": str(args.threads),
        "rounds": f"{args.rounds}, interleaved (every system in turn, round after round)",
        "load before": load_before,
        "load after": load_after,
    }
    print(report(rows, skipped, header))
    if args.json is not None:
        result = {"header": header, "rows": [asdict(r) for r in rows], "skipped": skipped,
                  "targets": targets(rows)}  # fmt: skip
        with atomic_open(args.json, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
