"""Eisner (1996) projective decoder: optimality against brute force and metamorphic properties."""

from __future__ import annotations

import os

import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import FEASIBLE_KINDS, score_matrices

import decoding
from decoding._eisner import eisner_kernel

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"


@given(score_matrices(), st.booleans())
def test_eisner_weight_equals_projective_brute_force_optimum(scores, root_constraint):
    best = oracle.best_score(scores, single_root=root_constraint, projective=True)
    if best == -np.inf:
        with pytest.raises(ValueError, match="sentence 0"):
            decoding.eisner(scores, root_constraint=root_constraint)
        return
    heads = decoding.eisner(scores, root_constraint=root_constraint)
    assert oracle.is_tree(heads, single_root=root_constraint, is_projective=True)
    assert oracle.weight(scores, heads) == pytest.approx(best, rel=0, abs=oracle.tolerance(scores))


@given(score_matrices(max_words=9, kinds=FEASIBLE_KINDS), st.booleans())
def test_eisner_weight_at_most_mst_weight(scores, root_constraint):
    projective = decoding.eisner(scores, root_constraint=root_constraint)
    free = decoding.mst(scores, root_constraint=root_constraint)
    slack = oracle.tolerance(scores)
    assert decoding.tree_score(scores, projective) <= decoding.tree_score(scores, free) + slack


@given(score_matrices(max_words=9, kinds=FEASIBLE_KINDS), st.booleans())
def test_eisner_weight_equals_mst_weight_when_mst_is_projective(scores, root_constraint):
    free = decoding.mst(scores, root_constraint=root_constraint)
    if decoding.is_projective(free):
        projective = decoding.eisner(scores, root_constraint=root_constraint)
        assert decoding.tree_score(scores, projective) == pytest.approx(
            decoding.tree_score(scores, free), rel=0, abs=oracle.tolerance(scores)
        )


@given(score_matrices(max_words=9, kinds=FEASIBLE_KINDS))
def test_eisner_single_root_weight_at_most_multi_root_weight(scores):
    single = decoding.eisner(scores, root_constraint=True)
    multi = decoding.eisner(scores, root_constraint=False)
    slack = oracle.tolerance(scores)
    assert decoding.tree_score(scores, single) <= decoding.tree_score(scores, multi) + slack


def test_eisner_on_one_word_attaches_it_to_root():
    for root_constraint in (True, False):
        heads = decoding.eisner(
            np.array([[0.0, 0.0], [-5.0, 0.0]]), root_constraint=root_constraint
        )
        np.testing.assert_array_equal(heads, [-1, 0])


def test_eisner_breaks_all_zero_ties_deterministically():
    scores = np.zeros((6, 6))
    first = decoding.eisner(scores)
    np.testing.assert_array_equal(first, decoding.eisner(scores.copy()))
    assert decoding.is_tree(first, projective=True)


def test_eisner_kernel_reports_status_one_when_no_projective_tree_exists():
    scores = np.full((4, 4), -np.inf)  # only 0->2, 2->3, 3->1: arcs (0,2) and (1,3) cross
    scores[2, 0] = scores[3, 2] = scores[1, 3] = 1.0
    heads = np.zeros(4, dtype=np.int64)
    assert eisner_kernel(scores, False, heads) == 1
    np.testing.assert_array_equal(heads, [-1, -1, -1, -1])
    assert decoding.is_tree(decoding.mst(scores))


