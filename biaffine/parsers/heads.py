"""The heads both parser families compose on the shared encoder's states.

- :class:`ArcScorer`: the biaffine arc scorer with a head prior (Dozat & Manning, 2017), the
  graph parser's whole head finder and the combined model's graph head.
- :class:`LabelScorer`: a biaffine label scorer that scores one arc per word
  (:meth:`~LabelScorer.at`, what training needs; in parsing :meth:`~LabelScorer.at_words`, the
  words' arcs alone), K arcs into each word (:meth:`~LabelScorer.at_heads`, what decoding
  heads with their labels reads) or every pair (:meth:`~LabelScorer.all`).
- :class:`Taggers`: one classifier per tagged CoNLL-U column
  (:data:`biaffine.data.columns.TAGGED`), trained next to the parser and read when parsing asks
  for predicted columns.

A head never reads a batch: it takes states ``float[B, N+1, H]`` (position 0 is ROOT) and returns
scores, so a parser is the encoder plus the heads it composes plus its own loss.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import NamedTuple

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from biaffine.data.batching import IGNORE_INDEX, Batch
from biaffine.data.columns import TAGGED
from biaffine.data.vocab import Vocabs
from biaffine.nn.modules import MLP, Biaffine

__all__ = [
    "ArcScorer",
    "LabelScorer",
    "LabelVectors",
    "TagRequest",
    "Taggers",
    "head_vectors",
    "mean_cross_entropy",
]


class ArcScorer(nn.Module):
    """Biaffine arc scores ``float[B, N+1, N+1]`` (``[b, d, h]``), impossible heads at ``-inf``.

    Two MLPs (the word as dependent, as head) and a one-output biaffine whose bias is on the
    dependent side only: the paper's head prior term ``H u``.
    """

    def __init__(self, n_in: int, n_hidden: int, *, dropout: float) -> None:
        """Sizes: encoder states ``n_in``, MLP ``n_hidden``; ``dropout`` after the MLPs."""
        super().__init__()
        self.dep = MLP(n_in, n_hidden, dropout=dropout)
        self.head = MLP(n_in, n_hidden, dropout=dropout)
        self.attn = Biaffine(n_hidden, 1, bias_x=True, bias_y=False)

    def forward(self, states: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Arc scores of a batch.

        Args:
            states: float[B, N+1, H], the encoder states.
            lengths: long[B], words per sentence.

        Returns:
            float[B, N+1, N+1]; heads beyond a sentence's length and self-loops at ``-inf``.
        """
        arc_scores = self.attn(self.dep(states), self.head(states)).squeeze(-1)
        return arc_scores.masked_fill(~_valid_heads(lengths, states.shape[1]), float("-inf"))


class LabelVectors(NamedTuple):
    """The label MLP vectors of a batch's words: float[B, N+1, rel_mlp] each."""

    dep: torch.Tensor
    head: torch.Tensor


class LabelScorer(nn.Module):
    """Biaffine label scores; vectors are computed once per batch and scored where needed."""

    def __init__(self, n_in: int, n_hidden: int, n_labels: int, *, dropout: float) -> None:
        """Sizes: encoder states ``n_in``, MLP ``n_hidden``, ``n_labels`` relations."""
        super().__init__()
        self.dep = MLP(n_in, n_hidden, dropout=dropout)
        self.head = MLP(n_in, n_hidden, dropout=dropout)
        self.attn = Biaffine(n_hidden, n_labels, bias_x=True, bias_y=True)

    def forward(self, states: torch.Tensor) -> LabelVectors:
        """The words' vectors as dependents and as heads, from states float[B, N+1, H]."""
        return LabelVectors(self.dep(states), self.head(states))

    def at(self, vectors: LabelVectors, heads: torch.Tensor) -> torch.Tensor:
        """Label scores of one arc per word: float[B, N+1, R] for the arcs heads[b, d] -> d.

        Args:
            vectors: :meth:`forward` of the batch.
            heads: long[B, N+1]; negative entries (ROOT, padding) score an arbitrary arc.
        """
        index = heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, vectors.head.shape[-1])
        return self.attn.score_pairs(vectors.dep, vectors.head.gather(1, index))

    def at_words(self, vectors: LabelVectors, heads: torch.Tensor) -> torch.Tensor:
        """Label scores of the arcs ``heads[b, d] -> d`` that exist: float[W, R], row by row.

        What parsing needs: :meth:`at` also scores ROOT, padding and headless words, about 38%
        more pairs on EWT-sized batches (34,584 positions for 25,094 words), for scores nobody
        reads. Training keeps :meth:`at`, whose float sums a seeded run reproduces.

        Args:
            vectors: :meth:`forward` of the batch.
            heads: long[B, N+1]; the W entries >= 0 are scored (ROOT and padding are -1).
        """
        rows, dependents = (heads >= 0).nonzero(as_tuple=True)  # [W] each, row-major
        dep = vectors.dep[rows, dependents]  # [W, rel_mlp]
        head = vectors.head[rows, heads[rows, dependents]]  # [W, rel_mlp]
        return self.attn.score_pairs(dep, head)

    def at_heads(self, vectors: LabelVectors) -> torch.Tensor:
        """Label scores of K arcs into each of W words: float[W, K, R].

        Each word's vector as a dependent is multiplied by the weights once, whatever K.

        Args:
            vectors: the words' vectors as dependents, float[W, rel_mlp], and those of the
                heads of their arcs, float[W, K, rel_mlp] (:func:`head_vectors`).
        """
        return self.attn(vectors.dep.unsqueeze(1), vectors.head)[:, 0]

    def all(self, vectors: LabelVectors) -> torch.Tensor:
        """Label scores of every (dependent, head) pair: float[B, N+1, N+1, R].

        Parsing reads fewer (:meth:`at_words`, :meth:`at_heads`); this is the reference.
        """
        return self.attn(vectors.dep, vectors.head)


