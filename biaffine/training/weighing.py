"""A lexicon guesser's weight beside its tagger, chosen by tagging the dev file with each.

The UPOS guesser's log-probabilities are added to the tagger's scores times a weight
(:func:`biaffine.inference.choices.guessed_upos`), and so are the FEATS guesser's where it has
one (:func:`biaffine.inference.choices._guess_feats`). After a guesser is trained
(:func:`biaffine.training.lemma_generator.add_to_lexicon`'s ``then``), the model it joins tags
every dev word once per weight tried, as a user's parse does (gold tokens), and the weight that
gets most of them right is kept: the first tried of those tied, which is what the model did
without the weight.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import torch

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.conllu import Sentence
from biaffine.training.lemma_generator import Trained, Triple, adder

__all__ = ["Weighed", "weigh", "weighed_adder"]

_NO_UPOS = "_"


@dataclasses.dataclass(frozen=True)
class Weighed(Trained):
    """A trained guesser with the weight chosen for it.

    Attributes:
        column: the column it tags (``upos``, ``feats``).
        tried: per weight tried, [weight, percent of the dev words with a UPOS whose
            ``column`` the model gets right with the guesser so weighed].
    """

    column: str
    tried: list[list[Any]]

    def facts(self) -> dict[str, Any]:
        """:meth:`Trained.facts`, the weights tried as ``dev_COLUMN``."""
        facts = Trained.facts(self)
        del facts["column"], facts["tried"]
        return facts | {f"dev_{self.column}": self.tried}


def weigh(
    trained: Trained,
    loaded: checkpoint.Checkpoint,
    dev: Sequence[Sentence],
    *,
    kind: str,
    column: str,
    weights: Sequence[float | None],
    report: Callable[[str], None] = print,
) -> Weighed:
    """``trained`` with the weight of ``weights`` with which ``loaded`` tags ``dev`` best.

    Args:
        trained: the guesser as trained, any weight.
        loaded: the model it joins.
        dev: the dev sentences, with their UPOS and ``column``.
        kind: the lexicon's field for the guesser (``upos_guesser``, ``feats_guesser``).
        column: the column it tags.
        weights: the weights to try, the one that leaves the model as it was first.
        report: writes a line per weight.
    """
    parser = Parser(checkpoint.build_model(loaded), loaded.vocabs, device=torch.device("cpu"))
    lexicon = loaded.vocabs.lexicon
    gold = [value for sentence in dev for value in getattr(sentence, column)]
    upos = [tag for sentence in dev for tag in sentence.upos]
    counted = [k for k, tag in enumerate(upos) if tag != _NO_UPOS]
    if not counted:
        raise ValueError(f"no dev word has a UPOS: nothing to weigh the {kind} on")
    tried = []
    for weight in weights:
        guesser = dataclasses.replace(trained.model, weight=weight)
        parser.vocabs = dataclasses.replace(
            loaded.vocabs, lexicon=dataclasses.replace(lexicon, **{kind: guesser})
        )
        trees = parser.parse(list(dev), columns=[column], overwrite=True)
        tagged = [value for tree in trees for value in getattr(tree.sentence, column)]
        right = 100 * sum(tagged[k] == gold[k] for k in counted) / len(counted)
        report(f"weight {weight}: dev {column} {right:.2f}%")
        tried.append([weight, round(right, 2)])
    best = max(right for _, right in tried)
    chosen = next(weight for weight, right in tried if right == best)
    kept = {field.name: getattr(trained, field.name) for field in dataclasses.fields(trained)}
    model = dataclasses.replace(trained.model, weight=chosen)
    return Weighed(**(kept | {"model": model}), column=column, tried=tried)


def weighed_adder(
    kind: str,
    trainer: Callable[..., Trained],
    data_of: Callable[[Sequence[Sentence]], list[Triple]],
    *,
    column: str,
    weights: Sequence[float | None],
) -> Callable[..., Trained]:
    """The command's work for a guesser weighed on dev (``adder`` with :func:`weigh`)."""
    weighing = functools.partial(weigh, kind=kind, column=column, weights=weights)
    return adder(kind, trainer, data_of, then=weighing, needs=column)
