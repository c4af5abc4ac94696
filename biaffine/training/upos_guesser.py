r"""Train the lexicon's UPOS guesser for a model, weigh it on dev, write the model again with it.

The guesser (:mod:`biaffine.data.upos_guesser`) scores the UPOS of the words whose form
training lacks from their characters. It is trained after the parser on the parser's training
file, as the FEATS guesser is (:func:`biaffine.training.feats_guesser.train_classifier`): its
distinct (form, UPOS) pairs, cross-entropy over every UPOS training had, the epoch kept that
picks most dev words right on its own among those whose form training lacks. Then its weight
beside the tagger: the model parses the dev file once for each of :data:`WEIGHTS`, and the one
that gets most dev words' UPOS right is kept (the smallest of those tied;
:mod:`biaffine.training.weighing`).

Usage::

    python -m biaffine.training.upos_guesser CHECKPOINT TRAIN.conllu DEV.conllu OUT \
        [--minutes 12] [--hidden 64] [--threads 1] [--seed 1] [--stored-as float16|int8]

``OUT`` is ``CHECKPOINT`` with the guesser in its lexicon and the facts of its training in its
metadata (``upos_guesser``: :class:`biaffine.training.weighing.Weighed`'s, with the options
given), everything else as it
was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from biaffine.cli import exit_on_termination
from biaffine.data.character_model import SPECIAL_SYMBOLS
from biaffine.data.conllu import Sentence
from biaffine.data.upos_guesser import UposGuesser
from biaffine.training.feats_guesser import ClassifierNet, train_classifier, unseen, weights_of
from biaffine.training.lemma_generator import DIM, HIDDEN, Trained, Triple, command_line
from biaffine.training.weighing import weighed_adder

__all__ = ["WEIGHTS", "add_upos_guesser", "guesser_of", "train_upos_guesser", "upos_pairs"]

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)
"""The guesser's weights tried on dev (:func:`biaffine.training.weighing.weigh`; 0: the tagger
alone)."""

_NO_UPOS = "_"


def upos_pairs(sentences: Sequence[Sentence]) -> list[Triple]:
    """The distinct (form, ``""``, UPOS) of the words with a UPOS, sorted (the middle unread)."""
    return sorted(
        {
            (form, "", upos)
            for sentence in sentences
            for form, upos in zip(sentence.forms, sentence.upos, strict=True)
            if upos != _NO_UPOS
        }
    )


def guesser_of(net: ClassifierNet, chars: Sequence[str], classes: Sequence[str]) -> UposGuesser:
    """The torch-free guesser with ``net``'s weights, its weight 1."""
    dim, hidden = net.embed.embedding_dim, net.encoder.hidden_size
    return UposGuesser(tuple(chars), (), dim, hidden, weights_of(net), tuple(classes), 1.0)


def train_upos_guesser(
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
    """Train on ``train``'s pairs for ``minutes`` (or ``max_epochs``), keep the best dev epoch.

    Its weight is 1 here: :func:`biaffine.training.weighing.weigh` chooses it.

    Raises:
        ValueError: no training word with a UPOS, or no such dev word whose form training lacks.
    """
    data = upos_pairs(train)
    tagged = [
        (form, "", upos)
        for sentence in dev
        for form, upos in zip(sentence.forms, sentence.upos, strict=True)
        if upos != _NO_UPOS
    ]
    dev_words = unseen(tagged, train)
    if not data or not dev_words:
        raise ValueError("the UPOS guesser needs training words and unseen dev words")
    chars = sorted({c for form, _, _ in data for c in form})
    classes = sorted({upos for _, _, upos in data})
    return train_classifier(
        data,
        dev_words,
        lambda net: guesser_of(net, chars, classes),
        _picks,
        symbols=SPECIAL_SYMBOLS + len(chars),
        minutes=minutes,
        seed=seed,
        max_epochs=max_epochs,
        dim=dim,
        hidden=hidden,
        report=report,
    )


def _picks(guesser: UposGuesser, words: Sequence[Triple]) -> list[str]:
    """The UPOS ``guesser`` alone gives each of ``words`` (form, _, _)."""
    best = guesser.log_probs([form for form, _, _ in words]).argmax(1).tolist()
    return [guesser.classes[k] for k in best]


add_upos_guesser = weighed_adder(
    "upos_guesser", train_upos_guesser, upos_pairs, column="upos", weights=WEIGHTS
)
"""Write a checkpoint again with a UPOS guesser in its lexicon (:func:`adder`'s ``add``)."""


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: CHECKPOINT TRAIN DEV OUT."""
    command_line(
        argv,
        module="biaffine.training.upos_guesser",
        description=__doc__.splitlines()[0],
        add=add_upos_guesser,
        what="UPOS guesser",
        minutes=12.0,
        hidden=HIDDEN,
    )


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
