"""Classes of the characters of a text of any length, in overlapping windows of bounded size.

The text is cut into windows of ``window`` characters; each is read with up to ``context``
characters of the text on either side, and only its own characters' classes are kept. Windows
go through the network in batches, so memory stays bounded whatever the text's length. With a
model whose classes depend on at most ``context`` characters on each side (no BiLSTM, see
:attr:`SegmenterModel.receptive_field`), the classes are exactly those of one pass over the
whole text.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import torch

from biaffine.runtime import one_thread
from biaffine.segmenting.features import (
    DEFAULT_CONTEXT,
    DEFAULT_WINDOW,
    CharVocab,
    window_bounds,
)
from biaffine.segmenting.model import SegmenterModel
from biaffine.segmenting.streaming import Bounds, ScoreStream

__all__ = [
    "DEFAULT_CONTEXT",
    "DEFAULT_WINDOW",
    "classify",
    "log_probs",
    "score_stream",
    "window_bounds",
]


def classify(
    model: SegmenterModel,
    vocab: CharVocab,
    text: str,
    *,
    window: int = DEFAULT_WINDOW,
    context: int = DEFAULT_CONTEXT,
    batch_size: int = 32,
) -> npt.NDArray[np.uint8]:
    """The class of every character of ``text``, as :meth:`SegmenterModel.decide` chooses it.

    Args:
        model: the network (put into eval mode here; its device is used).
        vocab: its character vocabulary.
        text: any text (empty gives an empty array).
        window: characters whose classes one window gives.
        context: characters read on each side of a window besides its own.
        batch_size: windows per network call.

    Returns:
        uint8[len(text)] classes of ``rawtext.labels``.
    """
    scores = log_probs(model, vocab, text, window=window, context=context, batch_size=batch_size)
    return model.decide(scores).cpu().numpy()


@torch.inference_mode()
def log_probs(
    model: SegmenterModel,
    vocab: CharVocab,
    text: str,
    *,
    window: int = DEFAULT_WINDOW,
    context: int = DEFAULT_CONTEXT,
    batch_size: int = 32,
    workers: int = 1,
) -> torch.Tensor:
    """float32[len(text), N_CLASSES]: log-probabilities of the classes of each character.

    Arguments as :func:`classify`'s, and ``workers``: threads that run the batches side by
    side, each batch whole on one of them. The batches are the same whatever their number,
    so the scores are too, bit for bit; torch releases the GIL inside each operation, so with
    one torch thread per operation (the caller's setting) two workers read EWT test at 1.3
    to 1.7 times one's speed on 2 cores (``python -m benchmarks.segmenter_speed``).
    """
    device = next(model.parameters()).device
    stream = score_stream(
        model, vocab, window=window, context=context, batch_size=batch_size, workers=workers
    )
    return torch.from_numpy(stream.push(text, final=True)).to(device)


def score_stream(
    model: SegmenterModel,
    vocab: CharVocab,
    *,
    window: int = DEFAULT_WINDOW,
    context: int = DEFAULT_CONTEXT,
    batch_size: int = 32,
    workers: int | None = 1,
) -> ScoreStream:
    """A :class:`ScoreStream` of ``model``'s log-probabilities (arguments as :func:`log_probs`'s).

    ``workers=None`` scores each batch on one torch thread, as many side by side as torch has
    threads (:func:`biaffine.runtime.one_thread`), and gives the threads back in between.
    """
    model.eval()
    score = functools.partial(_score_batches, model, workers)
    return ScoreStream(vocab, score, window=window, context=context, batch_size=batch_size)


def _score_batches(
    model: SegmenterModel,
    workers: int | None,
    ids: npt.NDArray[np.int64],
    features: npt.NDArray[np.float32],
    batches: list[list[Bounds]],
    out: npt.NDArray[np.float32],
    first: int,
) -> None:
    """:class:`ScoreWindows` of ``model``, its batches run ``workers`` at a time.

    ``workers=None``: one torch thread each, as many as torch has threads (:func:`score_stream`).
    """
    if workers is None:
        with one_thread() as threads:
            _score_batches(model, threads, ids, features, batches, out, first)
        return
    rows = torch.from_numpy(out)  # shares out's memory: each batch writes its own rows

    def one(batch: list[Bounds]) -> None:
        with torch.inference_mode():  # per thread: a worker does not inherit the caller's mode
            _score_batch(model, ids, features, batch, rows, first)

    if workers > 1 and len(batches) > 1:
        with ThreadPoolExecutor(min(workers, len(batches))) as pool:
            list(pool.map(one, batches))
    else:
        for batch in batches:
            one(batch)


def _score_batch(
    model: SegmenterModel,
    ids: npt.NDArray[np.int64],
    features: npt.NDArray[np.float32],
    batch: list[Bounds],
    out: torch.Tensor,
    first: int,
) -> None:
    """Write the log-probabilities of the windows of ``batch`` into their rows of ``out``.

    Args:
        model: the network, in eval mode.
        ids: int64[T] the text's character ids.
        features: float32[T, F] their features.
        batch: windows as (read start, keep start, keep end, read end) character offsets.
        out: float32[K, N_CLASSES], row ``r`` the character ``first + r``, written at each
            window's kept characters only (on the CPU).
        first: the offset of ``out``'s first row.
    """
    device = next(model.parameters()).device
    width = max(end - start for start, _, _, end in batch)
    batch_ids = np.zeros((len(batch), width), dtype=np.int64)
    batch_features = np.zeros((len(batch), width, features.shape[1]), dtype=np.float32)
    for row, (start, _, _, end) in enumerate(batch):
        batch_ids[row, : end - start] = ids[start:end]
        batch_features[row, : end - start] = features[start:end]
    scores = model(
        torch.from_numpy(batch_ids).to(device), torch.from_numpy(batch_features).to(device)
    ).log_softmax(-1)
    scores = scores.float().cpu()
    for row, (start, keep_start, keep_end, _) in enumerate(batch):
        kept = scores[row, keep_start - start : keep_end - start]
        out[keep_start - first : keep_end - first] = kept
