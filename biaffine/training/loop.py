"""The model-agnostic training loop: epochs of token-budget batches, dev scoring, checkpoints.

Typed arguments only (no config): :mod:`biaffine.training.compose` builds them. Any parser that
follows :class:`biaffine.parsers.base.Parser` trains here: ``loss(model(batch), batch)``.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel
from tqdm import tqdm

from biaffine.data.batching import Batch, Encoded, batches_by_tokens
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.metrics import AttachmentScores, score_corpus
from biaffine.training.run_state import RunWriter, TrainState

__all__ = [
    "FitSettings",
    "Scheduler",
    "fit",
    "lr_decay_scheduler",
    "score_parser",
    "train_epoch",
    "weight_average",
]

log = logging.getLogger(__name__)

Scheduler = torch.optim.lr_scheduler.LRScheduler


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
        max_minutes: wall-clock budget: stop at the first optimizer step past it, even within
            an epoch (that partial epoch is still scored on dev and checkpointed, and a resume
            starts the next epoch); None = no limit.
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
        model: a parser (:class:`biaffine.parsers.base.Parser`) on ``device``.
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
    minutes = settings.max_minutes
    deadline = started + 60 * minutes if minutes is not None else None
    while (reason := _stop_reason(state, settings, started)) is None:
        epoch_started = time.monotonic()
        loss = train_epoch(
            model, optimizer, scheduler, train_data,
            settings=settings, state=state, device=device, average=average, deadline=deadline,
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
    return score_parser(model, vocabs, sentences, decoder=settings.decoder, **options)


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
    deadline: float | None = None,
) -> float:
    """One pass over shuffled token-budget batches; advances ``state.epoch`` and ``state.step``.

    ``average``, if given, takes the weights after every optimizer step. The pass ends early
    once ``settings.max_steps`` steps are done or ``time.monotonic()`` passes ``deadline``.

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
        if deadline is not None and time.monotonic() >= deadline:
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


def score_parser(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    *,
    decoder: DecoderSettings,
    max_tokens: int = 5000,
    exclude_punct: bool = False,
) -> AttachmentScores:
    """Parse gold sentences with ``decoder`` and score the result against them."""
    predicted = parse(model, vocabs, sentences, decoder, max_tokens=max_tokens)
    return score_corpus(sentences, predicted, exclude_punct=exclude_punct)
