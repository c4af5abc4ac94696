"""Greedy and beam search over any transition system, generic over a scoring callback.

Torch-free like the rest of :mod:`transitions`: a search asks a ``score(rows, positions)``
callback for the transition scores of the configurations it holds (the torch side runs a
classifier there) and does its own bookkeeping in numpy. Many sentences advance together, one
callback call per step for every live configuration of the batch. A greedy search given a
:class:`~transitions.slots.SlotScorer` (a slot MLP's arrays) calls nothing back: it runs to the
end in one compiled loop.

Scores are normalized here: an item's score is the log-probability of its transition path, the
sum over its steps of ``log softmax`` over the legal transitions, plus, in the combined model of
Zhang & Clark (2008), ``arc_scores[b, d, h]`` for every arc h -> d its tree gets (a graph
model's head log-probabilities, weighted by the caller). A globally normalized model (trained
with the beam, Andor et al. 2016) is searched on its raw scores instead (``normalized=False``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_count, check_flag
from decoding.memory import available, over_half
from decoding.status import MAX_SCORE
from decoding.types import BoolArray, FloatArray, IntArray

from .configs import Configs, check_indices
from .slots import SlotScorer
from .systems import TransitionSystem, as_lengths

__all__ = ["Beam", "Scorer", "SearchResult", "beam_search", "greedy_configs", "greedy_search"]

Scorer = Callable[[IntArray, IntArray], npt.ArrayLike]
"""``score(rows int64[C], positions int64[C, K]) -> float[C, A]``: raw transition scores.

``rows`` are the sentences (batch rows) of the C configurations, ``positions`` their feature
positions (:meth:`Configs.positions`, -1 for an empty slot). Illegal transitions are masked by
the search, whatever score they get.
"""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The trees a search found, one per sentence.

    Attributes:
        heads: int64[B, N+1], ``-1`` at ROOT and padding (with arc_eager's ``attach_leftovers``
            off, also at words left headless).
        path_log_probs: float64[B], log-probability of the chosen transition path: the sum of
            the log-softmax (over legal transitions) of every transition taken. Not a tree
            probability: other paths may build the same tree.
        scores: float64[B], what the search maximized: ``path_log_probs`` plus the arc scores of
            the tree's arcs (equal to ``path_log_probs`` without arc scores).
        steps: int64[B], transitions taken.
    """

    heads: IntArray
    path_log_probs: FloatArray
    scores: FloatArray
    steps: IntArray


def greedy_search(
    system: TransitionSystem,
    lengths: npt.ArrayLike,
    score: Scorer,
    *,
    n_stack: int = 3,
    n_buffer: int = 2,
) -> SearchResult:
    """Greedy parsing of a batch in lockstep: the best legal transition, one step at a time.

    Args:
        system: the transition system.
        lengths: int[B], words per sentence.
        score: raw transition scores of the unfinished configurations; called once per step.
        n_stack: stack words in the feature positions.
        n_buffer: buffer words in the feature positions.

    Returns:
        :class:`SearchResult` (``scores`` equal ``path_log_probs``).
    """
    configs, log_probs = greedy_configs(system, lengths, score, n_stack=n_stack, n_buffer=n_buffer)
    heads, _ = system.tree(configs)
    return SearchResult(heads, log_probs, log_probs.copy(), configs.steps.copy())


