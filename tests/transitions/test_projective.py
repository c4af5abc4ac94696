"""Pseudo-projective lifting and its inverse against a pure-Python reference and real treebanks."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import decoding
from biaffine.data.conllu import read_conllu
from transitions.projective import (
    ProjectivityStats,
    deprojectivize,
    nonprojective_arcs,
    projectivity_stats,
    projectivize,
)

# --- an independent reference: definitions by dominance, in plain Python ---------------------


def _ancestors(heads: list[int], d: int) -> list[int]:
    """Proper ancestors of word d, nearest first, ending with ROOT (0)."""
    chain = []
    while d != 0:
        d = heads[d]
        chain.append(d)
    return chain


def _nonprojective(heads: list[int], d: int) -> bool:
    h = heads[d]
    return any(h not in _ancestors(heads, k) for k in range(min(h, d) + 1, max(h, d)))


def _reference_lift(heads: list[int]) -> list[int]:
    """Nivre & Nilsson's loop: lift the shortest, then leftmost, non-projective arc."""
    heads = list(heads)
    while True:
        arcs = [d for d in range(1, len(heads)) if _nonprojective(heads, d)]
        if not arcs:
            return heads
        d = min(arcs, key=lambda d: (abs(heads[d] - d), min(heads[d], d)))
        heads[d] = heads[heads[d]]


def _all_trees(n: int) -> list[list[int]]:
    """Every tree of n words rooted at 0 (several words on ROOT allowed)."""
    trees = []
    for combo in itertools.product(range(n + 1), repeat=n):
        heads = [-1, *combo]
        if all(heads[d] != d for d in range(1, n + 1)) and decoding.is_tree(
            heads, root_constraint=False
        ):
            trees.append(heads)
    return trees


SMALL_TREES = [t for n in range(1, 6) for t in _all_trees(n)]


@st.composite
def trees(draw: st.DrawFn, max_words: int = 7) -> list[int]:
    """Random trees: word order shuffled, each word attached to an earlier one in that order."""
    n = draw(st.integers(1, max_words))
    order = draw(st.permutations(range(1, n + 1)))
    single = draw(st.booleans())
    heads = [-1] * (n + 1)
    for i, word in enumerate(order):
        heads[word] = draw(st.sampled_from(order[:i] if single and i else [0, *order[:i]]))
    return heads


def _unique_labels(n: int) -> list[str]:
    return [f"r{d}" for d in range(1, n + 1)]


# --- lifting ---------------------------------------------------------------------------------


def test_small_trees_cover_both_root_kinds():
    assert len(SMALL_TREES) == sum((n + 1) ** (n - 1) for n in range(1, 6))  # Cayley


def test_every_small_tree_lifts_like_the_reference():
    for heads in SMALL_TREES:
        n = len(heads) - 1
        crossing = [_nonprojective(heads, d) for d in range(1, n + 1)]
        assert nonprojective_arcs(heads).tolist() == [False, *crossing], heads
        assert any(crossing) is not decoding.is_projective(heads), heads
        lifted = projectivize(heads, _unique_labels(n)).heads.tolist()
        assert lifted == _reference_lift(heads), heads


@given(trees())
def test_lifting_agrees_with_the_reference(heads):
    assert projectivize(heads, _unique_labels(len(heads) - 1)).heads.tolist() == _reference_lift(
        heads
    )


