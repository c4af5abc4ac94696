"""Training: the composition root :func:`train` (reads the config) and the typed loop :func:`fit`.

A run directory receives ``config.yaml`` (resolved config), ``best.pt`` (best dev LAS),
``last.pt`` (all that is needed to resume exactly) and ``metrics.jsonl`` (one JSON object per
epoch, then one for the final test evaluation of the best model).
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.optim.swa_utils import AveragedModel
from tqdm import tqdm

from biaffine import checkpoint, data
from biaffine.batching import Batch, Encoded, batches_by_tokens, encode
from biaffine.conllu_io import Sentence
from biaffine.inference import parse
from biaffine.metrics import AttachmentScores, score_corpus
from biaffine.run_state import (
    BEST,
    CONFIG,
    RunWriter,
    TrainState,
    find_resume_checkpoint,
    restore,
)
from biaffine.vocab import Vocabs, build_vocabs

__all__ = [
    "DecoderSettings",
    "FitSettings",
    "TrainResult",
    "evaluate",
    "fit",
    "fit_settings",
    "lr_decay_scheduler",
    "setup_torch",
    "train",
    "train_epoch",
    "weight_average",
]

log = logging.getLogger(__name__)

Scheduler = torch.optim.lr_scheduler.LRScheduler


@dataclass(frozen=True, slots=True)
class DecoderSettings:
    """How dev/test sentences are decoded: see :func:`biaffine.inference.decode`."""

    algorithm: str = "mst"
    root_constraint: bool = True


@dataclass(frozen=True, slots=True)
class FitSettings:
    """Everything :func:`fit` needs besides the model, optimizer and data.

    Attributes:
        max_epochs: last epoch to run (counted from 1, across resumes).
        max_tokens: words per training batch.
        eval_max_tokens: words per batch when parsing dev.
        seed: seed of the batch order (together with the epoch number).
        decoder: decoder used to parse dev.
        patience: stop after this many epochs without a better dev score; None = never.
        clip: max gradient L2 norm; None = no clipping.
        max_steps: stop once this many optimizer steps are done; None = no limit.
        max_minutes: stop after the epoch that crosses this wall-clock time; None = no limit.
        exclude_punct: leave PUNCT out of dev scores.
        progress_bar: show a tqdm bar per epoch (on stderr).
    """

    max_epochs: int
    max_tokens: int
    eval_max_tokens: int = 5000
    seed: int = 1
    decoder: DecoderSettings = field(default_factory=DecoderSettings)
    patience: int | None = None
    clip: float | None = 5.0
    max_steps: int | None = None
    max_minutes: float | None = None
    exclude_punct: bool = False
    progress_bar: bool = True


@dataclass(frozen=True, slots=True)
class TrainResult:
    """Outcome of :func:`train`: best dev scores, test scores of the best model, where it ended."""

    best_dev: AttachmentScores
    test: AttachmentScores | None
    best_epoch: int
    epochs: int
    steps: int
    stop_reason: str
    run_dir: Path


# ---------------------------------------------------------------------------------------------
# Composition root: the only place that reads a DictConfig and instantiates.


def train(cfg: DictConfig, run_dir: Path) -> TrainResult:
    """Train a parser as configured, then evaluate its best checkpoint on test.

    Args:
        cfg: the composed ``conf/train.yaml`` (groups data, model, optimizer, trainer, decoder).
        run_dir: folder for checkpoints, ``metrics.jsonl`` and ``config.yaml``.

    Returns:
        Best dev scores, test scores of the best model (None without a test split), epochs run.
    """
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(cfg, run_dir / CONFIG, resolve=True)
    t = cfg.trainer
    device = setup_torch(seed=t.seed, threads=t.threads, device=t.device)
    splits = _load_splits(cfg.data)
    resumed = find_resume_checkpoint(t.resume, t.resume_from, run_dir)
    vocabs = (
        resumed.vocabs if resumed else build_vocabs(splits.train, min_word_count=t.min_word_count)
    )
    _log_data(splits, vocabs)
    model, optimizer, scheduler = _build(cfg, vocabs, device)
    average = weight_average(model, t.ema_decay) if t.ema_decay is not None else None
    metadata = {"config": OmegaConf.to_container(cfg, resolve=True), "treebank": cfg.data.treebank}
    writer = RunWriter(run_dir, model_config=model.config(), vocabs=vocabs, metadata=metadata)
    state = None
    if resumed is not None:
        state = restore(resumed, model, optimizer, scheduler, average)
        writer.truncate_metrics(state.epoch)
        log.info("resumed after epoch %d (step %d)", state.epoch, state.step)
    settings = fit_settings(cfg)
    train_data = encode(splits.train, vocabs)
    state, reason = fit(
        model,
        optimizer,
        scheduler,
        train_data,
        splits.dev,
        vocabs,
        settings=settings,
        writer=writer,
        device=device,
        state=state,
        average=average,
    )
    if state.best_dev is None:
        raise ValueError("no epoch was trained: trainer.max_epochs must be at least 1")
    test = _test_best(model, vocabs, splits.test, settings, writer)
    return TrainResult(
        state.best_dev, test, state.best_epoch, state.epoch, state.step, reason, run_dir
    )


def _load_splits(d: DictConfig) -> data.Splits:
    names = {split: d[split] for split in data.SPLITS}
    options = {"download": d.download, "base_url": d.base_url}
    options |= {"dev_fraction": d.dev_fraction, "split_seed": d.split_seed}
    return data.load_splits(data.resolve_root(d.root), d.treebank, names, **options)


def _build(
    cfg: DictConfig, vocabs: Vocabs, device: torch.device
) -> tuple[nn.Module, torch.optim.Optimizer, Scheduler]:
    """Instantiate the model (sized by the vocabularies), its optimizer and the LR decay."""
    sizes = {"n_words": len(vocabs.words), "n_chars": len(vocabs.chars)}
    sizes |= {"n_tags": len(vocabs.upos), "n_rels": len(vocabs.rels)}
    sizes |= {"n_xpos": len(vocabs.xpos), "n_feats": len(vocabs.feats)}
    model = instantiate(cfg.model, **sizes, _convert_="all").to(device)
    optimizer = instantiate(cfg.optimizer, _convert_="all")(model.parameters())
    t = cfg.trainer
    scheduler = lr_decay_scheduler(optimizer, rate=t.lr_decay, steps=t.lr_decay_steps)
    log.info("model: %s parameters\n%s", f"{sum(p.numel() for p in model.parameters()):,}", model)
    return model, optimizer, scheduler


def fit_settings(cfg: DictConfig) -> FitSettings:
    """The typed :class:`FitSettings` of a composed training config."""
    t, d = cfg.trainer, cfg.decoder
    return FitSettings(
        max_epochs=t.max_epochs,
        max_tokens=t.max_tokens,
        eval_max_tokens=t.eval_max_tokens,
        seed=t.seed,
        decoder=DecoderSettings(d.algorithm, d.root_constraint),
        patience=t.patience,
        clip=t.clip,
        max_steps=t.max_steps,
        max_minutes=t.max_minutes,
        exclude_punct=t.exclude_punct,
        progress_bar=t.progress_bar,
    )


def setup_torch(*, seed: int, threads: int | None, device: str) -> torch.device:
    """Seed every global RNG, set the CPU thread count, pick the device (``auto``: cuda if any)."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002  (legacy global RNG, for any third-party code using it)
    torch.manual_seed(seed)
    if threads is not None:
        torch.set_num_threads(threads)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def _log_data(splits: data.Splits, vocabs: Vocabs) -> None:
    for name in ("train", "dev", "test"):
        sentences = getattr(splits, name)
        if sentences is not None:
            words = sum(len(s) for s in sentences)
            log.info("%s: %d sentences, %d words", name, len(sentences), words)
    sizes = {f.name: len(getattr(vocabs, f.name)) for f in fields(vocabs)}
    log.info("vocabulary sizes: %s", sizes)


