"""The segmenter's network: characters in, a class of ``rawtext.labels`` out per character.

Each character is its embedding beside its flags (:mod:`biaffine.segmenting.features`), mixed
with its neighbours by residual dilated 1-D convolutions (each layer of dilation d widens the
view by d characters on each side), then read in both directions by a small BiLSTM, which
carries what a sentence end depends on from further away (a capital after ". ", a closing
quote). Padding (id 0) is masked after every layer, so a window of text ends exactly as the
text does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine.segmenting.features import FEATURES, PAD
from rawtext.labels import MWT_SENTENCE_END, N_CLASSES, SENTENCE_END

__all__ = ["SegmenterModel"]


class SegmenterModel(nn.Module):
    """Per-character classifier.

    Args:
        n_chars: size of the character vocabulary (PAD and UNK included).
        embed_dim: width of a character embedding.
        channels: width of the convolutions.
        kernel: convolution width (odd).
        dilations: one residual convolution per entry, of that dilation.
        rnn_hidden: BiLSTM width per direction; 0 leaves the BiLSTM out (each class then depends
            on ``receptive_field`` characters on each side only).
        dropout: dropout rate after the embeddings and each layer, in training.
        sentence_bias: added to the log-probabilities of the sentence-end classes when
            choosing a class (:meth:`decide`), never in training: tuned on dev after training,
            it trades missed sentence ends for false ones.
        n_features: flags per character (``CharVocab.n_features``: the flags of
            :data:`FEATURES`, and one more with a vocabulary of spaced words).
    """

    def __init__(
        self,
        n_chars: int,
        embed_dim: int = 32,
        channels: int = 48,
        kernel: int = 3,
        dilations: Sequence[int] = (1, 2, 4, 8),
        rnn_hidden: int = 64,
        dropout: float = 0.1,
        sentence_bias: float = 0.0,
        n_features: int = len(FEATURES),
    ) -> None:
        """Create the layers (fresh weights).

        Raises:
            ValueError: for an even ``kernel``, or a ``sentence_bias`` that is not finite (NaN
                made every character a sentence end).
        """
        super().__init__()
        if kernel % 2 != 1:
            raise ValueError(f"kernel={kernel}: the convolution width must be odd")
        if not math.isfinite(sentence_bias):
            raise ValueError(f"sentence_bias={sentence_bias} must be finite")
        self.settings = {
            "n_chars": n_chars,
            "embed_dim": embed_dim,
            "channels": channels,
            "kernel": kernel,
            "dilations": list(dilations),
            "rnn_hidden": rnn_hidden,
            "dropout": dropout,
            "sentence_bias": sentence_bias,
            "n_features": n_features,
        }
        self.embed = nn.Embedding(n_chars, embed_dim, padding_idx=PAD)
        self.project = nn.Conv1d(embed_dim + n_features, channels, 1)
        self.convs = nn.ModuleList(
            nn.Conv1d(channels, channels, kernel, dilation=d, padding=d * (kernel // 2))
            for d in dilations
        )
        self.dropout = nn.Dropout(dropout)
        self.rnn = (
            nn.LSTM(channels, rnn_hidden, batch_first=True, bidirectional=True)
            if rnn_hidden
            else None
        )
        self.out = nn.Linear(2 * rnn_hidden if rnn_hidden else channels, N_CLASSES)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SegmenterModel:
        """A model of the shape :meth:`config` describes (fresh weights)."""
        return cls(**config)

    def config(self) -> dict[str, Any]:
        """The constructor's arguments, as plain data."""
        return dict(self.settings)

    @property
    def receptive_field(self) -> int:
        """Characters on each side that the convolutions see (the BiLSTM sees the whole input)."""
        return sum(self.settings["dilations"]) * (self.settings["kernel"] // 2)

    def forward(self, ids: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        """Class scores of every character.

        Args:
            ids: int64[B, T] character ids, ``PAD`` after the end of each row.
            features: float32[B, T, n_features], zero at padding.

        Returns:
            float32[B, T, N_CLASSES] unnormalised scores (padding rows hold garbage).
        """
        mask = (ids != PAD).unsqueeze(1).to(features.dtype)  # [B, 1, T]
        x = torch.cat([self.embed(ids), features], dim=-1).transpose(1, 2)  # [B, E+F, T]
        h = self.dropout(self.project(x)) * mask
        for conv in self.convs:
            h = (h + self.dropout(torch.relu(conv(h)))) * mask
        h = h.transpose(1, 2)  # [B, T, C]
        if self.rnn is not None:
            h = self.dropout(self._bilstm(h, mask.squeeze(1)))
        return self.out(h)

    def decide(self, log_probs: torch.Tensor) -> torch.Tensor:
        """The class of each character: the best after adding ``sentence_bias``.

        Args:
            log_probs: float32[..., N_CLASSES], log-softmax of :meth:`forward`'s scores.

        Returns:
            uint8[...] classes.
        """
        bias = torch.zeros(N_CLASSES, dtype=log_probs.dtype, device=log_probs.device)
        bias[[SENTENCE_END, MWT_SENTENCE_END]] = self.settings["sentence_bias"]
        return (log_probs + bias).argmax(-1).to(torch.uint8)

    def _bilstm(self, h: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[B, T, C] -> [B, T, 2H]; the backward direction starts at each row's own end."""
        lengths = mask.sum(1).long()
        if bool((lengths == h.shape[1]).all()):
            return self.rnn(h)[0]  # no padding: packing would only cost time
        packed = pack_padded_sequence(h, lengths.cpu(), batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(self.rnn(packed)[0], batch_first=True, total_length=h.shape[1])[
            0
        ]
