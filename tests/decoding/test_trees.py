"""Tree checks and scores against the independent pure-Python oracle."""

from __future__ import annotations

import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import head_vectors, tree_head_vectors

import decoding
from decoding.trees import (
    CYCLE,
    NON_PROJECTIVE,
    OK,
    OUT_OF_RANGE,
    ROOTS,
    greedy_kernel,
    tree_problem_kernel,
)


@given(head_vectors(), st.booleans(), st.booleans())
def test_is_tree_agrees_with_oracle(heads, root_constraint, projective):
    expected = oracle.is_tree(heads, single_root=root_constraint, is_projective=projective)
    assert (
        decoding.is_tree(heads, root_constraint=root_constraint, projective=projective) is expected
    )


def _problem(heads: list[int], root_constraint: bool, projective: bool) -> tuple[int, list[int]]:
    detail = np.full(2, -7, dtype=np.int64)
    array = np.array(heads, dtype=np.int64)
    code = tree_problem_kernel(array, len(heads) - 1, root_constraint, projective, detail)
    return code, detail.tolist()


def _reaches(heads: list[int], start: int, goal: int) -> bool:
    node = heads[start]
    for _ in range(len(heads)):
        if node == goal:
            return True
        node = heads[node]
    return False


@given(head_vectors(), st.booleans(), st.booleans())
def test_tree_problem_names_the_first_problem_and_its_words(heads, root_constraint, projective):
    # Each code is checked against the oracle's own reading of the same condition, and the
    # words in detail must show that problem.
    n = len(heads) - 1
    code, (first, second) = _problem(heads, root_constraint, projective)
    in_range = all(0 <= heads[d] <= n and heads[d] != d for d in range(1, n + 1))
    if not in_range:
        assert code == OUT_OF_RANGE
        assert first == min(d for d in range(1, n + 1) if not 0 <= heads[d] <= n or heads[d] == d)
        assert second == heads[first]
    elif not oracle.reaches_root(heads):
        assert code == CYCLE
        assert (second, _reaches(heads, first, first)) == (heads[first], True)
    elif root_constraint and heads[1:].count(0) != 1:
        assert (code, first, second) == (ROOTS, heads[1:].count(0), -1)
    elif projective and not oracle.projective(heads):
        assert code == NON_PROJECTIVE
        lo, hi = sorted((first, heads[first]))
        assert lo < second < hi
        assert not lo <= heads[second] <= hi
    else:
        assert (code, first, second) == (OK, -7, -7)
    expected = oracle.is_tree(heads, single_root=root_constraint, is_projective=projective)
    assert (code == OK) is expected


@given(tree_head_vectors())
def test_is_projective_and_count_roots_agree_with_oracle(heads):
    assert decoding.is_tree(heads, root_constraint=False)
    assert decoding.is_projective(heads) is oracle.projective(heads)
    assert decoding.count_roots(heads) == heads[1:].count(0)


@given(tree_head_vectors(), st.data())
def test_tree_score_sums_the_chosen_arcs(heads, data):
    n = len(heads) - 1
    values = data.draw(st.lists(st.floats(-1e6, 1e6), min_size=(n + 1) ** 2, max_size=(n + 1) ** 2))
    scores = np.array(values).reshape(n + 1, n + 1)
    assert decoding.tree_score(scores, heads) == pytest.approx(oracle.weight(scores, heads))


def test_batch_is_tree_infers_lengths_from_minus_one_padding():
    heads = np.array(
        [
            [-1, 0, 1, 1],  # tree
            [-1, 2, 0, -1],  # tree of 2 words, padded
            [-1, 0, 0, -1],  # two roots
            [-1, 2, 1, -1],  # cycle
            [-1, -1, 0, -1],  # -1 inside the sentence
            [-1, -1, -1, -1],  # no words
        ]
    )
    np.testing.assert_array_equal(decoding.is_tree(heads), [True, True, False, False, False, False])
    np.testing.assert_array_equal(
        decoding.is_tree(heads, root_constraint=False), [True, True, True, False, False, False]
    )
    np.testing.assert_array_equal(
        decoding.is_tree(heads, [3, 2, 2, 2, 1, 3]), [True, True, False, False, False, False]
    )


def test_is_tree_ignores_position_0():
    assert decoding.is_tree([0, 0, 1])
    assert decoding.is_tree(np.array([7, 0, 1]))


def test_is_tree_projective_flag_rejects_crossing_arcs():
    crossing = [-1, 3, 0, 2, 3]  # arcs (0, 2) and (1, 3) cross
    assert decoding.is_tree(crossing)
    assert not decoding.is_tree(crossing, projective=True)
    assert not decoding.is_projective(crossing)


def test_batch_tree_score_skips_padding():
    scores = np.arange(2 * 4 * 4, dtype=np.float64).reshape(2, 4, 4)
    heads = np.array([[-1, 0, 1, 1], [-1, 2, 0, -1]])
    expected = [
        scores[0, 1, 0] + scores[0, 2, 1] + scores[0, 3, 1],
        scores[1, 1, 2] + scores[1, 2, 0],
    ]
    np.testing.assert_array_equal(decoding.tree_score(scores, heads), expected)


def test_greedy_kernel_reports_word_without_finite_head():
    scores = np.zeros((3, 3))
    scores[2, :] = -np.inf
    heads = np.zeros(3, dtype=np.int64)
    assert greedy_kernel(scores, heads) == 1
    np.testing.assert_array_equal(heads, [-1, 0, -1])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: decoding.is_tree(np.zeros((2, 2, 2), dtype=int)), "shape"),
        (lambda: decoding.is_tree([-1.0, 0.0]), "integers"),
        (lambda: decoding.is_tree([-1, 0], [1]), "only for a batch"),
        (
            lambda: decoding.is_tree(np.zeros((2, 3), dtype=int), [2, 3]),
            r"sentence 1: lengths\[1\]=3",
        ),
        (lambda: decoding.is_tree(np.zeros((2, 3), dtype=int), [2]), "lengths must be"),
        (lambda: decoding.tree_score(np.zeros((3, 3)), [-1, 0]), "does not match"),
        (lambda: decoding.tree_score(np.zeros((3, 3)), [-1, 0, 2]), r"heads\[2\]=2"),
        (
            lambda: decoding.tree_score(np.zeros((2, 3, 3)), [[-1, 0, 1], [-1, 0, 5]]),
            r"sentence 1: heads\[2\]=5",
        ),
        (lambda: decoding.is_projective([-1, 2, 1]), "not a tree"),
        (lambda: decoding.is_projective([-1]), "not a tree"),
        (lambda: decoding.is_projective([[-1, 0]]), "shape"),
        (lambda: decoding.count_roots([[-1, 0]]), "shape"),
    ],
)
def test_bad_heads_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