@given(trees())
def test_projectivize_lifts_only_onto_ancestors_and_keeps_the_root_count(heads):
    n = len(heads) - 1
    labels = _unique_labels(n)
    lifted = projectivize(heads, labels)
    assert lifted.heads.dtype == np.int64
    assert decoding.is_tree(lifted.heads, root_constraint=False, projective=True)
    roots = heads.count(0)
    # One word on ROOT dominates every other word, so nothing can be lifted onto ROOT.
    if roots == 1:
        assert decoding.count_roots(lifted.heads) == 1
    else:
        assert decoding.count_roots(lifted.heads) >= roots
    crossing = nonprojective_arcs(heads)
    changed = lifted.heads != np.array(heads)
    assert not (crossing & ~changed).any()  # every non-projective arc moves
    assert lifted.n_lifted == changed.sum() <= lifted.n_lifts
    for d in range(1, n + 1):
        if changed[d]:
            assert lifted.heads[d] in _ancestors(heads, heads[d])
            assert lifted.deprels[d - 1] == f"{labels[d - 1]}|{labels[heads[d] - 1]}"
        else:
            assert lifted.deprels[d - 1] == labels[d - 1]


def test_ties_go_to_the_leftmost_arc():
    # 5 -> 2 and 1 -> 4 are both non-projective and both span 3 words; lifting 1 -> 4 first
    # (leftmost) gives 5 -> 4, lifting 5 -> 2 first would give 3 -> 4.
    heads = [-1, 2, 5, 0, 1, 3]
    lifted = projectivize(heads, ["a", "b", "root", "c", "d"])
    assert lifted.heads.tolist() == [-1, 2, 3, 0, 5, 3]
    assert lifted.deprels == ["a", "b|d", "root", "c|a", "d"]
    assert (lifted.n_lifted, lifted.n_lifts) == (2, 3)


def test_an_arc_is_lifted_onto_root_only_when_root_has_several_words():
    heads = [-1, 0, 0, 1]  # 1 -> 3 jumps over 2, a second word on ROOT
    lifted = projectivize(heads, ["a", "b", "c"])
    assert lifted.heads.tolist() == [-1, 0, 0, 0]
    assert lifted.deprels == ["a", "b", "c|a"]
    assert deprojectivize(lifted.heads, lifted.deprels)[0].tolist() == heads


def test_a_projective_tree_comes_back_unchanged():
    heads = np.array([-1, 2, 0, 2])
    lifted = projectivize(heads, ["nsubj", "root", "obj"])
    assert lifted.heads.tolist() == heads.tolist()
    assert lifted.heads is not heads
    assert (lifted.deprels, lifted.n_lifted, lifted.n_lifts) == (["nsubj", "root", "obj"], 0, 0)


# --- deprojectivization ----------------------------------------------------------------------


def test_every_small_tree_with_unique_labels_round_trips():
    for heads in SMALL_TREES:
        labels = _unique_labels(len(heads) - 1)
        lifted = projectivize(heads, labels)
        restored, restored_labels = deprojectivize(lifted.heads, lifted.deprels)
        assert restored.tolist() == heads, heads
        assert restored_labels == labels, heads


@given(trees(), st.sampled_from(["|", "@@", "+"]))
def test_unique_labels_round_trip_with_any_separator(heads, separator):
    # Unique labels make the head encoding unambiguous: exactly one word carries each label.
    labels = [f"x|{d}" if separator != "|" else f"x{d}" for d in range(1, len(heads))]
    lifted = projectivize(heads, labels, separator=separator)
    restored, restored_labels = deprojectivize(lifted.heads, lifted.deprels, separator=separator)
    assert restored.tolist() == heads
    assert restored_labels == labels


@given(trees(), st.data())
def test_ambiguous_labels_still_give_a_tree_with_the_labels_back(heads, data):
    n = len(heads) - 1
    labels = data.draw(st.lists(st.sampled_from("ab"), min_size=n, max_size=n))
    lifted = projectivize(heads, labels)
    restored, restored_labels = deprojectivize(lifted.heads, lifted.deprels)
    assert decoding.is_tree(restored, root_constraint=heads.count(0) == 1)
    assert restored_labels == labels
    for d in np.flatnonzero(restored != np.array(heads)):
        assert labels[restored[d] - 1] == labels[heads[d] - 1] or restored[d] == lifted.heads[d]