def lr_decay_scheduler(optimizer: torch.optim.Optimizer, *, rate: float, steps: int) -> Scheduler:
    """``lr * rate ** (step / steps)``, stepped per batch (Dozat & Manning, 2017: .75 per 5000)."""
    if not 0.0 < rate <= 1.0 or steps < 1:
        raise ValueError(f"lr_decay={rate} must be in (0, 1] and lr_decay_steps={steps} >= 1")
    return torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=rate ** (1.0 / steps))


def weight_average(model: nn.Module, decay: float) -> AveragedModel:
    """An exponential moving average of ``model``'s weights, updated after every step.

    The average of the last few thousand steps generalizes better than the final weights of a
    short run whose learning rate is still far from zero (Polyak & Juditsky, 1992). The decay
    warms up as ``min(decay, (1 + k) / (10 + k))`` after k updates, so the first epochs are not
    dominated by the random initial weights.

    Raises:
        ValueError: if ``decay`` is not in (0, 1).
    """
    if not 0.0 < decay < 1.0:
        raise ValueError(f"ema_decay={decay} must be in (0, 1), or null to score the weights")

    def update(averaged: list[torch.Tensor], current: list[torch.Tensor], k: torch.Tensor) -> None:
        weight = 1.0 - min(decay, (1.0 + float(k)) / (10.0 + float(k)))
        torch._foreach_lerp_(averaged, current, weight)

    return AveragedModel(model, multi_avg_fn=update)


