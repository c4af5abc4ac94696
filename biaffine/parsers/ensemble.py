"""Several trained graph parsers read as one: the mean of their probabilities.

Independently trained parsers make different mistakes, and the mean of their distributions
beats each of them (on UD English EWT two GloVe runs gain 0.5 LAS; docs/results.md). The
ensemble is a graph parser like any other for :mod:`biaffine.inference`: its arc scores are the
log of the members' mean head distributions (each a row-wise softmax over heads), its label and
tagger scores the log of their mean softmax (in float64, but in float32 for every label of every
arc and for the taggers: :data:`TAG_DTYPE`), so decoding, labels, probabilities, k-best, fixed
heads and the training lexicon's choices work unchanged. A tree's score under it is the sum of
its words' log mean head probabilities, whose best tree is the MST the decoders find.

An ensemble is assembled from trained parsers (``python -m biaffine.training.ensemble``), never
trained: the members share the vocabularies (so one batch feeds them all), predict the same
columns, and each is a :class:`~biaffine.parsers.graph.BiaffineParser`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
from torch import nn

from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocabs
from biaffine.nn.transformer import SharedStates, TransformerEmbedding
from biaffine.parsers.base import PARSERS, register
from biaffine.parsers.graph import BiaffineParser, GraphScores
from biaffine.parsers.heads import LabelScorer, LabelVectors, TagRequest

__all__ = ["TAG_DTYPE", "EnsembleParser", "mean_log_softmax"]

TAG_DTYPE = torch.float32
"""The precision of an ensemble's tagger scores. Their classes are many (864 FEATS on Turkish
IMST) and they are read for their best classes and for probabilities against thresholds, which
float32 holds to about 1e-7; in float64 the mean took a fifth of what every column adds to a
parse of IMST test (0.27 of 1.22 s on one thread)."""


def mean_log_softmax(
    scores: Sequence[torch.Tensor], dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """The log of the mean of each tensor's softmax over the last axis, computed in ``dtype``.

    Summed in log space one member at a time (``logaddexp``), so no probability underflows and
    no [M, ...] stack of the members is built. ``-inf`` entries (impossible heads) stay
    ``-inf``; a row whose entries are all ``-inf`` in every member, which no sentence of one
    word or more has, would give NaN.

    Args:
        scores: M tensors of one shape float[..., C].
        dtype: float64 by default; float32 where the tensor is large and read only for its
            maxima (every label of every arc: :meth:`MeanLabels.all`).

    Returns:
        dtype[..., C].
    """
    add = _log_add_exp if torch.onnx.is_in_onnx_export() else torch.logaddexp
    total = scores[0].to(dtype).log_softmax(-1)
    for member in scores[1:]:
        total = add(total, member.to(dtype).log_softmax(-1))
    return total - math.log(len(scores))


def _log_add_exp(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    """``torch.logaddexp`` from operators ONNX has, which has no LogAddExp (an exported graph).

    Where both are ``-inf``, ``low - high`` is NaN; the ``where`` keeps ``-inf`` there. Nine
    times slower than ``torch.logaddexp`` in torch, which parsing in torch keeps.
    """
    high, low = torch.maximum(first, second), torch.minimum(first, second)
    return torch.where(low == float("-inf"), high, high + torch.log1p(torch.exp(low - high)))


class MeanLabels:
    """The members' label scorers read as one, on their :class:`LabelVectors` side by side.

    The ensemble's label vectors hold each member's vectors concatenated on the last axis
    (float[B, N+1, sum of rel_mlp]), so rows slice as one parser's do; each method splits them
    again and returns the log of the members' mean label softmax.
    """

    def __init__(self, scorers: Sequence[LabelScorer]) -> None:
        """Read ``scorers`` (the members', in order)."""
        self.scorers = list(scorers)
        self.widths = [scorer.attn.n_in for scorer in self.scorers]

    def join(self, vectors: Sequence[LabelVectors]) -> LabelVectors:
        """The members' vectors of a batch as one :class:`LabelVectors`."""
        return LabelVectors(*(torch.cat(side, -1) for side in zip(*vectors, strict=True)))

    def split(self, vectors: LabelVectors) -> list[LabelVectors]:
        """:meth:`join` undone: one :class:`LabelVectors` per member."""
        sides = (side.split(self.widths, -1) for side in vectors)
        return [LabelVectors(dep, head) for dep, head in zip(*sides, strict=True)]

    def at(self, vectors: LabelVectors, heads: torch.Tensor) -> torch.Tensor:
        """float64[B, N+1, R]: :meth:`LabelScorer.at`, the members' mean."""
        return self._mean("at", vectors, heads)

    def at_words(self, vectors: LabelVectors, heads: torch.Tensor) -> torch.Tensor:
        """float64[W, R]: :meth:`LabelScorer.at_words`, the members' mean."""
        return self._mean("at_words", vectors, heads)

    def at_heads(self, vectors: LabelVectors) -> torch.Tensor:
        """float64[W, K, R]: :meth:`LabelScorer.at_heads`, the members' mean."""
        return self._mean("at_heads", vectors)

    def all(self, vectors: LabelVectors) -> torch.Tensor:
        """float32[B, N+1, N+1, R]: :meth:`LabelScorer.all`, the members' mean.

        In float32, as one parser's are: the largest tensor of a batch (R times the arcs').
        Parsing reads the arcs a tree may take (:meth:`at_heads`); this is every pair's, the
        reference the others are checked against.
        """
        return self._mean("all", vectors, dtype=torch.float32)

    def _mean(
        self,
        method: str,
        vectors: LabelVectors,
        *args: torch.Tensor,
        dtype: torch.dtype = torch.float64,
    ) -> torch.Tensor:
        pairs = zip(self.scorers, self.split(vectors), strict=True)
        scores = [getattr(scorer, method)(v, *args) for scorer, v in pairs]
        return mean_log_softmax(scores, dtype)


@register
class EnsembleParser(nn.Module):
    """Graph parsers sharing vocabularies, scored as the mean of their probabilities.

    Attributes:
        kind: registry name recorded in checkpoints.
        family: graph decoding, as for each member.
        members: the parsers, in order.
    """

    kind: ClassVar[str] = "ensemble"
    family: ClassVar[str] = "graph"

    def __init__(self, members: Sequence[nn.Module]) -> None:
        """Hold ``members``: two or more biaffine parsers predicting the same columns.

        Raises:
            ValueError: fewer than two members, a member that is no biaffine graph parser, one
                that reads input tags (its batch would differ), or members whose tagged
                columns differ.
        """
        super().__init__()
        _check_members(members)
        self.members = nn.ModuleList(members)
        self._shared = _share_frozen_transformers(members)

    @property
    def tagged_columns(self) -> tuple[str, ...]:
        """The columns every member predicts."""
        return self.members[0].tagged_columns

    @property
    def labels(self) -> MeanLabels:
        """The members' label scorers read as one (what the graph family scores labels with)."""
        return MeanLabels([member.labels for member in self.members])

    @classmethod
    def from_config(cls, vocabs: Vocabs, config: Mapping[str, Any]) -> EnsembleParser:
        """Rebuild the untrained members from their kinds and configs (see :meth:`config`)."""
        members = []
        for member in config["members"]:
            if member["kind"] not in PARSERS or member["kind"] == cls.kind:
                raise ValueError(f"ensemble member kind {member['kind']!r}")
            members.append(PARSERS[member["kind"]].from_config(vocabs, member["config"]))
        return cls(members)

    def config(self) -> dict[str, Any]:
        """``{"members": [{"kind": ..., "config": ...}, ...]}``, each member's own."""
        return {"members": [{"kind": m.kind, "config": m.config()} for m in self.members]}

    def forward(self, batch: Batch, *, tag: TagRequest = True) -> GraphScores:
        """The members' mean distributions of a batch, as log-probabilities (float64).

        Returns:
            :class:`GraphScores`: arc_scores float64[B, N+1, N+1] (each word's log mean head
            probabilities, ``-inf`` at impossible heads), the members' label vectors joined
            (:meth:`MeanLabels.join`), and tag_scores float32[W, n_classes] by column
            (:data:`TAG_DTYPE`).
        """
        try:
            scores = [member(batch, tag=tag) for member in self.members]
        finally:
            for shared in self._shared:
                shared.clear()
        tag_scores = {
            column: mean_log_softmax([s.tag_scores[column] for s in scores], TAG_DTYPE)
            for column in scores[0].tag_scores
        }
        return GraphScores(
            mean_log_softmax([s.arc_scores for s in scores]),
            self.labels.join([s.labels for s in scores]),
            tag_scores,
        )

    def loss(self, scores: GraphScores, batch: Batch) -> torch.Tensor:
        """Not defined: an ensemble is assembled from trained parsers, not trained.

        Raises:
            TypeError: always, naming the command that assembles one.
        """
        raise TypeError(
            "an ensemble is not trained: train its members, then join them with "
            "python -m biaffine.training.ensemble"
        )


def _share_frozen_transformers(members: Sequence[nn.Module]) -> list[SharedStates]:
    """Let members that read one frozen transformer alike run it once per batch, and hold it once.

    A MiniLM ensemble would otherwise run MiniLM, nearly all of its parsing time, once per
    member on the same words, and keep a copy of it per member. Returns the slots made, one per
    group of two or more.
    """
    groups: dict[tuple[Any, ...], list[TransformerEmbedding]] = {}
    for member in members:
        for module in member.modules():
            if isinstance(module, TransformerEmbedding) and module.reading is not None:
                groups.setdefault(module.reading, []).append(module)
    slots = []
    for group in groups.values():
        if len(group) > 1:
            slots.append(SharedStates())
            for module in group:
                module.share(slots[-1], group[0].network)
    return slots


def _check_members(members: Sequence[nn.Module]) -> None:
    if len(members) < 2:
        raise ValueError(f"an ensemble needs at least two parsers, not {len(members)}")
    for index, member in enumerate(members):
        if not isinstance(member, BiaffineParser):
            raise ValueError(
                f"ensemble member {index} is a {member.kind!r} parser; an ensemble holds "
                "biaffine graph parsers"
            )
        if getattr(member.encoder, "use_tags", False):
            raise ValueError(f"ensemble member {index} reads input UPOS tags; none may")
        if member.tagged_columns != members[0].tagged_columns:
            raise ValueError(
                f"ensemble member {index} predicts {', '.join(member.tagged_columns) or 'no'} "
                f"columns, member 0 {', '.join(members[0].tagged_columns) or 'none'}"
            )
