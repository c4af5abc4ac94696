"""``predict.py runtime=onnx`` against the torch path as whole commands: wall, memory, start-up.

Usage: ``UD_ROOT=... python benchmarks/onnx_command.py [--checkpoint PATH] [--input FILE]
[--threads 2] [--rounds 5] [--columns all] [--raw [--segmenter PATH]]`` (default: the shipped
``models/en_ewt_small/parser.pt`` on EWT test; ``--raw``: with its segmenter on EWT test's raw text,
``format=raw``).

Exports the checkpoint into a temporary folder (``python -m biaffine.export``), then runs, in
interleaved rounds so that both see the same load, each runtime as a whole command under
``/usr/bin/time -f %M`` (peak resident memory): ``predict.py checkpoint=...`` and
``predict.py runtime=onnx onnx=...``, each with ``threads=N`` (and ``columns=``), on the whole
input (wall time: start-up, reading, parsing, writing) and on its first sentence alone
(start-up: importing, loading the model, warming the kernels). Checks that both wrote the same
bytes. Prints a markdown report with the CPU (``lscpu``) and the load (``uptime``) before and
after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import rawtext

ROOT = Path(__file__).parents[1]
SHIPPED = ROOT / "models" / "en_ewt_small" / "parser.pt"
SHIPPED_SEGMENTER = ROOT / "models" / "en_ewt_small" / "segmenter.pt"
ONE_TEXT = "The quick brown fox jumped over the lazy dog.\n"  # start-up input of --raw
EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"
RUNTIMES = ("torch", "onnx")


def cpu_name() -> str:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def first_sentence(source: Path, dest: Path) -> Path:
    """The first sentence of a CoNLL-U file (its lines up to the first blank one)."""
    with source.open(encoding="utf-8") as lines:
        head = []
        for line in lines:
            head.append(line)
            if not line.strip():
                break
    dest.write_text("".join(head), encoding="utf-8")
    return dest


def command(
    runtime: str, model: Path, source: Path, dest: Path, args: argparse.Namespace
) -> list[str]:
    chosen = f"checkpoint={model}" if runtime == "torch" else f"runtime=onnx onnx={model}"
    settings = [*chosen.split(), f"input={source}", f"output={dest}", f"threads={args.threads}"]
    if args.raw:
        settings.append("format=raw")
        if runtime == "torch":
            settings.append(f"segmenter={args.segmenter}")
    if args.columns is not None:
        settings.append(f"columns={args.columns}")
    return ["/usr/bin/time", "-f", "%M", sys.executable, str(ROOT / "predict.py"), *settings]


def run(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one command (``/usr/bin/time``'s last line)."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return seconds, int(done.stderr.strip().splitlines()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=SHIPPED)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--columns", default=None, help="predict.py's columns=, e.g. all")
    parser.add_argument("--raw", action="store_true", help="raw text in, through the segmenter")
    parser.add_argument("--segmenter", type=Path, default=SHIPPED_SEGMENTER)
    args = parser.parse_args()
    source = args.input or Path(os.environ.get("UD_ROOT", "")) / EWT_TEST
    if not source.is_file():
        raise SystemExit(f"{source} not found: give --input or set UD_ROOT")
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        export = work / "export"
        exported = [f"checkpoint={args.checkpoint}", f"output={export}"]
        if args.raw:
            exported.append(f"segmenter={args.segmenter}")
        subprocess.run(
            [sys.executable, "-m", "biaffine.export", *exported],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        if args.raw and source.suffix == ".conllu":  # its text, as UD rebuilds it
            text = rawtext.corpus_text(source)
            source = work / source.with_suffix(".txt").name
            source.write_text(text, encoding="utf-8")
        if args.raw:
            one = work / "one.txt"
            one.write_text(ONE_TEXT, encoding="utf-8")
        else:
            one = first_sentence(source, work / "one.conllu")
        models = {"torch": args.checkpoint, "onnx": export}
        load_before = uptime()
        wall, memory, startup = ({r: [] for r in RUNTIMES} for _ in range(3))
        for k in range(args.rounds):
            order = RUNTIMES if k % 2 == 0 else RUNTIMES[::-1]
            for runtime in order:
                out = work / f"{runtime}.conllu"
                seconds, mib = run(command(runtime, models[runtime], source, out, args))
                wall[runtime].append(seconds)
                memory[runtime].append(mib)
                alone = command(runtime, models[runtime], one, work / "one.out", args)
                startup[runtime].append(run(alone)[0])
        same = (work / "torch.conllu").read_bytes() == (work / "onnx.conllu").read_bytes()
        written = (work / "torch.conllu").read_text(encoding="utf-8")
        load_after = uptime()
    sentences = sum(1 for line in written.splitlines() if not line.strip())
    print(f"# predict.py runtime=onnx against the torch path: {source.name}\n")
    cpu = f"{cpu_name()}, {os.cpu_count()} logical CPUs"
    print(f"{cpu}; threads={args.threads}, columns={args.columns}, raw text: {args.raw}")
    print(f"{args.rounds} interleaved rounds, {sentences} sentences; output byte-identical: {same}")
    print(f"\nbefore: {load_before}\nafter:  {load_after}\n")
    print("| runtime | wall median s | wall best s | peak memory MiB | start-up median s |")
    print("|---|---:|---:|---:|---:|")
    for runtime in RUNTIMES:
        print(
            f"| {runtime} | {statistics.median(wall[runtime]):.2f} | {min(wall[runtime]):.2f} | "
            f"{max(memory[runtime]):.0f} | {statistics.median(startup[runtime]):.2f} |"
        )


if __name__ == "__main__":
    main()