def greedy_configs(
    system: TransitionSystem,
    lengths: npt.ArrayLike,
    score: Scorer,
    *,
    n_stack: int = 3,
    n_buffer: int = 2,
) -> tuple[Configs, FloatArray]:
    """The terminal configurations :func:`greedy_search` reaches, for analyses of the stack.

    Arguments as :func:`greedy_search`. Returns the B configurations and float64[B], the
    log-probability of each one's transition path.

    A :class:`SlotScorer` is not called back: the whole search runs in one compiled loop on its
    arrays (the same choices, but where the legal scores differ by less than the rounding of
    their log-softmax, which ties them for the callback: it takes the best raw score; its scores
    summed in its own order).
    """
    configs = system.initial(lengths)
    check_count(n_stack, "n_stack")  # the compiled loop of a SlotScorer reads no other check
    check_count(n_buffer, "n_buffer")
    if isinstance(score, SlotScorer):
        if score.n_slots != n_stack + n_buffer:
            raise ValueError(
                f"the scorer reads {score.n_slots} slots, not n_stack + n_buffer = "
                f"{n_stack + n_buffer}"
            )
        return configs, score.greedy(system, configs, n_stack)
    log_probs = np.zeros(len(configs))
    rows = np.flatnonzero(~system.terminal(configs))
    # Each step reads and updates the live rows alone, in two kernel calls (observe, advance):
    # a parse takes 2n steps of a batch's longest sentence, so per-step overhead adds up.
    while rows.size:
        legal, positions = system.observe(configs, rows, n_stack, n_buffer)
        legal_scores = _legal_log_softmax(score(rows, positions), legal)
        actions = legal_scores.argmax(1)
        chosen = legal_scores[np.arange(rows.size), actions]
        stuck = np.flatnonzero(chosen == -np.inf)
        if stuck.size:  # argmax took action 0, legal or not
            c = int(rows[stuck[0]])
            raise ValueError(
                f"configuration {c}: every legal transition scored -inf (forbidden) in "
                f"{configs.describe(c)}: the greedy search cannot go on"
            )
        log_probs[rows] += chosen
        rows = rows[system.advance(configs, rows, actions)]
    return configs, log_probs


