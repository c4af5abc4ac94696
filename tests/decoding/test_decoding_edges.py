"""Adversarial calls of the public decoding API: each once silently wrong or costly."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import decoding

SCORES = np.array([[0.0, 0.0, 0.0], [5.0, 0.0, -9.0], [5.0, -9.0, 0.0]])  # best: both on ROOT


@pytest.mark.parametrize("flag", [None, "no", "", 0, 1, 2.5, [True]])
@pytest.mark.parametrize(
    "call",
    [
        lambda flag: decoding.mst(SCORES, root_constraint=flag),
        lambda flag: decoding.mst(SCORES[None], root_constraint=flag),
        lambda flag: decoding.eisner(SCORES, root_constraint=flag),
        lambda flag: decoding.decode(SCORES, root_constraint=flag),
        lambda flag: decoding.kbest(SCORES, 2, root_constraint=flag),
        lambda flag: decoding.constrained(SCORES, root_constraint=flag),
        lambda flag: decoding.is_tree([-1, 0, 0], root_constraint=flag),
        lambda flag: decoding.is_tree([-1, 0, 0], projective=flag),
    ],
)
def test_flags_must_be_bools(call, flag) -> None:
    # root_constraint="no" was truthy (one root), None falsy (two roots), and every new type
    # compiled the kernels once more for itself.
    with pytest.raises(ValueError, match="must be True or False"):
        call(flag)


def test_numpy_bools_are_flags() -> None:
    np.testing.assert_array_equal(decoding.mst(SCORES, root_constraint=np.bool_(False)), [-1, 0, 0])
    np.testing.assert_array_equal(decoding.mst(SCORES, root_constraint=np.bool_(True))[0], -1)
    assert decoding.is_tree([-1, 0, 0], root_constraint=np.False_, projective=np.True_)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: decoding.constrained(SCORES, algorithm=["mst"]), r"^algorithm must be one of"),
        (
            lambda: decoding.constrained(SCORES, fixed_heads=[[-1], [1, 2], 0]),
            r"^fixed_heads cannot be read as a numpy array",
        ),
        (
            lambda: decoding.constrained(SCORES, forbidden=[[True], [False, True], []]),
            r"^forbidden cannot be read as a numpy array",
        ),
        (lambda: decoding.is_projective([[-1], [0, 1]]), r"^heads cannot be read as a numpy array"),
    ],
)
def test_arguments_of_the_wrong_kind_are_one_value_error_naming_them(call, message: str) -> None:
    # TypeError: unhashable type: 'list', and numpy's "inhomogeneous shape" naming no argument.
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("name", ["mst", "eisner", "greedy"])
def test_an_empty_batch_takes_an_empty_list_of_lengths(name: str) -> None:
    # [] reads as float64 and was refused as "lengths must hold integers".
    heads = getattr(decoding, name)(np.zeros((0, 4, 4)), [])
    assert heads.shape == (0, 4)


def test_decoding_from_several_threads_at_once_equals_decoding_alone() -> None:
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(40, 13, 13))
    lengths = rng.integers(1, 13, size=40)
    algorithms = ("mst", "eisner", "greedy")
    expected = {a: decoding.decode(scores, lengths, algorithm=a) for a in algorithms}
    best = decoding.kbest(scores[0], 4)
    failures: list[str] = []

    def work() -> None:
        for _ in range(3):
            for algorithm in algorithms:
                found = decoding.decode(scores, lengths, algorithm=algorithm)
                if not np.array_equal(found, expected[algorithm]):
                    failures.append(algorithm)
            if not np.array_equal(decoding.kbest(scores[0], 4).scores, best.scores):
                failures.append("kbest")

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
