"""The graph family: arc and label scores -> labelled trees with a :mod:`decoding` decoder.

It answers every request: one tree, probabilities (tree-CRF marginals and log-probabilities),
the k best trees, and trees that keep fixed heads; and predicted columns.

By default (``joint_labels``) the decoder maximizes, over trees, the sum of each arc's head
log-probability and its best label's, labelling only the arcs the trees found may take
(:func:`choices.decode_with_labels`): the labelled tree of highest
probability under the model's factorization ``P(h | d) P(l | d, h)``. Dozat & Manning (2017)
decode the heads alone and label the chosen arcs afterwards (``joint_labels=False``), which
can keep an arc whose every label is unlikely. On the UD dev sets of the seven shipped models
the joint choice gained 0.05 to 0.21 LAS (docs/parsing.md).

Probabilities: the arc scores define a distribution over single-rooted trees
(``P(tree) ∝ exp(sum of its arc scores)``, the tree-CRF of :mod:`biaffine.nn.treecrf`); a head
probability is the marginal of that arc (Matrix-Tree theorem, Koo et al. 2007), the tree's
log-probability its normalized score, and a label probability the softmax of the label scores
at the chosen arc (labels follow UD's rule: ``root`` on the ROOT arc and nowhere else; the
probability reported is the model's softmax probability of the label chosen). For a model
trained with the local loss these are the globally normalized reading of its scores, not
calibrated confidences. The determinant loses float64 precision when the words' best heads form
a cycle whose cheapest break costs more than about 35 nats; such a sentence gets NaN
probabilities rather than wrong ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

import decoding
from biaffine.data.batching import Batch
from biaffine.data.conllu import Sentence
from biaffine.inference.base import BatchResults, Family, predicted_columns
from biaffine.inference.choices import (
    MST,
    ROOT_LABEL,
    Found,
    arc_label_ids,
    best_head_labels,
    decode_arc_scores,
    decode_with_labels,
    find_with_labels,
    labelled_tree,
    root_label_id,
    word_label_ids,
    word_slice,
)
from biaffine.inference.request import Request, SentenceResult, Tree
from biaffine.inference.settings import DecoderSettings, GraphDecoding
from biaffine.nn.treecrf import marginals, tree_log_prob
from biaffine.parsers.graph import GraphScores
from biaffine.parsers.heads import LabelScorer, LabelVectors, head_vectors
from decoding.types import IntArray

__all__ = [
    "MST",
    "ROOT_LABEL",
    "GraphFamily",
    "choose_labels",
    "decode_heads",
    "root_label_id",
]


def decode_heads(
    arc_scores: torch.Tensor, lengths: torch.Tensor, decoder: GraphDecoding = MST
) -> IntArray:
    """Best tree per sentence from a batch of arc scores (:func:`choices.decode_arc_scores`).

    Args:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d.
        lengths: long[B] words per sentence, excluding ROOT.
        decoder: the decoder and whether exactly one word goes to ROOT.

    Returns:
        heads: int64 numpy array [B, N+1], ``-1`` at ROOT and at padding.

    Raises:
        ValueError: from :mod:`decoding` (NaN scores, bad lengths).
    """
    return decode_arc_scores(_numpy(arc_scores), lengths.detach().cpu().numpy(), decoder)


def _numpy(arc_scores: torch.Tensor) -> np.ndarray:
    """float64 numpy[B, N+1, N+1] of a batch's arc scores, what the decoders read."""
    return arc_scores.detach().to("cpu", torch.float64).numpy()


def choose_labels(
    scorer: LabelScorer,
    vectors: LabelVectors,
    heads: IntArray,
    *,
    root_label: int | None = None,
) -> IntArray:
    """The label id of each arc ``heads[b, d] -> d``: int64[B, N+1], -1 where heads is -1.

    Only the chosen arcs are scored, and only where a word has a head
    (:meth:`LabelScorer.at_words`: no ROOT, padding or headless word); the label of each
    follows UD's rule on ``root`` (:func:`choices.label_ids`).

    Args:
        scorer: the parser's label scorer.
        vectors: its vectors of the batch.
        heads: int64[B, N+1] chosen heads, -1 at ROOT and padding.
        root_label: id of ``root`` (:func:`root_label_id`); None when the vocabulary has no
            ``root`` (a tiny or non-UD treebank): then every arc simply takes its best label.
    """
    head_index = torch.from_numpy(heads).to(vectors.dep.device)
    rel_scores = scorer.at_words(vectors, head_index).detach().float().cpu().numpy()  # [W, R]
    return word_label_ids(rel_scores, heads, root_label=root_label)