# ---------------------------------------------------------------------------------------------
# The typed loop.


def fit(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Scheduler,
    train_data: Sequence[Encoded],
    dev: Sequence[Sentence],
    vocabs: Vocabs,
    *,
    settings: FitSettings,
    writer: RunWriter,
    device: torch.device | str = "cpu",
    state: TrainState | None = None,
    average: AveragedModel | None = None,
) -> tuple[TrainState, str]:
    """Train epoch by epoch, score dev after each, keep ``best.pt`` and ``last.pt`` up to date.

    Args:
        model: a :class:`biaffine.model.BiaffineParser` on ``device``.
        optimizer: optimizer over the model's parameters.
        scheduler: stepped after every optimizer step.
        train_data: encoded training sentences.
        dev: gold dev sentences (parsed with ``settings.decoder``).
        vocabs: the vocabularies of ``train_data``.
        settings: loop settings.
        writer: writes checkpoints and metrics lines into the run directory.
        device: where batches go.
        state: progress restored from ``last.pt``; None starts from scratch.
        average: a :func:`weight_average` of ``model``, updated every step: dev is scored, and
            ``best.pt`` written, with its weights; None uses the model's own.

    Returns:
        The final progress, and why training stopped: ``max_epochs``, ``patience``,
        ``max_steps`` or ``max_minutes``.
    """
    state = state if state is not None else TrainState()
    scored = average.module if average is not None else model
    started = time.monotonic()
    while (reason := _stop_reason(state, settings, started)) is None:
        epoch_started = time.monotonic()
        loss = train_epoch(
            model, optimizer, scheduler, train_data,
            settings=settings, state=state, device=device, average=average,
        )  # fmt: skip
        dev_scores = _score(scored, vocabs, dev, settings)
        improved = state.record(dev_scores)
        if improved:
            writer.save_best(scored, state)
        writer.save_last(model, optimizer, scheduler, state, average)
        lr = scheduler.get_last_lr()[0]
        seconds = round(time.monotonic() - epoch_started, 3)
        _report_epoch(writer, state, loss=loss, lr=lr, dev=dev_scores, seconds=seconds)
    best = state.best_dev.las if state.best_dev is not None else float("nan")
    log.info("stopped (%s) after epoch %d", reason, state.epoch)
    log.info("best dev LAS %.2f at epoch %d", best, state.best_epoch)
    return state, reason


def _report_epoch(
    writer: RunWriter,
    state: TrainState,
    *,
    loss: float,
    lr: float,
    dev: AttachmentScores,
    seconds: float,
) -> None:
    record = {"event": "epoch", "epoch": state.epoch, "step": state.step, "lr": lr}
    record |= {"train_loss": loss, "dev": dev.to_dict(), "best_epoch": state.best_epoch}
    writer.append_metrics(record | {"seconds": seconds})
    best = " (best so far)" if state.best_epoch == state.epoch else ""
    message = "epoch %d: loss %.4f, dev UAS %.2f LAS %.2f%s; step %d, lr %.3g, %.1fs"
    log.info(message, state.epoch, loss, dev.uas, dev.las, best, state.step, lr, seconds)


