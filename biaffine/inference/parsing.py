"""The one prediction path: batching, the family of the model, results back in input order.

:func:`predict` answers a :class:`~biaffine.inference.request.Request` for any parser with one
:class:`~biaffine.inference.request.SentenceResult` per sentence, for several decoder settings
from one network pass; :func:`parse` is its plain case (trees written into the sentences).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

import tiered
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.data.encoding import PARSING_COLUMNS
from biaffine.data.vocab import Vocabs
from biaffine.inference.base import FAMILIES, Family
from biaffine.inference.request import Refused, Request, SentenceResult, check_wanted
from biaffine.inference.settings import DEFAULT_DECODER, DecoderSettings
from biaffine.runtime import check_bf16

__all__ = [
    "Parsed",
    "Predicted",
    "family_of",
    "parse",
    "parse_with_decoders",
    "predict",
    "warm_up",
]

# Every module of the package is imported, so a family registers by being there.
for _module in pkgutil.iter_modules(importlib.import_module("biaffine.inference").__path__):
    importlib.import_module(f"biaffine.inference.{_module.name}")


@dataclass(frozen=True, slots=True)
class Predicted:
    """One setting's results, in input order, and the seconds spent finding its trees."""

    results: list[SentenceResult]
    decode_seconds: float


def family_of(model: nn.Module, vocabs: Vocabs) -> Family:
    """The inference family that finds ``model``'s trees, bound to it.

    Raises:
        ValueError: the model names no known family.
    """
    return _family_class(model)(model, vocabs)


def warm_up(model: nn.Module, settings: Mapping[str, DecoderSettings]) -> None:
    """Load the compiled kernels ``model``'s family will call, so no timed call pays for it.

    Nothing while small calls run interpreted (:func:`tiered.interpreting`): a short input then
    never waits for the machine code, and a long one loads it at its first large call.
    """
    family = _family_class(model)
    _load_kernels(family, {name: family.narrow(s) for name, s in settings.items()})


def _load_kernels(family: Family | type[Family], narrowed: Mapping[str, Any]) -> None:
    """``family.warm_up(narrowed)``, unless small calls still run interpreted (:mod:`tiered`)."""
    if not tiered.interpreting():
        family.warm_up(narrowed)


def _family_class(model: nn.Module) -> type[Family]:
    name = getattr(type(model), "family", None)
    if name not in FAMILIES:
        raise ValueError(f"no inference for parser family {name!r} ({type(model).__name__})")
    return FAMILIES[name]


def predict(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    request: Request = Request(),  # noqa: B008  (frozen)
    settings: Mapping[str, DecoderSettings] | None = None,
    *,
    max_tokens: int = 5000,
    bf16: bool = False,
    abandoned: Callable[[], bool] | None = None,
) -> dict[str, Predicted]:
    """Answer ``request`` for every sentence with every decoder setting.

    Args:
        model: a trained parser (switched to eval mode here).
        vocabs: the vocabularies it was trained with.
        sentences: input sentences; their HEAD and DEPREL are never read (fixed heads come
            from ``request``).
        request: what to compute besides the best tree.
        settings: name -> decoder settings (default: ``{"": DEFAULT_DECODER}``).
        max_tokens: words per batch (memory vs speed).
        bf16: run the network in bfloat16 (``torch.autocast``): about 3x faster on CPUs with
            native bf16 (AVX512-BF16, AMX); decoders and probabilities stay float64.
        abandoned: asked before each batch whether the answer is still wanted (None: it is).

    Returns:
        name -> :class:`Predicted`, results in input order.

    Raises:
        Refused: the model's family cannot answer the request with a setting (one line).
        Abandoned: ``abandoned`` said so before a batch.
        ValueError: fixed heads that do not fit the sentences or admit no tree, NaN scores.
    """
    settings = settings if settings is not None else {"": DEFAULT_DECODER}
    family = family_of(model, vocabs)
    request = request.for_model(model.tagged_columns)
    for setting in settings.values():
        reason = family.refusal(request, setting)
        if reason is not None:
            raise Refused(reason)
    if request.fixed_heads is not None and len(request.fixed_heads) != len(sentences):
        raise ValueError(
            f"{len(request.fixed_heads)} fixed head lists for {len(sentences)} sentences"
        )
    device = next(model.parameters()).device
    if bf16:
        check_bf16(device)
    narrowed = {name: family.narrow(setting) for name, setting in settings.items()}
    _load_kernels(family, narrowed)  # keeps kernel loading out of the decoding times
    model.eval()
    found: dict[str, list[SentenceResult | None]] = {n: [None] * len(sentences) for n in settings}
    seconds = dict.fromkeys(settings, 0.0)
    with _no_grad(request), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        for batch in batches_by_tokens(
            encode(sentences, vocabs, columns=PARSING_COLUMNS), max_tokens, shuffle=False
        ):
            check_wanted(abandoned)
            rows = batch.indices.tolist()
            fixed = request.fixed_heads
            batch_fixed = None if fixed is None else [fixed[i] for i in rows]
            answers = family.parse_batch(
                batch.to(device), [sentences[i] for i in rows], request, narrowed, batch_fixed
            )
            for name, (results, spent) in answers.items():
                seconds[name] += spent
                for index, result in zip(rows, results, strict=True):
                    found[name][index] = result
    # Every index is filled exactly once per setting.
    return {name: Predicted(found[name], seconds[name]) for name in settings}  # type: ignore[arg-type]


def _no_grad(request: Request) -> AbstractContextManager:
    """``inference_mode``, or ``no_grad`` for probabilities: marginals are a gradient of log Z."""
    return torch.no_grad() if request.probabilities else torch.inference_mode()


@dataclass(frozen=True, slots=True)
class Parsed:
    """Sentences parsed with one setting, and the seconds spent in its decoder alone."""

    sentences: list[Sentence]
    decode_seconds: float


def parse_with_decoders(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    decoders: Mapping[str, DecoderSettings],
    *,
    max_tokens: int = 5000,
    bf16: bool = False,
) -> dict[str, Parsed]:
    """Run the network once per batch and find trees with several settings (the plain request).

    Returns:
        name -> :class:`Parsed`, sentences in input order with HEAD and DEPREL written, and the
        time spent in that setting's decoder alone (the network and label scoring excluded).
    """
    options = {"max_tokens": max_tokens, "bf16": bf16}
    found = predict(model, vocabs, sentences, Request(), decoders, **options)
    return {
        name: Parsed(_with_trees(sentences, predicted.results), predicted.decode_seconds)
        for name, predicted in found.items()
    }


def _with_trees(sentences: Sequence[Sentence], results: Sequence[SentenceResult]) -> list[Sentence]:
    trees = (result.trees[0] for result in results)
    return [s.with_tree(t.heads, t.rels) for s, t in zip(sentences, trees, strict=True)]


def parse(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    decoder: DecoderSettings = DEFAULT_DECODER,
    *,
    max_tokens: int = 5000,
    bf16: bool = False,
) -> list[Sentence]:
    """Parse sentences: every word gets a predicted HEAD and DEPREL (the plain request).

    Returns:
        New sentences in input order (``Sentence.with_tree``); all other columns unchanged.
    """
    options = {"max_tokens": max_tokens, "bf16": bf16}
    return parse_with_decoders(model, vocabs, sentences, {"": decoder}, **options)[""].sentences