def label_probabilities(
    scorer: LabelScorer, vectors: LabelVectors, heads: IntArray, rels: IntArray
) -> np.ndarray:
    """float64[B, N+1]: the softmax probability of each chosen label at its chosen arc."""
    head_index = torch.from_numpy(heads).to(vectors.dep.device)
    probs = scorer.at(vectors, head_index).double().softmax(-1)
    label_index = torch.from_numpy(rels).clamp(min=0).to(probs.device)
    return probs.gather(2, label_index.unsqueeze(-1)).squeeze(-1).cpu().numpy()


class GraphFamily(Family):
    """Graph parsers (:class:`~biaffine.parsers.BiaffineParser`): decoders of :mod:`decoding`."""

    name = "graph"

    @classmethod
    def narrow(cls, settings: DecoderSettings) -> GraphDecoding:
        """The decoder and the root rule."""
        return settings.graph_decoding()

    def refusal(self, request: Request, settings: DecoderSettings) -> str | None:
        """Searches are the transition family's; k-best and fixed heads need a tree decoder."""
        if settings.asks_search:  # named as asked: graph_weight=0.0 was named, never given
            asked = [f"search={settings.search}"] if settings.search != "greedy" else []
            asked += [f"graph_weight={settings.graph_weight}"] if settings.graph_weight else []
            return (
                f"{' with '.join(asked)} is for transition parsers; a graph parser decodes "
                "with decoder=mst|eisner|greedy"
            )
        exact = request.kbest is not None or request.fixed_heads is not None
        if exact and settings.algorithm not in ("mst", "eisner"):
            what = "kbest" if request.kbest is not None else "fixed heads"
            return (
                f"{what} needs decoder=mst or eisner, not {settings.algorithm} "
                "(greedy output need not be a tree)"
            )
        return super().refusal(request, settings)

    @classmethod
    def warm_up(cls, settings: Mapping[str, GraphDecoding]) -> None:
        """Load the decoders' compiled kernels now, on a two-word sentence.

        The first call of a numba kernel in a process loads it from numba's cache (about
        0.5 s); later calls cost microseconds. With a cold cache it starts the background
        compilation (:mod:`tiered`) and the kernels run as plain Python until it ends.
        """
        for decoder in settings.values():
            decode_heads(torch.zeros(1, 3, 3), torch.tensor([2]), decoder)

    def parse_batch(
        self,
        batch: Batch,
        sentences: Sequence[Sentence],
        request: Request,
        settings: Mapping[str, GraphDecoding],
        fixed_heads: Sequence[Sequence[int | None]] | None,
    ) -> BatchResults:
        """Score the batch once, then find trees with every setting (see :class:`Family`).

        The columns are chosen for each setting's trees, whose relations weigh the UPOS, and
        do not count in its seconds.
        """
        read = self.tags_read(request, sentences)
        scores = self.model(batch, tag=read)
        results = {}
        for name, decoder in settings.items():
            started = time.perf_counter()
            trees = self._trees(scores, batch, sentences, request, decoder, fixed_heads)
            seconds = time.perf_counter() - started
            columns = predicted_columns(
                scores.tag_scores, request.columns, self.vocabs, sentences, trees, read
            )
            found = [SentenceResult(tree, c) for tree, c in zip(trees, columns, strict=True)]
            results[name] = (found, seconds)
        return results

    def _trees(
        self,
        scores: GraphScores,
        batch: Batch,
        sentences: Sequence[Sentence],
        request: Request,
        decoder: GraphDecoding,
        fixed_heads: Sequence[Sequence[int | None]] | None,
    ) -> list[list[Tree]]:
        """The labelled trees of each row.

        With ``joint_labels``, the decoders maximize head and label log-probabilities together,
        labelling only the arcs the trees found may take (:func:`choices.decode_with_labels`,
        :func:`choices.find_with_labels`). Else they maximize head log-probabilities alone,
        and the chosen arcs are labelled afterwards.
        """
        lengths = [len(sentence) for sentence in sentences]
        if request.kbest is not None:
            return self._kbest(scores, sentences, request.kbest, decoder)
        if fixed_heads is not None:
            return self._constrained(scores, sentences, fixed_heads, decoder)
        if decoder.joint_labels:
            label = self._head_labels(scores.labels)
            lengths = batch.lengths.cpu().numpy()
            heads, rels = decode_with_labels(_numpy(scores.arc_scores), lengths, decoder, label)
        else:
            heads = decode_heads(scores.arc_scores, batch.lengths, decoder)
            rels = choose_labels(self.model.labels, scores.labels, heads, root_label=self._root)
        return self._labelled_batch(scores, heads, rels, batch.lengths, request, decoder)

    def _head_labels(
        self, vectors: LabelVectors
    ) -> Callable[[IntArray, IntArray, IntArray], tuple[np.ndarray, IntArray]]:
        """What :func:`choices.decode_with_labels` calls for the labels of the batch's arcs."""
        device = vectors.dep.device

        def head_labels(
            rows: IntArray, dependents: IntArray, heads: IntArray
        ) -> tuple[np.ndarray, IntArray]:
            index = (torch.from_numpy(a).to(device) for a in (rows, dependents, heads))
            label_scores = self.model.labels.at_heads(head_vectors(vectors, *index))
            found = label_scores.detach().to("cpu", torch.float64).numpy()  # exact from bf16
            return best_head_labels(found, heads, root_label=self._root)

        return head_labels

    def _labelled_batch(
        self,
        scores: GraphScores,
        heads: IntArray,
        rels: IntArray,
        batch_lengths: torch.Tensor,
        request: Request,
        decoder: GraphDecoding,
    ) -> list[list[Tree]]:
        """The decoded trees with their labels, and probabilities when asked."""
        lengths = batch_lengths.tolist()
        extras: dict[str, np.ndarray] = {}
        if request.probabilities:
            extras = _probabilities(self.model.labels, scores, heads, rels, batch_lengths, decoder)
        trees = []
        for row, n in enumerate(lengths):
            tree = labelled_tree(heads, rels, row, n, self.vocabs.rels)
            if extras:
                tree = Tree(
                    tree.heads,
                    tree.rels,
                    head_probs=word_slice(extras["head_probs"], row, n),
                    label_probs=word_slice(extras["label_probs"], row, n),
                    log_prob=float(extras["log_probs"][row]),
                )
            trees.append([tree])
        return trees

    def _kbest(
        self,
        scores: GraphScores,
        sentences: Sequence[Sentence],
        k: int,
        decoder: GraphDecoding,
    ) -> list[list[Tree]]:
        """The k best trees of each sentence, scored as the decoder scores them."""

        def search(row_scores: np.ndarray) -> decoding.KBest:
            options = {"algorithm": decoder.algorithm, "root_constraint": decoder.root_constraint}
            return decoding.kbest(row_scores, k, **options)

        found = []
        for row, sentence in enumerate(sentences):
            try:
                best, ids = self._row_search(
                    scores, row, len(sentence), decoder, search, lambda b: b.heads
                )
            except ValueError as error:  # each sentence is its own batch: "sentence 0" in all
                problem = str(error).removeprefix("sentence 0: ")
                raise ValueError(f"{sentence.source}:{sentence.line}: {problem}") from None
            found.append(
                [
                    self._labelled(scores, row, heads, ids, log_prob=float(score))
                    for heads, score in zip(best.heads, best.scores, strict=True)
                ]
            )
        return found

    def _constrained(
        self,
        scores: GraphScores,
        sentences: Sequence[Sentence],
        fixed_heads: Sequence[Sequence[int | None]],
        decoder: GraphDecoding,
    ) -> list[list[Tree]]:
        """The best tree of each sentence that keeps its fixed heads."""
        found = []
        for row, (sentence, given) in enumerate(zip(sentences, fixed_heads, strict=True)):
            n = len(sentence)
            if len(given) != n:
                raise ValueError(
                    f"{sentence.source}:{sentence.line}: {len(given)} fixed heads for {n} words"
                )
            for word, head in enumerate(given, start=1):
                if head == word:  # the decoders' message names their own argument
                    where = f"{sentence.source}:{sentence.line}: word {word}"
                    raise ValueError(f"{where}: fixed head {head} is the word itself")
            fixed = np.array([-1, *(-1 if h is None else h for h in given)], dtype=np.int64)

            def search(row_scores: np.ndarray, fixed: IntArray = fixed) -> IntArray:
                return decoding.constrained(
                    row_scores,
                    fixed_heads=fixed,
                    algorithm=decoder.algorithm,
                    root_constraint=decoder.root_constraint,
                )

            try:
                heads, ids = self._row_search(scores, row, n, decoder, search, lambda h: [h])
            except ValueError as error:
                raise ValueError(f"{sentence.source}:{sentence.line}: {error}") from None
            found.append([self._labelled(scores, row, heads, ids)])
        return found

    def _row_search(
        self,
        scores: GraphScores,
        row: int,
        n: int,
        decoder: GraphDecoding,
        search: Callable[[np.ndarray], Found],
        trees_of: Callable[[Found], Sequence[IntArray]],
    ) -> tuple[Found, IntArray | None]:
        """``search`` on one row of length n, and the labels of its arcs with ``joint_labels``.

        ``search`` maximizes the head log-probabilities, float64[n+1, n+1], plus the best
        labels' with ``joint_labels`` (:func:`choices.find_with_labels`, whose label ids,
        int64[n+1, n+1], come back with what it found); else None comes back with it.
        """
        arcs = scores.arc_scores[row, : n + 1, : n + 1].double().log_softmax(-1).cpu().numpy()
        if not decoder.joint_labels:
            return search(arcs), None
        label = self._head_labels(scores.labels)

        def row_labels(dependents: IntArray, heads: IntArray) -> tuple[np.ndarray, IntArray]:
            return label(np.full_like(dependents, row), dependents, heads)

        return find_with_labels(arcs, search, trees_of, row_labels)

    def _labelled(
        self,
        scores: GraphScores,
        row: int,
        heads: IntArray,
        ids: IntArray | None,
        *,
        log_prob: float | None = None,
    ) -> Tree:
        """The tree ``heads`` (int64[n+1]) of one row with its labels.

        From ``ids``, its arcs' labels int64[n+1, n+1] (:meth:`_row_search`), or chosen now
        where None.
        """
        n = heads.shape[0] - 1
        if ids is None:
            padded = np.full((1, scores.arc_scores.shape[1]), -1, dtype=np.int64)
            padded[0, : n + 1] = heads
            vectors = LabelVectors(*(v[row : row + 1] for v in scores.labels))
            rels = choose_labels(self.model.labels, vectors, padded, root_label=self._root)[0]
        else:
            rels = arc_label_ids(ids[None], heads[None])[0]
        names = self.vocabs.rels.itos
        return Tree(
            heads[1 : n + 1].tolist(), [names[r] for r in rels[1 : n + 1]], log_prob=log_prob
        )

    @property
    def _root(self) -> int | None:
        return root_label_id(self.vocabs.rels)