TagRequest = bool | Collection[str] | Mapping[str, Sequence[int] | None]
"""The taggers a forward runs: every one (True), none (False or an empty collection), those of
the columns named, or, as a mapping, those of its columns, each on every word (None) or on the
words given (indices among the batch's W words, row by row). Parsing runs those whose scores its
columns read (:func:`biaffine.inference.choices.scores_read`): ``columns=upos`` pays for no
lemmatizer, and the lemmatizer scores only the words whose lemma the lexicon cannot give
(:func:`biaffine.inference.choices.lemma_words`)."""


class Taggers(nn.ModuleDict):
    """One MLP classifier per tagged column whose loss weight is > 0, keyed by column name."""

    def __init__(
        self,
        vocabs: Vocabs,
        weights: Mapping[str, float],
        n_in: int,
        n_hidden: int,
        *,
        dropout: float,
    ) -> None:
        """Build a classifier for every column of ``weights`` (column -> loss weight) above 0.

        Args:
            vocabs: the classes of each column (``vocabs.columns[name]``).
            weights: loss weight by column name; 0 builds no classifier.
            n_in: size of the encoder states.
            n_hidden: size of each classifier's MLP.
            dropout: dropout after the MLP.
        """
        super().__init__(
            {
                column: nn.Sequential(
                    MLP(n_in, n_hidden, dropout=dropout),
                    nn.Linear(n_hidden, len(vocabs.columns[column])),
                )
                for column in TAGGED
                if weights[column] > 0
            }
        )
        self.weights = {column: float(weights[column]) for column in self}

    def forward(
        self, states: torch.Tensor, mask: torch.Tensor, columns: TagRequest = True
    ) -> dict[str, torch.Tensor]:
        """Scores by column, float[W, n_classes], for the W words of states float[B, N+1, H].

        ``columns``: the taggers to run (:data:`TagRequest`); a column this has no tagger for
        is not scored. A column given words as a mapping's value is scored on those alone, in
        their order: float[len(words), n_classes].

        The words are ``mask`` bool[B, N+1], row by row. Training classifies every position
        and then keeps the words, because the MLP's dropout shares one mask per sentence
        (float[B, L, D] in); parsing classifies the words alone, since ROOT and padding add
        about 40% to the cost on EWT-sized batches for scores nobody reads.
        """
        wanted = self.keys() if columns is True else columns or ()
        chosen = columns if isinstance(columns, Mapping) else {}
        heads = [(c, head, chosen.get(c)) for c, head in self.items() if c in wanted]
        if self.training:
            return {column: _rows(head(states)[mask], words) for column, head, words in heads}
        states = states[mask]  # [W, H]
        return {column: head(_rows(states, words)[None])[0] for column, head, words in heads}

    def add_losses(
        self, loss: torch.Tensor, scores: Mapping[str, torch.Tensor], batch: Batch
    ) -> torch.Tensor:
        """``loss`` plus each tagger's weighted cross entropy against its gold column (over mask).

        Words without a class (IGNORE_INDEX: no lemma given) are left out, and a batch without
        any adds 0.

        Added one by one to ``loss`` (not summed apart first), so the float sums are the same as
        they always were and a seeded run trains to the same weights.
        """
        for column, column_scores in scores.items():
            gold = batch.columns[column][batch.mask]
            loss = loss + self.weights[column] * mean_cross_entropy(column_scores, gold)
        return loss


def head_vectors(
    vectors: LabelVectors, rows: torch.Tensor, dependents: torch.Tensor, heads: torch.Tensor
) -> LabelVectors:
    """The vectors :meth:`LabelScorer.at_heads` reads, from a batch's (:meth:`LabelScorer.forward`).

    Args:
        vectors: the batch's vectors, float[B, N+1, rel_mlp] each.
        rows: long[W], each word's batch row.
        dependents: long[W], its position in the row.
        heads: long[W, K], the heads of its arcs (positions in the same row).

    Returns:
        float[W, rel_mlp] and float[W, K, rel_mlp].
    """
    return LabelVectors(vectors.dep[rows, dependents], vectors.head[rows.unsqueeze(1), heads])


def _rows(values: torch.Tensor, words: Sequence[int] | None) -> torch.Tensor:
    """The rows ``words`` of ``values`` float[W, ...], in that order; every row for None."""
    if words is None:
        return values
    return values[torch.as_tensor(words, dtype=torch.long, device=values.device)]


def mean_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over non-ignored targets; 0 (not NaN) when every target is ignored."""
    total = F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction="sum")
    return total / (targets != IGNORE_INDEX).sum().clamp(min=1)


def _valid_heads(lengths: torch.Tensor, total: int) -> torch.Tensor:
    """bool[B, N+1, N+1]: True where h <= length and h != d."""
    positions = torch.arange(total, device=lengths.device)
    in_sentence = positions.unsqueeze(0) <= lengths.unsqueeze(1)  # [B, N+1]
    not_self = positions.unsqueeze(0) != positions.unsqueeze(1)  # [N+1, N+1]
    return in_sentence.unsqueeze(1) & not_self
