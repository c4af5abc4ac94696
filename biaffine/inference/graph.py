"""The graph family: arc scores -> heads with a :mod:`decoding` decoder, then a label per arc."""

from __future__ import annotations

import time
from collections.abc import Mapping

import numpy as np
import torch

import decoding
from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocab
from biaffine.inference.settings import DEFAULT_DECODER, DecoderSettings
from biaffine.parsers.biaffine import ArcRelScores, BiaffineParser
from decoding.types import IntArray

__all__ = [
    "ROOT_LABEL",
    "choose_labels",
    "decode",
    "decode_heads",
    "parse_batch",
    "root_label_id",
    "warm_up",
]


ROOT_LABEL = "root"
"""UD's label of the word attached to ROOT, and of no other word."""


def root_label_id(labels: Vocab) -> int | None:
    """The id of ``root`` in the relation vocabulary, or None if the treebank never uses it."""
    return labels.stoi.get(ROOT_LABEL)


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
    *,
    root_label: int | None = None,
) -> tuple[IntArray, IntArray]:
    """Heads with :func:`decode_heads`, then the best label of each chosen arc.

    Labels come after heads (Dozat & Manning, 2017), under UD's root rule: see
    :func:`choose_labels`.

    Returns:
        (heads, rels): int64 numpy arrays [B, N+1], ``-1`` at ROOT and at padding; rels are
        label ids.
    """
    heads = decode_heads(scores.arc_scores, lengths, decoder)
    return heads, choose_labels(model, scores, heads, root_label=root_label)


def choose_labels(
    model: BiaffineParser, scores: ArcRelScores, heads: IntArray, *, root_label: int | None = None
) -> IntArray:
    """The label id of each arc ``heads[b, d] -> d``: int64[B, N+1], -1 where heads is -1.

    UD labels the word on ROOT ``root`` and no other word, so the label depends on the head:
    an arc from ROOT takes ``root_label``, and any other arc the best label except
    ``root_label``. A plain argmax per arc ignores the rule: a briefly trained model labelled
    22 of the 35 words of ``tests/data/tiny.conllu`` ``root``. Only the decoded arcs are scored
    (:meth:`BiaffineParser.rel_scores_at`).

    Args:
        model: the parser that produced ``scores``.
        scores: its output for the batch.
        heads: int64[B, N+1] decoded heads, -1 at ROOT and padding.
        root_label: id of ``root`` (:func:`root_label_id`); None when the vocabulary has no
            ``root`` (a tiny or non-UD treebank): then every arc simply takes its best label.
    """
    head_index = torch.from_numpy(heads).to(scores.rel_dep.device)
    rel_scores = model.rel_scores_at(scores, head_index)  # [B, N+1, R]
    if root_label is None:
        rels = rel_scores.argmax(-1)  # [B, N+1]
    else:
        others = rel_scores.index_fill(
            -1, torch.tensor([root_label], device=head_index.device), float("-inf")
        )
        rels = others.argmax(-1).masked_fill(head_index == 0, root_label)  # [B, N+1]
    return rels.masked_fill(head_index < 0, -1).cpu().numpy().astype(np.int64)


def warm_up(decoders: Mapping[str, DecoderSettings]) -> None:
    """Load the decoders' compiled kernels now, on a two-word sentence, so no timed call pays it.

    The first call of a numba kernel in a process loads it from numba's cache (about 0.5 s);
    later calls cost microseconds. With a cold cache it starts the background compilation
    (:mod:`decoding.tiered`) and the kernels run as plain Python until that ends.
    """
    for decoder in decoders.values():
        decode_heads(torch.zeros(1, 3, 3), torch.tensor([2]), decoder)


def parse_batch(
    model: BiaffineParser,
    batch: Batch,
    decoders: Mapping[str, DecoderSettings],
    *,
    bf16: bool = False,
    root_label: int | None = None,
) -> dict[str, tuple[IntArray, IntArray, float]]:
    """Score one batch once and decode it with every decoder.

    Args:
        model: a graph parser in eval mode, on the batch's device.
        batch: the batch to parse.
        decoders: name -> decoder settings.
        bf16: run the network in bfloat16 (``torch.autocast``).
        root_label: id of the ``root`` label, or None (see :func:`choose_labels`).

    Returns:
        name -> (heads, rels, seconds): int64[B, N+1] each, and the seconds spent in that
        decoder alone (:func:`decode_heads`; the network and label scoring excluded).

    Raises:
        ValueError: a setting asks for a beam or a graph weight (transition parsers only).
    """
    for decoder in decoders.values():
        if decoder.transition_search:
            raise ValueError(
                f"search={decoder.search} with graph_weight={decoder.graph_weight} is for "
                "transition parsers; a graph parser decodes with decoder=mst|eisner|greedy"
            )
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
            rels = choose_labels(model, scores, heads, root_label=root_label)
        results[name] = (heads, rels, seconds)
    return results
