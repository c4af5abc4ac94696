"""Classes of the characters of a text of any length, in overlapping windows of bounded size.

The text is cut into windows of ``window`` characters; each is read with up to ``context``
characters of the text on either side, and only its own characters' classes are kept. Windows
go through the network in batches, so memory stays bounded whatever the text's length. With a
model whose classes depend on at most ``context`` characters on each side (no BiLSTM, see
:attr:`SegmenterModel.receptive_field`), the classes are exactly those of one pass over the
whole text.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt
import torch

from biaffine.segmenting.features import (
    DEFAULT_CONTEXT,
    DEFAULT_WINDOW,
    CharVocab,
    window_bounds,
)
from biaffine.segmenting.model import SegmenterModel
from rawtext.labels import N_CLASSES

__all__ = ["DEFAULT_CONTEXT", "DEFAULT_WINDOW", "classify", "log_probs", "window_bounds"]


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
    model.eval()
    device = next(model.parameters()).device
    ids, features = vocab.ids(text), vocab.features(text)
    out = torch.zeros(len(text), N_CLASSES, device=device)
    bounds = window_bounds(len(text), window, context)
    batches = [bounds[first : first + batch_size] for first in range(0, len(bounds), batch_size)]

    def score(batch: list[tuple[int, int, int, int]]) -> None:
        with torch.inference_mode():  # per thread: a worker does not inherit the caller's mode
            _score_batch(model, ids, features, batch, out)

    if workers > 1 and len(batches) > 1:
        with ThreadPoolExecutor(min(workers, len(batches))) as pool:
            list(pool.map(score, batches))  # each writes its own windows' rows of ``out``
    else:
        for batch in batches:
            score(batch)
    return out


def _score_batch(
    model: SegmenterModel,
    ids: npt.NDArray[np.int64],
    features: npt.NDArray[np.float32],
    batch: list[tuple[int, int, int, int]],
    out: torch.Tensor,
) -> None:
    """Write the log-probabilities of the windows of ``batch`` into their rows of ``out``.

    Args:
        model: the network, in eval mode.
        ids: int64[T] the text's character ids.
        features: float32[T, F] their features.
        batch: windows as (read start, keep start, keep end, read end) character offsets.
        out: float32[T, N_CLASSES], written at each window's kept characters only.
    """
    device = out.device
    width = max(end - start for start, _, _, end in batch)
    batch_ids = np.zeros((len(batch), width), dtype=np.int64)
    batch_features = np.zeros((len(batch), width, features.shape[1]), dtype=np.float32)
    for row, (start, _, _, end) in enumerate(batch):
        batch_ids[row, : end - start] = ids[start:end]
        batch_features[row, : end - start] = features[start:end]
    scores = model(
        torch.from_numpy(batch_ids).to(device), torch.from_numpy(batch_features).to(device)
    ).log_softmax(-1)
    for row, (start, keep_start, keep_end, _) in enumerate(batch):
        out[keep_start:keep_end] = scores[row, keep_start - start : keep_end - start]
