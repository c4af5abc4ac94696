r"""Train the lexicon's FEATS guesser for a model and write the model again with it.

The guesser (:mod:`biaffine.data.feats_guesser`) picks the FEATS of the words whose form
training lacks from their UPOS and characters. It is trained after the parser on the parser's
training file, as the lemma generator is (:func:`biaffine.training.lemma_generator.fit`): its
distinct (form, UPOS, FEATS) triples, cross-entropy over every FEATS value training had, the
epoch kept that picks most dev words right among those whose form training lacks (given their
gold UPOS). Then how it joins the FEATS tagger: the model tags the dev file once for each of
:data:`WEIGHTS` (its pick alone, or its log-probabilities so weighed added to the tagger's), and
the one that gets most dev words' FEATS right is kept (:mod:`biaffine.training.weighing`).

Usage::

    python -m biaffine.training.feats_guesser CHECKPOINT TRAIN.conllu DEV.conllu OUT \
        [--minutes 12] [--hidden 64] [--threads 1] [--seed 1] [--stored-as float16|int8]

``OUT`` is ``CHECKPOINT`` with the guesser in its lexicon and the facts of its training in its
metadata (``feats_guesser``, with ``dev_feats``: each weight's dev score), everything else as
it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine.cli import exit_on_termination
from biaffine.data.character_model import PAD, SPECIAL_SYMBOLS
from biaffine.data.conllu import Sentence
from biaffine.data.feats_guesser import FeatsGuesser
from biaffine.training.lemma_generator import (
    DIM,
    DROPOUT,
    HIDDEN,
    Trained,
    Triple,
    command_line,
    fit,
    padded,
)
from biaffine.training.weighing import weighed_adder

__all__ = [
    "WEIGHTS",
    "ClassifierNet",
    "add_guesser",
    "feats_triples",
    "guesser_of",
    "train_classifier",
    "train_guesser",
]


WEIGHTS = (None, 0.5, 1.0, 2.0, 4.0)
"""The guesser's weights beside the FEATS tagger tried on dev
(:func:`biaffine.training.weighing.weigh`; None: its pick replaces the tagger's)."""


class ClassifierNet(nn.Module):
    """A character classifier's torch twin for training: same weights, the same scores.

    The twin of :class:`biaffine.data.character_model.CharacterClassifier`: the FEATS guesser's
    and the UPOS guesser's.
    """

    def __init__(self, symbols: int, classes: int, dim: int = DIM, hidden: int = HIDDEN) -> None:
        """``symbols`` symbol ids (specials, characters, tags), ``classes`` values scored."""
        super().__init__()
        self.embed = nn.Embedding(symbols, dim, padding_idx=PAD)
        self.encoder = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(4 * hidden, classes)
        self.dropout = nn.Dropout(DROPOUT)

    def forward(self, source: torch.Tensor) -> torch.Tensor:
        """Scores float[B, C] of every class for each word (no UPOS restriction).

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
        features = torch.cat([mean, last[0], last[1]], 1)  # as CharacterClassifier.features
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


def weights_of(net: ClassifierNet) -> dict[str, np.ndarray]:
    """``net``'s weights as float32 arrays, by their names in its ``state_dict``."""
    return {name: w.detach().float().numpy().copy() for name, w in net.state_dict().items()}


def guesser_of(
    net: ClassifierNet, chars: Sequence[str], tags: Sequence[str], data: Sequence[Triple]
) -> FeatsGuesser:
    """The torch-free guesser with ``net``'s weights; its values and their UPOS from ``data``."""
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
        weights_of(net),
        tuple(classes),
        {upos: tuple(sorted(k)) for upos, k in allowed.items()},
    )


def train_classifier(
    data: Sequence[Triple],
    dev_words: Sequence[Triple],
    model_of: Callable[[ClassifierNet], Any],
    picks: Callable[[Any, Sequence[Triple]], list[str]],
    *,
    symbols: int,
    minutes: float,
    seed: int,
    max_epochs: int | None,
    dim: int,
    hidden: int,
    report: Callable[[str], None],
) -> Trained:
    """Train a character classifier on (form, UPOS, class) triples; keep the best dev epoch.

    Cross-entropy over every class of ``data``, :func:`fit`'s schedule.

    Args:
        data: the distinct training triples.
        dev_words: the dev words whose form training lacks, as triples.
        model_of: the torch-free model with a net's weights (its classes sorted).
        picks: the class a model picks for each of some triples (their third item unread).
        symbols: symbol ids the net reads.
        minutes: the training budget.
        seed: the initial weights and the batches' order.
        max_epochs: a cap on the epochs, or None.
        dim: symbol embedding size.
        hidden: encoder units per direction.
        report: writes a line after each epoch.
    """
    torch.manual_seed(seed)
    net = ClassifierNet(symbols, len({value for _, _, value in data}), dim, hidden)
    tables = model_of(net)  # its symbol and class tables
    ids = {value: k for k, value in enumerate(tables.classes)}
    loss = nn.CrossEntropyLoss()

    def loss_of(batch: Sequence[Triple]) -> torch.Tensor:
        source = padded([tables.source(form, upos) for form, upos, _ in batch])
        return loss(net(source), torch.tensor([ids[value] for _, _, value in batch]))

    def judge() -> tuple[float, Any]:
        model = model_of(net)
        picked = picks(model, dev_words)
        right = np.mean([p == value for p, (_, _, value) in zip(picked, dev_words, strict=True)])
        return 100 * float(right), model

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


def unseen(triples: Sequence[Triple], train: Sequence[Sentence]) -> list[Triple]:
    """The ``triples`` whose form no word of ``train`` has."""
    seen = {form for sentence in train for form in sentence.forms}
    return [triple for triple in triples if triple[0] not in seen]


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
    # Dev words with their UPOS: a dev file without UPOS was trained on, then weighed on no
    # word at all (a ZeroDivisionError once the minutes were spent).
    triples = [t for s in dev for t in zip(s.forms, s.upos, s.feats, strict=True) if t[1] != "_"]
    dev_words = unseen(triples, train)
    if not data or not dev_words:
        raise ValueError(
            "the FEATS guesser needs training words and unseen dev words with their UPOS"
        )
    chars = sorted({c for form, _, _ in data for c in form})
    tags = sorted({upos for _, upos, _ in data})
    return train_classifier(
        data,
        dev_words,
        lambda net: guesser_of(net, chars, tags, data),
        lambda guesser, words: guesser.feats([(form, upos) for form, upos, _ in words]),
        symbols=SPECIAL_SYMBOLS + len(chars) + len(tags),
        minutes=minutes,
        seed=seed,
        max_epochs=max_epochs,
        dim=dim,
        hidden=hidden,
        report=report,
    )


add_guesser = weighed_adder(
    "feats_guesser", train_guesser, feats_triples, column="feats", weights=WEIGHTS
)
"""Write a checkpoint again with a FEATS guesser in its lexicon (:func:`adder`'s ``add``)."""


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: CHECKPOINT TRAIN DEV OUT."""
    command_line(
        argv,
        module="biaffine.training.feats_guesser",
        description=__doc__.splitlines()[0],
        add=add_guesser,
        what="FEATS guesser",
        minutes=12.0,
        hidden=HIDDEN,
    )


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
