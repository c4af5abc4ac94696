"""Parsing speed of a trained parser: sentences/s and the share of time outside the encoder.

Usage: ``python benchmarks/transition_speed.py CHECKPOINT [--input FILE] [--threads 2]
[--repeats 3] [--int8 | --bf16]`` (default input: $UD_ROOT/UD_English-EWT/en_ewt-ud-test.conllu).

Times ``biaffine.inference.parse`` on the whole input (batching, encoder, search or decoding,
labels; reading and writing files excluded), then the encoder alone on the same batches; the
difference is the time outside the encoder (for a transition parser: the slot projections, the
lockstep search with its MLP calls, labels and deprojectivization). Best of ``repeats``.
Works for any parser family; the issue's target for the transition family is >= 1,000
sentences/s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from biaffine import checkpoint
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import read_conllu
from biaffine.inference import parse, warm_up
from biaffine.inference.settings import DEFAULT_DECODER
from biaffine.metrics import score_corpus
from biaffine.predicting import quantized
from biaffine.runtime import check_bf16, cpu_description

EWT_TEST = Path("UD_English-EWT") / "en_ewt-ud-test.conllu"


def main() -> None:
    """Parse the arguments, time, print a markdown report."""
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--input", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=5000)
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--int8", action="store_true", help="int8 LSTM and linear weights")
    precision.add_argument("--bf16", action="store_true", help="the network in bfloat16")
    args = parser.parse_args()
    if args.bf16:
        check_bf16(torch.device("cpu"))
    source = args.input or Path(os.environ["UD_ROOT"]) / EWT_TEST
    torch.set_num_threads(args.threads)
    saved = checkpoint.load(args.checkpoint)
    model = checkpoint.build_model(saved)
    model = quantized(model) if args.int8 else model
    vocabs, sentences = saved.vocabs, list(read_conllu(source))
    warm_up(model, {"": DEFAULT_DECODER})
    total = encoder = float("inf")
    for _ in range(args.repeats):
        started = time.perf_counter()
        parsed = parse(model, vocabs, sentences, max_tokens=args.max_tokens, bf16=args.bf16)
        total = min(total, time.perf_counter() - started)
        seconds = encoder_seconds(model, vocabs, sentences, args.max_tokens, bf16=args.bf16)
        encoder = min(encoder, seconds)
    scores = score_corpus(sentences, parsed)
    system = saved.model_config.get("system", "")
    print(f"| {saved.parser} {system} | int8={args.int8} | bf16={args.bf16} |")
    print(f"CPU: {cpu_description()}, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    print(f"{len(sentences)} sentences in {total:.2f} s: {len(sentences) / total:.0f} sentences/s")
    print(
        f"encoder {encoder:.2f} s; outside the encoder {total - encoder:.2f} s "
        f"({100 * (total - encoder) / total:.0f}%)"
    )
    print(f"UAS {scores.uas:.2f} LAS {scores.las:.2f}")


def encoder_seconds(
    model: torch.nn.Module, vocabs, sentences, max_tokens: int, *, bf16: bool = False
) -> float:
    """Seconds of the encoder alone on the batches :func:`parse` makes (batching excluded)."""
    batches = list(batches_by_tokens(encode(sentences, vocabs), max_tokens, shuffle=False))
    model.eval()
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    with torch.inference_mode(), autocast:
        started = time.perf_counter()
        for batch in batches:
            model.encoder(batch)
        return time.perf_counter() - started


if __name__ == "__main__":
    main()
