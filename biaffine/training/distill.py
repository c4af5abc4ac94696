"""Distilling an ensemble of graph parsers into one (Kuncoro et al., 2016, for heads and labels).

The teachers (trained graph parsers, ``trainer.distill_from``) parse the training sentences once
before the first epoch. For each word, the mean of their head distributions (each a softmax
over the sentence's heads) and the mean of their label distributions at the gold head are kept
in float16 (:class:`Targets`). The student then learns from both: its loss is its own gold loss
plus ``trainer.distill_weight`` times the cross entropy of its head and label distributions
against the teachers', each a mean over the words (:class:`DistilledLoss`).

Why: an ensemble of two of the EWT GloVe parsers scores 0.3 to 0.5 LAS above either member
(``experiments/ensemble.py``, docs/ablation.md), at twice the parse time; the teachers' soft
distributions carry which wrong heads are nearly right, which the gold tree alone does not.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from biaffine import checkpoint
from biaffine.data.batching import Batch, collate, encode, plan_batches
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs

__all__ = [
    "Distillation",
    "DistilledLoss",
    "Targets",
    "distillation",
    "load_teachers",
    "teacher_targets",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Targets:
    """The teachers' mean distributions for every training sentence, in training-data order.

    Attributes:
        heads: float16[n, n+1] per sentence: row d-1 is word d's distribution over heads 0..n.
        labels: float16[n, R] per sentence: word d's distribution over labels at its gold head.
    """

    heads: list[np.ndarray]
    labels: list[np.ndarray]

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


@dataclass(frozen=True, slots=True)
class Distillation:
    """What a distilling run adds to its loss: the teachers' targets and their weight."""

    targets: Targets
    weight: float


def distillation(
    paths: Sequence[str | Path],
    weight: float,
    sentences: Sequence[Sentence],
    vocabs: Vocabs,
    *,
    max_tokens: int = 5000,
) -> Distillation | None:
    """The teachers' targets for the training ``sentences``; None when ``paths`` is empty.

    Raises:
        ValueError: a negative weight, or a teacher :func:`load_teachers` refuses.
    """
    if not paths:
        return None
    if weight < 0:
        raise ValueError(f"trainer.distill_weight={weight} must be >= 0")
    teachers = load_teachers(paths, vocabs)
    log.info("distilling %d teachers: scoring %d training sentences", len(paths), len(sentences))
    return Distillation(teacher_targets(teachers, sentences, max_tokens=max_tokens), weight)


def load_teachers(paths: Sequence[str | Path], vocabs: Vocabs) -> list[tuple[nn.Module, Vocabs]]:
    """The teachers' models (eval mode, CPU) and vocabularies, checked against the student's.

    Raises:
        ValueError: a teacher that is not a graph parser, or whose relation vocabulary is not
            the student's (label distributions are averaged and compared by id).
    """
    teachers = []
    for path in paths:
        saved = checkpoint.load(path)
        model = checkpoint.build_model(saved).eval()
        if getattr(type(model), "family", None) != "graph":
            raise ValueError(f"distill_from: {path} is not a graph parser; teachers must be")
        if saved.vocabs.rels.itos != vocabs.rels.itos:
            raise ValueError(
                f"distill_from: {path} has another relation vocabulary than this run's "
                "(teachers must be trained on the same treebank)"
            )
        teachers.append((model, saved.vocabs))
    return teachers


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
    heads: list[np.ndarray | None] = [None] * len(sentences)
    labels: list[np.ndarray | None] = [None] * len(sentences)
    plan = plan_batches([len(s) for s in sentences], max_tokens, shuffle=False)
    for rows in plan:
        batch_sentences = [sentences[i] for i in rows]
        head_sum = label_sum = None
        for model, vocabs in teachers:
            batch = collate(encode(batch_sentences, vocabs), rows)
            scores = model(batch, tag=False)
            head_probs = scores.arc_scores.float().softmax(-1).nan_to_num(0.0)
            label_probs = model.labels.at(scores.labels, batch.heads).float().softmax(-1)
            head_sum = head_probs if head_sum is None else head_sum + head_probs
            label_sum = label_probs if label_sum is None else label_sum + label_probs
        head_mean = (head_sum / len(teachers)).numpy()
        label_mean = (label_sum / len(teachers)).numpy()
        for b, i in enumerate(rows):
            n = len(sentences[i])
            heads[i] = head_mean[b, 1 : n + 1, : n + 1].astype(np.float16)
            labels[i] = label_mean[b, 1 : n + 1].astype(np.float16)
    return Targets(heads, labels)  # type: ignore[arg-type]  (every row filled once)


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
            raise ValueError("distill_from: only a graph parser (model=biaffine) can be distilled")
        self.parser = parser
        self.targets = distilled.targets
        self.weight = distilled.weight

    def forward(self, batch: Batch) -> torch.Tensor:
        """``parser.loss`` + weight x (head + label cross entropy against the teachers)."""
        scores = self.parser(batch)
        gold = self.parser.loss(scores, batch)
        return gold + self.weight * self.soft_loss(scores, batch)

    def soft_loss(self, scores, batch: Batch) -> torch.Tensor:
        """Mean over words of -sum p_teacher log p_student, for heads and for labels: a scalar.

        Args:
            scores: the parser's :class:`~biaffine.parsers.graph.GraphScores` of ``batch``.
            batch: reads ``indices``, ``heads`` (gold) and ``mask``.
        """
        mask = batch.mask
        heads, labels = self.targets.batch(batch.indices, batch.words.shape[1])
        heads, labels = heads.to(mask.device)[mask], labels.to(mask.device)[mask]  # [W, ...]
        # Impossible heads are -inf for the student and 0 for the teachers: 0 x -inf is NaN.
        head_log = scores.arc_scores[mask].float().log_softmax(-1).masked_fill(heads == 0, 0.0)
        label_scores = self.parser.labels.at(scores.labels, batch.heads)[mask].float()
        head_loss = -(heads * head_log).sum(-1).mean()
        label_loss = -(labels * label_scores.log_softmax(-1)).sum(-1).mean()
        return head_loss + label_loss
