"""The slot MLP's scores, and its compiled greedy search against the step-by-step one.

The scores are checked against the MLP written out in numpy; the compiled search against
:func:`transitions.greedy_search` driven step by step through the same scores as a callback
(its own legality, positions, log-softmax and transitions), which must take the same path.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import transitions
from transitions import SlotScorer
from transitions.slots import GREEDY_CHUNK

N_STACK, N_BUFFER = 3, 2


def random_scorer(seed: int, lengths: list[int], n_actions: int, hidden: int = 16) -> SlotScorer:
    """A slot MLP with random float32 arrays for sentences of ``lengths`` words."""
    rng = np.random.default_rng(seed)
    width = max(lengths) + 2  # ROOT, the words, the empty slot's row
    return SlotScorer.of(
        rng.normal(size=(len(lengths), width, N_STACK + N_BUFFER, hidden)),
        rng.normal(size=hidden),
        rng.normal(size=(n_actions, hidden)),
        rng.normal(size=n_actions),
        leak=0.1,
    )


def numpy_scores(scorer: SlotScorer, rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The MLP written out: gather each slot's row (-1: the last), sum, LeakyReLU, output layer."""
    empty = scorer.slots.shape[1] - 1
    index = np.where(positions < 0, empty, positions)
    gathered = scorer.slots[rows[:, None], index, np.arange(positions.shape[1])]  # [C, K, H]
    hidden = gathered.astype(np.float64).sum(1) + scorer.bias
    hidden = np.where(hidden >= 0, hidden, 0.1 * hidden)
    return hidden @ scorer.weight.T.astype(np.float64) + scorer.out_bias


@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), configurations=st.integers(0, 20))
def test_scores_are_the_mlp_on_the_summed_slots(seed: int, n: int, configurations: int) -> None:
    scorer = random_scorer(seed, [n, max(1, n - 1)], n_actions=4)
    rng = np.random.default_rng(seed + 1)
    rows = rng.integers(0, 2, configurations)
    positions = rng.integers(-1, n + 1, (configurations, N_STACK + N_BUFFER))
    scores = scorer(rows, positions)
    assert scores.shape == (configurations, 4)
    assert scores.dtype == np.float32
    np.testing.assert_allclose(scores, numpy_scores(scorer, rows, positions), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(lengths=st.lists(st.integers(1, 14), min_size=1, max_size=6), seed=st.integers(0, 10_000))
def test_the_compiled_greedy_search_takes_the_step_by_step_path(
    system: str, lengths: list[int], seed: int
) -> None:
    parser = transitions.get_system(system)
    scorer = random_scorer(seed, lengths, len(parser.table))
    compiled = transitions.greedy_search(parser, lengths, scorer)
    stepped = transitions.greedy_search(parser, lengths, lambda rows, p: scorer(rows, p))
    np.testing.assert_array_equal(compiled.heads, stepped.heads)
    np.testing.assert_array_equal(compiled.steps, stepped.steps)
    np.testing.assert_allclose(compiled.path_log_probs, stepped.path_log_probs, rtol=1e-12)
    np.testing.assert_array_equal(compiled.scores, compiled.path_log_probs)


@pytest.mark.parametrize("system", ["arc_hybrid", "swap"])
def test_a_batch_longer_than_one_call_is_searched_in_calls_of_a_chunk(system: str) -> None:
    parser = transitions.get_system(system)
    lengths = [1 + (7 * i) % 13 for i in range(3 * GREEDY_CHUNK + 5)]
    scorer = random_scorer(7, lengths, len(parser.table))
    compiled = transitions.greedy_search(parser, lengths, scorer)
    stepped = transitions.greedy_search(parser, lengths, lambda rows, p: scorer(rows, p))
    np.testing.assert_array_equal(compiled.heads, stepped.heads)
    np.testing.assert_array_equal(compiled.steps, stepped.steps)
    np.testing.assert_allclose(compiled.path_log_probs, stepped.path_log_probs, rtol=1e-12)


def test_ties_go_to_the_first_legal_action_as_argmax_gives() -> None:
    parser = transitions.get_system("arc_standard")
    zeros = SlotScorer.of(np.zeros((2, 6, 5, 3)), np.zeros(3), np.zeros((3, 3)), np.zeros(3), 0.1)
    found = transitions.greedy_search(parser, [4, 2], zeros)
    stepped = transitions.greedy_search(parser, [4, 2], lambda rows, p: zeros(rows, p))
    np.testing.assert_array_equal(found.heads, stepped.heads)
    # Every legal action scores 0: each step's log-probability is -log(number legal).
    assert np.all(found.path_log_probs < 0)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "all-minus-inf"])
