"""The segmenter of an export folder in ONNX Runtime, without torch (``runtime=onnx format=raw``).

``OnnxParser.load(folder).segmenter`` (:mod:`biaffine.onnxrun` opens the export) reads the
``segmenter.onnx`` and the ``segmenter`` entry of ``export.json`` that ``python -m
biaffine.export ... segmenter=PATH`` (or ``model=NAME``) writes, and segments as
:class:`biaffine.segmenting.Segmenter` does: the same windows and
batches (:class:`~biaffine.segmenting.streaming.ScoreStream`), the same features and ids, the same
sentence-end bias and the same decoding (:func:`rawtext.segment`). Windows of equal width within
a batch go through the graph together, so no window is padded and the BiLSTM packs nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from biaffine.segmenting.features import CharVocab
from biaffine.segmenting.streaming import Bounds, ScoreStream, StreamSegmenting
from rawtext.chars import as_line_feeds
from rawtext.document import Document
from rawtext.labels import MWT_SENTENCE_END, N_CLASSES, SENTENCE_END
from rawtext.mwt import MwtExpander, segment_with

__all__ = ["OnnxSegmenter"]


class Graph(Protocol):
    """A loaded graph (:class:`biaffine.onnxrun.LoadedGraph`, which imports this module)."""

    def run(self, outputs: Sequence[str] | None, feed: Mapping[str, np.ndarray]) -> list:
        """The graph's outputs for ``feed``."""
        ...


# Windows per run of the graph, within torch's batches of 32 (each window is scored alone, so
# the classes are the same). ONNX Runtime keeps the memory of its largest run: 32 windows of
# EWT test's text peaked 70 MiB above 8, which were no slower (docs/onnx.md).
WINDOWS_PER_BATCH = 32
WINDOWS_PER_RUN = 8


class OnnxSegmenter(StreamSegmenting):
    """An exported segmenter: its session, characters, expander and decision rule.

    Args:
        session: ``segmenter.onnx``, loaded.
        about: the manifest's ``segmenter`` entry.
    """

    def __init__(self, session: Graph, about: dict[str, Any]) -> None:
        """Read the plain data the graph needs beside it.

        Raises:
            TypeError: a window that is no positive integer, or a context no integer >= 0 (a
                damaged manifest, which was a TypeError from inside the first text's windows).
        """
        for key, least in (("window", 1), ("context", 0)):
            value = about[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise TypeError(f"segmenter.{key} is {value!r}, not an integer >= {least}")
        self.session = session
        self.vocab = CharVocab.from_data(about)
        self.treebank = about["treebank"]
        self.mwt = None if about["mwt"] is None else MwtExpander.from_data(about["mwt"])
        self.window, self.context = about["window"], about["context"]
        self.bias = np.zeros(N_CLASSES, dtype=np.float32)
        self.bias[[SENTENCE_END, MWT_SENTENCE_END]] = about["sentence_bias"]

    def log_probs(self, text: str) -> npt.NDArray[np.float32]:
        """float32[len(text), N_CLASSES]: the classes' log-probabilities of each character."""
        return self._stream().push(text, final=True)

    def _stream(self) -> ScoreStream:
        """A new stream of the graph's log-probabilities, in torch's batches of windows."""
        return ScoreStream(
            self.vocab,
            self._score,
            window=self.window,
            context=self.context,
            batch_size=WINDOWS_PER_BATCH,
        )

    def _score(
        self,
        ids: npt.NDArray[np.int64],
        features: npt.NDArray[np.float32],
        batches: list[list[Bounds]],
        out: npt.NDArray[np.float32],
        first: int,
    ) -> None:
        """:class:`~biaffine.segmenting.streaming.ScoreWindows` of the graph."""
        for batch in batches:
            by_width: dict[int, list[Bounds]] = defaultdict(list)
            for bounds in batch:
                by_width[bounds[3] - bounds[0]].append(bounds)
            for windows in by_width.values():
                for start in range(0, len(windows), WINDOWS_PER_RUN):
                    run = windows[start : start + WINDOWS_PER_RUN]
                    feed = {
                        "ids": np.stack([ids[begin:end] for begin, _, _, end in run]),
                        "features": np.stack([features[begin:end] for begin, _, _, end in run]),
                    }
                    scores = self.session.run(None, feed)[0]
                    for row, (begin, keep_start, keep_end, _) in enumerate(run):
                        kept = scores[row, keep_start - begin : keep_end - begin]
                        out[keep_start - first : keep_end - first] = kept

    def classes(self, text: str) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: the class of each character, as ``SegmenterModel.decide`` picks.

        A CRLF or a lone CR is read as a LF, as the torch segmenter reads it.
        """
        return as_line_feeds(text, self._classes)

    def _classes(self, text: str) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: :meth:`classes` of a text as the network reads it."""
        return self._decide(text, self.log_probs(text))

    def _decide(self, text: str, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: the classes of a text from its characters' scores."""
        return (scores + self.bias).argmax(-1).astype(np.uint8)

    def segment(self, text: str) -> Document:
        """``text`` as documents' paragraphs, sentences, tokens and words (``rawtext.segment``)."""
        return segment_with(text, self.classes(text), self.mwt)