def _score(
    model: nn.Module, vocabs: Vocabs, sentences: Sequence[Sentence], settings: FitSettings
) -> AttachmentScores:
    options = {"max_tokens": settings.eval_max_tokens, "exclude_punct": settings.exclude_punct}
    return evaluate(model, vocabs, sentences, decoder=settings.decoder, **options)


def _stop_reason(state: TrainState, settings: FitSettings, started: float) -> str | None:
    if state.epoch >= settings.max_epochs:
        return "max_epochs"
    if settings.patience is not None and state.bad_epochs >= settings.patience:
        return "patience"
    if settings.max_steps is not None and state.step >= settings.max_steps:
        return "max_steps"
    if settings.max_minutes is not None and time.monotonic() - started >= 60 * settings.max_minutes:
        return "max_minutes"
    return None


def train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Scheduler,
    train_data: Sequence[Encoded],
    *,
    settings: FitSettings,
    state: TrainState,
    device: torch.device | str = "cpu",
    average: AveragedModel | None = None,
) -> float:
    """One pass over shuffled token-budget batches; advances ``state.epoch`` and ``state.step``.

    ``average``, if given, takes the weights after every optimizer step.

    Returns:
        The mean training loss per word.

    Raises:
        FloatingPointError: if the loss becomes NaN or infinite.
    """
    model.train()
    state.epoch += 1
    batches = list(
        batches_by_tokens(
            train_data, settings.max_tokens, shuffle=True, seed=settings.seed, epoch=state.epoch
        )
    )
    total, words = 0.0, 0
    bar = tqdm(
        batches,
        desc=f"epoch {state.epoch}",
        disable=not settings.progress_bar,
        leave=False,
        dynamic_ncols=True,
    )
    for batch in bar:
        loss = _train_step(model, optimizer, batch.to(device), settings.clip)
        if not math.isfinite(loss):
            raise FloatingPointError(
                f"loss is {loss} at epoch {state.epoch}, step {state.step + 1}"
            )
        scheduler.step()
        if average is not None:
            average.update_parameters(model)
        state.step += 1
        n = int(batch.lengths.sum())
        total, words = total + loss * n, words + n
        bar.set_postfix(loss=f"{total / words:.4f}", refresh=False)
        if settings.max_steps is not None and state.step >= settings.max_steps:
            break
    bar.close()
    return total / max(words, 1)


def _train_step(
    model: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch, clip: float | None
) -> float:
    optimizer.zero_grad(set_to_none=True)
    loss = model.loss(model(batch), batch)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def evaluate(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    *,
    decoder: DecoderSettings,
    max_tokens: int = 5000,
    exclude_punct: bool = False,
) -> AttachmentScores:
    """Parse gold sentences with ``decoder`` and score the result against them."""
    predicted = parse(
        model,
        vocabs,
        sentences,
        algorithm=decoder.algorithm,
        root_constraint=decoder.root_constraint,
        max_tokens=max_tokens,
    )
    return score_corpus(sentences, predicted, exclude_punct=exclude_punct)


def _test_best(
    model: nn.Module,
    vocabs: Vocabs,
    test: list[Sentence] | None,
    settings: FitSettings,
    writer: RunWriter,
) -> AttachmentScores | None:
    if test is None:
        log.info("no test split: skipping the final test evaluation")
        return None
    best = checkpoint.load(writer.run_dir / BEST)
    model.load_state_dict(best.state_dict)
    scores = _score(model, vocabs, test, settings)
    epoch = best.metadata["progress"]["best_epoch"]
    writer.append_metrics({"event": "test", "epoch": epoch, "test": scores.to_dict()})
    log.info("test (best model, epoch %d): UAS %.2f LAS %.2f", epoch, scores.uas, scores.las)
    return scores
