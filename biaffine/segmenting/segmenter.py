"""The segmenter's Python API: load a checkpoint, classify the characters of a text, segment it."""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt
import torch

from biaffine.segmenting import checkpoint
from biaffine.segmenting.streaming import ScoreStream, StreamSegmenting
from biaffine.segmenting.windows import DEFAULT_CONTEXT, DEFAULT_WINDOW, score_stream
from rawtext.chars import as_line_feeds
from rawtext.document import Document
from rawtext.mwt import segment_with

__all__ = ["Segmenter"]


class Segmenter(StreamSegmenting):
    """A trained segmenter, as :func:`checkpoint.load` reads it.

    Args:
        stored: the checkpoint's contents.
        window: characters whose classes one network window gives.
        context: characters read on each side of a window besides its own.
    """

    def __init__(
        self,
        stored: checkpoint.Stored,
        *,
        window: int = DEFAULT_WINDOW,
        context: int = DEFAULT_CONTEXT,
    ) -> None:
        """Keep the model (in eval mode) and the window sizes."""
        self.model = stored.model.eval()
        self.vocab = stored.vocab
        self.treebank = stored.treebank
        self.mwt = stored.mwt
        self.sentences = stored.sentences
        self.window, self.context = window, context

    @classmethod
    def load(cls, path: str | os.PathLike[str], **options: int) -> Segmenter:
        """The segmenter a ``best.pt`` of ``train_segmenter.py`` holds.

        Raises:
            SegmenterCheckpointError: one line naming the file (see :func:`checkpoint.load`).
        """
        return cls(checkpoint.load(path), **options)

    def classes(self, text: str) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: the class of ``rawtext.labels`` of each character (deterministic).

        A CRLF or a lone CR is read as a LF, the only line break of the training text
        (:func:`rawtext.chars.as_line_feeds`).
        """
        return as_line_feeds(text, self._classes)

    def _classes(self, text: str) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: :meth:`classes` of a text as the network reads it."""
        return self._decide(text, self._stream().push(text, final=True))

    def _stream(self) -> ScoreStream:
        """A new stream of the network's log-probabilities.

        Each operation runs on one CPU thread, since the network's matrices are too small to
        share (EWT test on the 2-core AMD EPYC: 361,000 characters/s on one thread, 152,000
        on two); instead, as many batches of windows as torch has threads run side by side,
        with the same classes as one at a time (:func:`~biaffine.segmenting.windows.log_probs`).
        """
        return score_stream(
            self.model, self.vocab, window=self.window, context=self.context, workers=None
        )

    def _decide(self, text: str, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: the classes of whole paragraphs (LF line breaks) from their scores.

        A sentence model, where the checkpoint has one, chooses the sentence ends inside
        paragraphs again from the words (:mod:`biaffine.segmenting.sentences`), on torch's
        threads.
        """
        log_probs = torch.from_numpy(scores)
        with torch.inference_mode():
            classes = self.model.decide(log_probs).numpy()
        if self.sentences is None:
            return classes
        return self.sentences.resplit(text, classes, log_probs)

    def segment(self, text: str) -> Document:
        """``text`` as documents' paragraphs, sentences, tokens and words (``rawtext.segment``).

        Multi-word tokens are split into words by the treebank's expander (kept whole without
        one). An empty or all-whitespace text gives a document without sentences.
        """
        return segment_with(text, self.classes(text), self.mwt)
