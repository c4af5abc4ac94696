"""Padded numpy batches (:mod:`biaffine.data.encoding`) as torch batches, bucketed by length.

Position 0 of every sentence is ROOT, so gold heads index the padded tensors directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import torch

from biaffine.data.encoding import IGNORE_INDEX, Encoded, encode, pad, plan_batches
from decoding.types import IntArray

__all__ = [
    "IGNORE_INDEX",
    "Batch",
    "Encoded",
    "batches_by_tokens",
    "collate",
    "encode",
    "plan_batches",
]


@dataclass(frozen=True, slots=True)
class Batch:
    """A padded batch; position 0 = ROOT, B sentences of at most N words, C chars per word.

    Attributes:
        words: long[B, N+1] word ids; ROOT at 0, PAD after each sentence.
        chars: long[B, N+1, C] char ids; PAD-only rows for padding words.
        heads: long[B, N+1] gold heads; 0 at position 0 and padding (all 0 if unannotated).
        rels: long[B, N+1] gold relation ids; -100 at position 0, padding, unknown or absent.
        mask: bool[B, N+1]; True at words 1..n only.
        lengths: long[B] words per sentence n.
        indices: long[B] position of each sentence in the encoded input list.
        columns: long[B, N+1] ids of each tagged column, by name (``upos``, ``xpos``, ``feats``,
            ``lemma``); IGNORE_INDEX where a word has no class.
        forms: the word forms of each sentence (ROOT excluded), or None if the encoded items
            lack them; read by encoders that look words up as text.
    """

    words: torch.Tensor
    chars: torch.Tensor
    heads: torch.Tensor
    rels: torch.Tensor
    mask: torch.Tensor
    lengths: torch.Tensor
    indices: torch.Tensor
    columns: dict[str, torch.Tensor]
    forms: tuple[tuple[str, ...], ...] | None = None

    @property
    def batch_size(self) -> int:
        """B, the number of sentences."""
        return self.lengths.shape[0]

    def to(self, device: torch.device | str, *, non_blocking: bool = False) -> Batch:
        """A copy with every tensor on ``device`` (the forms are shared)."""
        moved = {
            f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
            for f in fields(self)
            if f.name not in ("forms", "columns")
        }
        columns = {
            name: ids.to(device, non_blocking=non_blocking) for name, ids in self.columns.items()
        }
        return Batch(**moved, columns=columns, forms=self.forms)


def collate(items: Sequence[Encoded], indices: Sequence[int] | IntArray) -> Batch:
    """Pads encoded sentences into one Batch (:func:`biaffine.data.encoding.pad`, as tensors).

    Args:
        items: B >= 1 encoded sentences.
        indices: int[B], the position of each item in the caller's list (``Batch.indices``).
    """
    padded = pad(items, indices)
    arrays = {f.name: getattr(padded, f.name) for f in fields(padded)}
    columns, forms = arrays.pop("columns"), arrays.pop("forms")
    return Batch(
        **{name: torch.from_numpy(array) for name, array in arrays.items()},
        columns={name: torch.from_numpy(array) for name, array in columns.items()},
        forms=forms,
    )


def batches_by_tokens(
    encoded: Sequence[Encoded], max_tokens: int, *, shuffle: bool, seed: int = 0, epoch: int = 0
) -> Iterator[Batch]:
    """Yields padded batches of ``encoded`` as planned by :func:`plan_batches`.

    Args:
        encoded: sentences from :func:`encode`; ``Batch.indices`` are positions in this list.
        max_tokens: at most this many words (padding included) per batch.
        shuffle: random tie order and batch order (training); False gives a fixed order.
        seed: random seed; batches are deterministic for (seed, epoch).
        epoch: epoch number, varies the order between epochs.

    Returns:
        An iterator of Batch; every sentence appears in exactly one batch.
    """
    plan = plan_batches(
        [len(e) for e in encoded], max_tokens, shuffle=shuffle, seed=seed, epoch=epoch
    )
    return (collate([encoded[i] for i in index], index) for index in plan)
