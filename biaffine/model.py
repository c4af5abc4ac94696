"""The deep biaffine parser network (Dozat & Manning, 2017): scores and loss, never decoding."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from biaffine.batching import IGNORE_INDEX, Batch
from biaffine.modules import (
    MLP,
    Biaffine,
    BiLSTM,
    CharEncoder,
    IndependentDropout,
    SharedDropout,
)
from biaffine.modules import word_dropout as drop_words
from biaffine.vocab import PAD, UNK

__all__ = ["ArcRelScores", "BiaffineParser"]

_SIZES = (
    "n_words", "n_chars", "n_tags", "n_rels", "word_dim", "char_dim", "char_hidden", "char_out",
    "tag_dim", "lstm_hidden", "lstm_layers", "arc_mlp", "rel_mlp", "tag_mlp", "n_xpos", "n_feats",
)  # fmt: skip


class _Tagger(NamedTuple):
    """Where an auxiliary tagger's settings and gold ids live."""

    gold: str  # Batch field of the gold ids
    weight: str  # constructor argument: loss weight (0 = no tagger)
    size: str  # constructor argument: number of classes
    attribute: str  # module attribute (the UPOS one keeps its original name, "tagger")


_TAGGERS = {
    "upos": _Tagger("tags", "tag_loss_weight", "n_tags", "tagger"),
    "xpos": _Tagger("xpos", "xpos_loss_weight", "n_xpos", "xpos_tagger"),
    "feats": _Tagger("feats", "feats_loss_weight", "n_feats", "feats_tagger"),
}


@dataclass(frozen=True, slots=True)
class ArcRelScores:
    """Raw (unnormalised) scores of one batch; position 0 is ROOT.

    Label scores are left unmultiplied: labels are only ever needed at one head per word (gold
    heads in training, decoded heads in parsing), so :meth:`BiaffineParser.rel_scores_at`
    scores just those arcs, and :meth:`BiaffineParser.rel_scores` all pairs when wanted.

    Attributes:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d. Heads
            beyond a sentence's length and self-loops (the diagonal) are ``-inf``.
        rel_dep: float[B, N+1, rel_mlp], label MLP vectors of the words as dependents.
        rel_head: float[B, N+1, rel_mlp], label MLP vectors of the words as heads.
        tag_scores: auxiliary tagger scores by column, ``"upos"`` float[B, N+1, n_tags],
            ``"xpos"`` float[B, N+1, n_xpos], ``"feats"`` float[B, N+1, n_feats]; only the
            taggers whose loss weight is > 0 are present.
    """

    arc_scores: torch.Tensor
    rel_dep: torch.Tensor
    rel_head: torch.Tensor
    tag_scores: dict[str, torch.Tensor] = field(default_factory=dict)


