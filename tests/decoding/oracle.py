"""Brute-force decoding oracle in pure Python, independent of the `decoding` package.

Enumerates every head vector of a sentence with n <= 6 words and keeps the best tree for each
combination of (single root, projective). Scores follow the package convention: ``scores[d][h]``
scores the arc h -> d; row 0 and the diagonal are never read; ``-inf`` forbids an arc.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import numpy as np

MAX_WORDS = 6


def reaches_root(heads: Sequence[int]) -> bool:
    """Every word 1..n has a head in 0..n other than itself and reaches 0 within n steps."""
    n = len(heads) - 1
    if any(not 0 <= heads[d] <= n or heads[d] == d for d in range(1, n + 1)):
        return False
    for d in range(1, n + 1):
        node, steps = d, 0
        while node != 0 and steps <= n:
            node, steps = heads[node], steps + 1
        if node != 0:
            return False
    return True


def _dominates(heads: Sequence[int], ancestor: int, node: int) -> bool:
    while node not in (0, ancestor):
        node = heads[node]
    return node == ancestor


def projective(heads: Sequence[int]) -> bool:
    """Textbook definition: every word between a head and its dependent descends from the head."""
    n = len(heads) - 1
    for d in range(1, n + 1):
        h = heads[d]
        for between in range(min(h, d) + 1, max(h, d)):
            if not _dominates(heads, h, between):
                return False
    return True


def is_tree(
    heads: Sequence[int], *, single_root: bool = False, is_projective: bool = False
) -> bool:
    """Whether ``heads`` (heads[0] ignored) is a tree rooted at 0, with the requested conditions."""
    heads = [int(h) for h in heads]
    if len(heads) < 2 or not reaches_root(heads):
        return False
    if single_root and sum(1 for h in heads[1:] if h == 0) != 1:
        return False
    return not is_projective or projective(heads)


def weight(scores: np.ndarray, heads: Sequence[int]) -> float:
    """Sum of scores[d][heads[d]] over words d = 1..n, in plain Python floats."""
    rows = np.asarray(scores, dtype=np.float64).tolist()
    return math.fsum(rows[d][int(heads[d])] for d in range(1, len(heads)))


@functools.lru_cache(maxsize=4096)
def _best(shape: tuple[int, ...], data: bytes) -> dict[tuple[bool, bool], float]:
    rows = np.frombuffer(data, dtype=np.float64).reshape(shape).tolist()
    n = shape[0] - 1
    choices = [
        [h for h in range(n + 1) if h != d and rows[d][h] > -math.inf] for d in range(1, n + 1)
    ]
    best = dict.fromkeys(itertools.product((False, True), repeat=2), -math.inf)
    for combo in itertools.product(*choices):
        heads = [-1, *combo]
        if not reaches_root(heads):
            continue
        total = math.fsum(rows[d][heads[d]] for d in range(1, n + 1))
        single = combo.count(0) == 1
        proj = projective(heads)
        for single_root, is_proj in best:
            if (
                (single or not single_root)
                and (proj or not is_proj)
                and total > best[single_root, is_proj]
            ):
                best[single_root, is_proj] = total
    return best


def best_score(scores: np.ndarray, *, single_root: bool, projective: bool = False) -> float:
    """Weight of the best tree (``-inf`` if none exists) by exhaustive enumeration."""
    array = np.ascontiguousarray(scores, dtype=np.float64)
    if array.shape[0] - 1 > MAX_WORDS:
        raise ValueError(f"oracle enumerates at most {MAX_WORDS} words, got {array.shape[0] - 1}")
    return _best(array.shape, array.tobytes())[single_root, projective]


def tolerance(scores: np.ndarray) -> float:
    """Absolute slack for comparing tree weights: a few ulps of the largest arc score per arc."""
    array = np.array(scores, dtype=np.float64)[1:]  # row 0 is not an arc
    np.fill_diagonal(array[:, 1:], np.nan)
    finite = np.abs(array[np.isfinite(array)])
    scale = float(finite.max()) if finite.size else 1.0
    return 64 * np.finfo(np.float64).eps * array.shape[1] ** 2 * max(scale, 1e-300)
