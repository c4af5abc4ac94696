"""From a trained parser to trees: requests and results, settings, and the families.

``graph``: arc scores decoded by :mod:`decoding`, then one label per arc. ``transition``: a
transition search in lockstep. A new family is a module here with a :class:`Family` subclass
naming the ``family`` its parser classes give; nothing else registers it.
"""

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
