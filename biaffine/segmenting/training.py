"""Training a segmenter on a treebank's raw text: typed settings, windows in random order, Adam.

``train_segmenter.py`` reads the Hydra config and calls :func:`train` with typed arguments. The
training text (every document, a blank line between two) is cut into windows at a random offset
each epoch, shuffled, and batched; after each epoch the dev documents are segmented whole and
scored by Tokens F1 and Sentences F1 (:mod:`biaffine.segmenting.spans`); the best model so far
is ``best.pt``. Training stops after ``patience`` epochs without a better dev score (their sum),
after ``max_epochs``, or at the first step past ``max_minutes``. Then the best model's
``sentence_bias`` (:meth:`SegmenterModel.decide`) is chosen on dev from :data:`SENTENCE_BIASES`
and stored with it, and the result is scored on test.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from biaffine.cli import check_positive, check_rate, check_seed, stop_if_terminated
from biaffine.data import treebanks
from biaffine.data.conllu import ConlluError
from biaffine.files import atomic_open
from biaffine.nn.averaging import weight_average
from biaffine.runtime import seed_everything, set_threads
from biaffine.segmenting import checkpoint
from biaffine.segmenting.features import CasedWords, CharVocab
from biaffine.segmenting.model import SegmenterModel
from biaffine.segmenting.spans import SpanScores, score_spans, segment_spans
from biaffine.segmenting.windows import classify, log_probs
from rawtext.labels import (
    MWT_SENTENCE_END,
    N_CLASSES,
    SENTENCE_END,
    LabelledText,
    labelled_documents,
)
from rawtext.mwt import MwtExpander
from rawtext.segment import segment

__all__ = [
    "BEST",
    "METRICS",
    "SegmenterData",
    "SegmenterResult",
    "TrainSettings",
    "evaluate",
    "hold_out_dev",
    "input_files",
    "load_documents",
    "refuse_earlier_run",
    "refuse_overwriting_inputs",
    "spaced_tokens",
    "train",
    "write_metrics",
]

log = logging.getLogger(__name__)

BEST = "best.pt"
METRICS = "metrics.jsonl"
SENTENCE_BIASES = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0)
"""The sentence-end biases tried on dev after training (0 first among equals: no change)."""
_IGNORE = -100  # the loss's ignore_index: padding after the end of a window


@dataclass(frozen=True, slots=True)
class TrainSettings:
    """How to train (``conf/segmenter.yaml``'s ``trainer`` section)."""

    max_epochs: int = 50
    max_minutes: float | None = None
    patience: int | None = 5
    window: int = 256
    batch_windows: int = 32
    lr: float = 2e-3
    lr_decay: float = 1.0
    clip: float | None = 5.0
    sentence_weight: float = 2.0
    min_char_count: int = 2
    threads: int | None = None
    seed: int = 1
    tune_sentence_bias: bool = True
    ema_decay: float | None = None
    spaced_words: bool = False
    cased_words: bool = False

    def __post_init__(self) -> None:
        """Refuse limits that train nothing, and rates that train backwards.

        ``max_epochs=0`` failed once training ended; ``lr_decay=-1`` or ``clip=-1`` trained with
        a rising loss, and the run ended with status 0.
        """
        names = ("max_epochs", "max_minutes", "patience", "window", "batch_windows", "lr")
        check_positive({name: getattr(self, name) for name in (*names, "clip")}, "trainer")
        for name in ("lr", "clip", "sentence_weight"):  # inf trained into NaN
            check_rate(getattr(self, name), f"trainer.{name}")
        if not self.sentence_weight >= 0:  # 0: tokens alone are learnt
            raise ValueError(f"trainer.sentence_weight={self.sentence_weight} must be >= 0")
        check_seed(self.seed, "trainer.seed", bits=32)
        if not 0 < self.lr_decay <= 1:
            raise ValueError(
                f"trainer.lr_decay={self.lr_decay} must be in (0, 1]: the share of the learning "
                "rate each epoch keeps"
            )


@dataclass(frozen=True, slots=True)
class SegmenterData:
    """The documents of each split, as raw text with gold classes; ``test`` None without one.

    ``mwt`` is the multi-word token expander learned from train (None: the treebank has none).
    """

    treebank: str
    train: list[LabelledText]
    dev: list[LabelledText]
    test: list[LabelledText] | None
    mwt: MwtExpander | None = None


@dataclass(frozen=True, slots=True)
class SegmenterResult:
    """Outcome of :func:`train`: dev scores of the best epoch, test scores of its model."""

    best_dev: dict[str, float]
    test: dict[str, float] | None
    best_epoch: int
    epochs: int
    stop_reason: str
    run_dir: Path
    history: list[dict[str, Any]] = field(default_factory=list)


def load_documents(d: Mapping[str, Any]) -> SegmenterData:
    """The labelled documents of the splits a ``data`` config names, and train's MWT expander.

    A treebank without a dev split holds out ``dev_fraction`` of its training text as dev
    (:func:`hold_out_dev`).

    Raises:
        ValueError: no train split; FileNotFoundError, DownloadError: see
            :func:`biaffine.data.treebanks.locate_treebank`; ConlluError: a malformed file, or
            one without text.
    """
    folder, names = treebanks.configured_names(d)
    if names.get("train") is None:
        raise ValueError(f"{d['treebank']!r} has no train split: it cannot be trained on")
    files = treebanks.locate_treebank(
        folder, d["treebank"], names, download=d["download"], base_url=d["base_url"]
    )
    train = _documents(files.train)
    test = _documents(files.test) if files.test is not None else None
    mwt = MwtExpander.from_conllu(files.train)
    mwt = mwt if mwt.dictionary else None
    if files.dev is not None:
        return SegmenterData(d["treebank"], train, _documents(files.dev), test, mwt)
    train, dev = hold_out_dev(train, d["dev_fraction"], seed=d["split_seed"])
    log.info("%s has no dev split: %d blocks of its text held out as dev", d["treebank"], len(dev))
    return SegmenterData(d["treebank"], train, dev, test, mwt)


def _documents(path: Path) -> list[LabelledText]:
    """The labelled documents of one split's file, which must hold some text.

    Raises:
        ConlluError: a file without tokens (empty, blank or comments only), which would train
            on nothing, or score on nothing, and say so only in a score of 0.
    """
    documents = labelled_documents(path)
    if not documents:
        raise ConlluError(str(path), 0, "no sentences found (no token lines)")
    return documents


def refuse_overwriting_inputs(
    run_dir: Path, inputs: Mapping[str, str | os.PathLike[str] | None]
) -> None:
    """Refuse a run whose input is the ``best.pt`` or ``metrics.jsonl`` it writes in ``run_dir``.

    Args:
        run_dir: the run's folder.
        inputs: the file each setting names (``data.train``, ``segmenter``); None for none.

    Raises:
        ValueError: naming the setting and its file.
    """
    treebanks.refuse_written_inputs(inputs, [run_dir / BEST, run_dir / METRICS])


def refuse_earlier_run(run_dir: Path, overwrite: object) -> None:
    """Refuse a run folder that holds an earlier run's results, unless ``overwrite`` is True.

    As ``train.py`` does (``trainer.overwrite``): a second run given the same
    ``hydra.run.dir`` replaced the first one's segmenter without a word.

    Raises:
        ValueError: ``overwrite`` that is not a bool, or results found and not to be replaced.
    """
    if not isinstance(overwrite, bool):
        raise ValueError(f"trainer.overwrite={overwrite!r}: expected true or false")
    found = [name for name in (BEST, METRICS) if (run_dir / name).exists()]
    if found and not overwrite:
        raise ValueError(
            f"{run_dir} holds a run already ({', '.join(found)}): replace it with "
            "trainer.overwrite=true, or choose another run folder (hydra.run.dir; hydra.sweep.dir "
            "in a sweep)"
        )


def input_files(d: Mapping[str, Any]) -> dict[str, Path | None]:
    """The treebank file of each split a ``data`` config names, by setting (``data.train``)."""
    return {f"data.{split}": path for split, path in treebanks.configured_paths(d).items()}


def hold_out_dev(
    documents: Sequence[LabelledText], fraction: float, *, seed: int, blocks: int = 50
) -> tuple[list[LabelledText], list[LabelledText]]:
    """Cut the documents into about ``blocks`` runs of whole sentences; hold out a share as dev.

    Blocks, not documents, so that a treebank of one document has a dev set too; the choice
    is :func:`biaffine.data.treebanks.split_off_dev`'s (seeded, order kept).

    Raises:
        ValueError: fewer than two sentences in all (see ``split_off_dev``).
    """
    ends = sum(int(np.isin(d.labels, (SENTENCE_END, MWT_SENTENCE_END)).sum()) for d in documents)
    size = max(1, ends // blocks)
    pieces = [piece for document in documents for piece in _blocks(document, size)]
    return treebanks.split_off_dev(pieces, fraction, seed=seed)


def _blocks(document: LabelledText, sentences: int) -> list[LabelledText]:
    """A document cut after every ``sentences``-th sentence end (the rest starts the next block)."""
    ends = np.flatnonzero(np.isin(document.labels, (SENTENCE_END, MWT_SENTENCE_END)))
    cuts = [0, *(int(end) + 1 for end in ends[sentences - 1 :: sentences]), len(document.text)]
    pieces = [(a, b) for a, b in itertools.pairwise(cuts) if document.text[a:b].strip()]
    return [LabelledText(document.text[a:b], document.labels[a:b]) for a, b in pieces]


def spaced_tokens(documents: Sequence[LabelledText]) -> set[str]:
    """The tokens of the documents that hold whitespace (``trainer.spaced_words``)."""
    found = set()
    for document in documents:
        tokens, _ = segment_spans(document.text, document.labels)
        found.update(
            text for start, end in tokens if len((text := document.text[start:end]).split()) > 1
        )
    return found


def cased_words(documents: Sequence[LabelledText]) -> CasedWords:
    """How the documents' words are cased inside their sentences (``trainer.cased_words``)."""
    sentences = (
        [token.form for token in sentence.tokens]
        for document in documents
        for sentence in segment(document.text, document.labels).sentences()
    )
    return CasedWords.count(sentences)


def evaluate(
    model: SegmenterModel, vocab: CharVocab, documents: Sequence[LabelledText]
) -> SpanScores:
    """Token and sentence span counts of the model's classes on each document, added up."""
    total = SpanScores()
    for document in documents:
        total += score_spans(document.text, document.labels, classify(model, vocab, document.text))
    return total


def tune_sentence_bias(
    model: SegmenterModel, vocab: CharVocab, documents: Sequence[LabelledText]
) -> dict[str, float]:
    """Set the model's ``sentence_bias`` to the one of :data:`SENTENCE_BIASES` best on dev.

    Best: the highest Tokens F1 + Sentences F1; the network runs once per document.

    Returns:
        The dev scores with that bias.
    """
    scores = [log_probs(model, vocab, d.text) for d in documents]
    results = {}
    for bias in SENTENCE_BIASES:
        model.settings["sentence_bias"] = bias
        total = SpanScores()
        for document, document_scores in zip(documents, scores, strict=True):
            classes = model.decide(document_scores).numpy()
            total += score_spans(document.text, document.labels, classes)
        results[bias] = total.as_dict()
    best = max(SENTENCE_BIASES, key=lambda b: (sum(results[b].values()), b == 0.0))
    model.settings["sentence_bias"] = best
    log.info("sentence bias %s on dev: %s", best, results[best])
    return results[best]


def train(
    data: SegmenterData,
    model_config: Mapping[str, Any],
    settings: TrainSettings,
    run_dir: Path,
) -> SegmenterResult:
    """Train a segmenter, keep the best on dev as ``run_dir/best.pt``, score it on test.

    Args:
        data: the labelled documents.
        model_config: :class:`SegmenterModel`'s arguments but ``n_chars``.
        settings: the trainer settings.
        run_dir: where ``best.pt`` (with ``data.mwt``) and ``metrics.jsonl`` go (it must exist).
    """
    set_threads(settings.threads)
    seed_everything(settings.seed)
    words = spaced_tokens(data.train) if settings.spaced_words else ()
    cased = cased_words(data.train) if settings.cased_words else None
    texts = (d.text for d in data.train)
    vocab = CharVocab.build(texts, settings.min_char_count, spaced_words=words, cased_words=cased)
    model = SegmenterModel(len(vocab), n_features=vocab.n_features, **model_config)
    text, labels = _joined(data.train)
    ids, features = vocab.ids(text), vocab.features(text)
    log.info(
        "%s: %d training characters, %d dev documents, %d characters known, %d parameters",
        data.treebank, len(text), len(data.dev), len(vocab.chars),
        sum(p.numel() for p in model.parameters()),
    )  # fmt: skip
    average = None if settings.ema_decay is None else weight_average(model, settings.ema_decay)
    judged = model if average is None else average.module  # what dev scores and best.pt keeps
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=settings.lr_decay)
    weights = torch.ones(N_CLASSES)
    weights[[SENTENCE_END, MWT_SENTENCE_END]] = settings.sentence_weight
    loss_fn = nn.CrossEntropyLoss(weight=weights, ignore_index=_IGNORE)
    rng = np.random.default_rng(settings.seed)
    started = time.monotonic()
    deadline = started + 60 * settings.max_minutes if settings.max_minutes else math.inf
    history: list[dict[str, Any]] = []
    best, best_epoch, stop_reason = -1.0, 0, "max_epochs"
    for epoch in range(1, settings.max_epochs + 1):
        model.train()
        losses = []
        for batch in _batches(len(text), settings.window, settings.batch_windows, rng):
            stop_if_terminated()  # a kill whose exception a weakref callback swallowed
            if time.monotonic() > deadline:
                stop_reason = "max_minutes"
                break
            scores = model(*_tensors(batch, ids, features))
            loss = loss_fn(scores.reshape(-1, N_CLASSES), _targets(batch, labels).reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            if settings.clip:
                nn.utils.clip_grad_norm_(model.parameters(), settings.clip)
            optimizer.step()
            if average is not None:
                average.update_parameters(model)
            losses.append(loss.item())
            if not math.isfinite(losses[-1]):  # NaN weights were written as best.pt, status 0
                raise FloatingPointError(f"loss is {losses[-1]} at epoch {epoch}")
        if not losses and epoch > 1:  # the time ran out while the last epoch was scored
            break  # (it recorded an epoch with no step, scored again, the rate decayed)
        scheduler.step()
        dev = evaluate(judged, vocab, data.dev).as_dict()
        line = {"epoch": epoch, "loss": float(np.mean(losses)) if losses else None, "dev": dev}
        history.append(line | {"minutes": (time.monotonic() - started) / 60})
        write_metrics(run_dir / METRICS, history)
        log.info("epoch %d: loss %s, dev tokens F1 %.2f, sentences F1 %.2f",
                 epoch, line["loss"], dev["tokens_f1"], dev["sentences_f1"])  # fmt: skip
        if sum(dev.values()) > best:
            best, best_epoch = sum(dev.values()), epoch
            _save_best(run_dir, judged, vocab, data)
        if stop_reason == "max_minutes":
            break
        if settings.patience is not None and epoch - best_epoch >= settings.patience:
            stop_reason = "patience"
            break
    stored = checkpoint.load(run_dir / BEST)
    best_dev = history[best_epoch - 1]["dev"]
    if settings.tune_sentence_bias:
        best_dev = tune_sentence_bias(stored.model, stored.vocab, data.dev)
        checkpoint.save(
            run_dir / BEST, stored.model, stored.vocab, treebank=data.treebank, mwt=data.mwt
        )
    test = evaluate(stored.model, stored.vocab, data.test).as_dict() if data.test else None
    bias = stored.model.settings["sentence_bias"]
    history.append(
        {"best_epoch": best_epoch, "sentence_bias": bias, "dev": best_dev, "test": test}
        | {"stop": stop_reason}
    )
    write_metrics(run_dir / METRICS, history)
    log.info(
        "best epoch %d (dev %s); test %s; stopped: %s", best_epoch, best_dev, test, stop_reason
    )
    return SegmenterResult(
        best_dev, test, best_epoch, len(history) - 1, stop_reason, run_dir, history
    )


def _save_best(run_dir: Path, model: SegmenterModel, vocab: CharVocab, data: SegmenterData) -> None:
    checkpoint.save(run_dir / BEST, model, vocab, treebank=data.treebank, mwt=data.mwt)


def _joined(documents: Sequence[LabelledText]) -> tuple[str, np.ndarray]:
    """All documents as one text, a blank line between two, and its classes (uint8)."""
    separator = "\n\n"
    text = separator.join(d.text for d in documents)
    parts = []
    for i, d in enumerate(documents):
        parts += [np.zeros(len(separator), dtype=np.uint8)] if i else []
        parts.append(np.asarray(d.labels, dtype=np.uint8))
    return text, np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint8)


def _batches(
    length: int, window: int, size: int, rng: np.random.Generator
) -> list[list[tuple[int, int]]]:
    """Windows ``(start, end)`` tiling the text from a random offset, shuffled, in batches."""
    offset = int(rng.integers(window))
    starts = [max(0, s) for s in range(offset - window, length, window)]
    bounds = [(s, min(length, s + window)) for s in starts if s < min(length, s + window)]
    bounds = [bounds[i] for i in rng.permutation(len(bounds))]
    return [bounds[i : i + size] for i in range(0, len(bounds), size)]


def _tensors(
    batch: list[tuple[int, int]], ids: np.ndarray, features: np.ndarray
) -> tuple[torch.Tensor, torch.Tensor]:
    """int64[B, T] ids and float32[B, T, F] features of the windows, padded."""
    width = max(end - start for start, end in batch)
    batch_ids = np.zeros((len(batch), width), dtype=np.int64)
    batch_features = np.zeros((len(batch), width, features.shape[1]), dtype=np.float32)
    for row, (start, end) in enumerate(batch):
        batch_ids[row, : end - start] = ids[start:end]
        batch_features[row, : end - start] = features[start:end]
    return torch.from_numpy(batch_ids), torch.from_numpy(batch_features)


def _targets(batch: list[tuple[int, int]], labels: np.ndarray) -> torch.Tensor:
    """int64[B, T] gold classes of the windows, ``_IGNORE`` at padding."""
    width = max(end - start for start, end in batch)
    targets = np.full((len(batch), width), _IGNORE, dtype=np.int64)
    for row, (start, end) in enumerate(batch):
        targets[row, : end - start] = labels[start:end]
    return torch.from_numpy(targets)


def write_metrics(path: Path, lines: list[dict[str, Any]]) -> None:
    """Write ``lines`` as JSON lines, atomically (a reader never sees half a file)."""
    with atomic_open(path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)


def settings_from(values: Mapping[str, Any]) -> TrainSettings:
    """Trainer settings from a plain mapping (unknown keys refused by name)."""
    known = set(asdict(TrainSettings()))
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown trainer setting(s): {', '.join(unknown)}")
    return TrainSettings(**values)
