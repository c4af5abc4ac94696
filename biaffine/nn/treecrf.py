"""First-order tree CRF over dependency trees: log-partition, arc marginals and the tree loss.

Non-projective trees by the Matrix-Tree theorem (Koo et al., 2007), projective ones by Eisner's
inside algorithm, each with or without the single-root constraint. Scores follow the project's
convention: ``arc_scores[b, d, h]`` scores the arc h -> d, position 0 is ROOT, row 0 and the
diagonal are ignored, ``-inf`` forbids an arc, and ``lengths[b]`` counts the words of sentence b.

Precision: the projective inside pass is in log space and exact at any magnitude. The
determinant is not: when the words' best heads form a cycle that every tree must break at a
cost of G nats, the Laplacian is singular up to exp(-G), so float64 loses log Z for G beyond
about 35 (both variants; the single-root one shifts its ROOT column, which saves the commonest
case, a word cycle above every ROOT arc). Such a sentence gives NaN where the sign reveals it,
and can be silently inexact otherwise (scores uniform over +-1e3: about a quarter of 2-5 word
sentences). Moderate scores (differences of a few tens, as a parser's) are far from this.
"""

from __future__ import annotations

import math

import torch

__all__ = ["crf_loss", "log_partition", "marginals", "tree_log_prob", "tree_score"]

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
    marginals). Non-projective single-root trees use Koo et al.'s Laplacian whose first row is
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
    scores, allowed = _prepare(arc_scores, lengths)
    logz = _log_partition64(scores, allowed, lengths, root_constraint, projective)
    return logz.to(arc_scores.dtype)


def marginals(
    arc_scores: torch.Tensor,
    lengths: torch.Tensor,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> torch.Tensor:
    """Probability of each arc under the tree CRF, as the gradient of :func:`log_partition`.

    Autograd of the log-determinant is the closed form of Koo et al. (2007) (one inverse of the
    Laplacian, chain-ruled through its construction), so a separate formula would only add code
    to keep in step; the projective case has no cheaper closed form than outside = backward.

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
    scores, allowed = _prepare(arc_scores.detach(), lengths)
    with torch.enable_grad():
        scores.requires_grad_(True)
        logz = _log_partition64(scores, allowed, lengths, root_constraint, projective)
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
    scores, allowed = _prepare(arc_scores, lengths)
    _check_heads(heads, lengths, root_constraint)
    logz = _log_partition64(scores, allowed, lengths, root_constraint, projective)
    return (tree_score(scores, heads, lengths) - logz).to(arc_scores.dtype)


def crf_loss(
    arc_scores: torch.Tensor,
    heads: torch.Tensor,
    lengths: torch.Tensor,
    *,
    root_constraint: bool = True,
    projective: bool = False,
) -> torch.Tensor:
    """Negative log-likelihood of the gold trees, averaged over words (not sentences).

    Per word, like the local head cross entropy (``F.cross_entropy`` over the words of a
    batch), so the two losses have the same scale and a switch between them keeps the
    learning rate and clipping settings meaningful; long sentences weigh by their arcs.

    Args:
        arc_scores: float[B, N+1, N+1], as for :func:`log_partition`.
        heads: int64[B, N+1], gold heads (``-1`` at ROOT and padding).
        lengths: int[B], words per sentence.
        root_constraint: normalise over single-rooted trees only (UD gold trees are) if True.
        projective: normalise over projective trees only if True.

    Returns:
        Scalar in the dtype of ``arc_scores``: sum over sentences of (log Z - gold score)
        divided by the number of words. ``+inf`` if a gold arc is forbidden (``-inf``).

    Raises:
        ValueError: as :func:`tree_log_prob`.
    """
    log_prob = tree_log_prob(
        arc_scores.double(), heads, lengths, root_constraint=root_constraint, projective=projective
    )
    return (-log_prob.sum() / lengths.sum()).to(arc_scores.dtype)


def _prepare(arc_scores: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 scores and bool[B, N+1, N+1] of the arcs allowed (real, not diagonal, not -inf)."""
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
    words = _word_mask(lengths, size)  # [B, N+1]
    scored = words.unsqueeze(-1) & words.unsqueeze(-2)  # [B, d, h]: both ends real
    scored[:, :, 0] = words  # ROOT heads any word
    scored &= ~torch.eye(size, dtype=torch.bool, device=arc_scores.device)
    bad = (scored & (arc_scores.isnan() | (arc_scores == math.inf))).nonzero()
    if len(bad):
        b, d, h = (int(i) for i in bad[0])
        raise ValueError(f"sentence {b}: arc {h} -> {d} scores {float(arc_scores[b, d, h])}")
    return arc_scores.double(), scored & (arc_scores > -math.inf)


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
    scores: torch.Tensor,
    allowed: torch.Tensor,
    lengths: torch.Tensor,
    root_constraint: bool,
    projective: bool,
) -> torch.Tensor:
    if projective:
        masked = torch.where(allowed, scores, torch.full_like(scores, _NEG))
        logz = _inside(masked, lengths, root_constraint)
        return torch.where(logz > _NEG / 2, logz, torch.full_like(logz, -math.inf))
    return _matrix_tree(scores, allowed, lengths, root_constraint)


def _matrix_tree(
    scores: torch.Tensor, allowed: torch.Tensor, lengths: torch.Tensor, root_constraint: bool
) -> torch.Tensor:
    """Log det of the (root-replaced) Laplacian over words 1..N, float64[B]; -inf without tree."""
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
    feasible = _has_tree(allowed, lengths, root_constraint)  # [B]
    eye = torch.eye(size - 1, dtype=scores.dtype, device=scores.device).expand(batch, -1, -1)
    # Padded words get identity rows and columns (det unchanged); sentences without a tree get
    # the identity, so that their log det is finite and its gradient 0 instead of NaN.
    laplacian = laplacian + torch.diag_embed(padding.to(scores.dtype))
    laplacian = torch.where(feasible.view(-1, 1, 1), laplacian, eye)
    sign, logdet = _SignedLogDet.apply(laplacian)
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


class _SignedLogDet(torch.autograd.Function):
    """``torch.linalg.slogdet`` whose backward reuses the LU factors for A^-T.

    Torch's own backward spends seconds per EWT batch on CPU in ``linalg_lu_solve`` (its
    right-hand side is a broadcast gradient); here one batched solve against the identity.
    """

    @staticmethod
    def forward(ctx, matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lu, pivots, _ = torch.linalg.lu_factor_ex(matrix)
        diagonal = lu.diagonal(dim1=-2, dim2=-1)  # [B, M]
        steps = torch.arange(1, matrix.shape[-1] + 1, device=matrix.device)
        swaps = (pivots != steps).sum(-1)  # row exchanges of the LU
        sign = diagonal.sign().prod(-1) * (1 - 2 * (swaps % 2)).to(matrix.dtype)
        ctx.save_for_backward(lu, pivots)
        ctx.mark_non_differentiable(sign)
        return sign, diagonal.abs().log().sum(-1)

    @staticmethod
    def backward(ctx, _: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
        lu, pivots = ctx.saved_tensors
        eye = torch.eye(lu.shape[-1], dtype=lu.dtype, device=lu.device).expand_as(lu)
        inverse_t = torch.linalg.lu_solve(lu, pivots, eye.contiguous(), adjoint=True)  # A^-T
        return grad.view(-1, 1, 1) * inverse_t
