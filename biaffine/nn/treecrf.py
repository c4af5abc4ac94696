"""First-order tree CRF over dependency trees: log-partition, arc marginals and the tree loss.

Non-projective trees by the Matrix-Tree theorem (Koo et al., 2007), projective ones by Eisner's
inside algorithm, each with or without the single-root constraint. Scores follow the project's
convention: ``arc_scores[b, d, h]`` scores the arc h -> d, position 0 is ROOT, row 0 and the
diagonal are ignored, ``-inf`` forbids an arc, and ``lengths[b]`` counts the words of sentence b.

Precision: the projective inside and outside passes are in log space, so no magnitude
overflows, and their error is float64's at the scores' magnitude (scores near 1e12 keep about
1e-4 of log Z); a forbidden arc is a stand-in of -1e30 there, so scores must stay far inside
+-1e29 (a forbidden arc's marginal is 0 whatever they are). The determinant is not so kind:
when the words' best heads form a cycle that every tree must break at a cost of G nats, the
Laplacian is singular up to exp(-G), so float64 loses log Z for G beyond about 35 (both
variants; the single-root one shifts its ROOT column, which saves the commonest case, a word
cycle above every ROOT arc). Such a sentence gives NaN where the sign reveals it.
On CPU it also gives NaN (and zero marginals) when the marginals miss their identities (each
word one head, ROOT one dependent) by over 1e-6, which catches the rest (scores uniform over
+-1e3: about a quarter of 2-5 word sentences, never a wrong value in the tests); the batched
torch route used on other devices can be silently inexact there. A parser trained with this
loss gets there: the CRF ignores arcs no likely tree uses, so a word and its dependent can come
to prefer each other by tens of nats (seen in a tiny overfit after ~25 steps).

Speed and memory: on CPU the Matrix-Tree log Z and its marginals come from one numba kernel per
sentence (its own n x n Laplacian, one Gauss-Jordan inverse that also gives the determinant),
since torch's batched float64 linear algebra costs milliseconds per small CPU matrix; other
devices use torch's batched ``slogdet``. See benchmarks/treecrf.py. The projective ones come
from one kernel per sentence too (the inside and outside passes, (n + 1)² floats per chart),
where autograd through the batched inside pass, still used on other devices, keeps (n + 1)³.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tiered import cubic_work, tiered

__all__ = ["log_partition", "marginals", "tree_log_prob", "tree_score"]

SECOND_DERIVATIVE = (
    "the tree CRF's log Z on CPU is differentiable once (its kernels give the marginals as "
    "constants): no second derivative"
)

# Stand-in for -inf in the inside chart: a logsumexp over -inf alone has a NaN gradient, while
# exp(_NEG + any real score) is an exact 0 in float64. Tree scores must stay far above _NEG / 2.
_NEG = -1e30


def log_partition(
    arc_scores: torch.Tensor,
    lengths: torch.Tensor,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> torch.Tensor:
    """Log of the summed exp-scores of all trees of each sentence (Koo et al., 2007; Eisner, 1996).

    Computed in float64 whatever the input dtype; differentiable (its gradient is the arc
    marginals), once on CPU (a second derivative raises; elsewhere autograd runs through
    every operation). Non-projective single-root trees use Koo et al.'s Laplacian whose first row is
    replaced by the root weights (see also Zmigrod, Vieira & Cotterell, 2020).

    Args:
        arc_scores: float[B, N+1, N+1]; ``arc_scores[b, d, h]`` scores the arc h -> d. Row 0,
            the diagonal and everything beyond ``lengths[b]`` are ignored; ``-inf`` forbids an arc.
        lengths: int[B], words per sentence excluding ROOT, each in 1..N.
        root_constraint: only trees with exactly one word on ROOT if True.
        projective: only projective trees (Eisner's inside algorithm) if True.

    Returns:
        float[B] in the dtype of ``arc_scores``; ``-inf`` for a sentence whose ``-inf`` arcs
        leave no tree (its gradient, hence its marginals, are then 0).

    Raises:
        ValueError: on bad shapes or lengths, or NaN / +inf on a scored arc.
    """
    scores = _prepare(arc_scores, lengths)
    logz = _log_partition64(scores, lengths, root_constraint, projective)
    return logz.to(arc_scores.dtype)


def marginals(
    arc_scores: torch.Tensor,
    lengths: torch.Tensor,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> torch.Tensor:
    """Probability of each arc under the tree CRF, as the gradient of :func:`log_partition`.

    The non-projective gradient is Koo et al.'s (2007) closed form (one inverse of the
    Laplacian, chain-ruled through its construction), computed by the CPU kernel in its forward
    pass and by autograd of the log-determinant elsewhere; the projective case has no cheaper
    closed form than outside = backward.

    Args:
        arc_scores: float[B, N+1, N+1], as for :func:`log_partition` (not differentiated through:
            the result is detached).
        lengths: int[B], words per sentence.
        root_constraint: only single-rooted trees if True.
        projective: only projective trees if True.

    Returns:
        float[B, N+1, N+1] in the dtype of ``arc_scores``: ``[b, d, h]`` is P(arc h -> d). Each
        real word's row sums to 1; row 0, padding, forbidden arcs and sentences without any
        tree are 0.
    """
    scores = _prepare(arc_scores.detach(), lengths)
    with torch.enable_grad():
        scores.requires_grad_(True)
        logz = _log_partition64(scores, lengths, root_constraint, projective)
        (grad,) = torch.autograd.grad(logz.sum(), scores)
    return grad.to(arc_scores.dtype)


def tree_score(
    arc_scores: torch.Tensor, heads: torch.Tensor, lengths: torch.Tensor
) -> torch.Tensor:
    """Summed scores of the arcs of one given tree per sentence.

    Args:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d.
        heads: int64[B, N+1], ``heads[b, d]`` in 0..lengths[b] for each word d (other entries
            ignored). Not checked to be a tree; the loss functions check the ranges.
        lengths: int[B], words per sentence.

    Returns:
        float[B] in the dtype of ``arc_scores``.
    """
    words = _word_mask(lengths, arc_scores.shape[-1])  # [B, N+1]
    index = torch.where(words, heads, torch.zeros_like(heads)).unsqueeze(-1)  # [B, N+1, 1]
    picked = arc_scores.gather(-1, index).squeeze(-1)  # [B, N+1]
    return torch.where(words, picked, torch.zeros_like(picked)).sum(-1)


def tree_log_prob(
    arc_scores: torch.Tensor,
    heads: torch.Tensor,
    lengths: torch.Tensor,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> torch.Tensor:
    """Log-probability of the tree ``heads`` under the CRF: score(tree) - log Z, per sentence.

    Args:
        arc_scores: float[B, N+1, N+1], as for :func:`log_partition`.
        heads: int64[B, N+1], one tree per sentence (``-1`` at ROOT and padding).
        lengths: int[B], words per sentence.
        root_constraint: normalise over single-rooted trees only if True.
        projective: normalise over projective trees only if True.

    Returns:
        float[B] in the dtype of ``arc_scores``, differentiable.

    Raises:
        ValueError: as :func:`log_partition`, or on a head outside 0..n or on itself, or (with
            ``root_constraint``) a tree without exactly one word on ROOT.
    """
    scores = _prepare(arc_scores, lengths)
    _check_heads(heads, lengths, root_constraint)
    logz = _log_partition64(scores, lengths, root_constraint, projective)
    return (tree_score(scores, heads, lengths) - logz).to(arc_scores.dtype)


def _prepare(arc_scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Float64 scores, after checking the shapes and lengths (the values are checked later)."""
    if arc_scores.dim() != 3 or arc_scores.shape[1] != arc_scores.shape[2]:
        raise ValueError(f"arc_scores must be [B, N+1, N+1], got {tuple(arc_scores.shape)}")
    if not arc_scores.is_floating_point():
        raise ValueError(f"arc_scores must be floating point, got {arc_scores.dtype}")
    batch, size = arc_scores.shape[0], arc_scores.shape[-1]
    if lengths.shape != (batch,) or lengths.is_floating_point():
        raise ValueError(f"lengths must be int[{batch}], got {lengths.dtype}{list(lengths.shape)}")
    bad = ((lengths < 1) | (lengths >= size)).nonzero()
    if len(bad):
        b = int(bad[0])
        raise ValueError(f"lengths[{b}]={int(lengths[b])} is outside 1..N={size - 1}")
    return arc_scores.double()


