"""What every parser family provides, so training, checkpoints and inference stay model-agnostic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol, runtime_checkable

import torch

from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocabs

__all__ = ["PARSERS", "Parser", "register"]

PARSERS: dict[str, type] = {}
"""Parser classes by the ``kind`` that configs and checkpoints name."""


@runtime_checkable
class Parser(Protocol):
    """A parser network (an ``nn.Module``) built from the training vocabularies.

    Attributes:
        kind: its name in :data:`PARSERS`, recorded in checkpoints, ``kind:`` in its config.
        family: the family of :mod:`biaffine.inference` that turns its scores into trees
            (``"graph"``: decoders of :mod:`decoding`; ``"transition"``: a transition search).
        tagged_columns: the CoNLL-U columns it has a tagger for, and so can predict.
    """

    kind: ClassVar[str]
    family: ClassVar[str]

    @property
    def tagged_columns(self) -> tuple[str, ...]:
        """Columns of :data:`biaffine.data.columns.TAGGED` this parser predicts."""
        ...

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


def register(cls: type) -> type:
    """Class decorator: enter a parser class in :data:`PARSERS` under its ``kind``.

    Raises:
        ValueError: another class already holds that kind.
    """
    if PARSERS.get(cls.kind, cls) is not cls:
        raise ValueError(f"parser kind {cls.kind!r} is taken by {PARSERS[cls.kind].__name__}")
    PARSERS[cls.kind] = cls
    return cls
