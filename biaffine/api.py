"""Parsing from Python: load a checkpoint once, parse words, CoNLL-U text or sentences.

Example::

    from biaffine.api import Parser

    parser = Parser.load("outputs/train/ud_english_ewt/.../best.pt", threads=2)
    [tree] = parser.parse([["The", "cat", "sat", "."]], probabilities=True)
    tree.heads          # [2, 3, 0, 3]: head of word i at index i - 1, 0 = ROOT
    tree.deprels        # ['det', 'nsubj', 'root', 'punct']
    tree.head_probs     # marginal probability of each chosen arc under the single-root trees
    tree.log_prob       # log-probability of the whole tree under the same distribution
    print(parser.to_conllu([tree]), end="")

Probabilities (graph parsers): the arc scores define a distribution over single-rooted trees
(``P(tree) ∝ exp(sum of its arc scores)``, the tree-CRF of :mod:`biaffine.nn.treecrf`); a head
probability is the marginal of that arc (Matrix-Tree theorem, Koo et al. 2007), the tree's
log-probability its normalized score, and a label probability the softmax of the label scores
at the chosen arc (labels follow UD's rule: ``root`` on the ROOT arc and nowhere else; the
probability reported is the model's softmax probability of the label chosen). For a model
trained with the local loss these are the globally normalized reading of its scores, not
calibrated confidences. The determinant loses float64 precision when the words' best heads form
a cycle whose cheapest break costs more than about 35 nats; such a sentence gets NaN
probabilities rather than wrong ones.

Transition parsers have no distribution over trees: ``probabilities=True`` gives each label's
probability and ``path_log_prob``, the log of the product of the transition probabilities along
the path the search took (not the tree's probability: other paths may build the same tree).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

import decoding
from biaffine import checkpoint
from biaffine.data.batching import Batch, batches_by_tokens, encode
from biaffine.data.conllu import Sentence, read_conllu, write_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.inference.graph import choose_labels, decode_heads, root_label_id
from biaffine.inference.transition import deprojectivize_batch
from biaffine.inference.transition import search as transition_search
from biaffine.nn.treecrf import marginals, tree_log_prob
from biaffine.parsers.biaffine import ArcRelScores
from biaffine.runtime import check_bf16, select_device, set_threads

__all__ = ["ParsedTree", "Parser"]

Inputs = Sequence[Sequence[str]] | Sequence[Sentence] | str


@dataclass(frozen=True, slots=True)
class ParsedTree:
    """One parsed sentence, with probabilities when they were asked for.

    Attributes:
        sentence: the input sentence with HEAD and DEPREL filled (every other byte as given).
        head_probs: float[n], the marginal probability of the arc to each word's chosen head.
        label_probs: float[n], the probability of each word's chosen label at that arc.
        log_prob: log-probability of the whole unlabeled tree (graph parsers).
        path_log_prob: transition parsers: log of the product of the probabilities of the
            transitions the search took (each a softmax over the legal ones).
    """

    sentence: Sentence
    head_probs: list[float] | None = None
    label_probs: list[float] | None = None
    log_prob: float | None = None
    path_log_prob: float | None = None

    @property
    def heads(self) -> list[int]:
        """int[n]: the head of word i at index i - 1 (0 = ROOT)."""
        return list(self.sentence.heads or [])

    @property
    def deprels(self) -> list[str]:
        """str[n]: the label of each word's arc."""
        return list(self.sentence.deprels)