def _allowed(scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """bool[B, N+1, N+1] of the arcs allowed (real, not diagonal, not -inf); rejects NaN, +inf."""
    size = scores.shape[-1]
    words = _word_mask(lengths, size)  # [B, N+1]
    scored = words.unsqueeze(-1) & words.unsqueeze(-2)  # [B, d, h]: both ends real
    scored[:, :, 0] = words  # ROOT heads any word
    scored &= ~torch.eye(size, dtype=torch.bool, device=scores.device)
    bad = (scored & (scores.isnan() | (scores == math.inf))).nonzero()
    if len(bad):
        _reject_arc(scores, *(int(i) for i in bad[0]))
    return scored & (scores > -math.inf)


def _reject_arc(scores: torch.Tensor, b: int, d: int, h: int) -> None:
    raise ValueError(f"sentence {b}: arc {h} -> {d} scores {float(scores[b, d, h])}")


def _word_mask(lengths: torch.Tensor, size: int) -> torch.Tensor:
    """bool[B, N+1], True at the words 1..lengths[b] of each sentence."""
    positions = torch.arange(size, device=lengths.device)
    return (positions >= 1) & (positions <= lengths.unsqueeze(-1))


def _check_heads(heads: torch.Tensor, lengths: torch.Tensor, root_constraint: bool) -> None:
    """Raises ValueError on heads outside 0..n or on the word itself, or on several roots."""
    size = lengths.new_tensor(heads.shape[-1])
    if heads.shape != (len(lengths), int(size)):
        raise ValueError(f"heads must be [B, N+1]={[len(lengths), int(size)]}, got {heads.shape}")
    words = _word_mask(lengths, int(size))
    positions = torch.arange(int(size), device=heads.device)
    wrong = words & ((heads < 0) | (heads > lengths.unsqueeze(-1)) | (heads == positions))
    bad = wrong.nonzero()
    if len(bad):
        b, d = (int(i) for i in bad[0])
        raise ValueError(f"sentence {b}: word {d} has head {int(heads[b, d])}, not in 0..n")
    roots = (words & (heads == 0)).sum(-1)  # [B]
    bad = (roots != 1).nonzero()
    if root_constraint and len(bad):
        b = int(bad[0])
        raise ValueError(
            f"sentence {b} has {int(roots[b])} words on ROOT; root_constraint=True needs one"
        )


def _log_partition64(
    scores: torch.Tensor, lengths: torch.Tensor, root_constraint: bool, projective: bool
) -> torch.Tensor:
    """Log Z float64[B] of float64 scores (validated here: NaN or +inf on a scored arc)."""
    if scores.device.type == "cpu":
        return _TreeKernelCPU.apply(scores, lengths, root_constraint, projective)
    return _batched_log_partition64(scores, lengths, root_constraint, projective)


def _batched_log_partition64(
    scores: torch.Tensor, lengths: torch.Tensor, root_constraint: bool, projective: bool
) -> torch.Tensor:
    """:func:`_log_partition64` as batched torch operations, for accelerators."""
    allowed = _allowed(scores, lengths)
    if projective:
        masked = torch.where(allowed, scores, torch.full_like(scores, _NEG))
        logz = _inside(masked, lengths, root_constraint)
        return torch.where(logz > _NEG / 2, logz, torch.full_like(logz, -math.inf))
    feasible = _has_tree(allowed, lengths, root_constraint)  # [B]
    return _matrix_tree(scores, allowed, lengths, feasible, root_constraint)


def _matrix_tree(
    scores: torch.Tensor,
    allowed: torch.Tensor,
    lengths: torch.Tensor,
    feasible: torch.Tensor,
    root_constraint: bool,
) -> torch.Tensor:
    """Log det of the (root-replaced) Laplacian over words 1..N, float64[B]; -inf without tree.

    Batched torch operations, for accelerators; :class:`_TreeKernelCPU` computes the same on CPU.
    """
    batch, size = scores.shape[0], scores.shape[-1]
    rows = torch.where(allowed, scores, torch.full_like(scores, -math.inf))[:, 1:]  # [B, N, N+1]
    rows, offset = _shift_rows(rows, root_constraint)
    weights = torch.exp(rows)  # [B, d, h]; 0 where forbidden
    arcs = weights[..., 1:]  # [B, N, N] between words (dependent-major, so L transposed)
    in_weight = (weights if not root_constraint else arcs).sum(-1)  # [B, N]
    laplacian = torch.diag_embed(in_weight) - arcs
    if root_constraint:  # Koo et al. (2007): head word 1's column (row of L) -> root weights
        laplacian = torch.cat([weights[..., :1], laplacian[..., 1:]], dim=-1)
    padding = ~_word_mask(lengths, size)[:, 1:]  # [B, N]
    eye = torch.eye(size - 1, dtype=scores.dtype, device=scores.device).expand(batch, -1, -1)
    # Padded words get identity rows and columns (det unchanged); sentences without a tree get
    # the identity, so that their log det is finite and its gradient 0 instead of NaN.
    laplacian = laplacian + torch.diag_embed(padding.to(scores.dtype))
    laplacian = torch.where(feasible.view(-1, 1, 1), laplacian, eye)
    sign, logdet = torch.linalg.slogdet(laplacian)
    # The determinant of a feasible sentence is a sum of positive tree weights; a sign <= 0
    # means float64 lost it to cancellation (see the module docstring): NaN, never a wrong value.
    logdet = torch.where(sign > 0, logdet + offset, torch.full_like(logdet, math.nan))
    return torch.where(feasible, logdet, torch.full_like(logdet, -math.inf))


def _shift_rows(rows: torch.Tensor, root_constraint: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Log weights float64[B, N, N+1] shifted so that exp stays in range, and the float64[B] shift.

    Every tree takes one arc per word, so shifting row d by its max shifts every tree's score by
    the same amount: exact, and finer than one shift per sentence (no row underflows to zeros).
    With one root, every tree also takes exactly one ROOT arc, so the ROOT column is shifted too,
    which keeps it from underflowing when the words' best heads are other words. The shifts are
    detached: log Z does not depend on them, only its rounding does.
    """
    shift = rows.detach().amax(-1, keepdim=True)  # [B, N, 1]
    shift = torch.where(shift > -math.inf, shift, torch.zeros_like(shift))  # word without head
    rows = rows - shift
    offset = shift.sum((-1, -2))  # [B]
    if root_constraint:
        root = rows[..., 0].detach().amax(-1)  # [B]
        root = torch.where(root > -math.inf, root, torch.zeros_like(root))
        rows = torch.cat([rows[..., :1] - root.view(-1, 1, 1), rows[..., 1:]], dim=-1)
        offset = offset + root
    return rows, offset


def _has_tree(allowed: torch.Tensor, lengths: torch.Tensor, root_constraint: bool) -> torch.Tensor:
    """bool[B]: whether each sentence's allowed arcs contain a tree (with one root if asked)."""
    if bool((allowed.sum((-1, -2)) == lengths * lengths).all()):
        return torch.ones_like(lengths, dtype=torch.bool)  # n^2 arcs: nothing masked, complete
    words = _word_mask(lengths, allowed.shape[-1])  # [B, N+1]
    if root_constraint:  # some word on ROOT must reach every word through word-to-word arcs
        reach = _closure(allowed[:, 1:, 1:].transpose(1, 2))  # [B, h, d]: d reachable from h
        spans = (reach | ~words[:, None, 1:]).all(-1)  # [B, N]
        return (spans & allowed[:, 1:, 0]).any(-1)
    reach = _closure(allowed.transpose(1, 2))  # [B, h, d]
    return (reach[:, 0] | ~words).all(-1)


def _closure(adjacency: torch.Tensor) -> torch.Tensor:
    """Reflexive-transitive closure of bool[B, M, M] by repeated squaring (log2 M products)."""
    size = adjacency.shape[-1]
    reach = adjacency | torch.eye(size, dtype=torch.bool, device=adjacency.device)
    for _ in range(max(1, math.ceil(math.log2(size)))):
        as_float = reach.float()
        reach = torch.bmm(as_float, as_float) > 0
    return reach


def _inside(scores: torch.Tensor, lengths: torch.Tensor, root_constraint: bool) -> torch.Tensor:
    """Eisner's (1996) inside pass in log space, vectorised over the batch and span starts.

    ``scores`` is float64[B, N+1, N+1] with _NEG on forbidden arcs. Each chart is kept by
    span start (``[b, i, w]`` is the span i..i+w) and, where a split reads it by its end, also
    by span end (``[b, j, w]`` is the span j-w..j), so that every split of width w is a slice.
    """
    batch, size = scores.shape[0], scores.shape[-1]
    empty = scores.new_full((batch, size, size), _NEG)
    complete = scores.new_full((batch, size, size), _NEG)
    complete[:, :, 0] = 0.0  # a single word is a complete span of width 0
    right_start, left_start, right_end, left_end = (complete.clone() for _ in range(4))
    incomplete_right_start, incomplete_left_end = empty, empty.clone()
    for w in range(1, size):
        m = size - w  # spans i..i+w for i = 0..m-1
        # C_right(i, i+v) + C_left(i+v+1, i+w) for v = 0..w-1, then the arc between i and i+w
        inner = (right_start[:, :m, :w] + left_end[:, w:, :w].flip(-1)).logsumexp(-1)  # [B, m]
        incomplete_right_start[:, :m, w] = inner + scores.diagonal(-w, 1, 2)  # arc i -> i+w
        incomplete_left_end[:, w:, w] = inner + scores.diagonal(w, 1, 2)  # arc i+w -> i
        # I_right(i, i+v) + C_right(i+v, i+w) for v = 1..w
        right = incomplete_right_start[:, :m, 1 : w + 1] + right_end[:, w:, :w].flip(-1)
        # C_left(i, i+v) + I_left(i+v, i+w) for v = 0..w-1
        left = left_start[:, :m, :w] + incomplete_left_end[:, w:, 1 : w + 1].flip(-1)
        right, left = right.logsumexp(-1), left.logsumexp(-1)  # [B, m]
        right_start[:, :m, w], right_end[:, w:, w] = right, right
        left_start[:, :m, w], left_end[:, w:, w] = left, left
    rows = torch.arange(batch, device=scores.device)
    if not root_constraint:
        return right_start[rows, 0, lengths]  # ROOT heads the whole sentence, any fan-out
    # One word r on ROOT: C_left(1, r) + C_right(r, n) + arc 0 -> r, for r = 1..N
    roots = torch.arange(1, size, device=scores.device)
    widths = (lengths.unsqueeze(-1) - roots).clamp(min=0)  # [B, N]: n - r
    right = right_end[rows, lengths].gather(-1, widths)  # [B, N]
    total = left_start[:, 1, : size - 1] + right + scores[:, 1:, 0]
    total = torch.where(roots <= lengths.unsqueeze(-1), total, _NEG)  # r beyond the sentence
    return total.logsumexp(-1)


class _TreeKernelCPU(torch.autograd.Function):
    """Log Z by a numba kernel per sentence, its arc marginals kept for the backward.

    Non-projective trees (:func:`_matrix_tree_batch`): torch's batched float64 linear algebra
    costs milliseconds per small CPU matrix (``lu_solve`` against the identity took ~0.5 s for
    100 EWT sentences) and the Laplacian's construction as whole-batch tensor operations pads
    every sentence to the longest; here each sentence's own n x n Laplacian is built and
    inverted once (Gauss-Jordan, which also gives the determinant). Projective trees
    (:func:`_eisner_batch`): autograd through :func:`_inside` keeps every width's slices,
    (n + 1)³ floats for a sentence of n words (4.7 GB at 1,000 words); the kernel's inside and
    outside passes keep nine (n + 1)² charts. Either way the forward finds the marginals, so
    the backward is one product.
    """

    @staticmethod
    def forward(
        ctx, scores: torch.Tensor, lengths: torch.Tensor, root_constraint: bool, projective: bool
    ) -> torch.Tensor:
        kernel = _eisner_batch if projective else _matrix_tree_batch
        log_z, probs, bad = tiered(kernel, work=_kernel_work)(
            scores.detach().contiguous().numpy(), lengths.numpy().astype(np.int64), root_constraint
        )
        if bad[0] >= 0:
            _reject_arc(scores, *bad.tolist())
        ctx.save_for_backward(torch.from_numpy(probs))
        return torch.from_numpy(log_z)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        if torch.is_grad_enabled():  # create_graph: the marginals are constants here
            raise RuntimeError(SECOND_DERIVATIVE)
        (probs,) = ctx.saved_tensors
        return grad.view(-1, 1, 1) * probs, None, None, None


def _kernel_work(args: tuple) -> int:
    """A call's work for :mod:`tiered`: Eisner's three times over.

    Interpreted, 63 words take 112 ms here and 37 ms in Eisner (``tiered.SMALL_CALL``); the
    inside and outside passes with their marginals are about as slow.
    """
    return 3 * cubic_work(args)


@numba.njit(cache=True, nogil=True)
def _matrix_tree_batch(
    scores: np.ndarray, lengths: np.ndarray, root_constraint: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log Z float64[B], arc marginals float64[B, N+1, N+1] and the first bad arc int64[3].

    ``scores`` is float[B, N+1, N+1]; row 0, the diagonal and entries beyond ``lengths[b]`` are
    not read, ``-inf`` forbids an arc. Sentences without a tree get -inf and zero marginals.
    The bad arc (b, d, h) is the first that scores NaN or +inf, (-1, -1, -1) if none; the
    results are not filled in then.
    """
    batch = scores.shape[0]
    log_z = np.full(batch, -np.inf)
    probs = np.zeros(scores.shape)
    bad = np.full(3, -1)
    for b in range(batch):
        n = lengths[b]
        d, h = _bad_arc(scores[b], n)
        if d >= 0:
            bad[:] = (b, d, h)
            return log_z, probs, bad
        # Parser scores never forbid an arc inside a sentence: no reachability test for them.
        if not _masked(scores[b], n) or _has_tree_one(scores[b], n, root_constraint):
            log_z[b] = _matrix_tree_one(scores[b], n, root_constraint, probs[b])
    return log_z, probs, bad


@numba.njit(cache=True, nogil=True)
def _bad_arc(scores: np.ndarray, n: int) -> tuple[int, int]:
    """The first arc (d, h) of one sentence that scores NaN or +inf, (-1, -1) if none."""
    for d in range(1, n + 1):
        for h in range(n + 1):
            value = scores[d, h]
            if h != d and (np.isnan(value) or value == np.inf):
                return d, h
    return -1, -1


@numba.njit(cache=True, nogil=True)
def _masked(scores: np.ndarray, n: int) -> bool:
    """Whether one sentence forbids (scores ``-inf``) any arc between its words or from ROOT."""
    for d in range(1, n + 1):
        for h in range(n + 1):
            if h != d and scores[d, h] == -np.inf:
                return True
    return False


@numba.njit(cache=True, nogil=True)
def _has_tree_one(scores: np.ndarray, n: int, root_constraint: bool) -> bool:
    """Whether the arcs of one sentence that are not ``-inf`` contain a tree (one root if asked).

    A tree exists iff some start reaches every word through allowed arcs: ROOT itself, or with
    one root, a word allowed on ROOT through word-to-word arcs only.
    """
    if not root_constraint:
        return _reaches_all(scores, n, 0)
    for start in range(1, n + 1):
        if scores[start, 0] > -np.inf and _reaches_all(scores, n, start):
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _reaches_all(scores: np.ndarray, n: int, start: int) -> bool:
    """Whether every word 1..n is reachable from ``start`` by arcs h -> d not scored -inf.

    Arcs into ROOT do not exist, and ROOT is left only if it is the start.
    """
    seen = np.zeros(n + 1, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    seen[start], stack[0], top = True, start, 1
    while top > 0:
        top -= 1
        h = stack[top]
        for d in range(1, n + 1):
            if not seen[d] and d != h and scores[d, h] > -np.inf:
                seen[d], stack[top] = True, d
                top += 1
    return bool(seen[1:].all())


@numba.njit(cache=True, nogil=True)
def _matrix_tree_one(scores: np.ndarray, n: int, root_constraint: bool, probs: np.ndarray) -> float:
    """Log Z of one sentence with a tree; writes its marginals into ``probs`` (zeros on entry).

    The same Laplacian as :func:`_matrix_tree`, indexed by word - 1 (row i is word i + 1 as
    dependent), with the same row and ROOT shifts (see :func:`_shift_rows`). The marginal of
    an arc is its weight times d log det L / dL = L^-T chain-ruled through where the weight sits
    in L. NaN, and zero marginals, when the determinant's sign shows lost precision.
    """
    shifts = np.zeros(n + 1)  # [i]: the max score of word i + 1; [n]: the ROOT column's
    for i in range(n):
        best = -np.inf
        for h in range(n + 1):
            if h != i + 1:
                best = max(best, scores[i + 1, h])
        shifts[i] = best if best > -np.inf else 0.0  # a word without heads: infeasible anyway
    if root_constraint:  # every tree has one ROOT arc: shift the ROOT column as a whole
        best = (scores[1 : n + 1, 0] - shifts[:n]).max()
        shifts[n] = best if best > -np.inf else 0.0
    weights = np.zeros((n, n + 1))  # [i, h]: arc h -> word i + 1, shifted
    for i in range(n):
        for h in range(n + 1):
            if h != i + 1:
                weights[i, h] = np.exp(
                    scores[i + 1, h] - shifts[i] - (shifts[n] if h == 0 else 0.0)
                )
    laplacian = np.zeros((n, n))
    for i in range(n):
        for h in range(1, n + 1):
            if h != i + 1:
                laplacian[i, h - 1] = -weights[i, h]
                laplacian[i, i] += weights[i, h]
        if root_constraint:  # Koo et al. (2007): word 1's column holds the ROOT weights
            laplacian[i, 0] = weights[i, 0]
        else:
            laplacian[i, i] += weights[i, 0]
    inverse = np.zeros((n, n))
    sign, logdet = _gauss_jordan(laplacian, inverse)
    if sign <= 0.0:
        return np.nan
    for i in range(n):  # d log det / dL[i, j] = inverse[j, i]
        for h in range(1, n + 1):
            if h == i + 1:
                continue
            diagonal = inverse[i, i] if i > 0 or not root_constraint else 0.0
            column = inverse[h - 1, i] if h > 1 or not root_constraint else 0.0
            probs[i + 1, h] = weights[i, h] * (diagonal - column)
        probs[i + 1, 0] = weights[i, 0] * (inverse[0, i] if root_constraint else inverse[i, i])
    if not _marginals_add_up(probs, n, root_constraint):
        probs[:, :] = 0.0
        return np.nan
    return logdet + shifts.sum()


@numba.njit(cache=True, nogil=True)
def _marginals_add_up(probs: np.ndarray, n: int, root_constraint: bool) -> bool:
    """Whether each word has one head and (with one root) ROOT one dependent, to 1e-6.

    The inverse that gives the marginals is as inexact as the determinant when cancellation
    ruins it (see the module docstring), and a sign > 0 does not show every such case: these
    identities do, so the kernel answers NaN rather than a wrong log Z or gradient.
    """
    for i in range(1, n + 1):
        if abs(probs[i, : n + 1].sum() - 1.0) > 1e-6:
            return False
    return not root_constraint or abs(probs[1 : n + 1, 0].sum() - 1.0) <= 1e-6


@numba.njit(cache=True, nogil=True)
def _gauss_jordan(work: np.ndarray, inverse: np.ndarray) -> tuple[float, float]:
    """Inverts ``work`` float64[n, n] into ``inverse`` (zeros on entry; ``work`` is destroyed).

    Gauss-Jordan elimination with partial pivoting, n^3 multiply-adds for the inverse and the
    determinant together. Returns (sign, log |det|), or (0, -inf) if singular.
    """
    n = work.shape[0]
    for i in range(n):
        inverse[i, i] = 1.0
    sign, logdet = 1.0, 0.0
    for k in range(n):
        pivot_row = k
        for i in range(k + 1, n):
            if abs(work[i, k]) > abs(work[pivot_row, k]):
                pivot_row = i
        pivot = work[pivot_row, k]
        if pivot == 0.0:
            return 0.0, -np.inf
        if pivot_row != k:  # a row exchange flips the determinant's sign
            sign = -sign
            for j in range(n):
                work[k, j], work[pivot_row, j] = work[pivot_row, j], work[k, j]
                inverse[k, j], inverse[pivot_row, j] = inverse[pivot_row, j], inverse[k, j]
        if pivot < 0.0:
            sign = -sign
        logdet += np.log(abs(pivot))
        scale = 1.0 / pivot
        for j in range(k + 1, n):  # columns <= k of the pivot row are never read again
            work[k, j] *= scale
        for j in range(n):
            inverse[k, j] *= scale
        for i in range(n):
            factor = work[i, k]
            if i == k or factor == 0.0:
                continue
            for j in range(k + 1, n):
                work[i, j] -= factor * work[k, j]
            for j in range(n):
                inverse[i, j] -= factor * inverse[k, j]
    return sign, logdet


@numba.njit(cache=True, nogil=True)
def _eisner_batch(
    scores: np.ndarray, lengths: np.ndarray, root_constraint: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log Z float64[B] over projective trees, arc marginals float64[B, N+1, N+1], first bad arc.

    As :func:`_matrix_tree_batch` reads and answers, by Eisner's inside pass and its outside
    pass (:func:`_eisner_one`) in place of the determinant: sentences without a projective
    tree get -inf and zero marginals; the bad arc (b, d, h) is the first that scores NaN or
    +inf, (-1, -1, -1) if none, and the results are not filled in then.
    """
    batch = scores.shape[0]
    log_z = np.full(batch, -np.inf)
    probs = np.zeros(scores.shape)
    bad = np.full(3, -1)
    for b in range(batch):
        d, h = _bad_arc(scores[b], lengths[b])
        if d >= 0:
            bad[:] = (b, d, h)
            return log_z, probs, bad
    for b in range(batch):
        log_z[b] = _eisner_one(scores[b], lengths[b], root_constraint, probs[b])
    return log_z, probs, bad


@numba.njit(cache=True, nogil=True)
def _eisner_one(scores: np.ndarray, n: int, root_constraint: bool, probs: np.ndarray) -> float:
    """Log Z of one sentence over projective trees; its marginals into ``probs`` (zeros on entry).

    The charts of :func:`_inside` indexed by span (s, t), s < t: ``inner`` holds C_right(s, r) +
    C_left(r + 1, t) summed over the splits r, the incomplete spans add the arc between s and t
    to it, and the complete spans sum over their splits. The outside pass walks the spans from
    the widest down and gives each chart cell d log Z / d cell (the weight of the cell's
    derivations in the trees, as autograd would through the inside pass): a split of a cell
    whose log-value is v passes on exp(its two parts' sum - v) of the cell's weight to each
    part. An arc's marginal is the weight of the incomplete span it closes. Everything is in
    log space with _NEG for a forbidden arc, so no magnitude overflows; -inf, and zero
    marginals, where no projective tree is left.
    """
    size = n + 1
    arc = np.full((size, size), _NEG)  # [h, d]: the arc h -> d
    for d in range(1, size):
        for h in range(size):
            if h != d and scores[d, h] > -np.inf:
                arc[h, d] = scores[d, h]
    charts = np.full((5, size, size), _NEG)
    inner, right_i, left_i, right_c, left_c = charts[0], charts[1], charts[2], charts[3], charts[4]
    for s in range(size):
        right_c[s, s] = left_c[s, s] = 0.0
    parts = np.empty(size)
    for w in range(1, size):
        for s in range(size - w):
            t = s + w
            for r in range(s, t):
                parts[r - s] = right_c[s, r] + left_c[r + 1, t]
            inner[s, t] = _log_sum_exp(parts[:w])
            right_i[s, t] = inner[s, t] + arc[s, t]
            left_i[s, t] = inner[s, t] + arc[t, s]
            for r in range(s + 1, t + 1):
                parts[r - s - 1] = right_i[s, r] + right_c[r, t]
            right_c[s, t] = _log_sum_exp(parts[:w])
            for r in range(s, t):
                parts[r - s] = left_c[s, r] + left_i[r, t]
            left_c[s, t] = _log_sum_exp(parts[:w])
    weights = np.zeros((4, size, size))  # d log Z / d cell of each chart but inner
    right_ig, left_ig, right_cg, left_cg = weights[0], weights[1], weights[2], weights[3]
    if root_constraint:  # one word r on ROOT: C_left(1, r) + C_right(r, n) + arc 0 -> r
        for r in range(1, size):
            parts[r - 1] = left_c[1, r] + right_c[r, n] + arc[0, r]
        log_z = _log_sum_exp(parts[:n])
        if log_z <= _NEG / 2:
            return -np.inf
        for r in range(1, size):
            weight = np.exp(parts[r - 1] - log_z)
            probs[r, 0] = weight if scores[r, 0] > -np.inf else 0.0
            left_cg[1, r] += weight
            right_cg[r, n] += weight
    else:  # ROOT heads the whole sentence, any fan-out
        log_z = right_c[0, n]
        if log_z <= _NEG / 2:
            return -np.inf
        right_cg[0, n] = 1.0
    for w in range(n, 0, -1):
        for s in range(size - w):
            t = s + w
            weight = right_cg[s, t]
            if weight > 0.0:
                for r in range(s + 1, t + 1):
                    share = weight * np.exp(right_i[s, r] + right_c[r, t] - right_c[s, t])
                    right_ig[s, r] += share
                    right_cg[r, t] += share
            weight = left_cg[s, t]
            if weight > 0.0:
                for r in range(s, t):
                    share = weight * np.exp(left_c[s, r] + left_i[r, t] - left_c[s, t])
                    left_cg[s, r] += share
                    left_ig[r, t] += share
            if scores[t, s] > -np.inf:  # s -> t (ROOT -> t with one root: set above)
                probs[t, s] += right_ig[s, t]
            if s > 0 and scores[s, t] > -np.inf:  # t -> s
                probs[s, t] += left_ig[s, t]
            weight = right_ig[s, t] + left_ig[s, t]
            if weight > 0.0:
                for r in range(s, t):
                    share = weight * np.exp(right_c[s, r] + left_c[r + 1, t] - inner[s, t])
                    right_cg[s, r] += share
                    left_cg[r + 1, t] += share
    return log_z


@numba.njit(cache=True, nogil=True)
def _log_sum_exp(values: np.ndarray) -> float:
    """log(sum(exp(values))) of a non-empty float64[K], shifted by its max (exact for _NEG)."""
    top = values.max()
    total = 0.0
    for value in values:
        total += np.exp(value - top)
    return top + np.log(total)
