"""The transition family: a batch of configurations searched in lockstep, then a label per arc.

Every sentence of a batch takes one transition per step (greedy) or keeps a beam of items
(:func:`transitions.beam_search`), with one MLP call per step for all live configurations;
finished sentences drop out. A combined model's search adds its graph head's arc
log-probabilities to the transition scores (or a paired graph parser's:
:meth:`~biaffine.parsers.transition.TransitionParser.pair`). Labels come from the label
scorer on the finished tree's arcs, as in the graph family, and projective systems'
pseudo-projective labels are then decoded (:func:`transitions.projective.deprojectivize`).

Transition parsers have no distribution over trees: ``probabilities=True`` gives each label's
probability and ``path_log_prob``, the log of the product of the transition probabilities along
the path the search took (not the tree's probability: other paths may build the same tree).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import torch

import transitions
from biaffine.data.batching import Batch
from biaffine.data.conllu import Sentence
from biaffine.inference.base import BatchResults, Family, predicted_columns
from biaffine.inference.choices import (
    deprojectivize_batch,
    find_trees,
    labelled_tree,
    word_slice,
)
from biaffine.inference.graph import choose_labels, decode_heads, label_probabilities, root_label_id
from biaffine.inference.request import Request, SentenceResult, Tree
from biaffine.inference.settings import DecoderSettings, TransitionSearch
from biaffine.parsers.transition import TransitionParser, TransitionStates

__all__ = ["TransitionFamily", "deprojectivize_batch", "scorer", "search"]

IntArray = npt.NDArray[np.int64]


def scorer(model: TransitionParser, encoded: TransitionStates) -> transitions.SlotScorer:
    """The search's scorer of an encoded batch: the transition MLP on its slots, in numpy.

    A greedy search runs on it in one compiled loop; a beam calls it once per step (see
    :class:`transitions.SlotScorer`).
    """
    return model.slot_scorer(encoded.slots)


def search(
    model: TransitionParser,
    encoded: TransitionStates,
    lengths: IntArray,
    settings: TransitionSearch,
) -> transitions.SearchResult:
    """Find the trees of an encoded batch with the search ``settings`` ask for.

    Args:
        model: the parser (its transition MLP scores configurations).
        encoded: :meth:`TransitionParser.encode` of the batch.
        lengths: int64[B], words per sentence.
        settings: ``search``, ``beam_size`` and ``graph_weight`` are read.

    Returns:
        The search's :class:`transitions.SearchResult`.

    Raises:
        ValueError: ``graph_weight`` > 0 for a parser without a graph head.
    """
    arc_scores = None
    if settings.graph_weight > 0:
        arc_scores = _graph_head(encoded, settings).float().cpu().numpy()
    return find_trees(
        model.system,
        lengths,
        scorer(model, encoded),
        settings,
        n_stack=model.n_stack,
        n_buffer=model.n_buffer,
        global_scores=model.global_scores,
        arc_scores=arc_scores,
    )


def _graph_head(encoded: TransitionStates, settings: TransitionSearch) -> torch.Tensor:
    """The graph head's arc scores float[B, N+1, N+1]; a clear error without a graph head."""
    if encoded.arc_scores is None:
        raise ValueError(_no_graph_head(settings))
    return encoded.arc_scores


def _no_graph_head(settings: DecoderSettings | TransitionSearch) -> str:
    """Why a search that reads the graph head cannot run on a model without one."""
    asked = "search=graph" if settings.search == "graph" else "graph_weight > 0"
    return (
        f"{asked} needs a combined model (a transition parser trained with "
        "graph_loss_weight > 0, e.g. model=combined) or a graph parser paired with this one "
        "(partner=PATH); this one has no graph head"
    )


