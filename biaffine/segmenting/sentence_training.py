"""Training a sentence model (:mod:`.sentences`) on top of a trained character segmenter.

``train_sentences.py`` reads the Hydra config and calls :func:`train`. The model learns from
the gold tokens of each training paragraph (the sentence ends inside it); it is judged, as it
will be used, on the tokens the segmenter finds in the dev text: after each epoch the weight of
the segmenter's log-odds and the bias are chosen from :data:`ODDS_WEIGHTS` and :data:`BIASES` by
dev Sentences F1, and the best epoch's model, with them, is written as ``best.pt``: the
segmenter's own checkpoint with the sentence model added. Training stops after ``max_epochs``,
after ``patience`` epochs without a better dev score, or at the first step past ``max_minutes``.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from biaffine.cli import check_positive, check_rate, check_seed, stop_if_terminated
from biaffine.runtime import seed_everything, set_threads
from biaffine.segmenting import checkpoint
from biaffine.segmenting.sentences import SentenceModel, paragraph_tokens, token_flags
from biaffine.segmenting.spans import SpanScores, count_spans, segment_spans
from biaffine.segmenting.training import SegmenterData, write_metrics
from biaffine.segmenting.windows import log_probs
from rawtext.document import Token
from rawtext.labels import LabelledText, is_sentence_end_class
from rawtext.segment import normalized

__all__ = [
    "BEST",
    "BIASES",
    "CONTEXTS",
    "CONTEXT_TOLERANCE",
    "MARGINS",
    "METRICS",
    "ODDS_WEIGHTS",
    "SentenceSettings",
    "choose_context",
    "choose_margin",
    "train",
]

log = logging.getLogger(__name__)

BEST = "best.pt"
METRICS = "metrics.jsonl"
ODDS_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
"""Weights of the segmenter's sentence-end log-odds tried on dev (0: the words alone)."""
BIASES = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5)
"""Biases of the combined logit tried on dev."""
MARGINS = (2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
"""Margins tried on dev after training (:attr:`SentenceModel.margin`)."""
CONTEXTS = (8, 16, 32, 64)
"""Contexts tried on dev after the margin (:attr:`SentenceModel.context`)."""
CONTEXT_TOLERANCE = 0.1
"""The dev Sentences F1 a context may lose against whole paragraphs (EWT dev: 2 of 2,001)."""


@dataclass(frozen=True, slots=True)
class SentenceSettings:
    """How to train (``conf/sentences.yaml``'s ``trainer`` section)."""

    max_epochs: int = 12
    max_minutes: float | None = None
    patience: int | None = None
    batch_pieces: int = 32
    piece: int = 160
    lr: float = 2e-3
    clip: float | None = 5.0
    threads: int | None = None
    seed: int = 1

    def __post_init__(self) -> None:
        """Refuse limits that train nothing (``max_epochs=0``), rates that overflow, bad seeds."""
        names = ("max_epochs", "max_minutes", "patience", "batch_pieces", "piece", "lr", "clip")
        check_positive({name: getattr(self, name) for name in names}, "trainer")
        for name in ("lr", "clip"):  # inf trained into NaN weights, 1e39 overflowed in Adam
            check_rate(getattr(self, name), f"trainer.{name}")
        check_seed(self.seed, "trainer.seed", bits=32)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> SentenceSettings:
        """Settings from a plain mapping (unknown keys refused by name)."""
        unknown = sorted(set(values) - set(asdict(cls())))
        if unknown:
            raise ValueError(f"unknown trainer setting(s): {', '.join(unknown)}")
        return cls(**values)


_Piece = tuple[int, int, int]
"""A run of a training paragraph's tokens: (paragraph, first token, one past the last)."""


@dataclass(frozen=True, slots=True)
class _Gold:
    """One training paragraph: token forms, flags float[n, F], sentence ends float[n]."""

    forms: list[str]
    flags: torch.Tensor
    ends: torch.Tensor


@dataclass(frozen=True, slots=True)
class _System:
    """One dev or test document as the segmenter reads it, with what scoring needs."""

    document: LabelledText
    classes: np.ndarray
    log_probs: torch.Tensor
    paragraphs: list[list[Token]]
    gold_tokens: frozenset[tuple[int, int]]
    gold_sentences: frozenset[tuple[int, int]]

    def score(self, classes: np.ndarray) -> SpanScores:
        """Token and sentence span counts of ``classes`` (the gold spans found once)."""
        tokens, sentences = segment_spans(self.document.text, classes)
        return SpanScores(
            count_spans(tokens, self.gold_tokens), count_spans(sentences, self.gold_sentences)
        )


def prepare(
    segmenter: str | Path, model_config: Mapping[str, Any], settings: SentenceSettings
) -> tuple[checkpoint.Stored, SentenceModel]:
    """The segmenter read and a new sentence model built, from the seed, for :func:`train`.

    Before the run folder is touched: a segmenter that cannot be read or a transformer
    setting that builds no model refused the run once its ``.hydra/`` record was written.

    Args:
        segmenter: the character segmenter's checkpoint.
        model_config: :class:`SentenceModel`'s arguments.
        settings: the trainer settings (threads, seed).

    Raises:
        ValueError: naming the file or the setting (one line).
    """
    set_threads(settings.threads)
    seed_everything(settings.seed)
    stored = checkpoint.load(segmenter)
    transformer = {**model_config["transformer"], "cache": True}  # states kept after epoch 1
    return stored, SentenceModel.from_config({**model_config, "transformer": transformer})


def train(
    data: SegmenterData,
    stored: checkpoint.Stored,
    model: SentenceModel,
    settings: SentenceSettings,
    run_dir: Path,
) -> dict[str, Any]:
    """Train ``model`` for the segmenter; write the two together as ``run_dir/best.pt``.

    Args:
        data: the treebank's labelled documents.
        stored: the character segmenter, as :func:`prepare` read it.
        model: the new sentence model :func:`prepare` built (training goes on from the random
            state its building left).
        settings: the trainer settings.
        run_dir: where ``best.pt`` and ``metrics.jsonl`` go (it must exist).

    Returns:
        The last line of ``metrics.jsonl``: the best epoch, its dev scores, whether they beat
        the segmenter's alone (``beats_segmenter``: if not, a warning says so), test scores
        with and without the model, why training stopped.
    """
    gold = [paragraph for d in data.train for paragraph in _gold_paragraphs(d)]
    dev = [_system(stored, document) for document in data.dev]
    pieces = _pieces([len(paragraph.forms) for paragraph in gold], settings.piece)
    log.info("%d training paragraphs, %d dev documents", len(gold), len(dev))
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    rng = np.random.default_rng(settings.seed)
    started = time.monotonic()
    deadline = started + 60 * settings.max_minutes if settings.max_minutes else math.inf
    history: list[dict[str, Any]] = [{"segmenter_dev": _score(dev, None).as_dict()}]
    best, best_epoch, stop = -1.0, 0, "max_epochs"
    for epoch in range(1, settings.max_epochs + 1):
        model.train()
        losses = []
        for batch in _batches(pieces, settings.batch_pieces, rng):
            stop_if_terminated()  # a kill whose exception a weakref callback swallowed
            if time.monotonic() > deadline:
                stop = "max_minutes"
                break
            losses.append(_step(model, gold, batch, optimizer, settings.clip))
            if not math.isfinite(losses[-1]):  # NaN weights were written as best.pt, status 0
                raise FloatingPointError(f"loss is {losses[-1]} at epoch {epoch}")
        if not losses and epoch > 1:  # the time ran out while the last epoch was scored
            break  # (it recorded an epoch with no step)
        dev_f1, weight, bias = _tune(model, dev)
        line = {"epoch": epoch, "loss": float(np.mean(losses)) if losses else None}
        line |= {"dev_sentences_f1": dev_f1, "odds_weight": weight, "bias": bias}
        history.append(line | {"minutes": (time.monotonic() - started) / 60})
        write_metrics(run_dir / METRICS, history)
        log.info("epoch %d: loss %s, dev sentences F1 %.2f (weight %s, bias %s)",
                 epoch, line["loss"], dev_f1, weight, bias)  # fmt: skip
        if dev_f1 > best:
            best, best_epoch = dev_f1, epoch
            model.odds_weight, model.bias = weight, bias
            _save(run_dir / BEST, stored, model)
        if stop == "max_minutes":
            break
        if settings.patience is not None and epoch - best_epoch >= settings.patience:
            stop = "patience"
            break
    final = checkpoint.load(run_dir / BEST)
    final.sentences.margin = choose_margin(final.sentences, dev)
    final.sentences.context = choose_context(final.sentences, dev)
    _save(run_dir / BEST, stored, final.sentences)
    result: dict[str, Any] = {"best_epoch": best_epoch, "stop": stop}
    result |= {"margin": final.sentences.margin, "context": final.sentences.context}
    result["dev"] = _score(dev, final.sentences).as_dict()
    alone = history[0]["segmenter_dev"]["sentences_f1"]
    result["beats_segmenter"] = result["dev"]["sentences_f1"] > alone
    if not result["beats_segmenter"]:  # a user would ship best.pt none the wiser
        log.warning(
            "dev sentences F1 %.2f with the sentence model, %.2f for the segmenter alone: "
            "%s segments worse than the segmenter it was trained on; keep that one",
            result["dev"]["sentences_f1"], alone, run_dir / BEST,
        )  # fmt: skip
    if data.test:
        test = [_system(stored, document) for document in data.test]
        result["test"] = _score(test, final.sentences).as_dict()
        result["segmenter_test"] = _score(test, None).as_dict()
    history.append(result)
    write_metrics(run_dir / METRICS, history)
    log.info("best epoch %d: %s; stopped: %s", best_epoch, result, stop)
    return result


def choose_margin(model: SentenceModel, documents: Sequence[_System]) -> float | None:
    """The margin within which the words decide, chosen on dev; None: they decide every token.

    The smallest of :data:`MARGINS` with which no dev decision changes, and for text unlike dev
    the next one up (None where the largest two are needed). The words are read once, as whole
    paragraphs.
    """
    kept = (model.margin, model.context)
    model.margin = model.context = None
    read = [(d, model.logits(d.document.text, d.paragraphs)) for d in documents]
    full = [model.decide(logits, d.paragraphs, d.log_probs) for d, logits in read]
    unchanged = []
    for candidate in MARGINS:
        model.margin = candidate
        gated = [
            model.decide(_gated(model, d, logits), d.paragraphs, d.log_probs) for d, logits in read
        ]
        unchanged.append(
            all(
                torch.equal(a[:-1], b[:-1])
                for document_gated, document_full in zip(gated, full, strict=True)
                for a, b in zip(document_gated, document_full, strict=True)
            )
        )
    model.margin, model.context = kept
    first = next((k for k, same in enumerate(unchanged) if same), len(MARGINS))
    return MARGINS[first + 1] if first + 1 < len(MARGINS) else None


def choose_context(model: SentenceModel, documents: Sequence[_System]) -> int | None:
    """The context to read each unsure token within, chosen on dev at the model's margin.

    The smallest of :data:`CONTEXTS` whose dev Sentences F1 is at most
    :data:`CONTEXT_TOLERANCE` below reading whole paragraphs; None where none is.
    """
    kept = model.context
    scores = {}
    for candidate in (None, *CONTEXTS):
        model.context = candidate
        total = SpanScores()
        for d in documents:
            total += _scored(
                model, d, model.read_logits(d.document.text, d.paragraphs, d.log_probs)
            )
        scores[candidate] = total.sentences.f1
    model.context = kept
    least = scores[None] - CONTEXT_TOLERANCE
    return next((c for c in CONTEXTS if scores[c] >= least), None)


def _gated(model: SentenceModel, d: _System, logits: list[torch.Tensor]) -> list[torch.Tensor]:
    """The logits :meth:`SentenceModel.read_logits` gives with whole paragraphs: 0 where sure."""
    return [
        torch.where(model.unsure(d.log_probs, tokens), z, 0.0)
        for z, tokens in zip(logits, d.paragraphs, strict=True)
    ]


def refuse_no_paragraphs(data: SegmenterData) -> None:
    """Refuse training data without a paragraph of two or more tokens: nothing to learn.

    Such a treebank (every sentence a paragraph of one token) trained no step, logged a
    null loss and wrote an untrained model with status 0.
    """
    for document in data.train:
        if any(len(tokens) > 1 for tokens in paragraph_tokens(document.text, document.labels)):
            return
    raise ValueError(
        f"{data.treebank}: no training paragraph has two tokens or more: a sentence model "
        "learns where sentences end inside paragraphs, and would learn nothing"
    )


def _gold_paragraphs(document: LabelledText) -> list[_Gold]:
    """The paragraphs of more than one token, with each token's gold sentence end."""
    out = []
    for tokens in paragraph_tokens(document.text, document.labels):
        if len(tokens) > 1:
            ends = [is_sentence_end_class(int(document.labels[t.end - 1])) for t in tokens]
            flags = torch.from_numpy(token_flags(document.text, tokens))
            out.append(_Gold([t.form for t in tokens], flags, torch.tensor(ends).float()))
    return out


def _system(stored: checkpoint.Stored, document: LabelledText) -> _System:
    scores = log_probs(stored.model, stored.vocab, document.text)
    # Where segment() reads them, as SentenceModel.resplit does when it parses: chosen on the
    # classes as decided, the weight, bias and margin fitted another decoding than inference's.
    classes = normalized(document.text, stored.model.decide(scores).numpy())
    paragraphs = [p for p in paragraph_tokens(document.text, classes) if len(p) > 1]
    tokens, sentences = segment_spans(document.text, document.labels)
    return _System(document, classes, scores, paragraphs, frozenset(tokens), frozenset(sentences))


def _pieces(lengths: Sequence[int], size: int) -> list[_Piece]:
    """Each paragraph cut into runs of at most ``size`` tokens: ``(paragraph, start, end)``."""
    return [
        (index, start, min(start + size, n))
        for index, n in enumerate(lengths)
        for start in range(0, n, size)
    ]


def _batches(pieces: Sequence[_Piece], size: int, rng: np.random.Generator) -> list[list[_Piece]]:
    """The pieces in a random order, ``size`` to a batch."""
    order = rng.permutation(len(pieces)).tolist()
    return [[pieces[i] for i in order[k : k + size]] for k in range(0, len(order), size)]


def _step(
    model: SentenceModel,
    gold: Sequence[_Gold],
    batch: Sequence[_Piece],
    optimizer: torch.optim.Optimizer,
    clip: float | None,
) -> float:
    """One update on a batch of pieces; returns the loss.

    The transformer reads each piece's whole paragraph (its states are cached after the first
    epoch); the BiLSTM reads the pieces, so a batch costs as many steps as its longest piece,
    not its longest paragraph.
    """
    features = {}
    for index in dict.fromkeys(index for index, _, _ in batch):
        paragraph = gold[index]
        features[index] = model.features([paragraph.forms], paragraph.flags[None])[0]
    width = max(end - start for _, start, end in batch)
    inputs = torch.zeros(len(batch), width, model.project.out_features)
    ends = torch.zeros(len(batch), width)
    mask = torch.zeros(len(batch), width, dtype=torch.bool)
    for b, (index, start, end) in enumerate(batch):
        inputs[b, : end - start] = features[index][start:end]
        ends[b, : end - start] = gold[index].ends[start:end]
        mask[b, : end - start] = True
        if end == len(gold[index].forms):  # a paragraph's last token ends its sentence anyway
            mask[b, end - start - 1] = False
    lengths = torch.tensor([end - start for _, start, end in batch])
    logits = model.read(inputs, lengths)
    loss = nn.functional.binary_cross_entropy_with_logits(logits[mask], ends[mask])
    optimizer.zero_grad()
    loss.backward()
    if clip:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def _tune(model: SentenceModel, documents: Sequence[_System]) -> tuple[float, float, float]:
    """The best dev Sentences F1 over :data:`ODDS_WEIGHTS` x :data:`BIASES`, and those two.

    The model runs once per document; ties go to the first pair tried.
    """
    best = (-1.0, 0.0, 0.0)
    logits = [model.logits(d.document.text, d.paragraphs) for d in documents]
    for weight, bias in itertools.product(ODDS_WEIGHTS, BIASES):
        model.odds_weight, model.bias = weight, bias
        total = SpanScores()
        for document, z in zip(documents, logits, strict=True):
            total += _scored(model, document, z)
        if total.sentences.f1 > best[0]:
            best = (total.sentences.f1, weight, bias)
    return best


def _scored(model: SentenceModel, d: _System, logits: list[torch.Tensor]) -> SpanScores:
    """Span counts of the classes ``model`` chooses from ``logits`` (its weight and bias)."""
    ends = model.decide(logits, d.paragraphs, d.log_probs)
    return d.score(model.relabel(d.classes, d.paragraphs, ends))


def _score(documents: Sequence[_System], model: SentenceModel | None) -> SpanScores:
    """Span counts of the segmenter's classes, resplit by ``model`` where one is given."""
    total = SpanScores()
    for d in documents:
        classes = (
            d.classes if model is None else model.resplit(d.document.text, d.classes, d.log_probs)
        )
        total += d.score(classes)
    return total


def _save(path: Path, stored: checkpoint.Stored, model: SentenceModel) -> None:
    checkpoint.save(
        path, stored.model, stored.vocab, treebank=stored.treebank, mwt=stored.mwt, sentences=model
    )
