"""Static oracles: every tree a system claims is rebuilt (exhaustively for n <= 6, hypothesis
above), the recorded rows match a replay through the public API, and bad trees are refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st

from transitions import get_system, oracle_sequences

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SIZES = [1, 2, 3, 4] if NO_JIT else [1, 2, 3, 4, 5, pytest.param(6, marks=pytest.mark.slow)]
PROJECTIVE = ("arc_standard", "arc_eager", "arc_eager_unshift", "arc_hybrid")
# Each example replays whole sequences through the API: a quarter of the profile's examples.
FEW = settings(max_examples=max(10, settings().max_examples // 4))
ORACLES = [(name, {}) for name in PROJECTIVE] + [
    ("swap", {"swap_oracle": "lazy"}),
    ("swap", {"swap_oracle": "eager"}),
]


def check_rebuilds(system, trees, labels=None):
    """Runs the oracle, replays its actions through the API checking every recorded row."""
    trees = [np.asarray(t, dtype=np.int64) for t in trees]
    if labels is None:
        labels = [np.concatenate([[-1], 100 + np.arange(1, len(t))]) for t in trees]
    width = max(len(t) for t in trees)
    padded = np.array([np.pad(row, (0, width - len(row)), constant_values=-1) for row in labels])
    seq = oracle_sequences(system, trees, labels, n_stack=3, n_buffer=2)
    configs = system.initial([len(t) - 1 for t in trees])
    steps = np.diff(seq.offsets)
    for k in range(int(steps.max(initial=0))):
        active = steps > k
        rows = np.minimum(seq.offsets[:-1] + k, len(seq.actions) - 1)
        live = np.flatnonzero(active)
        np.testing.assert_array_equal(configs.positions(3, 2)[live], seq.positions[rows[live]])
        np.testing.assert_array_equal(system.legal(configs)[live], seq.legal[rows[live]])
        actions = np.where(active, seq.actions[rows], 0)
        arcs = system.arcs(configs, actions, active)
        expected = np.where(arcs[:, 1] >= 0, padded[np.arange(len(trees)), arcs[:, 1]], -1)
        np.testing.assert_array_equal(seq.labels[rows[live]], expected[live])
        system.apply(configs, actions, seq.labels[rows], active=active)
    heads, built_labels = system.tree(configs)
    for s, tree in enumerate(trees):
        n = len(tree) - 1
        np.testing.assert_array_equal(heads[s, : n + 1], tree)
        assert (heads[s, n + 1 :] == -1).all()
        given_by_transition = built_labels[s, 1 : n + 1] != -1
        np.testing.assert_array_equal(
            built_labels[s, 1 : n + 1][given_by_transition], labels[s][1:][given_by_transition]
        )
    return seq


@pytest.mark.parametrize(("name", "options"), ORACLES)
@pytest.mark.parametrize("n", SIZES)
def test_static_oracle_rebuilds_every_tree_of_its_class(name, options, n):
    system = get_system(name, **options)
    trees = reference.all_trees(n, single_root=True, only_projective=system.projective)
    seq = check_rebuilds(system, trees)
    steps = np.diff(seq.offsets)
    if name in ("arc_standard", "arc_hybrid"):
        assert (steps == 2 * n).all()
    if name == "arc_eager_unshift":
        assert (steps < 4 * n).all()
        assert system.transitions.index("UNSHIFT") not in seq.actions


@pytest.mark.parametrize("n", SIZES[:5])
def test_arc_eager_oracle_rebuilds_trees_with_several_words_on_root(n):
    trees = reference.all_trees(n, single_root=False, only_projective=True)
    check_rebuilds(get_system("arc_eager"), trees)


@pytest.mark.parametrize("n", SIZES)
def test_lazy_swap_never_swaps_more_than_eager_swap(n):
    trees = reference.all_trees(n, single_root=True, only_projective=False)
    lazy = oracle_sequences(get_system("swap", swap_oracle="lazy"), trees)
    eager = oracle_sequences(get_system("swap", swap_oracle="eager"), trees)
    assert (lazy.swaps <= eager.swaps).all()
    projective = np.array([reference.projective(t) for t in trees])
    assert (lazy.swaps[projective] == 0).all()
    assert (eager.swaps[projective] == 0).all()
    assert (eager.swaps[~projective] > 0).all()


@st.composite
def random_trees(draw, min_words=7, max_words=12):
    """A random single-rooted tree: words attached in a random order to already placed ones."""
    n = draw(st.integers(min_words, max_words))
    order = draw(st.permutations(range(1, n + 1)))
    heads = [-1] * (n + 1)
    heads[order[0]] = 0
    for i, word in enumerate(order[1:], start=1):
        heads[word] = order[draw(st.integers(0, i - 1))]
    return heads


@st.composite
def random_projective_trees(draw, min_words=7, max_words=12):
    """A random projective single-rooted tree: each span is a root plus adjacent sub-spans."""
    n = draw(st.integers(min_words, max_words))
    heads = [-1] * (n + 1)
    _span(draw, 1, n, 0, heads)
    return heads


def _span(draw, lo, hi, head, heads):
    root = draw(st.integers(lo, hi))
    heads[root] = head
    for start, stop in ((lo, root - 1), (root + 1, hi)):
        while start <= stop:
            end = draw(st.integers(start, stop))
            _span(draw, start, end, root, heads)
            start = end + 1


@FEW
@given(st.lists(random_projective_trees(), min_size=1, max_size=6))
@pytest.mark.parametrize("name", PROJECTIVE)
def test_static_oracle_rebuilds_random_projective_trees(name, trees):
    check_rebuilds(get_system(name), trees)


@FEW
@given(st.lists(random_trees(), min_size=1, max_size=6), st.sampled_from(["lazy", "eager"]))
def test_swap_oracles_rebuild_random_trees(trees, which):
    check_rebuilds(get_system("swap", swap_oracle=which), trees)


BAD_TREES = [
    ([-1, 2, 1], "word 1 .* on a cycle"),
    ([-1, 0, 5], "head 5 of word 2 is not another word or ROOT"),
    ([-1, 0, 2], "head 2 of word 2"),
    ([0, 0, 1], r"heads\[0\] must be -1"),
]


@pytest.mark.parametrize(("tree", "problem"), BAD_TREES)
@pytest.mark.parametrize("name", reference.SYSTEMS)
def test_not_a_tree_is_refused_naming_the_sentence(name, tree, problem):
    with pytest.raises(ValueError, match=f"sentence 1: {problem}"):
        oracle_sequences(get_system(name), [[-1, 0], tree])


@pytest.mark.parametrize("name", ["arc_standard", "arc_eager_unshift", "arc_hybrid", "swap"])
def test_several_roots_are_refused_by_single_root_systems(name):
    with pytest.raises(ValueError, match=f"sentence 0: 2 words on ROOT, but {name} builds"):
        oracle_sequences(get_system(name), [[-1, 0, 0]])


@pytest.mark.parametrize("name", PROJECTIVE)
def test_non_projective_tree_is_refused_pointing_to_projectivization(name):
    tree = [-1, 3, 4, 0, 3]  # 1 <- 3 crosses 2 <- 4
    with pytest.raises(ValueError, match=r"sentence 0: not projective .*transitions\.projective"):
        oracle_sequences(get_system(name), [tree])
