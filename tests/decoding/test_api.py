"""Public API: orientation, input normalisation, batching, padding and error messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import FEASIBLE_KINDS, padded_batches, score_matrices

import decoding
from decoding import _batch, _codes, _drive
from decoding.api import _best_of_roots

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT") == "1"

DECODERS = {
    "mst": lambda s, lengths=None: decoding.mst(s, lengths),
    "mst_multiroot": lambda s, lengths=None: decoding.mst(s, lengths, root_constraint=False),
    "eisner": lambda s, lengths=None: decoding.eisner(s, lengths),
    "eisner_multiroot": lambda s, lengths=None: decoding.eisner(s, lengths, root_constraint=False),
    "greedy": decoding.greedy,
    "best_of_roots": _best_of_roots,
}
TREE_DECODERS = ["mst", "mst_multiroot", "eisner", "eisner_multiroot", "best_of_roots"]

# Dependent-major: row d is the head distribution of word d. Row 0 is garbage that a head-major
# reading would take for ROOT's arcs (and then return [-1, 2, 0]).
ASYMMETRIC = np.array([[0.0, 9.0, 9.0], [5.0, 0.0, 0.0], [0.0, 4.0, 0.0]])


@pytest.mark.parametrize("name", list(DECODERS))
def test_scores_are_dependent_major(name):
    np.testing.assert_array_equal(DECODERS[name](ASYMMETRIC), [-1, 0, 1])


@pytest.mark.parametrize("name", list(DECODERS))
@given(batch=padded_batches())
def test_batch_equals_one_sentence_at_a_time_despite_padding_garbage(name, batch):
    scores, lengths, sentences = batch
    heads = DECODERS[name](scores, lengths)
    assert heads.shape == scores.shape[:2]
    assert heads.dtype == np.int64
    for b, matrix in enumerate(sentences):
        n = len(matrix) - 1
        np.testing.assert_array_equal(heads[b, : n + 1], DECODERS[name](matrix))
        assert (heads[b, n + 1 :] == -1).all()


@pytest.mark.parametrize("name", TREE_DECODERS)
@given(scores=score_matrices(max_words=8, kinds=FEASIBLE_KINDS))
def test_decoders_return_trees_with_minus_one_at_root(name, scores):
    heads = DECODERS[name](scores)
    assert heads.shape == (len(scores),)
    assert heads.dtype == np.int64
    assert heads[0] == -1
    assert decoding.is_tree(heads, root_constraint=name in ("mst", "eisner", "best_of_roots"))


@pytest.mark.parametrize("name", list(DECODERS))
def test_float32_and_strided_inputs_give_float64_result(name):
    rng = np.random.default_rng(32)
    scores = rng.normal(size=(3, 7, 7)).astype(np.float32)
    expected = DECODERS[name](scores.astype(np.float64))
    np.testing.assert_array_equal(DECODERS[name](scores), expected)
    fortran = np.asfortranarray(scores)
    np.testing.assert_array_equal(DECODERS[name](fortran), expected)
    strided = np.repeat(np.repeat(scores, 2, axis=1), 2, axis=2)[:, ::2, ::2]
    np.testing.assert_array_equal(
        DECODERS[name](strided, [6, 3, 1]), DECODERS[name](scores, [6, 3, 1])
    )


def test_lengths_accept_lists_and_other_integer_dtypes():
    scores = np.random.default_rng(0).normal(size=(2, 5, 5))
    expected = decoding.mst(scores, np.array([4, 2]))
    np.testing.assert_array_equal(decoding.mst(scores, [4, 2]), expected)
    np.testing.assert_array_equal(decoding.mst(scores, np.array([4, 2], dtype=np.int32)), expected)
    np.testing.assert_array_equal(decoding.mst(scores), decoding.mst(scores, [4, 4]))


def test_decoders_leave_input_unchanged():
    scores = np.random.default_rng(1).normal(size=(2, 5, 5))
    scores[:, 0, :] = np.nan
    scores[1, 3:, :] = np.inf
    before = scores.copy()
    for decode in DECODERS.values():
        decode(scores, [4, 2])
    np.testing.assert_array_equal(scores, before)


def test_torch_cpu_tensor_is_accepted():
    torch = pytest.importorskip("torch")
    scores = torch.randn(2, 6, 6, generator=torch.Generator().manual_seed(0))
    lengths = torch.tensor([5, 3])
    expected = decoding.mst(scores.numpy().astype(np.float64), lengths.numpy())
    np.testing.assert_array_equal(decoding.mst(scores, lengths), expected)


class _FakeTensor:
    """A tensor in the eyes of duck typing, and no array at all to numpy."""

    def __init__(self, requires_grad=False, device="cpu", dtype="fake.float32"):
        self.requires_grad = requires_grad
        self.device = type("Device", (), {"type": device, "__str__": lambda _: device})()
        self.dtype = dtype

    def detach(self):
        return self

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Can't call numpy() on Tensor that requires grad.\nUse detach().")


@pytest.mark.parametrize(
    ("fake", "message"),
    [
        (_FakeTensor(requires_grad=True), r"^scores is a tensor that requires grad: pass scores\."),
        (_FakeTensor(device="cuda:0"), r"^scores is on device cuda:0: pass scores\.cpu\(\)$"),
        (_FakeTensor(dtype="fake.bfloat16"), r"^scores has dtype bfloat16, .*scores\.float\(\)$"),
        (_FakeTensor(), r"^scores cannot be read as a numpy array: Can't call numpy\(\)[^\n]*$"),
    ],
)
def test_tensors_numpy_cannot_read_raise_one_line_value_errors(fake, message):
    for decode in DECODERS.values():
        with pytest.raises(ValueError, match=message):
            decode(fake)
    with pytest.raises(ValueError, match=message):
        decoding.tree_score(fake, [-1, 0])


def test_torch_tensors_numpy_cannot_read_name_the_fix():
    torch = pytest.importorskip("torch")
    scores = torch.randn(4, 4)
    cases = [
        (
            scores.requires_grad_(),
            r"scores is a tensor that requires grad: pass scores\.detach\(\)",
        ),
        (scores.detach().bfloat16(), r"scores has dtype bfloat16, .*: pass scores\.float\(\)"),
        (torch.zeros(4, 4, device="meta"), r"scores is on device meta: pass scores\.cpu\(\)"),
    ]
    for tensor, message in cases:
        for decode in DECODERS.values():
            with pytest.raises(ValueError, match=message):
                decode(tensor)
        with pytest.raises(ValueError, match=message):
            decoding.tree_score(tensor, [-1, 0, 1, 1])
    lengths = torch.tensor([3.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"lengths is a tensor that requires grad"):
        decoding.mst(scores.detach()[None], lengths)
    with pytest.raises(ValueError, match=r"heads has dtype bfloat16"):
        decoding.is_tree(torch.tensor([-1, 0, 1]).bfloat16())
    heads = torch.tensor([[-1, 0, 1, 1]])
    with pytest.raises(ValueError, match=r"lengths is a tensor that requires grad"):
        decoding.is_tree(heads, torch.tensor([3.0], requires_grad=True))
    assert decoding.is_tree(heads, torch.tensor([3])).all()


def test_float16_scores_decode_as_their_float64_values():
    scores = np.random.default_rng(16).normal(size=(3, 7, 7)).astype(np.float16)
    scores[1, 2, :3] = -np.inf
    for decode in DECODERS.values():
        np.testing.assert_array_equal(decode(scores), decode(scores.astype(np.float64)))
    heads = decoding.mst(scores[0])
    assert decoding.tree_score(scores[0], heads) == decoding.tree_score(
        scores[0].astype(np.float64), heads
    )


def test_ragged_lists_and_other_dtypes_raise_value_errors():
    for decode in DECODERS.values():
        with pytest.raises(ValueError, match=r"^scores cannot be read as a numpy array"):
            decode([[0.0, 1.0], [2.0]])
        with pytest.raises(ValueError, match="float16, float32 or float64"):
            decode(np.zeros((3, 3), dtype=np.longdouble))
    with pytest.raises(ValueError, match=r"float16, float32 or float64 .* got dtype int64$"):
        decoding.tree_score(np.zeros((3, 3), dtype=np.int64), [-1, 0, 1])
    with pytest.raises(ValueError, match=r"^heads cannot be read as a numpy array"):
        decoding.is_tree([[-1, 0], [-1]])
    with pytest.raises(ValueError, match=r"^lengths cannot be read as a numpy array"):
        decoding.mst(np.zeros((2, 3, 3)), [[1], 2])
    with pytest.raises(ValueError, match="lengths must hold integers, got dtype float64"):
        decoding.is_tree(np.array([[-1, 0]]), [1.0])


def test_empty_batch_gives_empty_heads():
    heads = decoding.mst(np.zeros((0, 4, 4)))
    assert heads.shape == (0, 4)
    assert heads.dtype == np.int64


@given(st.data())
def test_greedy_takes_row_argmax_with_lowest_head_on_ties(data):
    scores = data.draw(score_matrices(max_words=8, kinds=("ties", "normal")))
    heads = decoding.greedy(scores)
    masked = scores.copy()
    np.fill_diagonal(masked, -np.inf)
    np.testing.assert_array_equal(heads[1:], np.argmax(masked[1:], axis=1))


def _batch_with_bad_sentence_3(fix) -> np.ndarray:
    scores = np.random.default_rng(3).normal(size=(5, 5, 5))
    fix(scores[3])
    return scores


def _set(index, value):
    def fix(matrix):
        matrix[index] = value

    return fix


def _no_spanning_tree(matrix):
    matrix[:] = -np.inf
    matrix[1, 2] = matrix[2, 1] = 1.0  # words 1 and 2 only point at each other
    matrix[3, 0] = matrix[4, 3] = 1.0


def _two_forced_roots(matrix):
    matrix[1:3, 1:] = -np.inf  # words 1 and 2 can only attach to ROOT


def _only_non_projective(matrix):
    matrix[:] = -np.inf  # 0->2, 2->3, 3->1, 3->4: arcs (0, 2) and (1, 3) cross
    matrix[2, 0] = matrix[3, 2] = matrix[1, 3] = matrix[4, 3] = 1.0


@pytest.mark.parametrize(
    ("fix", "decoders", "message"),
    [
        (_set((2, 1), np.nan), list(DECODERS), r"sentence 3: NaN at scores\[3, 2, 1\]"),
        (_set((4, 0), np.inf), list(DECODERS), r"sentence 3: \+inf at scores\[3, 4, 0\]"),
        # MST said "no tree under the -inf masks" and Eisner gave a worse tree: sums overflowed.
        (_set((4, 0), -1.79e308), list(DECODERS), r"sentence 3: scores\[3, 4, 0\] .* beyond"),
        (_set((4, 1), 1e301), list(DECODERS), r"sentence 3: scores\[3, 4, 1\] .* beyond"),
        (_set((2, slice(None)), -np.inf), list(DECODERS), "sentence 3: word 2 has no finite head"),
        (_set((slice(None), 0), -np.inf), TREE_DECODERS, "sentence 3: no word can attach to ROOT"),
        (
            _no_spanning_tree,
            ["mst", "mst_multiroot", "best_of_roots"],
            "sentence 3: no spanning tree",
        ),
        (_no_spanning_tree, ["eisner", "eisner_multiroot"], "sentence 3: no projective tree"),
        (_two_forced_roots, ["mst", "best_of_roots"], "sentence 3: no tree with a single root"),
        (_two_forced_roots, ["eisner"], "sentence 3: no projective tree with a single root"),
        (_only_non_projective, ["eisner", "eisner_multiroot"], "sentence 3: no projective tree"),
    ],
)
def test_infeasible_or_invalid_scores_raise_naming_the_sentence(fix, decoders, message):
    scores = _batch_with_bad_sentence_3(fix)
    for name in decoders:
        with pytest.raises(ValueError, match=message):
            DECODERS[name](scores)


def test_single_matrix_errors_name_sentence_0():
    scores = np.zeros((4, 4))
    scores[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"sentence 0: NaN at scores\[2, 1\] \(arc 1 -> 2\)"):
        decoding.mst(scores)


def test_a_nan_is_named_before_an_earlier_inf_and_both_before_a_missing_head():
    scores = np.zeros((5, 5))
    scores[1, 2] = np.inf
    scores[3, :] = -np.inf  # word 3 has no head
    scores[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN at scores\[4, 2\]"):
        decoding.mst(scores)
    scores[4, 2] = 0.0
    with pytest.raises(ValueError, match=r"\+inf at scores\[1, 2\]"):
        decoding.mst(scores)
    scores[1, 2] = -1e301
    with pytest.raises(ValueError, match=r"scores\[1, 2\] \(arc 2 -> 1\) is finite but beyond"):
        decoding.mst(scores)
    scores[1, 2] = -1e300  # the largest magnitude a finite score may have
    with pytest.raises(ValueError, match="word 3 has no finite head"):
        decoding.mst(scores)


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_scores_as_large_as_allowed_decode_the_best_tree(name: str) -> None:
    # Word 1 must take ROOT, word 2 word 1: every other arc is -1e300, and no sum overflows.
    scores = np.full((3, 3), -1e300)
    scores[1, 0], scores[2, 1] = 1e300, 1e300
    assert DECODERS[name](scores).tolist() == [-1, 0, 1]


def test_nan_and_inf_outside_sentences_are_ignored():
    scores = np.zeros((2, 5, 5))
    scores[:, 0, :] = np.nan  # row 0
    scores[:, np.arange(5), np.arange(5)] = np.inf  # diagonal
    scores[1, 3:, :] = np.nan  # padding of sentence 1 (n = 2)
    scores[1, :, 3:] = np.nan
    for decode in DECODERS.values():
        assert (decode(scores, [4, 2])[1, 3:] == -1).all()


@pytest.mark.parametrize("name", sorted(DECODERS))
@pytest.mark.parametrize("garbage", [np.nan, np.inf, 1e9])
def test_garbage_on_row_0_and_the_diagonal_of_a_full_matrix_changes_nothing(name, garbage):
    # A sentence that fills its matrix is decoded by MST in place, without the copy that sets
    # row 0 and the diagonal to -inf: the kernel must never read them.
    rng = np.random.default_rng(4)
    clean = rng.normal(size=(3, 12, 12))
    dirty = clean.copy()
    dirty[:, 0, :] = garbage
    dirty[:, np.arange(12), np.arange(12)] = garbage
    np.testing.assert_array_equal(DECODERS[name](dirty[0]), DECODERS[name](clean[0]))
    np.testing.assert_array_equal(DECODERS[name](dirty), DECODERS[name](clean))


@pytest.mark.parametrize(
    ("scores", "lengths", "message"),
    [
        (np.zeros(4), None, "shape"),
        (np.zeros((2, 2, 3, 3)), None, "shape"),
        (np.zeros((3, 4)), None, "square"),
        (np.zeros((2, 3, 4)), None, "square"),
        (np.zeros((3, 3), dtype=np.int64), None, "dtype int64"),
        (np.zeros((3, 3), dtype=bool), None, "dtype bool"),
        (np.zeros((3, 3), dtype=complex), None, "dtype complex128"),
        (np.zeros((1, 1)), None, "at least one word"),
        (np.zeros((5, 4, 4)), [3, 3], r"lengths must have shape \(5,\)"),
        (np.zeros((5, 4, 4)), [3.0] * 5, "lengths must hold integers"),
        (np.zeros((5, 4, 4)), [3, 3, 3, 4, 3], r"sentence 3: lengths\[3\]=4 is outside \[1, N=3\]"),
        (np.zeros((5, 4, 4)), [3, 3, 3, 0, 3], r"sentence 3: lengths\[3\]=0"),
        (np.zeros((4, 4)), [3], "lengths is only for batched"),
    ],
)
def test_malformed_input_raises_value_error(scores, lengths, message):
    for decode in DECODERS.values():
        with pytest.raises(ValueError, match=message):
            decode(scores, lengths)


@pytest.mark.parametrize("threads", [True, False, 0, 2.0, "2"])
def test_set_num_threads_refuses_what_is_no_thread_count(threads):
    before = decoding.get_num_threads()
    with pytest.raises(ValueError, match=f"^threads must be a positive integer, got {threads!r}$"):
        decoding.set_num_threads(threads)
    assert decoding.get_num_threads() == before


def test_thread_pool_survives_changes_of_the_thread_count():
    # A new pool per change would start fresh threads inside the next decode call.
    threads = decoding.get_num_threads()
    try:
        decoding.set_num_threads(2)
        pool = _drive._executor(2)
        decoding.set_num_threads(1)
        decoding.set_num_threads(2)
        assert _drive._executor(2) is pool
        assert _drive._executor(1) is pool  # a larger pool serves fewer threads
        assert _drive._executor(3) is not pool  # and grows when more are asked for
    finally:
        decoding.set_num_threads(threads)


@pytest.mark.parametrize("name", ["mst", "eisner"])
def test_threaded_batch_equals_one_sentence_at_a_time(name):
    # Enough score entries for the threaded path, and a batch size that is no multiple of the
    # threads' block of sentences, so the last block is partial.
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 41, size=301)
    scores = rng.normal(size=(len(lengths), 41, 41))
    threads = decoding.get_num_threads()
    try:
        decoding.set_num_threads(2)
        heads = DECODERS[name](scores, lengths)
    finally:
        decoding.set_num_threads(threads)
    for b, n in enumerate(lengths):
        np.testing.assert_array_equal(
            heads[b, : n + 1], DECODERS[name](scores[b, : n + 1, : n + 1])
        )
        assert (heads[b, n + 1 :] == -1).all()


def test_block_schedule_skips_claimed_blocks_and_wraps_around():
    # Threads share one claim flag per block of sentences: a thread starting at a later block
    # wraps around to the first, and leaves alone every block another thread has claimed.
    rng = np.random.default_rng(5)
    size = 2 * _codes.BLOCK + 3  # three blocks, the last one partial
    lengths = rng.integers(1, 9, size=size)
    scores = rng.normal(size=(size, 9, 9))
    heads = np.full((size, 9), -1, dtype=np.int64)
    where = np.zeros((size, 3), dtype=np.int64)
    claimed = np.array([False, True, False])
    _batch.BLOCKS[_codes.MST](scores, lengths, True, heads, where, claimed, 2)
    assert claimed.all()
    block = np.arange(size) // _codes.BLOCK
    expected = decoding.mst(scores, lengths)
    np.testing.assert_array_equal(heads[block != 1], expected[block != 1])
    assert (heads[block == 1] == -1).all()


# Decodes every kind of input in a process that compiles (or loads) in the foreground, as numba
# does by itself, then prints each driver's and kernel's signatures.
SPECIALISATIONS = """
import contextlib, json
import numpy as np
import decoding
from decoding import _batch
from decoding._eisner import eisner_kernel
from decoding.trees import greedy_kernel

