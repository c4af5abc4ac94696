"""The learned front end of raw text: a character-level segmenter, its training and checkpoints.

The network (:mod:`.model`) gives each character of a text one class of ``rawtext.labels``
(token end, sentence end, multi-word token end); :mod:`.windows` runs it over any text in
overlapping windows; :mod:`.spans` scores classes by Tokens F1 and Sentences F1;
:mod:`.checkpoint` is the one file format; :mod:`.training` trains it
(``train_segmenter.py``); :class:`Segmenter` is the API.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from biaffine.segmenting.checkpoint import SegmenterCheckpointError
    from biaffine.segmenting.segmenter import Segmenter
    from biaffine.segmenting.spans import SpanCounts, SpanScores, score_spans, segment_spans

__all__ = [
    "Segmenter",
    "SegmenterCheckpointError",
    "SpanCounts",
    "SpanScores",
    "score_spans",
    "segment_spans",
]

# Each name is imported when first read, so that the torch-free modules (the features, the
# windows and the ONNX segmenter of runtime=onnx) import without torch.
_MODULES = {
    "Segmenter": "segmenter",
    "SegmenterCheckpointError": "checkpoint",
    "SpanCounts": "spans",
    "SpanScores": "spans",
    "score_spans": "spans",
    "segment_spans": "spans",
}


def __getattr__(name: str) -> Any:
    """The public names, from their modules (PEP 562)."""
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)
