"""Parser families by name: a checkpoint records the name, :func:`build_parser` rebuilds the model.

A new family is a module here with a class following :class:`~biaffine.parsers.base.Parser`, one
entry in :data:`PARSERS`, and (if it parses differently) a family in :mod:`biaffine.inference`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from biaffine.data.vocab import Vocabs
from biaffine.parsers.base import Parser
from biaffine.parsers.biaffine import ArcRelScores, BiaffineParser
from biaffine.parsers.transition import TransitionParser

__all__ = [
    "PARSERS",
    "ArcRelScores",
    "BiaffineParser",
    "Parser",
    "TransitionParser",
    "build_parser",
]

PARSERS: dict[str, type[nn.Module]] = {
    BiaffineParser.kind: BiaffineParser,
    TransitionParser.kind: TransitionParser,
}
"""Parser classes by the ``kind`` recorded in checkpoints."""


def build_parser(kind: str, vocabs: Vocabs, config: Mapping[str, Any]) -> nn.Module:
    """An untrained parser of ``kind`` rebuilt from its ``config()`` and the vocabularies.

    Raises:
        ValueError: for an unknown kind, or a config that does not fit it.
    """
    if kind not in PARSERS:
        raise ValueError(f"parser kind {kind!r}; known kinds: {', '.join(sorted(PARSERS))}")
    try:
        return PARSERS[kind].from_config(vocabs, config)
    except (TypeError, KeyError) as error:
        raise ValueError(f"model config does not fit the {kind!r} parser: {error}") from error
