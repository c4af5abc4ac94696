r"""Train the lexicon's FEATS guesser for a model and write the model again with it.

The guesser (:mod:`biaffine.data.feats_guesser`) picks the FEATS of the words whose form
training lacks from their UPOS and characters. It is trained after the parser on the parser's
training file, as the lemma generator is (:func:`biaffine.training.lemma_generator.fit`): its
distinct (form, UPOS, FEATS) triples, cross-entropy over every FEATS value training had, the
epoch kept that picks most dev words right among those whose form training lacks (given their
gold UPOS).

Usage::

    python -m biaffine.training.feats_guesser CHECKPOINT TRAIN.conllu DEV.conllu OUT \
        [--minutes 12] [--hidden 64] [--threads 1] [--seed 1] [--stored-as float16|int8]

``OUT`` is ``CHECKPOINT`` with the guesser in its lexicon and the facts of its training in its
metadata (``feats_guesser``), everything else as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine.data.character_model import PAD, SPECIAL_SYMBOLS
from biaffine.data.conllu import Sentence
from biaffine.data.feats_guesser import FeatsGuesser
from biaffine.training.lemma_generator import (
    DIM,
    DROPOUT,
    HIDDEN,
    Trained,
    Triple,
    adder,
    command_line,
    fit,
    padded,
)

__all__ = ["FeatsNet", "add_guesser", "feats_triples", "guesser_of", "train_guesser"]


class FeatsNet(nn.Module):
    """The guesser's torch twin for training: same weights, the same scores."""

    def __init__(self, symbols: int, values: int, dim: int = DIM, hidden: int = HIDDEN) -> None:
        """``symbols`` symbol ids (specials, characters, tags), ``values`` FEATS values."""
        super().__init__()
        self.embed = nn.Embedding(symbols, dim, padding_idx=PAD)
        self.encoder = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(4 * hidden, values)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, source: torch.Tensor) -> torch.Tensor:
        """Scores float[B, C] of every value for each word (no UPOS restriction).

        Args:
            source: int64[B, S] symbols read, PAD after each word's.
        """
        lengths = (source != PAD).sum(1)
        packed = pack_padded_sequence(
            self.dropout(self.embed(source)), lengths, batch_first=True, enforce_sorted=False
        )
        output, (last, _) = self.encoder(packed)
        states, _ = pad_packed_sequence(output, batch_first=True, total_length=source.shape[1])
        mean = states.sum(1) / lengths[:, None]
        features = torch.cat([mean, last[0], last[1]], 1)  # as FeatsGuesser.features
        return self.out(self.dropout(features))


def feats_triples(sentences: Sequence[Sentence]) -> list[Triple]:
    """The distinct (form, UPOS, FEATS) of the words, sorted."""
    return sorted(
        {
            triple
            for sentence in sentences
            for triple in zip(sentence.forms, sentence.upos, sentence.feats, strict=True)
        }
    )


def guesser_of(
    net: FeatsNet, chars: Sequence[str], tags: Sequence[str], data: Sequence[Triple]
) -> FeatsGuesser:
    """The torch-free guesser with ``net``'s weights; its values and their UPOS from ``data``."""
    arrays = {name: w.detach().float().numpy().copy() for name, w in net.state_dict().items()}
    classes = sorted({feats for _, _, feats in data})
    ids = {feats: k for k, feats in enumerate(classes)}
    allowed: dict[str, set[int]] = {}
    for _, upos, feats in data:
        allowed.setdefault(upos, set()).add(ids[feats])
    dim, hidden = net.embed.embedding_dim, net.encoder.hidden_size
    return FeatsGuesser(
        tuple(chars),
        tuple(tags),
        dim,
        hidden,
        arrays,
        tuple(classes),
        {upos: tuple(sorted(k)) for upos, k in allowed.items()},
    )


def train_guesser(
    train: Sequence[Sentence],
    dev: Sequence[Sentence],
    *,
    minutes: float,
    seed: int = 1,
    max_epochs: int | None = None,
    dim: int = DIM,
    hidden: int = HIDDEN,
    report: Callable[[str], None] = print,
) -> Trained:
    """Train on ``train``'s triples for ``minutes`` (or ``max_epochs``), keep the best dev epoch.

    Raises:
        ValueError: no training word, or no dev word whose form training lacks.
    """
    data = feats_triples(train)
    seen = {form for sentence in train for form in sentence.forms}
    dev_words = [
        triple
        for sentence in dev
        for triple in zip(sentence.forms, sentence.upos, sentence.feats, strict=True)
        if triple[0] not in seen
    ]
    if not data or not dev_words:
        raise ValueError("the FEATS guesser needs training words and unseen dev words")
    chars = sorted({c for form, _, _ in data for c in form})
    tags = sorted({upos for _, upos, _ in data})
    torch.manual_seed(seed)
    net = FeatsNet(
        SPECIAL_SYMBOLS + len(chars) + len(tags), len({f for _, _, f in data}), dim, hidden
    )
    symbols = guesser_of(net, chars, tags, data)  # its symbol and value tables
    ids = {feats: k for k, feats in enumerate(symbols.classes)}
    loss = nn.CrossEntropyLoss()

    def loss_of(batch: Sequence[Triple]) -> torch.Tensor:
        source = padded([symbols.source(form, upos) for form, upos, _ in batch])
        return loss(net(source), torch.tensor([ids[feats] for _, _, feats in batch]))

    def judge() -> tuple[float, FeatsGuesser]:
        guesser = guesser_of(net, chars, tags, data)
        picked = guesser.feats([(form, upos) for form, upos, _ in dev_words])
        right = np.mean([p == feats for p, (_, _, feats) in zip(picked, dev_words, strict=True)])
        return 100 * float(right), guesser

    return fit(
        net,
        data,
        loss_of,
        judge,
        held=len(dev_words),
        minutes=minutes,
        seed=seed,
        max_epochs=max_epochs,
        report=report,
    )


add_guesser = adder("feats_guesser", train_guesser, feats_triples)
"""Write a checkpoint again with a FEATS guesser in its lexicon (:func:`adder`'s ``add``)."""


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: CHECKPOINT TRAIN DEV OUT."""
    command_line(
        argv,
        description=__doc__.splitlines()[0],
        add=add_guesser,
        what="FEATS guesser",
        minutes=12.0,
        hidden=HIDDEN,
    )


if __name__ == "__main__":
    main()
