"""Dynamic-oracle costs (Goldberg & Nivre 2012, 2013) equal the loss found by brute force over
all completions, in every reachable configuration of small sentences."""

from __future__ import annotations

import os

import numpy as np
import pytest
import reference
from helpers import to_configs
from hypothesis import given, settings
from hypothesis import strategies as st
from test_static_oracle import random_projective_trees

from transitions import costs, get_system, oracle_sequences, zero_cost

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SYSTEMS = [
    ("arc_hybrid", {}),
    ("arc_eager", {"attach_leftovers": True}),
    ("arc_eager", {"attach_leftovers": False}),
]


def check_costs(name, options, gold):
    """Compares costs with best(before) - best(after) over every reachable configuration."""
    system = get_system(name, **options)
    n = len(gold) - 1
    graph = reference.reachable(name, n)
    best = reference.best_correct(name, tuple(gold), graph, system.attach_leftovers)
    states = list(graph)
    configs = to_configs(states, n)
    got = costs(system, configs, np.tile(gold, (len(states), 1)))
    for c, state in enumerate(states):
        expected = [
            best[state] - best[graph[state][t]] if t in graph[state] else -1
            for t in system.transitions
        ]
        assert got[c].tolist() == expected, (state, system.transitions)
        if graph[state]:
            assert (got[c] == 0).any()  # some transition always loses nothing


def _gold_trees(n, single_root):
    return reference.all_trees(n, single_root=single_root, only_projective=True)


@pytest.mark.parametrize(("name", "options"), SYSTEMS)
@pytest.mark.parametrize("n", [1, 2, 3] if NO_JIT else [1, 2, 3, 4])
def test_costs_equal_brute_force_loss_for_every_gold_tree(name, options, n):
    for gold in _gold_trees(n, single_root=name != "arc_eager"):
        check_costs(name, options, gold)


@settings(max_examples=max(5, settings().max_examples // 10))
@given(random_projective_trees(min_words=5, max_words=6), st.sampled_from(range(len(SYSTEMS))))
def test_costs_equal_brute_force_loss_on_longer_sentences(gold, which):
    name, options = SYSTEMS[which]
    check_costs(name, options, gold)


@pytest.mark.parametrize("name", ["arc_hybrid", "arc_eager"])
def test_static_oracle_path_costs_nothing(name):
    system = get_system(name)
    gold = np.array([-1, 2, 0, 4, 2, 4, 5])
    seq = oracle_sequences(system, [gold])
    configs = system.initial([6])
    for action in seq.actions:
        assert zero_cost(system, configs, gold[None])[0, action]
        system.apply(configs, [action])


def test_costs_refuse_systems_without_a_dynamic_oracle_and_bad_gold():
    configs = get_system("swap").initial([2])
    with pytest.raises(ValueError, match="swap has no dynamic oracle"):
        costs(get_system("swap"), configs, [[-1, 0, 1]])
    hybrid = get_system("arc_hybrid")
    with pytest.raises(ValueError, match="sentence 0: 2 words on ROOT"):
        costs(hybrid, hybrid.initial([2]), [[-1, 0, 0]])
    with pytest.raises(ValueError, match="sentence 0: not projective"):
        costs(hybrid, hybrid.initial([4]), [[-1, 3, 4, 0, 3]])
