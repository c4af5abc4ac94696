"""The graph family: arc scores -> heads with a :mod:`decoding` decoder, then a label per arc."""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import numpy.typing as npt
import torch

import decoding
from biaffine.data.batching import Batch
from biaffine.inference.settings import DEFAULT_DECODER, DecoderSettings
from biaffine.parsers.biaffine import ArcRelScores, BiaffineParser

__all__ = ["choose_labels", "decode", "decode_heads", "parse_batch", "warm_up"]

IntArray = npt.NDArray[np.int64]


def decode_heads(
    arc_scores: torch.Tensor, lengths: torch.Tensor, decoder: DecoderSettings = DEFAULT_DECODER
) -> IntArray:
    """Best tree per sentence from a batch of arc scores.

    Heads are decoded from head log-probabilities (row-wise log-softmax), which changes no
    decoder's choice but keeps scores in a common range.

    Args:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d.
        lengths: long[B] words per sentence, excluding ROOT.
        decoder: the decoder and whether exactly one word goes to ROOT.

    Returns:
        heads: int64 numpy array [B, N+1], ``-1`` at ROOT and at padding.

    Raises:
        ValueError: from :mod:`decoding` (NaN scores, bad lengths).
    """
    scores = arc_scores.detach().to("cpu", torch.float64).log_softmax(-1).numpy()
    sizes = lengths.detach().to("cpu", torch.int64).numpy()
    threads = torch.get_num_threads()
    heads = decoding.decode(
        scores, sizes, algorithm=decoder.algorithm, root_constraint=decoder.root_constraint
    )
    if torch.get_num_threads() != threads:
        # numba's OpenMP layer shares libgomp with torch and, when it starts its thread pool,
        # resets torch's thread count too (to all cores): oversubscribed, the LSTM ran 4x slower.
        torch.set_num_threads(threads)
    return heads


def decode(
    model: BiaffineParser,
    scores: ArcRelScores,
    lengths: torch.Tensor,
    decoder: DecoderSettings = DEFAULT_DECODER,
) -> tuple[IntArray, IntArray]:
    """Heads with :func:`decode_heads`, then the best label of each chosen arc.

    Labels come after heads (Dozat & Manning, 2017): the argmax of the label scores at each
    decoded (dependent, head) pair, scored for those arcs only.

    Returns:
        (heads, rels): int64 numpy arrays [B, N+1], ``-1`` at ROOT and at padding; rels are
        label ids.
    """
    heads = decode_heads(scores.arc_scores, lengths, decoder)
    return heads, choose_labels(model, scores, heads)


def choose_labels(model: BiaffineParser, scores: ArcRelScores, heads: IntArray) -> IntArray:
    """The best label id of each arc ``heads[b, d] -> d``: int64[B, N+1], -1 where heads is -1.

    Only those arcs are scored (:meth:`BiaffineParser.rel_scores_at`).
    """
    head_index = torch.from_numpy(heads).to(scores.rel_dep.device)
    rels = model.rel_scores_at(scores, head_index).argmax(-1)  # [B, N+1]
    return rels.masked_fill(head_index < 0, -1).cpu().numpy().astype(np.int64)


def warm_up(decoders: Mapping[str, DecoderSettings]) -> None:
    """Load the decoders' compiled kernels now, on a two-word sentence, so no timed call pays it.

    The first call of a numba kernel in a process loads it from numba's cache (about 0.5 s,
    minutes when the cache is cold); later calls cost microseconds.
    """
    for decoder in decoders.values():
        decode_heads(torch.zeros(1, 3, 3), torch.tensor([2]), decoder)


def parse_batch(
    model: BiaffineParser,
    batch: Batch,
    decoders: Mapping[str, DecoderSettings],
    *,
    bf16: bool = False,
) -> dict[str, tuple[IntArray, IntArray, float]]:
    """Score one batch once and decode it with every decoder.

    Args:
        model: a graph parser in eval mode, on the batch's device.
        batch: the batch to parse.
        decoders: name -> decoder settings.
        bf16: run the network in bfloat16 (``torch.autocast``).

    Returns:
        name -> (heads, rels, seconds): int64[B, N+1] each, and the seconds spent in that
        decoder alone (:func:`decode_heads`; the network and label scoring excluded).
    """
    device_type = batch.words.device.type
    with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
        scores = model(batch, tag=False)
    results = {}
    for name, decoder in decoders.items():
        started = time.perf_counter()
        heads = decode_heads(scores.arc_scores, batch.lengths, decoder)
        seconds = time.perf_counter() - started
        # Labels are scored here, so in the same precision as the rest of the network.
        with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
            rels = choose_labels(model, scores, heads)
        results[name] = (heads, rels, seconds)
    return results
