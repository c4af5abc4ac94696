"""Word vectors the sentence model learns itself, for a treebank without a transformer.

A frozen transformer reads English words for the sentence model (:mod:`.sentences`); no such
model ships for French, Turkish or Hungarian, and a no-LM install has none at all. This reader
learns its vectors with the sentence model from the treebank's own training tokens: a vector for
each lower-cased form seen at least ``min_count`` times (the rarer ones share one, which word
dropout trains), beside a character CNN over the form as written, max-pooled over its
characters: casing, digits, punctuation and endings, which mark names, list items and
signatures where no full stop does. The vocabularies are plain data in the model's config, so a
checkpoint stays loadable with ``weights_only=True``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["PAD", "UNKNOWN", "WordReader"]

PAD = 0
UNKNOWN = 1
"""Ids of padding and of a word or character the vocabularies lack (theirs start at 2)."""


class WordReader(nn.Module):
    """float[B, T, n_out] for B runs of token forms: a learned word vector and character filters.

    Args:
        words: the lower-cased forms with a vector of their own.
        chars: the characters with an embedding of their own.
        dim: width of the word vectors.
        char_dim: width of the character embeddings.
        filters: the CNN's filters (its output width).
        width: the CNN's window, in characters.
        max_chars: a longer form is read as its first and last ``max_chars // 2`` characters
            (a URL's middle tells nothing of sentence ends).
        word_dropout: in training, the share of known words read as unknown.

    Attributes:
        n_out: ``dim + filters``.
    """

    def __init__(
        self,
        words: Sequence[str],
        chars: Sequence[str],
        *,
        dim: int = 64,
        char_dim: int = 32,
        filters: int = 64,
        width: int = 3,
        max_chars: int = 20,
        word_dropout: float = 0.1,
    ) -> None:
        """Create the embeddings and the CNN (fresh weights)."""
        super().__init__()
        if max_chars < 2 or not 0.0 <= word_dropout < 1.0:
            raise ValueError(
                f"max_chars {max_chars} < 2, or word_dropout {word_dropout} not in [0, 1)"
            )
        self.words, self.chars = list(words), list(chars)
        self._word_ids = {word: k for k, word in enumerate(self.words, start=2)}
        self._char_ids = {char: k for k, char in enumerate(self.chars, start=2)}
        self.word_embed = nn.Embedding(len(self.words) + 2, dim, padding_idx=PAD)
        self.char_embed = nn.Embedding(len(self.chars) + 2, char_dim, padding_idx=PAD)
        self.cnn = nn.Conv1d(char_dim, filters, width, padding=width // 2)
        self.settings = {"dim": dim, "char_dim": char_dim, "filters": filters, "width": width}
        self.settings |= {"max_chars": max_chars, "word_dropout": word_dropout}
        self.n_out = dim + filters

    @staticmethod
    def vocabularies(forms: Iterable[str], min_count: int = 2) -> dict[str, list[str]]:
        """``{"words": [...], "chars": [...]}`` of training ``forms``, most frequent first.

        A lower-cased form or a character is kept where it occurs at least ``min_count`` times.
        """
        words: Counter[str] = Counter()
        chars: Counter[str] = Counter()
        for form in forms:
            words[form.lower()] += 1
            chars.update(form)
        return {
            "words": [word for word, n in words.most_common() if n >= min_count],
            "chars": [char for char, n in chars.most_common() if n >= min_count],
        }

    def config(self) -> dict[str, Any]:
        """Plain data rebuilding this reader (its vocabularies included)."""
        return {"words": list(self.words), "chars": list(self.chars), **self.settings}

    def forward(self, forms: Sequence[Sequence[str]], width: int) -> torch.Tensor:
        """float[B, width, n_out]: the vectors of B runs of forms, zero-padded to ``width``."""
        flat = [form for run in forms for form in run]
        ids = [self._word_ids.get(form.lower(), UNKNOWN) for form in flat]
        words = torch.tensor(ids, dtype=torch.long)
        if self.training and self.settings["word_dropout"] > 0:
            dropped = torch.rand(words.shape) < self.settings["word_dropout"]
            words = words.masked_fill(dropped & (words > UNKNOWN), UNKNOWN)
        vectors = torch.cat([self.word_embed(words), self._filters(flat)], -1)  # [N, n_out]
        out = vectors.new_zeros(len(forms), width, self.n_out)
        start = 0
        for b, run in enumerate(forms):
            out[b, : len(run)] = vectors[start : start + len(run)]
            start += len(run)
        return out

    def _filters(self, forms: Sequence[str]) -> torch.Tensor:
        """float[N, filters]: the CNN's filters max-pooled over each of N forms' characters.

        The padding characters' embedding is zero (``padding_idx``), as the convolution's own
        padding is, so a form's filters do not depend on the longest form beside it.
        """
        shown = [self._shown(form, self.settings["max_chars"]) for form in forms]
        chars = torch.full((len(shown), max(map(len, shown), default=1)), PAD, dtype=torch.long)
        for k, form in enumerate(shown):
            chars[k, : len(form)] = torch.tensor(
                [self._char_ids.get(c, UNKNOWN) for c in form], dtype=torch.long
            )
        embedded = self.char_embed(chars).transpose(1, 2)  # [N, char_dim, L]
        filtered = torch.relu(self.cnn(embedded))  # [N, filters, L]
        filtered = filtered.masked_fill((chars == PAD)[:, None, :], float("-inf"))
        return filtered.amax(-1)  # a token has a character, so no row stays -inf

    @staticmethod
    def _shown(form: str, kept: int) -> str:
        """``form``, or its first and last ``kept // 2`` characters where it is longer."""
        half = kept // 2
        return form if len(form) <= 2 * half else form[:half] + form[-half:]
