"""Distilling an ensemble of graph parsers into one (Kuncoro et al., 2016), trees and tags.

The teachers (trained graph parsers, ``trainer.distill_from``) parse the training sentences once
before the first epoch. For each word, the mean of their head distributions (each a softmax
over the sentence's heads), of their label distributions at the gold head and of their UPOS,
XPOS and FEATS distributions are kept in float16 (:class:`Targets`). The student then learns
from them: its loss is its own gold loss plus ``trainer.distill_weight`` times the cross
entropy of each of its distributions against the teachers', each a mean over the words
(:class:`DistilledLoss`).

Why: an ensemble of two of the EWT GloVe parsers scores 0.3 to 0.5 LAS above either member
(``experiments/ensemble.py``), at twice the parse time; the teachers' soft distributions carry
which wrong heads are nearly right, which the gold tree alone does not. What one distilled run
gave is in docs/results.md ("Ensembles and distillation").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from biaffine import checkpoint
from biaffine.data.batching import Batch, collate, encode, plan_batches
from biaffine.data.conllu import Sentence
from biaffine.data.encoding import PARSING_COLUMNS
from biaffine.data.vocab import Vocabs
from biaffine.parsers.graph import GraphScores

__all__ = [
    "Distillation",
    "DistilledLoss",
    "Targets",
    "check_teachers",
    "distillation",
    "load_teachers",
    "mean_softmax",
    "scored_by_each",
    "teacher_targets",
]

log = logging.getLogger(__name__)

COLUMNS = ("upos", "xpos", "feats")
"""Tagged columns whose distributions are distilled: LEMMA's hundreds of edit scripts would take
ten times the memory of all three (EWT: 628 scripts against 305 classes)."""


@dataclass(frozen=True, slots=True)
class Targets:
    """The teachers' mean distributions for every training sentence, in training-data order.

    Attributes:
        heads: float16[n, n+1] per sentence: row d-1 is word d's distribution over heads 0..n.
        labels: float16[n, R] per sentence: word d's distribution over labels at its gold head.
        tags: by column of :data:`COLUMNS` that the teachers and the student all tag,
            float16[n, n_classes] per sentence.
    """

    heads: list[np.ndarray]
    labels: list[np.ndarray]
    tags: dict[str, list[np.ndarray]]

    def batch(self, indices: torch.Tensor, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The targets of a batch's rows, padded as its scores are.

        Args:
            indices: long[B], the rows' positions in the training data (``Batch.indices``).
            positions: N+1, the batch's padded length with ROOT.

        Returns:
            heads float32[B, N+1, N+1] and labels float32[B, N+1, R]; zeros at ROOT's row
            and at padding.
        """
        rows = indices.tolist()
        heads = np.zeros((len(rows), positions, positions), dtype=np.float32)
        labels = np.zeros((len(rows), positions, self.labels[0].shape[1]), dtype=np.float32)
        for b, i in enumerate(rows):
            n = self.heads[i].shape[0]
            heads[b, 1 : n + 1, : n + 1] = self.heads[i]
            labels[b, 1 : n + 1] = self.labels[i]
        return torch.from_numpy(heads), torch.from_numpy(labels)

    def words(self, column: str, indices: torch.Tensor) -> torch.Tensor:
        """float32[W, n_classes]: the tag targets of the batch's words, row by row (as ``mask``)."""
        return torch.from_numpy(np.concatenate([self.tags[column][i] for i in indices.tolist()]))


@dataclass(frozen=True, slots=True)
class Distillation:
    """What a distilling run adds to its loss: the teachers' targets and their weight."""

    targets: Targets
    weight: float


