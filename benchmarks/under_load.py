"""Parse time idle and beside a busy process on one core: OpenMP threads passive vs spinning.

Usage::

    UD_ROOT=/path/to/ud python benchmarks/under_load.py                 # EWT test, 3 rounds
    python benchmarks/under_load.py --checkpoint run/best.pt --input test.conllu --sentences 500

Each round runs one child process per policy, alternating, so both see the same machine. A child
loads the model, parses once to warm up, times ``Parser.parse`` on the input idle, then again
while a busy loop (a subprocess pinned to the last core, stopped at the end, bounded anyway)
holds that core, then idle once more. Policies:

- ``package``: the environment as the user left it, so ``import biaffine`` sets
  ``GOMP_SPINCOUNT=1000`` (:mod:`biaffine.openmp`);
- ``libgomp``: the behaviour before it, ``GOMP_SPINCOUNT=300000`` (libgomp's default spin when no
  variable is set), which the package leaves alone.

With ``--onnx FOLDER`` (an export, ``python -m biaffine.export``) the children parse with
``runtime=onnx`` (:class:`biaffine.onnxrun.OnnxParser`, whose idle threads sleep whatever the
environment says), under the ``package`` policy alone.

Without ``--checkpoint`` the benchmark writes its own: the default graph parser
(``conf/model/biaffine.yaml``) sized by EWT train's vocabularies, untrained (a parse costs the
same network calls whatever the weights; the decoder sees near-uniform scores). It prints each
round and the median busy/idle ratio per policy (target: under 2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EWT = Path("UD_English-EWT")
POLICIES = {"package": {}, "libgomp": {"GOMP_SPINCOUNT": "300000"}}
BUSY_SECONDS = 300  # upper bound of the busy loop, should the benchmark die without stopping it
BUSY = "import time\nend = time.monotonic() + {}\nwhile time.monotonic() < end:\n    pass\n"


def main() -> None:
    """Parse in alternating child processes and print the busy/idle ratio of each policy."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, default=None)
    parser.add_argument("--input", type=Path, default=None, help="default: EWT test")
    parser.add_argument("--sentences", type=int, default=None, help="the first N (default all)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default all)")
    parser.add_argument("--onnx", type=Path, default=None, help="parse with this export instead")
    parser.add_argument("--child", choices=sorted(POLICIES), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))  # this checkout's packages, wherever the script runs from
    ud = Path(os.environ.get("UD_ROOT", "."))
    args.input = args.input or ud / EWT / "en_ewt-ud-test.conllu"
    if args.child:
        print(json.dumps(_child(args)))
        return
    policies = ["package"] if args.onnx else list(POLICIES)
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = args.checkpoint
        if checkpoint is None and args.onnx is None:
            checkpoint = _untrained_checkpoint(ud, Path(folder) / "graph.pt")
        rounds = [
            {name: _run_child(name, checkpoint, args) for name in policies}
            for _ in range(args.rounds)
        ]
    _report(rounds, args)


def _untrained_checkpoint(ud: Path, path: Path) -> Path:
    """The default graph parser on EWT train's vocabularies, untrained, written to ``path``."""
    from hydra import compose, initialize_config_dir

    from biaffine import checkpoint
    from biaffine.data.conllu import read_conllu
    from biaffine.training.compose import build_model, training_vocabs

    with initialize_config_dir(str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=["model=biaffine"])
    train = list(read_conllu(ud / EWT / "en_ewt-ud-train.conllu"))
    vocabs = training_vocabs(train, train, min_word_count=cfg.trainer.min_word_count)
    model = build_model(cfg.model, vocabs)
    checkpoint.save(
        path,
        parser=model.kind,
        model_config=model.config(),
        vocabs=vocabs,
        state_dict=model.state_dict(),
        metadata={"benchmark": "under_load, untrained"},
    )
    return path


def _run_child(policy: str, checkpoint: Path | None, args: argparse.Namespace) -> dict[str, float]:
    """One child's timings (seconds: idle, busy, idle again) under ``policy``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env |= POLICIES[policy] | {"ROOTPARSE_COMPILE": "foreground", "PYTHONPATH": str(REPO)}
    command = [sys.executable, __file__, "--child", policy]
    command += ["--onnx", str(args.onnx)] if args.onnx else ["--checkpoint", str(checkpoint)]
    command += ["--input", str(args.input), "--rounds", "1"]
    command += ["--sentences", str(args.sentences)] if args.sentences else []
    command += ["--threads", str(args.threads)] if args.threads else []
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _child(args: argparse.Namespace) -> dict[str, float]:
    """Time the parse idle, busy, idle (in this process, after one warm-up parse)."""
    from biaffine.data.conllu import read_conllu

    sentences = list(read_conllu(args.input))[: args.sentences]
    if args.onnx:
        from biaffine.onnxrun import OnnxParser

        api = OnnxParser.load(args.onnx, threads=args.threads)
    else:
        from biaffine.api import Parser

        api = Parser.load(args.checkpoint, threads=args.threads)
    api.parse(sentences[:200])  # kernels loaded, allocator primed
    timings = {"idle": _time(api, sentences)}
    busy = _busy_process()
    try:
        timings["busy"] = _time(api, sentences)
    finally:
        busy.kill()
        busy.wait()
    timings["idle again"] = _time(api, sentences)
    return timings


def _time(api: object, sentences: list) -> float:
    started = time.perf_counter()
    api.parse(sentences)
    return time.perf_counter() - started


def _busy_process() -> subprocess.Popen[bytes]:
    """A bounded busy loop pinned to the last core this process may use."""
    core = max(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", BUSY.format(BUSY_SECONDS)])
    os.sched_setaffinity(busy.pid, {core})
    time.sleep(0.2)  # running before the timed parse starts
    return busy


def _report(rounds: list[dict[str, dict[str, float]]], args: argparse.Namespace) -> None:
    load = os.getloadavg()
    runtime = f"runtime=onnx ({args.onnx.name}), " if args.onnx else ""
    print(f"{runtime}{args.input.name}, {args.sentences or 'all'} sentences, ", end="")
    print(f"{args.rounds} rounds; ", end="")
    print(f"{_cpu()}; load average before the report {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("\n| round | policy | idle s | busy s | idle again s | busy / idle |")
    print("|---|---|---|---|---|---|")
    for number, timings in enumerate(rounds, 1):
        for name, t in timings.items():
            ratio = t["busy"] / min(t["idle"], t["idle again"])
            print(f"| {number} | {name} | {t['idle']:.2f} | {t['busy']:.2f} | ", end="")
            print(f"{t['idle again']:.2f} | {ratio:.2f} |")
    print()
    for name in rounds[0]:
        ratios = [t[name]["busy"] / min(t[name]["idle"], t[name]["idle again"]) for t in rounds]
        idle = statistics.median(min(t[name]["idle"], t[name]["idle again"]) for t in rounds)
        median = statistics.median(ratios)
        verdict = "PASS" if median < 2 else "FAIL"
        print(f"{name}: median idle {idle:.2f} s, median busy/idle {median:.2f} ({verdict}: < 2)")


def _cpu() -> str:
    from biaffine.runtime import cpu_description

    return cpu_description()


if __name__ == "__main__":
    main()
