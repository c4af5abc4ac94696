"""Greedy and beam search: beam 1 is greedy, a wide beam is exact, every tree is well formed.

The exact best path is found by dynamic programming over the pure-Python reference's state graph
(`reference.py`, no code shared with the kernels), scored by the same callback as the search.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import reference
from hypothesis import given, settings
from hypothesis import strategies as st

import transitions
from decoding.trees import is_tree
from transitions import search
from transitions.search import beam_search, greedy_search

N_STACK, N_BUFFER = 3, 2
MAX_WORDS = 9


def table_scorer(seed: int, n_sentences: int, n_actions: int):
    """A deterministic ``score(rows, positions)``: a random table over (row, s0, s1, b0)."""
    rng = np.random.default_rng(seed)
    size = MAX_WORDS + 2  # positions 0..MAX_WORDS, and -1 reads the last entry
    table = rng.normal(scale=2.0, size=(n_sentences, size, size, size, n_actions))

    def score(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return table[rows, positions[:, 0], positions[:, 1], positions[:, N_STACK]]

    return score


def arc_table(seed: int, n_sentences: int, n: int) -> np.ndarray:
    """float[B, n+1, n+1] of log-probabilities (rows: dependents), as a graph parser gives."""
    rng = np.random.default_rng(seed + 1)
    logits = rng.normal(scale=2.0, size=(n_sentences, n + 1, n + 1))
    return logits - np.logaddexp.reduce(logits, axis=2, keepdims=True)


def positions_of(state: reference.State) -> np.ndarray:
    stack, buffer = state[0], state[1]
    slots = [stack[-1 - i] if i < len(stack) else -1 for i in range(N_STACK)]
    slots += [buffer[i] if i < len(buffer) else -1 for i in range(N_BUFFER)]
    return np.array([slots], dtype=np.int64)


def exact_best(
    system: str, n: int, score, arcs: np.ndarray | None, *, normalized: bool = True
) -> float:
    """The best path score over every complete transition sequence (DP on the state graph).

    Steps add their log-softmax over the legal transitions, or their raw score if not
    ``normalized``.
    """
    names = transitions.get_system(system).transitions

    def arc_gain(dep: int, head: int) -> float:
        return 0.0 if arcs is None else float(arcs[0, dep, head])

    @functools.cache
    def best(state: reference.State) -> float:
        if reference.terminal(system, state):
            heads = reference.tree(system, state)
            added = [d for d in range(1, n + 1) if heads[d] >= 0 and state[2][d] < 0]
            return sum(arc_gain(d, heads[d]) for d in added)
        nexts = reference.moves(system, state)
        raw = np.asarray(score(np.zeros(1, dtype=np.int64), positions_of(state)))[0]
        legal = [names.index(name) for name in nexts]
        log_z = np.logaddexp.reduce(raw[legal]) if normalized else 0.0
        total = -np.inf
        for name, nxt in nexts.items():
            new = [d for d in range(1, n + 1) if nxt[2][d] != state[2][d]]
            gain = sum(arc_gain(d, nxt[2][d]) for d in new)
            total = max(total, raw[names.index(name)] - log_z + gain + best(nxt))
        return total

    return best(reference.initial(system, n))


def tree_arc_score(heads: np.ndarray, arcs: np.ndarray, row: int) -> float:
    deps = np.flatnonzero(heads >= 0)
    return float(arcs[row, deps, heads[deps]].sum())


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(
    lengths=st.lists(st.integers(1, MAX_WORDS), min_size=1, max_size=5), seed=st.integers(0, 999)
)
def test_beam_of_one_is_greedy(system: str, lengths: list[int], seed: int) -> None:
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, len(lengths), len(transition_system.transitions))
    greedy = greedy_search(transition_system, lengths, score)
    beam = beam_search(transition_system, lengths, score, beam_size=1)
    np.testing.assert_array_equal(beam.heads, greedy.heads)
    np.testing.assert_array_equal(beam.steps, greedy.steps)
    np.testing.assert_allclose(beam.path_log_probs, greedy.path_log_probs, rtol=0, atol=1e-9)


def stepwise_greedy(system: transitions.TransitionSystem, lengths: list[int], score):
    """Greedy search through the checked public steps: legal, positions, apply on every row."""
    configs = system.initial(np.asarray(lengths))
    actions = np.zeros(len(configs), dtype=np.int64)
    log_probs = np.zeros(len(configs))
    while (active := ~system.terminal(configs)).any():
        rows = np.flatnonzero(active)
        raw = np.asarray(score(rows, configs.positions(N_STACK, N_BUFFER)[rows]), np.float64)
        legal = np.where(system.legal(configs)[rows], raw, -np.inf)
        shifted = legal - legal.max(1, keepdims=True)
        legal_scores = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
        actions[rows] = legal_scores.argmax(1)
        log_probs[rows] += legal_scores[np.arange(rows.size), actions[rows]]
        system.apply(configs, actions, None, active)
    return system.tree(configs)[0], log_probs, configs.steps


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(
    lengths=st.lists(st.integers(1, MAX_WORDS), min_size=1, max_size=6), seed=st.integers(0, 999)
)
def test_greedy_equals_the_checked_step_by_step_search(
    system: str, lengths: list[int], seed: int
) -> None:
    """The live-rows loop (observe, advance) takes the same steps, to the last bit."""
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, len(lengths), len(transition_system.transitions))
    found = greedy_search(transition_system, lengths, score)
    heads, log_probs, steps = stepwise_greedy(transition_system, lengths, score)
    np.testing.assert_array_equal(found.heads, heads)
    np.testing.assert_array_equal(found.steps, steps)
    assert found.path_log_probs.tobytes() == log_probs.tobytes()


def test_greedy_refuses_nan_scores_by_name() -> None:
    system = transitions.get_system("arc_hybrid")

    def nan(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.full((len(rows), len(system.transitions)), np.nan)

    # It said "SHIFT is illegal in stack=...": the NaN was picked, then refused as illegal.
    with pytest.raises(ValueError, match=r"returned nan at row 0, transition \d: a legal"):
        greedy_search(system, [3], nan)


@pytest.mark.parametrize("search", ["greedy", "beam"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_at_a_legal_transition_is_refused_by_name(search: str, bad: float) -> None:
    # arc_eager returned a tree with a NaN log-probability; beam search said every item died.
    system = transitions.get_system("arc_eager")

    def scores(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        found = np.zeros((len(rows), len(system.transitions)))
        found[:, 0] = bad
        return found

    run = {"greedy": greedy_search, "beam": functools.partial(transitions.beam_search, beam_size=2)}
    with pytest.raises(ValueError, match=rf"returned {bad} at row 0, transition 0: a legal"):
        run[search](system, [3], scores)


@pytest.mark.parametrize("normalized", [True, False])
def test_a_score_too_large_to_sum_is_refused_by_name(normalized: bool) -> None:
    # Raw scores of 1e308 summed to inf + -inf: a NaN candidate and a tree scoring inf.
    system = transitions.get_system("arc_hybrid")

    def scores(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.full((len(rows), len(system.transitions)), 1e308) * [1, -1, 1]

    with pytest.raises(ValueError, match=r"returned 1e\+308 at row 0, transition 0: .*1e\+300"):
        transitions.beam_search(system, [3, 2], scores, beam_size=2, normalized=normalized)


def test_arc_scores_too_low_to_sum_are_refused_not_blamed_on_inf() -> None:
    # Two arcs of -1e308 summed to -inf: "every item died on -inf scores", none given.
    system = transitions.get_system("arc_hybrid")
    with pytest.raises(ValueError, match=r"arc_scores must be .*at least -1e\+300"):
        transitions.beam_search(
            system,
            [3, 2],
            table_scorer(0, 2, 3),
            beam_size=2,
            arc_scores=np.full((2, 4, 4), -1e308),
        )


@pytest.mark.parametrize("bad", [np.complex128(1 + 2j), "1.0"])
def test_scores_that_are_no_real_numbers_are_refused(bad: object) -> None:
    # A complex score lost its imaginary part with a ComplexWarning; a string failed in numpy.
    system = transitions.get_system("arc_hybrid")

    def scores(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.full((len(rows), len(system.transitions)), bad)

    with pytest.raises(ValueError, match="the scorer's output must hold real numbers, got dtype"):
        greedy_search(system, [3], scores)


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
def test_observe_reads_the_legal_actions_and_positions_of_its_rows(system: str) -> None:
    transition_system = transitions.get_system(system)
    configs = transition_system.initial(np.array([4, 2, 5, 1]))
    rng = np.random.default_rng(0)
    for _ in range(4):  # a few random legal steps, so the rows differ
        active = ~transition_system.terminal(configs)
        legal = transition_system.legal(configs)
        actions = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in legal])
        transition_system.apply(configs, actions, None, active)
    rows = np.array([2, 0, 3])
    legal, positions = transition_system.observe(configs, rows, 2, 3)
    np.testing.assert_array_equal(legal, transition_system.legal(configs)[rows])
    np.testing.assert_array_equal(positions, configs.positions(2, 3)[rows])


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(
    lengths=st.lists(st.integers(1, MAX_WORDS), min_size=1, max_size=6), seed=st.integers(0, 999)
)
def test_greedy_trees_are_trees_the_system_can_build(
    system: str, lengths: list[int], seed: int
) -> None:
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, len(lengths), len(transition_system.transitions))
    found = greedy_search(transition_system, lengths, score)
    assert found.heads.shape == (len(lengths), max(lengths) + 1)
    single, projective = transition_system.single_root, transition_system.projective
    assert is_tree(found.heads, lengths, root_constraint=single, projective=projective).all()
    assert (found.path_log_probs <= 0).all()
    for row, n in enumerate(lengths):
        assert found.heads[row, 0] == -1
        assert (found.heads[row, n + 1 :] == -1).all()


@pytest.mark.slow  # minutes as plain Python: the JIT run covers it
@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@pytest.mark.parametrize("with_arcs", [False, True])
@given(n=st.integers(1, 4), seed=st.integers(0, 999))
@settings(max_examples=30)  # n <= 4 has few shapes; each example enumerates every path
def test_a_beam_that_never_prunes_finds_the_best_path(
    system: str, with_arcs: bool, n: int, seed: int
) -> None:
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, 1, len(transition_system.transitions))
    arcs = arc_table(seed, 1, n) if with_arcs else None
    found = beam_search(transition_system, [n], score, beam_size=4096, arc_scores=arcs)
    assert found.scores[0] == pytest.approx(exact_best(system, n, score, arcs), abs=1e-9)
    # The score is the path's log-probability plus the arc scores of the tree it built.
    extra = 0.0 if arcs is None else tree_arc_score(found.heads[0], arcs, 0)
    assert found.scores[0] == pytest.approx(found.path_log_probs[0] + extra, abs=1e-9)


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(n=st.integers(1, 3), seed=st.integers(0, 999))
@settings(max_examples=10)
def test_a_beam_that_never_prunes_finds_the_best_raw_path(system: str, n: int, seed: int) -> None:
    # A globally normalized model's search: raw scores, which may be positive, so no sentence
    # may stop at the first finished item (arc-eager's and swap's paths differ in length).
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, 1, len(transition_system.transitions))
    arcs = arc_table(seed, 1, n)
    found = beam_search(
        transition_system, [n], score, beam_size=4096, arc_scores=arcs, normalized=False
    )
    expected = exact_best(system, n, score, arcs, normalized=False)
    assert found.scores[0] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
@given(
    lengths=st.lists(st.integers(1, MAX_WORDS), min_size=1, max_size=5),
    beam_size=st.integers(1, 8),
    seed=st.integers(0, 999),
)
def test_beam_trees_are_trees_the_system_can_build(
    system: str, lengths: list[int], beam_size: int, seed: int
) -> None:
    transition_system = transitions.get_system(system)
    score = table_scorer(seed, len(lengths), len(transition_system.transitions))
    arcs = arc_table(seed, len(lengths), max(lengths))
    found = beam_search(transition_system, lengths, score, beam_size=beam_size, arc_scores=arcs)
    single, projective = transition_system.single_root, transition_system.projective
    assert is_tree(found.heads, lengths, root_constraint=single, projective=projective).all()
    assert (found.scores <= found.path_log_probs + 1e-12).all()  # arc scores are <= 0
    for row, n in enumerate(lengths):
        assert found.heads[row, 0] == -1
        assert (found.heads[row, n + 1 :] == -1).all()


@pytest.mark.slow  # minutes as plain Python: the JIT run covers it
@pytest.mark.parametrize("system", ["arc_eager", "swap", "arc_eager_unshift"])
@given(lengths=st.lists(st.integers(1, MAX_WORDS), min_size=2, max_size=5), seed=st.integers(0, 99))
def test_sentences_of_a_batch_do_not_interact(system: str, lengths: list[int], seed: int) -> None:
    transition_system = transitions.get_system(system)
    n_actions = len(transition_system.transitions)
    score = table_scorer(seed, len(lengths), n_actions)
    arcs = arc_table(seed, len(lengths), max(lengths))
    together = beam_search(transition_system, lengths, score, beam_size=4, arc_scores=arcs)
    for row, n in enumerate(lengths):

        def alone_score(rows, positions, row=row):
            return score(np.full_like(rows, row), positions)

        alone = beam_search(
            transition_system, [n], alone_score, beam_size=4, arc_scores=arcs[row : row + 1]
        )
        np.testing.assert_array_equal(alone.heads[0], together.heads[row, : n + 1])
        assert alone.scores[0] == together.scores[row]


def test_arc_eager_leftovers_on_root_pay_their_arc_score() -> None:
    system = transitions.get_system("arc_eager")
    n = 3
    # Always SHIFT: every word is left on the stack and put on ROOT at the end.
    score = lambda rows, _: np.tile([5.0, -50.0, -50.0, -50.0], (len(rows), 1))  # noqa: E731
    arcs = np.full((1, n + 1, n + 1), -1.0)
    arcs[0, :, 0] = -0.25
    found = beam_search(system, [n], score, beam_size=1, arc_scores=arcs)
    assert found.heads[0].tolist() == [-1, 0, 0, 0]
    assert found.scores[0] == pytest.approx(found.path_log_probs[0] - 0.75)


def test_bad_arguments_are_refused() -> None:
    system = transitions.get_system("arc_hybrid")
    score = table_scorer(0, 1, 3)
    with pytest.raises(ValueError, match="beam_size=0"):
        beam_search(system, [3], score, beam_size=0)
    with pytest.raises(ValueError, match="<= 0"):
        beam_search(system, [3], score, beam_size=2, arc_scores=np.ones((1, 4, 4)))
    with pytest.raises(ValueError, match="float\\[B, N\\+1, N\\+1\\]"):
        beam_search(system, [3], score, beam_size=2, arc_scores=np.zeros((1, 3, 3)))
    # The beam's rows were checked: "sentence 8" of a batch of two.
    with pytest.raises(ValueError, match=r"^sentence 1: length 0 is below 1$"):
        beam_search(system, [3, 0], score, beam_size=8)


def test_a_beam_wider_than_memory_is_refused_before_it_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # beam_size=10**8 was a MemoryError of 5.96 GiB, or the kernel's kill without a limit.
    monkeypatch.setattr(search, "available", lambda: 2**30)
    system = transitions.get_system("arc_hybrid")
    with pytest.raises(ValueError, match=r"^beam_size=100000000: 200,000,000 items would take"):
        beam_search(system, [3, 2], table_scorer(0, 2, 3), beam_size=10**8)
    beam_search(system, [3, 2], table_scorer(0, 2, 3), beam_size=1000)  # 0.4 MiB: never refused


@pytest.mark.parametrize(
    ("sentences", "problem"),
    [
        ([-1], r"sentences\[0\]=-1 is not one of the 2 sentences"),  # it ended the last
        ([2], r"sentences\[0\]=2 is not one of the 2 sentences"),  # an IndexError of row 4
        ([1.7], r"sentences must be int\[R\], got float64"),  # it ended sentence 1
    ],
)
def test_a_beam_drops_only_its_own_sentences(sentences: list, problem: str) -> None:
    beam = search.Beam(transitions.get_system("arc_hybrid"), [3, 2], 2)
    with pytest.raises(ValueError, match=problem):
        beam.drop(sentences)
    assert beam.live.tolist() == [True, False, True, False]


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(1, MAX_WORDS), min_size=1, max_size=6),
    seed=st.integers(0, 2**16),
)
def test_one_classifier_parses_with_the_heuristic_or_with_unshift(lengths, seed):
    # Nivre & Fernandez-Gonzalez (2014): the same greedy decisions up to the end of input, then
    # the heuristic stops where Unshift goes on; they differ only where several words are left.
    score = table_scorer(seed, len(lengths), 5)
    unshift = transitions.get_system("arc_eager_unshift")
    heuristic = transitions.get_system("arc_eager_unshift", attach_leftovers=True)
    seen: dict[str, list[list[tuple[int, ...]]]] = {}
    for name, system in (("unshift", unshift), ("heuristic", heuristic)):
        calls = seen[name] = [[] for _ in lengths]

        def recording(rows, positions, calls=calls):
            for row, slots in zip(rows, positions, strict=True):
                calls[row].append(tuple(slots))
            return score(rows, positions)

        configs, _ = transitions.greedy_configs(system, lengths, recording)
        if name == "unshift":
            unshift_heads = unshift.tree(configs)[0]
        else:
            heuristic_heads = heuristic.tree(configs)[0]
            stacks = [configs.stack[b, : configs.stack_size[b]] for b in range(len(lengths))]
            left = [int((configs.heads[b, stack] == -1).sum()) for b, stack in enumerate(stacks)]
            assert (configs.buffer_size == 0).all()
    for b, n in enumerate(lengths):
        steps = len(seen["heuristic"][b])
        assert seen["unshift"][b][:steps] == seen["heuristic"][b]
        assert left[b] >= 1
        assert (heuristic_heads[b, 1 : n + 1] == 0).sum() == left[b]
        assert is_tree(heuristic_heads[b, : n + 1]) == (left[b] == 1)
        if left[b] == 1:  # a complete tree at the end of input: Unshift only reduces
            np.testing.assert_array_equal(unshift_heads[b], heuristic_heads[b])
        else:
            assert len(seen["unshift"][b]) > steps


def test_a_beam_whose_items_all_die_on_forbidden_arcs_says_it_was_too_narrow() -> None:
    # Arc-standard, two words, 0 -> 2 forbidden: with ties going to the lower action id, beam 1
    # takes SHIFT SHIFT LEFT-ARC (2 -> 1) and can then only attach 2 to ROOT. Beam 2 keeps
    # RIGHT-ARC (1 -> 2) as well, which finishes the one finite tree.
    system = transitions.get_system("arc_standard")
    score = lambda rows, _: np.zeros((len(rows), 3))  # noqa: E731
    arcs = np.zeros((2, 3, 3))
    arcs[:, 2, 0] = -np.inf
    wide = beam_search(system, [2, 2], score, beam_size=2, arc_scores=arcs)
    assert wide.heads.tolist() == [[-1, 0, 1], [-1, 0, 1]]
    assert np.isfinite(wide.scores).all()
    with pytest.raises(ValueError, match=r"sentence 1 .*beam_size=1.*too narrow"):
        beam_search(system, [1, 2], score, beam_size=1, arc_scores=arcs)
    # One sentence alone or in a batch: the same tree, the same refusal.
    alone = beam_search(system, [2], score, beam_size=2, arc_scores=arcs[:1])
    np.testing.assert_array_equal(alone.heads[0], wide.heads[1])
    assert alone.scores[0] == wide.scores[1]
    with pytest.raises(ValueError, match=r"sentence 0 .*too narrow"):
        beam_search(system, [2], score, beam_size=1, arc_scores=arcs[:1])
