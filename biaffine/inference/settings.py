"""How trees are found: settings shared by training (dev scoring), prediction and experiments."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import decoding

__all__ = ["DEFAULT_DECODER", "SEARCHES", "DecoderSettings"]

SEARCHES = ("greedy", "beam", "graph")
"""Searches of the transition family: one best transition per step, a beam, or (combined models
only) no transitions at all: the graph head's arc scores decoded by ``algorithm``."""


@dataclass(frozen=True, slots=True)
class DecoderSettings:
    """How a parser finds trees: a graph decoder, or a transition search.

    A graph parser reads ``algorithm`` and ``root_constraint``; a transition parser reads
    ``search``, ``beam_size`` and ``graph_weight`` (its system decides the root rule), and the
    first two with ``search="graph"``.

    Attributes:
        algorithm: ``mst`` (non-projective), ``eisner`` (projective) or ``greedy`` (argmax per
            word, may not be a tree), from :data:`decoding.DECODERS`.
        root_constraint: exactly one word attaches to ROOT (mst and eisner; greedy ignores it).
        search: ``greedy``, ``beam`` (:func:`transitions.beam_search`) or ``graph`` (a combined
            model's graph head alone, decoded by ``algorithm`` with ``root_constraint``).
        beam_size: items per sentence of the beam (1 with ``search="greedy"``).
        graph_weight: weight of the graph head's arc log-probabilities in the search score of a
            combined model (Zhang & Clark, 2008); 0 scores by transitions alone.
    """

    algorithm: str = "mst"
    root_constraint: bool = True
    search: str = "greedy"
    beam_size: int = 1
    graph_weight: float = 0.0

    def __post_init__(self) -> None:
        """Refuse unknown or inconsistent settings now rather than at the first batch."""
        decoding.check_algorithm(self.algorithm)
        if self.search not in SEARCHES:
            raise ValueError(f"search={self.search!r} is not one of {', '.join(SEARCHES)}")
        if self.beam_size < 1 or (self.search == "greedy" and self.beam_size != 1):
            raise ValueError(f"beam_size={self.beam_size}: must be >= 1, and 1 unless search=beam")
        if not (math.isfinite(self.graph_weight) and self.graph_weight >= 0):
            raise ValueError(f"graph_weight={self.graph_weight} must be finite and >= 0")

    @classmethod
    def from_config(
        cls, decoder: Mapping[str, Any], search: Mapping[str, Any] | None = None
    ) -> DecoderSettings:
        """Settings from the ``decoder`` and ``search`` config groups (plain mappings)."""
        search = search or {}
        return cls(
            algorithm=decoder["algorithm"],
            root_constraint=bool(decoder["root_constraint"]),
            search=search.get("name", "greedy"),
            beam_size=int(search.get("beam_size", 1)),
            graph_weight=float(search.get("graph_weight", 0.0)),
        )

    @property
    def transition_search(self) -> bool:
        """A transition search other than greedy, or a graph weight: not for a graph parser."""
        return self.search != "greedy" or self.graph_weight > 0


DEFAULT_DECODER = DecoderSettings()
"""MST with exactly one word on ROOT, as UD requires; greedy search for transition parsers."""
