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
from decoding.eisner import eisner_kernel

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


@pytest.mark.skipif(NO_JIT, reason="O(n^3) in pure Python takes minutes at n = 300")
@pytest.mark.parametrize("root_constraint", [True, False])
def test_eisner_returns_projective_tree_for_300_words(root_constraint):
    scores = np.random.default_rng(300).normal(size=(301, 301))
    heads = decoding.eisner(scores, root_constraint=root_constraint)
    assert decoding.is_tree(heads, root_constraint=root_constraint, projective=True)
    chain = np.arange(-1, 300)  # 0 -> 1 -> 2 -> ... is one projective single-rooted tree
    assert decoding.tree_score(scores, heads) >= decoding.tree_score(scores, chain)
