"""The contract of an inference family, its registry, and what the families share.

A family turns one parser family's scores into :class:`~biaffine.inference.request.SentenceResult`
objects for a whole batch, for several decoder settings at once (one network pass). It says
what it cannot answer (:meth:`Family.refusal`) before any batch runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from biaffine.data.batching import Batch
from biaffine.data.columns import strings
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import SPECIALS, Vocabs
from biaffine.inference.request import Request, SentenceResult
from biaffine.inference.settings import DecoderSettings

__all__ = ["FAMILIES", "BatchResults", "Family", "predicted_columns"]

BatchResults = dict[str, tuple[list[SentenceResult], float]]
"""Setting name -> (one result per batch row, seconds spent finding trees with it)."""

FAMILIES: dict[str, type[Family]] = {}
"""Inference families by the name parser classes give as ``family``."""


class Family:
    """Base of the inference families; a subclass registers itself under its ``name``."""

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Enter the subclass in :data:`FAMILIES`."""
        super().__init_subclass__(**kwargs)
        FAMILIES[cls.name] = cls

    def __init__(self, model: torch.nn.Module, vocabs: Vocabs) -> None:
        """Bind the family to a trained parser and its vocabularies."""
        self.model = model
        self.vocabs = vocabs

    @classmethod
    def narrow(cls, settings: DecoderSettings) -> Any:
        """The part of ``settings`` this family reads (after :meth:`refusal` accepted them)."""
        raise NotImplementedError

    def refusal(self, request: Request, settings: DecoderSettings) -> str | None:
        """Why this family cannot answer ``request`` with ``settings``, or None if it can."""
        missing = [c for c in request.columns if c not in self.model.tagged_columns]
        if missing:
            return (
                f"columns={','.join(missing)}: this model has no tagger for "
                f"{', '.join(missing)} (train with the column's loss weight > 0)"
            )
        return None

    @classmethod
    def warm_up(cls, settings: Mapping[str, Any]) -> None:
        """Load the compiled kernels the settings will call, so no timed call pays for it."""

    def parse_batch(
        self,
        batch: Batch,
        sentences: Sequence[Sentence],
        request: Request,
        settings: Mapping[str, Any],
        fixed_heads: Sequence[Sequence[int | None]] | None,
    ) -> BatchResults:
        """Answer ``request`` for every row of ``batch`` with every setting.

        Args:
            batch: the batch, on the model's device.
            sentences: the input sentence of each row.
            request: what to compute.
            settings: name -> this family's settings (:meth:`narrow`).
            fixed_heads: the fixed heads of each row (``request.fixed_heads`` reordered).
        """
        raise NotImplementedError


def predicted_columns(
    tag_scores: Mapping[str, torch.Tensor],
    columns: Sequence[str],
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
) -> list[dict[str, list[str]]]:
    """The values of each requested column for every row of a batch, as the strings to write.

    Each word's best class, never a special (PAD, UNK, ROOT), turned back into the column's
    strings (:func:`biaffine.data.columns.strings`). LEMMA: the lemma of the vocabularies'
    lexicon where it holds the word, keyed by the word's UPOS: the predicted one where the
    model has a UPOS tagger (predicted even when not asked for), else the input's; else its
    edit script applied to the form. One argmax per column for the whole batch.

    Args:
        tag_scores: tagger scores by column for the batch's words, row by row,
            float[W, n_classes] with W the sum of the sentences' lengths.
        columns: the columns to read.
        vocabs: their vocabularies.
        sentences: the sentence of each row (its forms, UPOS, and its n words).

    Returns:
        Per row, the predicted values by column, str[n] each.
    """
    lexicon = vocabs.lexicon if "lemma" in columns else None
    wanted = list(columns)
    if lexicon is not None and "upos" in tag_scores and "upos" not in wanted:
        wanted.append("upos")  # the lexicon's key
    best = {column: _best_classes(tag_scores[column], vocabs, column) for column in wanted}
    found: list[dict[str, list[str]]] = [{} for _ in sentences]
    ends = itertools.accumulate(len(sentence) for sentence in sentences)
    for row, (sentence, end) in enumerate(zip(sentences, ends, strict=True)):
        classes = {column: best[column][end - len(sentence) : end] for column in wanted}
        upos = classes.get("upos", sentence.upos)
        for column in columns:
            found[row][column] = strings(
                column, classes[column], sentence.forms, lexicon=lexicon, upos=upos
            )
    return found


def _best_classes(scores: torch.Tensor, vocabs: Vocabs, column: str) -> list[str]:
    """The best class of each word in ``column``, never a special: float[W, n_classes] -> str[W]."""
    specials = torch.arange(len(SPECIALS), device=scores.device)
    best = scores.float().index_fill(-1, specials, float("-inf")).argmax(-1).tolist()
    itos = vocabs.columns[column].itos
    return [itos[i] for i in best]


def word_slice(values: np.ndarray, row: int, n: int) -> list:
    """``values[row, 1 : n + 1]`` as a list: a sentence's words, ROOT and padding dropped."""
    return values[row, 1 : n + 1].tolist()
