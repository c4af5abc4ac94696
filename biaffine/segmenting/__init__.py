"""The learned front end of raw text: a character-level segmenter, its training and checkpoints.

The network (:mod:`.model`) gives each character of a text one class of ``rawtext.labels``
(token end, sentence end, multi-word token end); :mod:`.windows` runs it over any text in
overlapping windows; :mod:`.spans` scores classes by Tokens F1 and Sentences F1;
:mod:`.checkpoint` is the one file format; :mod:`.training` trains it
(``train_segmenter.py``); :class:`Segmenter` is the API.
"""

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