class TransitionFamily(Family):
    """Transition parsers: a batch of configurations searched in lockstep, then labels.

    It answers one tree per sentence, with label and transition-path probabilities, and
    predicted columns; k-best trees and fixed heads need arc scores (a graph parser).
    """

    name = "transition"
    model: TransitionParser

    @classmethod
    def narrow(cls, settings: DecoderSettings) -> TransitionSearch:
        """The search, and how ``search="graph"`` decodes the graph head."""
        return settings.transition_search()

    def refusal(self, request: Request, settings: DecoderSettings) -> str | None:
        """No k-best or fixed heads; no probabilities of a graph head alone; no missing head."""
        if request.kbest is not None or request.fixed_heads is not None:
            # Named as predict.py spells the options.
            what = f"kbest={request.kbest}" if request.kbest else "keep_given_heads=true"
            return (
                f"{what} needs a graph parser (arc scores); this checkpoint holds a transition "
                "parser"
            )
        if settings.asks_decoder and settings.search != "graph":  # it was ignored
            multiroot = not settings.root_constraint and settings.algorithm != "greedy"
            rooted = ", root_constraint=false" if multiroot else ""
            return (
                f"decoder={settings.algorithm}{rooted} is for graph parsers; a transition parser "
                f"reads it with search=graph alone (this one: search={settings.search})"
            )
        if request.probabilities and settings.search == "graph":
            return "probabilities=true with search=graph: use a transition search"
        needs_graph = settings.search == "graph" or settings.graph_weight > 0
        if needs_graph and not self.model.has_arc_scores:
            return _no_graph_head(settings)
        return super().refusal(request, settings)

    @classmethod
    def warm_up(cls, settings: Mapping[str, TransitionSearch]) -> None:
        """Load every system's compiled kernels now, on a two-word sentence.

        Greedy and beam search with arc scores run once per system, whatever ``settings`` hold.
        """
        del settings
        arc_scores = np.zeros((1, 3, 3))
        for name in transitions.SYSTEM_NAMES:
            system = transitions.get_system(name)
            n_actions = len(system.transitions)
            weight, bias = np.zeros((n_actions, 1)), np.zeros(n_actions)
            score = transitions.SlotScorer.of(np.zeros((1, 4, 5, 1)), np.zeros(1), weight, bias, 0)
            transitions.greedy_search(system, [2], score)
            transitions.beam_search(system, [2], score, beam_size=2, arc_scores=arc_scores)
        deprojectivize_batch(np.array([[-1, 0, 1]]), np.array([[-1, 0, 1]]), ["root", "x|root"])

    def parse_batch(
        self,
        batch: Batch,
        sentences: Sequence[Sentence],
        request: Request,
        settings: Mapping[str, TransitionSearch],
        fixed_heads: Sequence[Sequence[int | None]] | None,
    ) -> BatchResults:
        """Encode the batch once and search it with every setting (see :class:`Family`).

        The graph decoder fields of the settings (``algorithm``, ``root_constraint``) apply
        only to ``search="graph"`` (a combined model's graph head alone); otherwise the system
        decides the root rule. The seconds are those spent outside the encoder (the search
        with its MLP calls, labels and deprojectivization); the columns are chosen for each
        setting's trees, whose relations weigh the UPOS.
        """
        del fixed_heads  # refused
        model = self.model
        read = self.tags_read(request, sentences)
        encoded = model.encode(batch, tag=read)
        lengths = [len(sentence) for sentence in sentences]
        results = {}
        for name, setting in settings.items():
            started = time.perf_counter()
            trees = [[tree] for tree in self._trees(encoded, batch, lengths, request, setting)]
            seconds = time.perf_counter() - started
            columns = predicted_columns(
                encoded.tag_scores, request.columns, self.vocabs, sentences, trees, read
            )
            found = [SentenceResult(tree, c) for tree, c in zip(trees, columns, strict=True)]
            results[name] = (found, seconds)
        return results

    def _trees(
        self,
        encoded: TransitionStates,
        batch: Batch,
        lengths: list[int],
        request: Request,
        settings: TransitionSearch,
    ) -> list[Tree]:
        """One labelled tree per row, deprojectivized, with probabilities when asked."""
        model = self.model
        path_log_probs = None
        if settings.search == "graph":
            heads = decode_heads(_graph_head(encoded, settings), batch.lengths, settings.graph)
        else:
            # No torch call per step: the search reads the MLP's numpy arrays (SlotScorer).
            # Per-step calls on two torch threads each waited for the descheduled thread
            # beside busy processes (EWT test, 2 cores at load 8: 10-22 ms a call).
            found = search(model, encoded, batch.lengths.cpu().numpy(), settings)
            heads, path_log_probs = found.heads, found.path_log_probs
        root = root_label_id(self.vocabs.rels)
        rels = choose_labels(model.labels, encoded.labels, heads, root_label=root)
        # The probability of the label chosen, pseudo-projective or not.
        label_probs = (
            label_probabilities(model.labels, encoded.labels, heads, rels)
            if request.probabilities
            else None
        )
        if model.system.projective:
            deprojectivize_batch(heads, rels, model.rel_names)
        trees = []
        for row, n in enumerate(lengths):
            tree = labelled_tree(heads, rels, row, n, self.vocabs.rels)
            if label_probs is not None and path_log_probs is not None:
                tree = Tree(
                    tree.heads,
                    tree.rels,
                    label_probs=word_slice(label_probs, row, n),
                    path_log_prob=float(path_log_probs[row]),
                )
            trees.append(tree)
        return trees
