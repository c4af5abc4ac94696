"""Results written into CoNLL-U: trees, predicted columns, probabilities and k-best ranks.

What ``predict.py`` writes per input sentence, from the one result type of
:mod:`biaffine.inference`: the input's bytes are kept but for the columns a result fills, the
MISC items and comment lines named below.
"""

from __future__ import annotations

from dataclasses import dataclass

from biaffine.data.conllu import Sentence
from biaffine.inference.request import Request, SentenceResult, Tree

__all__ = [
    "DEPREL_PROB",
    "HEAD_PROB",
    "KBEST_RANK",
    "KBEST_SCORE",
    "PATH_LOG_PROB",
    "TREE_LOG_PROB",
    "ParsedTree",
    "parsed_trees",
    "with_result",
    "with_tree",
]

HEAD_PROB = "HeadProb"
"""MISC key: marginal probability of the word's chosen arc under the decoder's tree distribution."""
DEPREL_PROB = "DeprelProb"
"""MISC key: probability of the word's chosen label at its chosen arc."""
TREE_LOG_PROB = "tree_log_prob"
"""Comment key: log-probability of the sentence's tree under the same distribution."""
PATH_LOG_PROB = "transition_path_log_prob"
"""Comment key (transition parsers): log-probability of the transition path the search took."""
KBEST_RANK = "kbest_rank"
"""Comment key: 1 for the best tree of a sentence, 2 for the next, ..."""
KBEST_SCORE = "kbest_score"
"""Comment key: the tree's score, the sum of its words' head log-probabilities (and of their
labels' with ``joint_labels``, the default)."""

_BOUNDARIES = ("newdoc", "newpar")
"""Comments only the best of k trees keeps: the others are not new documents or paragraphs."""


def with_tree(
    sentence: Sentence, tree: Tree, columns: dict[str, list[str]], *, overwrite: bool = False
) -> Sentence:
    """``sentence`` with ``tree`` and the predicted ``columns`` written in, nothing else.

    A cell of a predicted column that the input fills (anything but ``_``) keeps the input's
    value unless ``overwrite``: what a user wrote is never replaced unasked.
    """
    if not overwrite:
        columns = {name: _kept(sentence, name, values) for name, values in columns.items()}
    return sentence.with_tree(tree.heads, tree.rels, columns)


def _kept(sentence: Sentence, column: str, predicted: list[str]) -> list[str]:
    given = sentence.column(column)
    return [value if value != "_" else guess for value, guess in zip(given, predicted, strict=True)]


def with_result(sentence: Sentence, result: SentenceResult, request: Request) -> list[Sentence]:
    """The sentences to write for one input sentence (the first one is the one scored).

    One sentence with the best tree, or k with their rank and score in comments (``kbest``);
    with ``probabilities``, head and label probabilities in MISC and the tree's (or the
    transition path's) log-probability in a comment.
    """
    if request.kbest is not None:
        return [
            with_tree(sentence, tree, result.columns, overwrite=request.overwrite).with_comments(
                [(KBEST_RANK, str(rank)), (KBEST_SCORE, _fixed(tree.log_prob))],
                drop=() if rank == 1 else _BOUNDARIES,
            )
            for rank, tree in enumerate(result.trees, 1)
        ]
    tree = result.trees[0]
    written = with_tree(sentence, tree, result.columns, overwrite=request.overwrite)
    if request.probabilities:
        written = _with_probabilities(written, tree)
    return [written]


def _with_probabilities(sentence: Sentence, tree: Tree) -> Sentence:
    """``sentence`` with its tree's probabilities in MISC and a comment.

    Graph parsers: head and label probabilities, and the tree's log-probability. Transition
    parsers, which define no distribution over trees: label probabilities, and the
    log-probability of the transition path their search took.
    """
    labels = [[(DEPREL_PROB, _fixed(p))] for p in tree.label_probs or []]
    if tree.head_probs is None:
        misc, comment = labels, (PATH_LOG_PROB, _fixed(tree.path_log_prob))
    else:
        heads = [[(HEAD_PROB, _fixed(p))] for p in tree.head_probs]
        misc = [h + rel for h, rel in zip(heads, labels, strict=True)]
        comment = (TREE_LOG_PROB, _fixed(tree.log_prob))
    return sentence.with_misc(misc).with_comments([comment])


def _fixed(value: float) -> str:
    """``value`` with 4 decimals, never ``-0.0000``.

    A log-probability of -0.00001 was written so, beside the ``0.0000`` of other trees.
    """
    text = f"{value:.4f}"
    return text[1:] if text == "-0.0000" else text


@dataclass(frozen=True, slots=True)
class ParsedTree:
    """One parsed sentence, with probabilities when they were asked for.

    Attributes:
        sentence: the input sentence with HEAD and DEPREL filled, and the predicted columns
            asked for, as ``predict.py`` writes it (:func:`with_result`: probabilities in MISC
            and a comment, a k-best tree's rank and score in comments; every other byte as
            given).
        head_probs: float[n], the marginal probability of the arc to each word's chosen head.
        label_probs: float[n], the probability of each word's chosen label at that arc.
        log_prob: log-probability of the whole unlabeled tree (graph parsers), or its score
            (k-best: the sum of its words' head log-probabilities, and of their labels' with
            ``joint_labels``).
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


def parsed_trees(sentence: Sentence, result: SentenceResult, request: Request) -> list[ParsedTree]:
    """The trees of a result as :class:`ParsedTree` objects, best first.

    Each one's ``sentence`` is what ``predict.py`` writes for it (:func:`with_result`): with
    ``probabilities``, the head and label probabilities in MISC and the log-probability in a
    comment; with ``kbest``, the rank and score in comments.
    """
    written = with_result(sentence, result, request)
    return [
        ParsedTree(
            one,
            head_probs=tree.head_probs,
            label_probs=tree.label_probs,
            log_prob=tree.log_prob,
            path_log_prob=tree.path_log_prob,
        )
        for one, tree in zip(written, result.trees, strict=True)
    ]
