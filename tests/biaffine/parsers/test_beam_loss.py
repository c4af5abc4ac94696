"""The globally normalized beam loss: exact without pruning, early update, gradients.

The exact loss enumerates every complete transition sequence with the pure-Python reference of
the systems (``tests/transitions/reference.py``, no code shared with the kernels or the beam).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transitions
from biaffine.parsers.beam_loss import beam_losses

_SPEC = importlib.util.spec_from_file_location(
    "transitions_reference", Path(__file__).parents[2] / "transitions" / "reference.py"
)
reference = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(reference)

N_STACK, N_BUFFER = 3, 2
MAX_WORDS = 4


def table(seed: int, n_actions: int, n_sentences: int = 1) -> torch.Tensor:
    """Raw scores float64[B, P, P, P, A] over (row, s0, s1, b0); positions -1 read the last."""
    rng = np.random.default_rng(seed)
    size = MAX_WORDS + 2
    shape = (n_sentences, size, size, size, n_actions)
    return torch.tensor(rng.normal(scale=1.5, size=shape), dtype=torch.float64)


def table_scorer(weights: torch.Tensor):
    def score(rows: np.ndarray, positions: np.ndarray) -> torch.Tensor:
        p = torch.from_numpy(positions)
        return weights[torch.from_numpy(rows), p[:, 0], p[:, 1], p[:, N_STACK]]

    return score


def arc_table(seed: int, n: int, n_sentences: int = 1) -> torch.Tensor:
    rng = np.random.default_rng(seed + 1)
    logits = torch.tensor(rng.normal(scale=1.5, size=(n_sentences, n + 1, n + 1)))
    return torch.log_softmax(logits, -1)


def positions_of(state) -> np.ndarray:
    stack, buffer = state[0], state[1]
    slots = [stack[-1 - i] if i < len(stack) else -1 for i in range(N_STACK)]
    slots += [buffer[i] if i < len(buffer) else -1 for i in range(N_BUFFER)]
    return np.array([slots], dtype=np.int64)


def path_scores(system: str, n: int, weights: np.ndarray, arcs, gold_names: list[str]):
    """(scores float[P] of every complete path, the gold path's score) by enumeration.

    ``weights`` float[1, P, P, P, A] as :func:`table`, ``arcs`` float[1, n+1, n+1] or None.
    """
    names = transitions.get_system(system).transitions

    def arc_sum(before: tuple[int, ...], after: tuple[int, ...]) -> float:
        new = [d for d in range(1, n + 1) if after[d] != before[d]]
        return 0.0 if arcs is None else sum(float(arcs[0, d, after[d]]) for d in new)

    def step_score(state, name: str, nxt) -> float:
        s0, s1, _, b0, _ = positions_of(state)[0]
        return float(weights[0, s0, s1, b0, names.index(name)]) + arc_sum(state[2], nxt[2])

    def end_score(state) -> float:  # arcs of end-of-input rules (leftovers on ROOT)
        return arc_sum(state[2], reference.tree(system, state))

    complete: list[float] = []

    def walk(state, total: float) -> None:
        if reference.terminal(system, state):
            complete.append(total + end_score(state))
            return
        for name, nxt in reference.moves(system, state).items():
            walk(nxt, total + step_score(state, name, nxt))

    start = reference.initial(system, n)
    walk(start, 0.0)
    state, gold = start, 0.0
    for name in gold_names:
        nxt = reference.moves(system, state)[name]
        gold, state = gold + step_score(state, name, nxt), nxt
    assert reference.terminal(system, state)
    return np.array(complete), gold + end_score(state)


def oracle(system: transitions.TransitionSystem, gold_trees: list[tuple[int, ...]]):
    return transitions.oracle_sequences(system, [np.array(t) for t in gold_trees])


def gold_tree(system: transitions.TransitionSystem, n: int, pick: int) -> tuple[int, ...]:
    trees = reference.all_trees(n, single_root=True, only_projective=system.projective)
    return trees[pick % len(trees)]


@pytest.mark.parametrize("system_name", transitions.SYSTEM_NAMES)
@pytest.mark.parametrize("with_arcs", [False, True])
@given(n=st.integers(1, MAX_WORDS), seed=st.integers(0, 999), pick=st.integers(0, 999))
@settings(max_examples=8, deadline=None)  # each example enumerates every path
def test_a_beam_that_never_prunes_gives_the_exact_global_nll(
    system_name: str, with_arcs: bool, n: int, seed: int, pick: int
) -> None:
    system = transitions.get_system(system_name)
    weights = table(seed, len(system.transitions))
    arcs = arc_table(seed, n) if with_arcs else None
    tree = gold_tree(system, n, pick)
    gold = oracle(system, [tree])
    found = beam_losses(
        system, np.array([n]), gold, table_scorer(weights), beam_size=4096, arc_scores=arcs
    )
    names = [system.transitions[a] for a in gold.actions]
    plain_arcs = None if arcs is None else arcs.numpy()
    complete, gold_score = path_scores(system_name, n, weights.numpy(), plain_arcs, names)
    expected = np.logaddexp.reduce(complete) - gold_score
    assert not found.early[0]
    assert found.updated_at[0] >= len(names)  # the longest path the beam held
    assert found.losses[0].item() == pytest.approx(expected, abs=1e-9)


def test_early_update_happens_where_the_gold_falls_off() -> None:
    # Arc-hybrid, three words, gold tree 0 -> 2, 2 -> 1, 2 -> 3: SHIFT, LEFT-ARC, SHIFT, SHIFT,
    # RIGHT-ARC, RIGHT-ARC. Scores read the configuration through (s0, s1, b0): SHIFT wins
    # everywhere (2 against -5) but in ([0, 1], [2, 3]), the gold's second step, where LEFT-ARC
    # scores 1 and SHIFT 3. With k = 1 the gold falls off at step 2; with k = 2 it stays.
    system = transitions.get_system("arc_hybrid")
    tree = (-1, 2, 0, 2)
    gold = oracle(system, [tree])
    assert [system.transitions[a] for a in gold.actions] == [
        "SHIFT", "LEFT-ARC", "SHIFT", "SHIFT", "RIGHT-ARC", "RIGHT-ARC",
    ]  # fmt: skip
    weights = torch.zeros(1, MAX_WORDS + 2, MAX_WORDS + 2, MAX_WORDS + 2, 3, dtype=torch.float64)
    weights[..., 0] = 2.0  # SHIFT
    weights[..., 1:] = -5.0
    weights[0, 1, 0, 2] = torch.tensor([3.0, 1.0, 0.0], dtype=torch.float64)  # s0=1 s1=0 b0=2
    narrow = beam_losses(system, np.array([3]), gold, table_scorer(weights), beam_size=1)
    assert narrow.early.tolist() == [True]
    assert narrow.updated_at.tolist() == [2]
    # The beam: SHIFT SHIFT (2 + 3); the gold prefix: SHIFT LEFT-ARC (2 + 1).
    expected = np.logaddexp(5.0, 3.0) - 3.0
    assert narrow.losses[0].item() == pytest.approx(expected, abs=1e-12)
    wide = beam_losses(system, np.array([3]), gold, table_scorer(weights), beam_size=2)
    assert wide.early.tolist() == [False]
    assert wide.updated_at.tolist() == [6]
    # A batch updates each sentence at its own step, as it would alone.
    two = oracle(system, [tree, (-1, 0, 1, 2)])
    both = beam_losses(
        system, np.array([3, 3]), two, table_scorer(weights.expand(2, -1, -1, -1, -1)), beam_size=1
    )
    assert both.early.tolist() == [True, False]
    assert both.updated_at.tolist() == [2, 6]
    assert both.losses[0].item() == pytest.approx(expected, abs=1e-12)
    assert both.losses[1].item() >= 0


@pytest.mark.parametrize("system_name", ["arc_hybrid", "arc_eager"])
@pytest.mark.parametrize("beam_size", [1, 2, 64])
def test_gradients_of_the_beam_loss(system_name: str, beam_size: int) -> None:
    system = transitions.get_system(system_name)
    n = 4
    weights = table(7, len(system.transitions), n_sentences=2).requires_grad_()
    arcs = arc_table(7, n, n_sentences=2).requires_grad_()
    gold = oracle(system, [(-1, 2, 0, 4, 2), (-1, 0, 1, 2, 3)])

    def losses(weights: torch.Tensor, arcs: torch.Tensor) -> torch.Tensor:
        found = beam_losses(
            system,
            np.array([n, n]),
            gold,
            table_scorer(weights),
            beam_size=beam_size,
            arc_scores=arcs,
        )
        return found.losses

    # The beam's choices are piecewise constant in the scores: gradcheck's small steps keep them.
    # Fast mode compares the Jacobian along random directions (the full one takes 1,800 runs).
    assert torch.autograd.gradcheck(losses, (weights, arcs), eps=1e-6, atol=1e-7, fast_mode=True)
    # And the losses depend on the arc scores and on transitions off the gold path.
    weights.grad = arcs.grad = None
    losses(weights, arcs).sum().backward()
    assert arcs.grad.abs().sum() > 0
    assert (weights.grad > 0).any()  # the gold's transitions
    assert (weights.grad < 0).any()  # the others'
