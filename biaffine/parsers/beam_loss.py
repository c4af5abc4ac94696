"""Globally normalized beam loss with early update (Andor et al. 2016; Zhou et al. 2015).

Under a globally normalized transition model a path scores the sum of its **raw** transition
scores (the MLP's logits, no softmax), plus, in the combined model of Zhang & Clark (2008), the
weighted graph arc log-probabilities of the arcs its tree gets; ``P(path)`` is ``exp(score)``
over the sum for every complete path (a CRF over transition sequences). Training approximates
that sum with a beam: the batch is decoded in lockstep by :class:`transitions.Beam` on the
model's own scores (``normalized=False``, the search that parses the trained model), following
the static oracle's path, and the loss of a sentence is ``logsumexp`` over the beam's items,
gold included, minus the gold path's score:

- early update (Collins & Roark 2004): at the first step whose kept expansions miss the gold
  path's, on that step's prefixes: the kept items, the complete paths finished before (paths of
  arc-eager or swap differ in length), and the gold prefix; the sentence then stops;
- otherwise at the end, over every complete path the beam finished (the gold among them).

With a beam that never prunes, the end loss is the exact negative log-likelihood of the gold
path under the globally normalized model (tested against enumeration).

The beam decides on detached numbers; the scores are rebuilt as tensors along the kept
expansions (one gather per step), so gradients reach every transition and arc score used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch

import transitions

__all__ = ["BeamLosses", "TensorScorer", "beam_losses"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TensorScorer = Callable[[IntArray, IntArray], torch.Tensor]
"""``score(rows int64[C], positions int64[C, K]) -> float[C, A]``: raw transition scores as
:data:`transitions.Scorer` takes them, but a tensor (differentiable, on the model's device)."""


@dataclass(frozen=True, slots=True)
class BeamLosses:
    """The beam loss of each sentence of a batch.

    Attributes:
        losses: float[B], ``logsumexp`` over the beam's items minus the gold path's score
            (>= 0), differentiable.
        updated_at: int64[B], transitions in the paths the loss compares (the step of the early
            update, else the sentence's last step).
        early: bool[B], the gold path fell off the beam (early update).
    """

    losses: torch.Tensor
    updated_at: IntArray
    early: BoolArray


def beam_losses(
    system: transitions.TransitionSystem,
    lengths: IntArray,
    gold: transitions.OracleSequences,
    score: TensorScorer,
    *,
    beam_size: int,
    n_stack: int = 3,
    n_buffer: int = 2,
    arc_scores: torch.Tensor | None = None,
) -> BeamLosses:
    """Decode a batch with a beam on its raw scores and return each sentence's beam loss.

    Args:
        system: the transition system.
        lengths: int64[B], words per sentence.
        gold: the static oracle's sequences of the B gold trees (``actions`` and ``offsets``
            are read).
        score: raw transition scores of the live items, called once per step.
        beam_size: k >= 1, items kept per sentence.
        n_stack: stack words in the feature positions.
        n_buffer: buffer words in the feature positions.
        arc_scores: float[B, N+1, N+1] or None: ``arc_scores[b, d, h]`` (<= 0) added for every
            arc h -> d an item's tree gets (the combined model's weighted graph
            log-probabilities), differentiable.

    Returns:
        :class:`BeamLosses`.
    """
    walk = _Walk(system, lengths, gold, score, beam_size, (n_stack, n_buffer), arc_scores)
    while walk.beam.live.any():
        walk.step()
    return walk.result()


class _Walk:
    """A beam stepped on detached scores, with the kept items' scores rebuilt as tensors.

    Attributes:
        beam: the :class:`transitions.Beam` (raw scores).
        path: float[B*k], the raw transition score of each row's item (stale at dead rows).
        gold_row: int64[B], the row holding the gold path's item; -1 once it finished or fell.
        sentences, scores: the beam's items met so far (sentence ids and score tensors).
        gold_sentences, gold_scores: the gold path's score, once per sentence.
    """

    def __init__(
        self,
        system: transitions.TransitionSystem,
        lengths: IntArray,
        gold: transitions.OracleSequences,
        score: TensorScorer,
        beam_size: int,
        slots: tuple[int, int],
        arc_scores: torch.Tensor | None,
    ) -> None:
        lengths = np.asarray(lengths, dtype=np.int64)
        plain = None if arc_scores is None else arc_scores.detach().double().cpu().numpy()
        self.beam = transitions.Beam(system, lengths, beam_size, plain, normalized=False)
        self.system, self.k, self.slots = system, beam_size, slots
        self.score, self.arc_scores, self.gold = score, arc_scores, gold
        n = lengths.shape[0]
        self.steps = 0
        self.path: torch.Tensor | None = None  # dtype and device of the first scores
        self.gold_row = np.arange(n) * beam_size
        self.updated_at = np.zeros(n, dtype=np.int64)
        self.early = np.zeros(n, dtype=np.bool_)
        self.sentences: list[IntArray] = []
        self.scores: list[torch.Tensor] = []
        self.gold_sentences: list[IntArray] = []
        self.gold_scores: list[torch.Tensor] = []

    def step(self) -> None:
        """One transition for every live item; items, gold and updates followed."""
        beam, k = self.beam, self.k
        rows = np.flatnonzero(beam.live)
        positions = beam.configs.positions(*self.slots)[rows]
        raw = self.score(rows // k, positions)  # [C, A]
        old_path = raw.new_zeros(beam.live.shape[0]) if self.path is None else self.path
        before = beam.configs
        at = np.full(beam.live.shape[0], -1)
        at[rows] = np.arange(rows.size)  # row -> its index in raw
        beam.step(rows, raw.detach().double().cpu().numpy())
        self.steps += 1
        kept = np.flatnonzero(beam.kept)
        source, actions = beam.source[kept], beam.actions[kept]
        gathered = old_path[source] + raw[at[source], actions]
        index = torch.from_numpy(kept).to(raw.device)
        self.path = raw.new_zeros(beam.live.shape[0]).index_copy(0, index, gathered)
        self.updated_at[np.unique(rows // k)] = self.steps
        finished = np.flatnonzero(beam.finished)
        self._add(finished, self.system.tree(beam.configs.take(finished))[0])
        self._follow_gold(before, raw, at, old_path)

    def _add(self, rows: IntArray, heads: IntArray) -> torch.Tensor:
        """Count the items of ``rows`` (their trees so far: ``heads``) into the partition."""
        assert self.path is not None
        sentences = rows // self.k
        scores = self.path[torch.from_numpy(rows).to(self.path.device)]
        scores = scores + self._arc_sums(sentences, heads)
        self.sentences.append(sentences)
        self.scores.append(scores)
        return scores

    def _arc_sums(self, sentences: IntArray, heads: IntArray) -> torch.Tensor | float:
        """float[M]: the arc scores of each tree so far (``heads`` int64[M, N+1], -1: none)."""
        if self.arc_scores is None or sentences.size == 0:
            return 0.0
        device = self.arc_scores.device
        has = torch.from_numpy(heads >= 0).to(device)
        b = torch.from_numpy(sentences).to(device)[:, None]
        d = torch.arange(heads.shape[1], device=device)[None, :]
        h = torch.from_numpy(np.maximum(heads, 0)).to(device)
        values = self.arc_scores[b, d, h]  # [M, N+1]
        return torch.where(has, values, torch.zeros_like(values)).sum(1)

    def _follow_gold(
        self,
        before: transitions.Configs,
        raw: torch.Tensor,
        at: IntArray,
        old_path: torch.Tensor,
    ) -> None:
        """Move each live gold item to its kept expansion, or update early where none is."""
        beam, k = self.beam, self.k
        sentences = np.flatnonzero(self.gold_row >= 0)
        if sentences.size == 0:
            return
        source = self.gold_row[sentences]
        actions = self.gold.actions[self.gold.offsets[sentences] + self.steps - 1]
        block = sentences[:, None] * k + np.arange(k)  # [G, k]: each sentence's rows
        match = (
            beam.kept[block]
            & (beam.source[block] == source[:, None])
            & (beam.actions[block] == actions[:, None])
        )
        found = match.any(1)
        rows = block[np.arange(sentences.size), match.argmax(1)][found]
        done = beam.finished[rows]
        if done.any():
            ended = rows[done]
            self._gold(ended // k, self._add_scores_of(ended))
        self.gold_row[sentences[found]] = np.where(done, -1, rows)
        fallen = sentences[~found]
        if fallen.size:
            source, actions = source[~found], actions[~found]
            prefix = old_path[source] + raw[at[source], actions]  # the gold's, without arcs
            self._update_early(fallen, before, source, actions, prefix)

    def _add_scores_of(self, finished_rows: IntArray) -> torch.Tensor:
        """The partition entries :meth:`step` just added for ``finished_rows`` (gold's)."""
        sentences, scores = self.sentences[-1], self.scores[-1]
        rows = np.flatnonzero(self.beam.finished)
        assert np.array_equal(sentences, rows // self.k)
        where = np.searchsorted(rows, finished_rows)
        return scores[torch.from_numpy(where).to(scores.device)]

    def _update_early(
        self,
        sentences: IntArray,
        before: transitions.Configs,
        source: IntArray,
        actions: IntArray,
        prefix: torch.Tensor,
    ) -> None:
        """The gold expansions of ``sentences`` fell off: their loss uses this step's prefixes.

        Args:
            sentences: int64[G].
            before: the configurations before the step.
            source: int64[G], the row of each gold item before the step.
            actions: int64[G], the gold transitions the beam did not keep.
            prefix: float[G], the gold prefixes' transition scores.
        """
        beam, k = self.beam, self.k
        block = (sentences[:, None] * k + np.arange(k)).ravel()
        rows = block[beam.live[block]]  # the kept items still live (finished ones are counted)
        self._add(rows, beam.configs.heads[rows])
        gold = before.take(source)
        self.system.apply(gold, actions)
        ended = self.system.terminal(gold)
        heads = gold.heads.copy()
        if ended.any():  # end-of-input arcs (arc-eager's leftovers)
            heads[ended] = self.system.tree(gold.take(np.flatnonzero(ended)))[0]
        scores = prefix + self._arc_sums(sentences, heads)
        self.sentences.append(sentences)
        self.scores.append(scores)
        self._gold(sentences, scores)
        beam.drop(sentences)
        self.gold_row[sentences] = -1
        self.early[sentences] = True

    def _gold(self, sentences: IntArray, scores: torch.Tensor) -> None:
        self.gold_sentences.append(sentences)
        self.gold_scores.append(scores)

    def result(self) -> BeamLosses:
        """Each sentence's ``logsumexp`` over its items minus its gold score."""
        n = self.gold_row.shape[0]
        assert self.path is not None
        device, dtype = self.path.device, self.path.dtype
        sentences = torch.from_numpy(np.concatenate(self.sentences)).to(device)
        scores = torch.cat([torch.as_tensor(s, dtype=dtype, device=device) for s in self.scores])
        top = torch.full((n,), -torch.inf, dtype=dtype, device=device)
        top = top.scatter_reduce(0, sentences, scores.detach(), "amax")
        total = torch.zeros(n, dtype=dtype, device=device)
        total = total.index_add(0, sentences, (scores - top[sentences]).exp())
        gold_ids = np.concatenate(self.gold_sentences)
        assert np.array_equal(np.sort(gold_ids), np.arange(n)), "one gold score per sentence"
        gold = torch.zeros(n, dtype=dtype, device=device).index_add(
            0, torch.from_numpy(gold_ids).to(device), torch.cat(self.gold_scores)
        )
        losses = total.log() + top - gold
        return BeamLosses(losses, self.updated_at.copy(), self.early.copy())
