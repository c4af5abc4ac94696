"""Adversarial calls of the public transitions API: each once silently wrong or a crash."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import transitions
from transitions import (
    Configs,
    SlotScorer,
    TransitionSystem,
    beam_search,
    costs,
    get_system,
    greedy_search,
)
from transitions import _kernels as kernels
from transitions.projective import projectivize


def _uniform(n_actions: int):
    def score(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.zeros((len(rows), n_actions))

    return score


def _state(configs: Configs) -> list[np.ndarray]:
    return [array.copy() for array in (*configs.kernel_state(), configs.steps)]


@pytest.mark.parametrize("rows", [[1], [-1], [0, 5], [[0]], [0.0]])
def test_observe_refuses_rows_outside_the_batch(rows: list) -> None:
    # rows=[1] of a one-row batch read memory past the arrays (a segfault); -1 wrapped around.
    system = transitions.get_system("arc_standard")
    configs = system.initial([3])
    with pytest.raises(ValueError, match="rows"):
        system.observe(configs, np.array(rows))


@pytest.mark.parametrize(
    ("rows", "actions", "message"),
    [
        ([0], [-1], "action -1 is not an id of arc_standard"),
        ([0], [3], "action 3 is not an id of arc_standard"),
        ([0], [0.0], "actions must be int"),
        ([0], [0, 0], "actions must be int"),
        ([2], [0], "rows\\[0\\]=2 is not a row"),
    ],
)
def test_advance_refuses_bad_rows_and_actions_and_changes_nothing(
    rows: list, actions: list, message: str
) -> None:
    # Action -1 indexed the action table from its end: RIGHT-ARC popped ROOT off the stack.
    system = transitions.get_system("arc_standard")
    configs = system.initial([3, 2])
    before = _state(configs)
    with pytest.raises(ValueError, match=message):
        system.advance(configs, np.array(rows), np.array(actions))
    for old, new in zip(before, _state(configs), strict=True):
        np.testing.assert_array_equal(old, new)


def test_advance_checks_each_action_against_its_configuration() -> None:
    # A legal mask kept from an earlier step was trusted: SHIFT on an empty buffer wrote the
    # next configuration's ROOT over (compiled) or raised an IndexError (Python).
    system = transitions.get_system("arc_standard")
    configs = system.initial([1, 1])
    rows = np.array([0])
    system.advance(configs, rows, np.array([0]))  # SHIFT
    before = _state(configs)
    with pytest.raises(ValueError, match=r"configuration 0: SHIFT is illegal in stack"):
        system.advance(configs, rows, np.array([0]))
    # Twice in one step: each action legal where the configuration stood.
    with pytest.raises(ValueError, match=r"rows\[1\]=1: a configuration given twice"):
        system.advance(configs, np.array([1, 1]), np.array([0, 0]))
    # The compiled kernel itself (the public call may run it as Python): the row it refuses.
    live, seen = np.empty(1, dtype=np.bool_), np.zeros(2, dtype=np.bool_)
    failed = kernels.advance_rows(
        system.code, system.table, rows, np.array([0]), configs.kernel_state(), configs.steps,
        live, seen,
    )  # fmt: skip
    assert failed == 0
    for old, new in zip(before, _state(configs), strict=True):
        np.testing.assert_array_equal(old, new)


def test_candidate_arcs_are_those_of_legal_actions_in_the_callers_mask() -> None:
    system = transitions.get_system("arc_standard")  # SHIFT, LEFT-ARC, RIGHT-ARC
    configs = system.initial([2, 3])
    everything = np.ones((2, 3), dtype=np.bool_)
    # Only SHIFT is legal at the start, and it makes no arc: the arcs were read off the stack.
    assert (system.candidate_arcs(configs, everything) == -1).all()
    with pytest.raises(ValueError, match=r"legal must be bool\[2, 3\], got bool \(1, 1\)"):
        system.candidate_arcs(configs, np.ones((1, 1), dtype=np.bool_))
    system.apply(configs, [0, 0])
    system.apply(configs, [0, 0])
    arcs = system.candidate_arcs(configs, everything)
    assert arcs[0].tolist() == [[-1, -1], [2, 1], [1, 2]]  # SHIFT illegal: the buffer is empty
    assert (system.candidate_arcs(configs) == arcs).all()
    mask = np.array([[True, False, True], [True, True, True]])
    assert system.candidate_arcs(configs, mask)[0].tolist() == [[-1, -1], [-1, -1], [1, 2]]


@pytest.mark.parametrize("name", ["arc_eager", "arc_hybrid"])
def test_costs_refuse_gold_narrower_than_the_sentence(name: str) -> None:
    # gold [[-1, 0]] for a 3-word sentence was cut to one word and its costs were returned.
    system = transitions.get_system(name)
    configs = system.initial([3])
    with pytest.raises(ValueError, match="configuration 0: gold has 2 columns"):
        costs(system, configs, [[-1, 0]])
    full = costs(system, configs, [[-1, 2, 0, 2]])
    assert full.shape == (1, len(system.transitions))


@pytest.mark.parametrize("name", transitions.SYSTEM_NAMES)
def test_searches_refuse_float_lengths_instead_of_truncating_them(name: str) -> None:
    # lengths=[2.7] parsed a 2-word sentence, although system.initial refuses floats.
    system = transitions.get_system(name)
    score = _uniform(len(system.transitions))
    with pytest.raises(ValueError, match="lengths must be int"):
        greedy_search(system, [2.7], score)
    with pytest.raises(ValueError, match="lengths must be int"):
        beam_search(system, [2.7], score, beam_size=2)


@pytest.mark.parametrize("name", transitions.SYSTEM_NAMES)
def test_an_empty_list_of_lengths_is_an_empty_batch_everywhere(name: str) -> None:
    system = transitions.get_system(name)
    score = _uniform(len(system.transitions))
    assert len(system.initial([])) == 0
    assert greedy_search(system, [], score).heads.shape[0] == 0
    assert beam_search(system, [], score, beam_size=3).heads.shape[0] == 0


@pytest.mark.parametrize(
    "run", [greedy_search, lambda *args: beam_search(*args, beam_size=2)], ids=["greedy", "beam"]
)
@pytest.mark.parametrize("extra", [(), (1,)])
def test_searches_refuse_scores_not_shaped_c_by_a(run, extra: tuple) -> None:
    # float[A] broadcast over every configuration: all sentences got one shared score row.
    system = transitions.get_system("arc_hybrid")
    n_actions = len(system.transitions)

    def score(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return np.arange(n_actions + sum(extra), dtype=np.float64)

    with pytest.raises(ValueError, match="returned shape"):
        run(system, [3, 2], score)


def test_apply_refuses_float_labels_instead_of_truncating_them() -> None:
    system: TransitionSystem = transitions.get_system("arc_standard")
    configs = system.initial([2])
    system.apply(configs, [0])
    system.apply(configs, [0])
    with pytest.raises(ValueError, match="labels must be int\\[1\\]"):
        system.apply(configs, [1], labels=[1.7])
    system.apply(configs, [1], labels=np.array([4], dtype=np.int32))
    assert configs.labels[0, 1] == 4


def test_attach_leftovers_that_is_no_bool_is_refused() -> None:
    # bool("no") is True: the heuristic was switched on by a request to switch it off.
    with pytest.raises(ValueError, match=r"attach_leftovers must be True, False or None, got 'no'"):
        get_system("arc_eager", attach_leftovers="no")
    assert get_system("arc_eager", attach_leftovers=np.bool_(False)).attach_leftovers is False


def test_labels_given_as_one_string_are_refused() -> None:
    # "abc" passed as three labels, one letter per word.
    with pytest.raises(ValueError, match=r"deprels must be a sequence of str, one per word"):
        projectivize(np.array([-1, 2, 0, 2]), "abc")


def test_greedy_search_refuses_a_configuration_whose_legal_scores_are_all_minus_inf() -> None:
    # NaN path log-probabilities and an arbitrary tree, or "SHIFT is illegal": argmax of a NaN
    # row took action 0.
    system = get_system("arc_standard")

    def score(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        scores = np.zeros((rows.size, 3))
        scores[:, 0] = -np.inf  # SHIFT forbidden: once the buffer is empty, nothing is legal
        scores[:, 1] = -np.inf
        return scores

    with pytest.raises(ValueError, match=r"configuration 0: every legal transition scored -inf"):
        greedy_search(system, [3], score)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"normalized": "no"}, r"normalized must be True or False, got 'no'"),  # read as True
        ({"beam_size": 2.5}, r"beam_size must be an integer, got 2\.5"),  # numpy's TypeError
        ({"beam_size": True}, r"beam_size must be an integer, got True"),
        ({"beam_size": 0}, r"beam_size=0 must be >= 1"),
        ({"n_stack": 2.0}, r"n_stack must be an integer, got 2\.0"),
        ({"n_buffer": -1}, r"n_buffer=-1 must be >= 0"),
    ],
)
def test_beam_search_refuses_options_of_the_wrong_kind(options: dict, message: str) -> None:
    system = get_system("arc_hybrid")
    settings = {"beam_size": 2} | options
    with pytest.raises(ValueError, match=message):
        beam_search(system, [3], _uniform(len(system.transitions)), **settings)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: transitions.oracle_sequences(s, [[-1, 0]], n_stack=2.5), "n_stack must be an"),
        (lambda s: transitions.oracle_sequences(s, [[-1, 0]], n_buffer="3"), "n_buffer must be"),
        (lambda s: transitions.oracle_sequences(s, [[-1, 0]], n_stack=True), "n_stack must be"),
        (lambda s: s.initial([3], max_words=3.5), "max_words must be an integer, got 3.5"),
        (lambda s: s.initial([], max_words=-1), "max_words=-1 must be >= 1"),
        (
            lambda s: greedy_search(
                s, [2], SlotScorer.of(np.zeros((1, 4, 5, 3)), *_zero_mlp(3)), n_stack=-1, n_buffer=6
            ),
            "n_stack=-1 must be >= 0",  # the compiled loop read shifted features instead
        ),
    ],
)
def test_counts_of_the_wrong_kind_are_refused_by_name(call, message: str) -> None:
    # numpy's TypeErrors and UFuncTypeErrors, True read as 1, a batch of width 0.
    with pytest.raises(ValueError, match=message):
        call(get_system("arc_hybrid"))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # A float row was truncated (1.7 copied row 1); rows past the batch an IndexError.
        (lambda c: c.copy_rows([1.7], [0]), r"^source must be int\[R\], got float64"),
        (lambda c: c.copy_rows([0], [2]), r"^target\[0\]=2 is not a row of the 2 "),
        (lambda c: c.take([0.0]), r"^rows must be int\[R\], got float64"),
        (lambda c: c.take([-1]), r"^rows\[0\]=-1 is not a row of the 2 "),
        (lambda c: c.take([[0], [1, 0]]), r"^rows cannot be read as a numpy array"),
    ],
)
def test_rows_to_copy_or_take_are_checked_by_name(call, message: str) -> None:
    configs = get_system("arc_hybrid").initial([3, 2])
    before = _state(configs)
    with pytest.raises(ValueError, match=message):
        call(configs)
    for was, now in zip(before, _state(configs), strict=True):
        np.testing.assert_array_equal(was, now)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: get_system(["swap"]), r"^unknown transition system \['swap'\]"),
        (
            lambda: costs(
                get_system("arc_hybrid"),
                get_system("arc_hybrid").initial([1, 2]),
                [[-1, 0], [-1, 0, 1]],
            ),
            r"^gold cannot be read as a numpy array",
        ),
    ],
)
def test_arguments_of_the_wrong_kind_are_one_value_error(call, message: str) -> None:
    # TypeError: unhashable type: 'list', and numpy's "inhomogeneous shape" not naming gold.
    with pytest.raises(ValueError, match=message):
        call()


def _zero_mlp(hidden: int) -> tuple:
    n_actions = len(get_system("arc_hybrid").transitions)
    return np.zeros(hidden), np.zeros((n_actions, hidden)), np.zeros(n_actions), 0.1


def test_a_system_given_by_name_to_the_oracle_is_named() -> None:
    with pytest.raises(TypeError, match=r"transitions\.get_system"):
        transitions.oracle_sequences("arc_hybrid", [[-1, 0]])


def test_arc_scores_that_require_grad_are_one_value_error() -> None:
    torch = pytest.importorskip("torch")
    arc_scores = torch.zeros((1, 3, 3), requires_grad=True)
    system = get_system("arc_hybrid")
    with pytest.raises(ValueError, match=r"arc_scores is a tensor that requires grad"):
        beam_search(
            system, [2], _uniform(len(system.transitions)), beam_size=2, arc_scores=arc_scores
        )


def test_the_projective_module_is_an_attribute_of_the_package() -> None:
    code = "import transitions; print(transitions.projective.projectivize.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout == "projectivize\n", done.stderr


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (  # word 1's label 2**64 - 1 became -1, "no label"
            lambda: transitions.oracle_sequences(
                get_system("swap"), [np.array([-1, 2, 0])], [np.array([0, 2**64 - 1, 3], "u8")]
            ),
            r"sentence 0: labels holds 18446744073709551615, beyond int64",
        ),
        (  # heads[0] = 2**64 - 1 was read as ROOT's -1
            lambda: transitions.oracle_sequences(
                get_system("swap"), [np.array([2**64 - 1, 2, 0], "u8")]
            ),
            r"sentence 0: heads holds 18446744073709551615, beyond int64",
        ),
        (
            lambda: projectivize(np.array([2**64 - 1, 2, 0], "u8"), ["root", "a", "b"]),
            r"^heads holds 18446744073709551615, beyond int64",
        ),
        (  # a TypeError that named no argument
            lambda: transitions.oracle_sequences(get_system("swap"), None),
            r"^trees must be a sequence of head vectors, got NoneType",
        ),
        (  # 'in <string>' requires string as left operand
            lambda: projectivize(np.array([-1, 2, 0]), ["root", "a", "b"], separator=3),
            r"^separator must be a non-empty string, got 3",
        ),
        (  # an IndexError; -1 described the last row
            lambda: get_system("arc_hybrid").initial([2, 3]).describe(5),
            r"^row=5 is not a row of the 2 configurations",
        ),
        (
            lambda: get_system("arc_hybrid").initial([2, 3]).describe(-1),
            r"^row=-1 is not a row of the 2 configurations",
        ),
    ],
)
def test_values_beyond_int64_and_misfit_arguments_are_one_value_error(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def _arc_standard_after_two_shifts() -> tuple[TransitionSystem, Configs]:
    system = get_system("arc_standard")
    configs = system.initial([2])
    system.apply(configs, [0])
    system.apply(configs, [0])
    return system, configs


def test_a_label_beyond_int64_given_to_apply_is_refused_not_wrapped() -> None:
    # 2**64 - 1 became -1, "no label", on the arc it made (the round-2 review's sibling).
    system, configs = _arc_standard_after_two_shifts()
    with pytest.raises(ValueError, match=r"^labels holds 18446744073709551615, beyond int64"):
        system.apply(configs, [1], labels=np.array([2**64 - 1], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"^actions holds 18446744073709551615, beyond int64"):
        system.apply(configs, np.array([2**64 - 1], dtype=np.uint64))
    assert configs.heads.tolist() == [[-1, -1, -1]]  # nothing applied


@pytest.mark.parametrize(
    "call",
    [
        lambda: transitions.oracle_sequences(
            get_system("arc_standard"), [np.ma.masked_array([-1, 2, 0, 2], mask=[0, 0, 0, 1])]
        ),
        lambda: get_system("arc_standard").initial(np.ma.masked_array([3, 2], mask=[0, 1])),
        lambda: projectivize(np.ma.masked_array([-1, 2, 0], mask=[0, 1, 0]), ["root", "a", "b"]),
        lambda: transitions.oracle_sequences(
            get_system("arc_standard"),
            [np.array([-1, 2, 0])],
            [np.ma.masked_array([0, 1, 2], mask=[0, 1, 0])],
        ),
    ],
)
def test_a_masked_array_is_refused_rather_than_its_mask_ignored(call) -> None:
    # The masked values were read as any others: an oracle of a masked head, lengths [3, 2].
    with pytest.raises(ValueError, match="is a masked array, whose mask would be ignored"):
        call()


def test_describe_shows_the_row_asked_for() -> None:
    configs = get_system("arc_hybrid").initial([2, 3])
    assert configs.describe(1) == "stack=[0] buffer=[1, 2, 3] arcs=[]"
