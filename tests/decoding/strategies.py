"""Hypothesis strategies for dependent-major score matrices and padded batches."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

KINDS = ("normal", "positive", "ties", "masked", "huge", "tiny")
FEASIBLE_KINDS = ("normal", "positive", "ties", "huge", "tiny")

_GARBAGE = st.one_of(
    st.floats(-1e3, 1e3), st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300])
)


def _values(kind: str, size: int) -> st.SearchStrategy[list[float]]:
    if kind == "positive":
        element = st.floats(0.0, 10.0)
    elif kind == "ties":
        element = st.sampled_from([0.0, 1.0, 2.0])
    elif kind == "huge":
        element = st.floats(-3.0, 3.0).map(lambda x: x * 1e30)
    elif kind == "tiny":
        element = st.integers(-3, 3).map(lambda k: 1.0 + k * 1e-12)
    else:  # "normal" and "masked": finite floats of both signs
        element = st.floats(-10.0, 10.0)
    return st.lists(element, min_size=size, max_size=size)


@st.composite
def _mask(draw: st.DrawFn, n: int) -> np.ndarray:
    """bool[n+1, n+1], True where an arc is forbidden: ~1 in 4 arcs, sometimes a whole row."""
    forbid = draw(st.lists(st.integers(0, 3), min_size=(n + 1) ** 2, max_size=(n + 1) ** 2))
    mask = (np.array(forbid) == 0).reshape(n + 1, n + 1)
    if draw(st.booleans()):  # a word whose only finite head is ROOT
        mask[draw(st.integers(1, n)), 1:] = True
    return mask


@st.composite
def score_matrices(
    draw: st.DrawFn, max_words: int = 5, kinds: tuple[str, ...] = KINDS, min_words: int = 1
) -> np.ndarray:
    """float64[n+1, n+1] scores of one kind, with garbage (NaN, inf) in row 0 and the diagonal."""
    n = draw(st.integers(min_words, max_words))
    kind = draw(st.sampled_from(kinds))
    scores = np.array(draw(_values(kind, (n + 1) ** 2))).reshape(n + 1, n + 1)
    if kind == "masked":
        scores[draw(_mask(n))] = -np.inf
    if draw(st.booleans()):
        scores[0, :] = draw(st.lists(_GARBAGE, min_size=n + 1, max_size=n + 1))
        np.fill_diagonal(scores, draw(st.lists(_GARBAGE, min_size=n + 1, max_size=n + 1)))
    return scores


@st.composite
def padded_batches(
    draw: st.DrawFn, max_words: int = 7, max_batch: int = 4, kinds: tuple[str, ...] = FEASIBLE_KINDS
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(float64[B, N+1, N+1] with garbage padding, int64[B] lengths, the B unpadded matrices)."""
    sentences = draw(
        st.lists(score_matrices(max_words=max_words, kinds=kinds), min_size=1, max_size=max_batch)
    )
    width = max(len(m) for m in sentences) + draw(st.integers(0, 2))
    size = len(sentences) * width * width
    garbage = draw(st.lists(_GARBAGE, min_size=size, max_size=size))
    batch = np.array(garbage).reshape(len(sentences), width, width)
    for b, matrix in enumerate(sentences):
        batch[b, : len(matrix), : len(matrix)] = matrix
    lengths = np.array([len(m) - 1 for m in sentences], dtype=np.int64)
    return batch, lengths, sentences


def head_vectors(max_words: int = 7) -> st.SearchStrategy[list[int]]:
    """Arbitrary head lists [-1, h1..hn] with heads in -1..n+1: trees, cycles, bad indices."""
    return st.integers(1, max_words).flatmap(
        lambda n: st.lists(st.integers(-1, n + 1), min_size=n, max_size=n).map(lambda h: [-1, *h])
    )


def tree_head_vectors(max_words: int = 7) -> st.SearchStrategy[list[int]]:
    """Random trees: word order shuffled, each word attached to an earlier one in that order."""

    @st.composite
    def build(draw: st.DrawFn) -> list[int]:
        n = draw(st.integers(1, max_words))
        order = draw(st.permutations(range(1, n + 1)))
        heads = [-1] * (n + 1)
        for i, word in enumerate(order):
            heads[word] = draw(st.sampled_from([0, *order[:i]]))
        return heads

    return build()
