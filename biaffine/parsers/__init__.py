"""Parser families by name: a config or checkpoint names a ``kind``, :func:`build_parser` builds it.

:data:`PARSERS` is the one registry of parser classes, used by training (``model.kind`` in
``conf/model/``), by checkpoints (which record the kind) and by inference (each class names the
family of :mod:`biaffine.inference` that finds its trees). A class registers itself by defining
``kind`` (see :class:`~biaffine.parsers.base.Parser`); every module of this package is imported
here, so adding a family is adding its module, and nothing else in this package.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from typing import Any

from torch import nn

from biaffine.data.vocab import Vocabs
from biaffine.parsers.base import PARSERS, Parser
from biaffine.parsers.graph import BiaffineParser, GraphScores
from biaffine.parsers.transition import TransitionParser

__all__ = [
    "PARSERS",
    "BiaffineParser",
    "GraphScores",
    "Parser",
    "TransitionParser",
    "build_parser",
]

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")


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
