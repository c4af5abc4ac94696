"""From a trained parser to trees: requests and results, settings, and the families.

``graph``: arc scores decoded by :mod:`decoding`, then one label per arc. ``transition``: a
transition search in lockstep. A new family is a module here with a :class:`Family` subclass
naming the ``family`` its parser classes give; nothing else registers it.

The package's names load on first use (PEP 562), all at once as before: its torch-free modules
(``request``, ``settings``, ``choices``) then import without torch, for the ONNX runtime
(:mod:`biaffine.onnxrun`).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from biaffine.inference.base import FAMILIES, Family
    from biaffine.inference.parsing import (
        Parsed,
        Predicted,
        family_of,
        parse,
        parse_with_decoders,
        predict,
        warm_up,
    )
    from biaffine.inference.request import Refused, Request, SentenceResult, Tree
    from biaffine.inference.settings import DecoderSettings

_HOMES = {
    "FAMILIES": "base",
    "DecoderSettings": "settings",
    "Family": "base",
    "Parsed": "parsing",
    "Predicted": "parsing",
    "Refused": "request",
    "Request": "request",
    "SentenceResult": "request",
    "Tree": "request",
    "family_of": "parsing",
    "parse": "parsing",
    "parse_with_decoders": "parsing",
    "predict": "parsing",
    "warm_up": "parsing",
}
"""Each name of the package, by the module that defines it."""

__all__ = [
    "FAMILIES",
    "DecoderSettings",
    "Family",
    "Parsed",
    "Predicted",
    "Refused",
    "Request",
    "SentenceResult",
    "Tree",
    "family_of",
    "parse",
    "parse_with_decoders",
    "predict",
    "warm_up",
]


def __getattr__(name: str) -> Any:
    """A name of :data:`__all__` once every family is loaded, or a module of the package.

    A module is imported alone: its own imports of the package's modules
    (``from biaffine.inference import choices``) come here before the families are loaded,
    so loading them from here would import a module that is still being imported.
    """
    if name in _HOMES:
        importlib.import_module("biaffine.inference.parsing")  # imports (registers) every family
        return getattr(importlib.import_module(f"biaffine.inference.{_HOMES[name]}"), name)
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