class Parser:
    """A trained parser with its vocabularies, ready to parse (load once, parse many times)."""

    def __init__(
        self, model: nn.Module, vocabs: Vocabs, *, device: torch.device, bf16: bool = False
    ) -> None:
        """Wrap a model (in eval mode) and the vocabularies it was trained with.

        Args:
            model: a trained parser.
            vocabs: its vocabularies.
            device: where it lives.
            bf16: run the network in bfloat16 (``torch.autocast``) in every method.

        Raises:
            ValueError: ``bf16`` on a CPU without native bfloat16.
        """
        if bf16:
            check_bf16(device)
        self.model = model.eval()
        self.vocabs = vocabs
        self.device = device
        self.bf16 = bf16
        self._root_label = root_label_id(vocabs.rels)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        device: str = "cpu",
        threads: int | None = None,
        bf16: bool = False,
    ) -> Parser:
        """Load a checkpoint written by training (``best.pt`` or ``last.pt``).

        Args:
            path: the checkpoint file.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
            threads: torch CPU threads (None = torch's default).
            bf16: run the network in bfloat16 (``torch.autocast``; decoders and probabilities
                stay float64): on CPUs with native bfloat16 (AVX512-BF16, AMX) and GPUs.

        Raises:
            biaffine.checkpoint.CheckpointError: the file is not a readable checkpoint.
            ValueError: ``bf16`` on a CPU without native bfloat16.
        """
        set_threads(threads)
        where = select_device(device)
        saved = checkpoint.load(path, map_location=where)
        return cls(checkpoint.build_model(saved).to(where), saved.vocabs, device=where, bf16=bf16)

    def parse(
        self,
        inputs: Inputs,
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        search: str = "greedy",
        beam_size: int = 1,
        graph_weight: float = 0.0,
        probabilities: bool = False,
        max_tokens: int = 5000,
    ) -> list[ParsedTree]:
        """Parse pre-tokenized sentences.

        Args:
            inputs: lists of word forms, :class:`Sentence` objects, or CoNLL-U text (one
                string; every byte but HEAD and DEPREL comes back as given).
            decoder: a name in :data:`decoding.DECODERS` (``mst``, ``eisner``, ``greedy``).
            root_constraint: exactly one word on ROOT (``mst`` and ``eisner``).
            search: transition parsers: ``greedy`` or ``beam``.
            beam_size: transition parsers: items per sentence with ``search="beam"``.
            graph_weight: combined models (transition parsers with a graph head): weight of
                the graph head's arc log-probabilities in the search score.
            probabilities: also compute head, label and tree probabilities (graph parsers), or
                label and transition-path probabilities (transition parsers).
            max_tokens: words per batch.

        Returns:
            One :class:`ParsedTree` per input sentence, in input order.

        Raises:
            ValueError: an unknown decoder or search, a beam asked of a graph parser, an empty
                sentence, or probabilities with ``search="graph"``.
            biaffine.data.conllu.ConlluError: malformed CoNLL-U text or words.
        """
        settings = DecoderSettings(decoder, root_constraint, search, beam_size, graph_weight)
        sentences = list(_sentences(inputs))
        if not probabilities:
            options = {"max_tokens": max_tokens, "bf16": self.bf16}
            parsed = parse(self.model, self.vocabs, sentences, settings, **options)
            return [ParsedTree(sentence) for sentence in parsed]
        with self._precision():
            if getattr(self.model, "family", None) == "transition":
                return self._parse_transitions_with_probabilities(sentences, settings, max_tokens)
            self._require_graph("probabilities=True")
            return self._parse_with_probabilities(sentences, settings, max_tokens)

    def to_conllu(self, trees: Sequence[ParsedTree]) -> str:
        """The parsed sentences as CoNLL-U text."""
        out = io.StringIO()
        write_conllu(out, [tree.sentence for tree in trees])
        return out.getvalue()

    def kbest(
        self,
        inputs: Inputs,
        k: int,
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        max_tokens: int = 5000,
    ) -> list[list[ParsedTree]]:
        """The k highest-scoring trees of each sentence, best first (graph parsers).

        Args:
            inputs: as :meth:`parse`.
            k: trees per sentence (fewer when a sentence has fewer trees).
            decoder: ``mst`` (non-projective trees, :func:`decoding.kbest`) or ``eisner``.
            root_constraint: exactly one word on ROOT in every tree.
            max_tokens: words per batch.

        Returns:
            Per sentence, up to k :class:`ParsedTree` whose ``log_prob`` is the tree's score
            (the sum of its arcs' head log-probabilities, as the decoders maximize).

        Raises:
            ValueError: k < 1, a decoder without k-best, or a parser that is not a graph parser.
        """
        if k < 1 or decoder not in ("mst", "eisner"):
            raise ValueError(f"k={k} must be >= 1 and decoder={decoder!r} one of mst, eisner")
        self._require_graph("kbest")
        sentences = list(_sentences(inputs))
        results: list[list[ParsedTree]] = [[] for _ in sentences]
        with self._precision():
            for batch, scores, index in self._scored(sentences, max_tokens):
                n = int(batch.lengths[index.row])
                matrix = scores.arc_scores[index.row, : n + 1, : n + 1].double().log_softmax(-1)
                best = decoding.kbest(
                    matrix.cpu().numpy(), k, algorithm=decoder, root_constraint=root_constraint
                )
                for heads, score in zip(best.heads, best.scores, strict=True):
                    tree = self._labelled(sentences[index.sentence], scores, index.row, heads)
                    results[index.sentence].append(ParsedTree(tree, log_prob=float(score)))
        return results

    def parse_constrained(
        self,
        inputs: Inputs,
        fixed_heads: Sequence[Sequence[int | None]],
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        max_tokens: int = 5000,
    ) -> list[ParsedTree]:
        """The best trees that keep some heads fixed (partially annotated input), graph parsers.

        Args:
            inputs: as :meth:`parse`.
            fixed_heads: per sentence, one entry per word: its fixed head (0 = ROOT), or None
                where the parser chooses.
            decoder: ``mst`` or ``eisner`` (exact under the constraints).
            root_constraint: exactly one word on ROOT.
            max_tokens: words per batch.

        Raises:
            ValueError: lengths that do not match, or constraints that admit no tree (the message
                names the sentence as ``FILE:LINE``, or ``<input>:k`` for the k-th list of words,
                and why, e.g. fixed heads that form a cycle).
        """
        self._require_graph("constrained parsing")
        sentences = list(_sentences(inputs))
        if len(fixed_heads) != len(sentences):
            raise ValueError(f"{len(fixed_heads)} head lists for {len(sentences)} sentences")
        with self._precision():
            return self._constrained(sentences, fixed_heads, decoder, root_constraint, max_tokens)

    def _constrained(
        self,
        sentences: list[Sentence],
        fixed_heads: Sequence[Sequence[int | None]],
        decoder: str,
        root_constraint: bool,
        max_tokens: int,
    ) -> list[ParsedTree]:
        results: list[ParsedTree | None] = [None] * len(sentences)
        for batch, scores, index in self._scored(sentences, max_tokens):
            n = int(batch.lengths[index.row])
            given = fixed_heads[index.sentence]
            if len(given) != n:
                raise ValueError(f"sentence {index.sentence}: {len(given)} heads for {n} words")
            fixed = np.array([-1, *(-1 if h is None else h for h in given)], dtype=np.int64)
            matrix = scores.arc_scores[index.row, : n + 1, : n + 1].double().log_softmax(-1)
            try:
                options = {"algorithm": decoder, "root_constraint": root_constraint}
                heads = decoding.constrained(matrix.cpu().numpy(), fixed_heads=fixed, **options)
            except ValueError as error:
                sentence = sentences[index.sentence]  # words given as lists: "<input>:k+1"
                raise ValueError(f"{sentence.source}:{sentence.line}: {error}") from None
            tree = self._labelled(sentences[index.sentence], scores, index.row, heads)
            results[index.sentence] = ParsedTree(tree)
        return results  # type: ignore[return-value]  (every index filled once)

    def _precision(self) -> torch.autocast:
        """The network's precision for a whole call: bfloat16 autocast if ``bf16``, else off.

        One context around everything a method runs, so the label scorer, called after the
        arc scorer, sees inputs of the dtype it expects. Float64 work (decoders, marginals)
        is left alone by autocast.
        """
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)

    def _require_graph(self, what: str) -> None:
        if getattr(self.model, "family", None) != "graph":
            raise ValueError(f"{what} needs a graph parser (arc scores)")

    def _scored(
        self, sentences: list[Sentence], max_tokens: int
    ) -> Iterator[tuple[Batch, ArcRelScores, _Row]]:
        """Every sentence once: its batch, the batch's scores and where it sits in the batch."""
        batches = batches_by_tokens(encode(sentences, self.vocabs), max_tokens, shuffle=False)
        # no_grad, not inference_mode: head marginals are the gradient of log Z.
        with torch.no_grad():
            for batch in batches:
                batch = batch.to(self.device)
                scores = self.model(batch, tag=False)
                for row, index in enumerate(batch.indices.tolist()):
                    yield batch, scores, _Row(row, index)

    def _labelled(
        self, sentence: Sentence, scores: ArcRelScores, row: int, heads: np.ndarray
    ) -> Sentence:
        """``sentence`` with the tree ``heads`` (int64[n+1]) and its best labels."""
        one = ArcRelScores(
            scores.arc_scores[row : row + 1],
            scores.rel_dep[row : row + 1],
            scores.rel_head[row : row + 1],
        )
        width = one.arc_scores.shape[1]
        padded = np.full((1, width), -1, dtype=np.int64)
        padded[0, : heads.shape[0]] = heads
        rels = choose_labels(self.model, one, padded, root_label=self._root_label)[0]
        n = len(sentence)
        labels = self.vocabs.rels.itos
        return sentence.with_tree(heads[1 : n + 1].tolist(), [labels[r] for r in rels[1 : n + 1]])

    def _parse_with_probabilities(
        self, sentences: list[Sentence], settings: DecoderSettings, max_tokens: int
    ) -> list[ParsedTree]:
        trees: list[ParsedTree | None] = [None] * len(sentences)
        labels = self.vocabs.rels.itos
        last = None
        for batch, scores, index in self._scored(sentences, max_tokens):
            if batch is not last:  # the whole batch at once, at its first sentence
                last = batch
                heads = decode_heads(scores.arc_scores, batch.lengths, settings)
                rels = choose_labels(self.model, scores, heads, root_label=self._root_label)
                probs = _arc_probabilities(scores.arc_scores, heads, batch.lengths, settings)
                label_probs = _label_probabilities(self.model, scores, heads, rels)
                log_probs = _tree_log_probs(scores.arc_scores, heads, batch.lengths, settings)
            row, n = index.row, len(sentences[index.sentence])
            tree = sentences[index.sentence].with_tree(
                heads[row, 1 : n + 1].tolist(), [labels[r] for r in rels[row, 1 : n + 1]]
            )
            trees[index.sentence] = ParsedTree(
                tree,
                head_probs=probs[row, 1 : n + 1].tolist(),
                label_probs=label_probs[row, 1 : n + 1].tolist(),
                log_prob=float(log_probs[row]),
            )
        return trees  # type: ignore[return-value]  (every index filled once)

    def _parse_transitions_with_probabilities(
        self, sentences: list[Sentence], settings: DecoderSettings, max_tokens: int
    ) -> list[ParsedTree]:
        if settings.search == "graph":
            raise ValueError("probabilities=True with search=graph: use a transition search")
        model, labels = self.model, self.vocabs.rels.itos
        trees: list[ParsedTree | None] = [None] * len(sentences)
        batches = batches_by_tokens(encode(sentences, self.vocabs), max_tokens, shuffle=False)
        with torch.inference_mode():
            for batch in batches:
                batch = batch.to(self.device)
                encoded = model.encode(batch, tag=False)
                found = transition_search(model, encoded, batch.lengths.cpu().numpy(), settings)
                heads = found.heads
                rels = choose_labels(model, encoded, heads, root_label=self._root_label)
                # The probability of the label chosen, pseudo-projective or not.
                label_probs = _label_probabilities(model, encoded, heads, rels)
                if model.system.projective:
                    deprojectivize_batch(heads, rels, model.rel_names)
                for row, index in enumerate(batch.indices.tolist()):
                    n = len(sentences[index])
                    tree = sentences[index].with_tree(
                        heads[row, 1 : n + 1].tolist(), [labels[r] for r in rels[row, 1 : n + 1]]
                    )
                    trees[index] = ParsedTree(
                        tree,
                        label_probs=label_probs[row, 1 : n + 1].tolist(),
                        path_log_prob=float(found.path_log_probs[row]),
                    )
        return trees  # type: ignore[return-value]  (every index filled once)