class BiaffineParser(nn.Module):
    """Deep biaffine attention parser (Dozat & Manning, 2017) with a character word model.

    Input vectors are [word embedding; char BiLSTM vector (Dozat, Qi & Manning, 2017); optional
    UPOS embedding], then a stacked BiLSTM, four MLPs (arc/label x dependent/head), a biaffine
    arc scorer with a head prior, and a biaffine label scorer. Optional auxiliary UPOS, XPOS and
    FEATS classifiers on the BiLSTM states (``tag_loss_weight``, ``xpos_loss_weight``,
    ``feats_loss_weight`` > 0) add multi-task supervision; they are trained, never used to parse.
    Defaults are sized for training and parsing on a 2-core CPU; the paper used
    lstm_hidden=400, arc_mlp=500.
    """

    def __init__(
        self,
        n_words: int,
        n_chars: int,
        n_tags: int,
        n_rels: int,
        *,
        word_dim: int = 100,
        char_dim: int = 50,
        char_hidden: int = 100,
        char_out: int = 100,
        use_tags: bool = False,
        tag_dim: int = 50,
        lstm_hidden: int = 300,
        lstm_layers: int = 3,
        arc_mlp: int = 400,
        rel_mlp: int = 100,
        tag_mlp: int = 100,
        embed_dropout: float = 0.33,
        lstm_dropout: float = 0.33,
        mlp_dropout: float = 0.33,
        word_dropout: float = 0.0,
        tag_loss_weight: float = 0.0,
        n_xpos: int = 3,
        n_feats: int = 3,
        xpos_loss_weight: float = 0.0,
        feats_loss_weight: float = 0.0,
    ) -> None:
        """Build the network.

        Args:
            n_words: word vocabulary size (ids PAD=0, UNK=1, ROOT=2 included).
            n_chars: character vocabulary size.
            n_tags: UPOS vocabulary size.
            n_rels: number of dependency labels R.
            word_dim: word embedding size.
            char_dim: character embedding size.
            char_hidden: character BiLSTM size per direction.
            char_out: size of the character-based word vector.
            use_tags: feed gold/predicted UPOS from the input as an embedding.
            tag_dim: UPOS embedding size (used only if ``use_tags``).
            lstm_hidden: BiLSTM size per direction.
            lstm_layers: number of stacked BiLSTM layers.
            arc_mlp: size of the arc MLPs.
            rel_mlp: size of the label MLPs.
            tag_mlp: size of the auxiliary tagger MLP (used only if ``tag_loss_weight > 0``).
            embed_dropout: probability of dropping a whole input vector (word, char, tag).
            lstm_dropout: shared dropout on the input and output of every BiLSTM layer.
            mlp_dropout: shared dropout after the MLPs.
            word_dropout: probability of replacing a word id by UNK in training.
            tag_loss_weight: weight of the auxiliary UPOS loss; 0 disables the tagger head.
            n_xpos: XPOS vocabulary size (used only if ``xpos_loss_weight > 0``).
            n_feats: FEATS vocabulary size (used only if ``feats_loss_weight > 0``).
            xpos_loss_weight: weight of the auxiliary XPOS loss; 0 disables that head.
            feats_loss_weight: weight of the auxiliary FEATS loss; 0 disables that head.

        Raises:
            ValueError: on sizes < 1, probabilities outside [0, 1), a negative loss weight, or
                ``use_tags`` together with ``tag_loss_weight > 0`` (it would predict its input).
        """
        super().__init__()
        # Before any other local is bound, locals() holds exactly the constructor arguments.
        self._config = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        self._validate()
        self._build_embeddings()
        self._build_encoder()
        self._build_scorers()

    def _validate(self) -> None:
        cfg = self._config
        for key in _SIZES:
            if cfg[key] < 1:
                raise ValueError(f"{key}={cfg[key]} must be >= 1")
        for key in ("embed_dropout", "lstm_dropout", "mlp_dropout", "word_dropout"):
            if not 0.0 <= cfg[key] < 1.0:
                raise ValueError(f"{key}={cfg[key]} must be in [0, 1)")
        for tagger in _TAGGERS.values():
            if cfg[tagger.weight] < 0:
                raise ValueError(f"{tagger.weight}={cfg[tagger.weight]} must be >= 0")
        if cfg["use_tags"] and cfg["tag_loss_weight"] > 0:
            raise ValueError("use_tags=True with tag_loss_weight > 0 would predict the input UPOS")

    def _build_embeddings(self) -> None:
        cfg = self._config
        self.word_embed = nn.Embedding(cfg["n_words"], cfg["word_dim"], padding_idx=PAD)
        self.char_encoder = CharEncoder(
            cfg["n_chars"], char_dim=cfg["char_dim"], hidden=cfg["char_hidden"],
            n_out=cfg["char_out"], pad_index=PAD,
        )  # fmt: skip
        self.tag_embed = (
            nn.Embedding(cfg["n_tags"], cfg["tag_dim"], padding_idx=PAD)
            if cfg["use_tags"]
            else None
        )
        self.embed_dropout = IndependentDropout(cfg["embed_dropout"])
        self.word_dropout_p = cfg["word_dropout"]

    def _build_encoder(self) -> None:
        cfg = self._config
        n_in = cfg["word_dim"] + cfg["char_out"] + (cfg["tag_dim"] if cfg["use_tags"] else 0)
        # One single-layer BiLSTM per level so that dropout between levels can share its mask
        # across time (Dozat & Manning, 2017); nn.LSTM(num_layers=k, dropout=p) would not.
        self.lstms = nn.ModuleList(
            BiLSTM(n_in if i == 0 else 2 * cfg["lstm_hidden"], cfg["lstm_hidden"])
            for i in range(cfg["lstm_layers"])
        )
        for name, param in self.lstms.named_parameters():
            # Orthogonal weights and zero biases, following Dozat & Manning's released code.
            is_weight = name.rsplit(".", 1)[-1].startswith("weight")
            (nn.init.orthogonal_ if is_weight else nn.init.zeros_)(param)
        self.lstm_dropout = SharedDropout(cfg["lstm_dropout"])

    def _build_scorers(self) -> None:
        cfg = self._config
        n_states, drop = 2 * cfg["lstm_hidden"], cfg["mlp_dropout"]
        self.arc_dep = MLP(n_states, cfg["arc_mlp"], dropout=drop)
        self.arc_head = MLP(n_states, cfg["arc_mlp"], dropout=drop)
        self.rel_dep = MLP(n_states, cfg["rel_mlp"], dropout=drop)
        self.rel_head = MLP(n_states, cfg["rel_mlp"], dropout=drop)
        # Arcs: bias on the dependent side only, i.e. the paper's head prior term H u.
        self.arc_attn = Biaffine(cfg["arc_mlp"], 1, bias_x=True, bias_y=False)
        self.rel_attn = Biaffine(cfg["rel_mlp"], cfg["n_rels"], bias_x=True, bias_y=True)
        for tagger in _TAGGERS.values():
            head = None
            if cfg[tagger.weight] > 0:
                head = nn.Sequential(
                    MLP(n_states, cfg["tag_mlp"], dropout=drop),
                    nn.Linear(cfg["tag_mlp"], cfg[tagger.size]),
                )
            setattr(self, tagger.attribute, head)

    def config(self) -> dict[str, Any]:
        """Constructor arguments as plain data: ``BiaffineParser(**config)`` rebuilds the model."""
        return dict(self._config)

    def forward(self, batch: Batch, *, tag: bool = True) -> ArcRelScores:
        """Score every arc and label of a batch.

        Args:
            batch: a :class:`biaffine.batching.Batch`; reads ``words`` long[B, N+1], ``chars``
                long[B, N+1, C], ``tags`` long[B, N+1] (if ``use_tags``), ``mask`` bool[B, N+1]
                and ``lengths`` long[B].
            tag: run the auxiliary taggers too; parsing passes False, since it never reads
                their scores (about 180k multiply-adds per word with all three on).

        Returns:
            :class:`ArcRelScores` with arc_scores [B, N+1, N+1] (dependent-major, invalid heads
            at ``-inf``), the label MLP vectors and the scores of the auxiliary taggers.
        """
        states = self._encode(self._embed(batch), batch.lengths)
        arc_scores = self.arc_attn(self.arc_dep(states), self.arc_head(states)).squeeze(-1)
        arc_scores = arc_scores.masked_fill(
            ~self._valid_heads(batch.lengths, states.shape[1]), float("-inf")
        )
        tag_scores = {
            column: head(states)
            for column, tagger in _TAGGERS.items()
            if tag and (head := getattr(self, tagger.attribute)) is not None
        }
        return ArcRelScores(arc_scores, self.rel_dep(states), self.rel_head(states), tag_scores)

    def rel_scores_at(self, scores: ArcRelScores, heads: torch.Tensor) -> torch.Tensor:
        """Label scores of one arc per word: float[B, N+1, R] for the arcs heads[b, d] -> d.

        Args:
            scores: the output of :meth:`forward`.
            heads: long[B, N+1]; negative entries (ROOT, padding) score an arbitrary arc.
        """
        index = heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, scores.rel_head.shape[-1])
        return self.rel_attn.score_pairs(scores.rel_dep, scores.rel_head.gather(1, index))

    def rel_scores(self, scores: ArcRelScores) -> torch.Tensor:
        """Label scores of every (dependent, head) pair: float[B, N+1, N+1, R]."""
        return self.rel_attn(scores.rel_dep, scores.rel_head)

    def _embed(self, batch: Batch) -> torch.Tensor:
        """Input vectors float[B, N+1, D_in]."""
        words = batch.words
        if self.training and self.word_dropout_p > 0:
            words = drop_words(words, self.word_dropout_p, unk_index=UNK, mask=batch.mask)
        embeddings = [self.word_embed(words), self.char_encoder(batch.chars)]
        if self.tag_embed is not None:
            embeddings.append(self.tag_embed(batch.tags))
        return torch.cat(self.embed_dropout(*embeddings), -1)

    def _encode(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """BiLSTM states float[B, N+1, 2H] from inputs float[B, N+1, D_in]; zeros at padding.

        Shared dropout on the input and output of every layer; ``lengths`` long[B] counts
        words, so each sequence is ``lengths + 1`` long with ROOT.
        """
        with_root = lengths + 1
        for lstm in self.lstms:
            x = lstm(self.lstm_dropout(x), with_root)
        return self.lstm_dropout(x)

    @staticmethod
    def _valid_heads(lengths: torch.Tensor, total: int) -> torch.Tensor:
        """bool[B, N+1, N+1]: True where h <= length and h != d."""
        positions = torch.arange(total, device=lengths.device)
        in_sentence = positions.unsqueeze(0) <= lengths.unsqueeze(1)  # [B, N+1]
        not_self = positions.unsqueeze(0) != positions.unsqueeze(1)  # [N+1, N+1]
        return in_sentence.unsqueeze(1) & not_self

    def loss(self, scores: ArcRelScores, batch: Batch) -> torch.Tensor:
        """Training loss: head cross entropy + label cross entropy at gold arcs (+ tag losses).

        Each term is a mean over the words it covers (Dozat & Manning, 2017, sec. 3): heads
        over ``mask``, labels over words whose gold label is known (``rels != -100``).

        Args:
            scores: the output of :meth:`forward` on ``batch``.
            batch: reads ``heads`` long[B, N+1], ``rels`` long[B, N+1], ``mask`` bool[B, N+1]
                and, for the auxiliary taggers present, ``tags``/``xpos``/``feats`` long[B, N+1].

        Returns:
            A scalar tensor.
        """
        mask = batch.mask
        arc_loss = F.cross_entropy(scores.arc_scores[mask], batch.heads[mask])
        gold_arc_rels = self.rel_scores_at(scores, batch.heads)  # [B, N+1, R]
        rel_loss = _mean_cross_entropy(gold_arc_rels[mask], batch.rels[mask])
        loss = arc_loss + rel_loss
        for column, tag_scores in scores.tag_scores.items():
            tagger = _TAGGERS[column]
            gold = getattr(batch, tagger.gold)
            tag_loss = F.cross_entropy(tag_scores[mask], gold[mask])
            loss = loss + self._config[tagger.weight] * tag_loss
        return loss


def _mean_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over non-ignored targets; 0 (not NaN) when every target is ignored."""
    total = F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction="sum")
    return total / (targets != IGNORE_INDEX).sum().clamp(min=1)
