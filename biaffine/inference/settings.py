"""How trees are found: settings shared by training (dev scoring), prediction and experiments."""

from __future__ import annotations

from dataclasses import dataclass

import decoding

__all__ = ["DEFAULT_DECODER", "DecoderSettings"]


@dataclass(frozen=True, slots=True)
class DecoderSettings:
    """A graph decoder from :data:`decoding.DECODERS`.

    Attributes:
        algorithm: ``mst`` (non-projective), ``eisner`` (projective) or ``greedy`` (argmax per
            word, may not be a tree).
        root_constraint: exactly one word attaches to ROOT (mst and eisner; greedy ignores it).
    """

    algorithm: str = "mst"
    root_constraint: bool = True

    def __post_init__(self) -> None:
        """Refuse an unknown algorithm now rather than at the first batch."""
        decoding.check_algorithm(self.algorithm)


DEFAULT_DECODER = DecoderSettings()
"""MST with exactly one word on ROOT, as UD requires."""
