"""The shared sentence encoder: words + characters (+ UPOS) -> contextual states, for every parser.

Every parser family (graph, transition, combined) reads the same states, so they are directly
comparable and can share one encoder in a joint model. An encoder is built from the training
vocabularies and rebuilt from its :meth:`Encoder.config` (plain data, kept in checkpoints) through
the :data:`ENCODERS` registry, never from a code path named in a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import torch
from torch import nn

from biaffine.data.batching import Batch
from biaffine.data.vocab import PAD, UNK, Vocabs
from biaffine.nn.modules import (
    BiLSTM,
    CharEncoder,
    IndependentDropout,
    SharedDropout,
    orthogonal_,
    word_dropout,
)
from biaffine.nn.pretrained import PretrainedEmbedding
from biaffine.nn.transformer import TransformerEmbedding, TransformerEncoder, batch_forms

__all__ = ["ENCODERS", "Encoder", "build_encoder"]

_SIZES = (
    "word_dim",
    "char_dim",
    "char_hidden",
    "char_out",
    "tag_dim",
    "lstm_hidden",
    "lstm_layers",
    "tag_hidden",
)
_PROBABILITIES = ("embed_dropout", "lstm_dropout", "word_dropout")


class Encoder(nn.Module):
    """Word embedding + character BiLSTM word vector (+ UPOS embedding), then a stacked BiLSTM.

    The input vector of a word is [word embedding; char BiLSTM vector (Dozat, Qi & Manning,
    2017); optional UPOS embedding; optional transformer features], with whole vectors dropped
    independently; then one single-layer BiLSTM per level with dropout masks shared across time
    between levels (Dozat & Manning, 2017). With pretrained vectors, the word embedding is the
    sum of the frozen pretrained vector (linearly mapped to ``word_dim`` if sizes differ) and a
    trainable embedding initialised at zero (Dozat & Manning, 2017, sec. 4).

    With ``tag_layer`` k, the taggers read the output of BiLSTM level k instead of the top
    one (Søgaard & Goldberg, 2016: lower-level tasks supervised at lower layers), and the
    states are the top level's and level k's side by side, float[B, N+1, n_out + n_tag_out]:
    one tensor, so that every path that passes states on carries both (a parse that asks for
    no tagged column asks for the top level's alone, ``tag=False``). With
    ``tag_reads_top`` as well, the taggers read the top level too, through a stopped gradient
    (:meth:`biaffine.parsers.shared.EncoderParser.split_states`): its context, but not its
    training, is theirs. With ``tag_hidden`` as well, the taggers read a BiLSTM level of their
    own, above level k (its states in place of level k's): more context for the taggers than
    level k alone gives, and no tagger loss on the levels above k, which the tree heads read.

    Attributes:
        kind: registry name, stored in :meth:`config`.
        n_out: size of the states the tree heads read, ``2 * lstm_hidden``.
        n_tag_out: size of the states the taggers read after them (0 without ``tag_layer``:
            the taggers read the tree heads' states; ``2 * tag_hidden`` with their own level).
    """

    kind: ClassVar[str] = "bilstm"

    def __init__(
        self,
        vocabs: Vocabs,
        *,
        word_dim: int = 100,
        char_dim: int = 50,
        char_hidden: int = 100,
        char_out: int = 100,
        use_tags: bool = False,
        tag_dim: int = 50,
        lstm_hidden: int = 300,
        lstm_layers: int = 3,
        embed_dropout: float = 0.33,
        lstm_dropout: float = 0.33,
        word_dropout: float = 0.0,
        tag_layer: int | None = None,
        tag_reads_top: bool = False,
        tag_hidden: int | None = None,
        pretrained: Mapping[str, Any] | None = None,
        transformer: Mapping[str, Any] | None = None,
    ) -> None:
        """Build the layers, sized by the vocabularies.

        Args:
            vocabs: training vocabularies (words, chars and UPOS are read).
            word_dim: word embedding size.
            char_dim: character embedding size.
            char_hidden: character BiLSTM size per direction.
            char_out: size of the character-based word vector.
            use_tags: feed the input's UPOS as an embedding.
            tag_dim: UPOS embedding size (used only if ``use_tags``).
            lstm_hidden: BiLSTM size per direction.
            lstm_layers: number of stacked BiLSTM layers.
            embed_dropout: probability of dropping a whole input vector (word, char, tag).
            lstm_dropout: shared dropout on the input and output of every BiLSTM layer.
            word_dropout: probability of replacing a word id by UNK in training.
            tag_layer: the BiLSTM level (1 to ``lstm_layers - 1``) the taggers read, or None
                for the top one, which the tree heads read.
            tag_reads_top: with ``tag_layer``, the taggers also read the top level, without
                passing their gradients to it.
            tag_hidden: with ``tag_layer``, the size per direction of a BiLSTM level of the
                taggers' own above it, or None for none.
            pretrained: options of a :class:`~biaffine.nn.pretrained.PretrainedEmbedding`
                (``path``, ``format``, ``words``, ``lowercase``, ``max_words``,
                ``keep_in_checkpoint``), or None for none.
            transformer: options of a :class:`~biaffine.nn.transformer.TransformerEmbedding`
                whose features are one more input vector (``model``, ``pooling``, ``layers``,
                ``finetune``, ...), or None.

        Raises:
            ValueError: on a size < 1, a probability outside [0, 1), a ``tag_layer`` that is
                not a level below the top, or ``tag_reads_top`` or ``tag_hidden`` without one.
        """
        super().__init__()
        # Unused pretrained inputs are left out, so configs without them stay as they were.
        self._config = {
            k: v
            for k, v in locals().items()
            if k not in ("self", "__class__", "vocabs", "pretrained", "transformer")
        }
        # Left out when unset, so that configs from before the options stay the same.
        if tag_layer is None:
            del self._config["tag_layer"]
        if not tag_reads_top:
            del self._config["tag_reads_top"]
        if tag_hidden is None:
            del self._config["tag_hidden"]
        _validate(self._config)
        self.word_embed = nn.Embedding(len(vocabs.words), word_dim, padding_idx=PAD)
        self.pretrained = self.pretrained_proj = None
        if pretrained is not None:
            self.pretrained = PretrainedEmbedding(**pretrained)
            self._config["pretrained"] = self.pretrained.config()  # with its checksum
            nn.init.zeros_(self.word_embed.weight)  # the trainable part learns a correction
            if self.pretrained.n_out != word_dim:
                self.pretrained_proj = nn.Linear(self.pretrained.n_out, word_dim, bias=False)
        self.transformer = None
        if transformer is not None:
            self.transformer = TransformerEmbedding(**transformer)
            self._config["transformer"] = self.transformer.config()
        self.char_encoder = CharEncoder(
            len(vocabs.chars), char_dim=char_dim, hidden=char_hidden, n_out=char_out, pad_index=PAD
        )
        self.tag_embed = (
            nn.Embedding(len(vocabs.columns["upos"]), tag_dim, padding_idx=PAD)
            if use_tags
            else None
        )
        self.embed_dropout = IndependentDropout(embed_dropout)
        self.word_dropout_p = word_dropout
        n_in = word_dim + char_out + (tag_dim if use_tags else 0)
        n_in += self.transformer.n_out if self.transformer is not None else 0
        # One single-layer BiLSTM per level so that dropout between levels can share its mask
        # across time (Dozat & Manning, 2017); nn.LSTM(num_layers=k, dropout=p) would not.
        self.lstms = nn.ModuleList(
            BiLSTM(n_in if i == 0 else 2 * lstm_hidden, lstm_hidden) for i in range(lstm_layers)
        )
        self.tag_lstm = None if tag_hidden is None else BiLSTM(2 * lstm_hidden, tag_hidden)
        for name, param in self.named_parameters():
            if not name.startswith(("lstms.", "tag_lstm.")):
                continue
            # Orthogonal weights and zero biases, following Dozat & Manning's released code.
            is_weight = name.rsplit(".", 1)[-1].startswith("weight")
            (orthogonal_ if is_weight else nn.init.zeros_)(param)
        self.lstm_dropout = SharedDropout(lstm_dropout)
        self.tag_layer = tag_layer
        self.tag_reads_top = tag_reads_top
        self.n_out = 2 * lstm_hidden
        self.n_tag_out = 0 if tag_layer is None else 2 * (tag_hidden or lstm_hidden)

    @property
    def use_tags(self) -> bool:
        """Whether the input's UPOS column is embedded (plain-text input then lacks it)."""
        return self.tag_embed is not None

    def config(self) -> dict[str, Any]:
        """Plain data: ``build_encoder(vocabs, config)`` rebuilds this encoder."""
        return {"kind": self.kind, **self._config}

    def forward(
        self,
        batch: Batch,
        vector_rows: torch.Tensor | None = None,
        char_vectors: torch.Tensor | None = None,
        *,
        tag: bool = True,
    ) -> torch.Tensor:
        """Contextual states float[B, N+1, n_out + n_tag_out] of a batch; zeros at padding.

        With ``tag`` False, the tree heads' states alone, float[B, N+1, n_out]: the taggers'
        own BiLSTM level is not run (9% of a tree's time for EWT's ``tag_hidden=128``).

        Args:
            batch: reads ``words`` long[B, N+1], ``chars`` long[B, N+1, C] (unless
                ``char_vectors`` are given), ``columns["upos"]`` long[B, N+1] (if
                ``use_tags``), ``mask`` bool[B, N+1], ``lengths`` long[B], and ``forms`` with
                pretrained vectors (unless ``vector_rows`` are given) or a transformer.
            vector_rows: long[B, N+1], the pretrained vectors' rows of the words
                (:meth:`PretrainedEmbedding.rows`), given where the forms are not: in an
                exported graph, whose runtime looks them up.
            char_vectors: float[B, N+1, char_out], the character model's vectors of the words
                (:meth:`CharEncoder.dense_rows`), given where the characters are not: in an
                exported graph, whose runtime computes each distinct form's once.
            tag: give the taggers' states too (False where no tagger will read them).
        """
        top, below = self.levels(batch, vector_rows, char_vectors)
        if below is None or not tag:
            return self.lstm_dropout(top)
        return self.join(top, below, batch.lengths)

    def levels(
        self,
        batch: Batch,
        vector_rows: torch.Tensor | None = None,
        char_vectors: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The BiLSTM levels' outputs before the last dropout: the top's and ``tag_layer``'s.

        Returns:
            top: float[B, N+1, n_out].
            below: float[B, N+1, n_out], level ``tag_layer``'s output, the taggers' start
                (:meth:`join`); None without a ``tag_layer``.
        """
        x = self._embed(batch, vector_rows, char_vectors)
        with_root = batch.lengths + 1  # each sequence is its words plus ROOT
        below = None
        for level, lstm in enumerate(self.lstms, 1):
            x = lstm(self.lstm_dropout(x), with_root)
            if level == self.tag_layer:
                below = x
        return x, below

    def join(self, top: torch.Tensor, below: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The states with the taggers' own, float[B, N+1, n_out + n_tag_out], from :meth:`levels`.

        ``below`` goes through the taggers' own BiLSTM level where there is one; ``lengths``
        long[B] are the words per sentence. Dropout is drawn in the order it always was, so a
        seeded run trains to the same weights.
        """
        tagged = below
        if self.tag_lstm is not None:
            tagged = self.tag_lstm(self.lstm_dropout(below), lengths + 1)
        return torch.cat([self.lstm_dropout(top), self.lstm_dropout(tagged)], -1)

    def _embed(
        self,
        batch: Batch,
        vector_rows: torch.Tensor | None,
        char_vectors: torch.Tensor | None,
    ) -> torch.Tensor:
        """Input vectors float[B, N+1, D_in]."""
        words = batch.words
        if self.training and self.word_dropout_p > 0:
            words = word_dropout(words, self.word_dropout_p, unk_index=UNK, mask=batch.mask)
        word = self.word_embed(words)
        if self.pretrained is not None:
            if vector_rows is None:
                vector_rows = self.pretrained.rows(batch_forms(batch), words.shape[1])
            vectors = self.pretrained.of_rows(vector_rows)
            word = word + (self.pretrained_proj(vectors) if self.pretrained_proj else vectors)
        if char_vectors is None:
            char_vectors = self.char_encoder(batch.chars)
        embeddings = [word, char_vectors]
        if self.tag_embed is not None:
            embeddings.append(self.tag_embed(batch.columns["upos"]))
        if self.transformer is not None:
            embeddings.append(self.transformer(batch_forms(batch), words.shape[1]))
        return torch.cat(self.embed_dropout(*embeddings), -1)


def _validate(config: Mapping[str, Any]) -> None:
    layer = config.get("tag_layer")
    if config.get("tag_reads_top") and layer is None:
        raise ValueError("encoder tag_reads_top=true needs a tag_layer (the top is read anyway)")
    if config.get("tag_hidden") is not None and layer is None:
        raise ValueError("encoder tag_hidden needs a tag_layer, the level the taggers' own is on")
    if layer is not None and not 1 <= layer < config["lstm_layers"]:
        raise ValueError(
            f"encoder tag_layer={layer} must be a level below the top, 1 to "
            f"{config['lstm_layers'] - 1} (null: the taggers read the top level)"
        )
    for key in _SIZES:
        if config.get(key, 1) < 1:  # tag_hidden is left out when unset
            raise ValueError(f"encoder {key}={config[key]} must be >= 1")
    for key in _PROBABILITIES:
        if not 0.0 <= config[key] < 1.0:
            raise ValueError(f"encoder {key}={config[key]} must be in [0, 1)")


ENCODERS: dict[str, type[nn.Module]] = {
    Encoder.kind: Encoder,
    TransformerEncoder.kind: TransformerEncoder,
}
"""Encoder classes by the ``kind`` their :meth:`config` records."""


def build_encoder(vocabs: Vocabs, config: Mapping[str, Any]) -> nn.Module:
    """The encoder that ``config`` (an encoder's :meth:`~Encoder.config`) describes.

    Raises:
        ValueError: for an unknown kind or options that do not fit it.
    """
    options = dict(config)
    kind = options.pop("kind", None)
    if kind not in ENCODERS:
        raise ValueError(f"encoder kind {kind!r}; known kinds: {', '.join(sorted(ENCODERS))}")
    try:
        return ENCODERS[kind](vocabs, **options)
    except TypeError as error:
        raise ValueError(f"encoder options do not fit {kind!r}: {error}") from error