def beam_search(
    system: TransitionSystem,
    lengths: npt.ArrayLike,
    score: Scorer,
    *,
    beam_size: int,
    n_stack: int = 3,
    n_buffer: int = 2,
    arc_scores: npt.ArrayLike | None = None,
    normalized: bool = True,
) -> SearchResult:
    """Beam search of a batch in lockstep (Zhang & Clark, 2008), one score call per step.

    Each sentence keeps its ``beam_size`` best live items. A step expands every live item by
    every legal transition and keeps, per sentence, the best ``beam_size`` expansions (ties go
    to the earlier item, then the lower action id, so ``beam_size=1`` is :func:`greedy_search`,
    but for transitions whose log-probabilities differ by less than the rounding of their sum
    with the item's score: the sum ties them, and the lower id is taken).
    Live items of a sentence have therefore always taken the same number of transitions.

    Systems whose paths differ in length (arc-eager, Unshift, swap; arc-standard and arc-hybrid
    always take 2n) are handled by moving an item out of the beam when it becomes terminal: its
    complete path competes with the other complete paths of its sentence by total score, and no
    longer takes a beam slot. Every step only adds log-probabilities (<= 0), so a live item's
    score bounds all its continuations: a sentence stops as soon as its best finished item
    scores at least as high as its best live one. With a beam wide enough never to prune, the
    result is the exact best path (tested against enumeration).

    Args:
        system: the transition system.
        lengths: int[B], words per sentence.
        score: raw transition scores of the live items; called once per step.
        beam_size: k >= 1, items kept per sentence.
        n_stack: stack words in the feature positions.
        n_buffer: buffer words in the feature positions.
        arc_scores: float[B, N+1, N+1] or None; ``arc_scores[b, d, h]`` (<= 0, e.g. a graph
            parser's head log-probability times a weight) is added to an item's score when its
            tree gets the arc h -> d, including the arcs to ROOT that end-of-input rules add
            (arc-eager's leftovers, Unshift's last word). -inf forbids an arc.
        normalized: items add the log-softmax of their transition (a locally trained model);
            False: the raw score itself (a globally normalized model, trained with the beam,
            Andor et al. 2016). Raw scores may be positive, so no sentence stops early: every
            item runs to its end.

    Returns:
        :class:`SearchResult` (``path_log_probs`` are log-softmax sums either way).

    Raises:
        ValueError: ``beam_size`` < 1; ``arc_scores`` of the wrong shape or with a positive or
            NaN entry (it would break the stopping bound); a sentence whose items all died on
            ``-inf`` scores before any finished (the beam was too narrow to find a tree of
            finite score: a wider beam may find one). Returning the headless ``-inf`` result
            instead would hand callers a non-tree.
    """
    lengths = as_lengths(lengths)
    beam = Beam(system, lengths, beam_size, arc_scores, normalized=normalized)
    while beam.live.any():
        rows = np.flatnonzero(beam.live)
        positions = beam.configs.positions(n_stack, n_buffer)[rows]
        beam.step(rows, score(rows // beam_size, positions))
    _check_found(beam.best_scores, lengths, beam_size)
    return SearchResult(beam.best_heads, beam.best_log_probs, beam.best_scores, beam.best_steps)


_ITEM_BYTES = 2 * 4 * 8
"""Bytes a beam item takes per word it may hold: a configuration's four int64 rows (stack,
buffer, heads, labels), kept and expanded (twice)."""

_SMALLEST_REFUSED = 2**20
"""A beam needing less than this (1 MiB) is never refused, whatever memory is said to be left."""


def _check_beam(lengths: IntArray, k: int) -> None:
    """Refuse lengths below 1, and a beam whose items would take more than half the memory left.

    Raises:
        ValueError: naming the sentence (its place in ``lengths``: the rows of a beam of k
            items per sentence were named, sentence 8 of 2), or ``beam_size`` and what it
            would take (``beam_size=10**8`` was a MemoryError, or the kernel's kill).
    """
    short = np.flatnonzero(lengths < 1)
    if short.size:
        raise ValueError(f"sentence {short[0]}: length {lengths[short[0]]} is below 1")
    needed = lengths.shape[0] * k * _ITEM_BYTES * (int(lengths.max(initial=1)) + 1)
    if needed > _SMALLEST_REFUSED and over_half(needed, left := available()):
        raise ValueError(
            f"beam_size={k}: {lengths.shape[0] * k:,} items would take {needed / 2**30:.1f} GiB, "
            f"more than half of the {left / 2**30:.1f} GiB this process may use"
        )


class Beam:
    """The live items of every sentence (rows ``b*k .. b*k+k-1``) and the best finished one.

    :func:`beam_search` steps it to the end; beam training (``biaffine.parsers.beam_loss``)
    steps it itself, reading after each :meth:`step` which expansions were kept
    (``source``, ``actions``, ``kept``) and which items finished, to follow the gold path and
    rebuild the kept items' scores on its own (differentiable) numbers.

    Attributes:
        configs: B*k configurations; a dead row holds a stale configuration.
        live: bool[B*k], the row holds a live item.
        item_scores, item_log_probs: float64[B*k], search score and path log-probability.
        best_heads: int64[B, N+1], the best finished tree of each sentence so far.
        best_scores, best_log_probs: float64[B], -inf while none finished.
        best_steps: int64[B].
        source: int64[B*k], after a step: the row each row's item was expanded from.
        actions: int64[B*k], after a step: the transition that expansion took.
        kept: bool[B*k], after a step: the row holds a kept expansion (live or just finished).
        finished: bool[B*k], after a step: the row's item just became terminal.
    """

    def __init__(
        self,
        system: TransitionSystem,
        lengths: npt.ArrayLike,
        beam_size: int,
        arc_scores: npt.ArrayLike | None = None,
        *,
        normalized: bool = True,
    ) -> None:
        """Initial items, one per sentence (arguments as :func:`beam_search`).

        Raises:
            ValueError: ``beam_size`` < 1, or bad ``arc_scores`` (see :func:`beam_search`).
        """
        beam_size = check_count(beam_size, "beam_size", 1)
        normalized = check_flag(normalized, "normalized")  # "no" was read as True
        lengths = as_lengths(lengths)
        n, k = lengths.shape[0], beam_size
        _check_beam(lengths, k)
        self.system, self.k = system, k  # k: items kept per sentence
        self.arc_scores = _check_arc_scores(arc_scores, lengths)
        self.normalized = normalized
        self.configs = system.initial(np.repeat(lengths, k))
        self.live = np.zeros(n * k, dtype=np.bool_)
        self.live[::k] = True  # one initial item per sentence; never terminal (n >= 1)
        self.item_scores = np.where(self.live, 0.0, -np.inf)
        self.item_log_probs = self.item_scores.copy()
        self.best_heads = np.full((n, self.configs.max_words + 1), -1, dtype=np.int64)
        self.best_scores = np.full(n, -np.inf)
        self.best_log_probs = np.full(n, -np.inf)
        self.best_steps = np.zeros(n, dtype=np.int64)
        self.source = np.arange(n * k)
        self.actions = np.zeros(n * k, dtype=np.int64)
        self.kept = self.live.copy()
        self.finished = np.zeros(n * k, dtype=np.bool_)

    def step(self, rows: IntArray, raw: npt.ArrayLike) -> None:
        """Expand the live ``rows`` by their legal transitions, keep the best k per sentence.

        Args:
            rows: int64[C], the live rows, ascending.
            raw: float[C, A], the raw transition scores of their items (illegal ones ignored).
        """
        legal = self.system.legal(self.configs)[rows]
        log_probs = _legal_log_softmax(raw, legal)
        gains = log_probs if self.normalized else np.where(legal, _float64(raw), -np.inf)
        k, n_actions = self.k, log_probs.shape[1]
        n_rows = self.live.shape[0]
        step_log_probs = np.full((n_rows, n_actions), -np.inf)
        step_log_probs[rows] = log_probs
        step_gains = np.full((n_rows, n_actions), -np.inf)
        step_gains[rows] = gains
        if self.arc_scores is not None:
            step_gains[rows] += self._arc_gains(rows, log_probs)
        # Candidates of sentence b: item j's action a at column j * A + a of row b.
        candidates = (self.item_scores[:, None] + step_gains).reshape(n_rows // k, k * n_actions)
        order = np.argsort(-candidates, axis=1, kind="stable")[:, :k]  # ties: lower column
        chosen = np.take_along_axis(candidates, order, 1).ravel()
        sentence = np.repeat(np.arange(n_rows // k), k)
        self.source = sentence * k + order.ravel() // n_actions
        self.actions = order.ravel() % n_actions
        path = self.item_log_probs[self.source] + step_log_probs[self.source, self.actions]
        self.configs = self.configs.take(self.source)
        self.live = chosen > -np.inf
        self.kept = self.live.copy()
        self.system.apply(self.configs, np.where(self.live, self.actions, 0), None, self.live)
        self.item_scores = np.where(self.live, chosen, -np.inf)
        self.item_log_probs = np.where(self.live, path, -np.inf)
        self.finished = self.live & self.system.terminal(self.configs)
        self._finish(self.finished)
        if self.normalized:  # the bound below holds for log-probabilities only
            self._stop_settled_sentences()

    def drop(self, sentences: npt.ArrayLike) -> None:
        """End the search of ``sentences`` (int[S]): their live items die.

        Raises:
            ValueError: ``sentences`` not int[S] of the beam's sentences (-1 ended the last,
                1.7 the second, 5 was an IndexError of row 10).
        """
        count = self.best_scores.shape[0]
        chosen = check_indices(sentences, count, "sentences", "one of the {} sentences")
        rows = (chosen[:, None] * self.k + np.arange(self.k)).ravel()
        self.live[rows] = False
        self.item_scores[rows] = -np.inf

    def _arc_gains(self, rows: IntArray, log_probs: FloatArray) -> FloatArray:
        """float64[C, A]: the arc score of the arc each legal action of ``rows`` creates."""
        assert self.arc_scores is not None
        legal = np.zeros((self.live.shape[0], log_probs.shape[1]), dtype=np.bool_)
        legal[rows] = log_probs > -np.inf
        arcs = self.system.candidate_arcs(self.configs, legal)[rows]  # [C, A, 2]
        item, action = np.nonzero(arcs[:, :, 1] >= 0)
        gains = np.zeros(log_probs.shape)
        head, dep = arcs[item, action, 0], arcs[item, action, 1]
        gains[item, action] = self.arc_scores[rows[item] // self.k, dep, head]
        return gains

    def _finish(self, finished: BoolArray) -> None:
        """Move the items that just became terminal out of the beam, keeping each best one."""
        if not finished.any():
            return
        rows = np.flatnonzero(finished)
        heads, _ = self.system.tree(self.configs.take(rows))
        scores = self.item_scores[rows].copy()
        if self.arc_scores is not None:  # arcs that end-of-input rules add (e.g. leftovers)
            added = (heads >= 0) & (self.configs.heads[rows] < 0)
            item, dep = np.nonzero(added)
            sentence = rows[item] // self.k
            np.add.at(scores, item, self.arc_scores[sentence, dep, heads[item, dep]])
        for i in np.argsort(-scores, kind="stable"):  # best first: ties keep the earlier item
            sentence = rows[i] // self.k
            if scores[i] > self.best_scores[sentence]:
                self.best_scores[sentence] = scores[i]
                self.best_log_probs[sentence] = self.item_log_probs[rows[i]]
                self.best_heads[sentence] = heads[i]
                self.best_steps[sentence] = self.configs.steps[rows[i]]
        self.live[rows] = False
        self.item_scores[rows] = -np.inf

    def _stop_settled_sentences(self) -> None:
        """End sentences whose best finished item no live item can beat (scores only fall)."""
        best_live = self.item_scores.reshape(-1, self.k).max(1)
        settled = self.best_scores >= best_live
        self.live &= ~np.repeat(settled, self.k)
        self.item_scores[~self.live] = -np.inf


def _check_found(best_scores: FloatArray, lengths: IntArray, beam_size: int) -> None:
    """Refuse a result without a tree: every item of a sentence died on ``-inf`` scores."""
    dead = np.flatnonzero(best_scores == -np.inf)
    if dead.size:
        b = int(dead[0])
        raise ValueError(
            f"beam search: sentence {b} ({lengths[b]} words): every item died on -inf scores "
            f"(forbidden arcs or transitions) before one finished, so beam_size={beam_size} "
            "was too narrow to find a tree of finite score; a wider beam may find one"
        )


def _float64(raw: npt.ArrayLike, name: str = "the scorer's output") -> FloatArray:
    # as_array: a tensor that requires grad is one line naming it, not torch's RuntimeError.
    array = as_array(raw, name)
    # Complex scores lost their imaginary part with a warning, strings failed inside numpy.
    if array.dtype.kind not in "fiu":
        raise ValueError(f"{name} must hold real numbers, got dtype {array.dtype}")
    return np.asarray(array, dtype=np.float64)


def _legal_log_softmax(raw: npt.ArrayLike, legal: BoolArray) -> FloatArray:
    """float64[C, A]: log-softmax over the legal entries of each row, -inf elsewhere.

    A row whose legal entries are all -inf is all -inf.

    Raises:
        ValueError: ``raw`` is not shaped like ``legal`` (it would broadcast: one row of
            scores shared by every configuration, with no error), or holds NaN or +inf at a
            legal transition (a NaN was picked as the best move and then refused as illegal,
            or left a NaN path log-probability; +inf leaves no distribution to normalise).
    """
    values = _float64(raw)
    if values.shape != legal.shape:
        raise ValueError(
            f"score(rows, positions) returned shape {values.shape}, expected (C, A) = "
            f"{legal.shape}: a row per configuration, a column per transition"
        )
    bad = legal & ~((np.abs(values) <= MAX_SCORE) | (values == -np.inf))
    if bad.any():
        row, action = np.argwhere(bad)[0]
        raise ValueError(
            f"score(rows, positions) returned {values[row, action]} at row {row}, transition "
            f"{action}: a legal transition's score must be a number within "
            f"+-{MAX_SCORE:g} (sums of larger ones overflow) or -inf"
        )
    scores = np.where(legal, values, -np.inf)
    top = scores.max(1, keepdims=True)
    # A row without a finite legal score stays all -inf (-inf - -inf would be NaN).
    finite = top > -np.inf
    shifted = scores - np.where(finite, top, 0.0)
    with np.errstate(divide="ignore"):
        norm = np.log(np.exp(shifted).sum(1, keepdims=True))
    return shifted - np.where(finite, norm, 0.0)


def _check_arc_scores(arc_scores: npt.ArrayLike | None, lengths: IntArray) -> FloatArray | None:
    if arc_scores is None:
        return None
    array = _float64(arc_scores, "arc_scores")
    width = int(lengths.max(initial=1)) + 1
    expected = (lengths.shape[0], width, width)
    if array.ndim != 3 or array.shape[0] != expected[0] or min(array.shape[1:]) < width:
        raise ValueError(f"arc_scores must be float[B, N+1, N+1] = {expected}, got {array.shape}")
    # -1e308 passed, and two such arcs summed to -inf: "every item died on -inf scores".
    if not ((array <= 0) & ((array >= -MAX_SCORE) | (array == -np.inf))).all():
        raise ValueError(
            f"arc_scores must be <= 0 (log-probabilities times a weight), -inf or at least "
            f"-{MAX_SCORE:g} (sums of lower ones overflow), no NaN"
        )
    return array
