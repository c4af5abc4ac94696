"""Constrained decoding (fixed heads, forbidden arcs, a root word) against brute force."""

from __future__ import annotations

import all_trees
import numpy as np
import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import FEASIBLE_KINDS, score_matrices

import decoding

ALGORITHMS = ["mst", "eisner"]
# Every message of a sentence that has no tree under its constraints or its -inf scores.
NO_TREE = r"no tree satisfies the constraints|has no finite head|no word can attach to ROOT"


@st.composite
def constraints(draw: st.DrawFn, n: int) -> dict:
    """Fixed heads (about 1 word in 3; cycles allowed), a forbidden mask and a root, each maybe."""
    kwargs = {}
    if draw(st.booleans()):
        fixed = [-1]
        for d in range(1, n + 1):
            heads = [h for h in range(n + 1) if h != d]
            fixed.append(draw(st.sampled_from(heads)) if draw(st.integers(0, 2)) == 0 else -1)
        kwargs["fixed_heads"] = np.array(fixed)
    if draw(st.booleans()):
        banned = draw(st.lists(st.integers(0, 5), min_size=(n + 1) ** 2, max_size=(n + 1) ** 2))
        kwargs["forbidden"] = (np.array(banned) == 0).reshape(n + 1, n + 1)
    if draw(st.booleans()):
        kwargs["root"] = draw(st.integers(1, n))
    return kwargs


def _satisfies(heads, fixed_heads=None, forbidden=None, root=None) -> bool:
    n = len(heads) - 1
    return (
        (fixed_heads is None or all(fixed_heads[d] in (-1, heads[d]) for d in range(1, n + 1)))
        and (forbidden is None or not any(forbidden[d, heads[d]] for d in range(1, n + 1)))
        and (root is None or heads[root] == 0)
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(data=st.data(), scores=score_matrices(max_words=5), root_constraint=st.booleans())
def test_constrained_weight_equals_best_brute_force_tree_that_keeps_the_constraints(
    algorithm, data, scores, root_constraint
):
    kwargs = data.draw(constraints(len(scores) - 1))
    projective = algorithm == "eisner"
    kept = [
        weight
        for weight, heads in all_trees.trees(
            scores, single_root=root_constraint, projective=projective
        )
        if _satisfies(heads, **kwargs)
    ]
    if not kept:
        with pytest.raises(ValueError, match=NO_TREE):
            decoding.constrained(
                scores, algorithm=algorithm, root_constraint=root_constraint, **kwargs
            )
        return
    heads = decoding.constrained(
        scores, algorithm=algorithm, root_constraint=root_constraint, **kwargs
    )
    assert heads.dtype == np.int64
    assert oracle.is_tree(heads, single_root=root_constraint, is_projective=projective)
    assert _satisfies(heads, **kwargs)
    assert oracle.weight(scores, heads) == pytest.approx(
        kept[0], rel=0, abs=oracle.tolerance(scores)
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(scores=score_matrices(max_words=8, kinds=FEASIBLE_KINDS), root_constraint=st.booleans())
def test_constrained_without_constraints_equals_the_plain_decoder(
    algorithm, scores, root_constraint
):
    decoder = decoding.mst if algorithm == "mst" else decoding.eisner
    np.testing.assert_array_equal(
        decoding.constrained(scores, algorithm=algorithm, root_constraint=root_constraint),
        decoder(scores, root_constraint=root_constraint),
    )


def test_constrained_root_keeps_the_classic_root_swap_trap():
    # The notes' instance (docs/root-constrained-mst.md): best single-rooted tree 0->1, 1->2, 1->3.
    scores = np.zeros((4, 4))
    scores[1, 0], scores[1, 2], scores[2, 1], scores[3, 0], scores[3, 1] = 10, 9, 10, 10, 5
    np.testing.assert_array_equal(decoding.constrained(scores), [-1, 0, 1, 1])
    np.testing.assert_array_equal(decoding.constrained(scores, root=3), [-1, 3, 1, 0])
    np.testing.assert_array_equal(
        decoding.constrained(scores, fixed_heads=[-1, -1, -1, 2]), [-1, 0, 1, 2]
    )


# A 4-word sentence with every arc allowed; each case below breaks it with its constraints.
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fixed_heads": [-1, 2, 3, 1, -1]}, "fixed heads form the cycle 3 -> 2 -> 1 -> 3"),
        ({"fixed_heads": [-1, 0, -1, 0, -1]}, "words 1 and 3 are fixed on ROOT, but root_cons"),
        ({"fixed_heads": [-1, 0, -1, -1, -1], "root": 4}, "words 1 and 4 are fixed on ROOT"),
        ({"fixed_heads": [-1, 3, -1, -1, -1], "root": 1}, "root word 1 has the fixed head 3"),
        ({"forbidden": np.eye(5, k=-2, dtype=bool), "root": 2}, r"root word 2 is forbidden"),
        ({"forbidden": np.eye(5, k=1, dtype=bool), "fixed_heads": [-1, 2, -1, -1, -1]}, "2 -> 1"),
        (
            {"forbidden": np.outer(np.arange(5) == 1, np.ones(5, bool))},
            "every head of word 1 is forbidden",
        ),
        (
            {"algorithm": "eisner", "fixed_heads": [-1, 3, 0, -1, -1]},
            "fixed arcs 3 -> 1 and 0 -> 2 cross, so no projective tree holds both",
        ),
    ],
)
def test_constrained_names_the_constraints_that_admit_no_tree(kwargs, message):
    scores = np.zeros((5, 5))
    with pytest.raises(ValueError, match=f"no tree satisfies the constraints: .*{message}"):
        decoding.constrained(scores, **kwargs)


