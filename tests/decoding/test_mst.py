"""Maximum spanning trees (Tarjan; Gabow-Tarjan for one root): optimality and metamorphic tests."""

from __future__ import annotations

import os

import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import FEASIBLE_KINDS, score_matrices

import decoding
from decoding.api import _best_of_roots

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"


@given(score_matrices(), st.booleans())
def test_mst_weight_equals_brute_force_optimum(scores, root_constraint):
    best = oracle.best_score(scores, single_root=root_constraint)
    if best == -np.inf:
        with pytest.raises(ValueError, match="sentence 0"):
            decoding.mst(scores, root_constraint=root_constraint)
        return
    heads = decoding.mst(scores, root_constraint=root_constraint)
    assert oracle.is_tree(heads, single_root=root_constraint)
    assert oracle.weight(scores, heads) == pytest.approx(best, rel=0, abs=oracle.tolerance(scores))


@given(score_matrices())
def test_best_of_roots_weight_equals_brute_force_optimum(scores):
    best = oracle.best_score(scores, single_root=True)
    if best == -np.inf:
        with pytest.raises(ValueError, match="sentence 0"):
            _best_of_roots(scores)
        return
    heads = _best_of_roots(scores)
    assert oracle.is_tree(heads, single_root=True)
    assert oracle.weight(scores, heads) == pytest.approx(best, rel=0, abs=oracle.tolerance(scores))


@given(score_matrices(max_words=12, kinds=FEASIBLE_KINDS))
def test_mst_single_root_weight_at_most_multi_root_weight(scores):
    single = decoding.mst(scores, root_constraint=True)
    multi = decoding.mst(scores, root_constraint=False)
    slack = oracle.tolerance(scores)
    assert decoding.tree_score(scores, single) <= decoding.tree_score(scores, multi) + slack
    if decoding.count_roots(multi) == 1:
        assert decoding.tree_score(scores, single) >= decoding.tree_score(scores, multi) - slack


@given(
    score_matrices(max_words=12, kinds=FEASIBLE_KINDS),
    st.booleans(),
    st.data(),
    st.sampled_from(["mst", "eisner"]),
)
def test_adding_constant_to_dependent_row_adds_it_to_tree_weight(
    scores, root_constraint, data, name
):
    decode = getattr(decoding, name)
    n = len(scores) - 1
    d = data.draw(st.integers(1, n))
    constant = data.draw(st.sampled_from([-7.5, -1.0, 0.25, 3.0, 100.0]))
    shifted = scores.copy()
    shifted[d, :] += constant
    before = decoding.tree_score(scores, decode(scores, root_constraint=root_constraint))
    after = decoding.tree_score(shifted, decode(shifted, root_constraint=root_constraint))
    slack = oracle.tolerance(scores) + oracle.tolerance(shifted)
    assert after == pytest.approx(before + constant, rel=0, abs=slack)


@pytest.mark.parametrize("fill", [0.0, -np.inf])
def test_mst_keeps_root_arc_of_swapped_node_in_notes_instance(fill):
    scores = np.full((4, 4), fill)
    scores[1, 0], scores[1, 2], scores[2, 1], scores[3, 0], scores[3, 1] = 10, 9, 10, 10, 5
    for decode in (decoding.mst, _best_of_roots):
        heads = decode(scores)
        np.testing.assert_array_equal(heads, [-1, 0, 1, 1])
        assert decoding.tree_score(scores, heads) == 25


def test_mst_beats_udpipe_argmax_root_heuristic():
    scores = np.full((4, 4), -1.0)
    scores[1, 0], scores[2, 0], scores[3, 0] = 10, 9, 1  # word 1 has the best ROOT arc ...
    scores[1, 2], scores[3, 2] = 5, 5  # ... but word 2 heading everything wins
    scores[2, 1], scores[3, 1] = 0, 0
    exact = decoding.tree_score(scores, decoding.mst(scores))
    # UDPipe 2 --single_root: keep only the argmax ROOT arc, then decode without the constraint.
    fixed = scores.copy()
    root_word = 1 + int(np.argmax(scores[1:, 0]))
    fixed[1:, 0] = -np.inf
    fixed[root_word, 0] = scores[root_word, 0]
    heuristic = decoding.tree_score(scores, decoding.mst(fixed, root_constraint=False))
    assert exact == 19
    assert heuristic < exact


