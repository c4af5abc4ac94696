"""The kernels against the pure-Python reference on every reachable configuration, the trees
each system can build, Unshift's invariants, batch operations and refusals."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import reference
from helpers import to_configs, to_state

import transitions
from transitions import get_system

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"
SIZES = (1, 2, 3, 4) if NO_JIT else (1, 2, 3, 4, 5)
CLAIMS = {  # (single root, projective only) of the trees each system builds
    "arc_standard": (True, True),
    "arc_eager": (False, True),
    "arc_eager_unshift": (True, True),
    "arc_hybrid": (True, True),
    "swap": (True, False),
    "arc_eager_no_root": (False, True),
}


def kernel_system(name: str) -> transitions.TransitionSystem:
    """The kernels' system behind a reference name (arc_eager_no_root is an Unshift option)."""
    if name == "arc_eager_no_root":
        return get_system("arc_eager_unshift", attach_leftovers=True)
    return get_system(name)


@pytest.mark.parametrize("name", reference.VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_kernels_match_reference_on_every_reachable_configuration(name, n):
    system = kernel_system(name)
    assert to_state(system.initial([n]), 0) == reference.initial(name, n)
    graph = reference.reachable(name, n)
    states = list(graph)
    configs = to_configs(states, n)
    legal = system.legal(configs)
    terminal = system.terminal(configs)
    for c, state in enumerate(states):
        assert {system.transitions[a] for a in np.flatnonzero(legal[c])} == set(graph[state])
        assert terminal[c] == reference.terminal(name, state)
    rows, actions = np.nonzero(legal)
    children = configs.take(rows)
    arcs = system.arcs(children, actions)
    system.apply(children, actions, labels=actions + 10)
    for j, (c, a) in enumerate(zip(rows, actions, strict=True)):
        expected = graph[states[c]][system.transitions[a]]
        assert to_state(children, j) == expected
        head, dep = arcs[j]
        if dep >= 0:
            assert expected[2][dep] == head
            assert states[c][2][dep] == -1
            assert children.labels[j, dep] == a + 10
    done = np.flatnonzero(terminal)
    heads, _ = system.tree(configs.take(done))
    for row, c in enumerate(done):
        assert tuple(heads[row]) == reference.tree(name, states[c])


@pytest.mark.parametrize("name", reference.VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_reachable_terminal_trees_are_exactly_the_claimed_class(name, n):
    single_root, projective = CLAIMS[name]
    expected = reference.all_trees(n, single_root=single_root, only_projective=projective)
    assert reference.terminal_trees(name, n) == set(expected)


@pytest.mark.parametrize("n", SIZES)
def test_arc_eager_without_the_heuristic_leaves_leftovers_headless(n):
    graph = reference.reachable("arc_eager", n)
    finals = [s for s in graph if reference.terminal("arc_eager", s)]
    system = get_system("arc_eager", attach_leftovers=False)
    heads, _ = system.tree(to_configs(finals, n))
    for row, state in enumerate(finals):
        assert tuple(heads[row]) == reference.tree("arc_eager", state, attach_leftovers=False)
    assert any((h[1:] == -1).any() for h in heads)  # SHIFT to the end leaves all headless


@pytest.mark.parametrize("n", SIZES)
def test_unshift_takes_fewer_than_4n_transitions_and_is_deterministic_at_the_end(n):
    system = get_system("arc_eager_unshift")
    graph = reference.reachable("arc_eager_unshift", n)
    states = list(graph)
    configs = to_configs(states, n)
    legal = system.legal(configs)
    reduce_, unshift = system.transitions.index("REDUCE"), system.transitions.index("UNSHIFT")
    for c, (_stack, buffer, _, ended) in enumerate(states):
        if ended and not buffer and not reference.terminal("arc_eager_unshift", states[c]):
            assert legal[c, reduce_] != legal[c, unshift]
            assert legal[c].sum() == 1
    depth = {}
    for state in reversed(_topological(graph)):
        depth[state] = max((1 + depth[nxt] for nxt in graph[state].values()), default=0)
    assert depth[reference.initial("arc_eager_unshift", n)] < 4 * n


def _topological(graph):
    order, seen = [], set()
    for start in graph:
        stack = [(start, iter(graph[start].values()))]
        if start in seen:
            continue
        seen.add(start)
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                order.append(node)
                stack.pop()
            elif child not in seen:
                seen.add(child)
                stack.append((child, iter(graph[child].values())))
    return order[::-1]


@pytest.mark.parametrize("name", reference.SYSTEMS)
def test_illegal_transition_is_refused_with_the_configuration_shown(name):
    system = get_system(name)
    configs = system.initial([3, 2])
    before = configs.take([0, 1])
    with pytest.raises(ValueError, match=r"configuration 1: LEFT-ARC is illegal in stack="):
        system.apply(configs, [0, 1])  # nothing is applied, not even row 0's legal SHIFT
    for field in ("stack", "stack_size", "buffer", "buffer_size", "heads", "steps"):
        np.testing.assert_array_equal(getattr(configs, field), getattr(before, field))


@pytest.mark.parametrize("name", ["arc_eager", "arc_eager_unshift"])
def test_eager_refuses_reduce_of_a_headless_word(name):
    system = get_system(name)
    configs = system.initial([2])
    system.apply(configs, [0])
    with pytest.raises(ValueError, match=r"configuration 0: REDUCE is illegal in stack=\[.*1\]"):
        system.apply(configs, [system.transitions.index("REDUCE")])


def test_apply_rejects_unknown_ids_and_bad_shapes():
    system = get_system("arc_standard")
    configs = system.initial([2, 2])
    with pytest.raises(ValueError, match="configuration 1: action 3 is not an id"):
        system.apply(configs, [0, 3])
    with pytest.raises(ValueError, match=r"actions must be int\[2\]"):
        system.apply(configs, [0])
    with pytest.raises(ValueError, match="sentence 1: length 0"):
        system.initial([2, 0])


def test_inactive_rows_are_left_alone_and_tree_needs_terminal_rows():
    system = get_system("arc_hybrid")
    configs = system.initial([1, 2])
    system.apply(configs, [0, 0])
    system.apply(configs, [2, 0], active=np.array([True, False]))
    assert system.terminal(configs).tolist() == [True, False]
    assert configs.steps.tolist() == [2, 1]
    with pytest.raises(ValueError, match="configuration 1 is not terminal"):
        system.tree(configs)


def test_copy_rows_and_positions_for_a_beam():
    system = get_system("arc_standard")
    configs = system.initial([3, 3])
    system.apply(configs, [0, 0])
    system.apply(configs, [0, 0])
    system.apply(configs, [1, 2], labels=[7, 8])  # row 0: 2 -> 1, row 1: 1 -> 2
    np.testing.assert_array_equal(configs.positions(3, 2), [[2, 0, -1, 3, -1], [1, 0, -1, 3, -1]])
    configs.copy_rows([1, 0], [0, 1])  # swap the two rows
    assert configs.heads[0].tolist() == [-1, -1, 1, -1]
    assert configs.heads[1].tolist() == [-1, 2, -1, -1]
    assert configs.labels[0, 2] == 8
    assert configs.positions(1, 1).tolist() == [[1, 3], [2, 3]]


def test_registry_and_options():
    assert transitions.SYSTEM_NAMES == reference.SYSTEMS
    assert get_system("swap", swap_oracle="eager").lazy is False
    assert get_system("swap").lazy is True
    with pytest.raises(ValueError, match="unknown transition system 'arc_sideways'"):
        get_system("arc_sideways")
    with pytest.raises(ValueError, match="attach_leftovers is an option of arc_eager and"):
        get_system("arc_hybrid", attach_leftovers=False)
    with pytest.raises(ValueError, match="swap_oracle must be one of"):
        get_system("swap", swap_oracle="greedy")


def test_package_imports_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None; import transitions; "
        "print(transitions.__file__, transitions.get_system('swap'))"
    )
    root = Path(transitions.__file__).parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert out.stdout.split()[0] == transitions.__file__