def distillation(
    teachers: Sequence[tuple[nn.Module, Vocabs]],
    weight: float,
    sentences: Sequence[Sentence],
    *,
    max_tokens: int = 5000,
) -> Distillation | None:
    """The ``teachers``' targets for the training ``sentences``; None when there are none.

    Args:
        teachers: models and vocabularies, as :func:`check_teachers` checked them.
        weight: the distillation loss's weight (``trainer.distill_weight``, at least 0).
        sentences: the training sentences as the student learns from them.
        max_tokens: words scored at once by each teacher.
    """
    if not teachers:
        return None
    log.info("distilling %d teachers: scoring %d training sentences", len(teachers), len(sentences))
    started = time.perf_counter()
    targets = teacher_targets(teachers, sentences, max_tokens=max_tokens)
    held = sum(a.nbytes for a in (*targets.heads, *targets.labels))
    held += sum(a.nbytes for arrays in targets.tags.values() for a in arrays)
    columns = ", ".join(["heads", "labels", *targets.tags])
    seconds = time.perf_counter() - started
    log.info("teachers' targets (%s): %.0f MB in %.0f s", columns, held / 2**20, seconds)
    return Distillation(targets, weight)


def load_teachers(paths: Sequence[str | Path]) -> list[tuple[nn.Module, Vocabs]]:
    """The teachers' models (eval mode, CPU) and vocabularies.

    Raises:
        ValueError: a teacher that cannot be read, or is not a graph parser.
    """
    teachers = []
    for path in paths:
        try:
            saved = checkpoint.load(path)
        except ValueError as error:
            raise ValueError(f"trainer.distill_from: {error}") from None
        model = checkpoint.build_model(saved).eval()
        if getattr(type(model), "family", None) != "graph":
            raise ValueError(
                f"trainer.distill_from: {path} is not a graph parser; teachers must be"
            )
        teachers.append((model, saved.vocabs))
    return teachers


def check_teachers(
    teachers: Sequence[tuple[nn.Module, Vocabs]], paths: Sequence[str | Path], vocabs: Vocabs
) -> None:
    """Refuse teachers (loaded from ``paths``) whose vocabularies are not the student's.

    Label distributions are averaged and compared by id, and so are the tags'.

    Raises:
        ValueError: naming the teacher and the vocabulary (relations, or a tagged column's).
    """
    for (model, own), path in zip(teachers, paths, strict=True):
        if own.rels.itos != vocabs.rels.itos:
            raise ValueError(
                f"trainer.distill_from: {path} has another relation vocabulary than this run's "
                "(teachers must be trained on the same treebank)"
            )
        for column in set(COLUMNS) & set(model.tagged_columns):
            if own.columns[column].itos != vocabs.columns[column].itos:
                raise ValueError(
                    f"trainer.distill_from: {path} has another {column} vocabulary than this "
                    "run's (teachers must be trained on the same treebank)"
                )


def scored_by_each(
    members: Sequence[tuple[nn.Module, Vocabs]],
    sentences: Sequence[Sentence],
    rows: Sequence[int],
    *,
    tag: bool,
) -> list[tuple[Batch, GraphScores]]:
    """Each graph parser's batch and scores of ``sentences[rows]``, in its own vocabularies.

    The batches hold the same sentences in the same rows, so the members' distributions at a
    position can be averaged; ``tag``: also run the taggers.
    """
    chosen = [sentences[i] for i in rows]
    found = []
    for model, vocabs in members:
        batch = collate(encode(chosen, vocabs, columns=PARSING_COLUMNS), list(rows))
        found.append((batch, model(batch, tag=tag)))
    return found


def mean_softmax(scores: Sequence[torch.Tensor]) -> torch.Tensor:
    """The mean of the members' softmax over the last axis, float64, each member's shape.

    A row with no finite score (a padding position's heads) gives zeros, not NaN.
    """
    return torch.stack([s.double().softmax(-1).nan_to_num(0.0) for s in scores]).mean(0)


