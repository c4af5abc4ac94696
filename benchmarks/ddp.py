"""Benchmark: training throughput on N processes (DDP, gloo) against one, on the same batches.

Run from the repository root (as a module, so that this checkout's ``biaffine`` is imported)::

    UD_ROOT=/path/to/ud python -m benchmarks.ddp --steps 10

For each setup (processes x threads per process: 1x2, 2x1, 1x1) it launches
``torchrun --nproc_per_node=N -m benchmarks.ddp --worker`` on 127.0.0.1, which trains the
``experiment=ewt_cpu_2h`` parser on UD English EWT train for ``--steps`` optimizer steps of 2
batches each (2 processes x 1 batch, or 1 process accumulating 2: the same global batches,
the same weights), after 2 untimed warm-up steps, and prints the seconds, words per second and
the speed-up over 1x2. No dev scoring, no files. The markdown report goes to stdout.

On 2 shared cores (AMD EPYC, load average ~9.5 from other jobs), ``--steps 5``: 1x2 303.6 s,
2x1 31.5 s, 1x1 48.9 s; so 2x1 is 1.55x faster than 1x1 there, and two intra-op threads on a
busy machine mostly wait on each other. Numbers on an idle machine will differ.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist
from hydra import compose, initialize_config_dir

from biaffine import distributed
from biaffine.data.batching import encode, plan_batches
from biaffine.data.vocab import build_vocabs
from biaffine.runtime import cpu_description, seed_everything, set_threads
from biaffine.training.compose import build_model, fit_settings, load_splits
from biaffine.training.loop import train_epoch
from biaffine.training.optim import lr_decay_scheduler
from biaffine.training.run_state import TrainState

CONF = Path(__file__).resolve().parents[1] / "conf"
SETUPS = ((1, 2), (2, 1), (1, 1))  # (processes, threads per process)
WARM_UP = 2


def main() -> None:
    """Run every setup under torchrun and print the report (or, with --worker, be one rank)."""
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10, help="timed optimizer steps")
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.steps, args.threads)
        return
    if not os.environ.get("UD_ROOT"):
        sys.exit("set UD_ROOT to the folder holding UD_English-EWT")
    rows = [(n, t, *launch(n, t, args.steps)) for n, t in SETUPS]
    report(rows, args.steps)


def launch(processes: int, threads: int, steps: int) -> tuple[float, float]:
    """(seconds, words per second) of ``steps`` steps on ``processes`` x ``threads``."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={processes}"]
    command += ["--master_addr=127.0.0.1", f"--master_port={port}", "-m", "benchmarks.ddp"]
    command += ["--worker", f"--steps={steps}", f"--threads={threads}"]
    env = os.environ | {"OMP_NUM_THREADS": str(threads)}
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    found = re.search(r"^timed ([\d.]+) s ([\d.]+) words/s$", out.stdout, flags=re.M)
    if out.returncode != 0 or found is None:
        sys.exit(f"{processes}x{threads} failed:\n{out.stderr[-3000:]}")
    return float(found[1]), float(found[2])


def worker(steps: int, threads: int) -> None:
    """One rank: train ``steps`` timed steps of 2 global batches; rank 0 prints the time."""
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        cfg = compose("train", overrides=["experiment=ewt_cpu_2h", f"trainer.threads={threads}"])
    with distributed.process_group(torch.device("cpu")) as here:
        cfg.trainer.accumulate = 2 // here.size
        seed_everything(cfg.trainer.seed)
        set_threads(threads)
        splits = load_splits(cfg.data)
        vocabs = build_vocabs(splits.train, min_word_count=cfg.trainer.min_word_count)
        data = encode(splits.train, vocabs)
        model = build_model(cfg.model, vocabs)
        optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.9, 0.9))
        scheduler = lr_decay_scheduler(optimizer, rate=0.5, steps=3500)
        settings = dataclasses.replace(fit_settings(cfg), max_steps=WARM_UP)
        state = TrainState()
        options = {"settings": settings, "state": state}
        train_epoch(model, optimizer, scheduler, data, **options)
        state.epoch = 0  # the timed steps run epoch 1 again, from its first batch
        plan = plan_batches(
            [len(e) for e in data], settings.max_tokens, shuffle=True, seed=1, epoch=1
        )
        words = sum(len(data[i]) for batch in plan[: 2 * steps] for i in batch)
        options["settings"] = dataclasses.replace(settings, max_steps=WARM_UP + steps)
        _barrier(here)
        started = time.perf_counter()
        train_epoch(model, optimizer, scheduler, data, **options)
        _barrier(here)
        seconds = time.perf_counter() - started
        if here.is_main:
            print(f"timed {seconds:.3f} s {words / seconds:.1f} words/s", flush=True)


def _barrier(here: distributed.World) -> None:
    if here.size > 1:
        dist.barrier()


def report(rows: list[tuple[int, int, float, float]], steps: int) -> None:
    """Markdown table of the setups, the CPU and the load."""
    cpu = cpu_description()
    load = os.getloadavg()[0]
    print(f"## DDP training throughput: {steps} steps of 2 EWT batches (ewt_cpu_2h)\n")
    print(f"CPU: {cpu}, {os.cpu_count()} logical cores; load average {load:.2f}; ")
    print(f"torch {torch.__version__}, Python {platform.python_version()}\n")
    print("| processes x threads | seconds | words/s | speed-up over 1x2 |")
    print("|---|---|---|---|")
    base = rows[0][2]
    for processes, threads, seconds, rate in rows:
        print(f"| {processes}x{threads} | {seconds:.2f} | {rate:.0f} | {base / seconds:.2f} |")


if __name__ == "__main__":
    main()