def _slow_eisner(scores: np.ndarray, root_constraint: bool) -> np.ndarray | None:
    """Eisner (1996) in numpy, one loop over spans and a vector over split points; slow and plain.

    The same ties as the kernel: lowest split point, lowest root word. None if no projective tree.
    """
    m = len(scores)
    arc = scores.T.copy()  # arc[h, d]: head-major, so arc[s, t] is s -> t
    arc[:, 0] = -np.inf  # nothing heads ROOT
    complete = np.full((2, m, m), -np.inf)  # [0]: head at the right end t, [1]: at the left end s
    complete[:, np.arange(m), np.arange(m)] = 0.0
    incomplete = np.full((2, m, m), -np.inf)
    split = np.zeros((4, m, m), dtype=np.int64)  # complete 0, 1, then incomplete 0, 1
    for width in range(1, m):
        for s in range(m - width):
            t = s + width
            inner = complete[1, s, s:t] + complete[0, s + 1 : t + 1, t]  # q = s..t-1
            q = int(np.argmax(inner))
            incomplete[:, s, t] = inner[q] + arc[t, s], inner[q] + arc[s, t]
            split[2:, s, t] = s + q
            left = complete[0, s, s:t] + incomplete[0, s:t, t]  # q = s..t-1
            right = incomplete[1, s, s + 1 : t + 1] + complete[1, s + 1 : t + 1, t]  # q = s+1..t
            split[0, s, t], split[1, s, t] = s + np.argmax(left), s + 1 + np.argmax(right)
            complete[:, s, t] = left.max(), right.max()
    heads = np.full(m, -1, dtype=np.int64)
    if root_constraint:
        n = m - 1
        totals = [arc[0, r] + complete[0, 1, r] + complete[1, r, n] for r in range(1, m)]
        r = 1 + int(np.argmax(totals))
        heads[r] = 0
        spans, best = [(0, 1, r), (1, r, n)], totals[r - 1]
    else:
        spans, best = [(1, 0, m - 1)], complete[1, 0, m - 1]
    if best == -np.inf:
        return None
    while spans:
        kind, s, t = spans.pop()
        if s == t:
            continue
        q = split[kind, s, t]
        if kind == 0:
            spans += [(0, s, q), (2, q, t)]
        elif kind == 1:
            spans += [(3, s, q), (1, q, t)]
        else:
            heads[s if kind == 2 else t] = t if kind == 2 else s
            spans += [(1, s, q), (0, q + 1, t)]
    return heads


@pytest.mark.parametrize(
    ("n", "kind"),
    [
        (30, "normal"),
        (30, "ties"),
        (30, "masked"),
        pytest.param(200, "normal", marks=pytest.mark.skipif(NO_JIT, reason="minutes without JIT")),
        pytest.param(200, "ties", marks=pytest.mark.skipif(NO_JIT, reason="minutes without JIT")),
    ],
)
@pytest.mark.parametrize("root_constraint", [True, False])
def test_eisner_equals_slow_reference_with_the_same_ties(n, kind, root_constraint):
    rng = np.random.default_rng(n)
    for _ in range(3):
        scores = rng.normal(size=(n + 1, n + 1))
        if kind == "ties":
            scores = rng.integers(0, 3, size=(n + 1, n + 1)).astype(np.float64)
        elif kind == "masked":  # sparse finite arcs, and a chain so that a tree exists
            scores[rng.random(size=scores.shape) < 0.8] = -np.inf
            scores[np.arange(1, n + 1), np.arange(n)] = 0.0
        expected = _slow_eisner(scores, root_constraint)
        np.testing.assert_array_equal(
            decoding.eisner(scores, root_constraint=root_constraint), expected
        )


@pytest.mark.skipif(NO_JIT, reason="O(n^3) in pure Python takes minutes at n = 300")
@pytest.mark.parametrize("root_constraint", [True, False])
def test_eisner_returns_projective_tree_for_300_words(root_constraint):
    scores = np.random.default_rng(300).normal(size=(301, 301))
    heads = decoding.eisner(scores, root_constraint=root_constraint)
    assert decoding.is_tree(heads, root_constraint=root_constraint, projective=True)
    chain = np.arange(-1, 300)  # 0 -> 1 -> 2 -> ... is one projective single-rooted tree
    assert decoding.tree_score(scores, heads) >= decoding.tree_score(scores, chain)
