"""What the parser families share on one encoder: config round trips and option checks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Self

import torch
from torch import nn

from biaffine.data.columns import LOSS_WEIGHTS
from biaffine.data.vocab import Vocabs
from biaffine.nn.encoder import build_encoder
from biaffine.parsers.heads import Taggers

__all__ = ["EncoderParser", "check_sizes", "check_tagger_weights"]


class EncoderParser(nn.Module):
    """Base of the parsers on the shared encoder: their options are the encoder's and their own.

    Subclasses set ``self.encoder`` and ``self._config`` (their constructor options but the
    vocabularies and the encoder, with ``tag_mlp``, ``mlp_dropout`` and the tagger loss weights
    of :data:`biaffine.data.columns.LOSS_WEIGHTS`) and take ``(vocabs, encoder, **options)``.
    """

    encoder: nn.Module
    taggers: Taggers
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

    @property
    def tagged_columns(self) -> tuple[str, ...]:
        """The columns this parser has a tagger for, and so can predict."""
        return tuple(self.taggers)

    def build_taggers(self, vocabs: Vocabs) -> Taggers:
        """The tagger heads whose loss weight in the config is > 0, on the taggers' states."""
        config = self._config
        weights = {column: config[option] for column, option in LOSS_WEIGHTS.items()}
        n_states = self._n_tag_out + (self.encoder.n_out if self._tags_read_top else 0)
        return Taggers(vocabs, weights, n_states, config["tag_mlp"], dropout=config["mlp_dropout"])

    @property
    def _n_tag_out(self) -> int:
        """Width of the taggers' own states after the tree heads' (0: they share them)."""
        return getattr(self.encoder, "n_tag_out", 0)  # a transformer encoder has no tag layer

    @property
    def _tags_read_top(self) -> bool:
        """Whether the taggers read the top level: with no tag layer, or with ``tag_reads_top``."""
        return not self._n_tag_out or getattr(self.encoder, "tag_reads_top", False)

    def split_states(self, states: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(the states the tree heads read, those the taggers read) of the encoder's states.

        Both are ``states`` float[B, N+1, H] unless the encoder has a tag layer, whose states
        follow the top level's (:class:`biaffine.nn.Encoder`): the taggers then read those
        float[B, N+1, T], or with ``tag_reads_top`` those and the top level's, through a stopped
        gradient, float[B, N+1, T + H]: the tree's training alone shapes the top level.
        States of the tree heads alone (the encoder's ``tag=False``) are given as both, as
        where there is no tag layer; no tagger reads them then.
        """
        n_out = self.encoder.n_out
        if not self._n_tag_out or states.shape[-1] == n_out:
            return states, states
        top, tagged = states[..., :n_out], states[..., n_out:]
        if self._tags_read_top:
            return top, torch.cat([tagged, top.detach()], -1)
        return top, tagged


def check_sizes(config: Mapping[str, Any], sizes: Iterable[str]) -> None:
    """Refuse sizes < 1 and a dropout outside [0, 1).

    Raises:
        ValueError: naming the option.
    """
    for key in sizes:
        if config[key] < 1:
            raise ValueError(f"{key}={config[key]} must be >= 1")
    if not 0.0 <= config["mlp_dropout"] < 1.0:
        raise ValueError(f"mlp_dropout={config['mlp_dropout']} must be in [0, 1)")


def check_tagger_weights(config: Mapping[str, Any], encoder: nn.Module) -> None:
    """Refuse negative tagger loss weights, and a UPOS tagger fed the UPOS it predicts.

    Raises:
        ValueError: naming the option.
    """
    for option in LOSS_WEIGHTS.values():
        if config[option] < 0:
            raise ValueError(f"{option}={config[option]} must be >= 0")
    if getattr(encoder, "use_tags", False) and config[LOSS_WEIGHTS["upos"]] > 0:
        raise ValueError("use_tags=True with tag_loss_weight > 0 would predict the input UPOS")
