"""Tree CRF (Matrix-Tree theorem, Eisner inside): log Z, marginals and loss against brute force."""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from biaffine.nn import treecrf
from biaffine.nn.treecrf import log_partition, marginals, tree_log_prob, tree_score

# The decoding oracle's tree test, loaded by path: tests/decoding is not a package.
_SPEC = importlib.util.spec_from_file_location(
    "decoding_oracle", Path(__file__).parents[2] / "decoding" / "oracle.py"
)
oracle = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(oracle)

VARIANTS = list(itertools.product((True, False), (False, True)))  # (root_constraint, projective)


@functools.cache
def _trees(n: int, single_root: bool, projective: bool) -> np.ndarray:
    """int[T, n+1]: every tree of n words with the conditions (heads[0] = -1)."""
    trees = [
        [-1, *combo]
        for combo in itertools.product(range(n + 1), repeat=n)
        if oracle.is_tree([-1, *combo], single_root=single_root, is_projective=projective)
    ]
    return np.array(trees, dtype=np.int64).reshape(-1, n + 1)


def brute_force(scores: np.ndarray, single_root: bool, projective: bool):
    """(log Z, marginals float[n+1, n+1]) by enumerating every tree."""
    n = scores.shape[0] - 1
    trees = _trees(n, single_root, projective)
    words = np.arange(1, n + 1)
    with np.errstate(invalid="ignore"):
        weights = scores[words, trees[:, 1:]].sum(-1)  # [T]
    log_z = np.logaddexp.reduce(weights) if len(trees) else -np.inf
    probs = np.exp(weights - log_z) if np.isfinite(log_z) else np.zeros(len(trees))
    marginal = np.zeros_like(scores)
    np.add.at(marginal, (np.tile(words, len(trees)), trees[:, 1:].ravel()), np.repeat(probs, n))
    return log_z, marginal


