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
at the chosen arc. For a model trained with the local loss these are the globally normalized
reading of its scores, not calibrated confidences. The determinant loses float64 precision when
the words' best heads form a cycle whose cheapest break costs more than about 35 nats; such a
sentence gets NaN probabilities rather than wrong ones.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

import decoding
from biaffine import checkpoint
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence, read_conllu, write_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.inference.graph import choose_labels, decode_heads
from biaffine.nn.treecrf import marginals, tree_log_prob
from biaffine.runtime import select_device, set_threads

__all__ = ["ParsedTree", "Parser"]

Inputs = Sequence[Sequence[str]] | Sequence[Sentence] | str


@dataclass(frozen=True, slots=True)
class ParsedTree:
    """One parsed sentence, with probabilities when they were asked for.

    Attributes:
        sentence: the input sentence with HEAD and DEPREL filled (every other byte as given).
        head_probs: float[n], the marginal probability of the arc to each word's chosen head.
        label_probs: float[n], the probability of each word's chosen label at that arc.
        log_prob: log-probability of the whole unlabeled tree.
    """

    sentence: Sentence
    head_probs: list[float] | None = None
    label_probs: list[float] | None = None
    log_prob: float | None = None

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

    def __init__(self, model: nn.Module, vocabs: Vocabs, *, device: torch.device) -> None:
        """Wrap a model (in eval mode) and the vocabularies it was trained with."""
        self.model = model.eval()
        self.vocabs = vocabs
        self.device = device

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, device: str = "cpu", threads: int | None = None
    ) -> Parser:
        """Load a checkpoint written by training (``best.pt`` or ``last.pt``).

        Args:
            path: the checkpoint file.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
            threads: torch CPU threads (None = torch's default).

        Raises:
            biaffine.checkpoint.CheckpointError: the file is not a readable checkpoint.
        """
        set_threads(threads)
        where = select_device(device)
        saved = checkpoint.load(path, map_location=where)
        return cls(checkpoint.build_model(saved).to(where), saved.vocabs, device=where)

    def parse(
        self,
        inputs: Inputs,
        *,
        decoder: str = "mst",
        root_constraint: bool = True,
        probabilities: bool = False,
        max_tokens: int = 5000,
    ) -> list[ParsedTree]:
        """Parse pre-tokenized sentences.

        Args:
            inputs: lists of word forms, :class:`Sentence` objects, or CoNLL-U text (one
                string; every byte but HEAD and DEPREL comes back as given).
            decoder: a name in :data:`decoding.DECODERS` (``mst``, ``eisner``, ``greedy``).
            root_constraint: exactly one word on ROOT (``mst`` and ``eisner``).
            probabilities: also compute head, label and tree probabilities (graph parsers).
            max_tokens: words per batch.

        Returns:
            One :class:`ParsedTree` per input sentence, in input order.

        Raises:
            ValueError: an unknown decoder, an empty sentence, or probabilities asked of a parser
                that is not a graph parser.
            biaffine.data.conllu.ConlluError: malformed CoNLL-U text or words.
        """
        settings = DecoderSettings(decoder, root_constraint)
        sentences = list(_sentences(inputs))
        if not probabilities:
            parsed = parse(self.model, self.vocabs, sentences, settings, max_tokens=max_tokens)
            return [ParsedTree(sentence) for sentence in parsed]
        if getattr(self.model, "family", None) != "graph":
            raise ValueError("probabilities=True needs a graph parser (head marginals)")
        return self._parse_with_probabilities(sentences, settings, max_tokens)

    def to_conllu(self, trees: Sequence[ParsedTree]) -> str:
        """The parsed sentences as CoNLL-U text."""
        out = io.StringIO()
        write_conllu(out, [tree.sentence for tree in trees])
        return out.getvalue()

    def _parse_with_probabilities(
        self, sentences: list[Sentence], settings: DecoderSettings, max_tokens: int
    ) -> list[ParsedTree]:
        trees: list[ParsedTree | None] = [None] * len(sentences)
        labels = self.vocabs.rels.itos
        # no_grad, not inference_mode: the head marginals are the gradient of log Z.
        with torch.no_grad():
            batches = batches_by_tokens(encode(sentences, self.vocabs), max_tokens, shuffle=False)
            for batch in batches:
                batch = batch.to(self.device)
                scores = self.model(batch, tag=False)
                heads = decode_heads(scores.arc_scores, batch.lengths, settings)
                rels = choose_labels(self.model, scores, heads)
                probs = _arc_probabilities(scores.arc_scores, heads, batch.lengths, settings)
                label_probs = _label_probabilities(self.model, scores, heads, rels)
                log_probs = _tree_log_probs(scores.arc_scores, heads, batch.lengths, settings)
                for row, index in enumerate(batch.indices.tolist()):
                    n = int(batch.lengths[row])
                    tree = sentences[index].with_tree(
                        heads[row, 1 : n + 1].tolist(), [labels[r] for r in rels[row, 1 : n + 1]]
                    )
                    trees[index] = ParsedTree(
                        tree,
                        head_probs=probs[row, 1 : n + 1].tolist(),
                        label_probs=label_probs[row, 1 : n + 1].tolist(),
                        log_prob=float(log_probs[row]),
                    )
        return trees  # type: ignore[return-value]  (every index filled once)


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
