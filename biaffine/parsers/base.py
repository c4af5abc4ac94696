"""What every parser family provides, so training, checkpoints and inference stay model-agnostic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch

from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocabs

__all__ = ["Parser"]


@runtime_checkable
class Parser(Protocol):
    """A parser network (an ``nn.Module``) built from the training vocabularies.

    Attributes:
        kind: its name in :data:`biaffine.parsers.PARSERS`, recorded in checkpoints.
        family: the key of :mod:`biaffine.inference`'s dispatch that turns its scores into
            trees (``"graph"``: decoders of :mod:`decoding`).
    """

    kind: ClassVar[str]
    family: ClassVar[str]

    @classmethod
    def from_config(cls, vocabs: Vocabs, config: Mapping[str, Any]) -> Parser:
        """Rebuild an untrained parser from :meth:`config` and the vocabularies."""
        ...

    def config(self) -> dict[str, Any]:
        """Constructor options as plain data (the encoder's as a nested ``encoder`` dict)."""
        ...

    def __call__(self, batch: Batch) -> Any:
        """Scores of one batch, whatever :meth:`loss` and the inference family read."""
        ...

    def loss(self, scores: Any, batch: Batch) -> torch.Tensor:
        """The training loss (a scalar) of ``scores`` computed on ``batch``."""
        ...