def test_scores_that_choose_nothing_are_refused_with_the_configuration(bad: float) -> None:
    # +inf (a float32 overflow) and -inf for every legal action gave NaN path log-probabilities.
    parser = transitions.get_system("arc_hybrid")
    weight = np.zeros((3, 4))
    out_bias = np.zeros(3)
    if bad == -np.inf:
        out_bias[:] = bad
    else:
        weight[1, 0] = bad
    scorer = SlotScorer.of(np.ones((2, 5, 5, 4)), np.zeros(4), weight, out_bias, 0.1)
    with pytest.raises(
        ValueError,
        match=r"configuration 0: a NaN or \+inf transition score, or -inf for .* in stack",
    ):
        transitions.greedy_search(parser, [3, 3], scorer)


def test_shapes_that_disagree_are_refused() -> None:
    slots = np.zeros((2, 5, 5, 4))
    with pytest.raises(ValueError, match=r"slots must be float\[B, N\+2, K, H\]"):
        SlotScorer.of(np.zeros((2, 5, 4)), np.zeros(4), np.zeros((3, 4)), np.zeros(3), 0.1)
    with pytest.raises(ValueError, match="with H = 4"):
        SlotScorer.of(slots, np.zeros(3), np.zeros((3, 4)), np.zeros(3), 0.1)
    with pytest.raises(ValueError, match=r"out_bias must be float\[3\]"):
        SlotScorer.of(slots, np.zeros(4), np.zeros((3, 4)), np.zeros(4), 0.1)
    scorer = SlotScorer.of(slots, np.zeros(4), np.zeros((3, 4)), np.zeros(3), 0.1)
    parser = transitions.get_system("arc_hybrid")
    with pytest.raises(ValueError, match="reads 5 slots, not n_stack \\+ n_buffer = 4"):
        transitions.greedy_search(parser, [3, 3], scorer, n_stack=2)
    with pytest.raises(ValueError, match="3 configurations and 3 actions for slots of 2"):
        transitions.greedy_search(parser, [3, 3, 3], scorer)
    with pytest.raises(ValueError, match="and 4 actions for slots of 2 sentences and 3 actions"):
        transitions.greedy_search(transitions.get_system("swap"), [3, 3], scorer)


def test_slots_too_short_for_the_sentences_are_refused() -> None:
    # The compiled search read past the rows (garbage scores); one row short, it read the last
    # word's row as the empty slot's.
    parser = transitions.get_system("arc_standard")
    for rows in (3, 7):  # a sentence of 6 words needs 8
        scorer = random_scorer(0, [rows - 2], 3)
        with pytest.raises(ValueError, match=f"slots of {rows} rows for sentences of up to 6"):
            transitions.greedy_search(parser, [6], scorer)
    wider = random_scorer(0, [8], 3)  # more rows than the sentence needs: the last is empty's
    assert transitions.greedy_search(parser, [6], wider).heads.shape == (1, 7)


@pytest.mark.parametrize(
    ("rows", "positions", "message"),
    [
        ([1], [[0, 1, -1, 2, 3]], r"rows must be sentences 0\.\.0"),
        ([-1], [[0, 1, -1, 2, 3]], r"rows must be sentences 0\.\.0"),
        ([0], [[0, 1, -1, 2, 7]], r"positions must lie in -1\.\.6"),
        ([0], [[0, 1, -2, 2, 3]], r"positions must lie in -1\.\.6"),
        ([0], [[0, 1, 2]], r"positions int\[C, K=5\]"),
    ],
)
def test_scores_of_rows_or_positions_outside_the_slots_are_refused(
    rows: list, positions: list, message: str
) -> None:
    scorer = random_scorer(0, [6], 3)
    with pytest.raises(ValueError, match=message):
        scorer(np.array(rows), np.array(positions))
