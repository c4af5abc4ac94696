"""Every tree of a small sentence with its weight, by brute force, for k-best and constraint tests.

Pure Python on top of the oracle's tree checks, independent of the `decoding` package.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import oracle

Tree = tuple[float, tuple[int, ...]]  # (weight, heads with heads[0] == -1)


@functools.lru_cache(maxsize=256)
def _trees(
    shape: tuple[int, ...], data: bytes
) -> tuple[tuple[float, tuple[int, ...], bool, bool], ...]:
    rows = np.frombuffer(data, dtype=np.float64).reshape(shape).tolist()
    n = shape[0] - 1
    choices = [
        [h for h in range(n + 1) if h != d and rows[d][h] > -math.inf] for d in range(1, n + 1)
    ]
    found = []
    for combo in itertools.product(*choices):
        heads = (-1, *combo)
        if oracle.reaches_root(heads):
            total = math.fsum(rows[d][heads[d]] for d in range(1, n + 1))
            found.append((total, heads, combo.count(0) == 1, oracle.projective(heads)))
    return tuple(found)


def trees(scores: np.ndarray, *, single_root: bool, projective: bool = False) -> list[Tree]:
    """Every tree (with only finite arcs) of the requested kind, best first."""
    array = np.ascontiguousarray(scores, dtype=np.float64)
    if array.shape[0] - 1 > oracle.MAX_WORDS:
        raise ValueError(f"enumerates at most {oracle.MAX_WORDS} words, got {array.shape[0] - 1}")
    kept = [
        (total, heads)
        for total, heads, single, proj in _trees(array.shape, array.tobytes())
        if (single or not single_root) and (proj or not projective)
    ]
    return sorted(kept, key=lambda tree: -tree[0])
