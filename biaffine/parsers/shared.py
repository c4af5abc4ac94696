"""What the parser families share on one encoder: config round trips, tagger heads, losses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Self

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from biaffine.data.batching import IGNORE_INDEX, Batch
from biaffine.data.vocab import Vocabs
from biaffine.nn.encoder import build_encoder
from biaffine.nn.modules import MLP

__all__ = [
    "TAGGERS",
    "EncoderParser",
    "Tagger",
    "add_tagger_losses",
    "check_tagger_weights",
    "mean_cross_entropy",
    "tagger_heads",
]


class EncoderParser(nn.Module):
    """Base of the parsers on the shared encoder: their options are the encoder's and their own.

    Subclasses set ``self.encoder`` and ``self._config`` (their constructor options but the
    vocabularies and the encoder) and take ``(vocabs, encoder, **options)``.
    """

    encoder: nn.Module
    _config: dict[str, Any]

    @classmethod
    def from_config(cls, vocabs: Vocabs, config: Mapping[str, Any]) -> Self:
        """Rebuild a parser from its :meth:`config` (untrained weights)."""
        options = dict(config)
        encoder = build_encoder(vocabs, options.pop("encoder"))
        return cls(vocabs, encoder, **options)

    def config(self) -> dict[str, Any]:
        """Plain data: :meth:`from_config` with the same vocabularies rebuilds this parser."""
        return {"encoder": self.encoder.config(), **self._config}


class Tagger(NamedTuple):
    """Where an auxiliary tagger's settings, sizes and gold ids live."""

    gold: str  # Batch field of the gold ids
    weight: str  # constructor argument: loss weight (0 = no tagger)
    vocab: str  # Vocabs field giving the number of classes


TAGGERS = {
    "upos": Tagger("tags", "tag_loss_weight", "upos"),
    "xpos": Tagger("xpos", "xpos_loss_weight", "xpos"),
    "feats": Tagger("feats", "feats_loss_weight", "feats"),
}
"""Auxiliary taggers by CoNLL-U column."""


def check_tagger_weights(config: Mapping[str, Any], encoder: nn.Module) -> None:
    """Refuse negative tagger loss weights, and a UPOS tagger fed the UPOS it predicts.

    Raises:
        ValueError: naming the option.
    """
    for tagger in TAGGERS.values():
        if config[tagger.weight] < 0:
            raise ValueError(f"{tagger.weight}={config[tagger.weight]} must be >= 0")
    if getattr(encoder, "use_tags", False) and config["tag_loss_weight"] > 0:
        raise ValueError("use_tags=True with tag_loss_weight > 0 would predict the input UPOS")


def tagger_heads(
    vocabs: Vocabs, weights: Mapping[str, float], n_states: int, tag_mlp: int, dropout: float
) -> nn.ModuleDict:
    """The auxiliary tagger heads whose loss weight (in ``weights``) is > 0, by column."""
    return nn.ModuleDict(
        {
            column: nn.Sequential(
                MLP(n_states, tag_mlp, dropout=dropout),
                nn.Linear(tag_mlp, len(getattr(vocabs, tagger.vocab))),
            )
            for column, tagger in TAGGERS.items()
            if weights[tagger.weight] > 0
        }
    )


def add_tagger_losses(
    loss: torch.Tensor,
    tag_scores: Mapping[str, torch.Tensor],
    batch: Batch,
    weights: Mapping[str, float],
) -> torch.Tensor:
    """``loss`` plus each tagger's weighted cross entropy against its gold column (over mask)."""
    mask = batch.mask
    for column, scores in tag_scores.items():
        tagger = TAGGERS[column]
        tag_loss = F.cross_entropy(scores[mask], getattr(batch, tagger.gold)[mask])
        loss = loss + weights[tagger.weight] * tag_loss
    return loss


def mean_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over non-ignored targets; 0 (not NaN) when every target is ignored."""
    total = F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction="sum")
    return total / (targets != IGNORE_INDEX).sum().clamp(min=1)