def _probabilities(
    scorer: LabelScorer,
    scores: GraphScores,
    heads: IntArray,
    rels: IntArray,
    lengths: torch.Tensor,
    decoder: GraphDecoding,
) -> dict[str, np.ndarray]:
    """Head marginals and label probabilities float64[B, N+1], tree log-probabilities [B]."""
    arc_scores = scores.arc_scores
    return {
        "head_probs": _arc_probabilities(arc_scores, heads, lengths, decoder),
        "label_probs": label_probabilities(scorer, scores.labels, heads, rels),
        "log_probs": _tree_log_probs(arc_scores, heads, lengths, decoder),
    }


def _arc_probabilities(
    arc_scores: torch.Tensor, heads: IntArray, lengths: torch.Tensor, decoder: GraphDecoding
) -> np.ndarray:
    """float64[B, N+1]: the marginal probability of each chosen arc (0 at ROOT and padding)."""
    root = decoder.root_constraint and decoder.algorithm != "greedy"
    projective = decoder.algorithm == "eisner"
    # On a CPU both are numba kernels that keep (n + 1)² floats a sentence; elsewhere autograd
    # through the inside pass would keep (n + 1)³ (4.7 GB for 1,000 words): Eisner's on the CPU.
    device = torch.device("cpu") if projective else arc_scores.device
    mu = marginals(
        arc_scores.double().to(device),
        lengths.to(device),
        root_constraint=root,
        projective=projective,
    )
    index = torch.from_numpy(heads).to(mu.device)
    chosen = mu.gather(2, index.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return chosen.masked_fill(index < 0, 0.0).cpu().numpy()


def _tree_log_probs(
    arc_scores: torch.Tensor, heads: IntArray, lengths: torch.Tensor, decoder: GraphDecoding
) -> np.ndarray:
    """float64[B]: log P(tree) of each decoded tree under the tree distribution of the decoder.

    A greedy output that is not a tree has probability 0 under it (``-inf``).
    """
    root = decoder.root_constraint and decoder.algorithm != "greedy"
    projective = decoder.algorithm == "eisner"
    sizes = lengths.cpu().numpy()
    trees = decoding.is_tree(heads, sizes, root_constraint=root, projective=projective)
    chains = heads.copy()  # a stand-in tree where greedy output is none, scored then dropped
    for b in np.flatnonzero(~trees):
        chains[b, 1 : sizes[b] + 1] = np.arange(sizes[b])
    index = torch.from_numpy(chains).to(arc_scores.device)
    options = {"root_constraint": root, "projective": projective}
    log_probs = tree_log_prob(arc_scores.double(), index, lengths, **options).cpu().numpy()
    return np.where(trees, log_probs, -np.inf)
