"""Transition systems for dependency parsing, their oracles and projectivization (numpy + numba).

Torch-free, like :mod:`decoding`: positions are the project's (0 is ROOT, word *i* at position
*i*), trees come back as ``heads`` int64 with ``heads[0] == -1``, many configurations advance
together in arrays, and nothing here takes a model: a search calls a scoring function that the
torch side provides, or reads a slot MLP's arrays (:class:`SlotScorer`, which any runtime can
fill).
"""

from . import projective
from .configs import Configs
from .oracles import OracleSequences, costs, oracle_sequences, zero_cost
from .search import Beam, Scorer, SearchResult, beam_search, greedy_configs, greedy_search
from .slots import SlotScorer
from .systems import SYSTEM_NAMES, TransitionSystem, get_system

__all__ = [
    "SYSTEM_NAMES",
    "Beam",
    "Configs",
    "OracleSequences",
    "Scorer",
    "SearchResult",
    "SlotScorer",
    "TransitionSystem",
    "beam_search",
    "costs",
    "get_system",
    "greedy_configs",
    "greedy_search",
    "oracle_sequences",
    "projective",
    "zero_cost",
]
