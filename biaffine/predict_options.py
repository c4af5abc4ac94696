"""What ``predict.py`` writes per input sentence: one tree, with probabilities, k-best, given heads.

Each option is the Python API's code (:class:`biaffine.api.Parser`) applied to a chunk of
sentences; this module only checks the options and writes the results into CoNLL-U (MISC items
and comment lines, every other byte of the input kept).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from biaffine.api import ParsedTree, Parser
from biaffine.data.conllu import Sentence
from biaffine.inference import DecoderSettings, parse

__all__ = [
    "DEPREL_PROB",
    "HEAD_PROB",
    "KBEST_RANK",
    "KBEST_SCORE",
    "PATH_LOG_PROB",
    "TREE_LOG_PROB",
    "ChunkParser",
    "PredictOptions",
    "check_family",
    "check_options",
    "chunk_parser",
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
"""Comment key: the tree's score, the sum of its words' head log-probabilities."""

ChunkParser = Callable[[list[Sentence]], list[list[Sentence]]]
"""Sentences -> per sentence, the sentences to write (the first one is the tree scored by eval)."""


@dataclass(frozen=True, slots=True)
class PredictOptions:
    """What to write besides the best tree (all off: one tree per sentence, as always).

    Attributes:
        probabilities: head and label probabilities in MISC, the tree's log-probability in a
            comment (graph parsers).
        kbest: write the k best trees of each sentence, best first (None: one tree).
        keep_given_heads: keep the HEAD cells that the input fills, predict those that are ``_``.
    """

    probabilities: bool = False
    kbest: int | None = None
    keep_given_heads: bool = False

    def names(self) -> list[str]:
        """The options that are on, as ``predict.py`` spells them."""
        on = {
            "probabilities=true": self.probabilities,
            f"kbest={self.kbest}": self.kbest is not None,
            "keep_given_heads=true": self.keep_given_heads,
        }
        return [name for name, value in on.items() if value]


_WHY_NOT_BOTH = {
    ("probabilities", "kbest"): "the k best trees carry their own scores (# kbest_score)",
    ("probabilities", "keep_given_heads"): "the probabilities would ignore the given heads",
    ("kbest", "keep_given_heads"): "there is no constrained k-best",
}


def check_options(options: PredictOptions, decoder: DecoderSettings, input_format: str) -> None:
    """Refuse options that are malformed, meaningless together, or impossible with the decoder.

    Raises:
        ValueError: one line naming the setting and what to do instead.
    """
    k = options.kbest
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"kbest={k!r} must be an integer >= 1 (or null for one tree)")
    switches = {
        "probabilities": options.probabilities,
        "keep_given_heads": options.keep_given_heads,
    }
    for name, value in switches.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name}={value!r} must be true or false")
    names = options.names()
    if len(names) > 1:
        pair = tuple(name.split("=")[0] for name in names[:2])
        raise ValueError(f"{names[0]} and {names[1]} do not combine: {_WHY_NOT_BOTH[pair]}")
    if names and not options.probabilities and decoder.algorithm == "greedy":
        raise ValueError(
            f"{names[0]} needs decoder=mst, mst_multiroot or eisner, not greedy "
            "(greedy output need not be a tree)"
        )
    if options.keep_given_heads and input_format != "conllu":
        raise ValueError(
            f"keep_given_heads=true reads the HEAD column of CoNLL-U, which format={input_format} "
            "lacks"
        )


def check_family(parser: Parser, options: PredictOptions) -> None:
    """Refuse options that the checkpoint's parser family cannot serve (one line).

    Raises:
        ValueError: k-best trees or given heads asked of a transition parser.
    """
    family = getattr(parser.model, "family", None)
    names = options.names()
    if names and not options.probabilities and family != "graph":
        raise ValueError(
            f"{names[0]} needs a graph parser (arc scores); this checkpoint holds a {family} parser"
        )


def chunk_parser(
    parser: Parser, decoder: DecoderSettings, options: PredictOptions, max_tokens: int
) -> ChunkParser:
    """The function that parses one chunk of sentences as ``options`` ask.

    Args:
        parser: the loaded checkpoint.
        decoder: how trees are found (k-best and given heads: mst or eisner).
        options: checked with :func:`check_options` and :func:`check_family`.
        max_tokens: words per batch.
    """
    how = {
        "decoder": decoder.algorithm,
        "root_constraint": decoder.root_constraint,
        "max_tokens": max_tokens,
    }
    if options.probabilities:
        return lambda chunk: [[s] for s in _with_probabilities(parser, chunk, decoder, max_tokens)]
    if options.kbest is not None:
        k = options.kbest
        return lambda chunk: [_ranked(trees) for trees in parser.kbest(chunk, k, **how)]
    if options.keep_given_heads:

        def constrained(chunk: list[Sentence]) -> list[list[Sentence]]:
            given = [sentence.given_heads() for sentence in chunk]
            return [[tree.sentence] for tree in parser.parse_constrained(chunk, given, **how)]

        return constrained
    model, vocabs = parser.model, parser.vocabs
    plain = {"max_tokens": max_tokens, "bf16": parser.bf16}
    return lambda chunk: [[s] for s in parse(model, vocabs, chunk, decoder, **plain)]


def _with_probabilities(
    parser: Parser, chunk: list[Sentence], decoder: DecoderSettings, max_tokens: int
) -> list[Sentence]:
    """The chunk parsed, its probabilities in MISC and a comment (see the keys above).

    Graph parsers: head and label probabilities, and the tree's log-probability. Transition
    parsers, which define no distribution over trees: label probabilities, and the
    log-probability of the transition path their search took.
    """
    trees = parser.parse(
        chunk,
        decoder=decoder.algorithm,
        root_constraint=decoder.root_constraint,
        search=decoder.search,
        beam_size=decoder.beam_size,
        graph_weight=decoder.graph_weight,
        probabilities=True,
        max_tokens=max_tokens,
    )
    written = []
    for tree in trees:
        labels = [[(DEPREL_PROB, f"{p:.4f}")] for p in tree.label_probs or []]
        if tree.head_probs is None:
            misc, comment = labels, (PATH_LOG_PROB, f"{tree.path_log_prob:.4f}")
        else:
            heads = [[(HEAD_PROB, f"{p:.4f}")] for p in tree.head_probs]
            misc = [h + rel for h, rel in zip(heads, labels, strict=True)]
            comment = (TREE_LOG_PROB, f"{tree.log_prob:.4f}")
        written.append(tree.sentence.with_misc(misc).with_comments([comment]))
    return written


def _ranked(trees: list[ParsedTree]) -> list[Sentence]:
    """The k-best trees of one sentence as sentences with their rank and score in comments.

    Only the best keeps ``# newdoc`` and ``# newpar``: the others are not new documents or
    paragraphs.
    """
    return [
        tree.sentence.with_comments(
            [(KBEST_RANK, str(rank)), (KBEST_SCORE, f"{tree.log_prob:.4f}")],
            drop=() if rank == 1 else _BOUNDARIES,
        )
        for rank, tree in enumerate(trees, 1)
    ]


_BOUNDARIES = ("newdoc", "newpar")