def test_constrained_reports_a_fixed_arc_whose_score_is_minus_inf():
    scores = np.zeros((4, 4))
    scores[1, 3] = -np.inf
    with pytest.raises(ValueError, match=r"fixed arc 3 -> 1 is forbidden \(masked or -inf\)"):
        decoding.constrained(scores, fixed_heads=[-1, 3, -1, -1])


@pytest.mark.parametrize("root_constraint", [True, False])
def test_constrained_eisner_reports_masks_that_leave_only_non_projective_trees(root_constraint):
    scores = np.full((4, 4), -np.inf)  # only 0->2, 2->3, 3->1: arcs (0,2) and (1,3) cross
    scores[2, 0] = scores[3, 2] = scores[1, 3] = 1.0
    single = " with a single root" if root_constraint else ""
    with pytest.raises(ValueError, match=f"the masks leave no projective tree{single}$"):
        decoding.constrained(scores, algorithm="eisner", root_constraint=root_constraint)
    heads = decoding.constrained(scores, root_constraint=root_constraint, root=2)
    np.testing.assert_array_equal(heads, [-1, 3, 0, 2])


def test_constrained_two_roots_are_fine_without_the_root_constraint():
    scores = np.zeros((4, 4))
    heads = decoding.constrained(scores, root_constraint=False, fixed_heads=[-1, 0, -1, 0])
    assert heads[1] == heads[3] == 0
    assert decoding.is_tree(heads, root_constraint=False)


def cut_off_scores() -> np.ndarray:
    """Words 3 and 4 may take only each other as head: no tree at all, single-rooted or not."""
    scores = np.full((5, 5), -np.inf)
    scores[1:, 0] = 0
    scores[3, :] = scores[4, :] = -np.inf
    scores[3, 4] = scores[4, 3] = 0
    return scores


@pytest.mark.parametrize("root_constraint", [True, False])
def test_masks_that_cut_a_word_off_from_root_are_named_so_not_the_root_rule(root_constraint):
    # "the masks leave no tree with a single root", where none existed with several roots
    with pytest.raises(ValueError, match=r"the masks cut some word off from ROOT$"):
        decoding.constrained(cut_off_scores(), root_constraint=root_constraint)
    for algorithm in ("mst", "eisner"):
        with pytest.raises(ValueError, match=r"^sentence 0: no spanning tree exists: the -inf"):
            decoding.kbest(cut_off_scores(), 2, algorithm=algorithm, root_constraint=True)


def test_constrained_with_two_words_that_must_both_hang_from_root_has_no_single_rooted_tree():
    forbidden = np.zeros((3, 3), dtype=bool)
    forbidden[1, 2] = forbidden[2, 1] = True
    with pytest.raises(ValueError, match="the masks leave no tree with a single root"):
        decoding.constrained(np.zeros((3, 3)), forbidden=forbidden)
    np.testing.assert_array_equal(
        decoding.constrained(np.zeros((3, 3)), forbidden=forbidden, root_constraint=False),
        [-1, 0, 0],
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"algorithm": "greedy"}, "algorithm must be one of"),
        ({"fixed_heads": [-1, 0]}, r"fixed_heads must have shape \(4,\)"),
        ({"fixed_heads": [-1.0, 0.0, 0.0, 0.0]}, "fixed_heads must hold integers"),
        ({"fixed_heads": [0, -1, -1, -1]}, r"fixed_heads\[0\] must be -1"),
        ({"fixed_heads": [-1, 1, -1, -1]}, r"fixed_heads\[1\]=1: a word cannot head itself$"),
        (
            {"fixed_heads": [-1, 4, -1, -1]},
            r"fixed_heads\[1\]=4 is not -1 \(free\) or a head in 0..3$",
        ),
        ({"fixed_heads": [-1, 4, -1, -1]}, r"fixed_heads\[1\]=4"),
        ({"fixed_heads": [-1, -2, -1, -1]}, r"fixed_heads\[1\]=-2"),
        ({"forbidden": np.zeros((3, 3), dtype=bool)}, r"forbidden must have shape \(4, 4\)"),
        ({"forbidden": np.zeros((4, 4))}, "forbidden must be a bool mask"),
        ({"root": 0}, r"root=0 is outside the words 1..3"),
        ({"root": True}, "root must be a word index in 1..3, got True"),
        ({"root": 1.0}, "root must be a word index"),
    ],
)
def test_constrained_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        decoding.constrained(np.zeros((4, 4)), **kwargs)


def test_constrained_checks_scores_like_the_decoders():
    with pytest.raises(ValueError, match=r"one sentence, float\[n\+1, n\+1\]"):
        decoding.constrained(np.zeros((2, 4, 4)))
    scores = np.zeros((4, 4))
    scores[2, 3] = np.nan
    with pytest.raises(ValueError, match=r"NaN at scores\[2, 3\]"):
        # NaN is an error even in a row that a fixed head masks.
        decoding.constrained(scores, fixed_heads=[-1, -1, 0, -1])
