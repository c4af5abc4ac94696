"""The contract of an inference family, its registry, and what the families share.

A family turns one parser family's scores into :class:`~biaffine.inference.request.SentenceResult`
objects for a whole batch, for several decoder settings at once (one network pass). It says
what it cannot answer (:meth:`Family.refusal`) before any batch runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch

from biaffine.data.batching import Batch
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import choices
from biaffine.inference.request import Request, SentenceResult, Tree
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
        return choices.missing_taggers(request.columns, self.model.tagged_columns)

    def tags_read(
        self, request: Request, sentences: Sequence[Sentence]
    ) -> dict[str, list[int] | None]:
        """The taggers a parse of ``sentences`` for ``request`` runs, and on which words.

        Those whose scores its columns read (:func:`biaffine.inference.choices.scores_read`:
        none for trees alone, no lemmatizer for ``columns=upos``), each on every word (None),
        but the lemmatizer on the words of :func:`biaffine.inference.choices.lemma_words`
        alone: a :data:`~biaffine.parsers.heads.TagRequest`.
        """
        read = choices.scores_read(request.columns, self.vocabs, self.model.tagged_columns)
        words: dict[str, list[int] | None] = dict.fromkeys(read)
        if "lemma" in words:
            forms = [form for sentence in sentences for form in sentence.forms]
            words["lemma"] = choices.lemma_words(forms, self.vocabs.lexicon)
        return words

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
    trees: Sequence[Sequence[Tree]],
    read: Mapping[str, Sequence[int] | None],
) -> list[dict[str, list[str]]]:
    """:func:`biaffine.inference.choices.predicted_columns` of a batch's tagger scores.

    Args:
        tag_scores: tagger scores by column for the batch's words, row by row,
            float[W, n_classes] with W the sum of the sentences' lengths, or of the words
            ``read`` gives the column.
        columns: the columns to read.
        vocabs: their vocabularies.
        sentences: the sentence of each row.
        trees: the trees found for each row, best first: the best one's relations weigh the
            UPOS (:func:`biaffine.inference.choices.related_upos`).
        read: :meth:`Family.tags_read` of the batch, which the scores answer.

    Returns:
        Per row, the predicted values by column, str[n] each.
    """
    arrays = {name: tag_scores[name].detach().float().cpu().numpy() for name in read}
    # The lexicon's character models read on as many threads as torch parses with.
    workers = torch.get_num_threads()
    relations = [found[0].rels for found in trees]
    lemma_scored = read.get("lemma")
    return choices.predicted_columns(
        arrays, columns, vocabs, sentences, workers, relations, lemma_scored
    )