class _Row(NamedTuple):
    """Where a sentence sits: its row in the batch, its index in the input."""

    row: int
    sentence: int


def _sentences(inputs: Inputs) -> Iterator[Sentence]:
    if isinstance(inputs, str):
        yield from read_conllu(io.StringIO(inputs))
        return
    for k, item in enumerate(inputs):
        if isinstance(item, Sentence):
            yield item
        elif isinstance(item, str):
            raise ValueError(f"input {k} is a string: pass a list of words per sentence")
        else:
            yield Sentence.from_forms(list(item), source="<input>", line=k + 1)


def _arc_probabilities(
    arc_scores: torch.Tensor, heads: np.ndarray, lengths: torch.Tensor, settings: DecoderSettings
) -> np.ndarray:
    """float64[B, N+1]: the marginal probability of each chosen arc (0 at ROOT and padding)."""
    root = settings.root_constraint and settings.algorithm != "greedy"
    projective = settings.algorithm == "eisner"
    mu = marginals(arc_scores.double(), lengths, root_constraint=root, projective=projective)
    index = torch.from_numpy(heads).to(mu.device)
    chosen = mu.gather(2, index.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return chosen.masked_fill(index < 0, 0.0).cpu().numpy()


def _label_probabilities(
    model: nn.Module, scores, heads: np.ndarray, rels: np.ndarray
) -> np.ndarray:
    """float64[B, N+1]: the softmax probability of each chosen label at its chosen arc."""
    head_index = torch.from_numpy(heads).to(scores.rel_dep.device)
    probs = model.rel_scores_at(scores, head_index).double().softmax(-1)
    label_index = torch.from_numpy(rels).clamp(min=0).to(probs.device)
    return probs.gather(2, label_index.unsqueeze(-1)).squeeze(-1).cpu().numpy()


def _tree_log_probs(
    arc_scores: torch.Tensor, heads: np.ndarray, lengths: torch.Tensor, settings: DecoderSettings
) -> np.ndarray:
    """float64[B]: log P(tree) of each decoded tree under the tree distribution of the decoder.

    A greedy output that is not a tree has probability 0 under it (``-inf``).
    """
    root = settings.root_constraint and settings.algorithm != "greedy"
    projective = settings.algorithm == "eisner"
    sizes = lengths.cpu().numpy()
    trees = decoding.is_tree(heads, sizes, root_constraint=root, projective=projective)
    chains = heads.copy()  # a stand-in tree where greedy output is none, scored then dropped
    for b in np.flatnonzero(~trees):
        chains[b, 1 : sizes[b] + 1] = np.arange(sizes[b])
    index = torch.from_numpy(chains).to(arc_scores.device)
    options = {"root_constraint": root, "projective": projective}
    log_probs = tree_log_prob(arc_scores.double(), index, lengths, **options).cpu().numpy()
    return np.where(trees, log_probs, -np.inf)
