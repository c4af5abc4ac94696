"""What ``predict.py`` asks of each chunk of sentences, checked, then answered by one path.

One tree, probabilities, k-best, given heads, predicted columns.

The options become a :class:`~biaffine.inference.Request`; what is written per sentence is
:func:`biaffine.results.with_result`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from torch import nn

from biaffine.data.columns import CONLLU_NAMES, TAGGED
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, Request, family_of, predict
from biaffine.inference.request import ALL_COLUMNS
from biaffine.results import with_result

__all__ = [
    "ChunkParser",
    "PredictOptions",
    "check_model",
    "check_options",
    "chunk_parser",
    "parse_columns",
]

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
        columns: tagged columns to predict and write (``upos``, ``xpos``, ``feats``, ``lemma``).
        overwrite_columns: write them over the input's values (default: fill ``_`` cells only).
    """

    probabilities: bool = False
    kbest: int | None = None
    keep_given_heads: bool = False
    columns: tuple[str, ...] = ()
    overwrite_columns: bool = False

    def names(self) -> list[str]:
        """The tree options that are on, as ``predict.py`` spells them."""
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


def parse_columns(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``predict.py columns=[upos,xpos]`` (a list, one name, ``all``, or null) as column names.

    Hydra reads an unbracketed ``columns=upos,xpos`` as a sweep, so a list is written in
    brackets; a comma-separated string (quoted on the command line) is read too.

    Raises:
        ValueError: an unknown column (one line naming the known ones).
    """
    if value is None:
        return ()
    given = value.split(",") if isinstance(value, str) else [str(name) for name in value]
    names = [name.strip().lower() for name in given if name.strip()]
    if names == ["all"]:
        return ALL_COLUMNS
    unknown = [name for name in names if name not in TAGGED]
    if unknown:
        spelled = ",".join(given) if isinstance(value, str) else f"[{','.join(given)}]"
        known = ", ".join(CONLLU_NAMES[name].lower() for name in TAGGED)
        raise ValueError(f"columns={spelled}: unknown {', '.join(unknown)}; known: {known}, all")
    return tuple(dict.fromkeys(names))


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
        "overwrite_columns": options.overwrite_columns,
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


def _request(options: PredictOptions, chunk: list[Sentence]) -> Request:
    fixed = [s.given_heads() for s in chunk] if options.keep_given_heads else None
    return Request(
        options.probabilities, options.kbest, fixed, options.columns, options.overwrite_columns
    )


def check_model(
    model: nn.Module, vocabs: Vocabs, decoder: DecoderSettings, options: PredictOptions
) -> None:
    """Refuse, in one line, what the checkpoint's parser family or heads cannot answer.

    Raises:
        ValueError: e.g. k-best trees or given heads asked of a transition parser, or a
            column the model has no tagger for.
    """
    request = _request(options, []).for_model(model.tagged_columns)
    reason = family_of(model, vocabs).refusal(request, decoder)
    if reason is not None:
        raise ValueError(reason)


def chunk_parser(
    model: nn.Module,
    vocabs: Vocabs,
    decoder: DecoderSettings,
    options: PredictOptions,
    *,
    max_tokens: int,
    bf16: bool,
) -> ChunkParser:
    """The function that parses one chunk of sentences as ``options`` ask.

    Args:
        model: the loaded parser.
        vocabs: its vocabularies.
        decoder: how trees are found (k-best and given heads: mst or eisner).
        options: checked with :func:`check_options` and :func:`check_model`.
        max_tokens: words per batch.
        bf16: run the network in bfloat16.
    """

    def parse_chunk(chunk: list[Sentence]) -> list[list[Sentence]]:
        request = _request(options, chunk)
        how = {"max_tokens": max_tokens, "bf16": bf16}
        found = predict(model, vocabs, chunk, request, {"": decoder}, **how)[""].results
        return [with_result(s, r, request) for s, r in zip(chunk, found, strict=True)]

    return parse_chunk
