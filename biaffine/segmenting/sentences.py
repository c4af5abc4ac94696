"""Sentence ends chosen again from the words: a BiLSTM over runs of a paragraph's tokens.

The character segmenter finds tokens well (EWT test Tokens 99.36) but misses sentence ends that
no character marks: a signature, a list of names, a line of a review with no full stop (EWT dev:
113 missed and 47 false ends of 2,001). A reader of the words finds many of them. This model
reads the tokens the segmenter found, a paragraph or a run of one at a time, as a frozen
transformer's states (MiniLM for English) beside a few flags of each token's surface
(:data:`TOKEN_FLAGS`: casing and punctuation, which an uncased transformer does not see, and the
whitespace after it), and gives each token a sentence-end logit. The segmenter's own
sentence-end log-odds at the token's last character are added with a weight, and a bias, both
chosen on dev after training (:mod:`biaffine.segmenting.sentence_training`).

The transformer is the costly part (EWT test: 9 s on 2 threads for every paragraph, as long as
the parser's own MiniLM pass), and most tokens need no second reading: where the segmenter's
weighted log-odds plus the bias are at least ``margin`` away from 0, the segmenter's score decides
alone (the logit counted as 0). Only the tokens within the margin are read, each with ``context``
tokens on either side (runs that overlap are read as one), or with its whole paragraph. The
trainer chooses both on dev (:func:`biaffine.segmenting.sentence_training.choose_margin` and
:func:`~biaffine.segmenting.sentence_training.choose_context`).

Only sentence ends inside a paragraph are chosen here: a paragraph's last token ends its
sentence anyway, and tokens and multi-word tokens stay as the segmenter found them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine.nn.transformer import TransformerEmbedding, chunk_windows
from rawtext.document import Token
from rawtext.labels import MWT_END, MWT_SENTENCE_END, SENTENCE_END, TOKEN_END, end_class
from rawtext.segment import normalized, segment

__all__ = [
    "TOKEN_FLAGS",
    "SentenceModel",
    "padded_flags",
    "paragraph_tokens",
    "reading_runs",
    "sentence_odds",
    "token_flags",
]

TOKEN_FLAGS = (
    "capitalized",
    "all_capitals",
    "no_letter_or_digit",
    "ends_in_final_punct",
    "ends_in_clause_punct",
    "text_ends_after",
    "line_break_after",
    "no_space_after",
)
"""The flags of :func:`token_flags`, in column order."""

BATCH_TOKENS = 4096
"""Runs of tokens read together: their count times the longest one's length is at most this."""


def token_flags(text: str, tokens: Sequence[Token]) -> npt.NDArray[np.float32]:
    """float32[len(tokens), len(TOKEN_FLAGS)]: each token's surface flags, 0 or 1."""
    rows = []
    for token in tokens:
        form, after = token.form, text[token.end : token.end + 1]
        rows.append(
            (
                form[:1].isupper(),
                form.isupper(),
                not any(c.isalnum() for c in form),
                form[-1:] in ".!?",
                form[-1:] in ",:;",
                after == "",
                after in "\n\r\u2028\u2029\x0b\x0c\x85" and after != "",
                after != "" and not after.isspace(),
            )
        )
    return np.array(rows, dtype=np.float32).reshape(len(tokens), len(TOKEN_FLAGS))


def paragraph_tokens(text: str, classes: npt.ArrayLike) -> list[list[Token]]:
    """The tokens of each paragraph that per-character classes describe, in text order."""
    document = segment(text, classes)
    return [
        [token for sentence in paragraph.sentences for token in sentence.tokens]
        for paragraph in document.paragraphs
    ]


def sentence_odds(log_probs: torch.Tensor, tokens: Sequence[Token]) -> torch.Tensor:
    """float[len(tokens)]: the segmenter's log-odds that each token ends its sentence.

    Args:
        log_probs: float[len(text), N_CLASSES], the segmenter's per-character log-probabilities.
        tokens: tokens of that text.
    """
    last = log_probs[torch.tensor([token.end - 1 for token in tokens], dtype=torch.long)]
    ends = torch.logaddexp(last[:, SENTENCE_END], last[:, MWT_SENTENCE_END])
    inside = torch.logaddexp(last[:, TOKEN_END], last[:, MWT_END])
    return ends - inside