@given(trees(), st.data())
def test_deprojectivize_turns_any_parse_into_a_tree(heads, data):
    n = len(heads) - 1
    labels = data.draw(
        st.lists(
            st.sampled_from(["a", "b", "a|b", "b|a", "a|c", "|", "a|"]), min_size=n, max_size=n
        )
    )
    restored, restored_labels = deprojectivize(heads, labels)
    assert decoding.is_tree(restored, root_constraint=False)
    roots = decoding.count_roots(restored)
    assert roots == 1 if heads.count(0) == 1 else roots <= heads.count(0)
    assert restored_labels == [label.partition("|")[0] for label in labels]


def test_search_is_breadth_first_and_left_to_right():
    # Word 5 lifted to 1 wants a head labelled "x": 2 and 4 qualify at depth 1 (2 is leftmost),
    # 3 at depth 2.
    heads = [-1, 0, 1, 2, 1, 1]
    labels = ["root", "x", "x", "x", "d|x"]
    assert deprojectivize(heads, labels)[0].tolist() == [-1, 0, 1, 2, 1, 2]
    heads = [-1, 0, 1, 2, 1, 1]
    labels = ["root", "y", "x", "x", "d|x"]
    assert deprojectivize(heads, labels)[0].tolist() == [-1, 0, 1, 2, 1, 4]


def test_search_never_enters_the_lifted_subtree_and_keeps_the_head_if_nothing_fits():
    heads = [-1, 0, 1, 1]  # 3's only candidate below 1 is 2, labelled "y"
    restored, labels = deprojectivize(heads, ["root", "y", "d|x"])
    assert (restored.tolist(), labels) == ([-1, 0, 1, 1], ["root", "y", "d"])
    heads = [-1, 0, 1, 2]  # 2 (lifted) may not attach below itself, to 3
    restored, labels = deprojectivize(heads, ["root", "d|x", "x"])
    assert (restored.tolist(), labels) == ([-1, 0, 1, 2], ["root", "d", "x"])


def test_labels_with_position_0_keep_it():
    heads = [-1, 3, 4, 0, 3]
    lifted = projectivize(heads, ["<root>", "a", "b", "root", "c"])
    assert lifted.deprels == ["<root>", "a", "b|c", "root", "c"]
    restored, labels = deprojectivize(lifted.heads, lifted.deprels)
    assert (restored.tolist(), labels) == (heads, ["<root>", "a", "b", "root", "c"])


# --- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("heads", "deprels", "kwargs", "message"),
    [
        ([0, 0], ["root"], {}, r"heads\[0\] must be -1"),
        ([-1], [], {}, "n >= 1 words"),
        ([[-1, 0]], ["root"], {}, "shape"),
        ([-1.0, 0.0], ["root"], {}, "integers"),
        ([-1, 0, 3], ["root", "a"], {}, r"heads\[2\]=3 is not a head in 0..2"),
        ([-1, 0, 2], ["root", "a"], {}, r"heads\[2\]=2"),
        ([-1, 0, 3, 2], ["root", "a", "b"], {}, "cycle"),
        ([-1, 0, 1], ["root"], {}, "str\\[n\\] or str\\[n\\+1\\] for n=2 words, got 1"),
        ([-1, 0, 1], ["root", 3], {}, "deprel of word 2 must be a str"),
        ([-1, 0, 1], ["root", "a|b"], {}, "'a|b' of word 2 contains the separator '|'"),
        ([-1, 0, 1], ["root", "a+b"], {"separator": "+"}, "contains the separator"),
        ([-1, 0, 1], ["root", "a"], {"separator": ""}, "non-empty"),
        ([-1, 0, 1], ["root", "a"], {"encoding": "path"}, "encoding must be one of"),
    ],
)
def test_projectivize_rejects_bad_input(heads, deprels, kwargs, message):
    with pytest.raises(ValueError, match=message):
        projectivize(heads, deprels, **kwargs)