rng = np.random.default_rng(6)
for dtype in (np.float32, np.float64):
    for decode in (decoding.mst, decoding.eisner, decoding.greedy):
        scores = rng.normal(size=(3, 6, 6)).astype(dtype)
        scores[1, 2, 3] = np.nan  # the error path compiles too
        for batch, lengths in ((scores[0], None), (scores, None), (scores, [5, 2, 4])):
            with contextlib.suppress(ValueError):
                decode(batch, lengths)
            if decode is not decoding.greedy:
                decode(batch[..., :3, :3], root_constraint=False)
compiled = [_batch._check, _batch._copy, _batch._locate_invalid, eisner_kernel, greedy_kernel]
compiled += [entry.dispatcher for entry in (*_batch.SINGLE.values(), *_batch.BLOCKS.values())]
print(json.dumps({f.py_func.__name__: [str(s) for s in f.signatures] for f in compiled}))
"""


@pytest.mark.skipif(NO_JIT, reason="signatures exist only for compiled functions")
def test_each_driver_and_kernel_compiles_once_whatever_the_input():
    # Every specialisation compiles (and reoptimises the kernels it links) once more in a fresh
    # environment: a constant argument such as b = 0 or need_root = True must not make its own.
    env = {**os.environ, "ROOTPARSE_COMPILE": "foreground"}
    result = subprocess.run(
        [sys.executable, "-c", SPECIALISATIONS],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    signatures = json.loads(result.stdout.strip().splitlines()[-1])
    assert signatures["_mst_single"], "the drivers ran as plain Python, not as machine code"
    for name, found in signatures.items():
        assert len(found) <= 1, (name, found)
        assert not any("Literal" in argument for argument in found), (name, found)


@pytest.mark.slow
@pytest.mark.skipif(NO_JIT, reason="signatures exist only for compiled functions")
def test_a_process_compiles_only_the_decoder_it_calls():
    code = (
        "import numpy as np, decoding\n"
        "from decoding import _batch\n"
        "from decoding.baselines import best_of_roots_kernel\n"
        "from decoding._eisner import eisner_kernel\n"
        "from decoding.trees import greedy_kernel\n"
        "decoding.mst(np.zeros((3, 3)))\n"
        "decoding.mst(np.zeros((2, 3, 3)), [2, 1])\n"
        "kernels = (_batch._mst_single, eisner_kernel, greedy_kernel, best_of_roots_kernel)\n"
        "print([len(kernel.signatures) for kernel in kernels])\n"
    )
    env = {**os.environ, "ROOTPARSE_COMPILE": "foreground"}  # as numba does by itself
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert result.stdout.strip() == "[1, 0, 0, 0]"


@pytest.mark.parametrize("algorithm", ["foo", ["mst"], None])
def test_check_algorithm_names_the_menu_for_anything_not_a_decoder(algorithm) -> None:
    # A list was "unhashable type: 'list'".
    with pytest.raises(ValueError, match=r"algorithm=.*; expected one of mst, eisner"):
        decoding.check_algorithm(algorithm)


def test_set_num_threads_takes_a_numpy_integer_as_kbest_does():
    before = decoding.get_num_threads()
    try:
        decoding.set_num_threads(np.int64(2))
        assert decoding.get_num_threads() == 2
        assert type(decoding.get_num_threads()) is int
    finally:
        decoding.set_num_threads(before)


def test_greedy_refuses_a_root_constraint_that_is_no_flag_as_the_others_do():
    for algorithm in decoding.DECODERS:
        with pytest.raises(ValueError, match="root_constraint must be True or False, got 'no'"):
            decoding.decode(np.zeros((3, 3)), algorithm=algorithm, root_constraint="no")


def test_tree_score_refuses_nan_on_an_arc_and_count_roots_a_head_out_of_range():
    scores = np.zeros((3, 3))
    scores[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        decoding.tree_score(scores, [-1, 0, 1])
    assert decoding.tree_score(scores, [-1, 0, 0]) == 0.0  # NaN off the tree's arcs is no matter
    infinite = np.array([[0.0, 0, 0], [np.inf, 0, 0], [-np.inf, 0, 0]])  # no NaN, a NaN sum
    with pytest.raises(ValueError, match=r"^sentence 0: the arcs of heads score NaN .*\+inf and"):
        decoding.tree_score(infinite, [-1, 0, 0])
    with pytest.raises(ValueError, match=r"heads\[1\]=5 is not a head in 0..2"):
        decoding.count_roots([-1, 5, 0])


def test_a_batch_of_sentences_without_words_reads_as_one_sentence_without_words_does():
    # A batch of width 1 was numpy's "attempt to get argmax of an empty sequence".
    assert decoding.is_tree([-1]) is False
    np.testing.assert_array_equal(decoding.is_tree(np.full((2, 1), -1)), [False, False])
    assert decoding.tree_score(np.zeros((1, 1)), [-1]) == 0.0
    np.testing.assert_array_equal(decoding.tree_score(np.zeros((1, 1, 1)), [[-1]]), [0.0])


def test_a_masked_array_is_refused_rather_than_its_mask_ignored():
    # np.asarray dropped the mask: the masked arc 0 -> 1 was decoded, and scored, as any other.
    scores = np.array([[0, 0, 0], [5.0, 0, -1], [0, -1, 0]])
    masked = np.ma.masked_array(scores, mask=[[0, 0, 0], [1, 0, 0], [0, 0, 0]])
    for decode in DECODERS.values():
        with pytest.raises(ValueError, match=r"^scores is a masked array.*scores\.filled\(value\)"):
            decode(masked)
    with pytest.raises(ValueError, match=r"^scores is a masked array"):
        decoding.tree_score(masked, [-1, 0, 1])
    np.testing.assert_array_equal(decoding.mst(masked.filled(-np.inf)), [-1, 2, 0])
    unmasked = np.ma.masked_array(scores)  # nothing masked: the values are all there is
    np.testing.assert_array_equal(decoding.mst(unmasked), decoding.mst(scores))