def _one(scores: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(scores)[None], torch.tensor([len(scores) - 1])


@st.composite
def score_matrices(draw: st.DrawFn, max_words: int = 5) -> np.ndarray:
    """float64[n+1, n+1] of both signs, ties or -inf arcs; garbage in row 0 and the diagonal."""
    n = draw(st.integers(1, max_words))
    kind = draw(st.sampled_from(["normal", "positive", "ties", "masked"]))
    element = {
        "positive": st.floats(0.0, 10.0),
        "ties": st.sampled_from([0.0, 1.0]),
    }.get(kind, st.floats(-10.0, 10.0))
    size = (n + 1) ** 2
    scores = np.array(draw(st.lists(element, min_size=size, max_size=size))).reshape(n + 1, -1)
    if kind == "masked":
        forbid = draw(st.lists(st.integers(0, 3), min_size=size, max_size=size))
        scores[(np.array(forbid) == 0).reshape(n + 1, -1)] = -np.inf
    garbage = st.sampled_from([np.nan, np.inf, -np.inf, 1e300])
    scores[0] = draw(st.lists(garbage, min_size=n + 1, max_size=n + 1))
    np.fill_diagonal(scores, draw(st.lists(garbage, min_size=n + 1, max_size=n + 1)))
    return scores


def matrix_tree_tolerance(scores: np.ndarray, log_z: float, projective: bool) -> float:
    """How close float64 can bring log Z and the marginals to the truth, as the module says.

    The inside pass (projective) is exact: 1e-9. The determinant is singular up to exp(-G),
    where G is how far log Z lies below the score of every word's best head (a cycle each tree
    must break at that cost), so its rounding grows as n * eps * exp(G).
    """
    if projective:
        return 1e-9
    n = len(scores) - 1
    heads = scores[1:].copy()
    np.fill_diagonal(heads[:, 1:], -np.inf)  # the diagonal is garbage, never an arc
    gap = heads.max(1).sum() - log_z
    return 1e-9 + n * np.finfo(np.float64).eps * math.exp(min(gap, 700.0))


# Two sentences whose only trees break a cycle of best heads at 17 and 19 nats: float64 keeps
# log Z and the marginals to about 2e-8 there, not 1e-9 (found by CI's random examples).
NAN, INF = np.nan, np.inf
CYCLE_19 = [  # word 1 <-> word 3 (0 each); the one tree: 2 <- ROOT, 4 <- 2, 1 <- 4, 3 <- 1
    [NAN, NAN, NAN, NAN, NAN],
    [-INF, NAN, -INF, 0.0, -8.0],
    [0.0, -INF, NAN, -INF, -INF],
    [-INF, 0.0, -INF, NAN, -INF],
    [-INF, -INF, -9.0, 2.0, NAN],
]
CYCLE_17 = [  # word 3 <-> word 4 (0 and 9); the one tree: 2 <- ROOT, 4 <- 2, 1 <- 4, 3 <- 4
    [NAN, NAN, NAN, NAN, NAN],
    [-INF, NAN, -INF, -INF, 0.0],
    [0.0, -INF, NAN, -INF, -INF],
    [-INF, -INF, -INF, NAN, 0.0],
    [-INF, -INF, -8.0, 9.0, NAN],
]


@given(score_matrices(), st.sampled_from(VARIANTS))
@example(np.array(CYCLE_19), (False, False))
@example(np.array(CYCLE_17), (False, False))
def test_log_partition_and_marginals_equal_brute_force(scores, variant):
    root_constraint, projective = variant
    expected_z, expected_marginals = brute_force(scores, root_constraint, projective)
    batch, lengths = _one(scores)
    options = {"root_constraint": root_constraint, "projective": projective}
    log_z = float(log_partition(batch, lengths, **options)[0])
    probs = marginals(batch, lengths, **options)[0].numpy()
    if expected_z == -np.inf:
        assert log_z == -np.inf
        assert not probs.any()
        return
    tolerance = matrix_tree_tolerance(scores, expected_z, projective)
    assert log_z == pytest.approx(expected_z, rel=1e-9, abs=tolerance)
    np.testing.assert_allclose(probs, expected_marginals, rtol=0, atol=tolerance)


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_marginals_of_each_word_sum_to_one_and_leave_the_rest_zero(root_constraint, projective):
    scores = torch.randn(3, 8, 8, dtype=torch.float64) * 4
    lengths = torch.tensor([7, 4, 1])
    probs = marginals(scores, lengths, root_constraint=root_constraint, projective=projective)
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(probs[b, 1 : n + 1].sum(-1), torch.ones(n, dtype=torch.float64))
        assert not probs[b, n + 1 :].any()
        assert not probs[b, :, n + 1 :].any()
        assert not probs[b, 0].any()
        assert not probs[b].diagonal().any()
    if root_constraint:
        torch.testing.assert_close(probs[:, :, 0].sum(-1), torch.ones(3, dtype=torch.float64))


def test_orientation_rows_are_dependents():
    # Only 2 -> 1 and 0 -> 2 are likely: the single-root tree is 0 -> 2 -> 1.
    scores = torch.full((1, 3, 3), -20.0, dtype=torch.float64)
    scores[0, 1, 2] = scores[0, 2, 0] = 5.0
    probs = marginals(scores, torch.tensor([2]))[0]
    assert probs[1, 2] > 0.99
    assert probs[2, 0] > 0.99


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_sentence_whose_masks_leave_no_tree_has_minus_infinite_log_z_and_zero_marginals(
    root_constraint, projective
):
    scores = torch.zeros(2, 4, 4, dtype=torch.float64, requires_grad=True)
    masked = scores.clone()
    masked.data[0, 1:, 0] = -math.inf  # sentence 0: no word may take ROOT
    lengths = torch.tensor([3, 3])
    options = {"root_constraint": root_constraint, "projective": projective}
    log_z = log_partition(masked, lengths, **options)
    assert log_z[0] == -math.inf
    assert torch.isfinite(log_z[1])
    log_z[1].backward()
    assert torch.isfinite(scores.grad).all()
    assert not marginals(masked, lengths, **options)[0].any()


def test_cycle_forced_by_masks_is_infeasible():
    # Words 1 and 2 may only head each other: every head assignment is a cycle.
    scores = torch.full((1, 4, 4), -math.inf, dtype=torch.float64)
    scores[0, 1, 2] = scores[0, 2, 1] = 0.0
    scores[0, 3, 0] = 0.0
    for root_constraint in (True, False):
        log_z = log_partition(scores, torch.tensor([3]), root_constraint=root_constraint)
        assert log_z[0] == -math.inf


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
@pytest.mark.parametrize("value", [0.0, 1e3, -1e3])
def test_all_equal_scores_count_the_trees(root_constraint, projective, value):
    n = 6
    count = len(_trees(n, root_constraint, projective))
    if not projective:  # Cayley: (n+1)^(n-1) trees on ROOT + n words; n^(n-1) with one root
        assert count == (n ** (n - 1) if root_constraint else (n + 1) ** (n - 1))
    scores = torch.full((1, n + 1, n + 1), value, dtype=torch.float64)
    log_z = log_partition(
        scores, torch.tensor([n]), root_constraint=root_constraint, projective=projective
    )
    assert float(log_z[0]) == pytest.approx(n * value + math.log(count), rel=1e-12, abs=1e-9)


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_large_offset_scores_are_exact(root_constraint, projective):
    # 1e3 overflows exp in float64; row shifts remove it exactly.
    noise = np.random.default_rng(3).normal(size=(6, 6))
    expected_z, expected_marginals = brute_force(noise, root_constraint, projective)
    options = {"root_constraint": root_constraint, "projective": projective}
    for dtype in (torch.float64, torch.float32):
        batch = torch.tensor(noise + 1e3, dtype=dtype)[None]
        log_z = log_partition(batch, torch.tensor([5]), **options)
        probs = marginals(batch, torch.tensor([5]), **options)
        assert float(log_z[0]) == pytest.approx(5e3 + expected_z, rel=1e-6)
        tolerance = 1e-9 if dtype == torch.float64 else 1e-4  # float32 rounds the input
        np.testing.assert_allclose(probs[0].double(), expected_marginals, atol=tolerance)


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_large_spread_scores_with_a_greedy_tree_are_stable(root_constraint, projective):
    # Scores spread over +-1e3 whose best heads form a tree (0 -> 1 -> 2 -> ... ): no NaN, and
    # log Z is the best tree's score to double precision.
    n = 5
    rng = np.random.default_rng(4)
    scores = rng.uniform(-1e3, 0.0, size=(n + 1, n + 1))
    scores[np.arange(1, n + 1), np.arange(n)] = 1e3
    expected_z, expected_marginals = brute_force(scores, root_constraint, projective)
    batch, lengths = _one(scores)
    options = {"root_constraint": root_constraint, "projective": projective}
    assert float(log_partition(batch, lengths, **options)[0]) == pytest.approx(expected_z)
    np.testing.assert_allclose(marginals(batch, lengths, **options)[0], expected_marginals)


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_padded_sentences_give_the_same_results_as_alone(root_constraint, projective):
    rng = np.random.default_rng(5)
    sentences = [rng.normal(size=(n + 1, n + 1)) * 3 for n in (4, 1, 6, 3)]
    batch = torch.tensor(rng.choice([np.nan, np.inf, -np.inf, 7.0], size=(4, 9, 9)))
    for b, matrix in enumerate(sentences):
        batch[b, : len(matrix), : len(matrix)] = torch.tensor(matrix)
    lengths = torch.tensor([len(m) - 1 for m in sentences])
    options = {"root_constraint": root_constraint, "projective": projective}
    log_z = log_partition(batch, lengths, **options)
    probs = marginals(batch, lengths, **options)
    for b, matrix in enumerate(sentences):
        alone, n = _one(matrix)
        torch.testing.assert_close(log_z[b], log_partition(alone, n, **options)[0])
        size = len(matrix)
        torch.testing.assert_close(probs[b, :size, :size], marginals(alone, n, **options)[0])
        assert not probs[b, size:].any()
        assert not probs[b, :, size:].any()


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_float32_input_gives_float32_results_computed_in_float64(root_constraint, projective):
    scores = (torch.randn(2, 7, 7) * 5).float()
    lengths = torch.tensor([6, 4])
    options = {"root_constraint": root_constraint, "projective": projective}
    log_z = log_partition(scores, lengths, **options)
    probs = marginals(scores, lengths, **options)
    assert log_z.dtype == probs.dtype == torch.float32
    # Only the output is rounded: the same as float64 on the same values, to float32 precision.
    torch.testing.assert_close(log_z, log_partition(scores.double(), lengths, **options).float())
    torch.testing.assert_close(probs, marginals(scores.double(), lengths, **options).float())


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_log_partition_passes_gradcheck(root_constraint, projective):
    scores = torch.randn(2, 4, 4, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([3, 2])
    torch.autograd.gradcheck(
        lambda s: log_partition(s, lengths, root_constraint=root_constraint, projective=projective),
        (scores,),
    )


@given(score_matrices(max_words=4), st.sampled_from(VARIANTS), st.data())
def test_tree_log_prob_equals_brute_force(scores, variant, data):
    root_constraint, projective = variant
    scores = np.where(np.isfinite(scores), scores, 0.0)  # every tree possible: gold has a score
    n = len(scores) - 1
    trees = _trees(n, root_constraint, projective)
    heads = trees[data.draw(st.integers(0, len(trees) - 1))]
    expected_z, _ = brute_force(scores, root_constraint, projective)
    expected = oracle.weight(scores, heads) - expected_z
    batch, lengths = _one(scores)
    gold = torch.tensor(heads)[None]
    options = {"root_constraint": root_constraint, "projective": projective}
    assert float(tree_log_prob(batch, gold, lengths, **options)[0]) == pytest.approx(expected)


def test_the_gradient_of_minus_the_tree_log_prob_is_marginals_minus_gold():
    scores = torch.randn(2, 6, 6, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([5, 2])
    heads = torch.tensor([[-1, 2, 0, 2, 3, 3], [-1, 0, 1, -1, -1, -1]])
    loss = -tree_log_prob(scores, heads, lengths).sum() / 7  # per word, as training's CRF loss
    loss.backward()
    gold = torch.zeros(2, 6, 6, dtype=torch.float64)
    for b, n in enumerate(lengths.tolist()):
        gold[b, torch.arange(1, n + 1), heads[b, 1 : n + 1]] = 1.0
    torch.testing.assert_close(scores.grad, (marginals(scores, lengths) - gold) / 7)


def test_tree_log_prob_in_float32_keeps_its_dtype_and_gradient():
    scores = torch.randn(3, 5, 5, requires_grad=True)
    heads = torch.tensor([[-1, 0, 1, 2, 3], [-1, 2, 0, -1, -1], [-1, 0, -1, -1, -1]])
    loss = -tree_log_prob(scores, heads, torch.tensor([4, 2, 1])).sum()
    loss.backward()
    assert loss.dtype == scores.grad.dtype == torch.float32
    assert loss > 0


def test_tree_score_sums_the_gold_arcs_and_ignores_padding():
    scores = torch.arange(16.0).reshape(1, 4, 4).repeat(2, 1, 1)
    heads = torch.tensor([[-1, 0, 1, 1], [-1, 2, 0, 99]])
    total = tree_score(scores, heads, torch.tensor([3, 2]))
    torch.testing.assert_close(total, torch.tensor([4.0 + 9.0 + 13.0, 6.0 + 8.0]))


@pytest.mark.parametrize(
    ("lengths", "message"),
    [([0], r"lengths\[0\]=0 is outside 1..N=3"), ([4], r"lengths\[0\]=4 is outside")],
)
def test_bad_lengths_are_rejected(lengths, message):
    with pytest.raises(ValueError, match=message):
        log_partition(torch.zeros(1, 4, 4), torch.tensor(lengths))


def test_nan_on_a_scored_arc_is_rejected():
    scores = torch.zeros(2, 4, 4)
    scores[1, 2, 3] = math.nan
    with pytest.raises(ValueError, match="sentence 1: arc 3 -> 2"):
        log_partition(scores, torch.tensor([3, 3]))


@pytest.mark.parametrize(
    ("heads", "message"),
    [
        ([-1, 0, 4, 2], "sentence 0: word 2 has head 4"),
        ([-1, 0, 2, 1], "sentence 0: word 2 has head 2"),
        ([-1, 0, 0, 1], "sentence 0 has 2 words on ROOT"),
    ],
)
def test_bad_gold_heads_are_rejected(heads, message):
    with pytest.raises(ValueError, match=message):
        tree_log_prob(torch.zeros(1, 4, 4), torch.tensor([heads]), torch.tensor([3]))


def test_two_roots_are_fine_without_the_root_constraint():
    heads = torch.tensor([[-1, 0, 0, 1]])
    log_prob = tree_log_prob(torch.zeros(1, 4, 4), heads, torch.tensor([3]), root_constraint=False)
    assert float(log_prob[0]) == pytest.approx(-math.log(16))  # Cayley: 4^2 trees, all equal


def test_a_cycle_of_best_heads_far_above_every_tree_is_nan_not_wrong_for_the_determinant():
    # Words 1 and 2 prefer each other by 1e3 over ROOT: every tree pays 1e3 to break the cycle.
    scores = torch.full((1, 3, 3), -1e3, dtype=torch.float64)
    scores[0, 1, 2] = scores[0, 2, 1] = 0.0
    lengths = torch.tensor([2])
    expected = -1e3 + math.log(2)  # 0 -> 1 -> 2 and 0 -> 2 -> 1 (+ e^-2000 for two roots)
    assert float(log_partition(scores, lengths)[0]) == pytest.approx(expected)  # ROOT shift
    assert float(log_partition(scores, lengths, projective=True)[0]) == pytest.approx(expected)
    assert math.isnan(float(log_partition(scores, lengths, root_constraint=False)[0]))


def _batched_route(scores: torch.Tensor, lengths: torch.Tensor, *, root_constraint, projective):
    """The batched torch route (used off CPU), run on CPU: log Z and its gradient by autograd."""
    scores = scores.detach().clone().requires_grad_(True)
    log_z = treecrf._batched_log_partition64(scores, lengths, root_constraint, projective)
    (grad,) = torch.autograd.grad(log_z[torch.isfinite(log_z)].sum(), scores)
    return log_z.detach(), grad


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
@pytest.mark.parametrize("forbidden", [0.0, 0.3, 0.7])
def test_cpu_kernel_equals_the_batched_torch_route(root_constraint, projective, forbidden):
    # Long sentences with parser-like scores, and masks that leave some sentences without trees:
    # the kernel's Gauss-Jordan inverse, shifts and reachability test against LU and closures;
    # its inside and outside passes against autograd through the batched inside pass.
    generator = torch.Generator().manual_seed(
        int(forbidden * 100) + 2 * root_constraint + projective
    )
    lengths = torch.tensor([60, 1, 2, 7, 33, 12, 5, 3])
    scores = torch.randn(8, 61, 61, dtype=torch.float64, generator=generator) * 5
    scores[torch.rand(8, 61, 61, generator=generator) < forbidden] = -math.inf
    options = {"root_constraint": root_constraint, "projective": projective}
    expected_z, expected_grad = _batched_route(scores, lengths, **options)
    if forbidden > 0.5:
        assert (expected_z == -math.inf).any()
        assert torch.isfinite(expected_z).any()
    torch.testing.assert_close(
        log_partition(scores, lengths, **options), expected_z, rtol=1e-10, atol=0
    )
    torch.testing.assert_close(
        marginals(scores, lengths, **options), expected_grad, rtol=0, atol=1e-9
    )


@pytest.mark.parametrize("root_constraint", [True, False])
def test_scores_spread_over_thousands_give_the_exact_log_z_or_nan(root_constraint):
    # Cancellation in the determinant is caught by the marginals' identities: never a wrong value.
    rng = np.random.default_rng(6)
    outcomes = []
    for _ in range(40):
        scores = rng.uniform(-1e3, 1e3, size=(5, 5))
        expected_z, expected_marginals = brute_force(scores, root_constraint, False)
        batch, lengths = _one(scores)
        log_z = float(log_partition(batch, lengths, root_constraint=root_constraint)[0])
        probs = marginals(batch, lengths, root_constraint=root_constraint)[0].numpy()
        outcomes.append(math.isnan(log_z))
        if not math.isnan(log_z):
            assert log_z == pytest.approx(expected_z, rel=1e-12)
            np.testing.assert_allclose(probs, expected_marginals, atol=1e-6)
        else:
            assert not probs.any()
    assert 0 < sum(outcomes) < len(outcomes)


@pytest.mark.parametrize(("root_constraint", "projective"), VARIANTS)
def test_a_second_derivative_on_cpu_is_refused_not_zero(root_constraint, projective):
    # The kernels keep the marginals as constants: a Hessian through them came out all zeros.
    scores = torch.randn(1, 4, 4, dtype=torch.float64, requires_grad=True)
    options = {"root_constraint": root_constraint, "projective": projective}
    with pytest.raises(RuntimeError, match=re.escape(treecrf.SECOND_DERIVATIVE)):
        torch.autograd.grad(
            log_partition(scores, torch.tensor([3]), **options).sum(), scores, create_graph=True
        )


@pytest.mark.parametrize("root_constraint", [True, False])
def test_a_forbidden_arc_keeps_a_zero_marginal_beside_huge_scores(root_constraint):
    # Forbidden arcs are -1e30 inside the kernel: beside a score of 1e31 one got marginal 1.
    inf = math.inf
    scores = torch.tensor([[[0.0, 0.0, 0.0], [1e31, 0.0, -inf], [-inf, -inf, 0.0]]])
    probs = marginals(scores, torch.tensor([2]), root_constraint=root_constraint, projective=True)
    assert not probs[scores == -inf].any()


_PEAK_MEMORY = """
import resource, sys, torch
from biaffine.nn.treecrf import marginals
n = int(sys.argv[1])
seeded = torch.Generator().manual_seed(0)
scores = torch.randn(1, n + 1, n + 1, dtype=torch.float64, generator=seeded)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
probs = marginals(scores, torch.tensor([n]), projective=True)
assert abs(float(probs[0, 1:].sum()) - n) < 1e-6
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


@pytest.mark.slow
def test_eisner_marginals_of_a_long_sentence_need_memory_quadratic_in_its_length():
    # Autograd through the inside pass kept every span's slice: (n + 1)³ floats, 1.4 GB more at
    # 700 words. The kernel's charts: nine of (n + 1)², 35 MB.
    found = subprocess.run(
        [sys.executable, "-c", _PEAK_MEMORY, "700"], capture_output=True, text=True, check=True
    )
    assert int(found.stdout) < 300_000  # KiB
