"""K-best trees (Lawler's partition on the exact decoders) against brute-force enumeration."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import all_trees
import numpy as np
import oracle
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import FEASIBLE_KINDS, padded_batches, score_matrices

import decoding

ALGORITHMS = ["mst", "eisner"]
# The messages of a sentence without any tree: from the value checks, or from the search.
NO_TREE = (
    r"sentence 0: (no (projective |spanning )?tree|word \d+ has no finite head|no word can attach)"
)


def _check_against_brute_force(scores, k, algorithm, root_constraint):
    projective = algorithm == "eisner"
    expected = all_trees.trees(scores, single_root=root_constraint, projective=projective)
    if not expected:
        with pytest.raises(ValueError, match=NO_TREE):
            decoding.kbest(scores, k, algorithm=algorithm, root_constraint=root_constraint)
        return
    result = decoding.kbest(scores, k, algorithm=algorithm, root_constraint=root_constraint)
    count = min(k, len(expected))
    assert result.heads.shape == (count, len(scores))
    assert result.heads.dtype == np.int64
    assert result.scores.shape == (count,)
    slack = oracle.tolerance(scores)
    for heads, score in zip(result.heads, result.scores, strict=True):
        assert oracle.is_tree(heads, single_root=root_constraint, is_projective=projective)
        assert score == pytest.approx(oracle.weight(scores, heads), rel=0, abs=slack)
    assert len({tuple(heads) for heads in result.heads}) == count  # no tree twice
    assert np.all(np.diff(result.scores) <= slack)  # best first
    # Ties may come in any order, so compare the sorted scores with the brute-force top k.
    top = [weight for weight, _ in expected[:count]]
    np.testing.assert_allclose(result.scores, top, rtol=0, atol=slack)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(scores=score_matrices(max_words=5), k=st.integers(1, 12), root_constraint=st.booleans())
def test_kbest_scores_equal_brute_force_top_k(algorithm, scores, k, root_constraint):
    _check_against_brute_force(scores, k, algorithm, root_constraint)


@given(scores=score_matrices(max_words=5), root_constraint=st.booleans())
def test_kbest_eisner_with_a_huge_k_returns_every_projective_tree(scores, root_constraint):
    # The chart is sized by a count of the trees under the -inf masks: the count must be exact.
    _check_against_brute_force(scores, 10**9, "eisner", root_constraint)


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=12)
@given(
    scores=score_matrices(min_words=6, max_words=6),
    k=st.integers(1, 40),
    root_constraint=st.booleans(),
)
def test_kbest_scores_equal_brute_force_top_k_on_six_words(algorithm, scores, k, root_constraint):
    _check_against_brute_force(scores, k, algorithm, root_constraint)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("root_constraint", [True, False])
def test_kbest_with_k_beyond_the_count_returns_every_tree_once(algorithm, root_constraint):
    scores = np.random.default_rng(4).choice([0.0, 1.0, 2.0], size=(5, 5))  # heavy ties
    projective = algorithm == "eisner"
    expected = all_trees.trees(scores, single_root=root_constraint, projective=projective)
    result = decoding.kbest(
        scores, len(expected) + 5, algorithm=algorithm, root_constraint=root_constraint
    )
    assert {tuple(heads) for heads in result.heads} == {heads for _, heads in expected}
    assert len(result.heads) == len(expected)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_kbest_with_a_huge_k_returns_the_few_trees_that_exist(algorithm):
    # The Eisner chart sizes its lists by the number of trees, not by k.
    result = decoding.kbest(np.zeros((4, 4)), 10**12, algorithm=algorithm)
    assert len(result.scores) == (7 if algorithm == "eisner" else 9)


def test_kbest_eisner_with_k_beyond_int64_runs_compiled_as_interpreted() -> None:
    # k = 2**63 overflowed the compiled kernel's int64 (OverflowError) once a small k had
    # compiled it; interpreted, it ran.
    code = (
        "import numpy as np, decoding;"
        "print([len(decoding.kbest(np.zeros((4, 4)), k, algorithm='eisner').scores)"
        " for k in (3, 2**63, 2**100)])"
    )
    environment = {**os.environ, "ROOTPARSE_COMPILE": "foreground"}  # numba's JIT, no tiers
    done = subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, "[3, 7, 7]\n"), done.stderr


@pytest.mark.parametrize("k", [2**40, 2**63 - 1, 2**100])
def test_kbest_eisner_refuses_a_chart_beyond_the_machines_memory_by_sentence_and_k(k) -> None:
    # 70 words have more than 2**62 projective trees: k = 2**63 - 1 rounded up to 2**63 in the
    # float count and came back as a negative int64 ("negative dimensions not allowed"), and
    # k = 2**40 asked numpy for a 700,000 TiB chart (MemoryError, or the OOM killer short of it).
    batch = np.zeros((2, 71, 71))
    with pytest.raises(ValueError, match=r"^sentence 1: k=\d+ asks for \d+ projective trees, "):
        decoding.kbest(batch, k, algorithm="eisner", lengths=[3, 70])


def test_kbest_eisner_charts_take_at_most_half_of_the_machines_memory(monkeypatch) -> None:
    from decoding import _kbest

    monkeypatch.setattr(_kbest, "_memory_bytes", lambda: 2 * 128 * 11 * 11 * 20)
    monkeypatch.setattr(_kbest, "SMALLEST_REFUSED", 0)
    scores = np.random.default_rng(0).normal(size=(11, 11))
    assert len(decoding.kbest(scores, 20, algorithm="eisner").scores) == 20  # just fits
    with pytest.raises(ValueError, match=r"^sentence 0: k=21 asks for 21 projective trees"):
        decoding.kbest(scores, 21, algorithm="eisner")
    assert len(decoding.kbest(scores, 21).scores) == 21  # Lawler's lists grow with the trees


def test_kbest_mst_refuses_trees_beyond_the_memory_by_sentence_and_k(monkeypatch) -> None:
    # Lawler's search had no guard: k = 10**9 on 15 words grew past 4 GB in minutes, until the
    # process was killed, where Eisner's chart was refused at once.
    from decoding import _kbest

    batch = np.random.default_rng(0).normal(size=(2, 16, 16))
    with pytest.raises(ValueError, match=r"^sentence 1: k=1000000000 asks for 1000000000 trees"):
        decoding.kbest(batch, 10**9, lengths=[2, 15])
    # A sentence with fewer trees than k is asked for those alone: 3 words have 9 trees with
    # one root, 16 without.
    assert len(decoding.kbest(batch[0, :4, :4], 10**18).scores) == 9
    assert len(decoding.kbest(batch[0, :4, :4], 10**18, root_constraint=False).scores) == 16
    # The count is rounded, not cut: 9**7 trees of 8 words without the root constraint were
    # named 4782968 (a float a hair short); and 200 words' count overflowed exp with a warning.
    with pytest.raises(ValueError, match=r"^sentence 0: k=1000000000 asks for 4782969 trees"):
        decoding.kbest(np.zeros((9, 9)), 10**9, root_constraint=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(decoding.kbest(np.zeros((201, 201)), 2).scores) == 2
    per_tree = _kbest._LAWLER_TREE_BYTES + _kbest._LAWLER_SOLVED_BYTES * 16**2
    monkeypatch.setattr(_kbest, "_memory_bytes", lambda: 2 * 50 * per_tree)
    assert len(decoding.kbest(batch[1], 51).scores) == 51  # a small search is never refused
    monkeypatch.setattr(_kbest, "SMALLEST_REFUSED", 0)
    assert len(decoding.kbest(batch[1], 50).scores) == 50  # just fits
    with pytest.raises(ValueError, match=r"^sentence 0: k=51 asks for 51 trees, whose search"):
        decoding.kbest(batch[1], 51)


@pytest.mark.parametrize("root_constraint", [True, False])
def test_tree_count_is_the_number_of_trees_the_masks_leave(root_constraint: bool) -> None:
    from decoding import _kbest

    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        scores = rng.normal(size=(n + 1, n + 1))
        scores[rng.random(scores.shape) < 0.3] = -np.inf
        expected = len(all_trees.trees(scores, single_root=root_constraint))
        found = _kbest._tree_count(scores, root_constraint)
        assert found == pytest.approx(expected, abs=1e-6)
    assert _kbest._tree_count(np.zeros((400, 400)), root_constraint) == np.inf  # past float64


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


V1_NONE = "9223372036854771712\n"  # what cgroup v1 writes for no limit


@pytest.mark.parametrize(
    ("proc", "files", "free"),
    [
        # cgroup v1 (only v2 was read: a v1 container's limit was never seen), its own group
        (
            "4:memory:/a/b\n0::/\n",
            {
                "memory/a/b/memory.limit_in_bytes": "1000\n",
                "memory/a/b/memory.usage_in_bytes": "200\n",
                "memory/memory.limit_in_bytes": V1_NONE,
                "memory/memory.usage_in_bytes": "5000\n",
            },
            800,
        ),
        # ... and a group above it that holds less
        (
            "4:memory:/a/b\n",
            {
                "memory/a/b/memory.limit_in_bytes": V1_NONE,
                "memory/a/b/memory.usage_in_bytes": "200\n",
                "memory/a/memory.limit_in_bytes": "500\n",
                "memory/a/memory.usage_in_bytes": "400\n",
            },
            100,
        ),
        # a container that sees its own group at the root of the mount
        (
            "9:cpu,memory:/docker/abc\n",
            {"memory/memory.limit_in_bytes": "3000\n", "memory/memory.usage_in_bytes": "1000\n"},
            2000,
        ),
        # cgroup v2: its group's limit, and a parent's ("max" is none)
        (
            "0::/x/y\n",
            {
                "x/y/memory.max": "max\n",
                "x/y/memory.current": "10\n",
                "x/memory.max": "3000\n",
                "x/memory.current": "1000\n",
            },
            2000,
        ),
        # the inactive page cache is given back before memory is refused; never below 0
        (
            "0::/x\n",
            {
                "x/memory.max": "3000\n",
                "x/memory.current": "2900\n",
                "x/memory.stat": "anon 100\ninactive_file 1500\nactive_file 1300\n",
            },
            1600,
        ),
        (
            "4:memory:/a\n",
            {
                "memory/a/memory.limit_in_bytes": "1000\n",
                "memory/a/memory.usage_in_bytes": "1200\n",
                "memory/a/memory.stat": "cache 900\ntotal_inactive_file 100\n",
            },
            0,
        ),
        ("0::/x\n", {"x/memory.max": "max\n", "x/memory.current": "10\n"}, None),
        ("4:memory:/\n", {"memory/memory.limit_in_bytes": V1_NONE}, None),
        ("1:cpu:/\n", {}, None),
    ],
)
def test_kbest_eisner_reads_the_memory_left_under_cgroups_v1_and_v2(
    tmp_path: Path, proc: str, files: dict[str, str], free: int | None
) -> None:
    from decoding import memory

    write_files(tmp_path / "sys", files)
    write_files(tmp_path, {"cgroup": proc})
    assert memory.cgroup_free(tmp_path / "cgroup", tmp_path / "sys") == free


def test_kbest_eisner_reports_a_chart_that_did_not_fit_by_sentence_and_k(monkeypatch) -> None:
    # Under ulimit -v the chart passed the guard (the limit less nothing already mapped) and
    # numba's MemoryError was a traceback.
    from decoding import _kbest

    def no_memory(matrix, k, root_constraint):
        raise MemoryError("Allocation failed (probably too large).")

    monkeypatch.setattr(_kbest, "kbest_eisner_kernel", no_memory)
    with pytest.raises(ValueError, match=r"^sentence 0: k=3 asks for 3 projective .* did not fit"):
        decoding.kbest(np.zeros((5, 5)), 3, algorithm="eisner")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@given(scores=score_matrices(max_words=8, kinds=FEASIBLE_KINDS), root_constraint=st.booleans())
def test_kbest_first_tree_is_the_one_best_decoder_tree(algorithm, scores, root_constraint):
    best = decoding.kbest(scores, 1, algorithm=algorithm, root_constraint=root_constraint)
    decoder = decoding.mst if algorithm == "mst" else decoding.eisner
    np.testing.assert_array_equal(best.heads[0], decoder(scores, root_constraint=root_constraint))


def test_kbest_first_tree_equals_eisner_tree_under_near_ties():
    # Found by hypothesis: two single-rooted trees (root word 2 and root word 5) score
    # 5 + 5e-12 up to rounding. Eisner added the root arc first, the k-best chart last, so the
    # sums rounded apart and the two picked different trees.
    scores = np.ones((6, 6))
    for dep, head in [(1, 2), (2, 0), (2, 5), (3, 2), (4, 3), (5, 0), (5, 4)]:
        scores[dep, head] = 1.000000000002
    best = decoding.kbest(scores, 1, algorithm="eisner", root_constraint=True)
    np.testing.assert_array_equal(best.heads[0], decoding.eisner(scores, root_constraint=True))
    np.testing.assert_array_equal(best.heads[0], [-1, 2, 0, 2, 3, 4])


@given(
    scores=score_matrices(max_words=9, kinds=FEASIBLE_KINDS),
    k=st.integers(1, 8),
    root_constraint=st.booleans(),
)
def test_kbest_projective_scores_at_most_free_scores_rank_by_rank(scores, k, root_constraint):
    free = decoding.kbest(scores, k, root_constraint=root_constraint)
    projective = decoding.kbest(scores, k, algorithm="eisner", root_constraint=root_constraint)
    slack = oracle.tolerance(scores)
    assert len(projective.scores) <= len(free.scores)
    assert np.all(projective.scores <= free.scores[: len(projective.scores)] + slack)
    for heads in projective.heads:
        assert decoding.is_tree(heads, root_constraint=root_constraint, projective=True)
    if all(decoding.is_projective(heads) for heads in free.heads):
        # Then the free list is also the best projective one.
        np.testing.assert_allclose(projective.scores, free.scores, rtol=0, atol=slack)


@given(
    batch=padded_batches(max_words=5),
    k=st.integers(1, 4),
    algorithm=st.sampled_from(ALGORITHMS),
    root_constraint=st.booleans(),
)
def test_kbest_batch_equals_one_sentence_at_a_time_despite_padding_garbage(
    batch, k, algorithm, root_constraint
):
    scores, lengths, sentences = batch
    options = {"algorithm": algorithm, "root_constraint": root_constraint}
    result = decoding.kbest(scores, k, lengths=lengths, **options)
    rows = result.scores.shape[1]
    assert result.heads.shape == (len(sentences), rows, scores.shape[1])
    assert result.scores.shape == (len(sentences), rows)
    counts = []
    for b, matrix in enumerate(sentences):
        alone = decoding.kbest(matrix, k, **options)
        count, n = len(alone.scores), len(matrix) - 1
        np.testing.assert_array_equal(result.heads[b, :count, : n + 1], alone.heads)
        np.testing.assert_array_equal(result.scores[b, :count], alone.scores)
        assert (result.heads[b, count:] == -1).all()
        assert (result.heads[b, :, n + 1 :] == -1).all()
        assert (result.scores[b, count:] == -np.inf).all()
        counts.append(count)
    assert rows == max(counts)


def test_kbest_second_tree_is_non_projective_only_with_mst():
    # The best tree is projective; the second (25) is not, so eisner's second scores only 24.
    scores = np.array(
        [
            [6.0, 0.0, 8.0, 9.0, 0.0],
            [6.0, 9.0, 1.0, 1.0, 1.0],
            [9.0, 4.0, 9.0, 0.0, 6.0],
            [6.0, 5.0, 6.0, 1.0, 0.0],
            [6.0, 8.0, 8.0, 7.0, 4.0],
        ]
    )
    free = decoding.kbest(scores, 3)
    np.testing.assert_array_equal(free.scores, [26.0, 25.0, 24.0])
    np.testing.assert_array_equal(free.heads[:2], [[-1, 0, 4, 2, 1], [-1, 0, 4, 1, 1]])
    projective = decoding.kbest(scores, 2, algorithm="eisner")
    np.testing.assert_array_equal(projective.scores, [26.0, 24.0])
    np.testing.assert_array_equal(projective.heads[0], [-1, 0, 4, 2, 1])
    assert decoding.is_tree(projective.heads[1], projective=True)  # two trees tie at 24


@pytest.mark.parametrize("algorithm", ["mst", "eisner"])
def test_kbest_of_an_empty_batch_is_empty(algorithm):
    # Like mst, eisner and greedy, which return heads int64[0, N+1] for an empty batch.
    found = decoding.kbest(np.zeros((0, 4, 4)), 3, algorithm=algorithm)
    assert found.heads.shape == (0, 0, 4)
    assert found.heads.dtype == np.int64
    assert found.scores.shape == (0, 0)
    assert found.scores.dtype == np.float64


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"k": 0}, "k must be a positive integer, got 0"),
        ({"k": 2.0}, "k must be a positive integer, got 2.0"),
        ({"k": True}, "k must be a positive integer, got True"),
        ({"k": 2, "algorithm": "greedy"}, "algorithm must be one of"),
        ({"k": 2, "lengths": [2]}, "lengths is only for batched scores"),
    ],
)
def test_kbest_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        decoding.kbest(np.zeros((3, 3)), **kwargs)


def test_kbest_names_the_sentence_with_nan_or_without_a_tree():
    batch = np.zeros((2, 4, 4))
    batch[1, 2, 1] = np.nan
    with pytest.raises(ValueError, match=r"sentence 1: NaN at scores\[1, 2, 1\]"):
        decoding.kbest(batch, 2)
    batch[1, 2, 1] = 0.0
    batch[1, 1, 1:] = batch[1, 3, 1:] = -np.inf  # words 1 and 3 can only hang from ROOT
    with pytest.raises(ValueError, match="sentence 1: no tree with a single root exists"):
        decoding.kbest(batch, 2)
    assert decoding.kbest(batch, 1000, root_constraint=False).scores.shape == (2, 16)
    batch[1, 1:, 1:] = -np.inf
    batch[1, 1:, 0] = 0.0
    with pytest.raises(ValueError, match="sentence 1: no projective tree with a single root"):
        decoding.kbest(batch, 2, algorithm="eisner")