@torch.inference_mode()
def teacher_targets(
    teachers: Sequence[tuple[nn.Module, Vocabs]],
    sentences: Sequence[Sentence],
    *,
    max_tokens: int = 5000,
) -> Targets:
    """The teachers' mean head and label distributions for ``sentences`` (gold trees read).

    Each teacher encodes the sentences with its own vocabularies; every batch is scored by all.
    """
    columns = [c for c in COLUMNS if all(c in model.tagged_columns for model, _ in teachers)]
    heads: list[np.ndarray] = [np.empty(0)] * len(sentences)
    labels: list[np.ndarray] = [np.empty(0)] * len(sentences)
    tags: dict[str, list[np.ndarray]] = {c: [np.empty(0)] * len(sentences) for c in columns}
    plan = plan_batches([len(s) for s in sentences], max_tokens, shuffle=False)
    for rows in plan:
        found = scored_by_each(teachers, sentences, rows, tag=bool(columns))
        models = [model for model, _ in teachers]
        mean = {
            "heads": mean_softmax([scores.arc_scores for _, scores in found]),
            "labels": mean_softmax(
                [
                    model.labels.at(scores.labels, batch.heads)
                    for model, (batch, scores) in zip(models, found, strict=True)
                ]
            ),
        } | {c: mean_softmax([scores.tag_scores[c] for _, scores in found]) for c in columns}
        mean = {k: v.numpy() for k, v in mean.items()}
        start = 0
        for b, i in enumerate(rows):
            n = len(sentences[i])
            heads[i] = mean["heads"][b, 1 : n + 1, : n + 1].astype(np.float16)
            labels[i] = mean["labels"][b, 1 : n + 1].astype(np.float16)
            for column in columns:  # tagger scores: the batch's words, row by row
                tags[column][i] = mean[column][start : start + n].astype(np.float16)
            start += n
    return Targets(heads, labels, tags)


class DistilledLoss(nn.Module):
    """A graph parser's gold loss plus its cross entropy against the teachers' distributions.

    The module :func:`biaffine.training.loop.training_module` wraps in DDP instead of
    :class:`~biaffine.training.loop.ParserLoss` when a run distils.
    """

    def __init__(self, parser: nn.Module, distilled: Distillation) -> None:
        """Wrap ``parser`` with the teachers' targets of its training data.

        Raises:
            ValueError: ``parser`` is not a graph parser.
        """
        super().__init__()
        if getattr(type(parser), "family", None) != "graph":
            raise ValueError(
                "trainer.distill_from: only a graph parser (model=biaffine) can be distilled"
            )
        self.parser = parser
        self.targets = distilled.targets
        self.weight = distilled.weight

    def forward(self, batch: Batch) -> torch.Tensor:
        """``parser.loss`` + weight x (head + label cross entropy against the teachers)."""
        scores = self.parser(batch)
        gold_arc_rels = self.parser.labels.at(scores.labels, batch.heads)  # [B, N+1, R]
        gold = self.parser.loss(scores, batch, gold_arc_rels)
        return gold + self.weight * self.soft_loss(scores, batch, gold_arc_rels)

    def soft_loss(
        self, scores: GraphScores, batch: Batch, gold_arc_rels: torch.Tensor
    ) -> torch.Tensor:
        """Mean over words of -sum p_teacher log p_student: heads + labels + each tag column.

        Args:
            scores: the parser's :class:`~biaffine.parsers.graph.GraphScores` of ``batch``.
            batch: reads ``indices`` and ``mask``.
            gold_arc_rels: the parser's label scores at the gold arcs, float[B, N+1, R].
        """
        mask = batch.mask
        heads, labels = self.targets.batch(batch.indices, batch.words.shape[1])
        heads, labels = heads.to(mask.device)[mask], labels.to(mask.device)[mask]  # [W, ...]
        # Impossible heads are -inf for the student and 0 for the teachers: 0 x -inf is NaN.
        head_log = scores.arc_scores[mask].float().log_softmax(-1).masked_fill(heads == 0, 0.0)
        label_scores = gold_arc_rels[mask].float()
        loss = -(heads * head_log).sum(-1).mean()
        loss = loss - (labels * label_scores.log_softmax(-1)).sum(-1).mean()
        for column in self.targets.tags:
            if column in scores.tag_scores:
                tag_log = scores.tag_scores[column].float().log_softmax(-1)
                soft = self.targets.words(column, batch.indices).to(tag_log.device)
                loss = loss - (soft * tag_log).sum(-1).mean()
        return loss
