"""From a trained parser to trees: settings, dispatch per parser family, and the families.

``graph``: arc scores decoded by :mod:`decoding`, then one label per arc. A new family adds a
module with a batch parser and registers it in :data:`biaffine.inference.parsing.FAMILIES`.
"""

from biaffine.inference.parsing import FAMILIES, Parsed, parse, parse_with_decoders, warm_up
from biaffine.inference.settings import DecoderSettings

__all__ = ["FAMILIES", "DecoderSettings", "Parsed", "parse", "parse_with_decoders", "warm_up"]
