"""The deep biaffine graph parser (Dozat & Manning, 2017): arc and label scores and the loss.

It composes the shared heads (:mod:`biaffine.parsers.heads`) on the encoder and never decodes:
:mod:`biaffine.inference.graph` turns its scores into trees with :mod:`decoding`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from biaffine.data.batching import Batch
from biaffine.data.vocab import Vocabs
from biaffine.nn.treecrf import tree_log_prob
from biaffine.parsers.base import register
from biaffine.parsers.heads import (
    ArcScorer,
    LabelScorer,
    LabelVectors,
    TagRequest,
    mean_cross_entropy,
)
from biaffine.parsers.shared import EncoderParser, check_sizes, check_tagger_weights

__all__ = ["LOSSES", "BiaffineParser", "GraphScores"]


log = logging.getLogger(__name__)

LOSSES = ("local", "crf")
"""Head losses of :class:`BiaffineParser`: per-word cross entropy, or the tree CRF's."""


@dataclass(frozen=True, slots=True)
class GraphScores:
    """Raw (unnormalised) scores of one batch; position 0 is ROOT.

    Label scores are left unmultiplied: labels are only ever needed at one head per word (gold
    heads in training, decoded heads in parsing), so ``parser.labels.at`` scores just those
    arcs, and ``parser.labels.all`` every pair when wanted.

    Attributes:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d. Heads
            beyond a sentence's length and self-loops (the diagonal) are ``-inf``.
        labels: the label MLP vectors of the words, float[B, N+1, rel_mlp] each.
        tag_scores: tagger scores by column for the W words of the batch (``mask``, row by
            row): ``"upos"`` float[W, n_upos], ``"xpos"``, ``"feats"``, ``"lemma"`` likewise;
            only the taggers whose loss weight is > 0 are present, and none when the forward
            pass skipped them.
    """

    arc_scores: torch.Tensor
    labels: LabelVectors
    tag_scores: dict[str, torch.Tensor] = field(default_factory=dict)