def test_mst_on_one_and_two_words_matches_hand_results():
    np.testing.assert_array_equal(decoding.mst(np.array([[0.0, 0.0], [-3.0, 0.0]])), [-1, 0])
    two = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 2.0], [3.0, 0.0, 0.0]])  # 0->1: 1, 2->1: 2, 0->2: 3
    np.testing.assert_array_equal(decoding.mst(two), [-1, 2, 0])
    np.testing.assert_array_equal(decoding.mst(two, root_constraint=False), [-1, 2, 0])
    two[1, 2] = 0.5
    np.testing.assert_array_equal(decoding.mst(two), [-1, 2, 0])
    np.testing.assert_array_equal(decoding.mst(two, root_constraint=False), [-1, 0, 0])


def _random_scores(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "ties":
        return rng.integers(0, 3, size=(n + 1, n + 1)).astype(np.float64)
    if kind == "positive":
        return rng.uniform(0, 10, size=(n + 1, n + 1))
    scores = rng.normal(size=(n + 1, n + 1))
    if kind == "masked":  # a random chain keeps a single-rooted tree feasible
        keep = rng.random((n + 1, n + 1)) < 0.2
        order = rng.permutation(n) + 1
        keep[order[0], 0] = True
        keep[order[1:], order[:-1]] = True
        scores[~keep] = -np.inf
    return scores


@pytest.mark.skipif(NO_JIT, reason="best of n roots is O(n^3) per sentence in pure Python")
@pytest.mark.parametrize("kind", ["normal", "positive", "ties", "masked"])
def test_gabow_tarjan_weight_equals_best_of_roots_up_to_150_words(kind):
    rng = np.random.default_rng(150)
    lengths = np.array([10, 40, 150, 77, 150, 3])
    batch = rng.normal(size=(len(lengths), 151, 151))  # padding keeps random garbage
    for b, n in enumerate(lengths):
        batch[b, : n + 1, : n + 1] = _random_scores(kind, n, rng)
    exact = decoding.mst(batch, lengths)
    baseline = _best_of_roots(batch, lengths)
    assert decoding.is_tree(exact).all()
    np.testing.assert_allclose(
        decoding.tree_score(batch, exact), decoding.tree_score(batch, baseline), rtol=1e-12
    )


@pytest.mark.skipif(NO_JIT, reason="n = 1000 in pure Python takes minutes")
@pytest.mark.parametrize("kind", ["normal", "ties"])
def test_mst_decodes_1000_words(kind):
    scores = _random_scores(kind, 1000, np.random.default_rng(1000))
    single = decoding.mst(scores)
    multi = decoding.mst(scores, root_constraint=False)
    assert decoding.is_tree(single, root_constraint=True)
    assert decoding.is_tree(multi, root_constraint=False)
    assert decoding.tree_score(scores, single) <= decoding.tree_score(scores, multi) + 1e-9
    upper_bound = decoding.tree_score(scores, decoding.greedy(scores))  # best head of every word
    assert decoding.tree_score(scores, multi) <= upper_bound + 1e-9


def _greedy_heads(scores: np.ndarray) -> list[int]:
    """Each word's best head, ties to the lowest (ROOT first): float[n+1, n+1] -> int[n]."""
    n = scores.shape[0] - 1
    found = []
    for d in range(1, n + 1):
        candidates = [h for h in range(n + 1) if h != d]
        found.append(max(candidates, key=lambda h: (scores[d, h], -h)))
    return found


def _acyclic(heads: list[int]) -> bool:
    for start in range(1, len(heads) + 1):
        seen, word = set(), start
        while word != 0:
            if word in seen:
                return False
            seen.add(word)
            word = heads[word - 1]
    return True


TIED = st.integers(1, 6).flatmap(
    lambda n: st.lists(st.integers(0, 2), min_size=n * (n + 1), max_size=n * (n + 1)).map(
        lambda values: (n, values)
    )
)
"""A sentence length n and n * (n + 1) scores from {0, 1, 2}: ties everywhere."""


@given(TIED)
def test_tied_scores_keep_each_words_lowest_best_head_where_those_make_a_tree(drawn) -> None:
    # Ties are broken the same way every time, toward the lowest head: where the best heads so
    # chosen already make a tree, it is the tree given (a tie rule that let another head
    # beat ROOT on equal scores gave other trees and went unseen).
    n, values = drawn
    scores = np.full((n + 1, n + 1), -np.inf)
    scores[1:, :] = np.array(values, dtype=np.float64).reshape(n, n + 1)
    np.fill_diagonal(scores, -np.inf)
    greedy = _greedy_heads(scores)
    if _acyclic(greedy):
        assert decoding.mst(scores, root_constraint=False)[1:].tolist() == greedy
    assert decoding.mst(np.zeros((n + 1, n + 1)), root_constraint=False)[1:].tolist() == [0] * n
