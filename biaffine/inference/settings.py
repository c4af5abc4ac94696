"""How trees are found: what a user asks (:class:`DecoderSettings`), and what each family reads.

A user names a decoder and a search at once (``decoder=`` and ``search=`` config groups, or the
API's keywords), whatever the checkpoint holds. The family of the loaded parser then refuses
settings it cannot honour (:meth:`biaffine.inference.Family.refusal`) and narrows the rest to
its own type: :class:`GraphDecoding` for graph parsers, :class:`TransitionSearch` for
transition parsers, so that no family reads a field that is not its own.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import decoding

__all__ = ["DEFAULT_DECODER", "SEARCHES", "DecoderSettings", "GraphDecoding", "TransitionSearch"]

SEARCHES = ("greedy", "beam", "graph")
"""Searches of the transition family: one best transition per step, a beam, or (combined models
only) no transitions at all: the graph head's arc scores decoded by ``algorithm``."""


@dataclass(frozen=True, slots=True)
class GraphDecoding:
    """What the graph family reads: a decoder, the root rule, and how labels are chosen.

    Attributes:
        algorithm: ``mst`` (non-projective), ``eisner`` (projective) or ``greedy``, from
            :data:`decoding.DECODERS`.
        root_constraint: exactly one word attaches to ROOT (mst and eisner; greedy ignores it).
        joint_labels: the decoder maximizes each arc's head log-probability plus its best
            label's (:func:`biaffine.inference.choices.best_head_labels`), the best labelled
            tree; False: the best unlabelled tree, labelled afterwards (Dozat & Manning, 2017).
            Graph parsers only: a transition parser's ``search="graph"`` labels afterwards.
    """

    algorithm: str = "mst"
    root_constraint: bool = True
    joint_labels: bool = True


@dataclass(frozen=True, slots=True)
class TransitionSearch:
    """What the transition family reads: the search, and the graph head's decoding.

    Attributes:
        search: ``greedy``, ``beam`` or ``graph`` (a combined model's graph head alone).
        beam_size: items per sentence of the beam.
        graph_weight: weight of the graph head's arc log-probabilities in the search score.
        graph: how ``search="graph"`` decodes the graph head.
    """

    search: str = "greedy"
    beam_size: int = 1
    graph_weight: float = 0.0
    graph: GraphDecoding = GraphDecoding()


@dataclass(frozen=True, slots=True)
class DecoderSettings:
    """How a parser finds trees: a graph decoder, or a transition search.

    A graph parser reads ``algorithm``, ``root_constraint`` and ``joint_labels``; a transition
    parser reads ``search``, ``beam_size`` and ``graph_weight`` (its system decides the root
    rule), and the first two with ``search="graph"``.

    Attributes:
        algorithm: ``mst`` (non-projective), ``eisner`` (projective) or ``greedy`` (argmax per
            word, may not be a tree), from :data:`decoding.DECODERS`.
        root_constraint: exactly one word attaches to ROOT (mst and eisner; greedy ignores it).
        search: ``greedy``, ``beam`` (:func:`transitions.beam_search`) or ``graph`` (a combined
            model's graph head alone, decoded by ``algorithm`` with ``root_constraint``).
        beam_size: items per sentence of the beam (1 with ``search="greedy"``).
        graph_weight: weight of the graph head's arc log-probabilities in the search score of a
            combined model (Zhang & Clark, 2008); 0 scores by transitions alone.
        joint_labels: graph parsers choose heads with their labels (:class:`GraphDecoding`).
    """

    algorithm: str = "mst"
    root_constraint: bool = True
    search: str = "greedy"
    beam_size: int = 1
    graph_weight: float = 0.0
    joint_labels: bool = True

    def __post_init__(self) -> None:
        """Refuse unknown or inconsistent settings now rather than at the first batch."""
        decoding.check_algorithm(self.algorithm)
        if self.search not in SEARCHES:
            raise ValueError(f"search={self.search!r} is not one of {', '.join(SEARCHES)}")
        # beam_size="x" or graph_weight=None were a TypeError of the comparison below.
        if isinstance(self.beam_size, bool) or not isinstance(self.beam_size, numbers.Integral):
            raise ValueError(f"beam_size={self.beam_size!r}: give a whole number")
        if isinstance(self.graph_weight, bool) or not isinstance(self.graph_weight, numbers.Real):
            raise ValueError(f"graph_weight={self.graph_weight!r}: give a number")
        # search=graph took a beam size and a graph weight and read neither.
        if self.beam_size < 1 or (self.search != "beam" and self.beam_size != 1):
            raise ValueError(f"beam_size={self.beam_size}: must be >= 1, and 1 unless search=beam")
        if not (math.isfinite(self.graph_weight) and self.graph_weight >= 0):
            raise ValueError(f"graph_weight={self.graph_weight} must be finite and >= 0")
        if self.search == "graph" and self.graph_weight != 0:
            raise ValueError(
                f"graph_weight={self.graph_weight} with search=graph, which decodes the graph "
                "head alone: the weight is for search=greedy or beam"
            )

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
            joint_labels=bool(decoder.get("joint_labels", True)),
        )

    @property
    def asks_search(self) -> bool:
        """A transition search other than greedy, or a graph weight: not for a graph parser."""
        return self.search != "greedy" or self.graph_weight > 0

    @property
    def asks_decoder(self) -> bool:
        """A tree decoder other than single-rooted ``mst``: a transition search never reads it."""
        return (self.algorithm, self.root_constraint) != ("mst", True)

    def read_by(self, family: str) -> DecoderSettings:
        """These settings with those ``family`` never reads at their defaults.

        For training, which parses dev with its model's family: a sweep of several kinds of
        parser sets both a decoder and a search (``experiment=root_study model=arc_hybrid``
        sets ``decoder=mst_multiroot``), where a parse asked for by a user is refused
        (:meth:`~biaffine.inference.base.Family.refusal`).
        """
        if family == "graph":
            return replace(self, search="greedy", beam_size=1, graph_weight=0.0)
        if self.search == "graph":  # a combined model's graph head, decoded
            return self
        return replace(self, algorithm="mst", root_constraint=True)

    def graph_decoding(self) -> GraphDecoding:
        """The fields a graph parser reads."""
        return GraphDecoding(self.algorithm, self.root_constraint, self.joint_labels)

    def transition_search(self) -> TransitionSearch:
        """The fields a transition parser reads (its labels always follow its heads)."""
        graph = GraphDecoding(self.algorithm, self.root_constraint, joint_labels=False)
        return TransitionSearch(self.search, self.beam_size, self.graph_weight, graph)


DEFAULT_DECODER = DecoderSettings()
"""MST with exactly one word on ROOT, as UD requires; greedy search for transition parsers."""