def test_deprojectivize_and_nonprojective_arcs_reject_non_trees():
    with pytest.raises(ValueError, match="cycle"):
        deprojectivize([-1, 2, 1], ["a", "b"])
    with pytest.raises(ValueError, match="encoding"):
        deprojectivize([-1, 0], ["a"], encoding="Head")
    with pytest.raises(ValueError, match=r"heads\[1\]=5"):
        nonprojective_arcs([-1, 5])


# --- treebank statistics ---------------------------------------------------------------------


def test_projectivity_stats_counts_a_small_treebank():
    stats = projectivity_stats(
        [
            ([-1, 2, 0, 2], ["nsubj", "root", "obj"]),  # projective
            ([-1, 2, 5, 0, 1, 3], ["a", "b", "root", "c", "d"]),  # the tie example
            ([-1, 0, 1, 2, 2], ["root", "x", "x", "x"]),  # projective
        ]
    )
    assert stats == ProjectivityStats(
        sentences=3,
        words=12,
        nonprojective_sentences=1,
        nonprojective_arcs=2,
        lifted_arcs=2,
        lifts=3,
        restored_arcs=2,
        restored_nonprojective_arcs=2,
        exact_sentences=1,
    )
    assert stats.recovered == 1.0
    assert ProjectivityStats().recovered == 1.0


def test_projectivity_stats_names_the_bad_sentence():
    with pytest.raises(ValueError, match="sentence 1: heads has a cycle"):
        projectivity_stats([([-1, 0], ["root"]), ([-1, 2, 1], ["a", "b"])])


def test_projectivity_stats_counts_ambiguous_losses():
    # 4 -> 1 crosses 2 -> 3 (5 is on ROOT); lifted to 2 it finds 3 ("x", depth 1) before 4.
    heads = [-1, 4, 5, 2, 2, 0]
    stats = projectivity_stats([(heads, ["d", "obj", "x", "x", "root"])])
    assert (stats.nonprojective_arcs, stats.restored_nonprojective_arcs) == (1, 0)
    assert stats.recovered == 0.0


# --- every real UD tree ----------------------------------------------------------------------


def _round_trips(heads: list[int], labels: list[str]) -> bool:
    lifted = projectivize(heads, labels)
    restored, restored_labels = deprojectivize(lifted.heads, lifted.deprels)
    return restored.tolist() == heads and restored_labels == labels


@pytest.mark.ud
@pytest.mark.slow
def test_every_ud_tree_round_trips_unless_its_head_labels_are_ambiguous(
    ud_root: Path, capsys: pytest.CaptureFixture[str]
):
    paths = sorted(ud_root.glob("UD_*/*.conllu"))
    assert paths, f"no UD_*/*.conllu files under {ud_root}"
    total = {"nonprojective": 0, "restored": 0}
    lines = []
    for path in paths:
        trees = [([-1, *s.heads], s.deprels) for s in read_conllu(path, require_trees=True)]
        stats = projectivity_stats(trees)
        total["nonprojective"] += stats.nonprojective_arcs
        total["restored"] += stats.restored_nonprojective_arcs
        lines.append(
            f"{path.name:32} {stats.nonprojective_sentences:4}/{stats.sentences:5} sentences"
            f" {stats.nonprojective_arcs:4} arcs {stats.lifted_arcs:4} lifted"
            f" {stats.recovered:6.1%} recovered"
        )
        for i, (heads, labels) in enumerate(trees):
            # A tree that does not round trip must do so once its labels are unique: the only
            # loss is a word with the encoded label met before the true head in the search.
            if not decoding.is_projective(heads) and not _round_trips(heads, labels):
                assert _round_trips(heads, [f"{r}{d}" for d, r in enumerate(labels)]), (path, i)
    recovered = total["restored"] / total["nonprojective"]
    with capsys.disabled():
        print("", *lines, f"all: {recovered:.1%} of {total['nonprojective']} arcs", sep="\n")
    assert recovered > 0.88