@register
class BiaffineParser(EncoderParser):
    """Deep biaffine attention parser (Dozat & Manning, 2017) on the shared encoder.

    An arc scorer and a label scorer (:mod:`biaffine.parsers.heads`) read the encoder states.
    Optional UPOS, XPOS, FEATS and LEMMA classifiers on the states (``tag_loss_weight``,
    ``xpos_loss_weight``, ``feats_loss_weight``, ``lemma_loss_weight`` > 0) add multi-task
    supervision and predict those columns when parsing asks for them.
    Defaults are sized for a 2-core CPU; the paper used lstm_hidden=400, arc_mlp=500.

    The head loss is the paper's per-word cross entropy (``loss="local"``) or the negative
    log-likelihood of the gold tree under a first-order tree CRF over non-projective trees
    (``loss="crf"``; Koo et al., 2007, with one word on ROOT as in UD), which trains the scores
    the tree decoders read as a whole: see :meth:`loss`.

    Attributes:
        kind: registry name recorded in checkpoints.
        family: how :mod:`biaffine.inference` turns the scores into trees (graph decoding).
        encoder: the shared encoder.
        arcs: the arc scorer.
        labels: the label scorer.
        taggers: the tagger heads present, by column (``upos``, ``xpos``, ``feats``, ``lemma``).
    """

    kind: ClassVar[str] = "biaffine"
    family: ClassVar[str] = "graph"

    def __init__(
        self,
        vocabs: Vocabs,
        encoder: nn.Module,
        *,
        arc_mlp: int = 400,
        rel_mlp: int = 100,
        tag_mlp: int = 100,
        mlp_dropout: float = 0.33,
        tag_loss_weight: float = 0.0,
        xpos_loss_weight: float = 0.0,
        feats_loss_weight: float = 0.0,
        lemma_loss_weight: float = 0.0,
        loss: str = "local",
    ) -> None:
        """Build the scorers on top of ``encoder``, sized by the vocabularies.

        Args:
            vocabs: training vocabularies (relations and the tagged columns are read).
            encoder: the shared encoder (:class:`biaffine.nn.Encoder`), with ``n_out`` and
                ``config()``.
            arc_mlp: size of the arc MLPs.
            rel_mlp: size of the label MLPs.
            tag_mlp: size of each auxiliary tagger's MLP.
            mlp_dropout: shared dropout after the MLPs.
            tag_loss_weight: weight of the auxiliary UPOS loss; 0 disables that head.
            xpos_loss_weight: weight of the auxiliary XPOS loss; 0 disables that head.
            feats_loss_weight: weight of the auxiliary FEATS loss; 0 disables that head.
            lemma_loss_weight: weight of the lemmatizer's loss (edit scripts, see
                :mod:`biaffine.data.lemmas`); 0 disables that head.
            loss: head loss, ``"local"`` (cross entropy per word) or ``"crf"`` (tree CRF).

        Raises:
            ValueError: on sizes < 1, a dropout outside [0, 1), a negative loss weight, a UPOS
                tagger on an encoder that embeds the input UPOS (it would predict its input),
                or an unknown ``loss``.
        """
        super().__init__()
        self._config = {
            k: v for k, v in locals().items() if k not in ("self", "__class__", "vocabs", "encoder")
        }
        _validate(self._config, encoder)
        self.encoder = encoder
        n_states, drop = encoder.n_out, mlp_dropout
        self.arcs = ArcScorer(n_states, arc_mlp, dropout=drop)
        self.labels = LabelScorer(n_states, rel_mlp, len(vocabs.rels), dropout=drop)
        self.taggers = self.build_taggers(vocabs)

    def forward(self, batch: Batch, *, tag: TagRequest = True) -> GraphScores:
        """Score every arc and label of a batch.

        Args:
            batch: a :class:`biaffine.data.batching.Batch` (the encoder reads its inputs;
                ``lengths`` long[B] bounds the heads).
            tag: the taggers to run (:data:`~biaffine.parsers.heads.TagRequest`); parsing
                runs those its columns read, none for trees alone (about 300k multiply-adds a
                word with all four of EWT's on).

        Returns:
            :class:`GraphScores` with arc_scores [B, N+1, N+1] (dependent-major, invalid heads
            at ``-inf``), the label MLP vectors and the scores of the taggers.
        """
        return self.score_states(self.encoder(batch, tag=bool(tag)), batch, tag=tag)

    def score_states(
        self, states: torch.Tensor, batch: Batch, *, tag: TagRequest = True
    ) -> GraphScores:
        """:meth:`forward` from the encoder states float[B, N+1, H] of ``batch``.

        ``batch`` gives ``lengths`` and ``mask`` only (an export reads the states alone).
        """
        states, tag_states = self.split_states(states)
        tag_scores = self.taggers(tag_states, batch.mask, tag) if tag else {}
        return GraphScores(self.arcs(states, batch.lengths), self.labels(states), tag_scores)

    def loss(
        self, scores: GraphScores, batch: Batch, gold_arc_rels: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Training loss: head loss + label cross entropy at gold arcs (+ tag losses).

        Each term is a mean over the words it covers (Dozat & Manning, 2017, sec. 3): heads
        over ``mask``, labels over words whose gold label is known (``rels != -100``). The head
        loss is the cross entropy of each word's gold head (``loss="local"``) or the tree CRF's
        -log P(gold tree) summed over sentences and divided by the words (``loss="crf"``, same
        scale), normalised over single-rooted trees; a gold tree with several (or no) words on
        ROOT, which UD forbids but a treebank or a sentence without annotation may hold, is
        normalised over all trees instead, so it trains like the others rather than stopping
        training.

        Args:
            scores: the output of :meth:`forward` on ``batch``.
            batch: reads ``heads`` long[B, N+1], ``rels`` long[B, N+1], ``mask`` bool[B, N+1]
                and, for the taggers present, their gold ``columns`` long[B, N+1].
            gold_arc_rels: ``labels.at(scores.labels, batch.heads)`` float[B, N+1, R], the
                label scores at the gold arcs, where the caller has them already.

        Returns:
            A scalar tensor.
        """
        mask = batch.mask
        if self._config["loss"] == "crf":
            arc_loss = _crf_head_loss(scores.arc_scores, batch)
        else:
            arc_loss = F.cross_entropy(scores.arc_scores[mask], batch.heads[mask])
        if gold_arc_rels is None:
            gold_arc_rels = self.labels.at(scores.labels, batch.heads)  # [B, N+1, R]
        rel_loss = mean_cross_entropy(gold_arc_rels[mask], batch.rels[mask])
        loss = arc_loss + rel_loss
        return self.taggers.add_losses(loss, scores.tag_scores, batch)


def _validate(config: Mapping[str, Any], encoder: nn.Module) -> None:
    check_sizes(config, ("arc_mlp", "rel_mlp", "tag_mlp"))
    if config["loss"] not in LOSSES:
        raise ValueError(f"loss={config['loss']!r} is not one of {', '.join(LOSSES)}")
    check_tagger_weights(config, encoder)


def _crf_head_loss(arc_scores: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Tree-CRF head loss: -sum of log P(gold tree) / words, single-rooted where gold is.

    A sentence whose log Z lost its precision (NaN from :mod:`biaffine.nn.treecrf`: the
    words' best heads form a cycle tens of nats above every tree, which the CRF, blind to the
    arcs no likely tree uses, lets happen) takes the local cross entropy of its words instead:
    the training goes on, and the local term pushes the cycle's arcs back down.

    Args:
        arc_scores: float[B, N+1, N+1] from :meth:`BiaffineParser.forward`.
        batch: reads ``heads`` long[B, N+1], ``mask`` bool[B, N+1] and ``lengths`` long[B].

    Returns:
        A scalar in the dtype of ``arc_scores``, float32 at least (computed in float64): a
        bfloat16 loss would keep three significant digits.
    """
    log_prob = _gold_tree_log_probs(arc_scores, batch)  # [B]
    lost = log_prob.isnan()
    total = -torch.where(lost, torch.zeros_like(log_prob), log_prob).sum()
    if bool(lost.any()):
        # Logged, so that a run's log says how often the fallback fired (grep "lost precision").
        message = "tree-CRF: log Z lost precision in %d of %d sentences; local loss for them"
        log.info(message, int(lost.sum()), len(lost))
        words = batch.mask & lost.unsqueeze(-1)  # [B, N+1]
        local = F.cross_entropy(arc_scores[words].double(), batch.heads[words], reduction="sum")
        total = total + local
    return (total / batch.lengths.sum()).to(torch.promote_types(arc_scores.dtype, torch.float32))


def _gold_tree_log_probs(arc_scores: torch.Tensor, batch: Batch) -> torch.Tensor:
    """float64[B] log P(gold tree), normalised over single-rooted trees where gold is.

    Over all trees for a gold tree with several (or no) words on ROOT.
    """
    single_root = ((batch.heads == 0) & batch.mask).sum(-1) == 1  # [B]
    scores, heads, lengths = arc_scores.double(), batch.heads, batch.lengths
    if bool(single_root.all()):  # UD: no regrouping
        return tree_log_prob(scores, heads, lengths)
    log_prob = scores.new_zeros(len(lengths))
    for root_constraint, rows in ((True, single_root), (False, ~single_root)):
        if bool(rows.any()):
            group = tree_log_prob(
                scores[rows], heads[rows], lengths[rows], root_constraint=root_constraint
            )
            log_prob = log_prob.index_put((rows,), group)
    return log_prob
