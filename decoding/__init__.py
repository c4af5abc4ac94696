"""Exact dependency-tree decoders on dense arc scores (numpy + numba, no deep-learning framework).

Position 0 is ROOT; word *i* sits at position *i*, exactly its CoNLL-U ``ID``, so gold ``HEAD``
values index tensors directly, with no ±1 shifting anywhere. Scores are **dependent-major**:
``scores[d, h]`` is the score of the arc *h → d* (a row is the head distribution of one dependent,
as ``log_softmax(dim=-1)`` produces). ``-inf`` forbids an arc; NaN is rejected. ``lengths`` count
words, excluding ROOT. Decoders return ``heads`` as int64 with ``heads[0] == -1`` and ``-1`` at
padding.

Example::

    import decoding

    heads = decoding.mst(scores, lengths)  # float[B, N+1, N+1] -> int64[B, N+1], one root each
    heads = decoding.decode(scores, lengths, algorithm="eisner")  # any decoder of DECODERS by name
    heads = decoding.eisner(matrix, root_constraint=False)  # float[n+1, n+1] -> int64[n+1]
    assert decoding.is_tree(heads, projective=True, root_constraint=False)
    total = decoding.tree_score(matrix, heads)
    best = decoding.kbest(matrix, 5)  # the 5 best single-rooted trees: best.heads, best.scores
    heads = decoding.constrained(matrix, fixed_heads=given, forbidden=banned, root=3)
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._drive import get_num_threads, set_num_threads, use_compiled
from .api import DECODERS, check_algorithm, decode, eisner, greedy, mst

if TYPE_CHECKING:
    from ._constrained import constrained
    from ._kbest import KBest, kbest
    from .trees import count_roots, is_projective, is_tree, tree_score

__all__ = [
    "DECODERS",
    "KBest",
    "check_algorithm",
    "constrained",
    "count_roots",
    "decode",
    "eisner",
    "get_num_threads",
    "greedy",
    "is_projective",
    "is_tree",
    "kbest",
    "mst",
    "set_num_threads",
    "tree_score",
    "use_compiled",
]

# The decoders above import no numba until they decode (decoding._drive); these modules define
# numba kernels at import, so they are imported on first use: a torch-free parse that decodes
# with the ahead-of-time build (decoding.aot) never loads numba.
_LAZY = {
    "constrained": "_constrained",
    "KBest": "_kbest",
    "kbest": "_kbest",
    "count_roots": "trees",
    "is_projective": "trees",
    "is_tree": "trees",
    "tree_score": "trees",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value
