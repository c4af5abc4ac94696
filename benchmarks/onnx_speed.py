"""The exported scoring network in onnxruntime against the eager model: sentences/s, best of N.

Usage: ``python benchmarks/onnx_speed.py [CHECKPOINT] [--input FILE] [--threads 2] [--rounds 5]``
(default: the shipped ``models/en_ewt_small/parser.pt`` on EWT test under $UD_ROOT).

Exports the checkpoint as ``python -m biaffine.export`` does into a temporary folder, then times
``chars.onnx`` and ``scores.onnx`` (character model; encoder, arc scores, label vectors) alone
and followed by ``tags.onnx`` in onnxruntime (the character model on each batch's distinct
forms, as the eager model runs it: not the runtime's table of forms, ``biaffine.onnx_chars``),
and the eager model without its taggers (``tag=False``) and with them, on the same batches
(``max_tokens`` words each, as the API makes them), rounds alternating so that all see the same
load, on ``--threads`` threads each (torch's and onnxruntime's intra-op threads, whose idle
threads sleep in both: ``biaffine/openmp.py``). Prints a markdown report with the CPU
(``lscpu``), the load average before and after, the file sizes and the largest deviation of
each output over the whole input (``|onnx - eager| / (1 + |eager|)``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# isort: off
# First: it sets OpenMP's wait policy before torch loads (biaffine/openmp.py).
import biaffine  # noqa: F401

# isort: on
import numpy as np
import onnxruntime
import torch

from biaffine import checkpoint
from biaffine.data.batching import Batch, batches_by_tokens, encode
from biaffine.data.conllu import read_conllu
from biaffine.export import OPSET, Scores, Tags, run

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"
SHIPPED = Path(__file__).parents[1] / "models" / "en_ewt_small" / "parser.pt"


def cpu_name() -> str:
    for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def feed(batch: Batch, chars: onnxruntime.InferenceSession) -> dict[str, np.ndarray]:
    """scores.onnx's inputs, the character vectors from chars.onnx on the batch's distinct forms."""
    array = batch.chars.numpy()
    rows, inverse = np.unique(array.reshape(-1, array.shape[-1]), axis=0, return_inverse=True)
    (vectors,) = chars.run(None, {"chars": rows})
    return {
        "words": batch.words.numpy(),
        "char_vectors": vectors[inverse.reshape(-1)].reshape(*array.shape[:2], -1),
        "lengths": batch.lengths.numpy(),
    }


def session(path: Path, threads: int) -> onnxruntime.InferenceSession:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle threads sleep, as the ONNX runtime's do (biaffine/onnxrun.py).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def largest_deviation(
    model: torch.nn.Module,
    batches: list[Batch],
    sessions: dict[str, onnxruntime.InferenceSession],
) -> dict[str, float]:
    """The largest |onnx - eager| / (1 + |eager|) of each output over the batches."""
    eager_scores = Scores(model, ("words", "char_vectors", "lengths"))
    eager_tags = Tags(model)
    deviation: dict[str, float] = {}
    with torch.inference_mode():
        for batch in batches:
            char_vectors = model.encoder.char_encoder(batch.chars)
            expected = eager_scores(batch.words, char_vectors, batch.lengths)
            found = sessions["scores"].run(None, feed(batch, sessions["chars"]))
            pairs = dict(zip(eager_scores.outputs, zip(expected, found, strict=True), strict=True))
            tag_feed = {"states": expected[-1].numpy(), "lengths": batch.lengths.numpy()}
            expected = eager_tags(expected[-1], batch.lengths)
            found = sessions["tags"].run(None, tag_feed)
            pairs |= dict(zip(eager_tags.outputs, zip(expected, found, strict=True), strict=True))
            for name, (tensor, array) in pairs.items():
                value = tensor.numpy()
                finite = np.isfinite(value)
                assert (np.isfinite(array) == finite).all(), name
                gap = np.abs(array[finite] - value[finite]) / (1 + np.abs(value[finite]))
                deviation[name] = max(deviation.get(name, 0.0), float(gap.max()))
    return deviation


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, nargs="?", default=SHIPPED)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=5000)
    args = parser.parse_args()
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    loaded = checkpoint.load(args.checkpoint)
    model = checkpoint.build_model(loaded)
    if model.encoder.use_tags:
        raise SystemExit("this benchmark feeds words and characters only (no UPOS input)")
    torch.set_num_threads(args.threads)
    sentences = list(read_conllu(source))
    batches = list(
        batches_by_tokens(encode(sentences, loaded.vocabs), args.max_tokens, shuffle=False)
    )
    load_before = load_average()
    with tempfile.TemporaryDirectory() as folder:
        settings = {"checkpoint": str(args.checkpoint), "output": str(Path(folder) / "export")}
        export_seconds = timed(lambda: run(settings))  # what the command does
        sizes = {p.name: p.stat().st_size for p in sorted((Path(folder) / "export").iterdir())}
        sessions = {
            name: session(Path(folder) / "export" / f"{name}.onnx", args.threads)
            for name in ("chars", "scores", "tags")
        }

    def eager(tag: bool) -> None:
        with torch.inference_mode():
            for batch in batches:
                model(batch, tag=tag)

    def runtime(tag: bool) -> None:
        for batch in batches:
            found = sessions["scores"].run(None, feed(batch, sessions["chars"]))
            if tag:
                feed_tags = {"states": found[-1], "lengths": batch.lengths.numpy()}
                sessions["tags"].run(None, feed_tags)

    runs = {
        "eager, taggers off": lambda: eager(False),
        "onnxruntime, chars.onnx + scores.onnx": lambda: runtime(False),
        "eager, taggers on": lambda: eager(True),
        "onnxruntime, chars.onnx + scores.onnx + tags.onnx": lambda: runtime(True),
    }
    for job in runs.values():
        job()  # warm: allocators, onnxruntime's first-run planning
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, job in runs.items():
            seconds[name].append(timed(job))
    load_after = load_average()
    deviation = largest_deviation(model, batches, sessions)
    print(f"# ONNX export against eager: {args.checkpoint} on {source.name}\n")
    words = sum(len(s) for s in sentences)
    versions = f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, opset {OPSET}"
    print(
        f"{len(sentences)} sentences, {words} words, {len(batches)} batches of at most "
        f"{args.max_tokens} words; {args.threads} threads; {cpu_name()}; load average before "
        f"{load_before}, after {load_after}; {versions}; export took {export_seconds:.1f} s.\n"
    )
    print("| run | median s | best s | sentences/s (median) |\n|---|---:|---:|---:|")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.3f} | {min(values):.3f} | {len(sentences) / median:,.0f} |")
    print("\n| file | bytes |\n|---|---:|")
    for name, size in sizes.items():
        print(f"| {name} | {size:,} |")
    print("\n| output | largest \\|onnx - eager\\| / (1 + \\|eager\\|) |\n|---|---:|")
    for name, value in deviation.items():
        print(f"| {name} | {value:.1e} |")


if __name__ == "__main__":
    main()