class SentenceModel(nn.Module):
    """Sentence-end logits of a paragraph's tokens from a frozen transformer and surface flags.

    Args:
        transformer: :class:`TransformerEmbedding`'s arguments (frozen; its scalar mix trains).
        hidden: width of the projection and of the BiLSTM per direction.
        dropout: dropout rate on the states and the BiLSTM's input and output, in training.
        odds_weight: weight of the segmenter's sentence-end log-odds (chosen on dev).
        bias: added to every combined logit (chosen on dev).
        margin: the words decide only the tokens whose weighted log-odds plus bias is nearer
            0 than this; None: every token but a paragraph's last.
        context: tokens read on either side of a token the words decide; None: its whole
            paragraph (as the model was trained).
    """

    def __init__(
        self,
        transformer: dict[str, Any],
        *,
        hidden: int = 128,
        dropout: float = 0.3,
        odds_weight: float = 0.5,
        bias: float = 0.0,
        margin: float | None = None,
        context: int | None = None,
    ) -> None:
        """Load the transformer and create the layers (fresh weights).

        Raises:
            ValueError: a fine-tuned transformer (the model reads a frozen one).
        """
        super().__init__()
        if transformer.get("finetune"):
            raise ValueError("the sentence model reads a frozen transformer (finetune: false)")
        self.words = TransformerEmbedding(**transformer)
        self.project = nn.Linear(self.words.n_out + len(TOKEN_FLAGS), hidden)
        self.rnn = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, 1)
        self.dropout = nn.Dropout(dropout)
        self.settings = {"hidden": hidden, "dropout": dropout}
        self.odds_weight, self.bias, self.margin = odds_weight, bias, margin
        self.context = context

    def config(self) -> dict[str, Any]:
        """Plain data rebuilding this model (the transformer's with its weights' sha256)."""
        combined = {"odds_weight": self.odds_weight, "bias": self.bias, "margin": self.margin}
        reading = {"context": self.context}
        return {"transformer": self.words.config(), **self.settings, **combined, **reading}

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> SentenceModel:
        """The model :meth:`config` describes, with fresh weights."""
        options = {key: value for key, value in config.items() if key != "transformer"}
        return cls(dict(config["transformer"]), **options)

    def forward(self, forms: Sequence[Sequence[str]], flags: torch.Tensor) -> torch.Tensor:
        """Logits float[B, T] of B runs of tokens (T the longest; padding is garbage).

        Args:
            forms: B runs of token forms (paragraphs or parts of them), none empty.
            flags: float[B, T, len(TOKEN_FLAGS)], :func:`token_flags` padded with zeros.
        """
        lengths = torch.tensor([len(run) for run in forms])
        return self.read(self.features(forms, flags), lengths)

    def features(self, forms: Sequence[Sequence[str]], flags: torch.Tensor) -> torch.Tensor:
        """The BiLSTM's inputs float[B, T, hidden]: transformer states and flags, projected."""
        states = self.words(forms, flags.shape[1] + 1)[:, 1:]  # [B, T, H]; ROOT dropped
        return torch.relu(self.project(torch.cat([self.dropout(states), flags], -1)))

    def read(self, features: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Logits float[B, T] from :meth:`features` of B runs of ``lengths`` tokens."""
        packed = pack_padded_sequence(
            self.dropout(features), lengths, batch_first=True, enforce_sorted=False
        )
        h, _ = pad_packed_sequence(
            self.rnn(packed)[0], batch_first=True, total_length=features.shape[1]
        )
        return self.out(self.dropout(h)).squeeze(-1)

    @torch.inference_mode()
    def logits(self, text: str, runs: Sequence[Sequence[Token]]) -> list[torch.Tensor]:
        """float[n] sentence-end logits of each run's n tokens (before the segmenter's).

        Runs of like length are read together (:data:`BATCH_TOKENS`), so that short ones are not
        padded to a long one's width.
        """
        self.eval()
        out: list[torch.Tensor] = [torch.empty(0)] * len(runs)
        for group in chunk_windows([len(run) for run in runs], BATCH_TOKENS):
            batch = [runs[r] for r in group]
            forms = [[token.form for token in run] for run in batch]
            scores = self(forms, padded_flags(text, batch))
            for b, r in enumerate(group):
                out[r] = scores[b, : len(runs[r])]
        return out

    def resplit(
        self, text: str, classes: npt.NDArray[np.uint8], log_probs: torch.Tensor
    ) -> npt.NDArray[np.uint8]:
        """``classes`` with the sentence ends inside each paragraph chosen again.

        Args:
            text: the text.
            classes: uint8[len(text)], the segmenter's classes of it.
            log_probs: float[len(text), N_CLASSES], the segmenter's log-probabilities.

        Returns:
            uint8[len(text)]: the same tokens and multi-word tokens, the sentence ends of
            :meth:`decide`.
        """
        # Where segment() reads them: a class moved off whitespace (or to the last code point
        # of an emoji) would otherwise stay where it was and overrule the decision.
        classes = normalized(text, classes)
        paragraphs = [tokens for tokens in paragraph_tokens(text, classes) if len(tokens) > 1]
        ends = self.decide(self.read_logits(text, paragraphs, log_probs), paragraphs, log_probs)
        return self.relabel(classes, paragraphs, ends)

    def read_logits(
        self, text: str, paragraphs: Sequence[Sequence[Token]], log_probs: torch.Tensor
    ) -> list[torch.Tensor]:
        """float[n] per paragraph: :meth:`logits` at the tokens :meth:`unsure` picks, 0 elsewhere.

        Each of those tokens is read within the run of :func:`reading_runs` that holds it.
        """
        picked = [self.unsure(log_probs, tokens) for tokens in paragraphs]
        runs = [
            (k, start, stop)
            for k, chosen in enumerate(picked)
            for start, stop in reading_runs(
                chosen.nonzero().flatten().tolist(), len(chosen), self.context
            )
        ]
        found = self.logits(text, [paragraphs[k][start:stop] for k, start, stop in runs])
        out = [torch.zeros(len(tokens)) for tokens in paragraphs]
        for (k, start, stop), z in zip(runs, found, strict=True):
            chosen = picked[k][start:stop]
            out[k][start:stop][chosen] = z[chosen]
        return out

    def unsure(self, log_probs: torch.Tensor, tokens: Sequence[Token]) -> torch.Tensor:
        """bool[n]: the tokens the words decide, those but the last within the margin."""
        chosen = torch.zeros(len(tokens), dtype=torch.bool)
        if self.margin is None:
            chosen[:-1] = True
        else:
            score = self.odds_weight * sentence_odds(log_probs, tokens[:-1]) + self.bias
            chosen[:-1] = score.abs() < self.margin
        return chosen

    def decide(
        self,
        logits: Sequence[torch.Tensor],
        paragraphs: Sequence[Sequence[Token]],
        log_probs: torch.Tensor,
    ) -> list[torch.Tensor]:
        """bool[n] per paragraph: whether each token ends a sentence.

        It does where its logit (:meth:`logits`) plus ``odds_weight`` times the segmenter's
        log-odds (:func:`sentence_odds`) plus ``bias`` is positive.
        """
        return [
            z + self.odds_weight * sentence_odds(log_probs, tokens) + self.bias > 0
            for z, tokens in zip(logits, paragraphs, strict=True)
        ]

    @staticmethod
    def relabel(
        classes: npt.NDArray[np.uint8],
        paragraphs: Sequence[Sequence[Token]],
        ends: Sequence[torch.Tensor],
    ) -> npt.NDArray[np.uint8]:
        """A copy of ``classes`` where each paragraph's tokens but its last end as ``ends`` say.

        A multi-word token stays one, whatever its sentence end.
        """
        out = classes.copy()
        for tokens, decided in zip(paragraphs, ends, strict=True):
            for token, end in zip(tokens[:-1], decided.tolist(), strict=False):
                last = token.end - 1
                mwt = int(out[last]) in (MWT_END, MWT_SENTENCE_END)
                out[last] = end_class(mwt=mwt, sentence_end=bool(end))
        return out


def reading_runs(positions: Sequence[int], n: int, context: int | None) -> list[tuple[int, int]]:
    """Runs ``(start, stop)`` of a paragraph's ``n`` tokens that hold the sorted ``positions``.

    Each position is read with ``context`` tokens on either side where the paragraph has them;
    runs that overlap or touch become one. ``context`` None: the whole paragraph, once, where
    any position is given.
    """
    if not positions:
        return []
    if context is None:
        return [(0, n)]
    runs: list[tuple[int, int]] = []
    for i in positions:
        start, stop = max(0, i - context), min(n, i + context + 1)
        if runs and start <= runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], stop))
        else:
            runs.append((start, stop))
    return runs


def padded_flags(text: str, paragraphs: Sequence[Sequence[Token]]) -> torch.Tensor:
    """float[B, T, len(TOKEN_FLAGS)]: :func:`token_flags` of each paragraph, zero-padded."""
    width = max(len(tokens) for tokens in paragraphs)
    out = torch.zeros(len(paragraphs), width, len(TOKEN_FLAGS))
    for b, tokens in enumerate(paragraphs):
        out[b, : len(tokens)] = torch.from_numpy(token_flags(text, tokens))
    return out
