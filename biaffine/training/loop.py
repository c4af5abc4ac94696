"""The model-agnostic training loop: epochs of token-budget batches, dev scoring, checkpoints.

Typed arguments only (no config): :mod:`biaffine.training.compose` builds them. Any parser that
follows :class:`biaffine.parsers.base.Parser` trains here: ``loss(model(batch), batch)``.

Under ``torchrun`` (:mod:`biaffine.distributed`) the same loop runs on every rank with the
loss wrapped in DDP (:func:`training_module`): an optimizer step takes ``processes x
accumulate`` consecutive batches of the epoch's plan, and rank 0 alone scores and writes.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.swa_utils import AveragedModel
from tqdm import tqdm

from biaffine import distributed
from biaffine.cli import check_positive, stop_if_terminated
from biaffine.data.batching import Batch, Encoded, collate, plan_batches
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.metrics import AttachmentScores, score_corpus
from biaffine.training.distill import Distillation, DistilledLoss
from biaffine.training.run_state import RunWriter, TrainState

__all__ = [
    "FitSettings",
    "ParserLoss",
    "Scheduler",
    "batch_seed",
    "fit",
    "score_parser",
    "train_epoch",
    "training_module",
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
        max_minutes: wall-clock budget of the run, across resumes (the training time of its
            earlier legs counts): stop at the first optimizer step past it, even within an
            epoch (that partial epoch is still scored on dev and checkpointed, and a resume
            starts the next epoch); None = no limit.
        exclude_punct: leave PUNCT out of dev scores.
        progress_bar: show a tqdm bar per epoch (on stderr).
        accumulate: batches each process adds up per optimizer step; a step consumes
            ``processes * accumulate`` batches (see :func:`train_epoch`).
        bf16: run forward passes and losses under ``torch.autocast`` in bfloat16, in
            training and when parsing dev (weights, gradients and the optimizer stay float32).
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
    accumulate: int = 1
    bf16: bool = False

    def __post_init__(self) -> None:
        """Refuse limits that train nothing, and a clipping norm that is not positive.

        Checked before the data is read (train.py): ``trainer.max_steps=0`` trained no epoch
        and was then blamed on ``max_epochs``.
        """
        names = ("max_epochs", "max_tokens", "eval_max_tokens", "accumulate", "max_steps")
        names += ("patience", "max_minutes")
        check_positive({name: getattr(self, name) for name in names}, "trainer")
        # clip_grad_norm_ scales the gradients by max_norm / norm: a negative one ascends
        if self.clip is not None and not self.clip > 0:
            raise ValueError(f"trainer.clip={self.clip}: give a positive norm, or null for none")


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
    distilled: Distillation | None = None,
) -> tuple[TrainState, str]:
    """Train epoch by epoch, score dev after each, keep ``best.pt`` and ``last.pt`` up to date.

    On several processes (:mod:`biaffine.distributed`), all train and rank 0 alone scores dev
    and writes; ``writer`` is only used on rank 0.

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
        average: a :func:`~biaffine.nn.averaging.weight_average` of ``model``, updated every
            step: dev is scored, and ``best.pt`` written, with its weights; None uses the
            model's own.
        distilled: the teachers' targets of ``train_data`` (:mod:`biaffine.training.distill`),
            added to the loss; None trains on the gold trees alone.

    Returns:
        The final progress, and why training stopped: ``max_epochs``, ``patience``,
        ``max_steps`` or ``max_minutes``.
    """
    state = state if state is not None else TrainState()
    here = distributed.world()
    loss_module = training_module(model, here, device, distilled)
    scored = average.module if average is not None else model
    # Where the run's clock would have started had it never stopped: earlier legs count.
    started = time.monotonic() - state.seconds
    minutes = settings.max_minutes
    deadline = started + 60 * minutes if minutes is not None else None
    # Rank 0's clock decides, so that all ranks run the same epochs.
    while (reason := distributed.broadcast(_stop_reason(state, settings, started), here)) is None:
        epoch_started = time.monotonic()
        loss = train_epoch(
            model, optimizer, scheduler, train_data,
            settings=settings, state=state, device=device, average=average, deadline=deadline,
            loss_module=loss_module,
        )  # fmt: skip
        if here.is_main:
            dev_scores = _score(scored, vocabs, dev, settings)
            state.seconds = time.monotonic() - started
            improved = state.record(dev_scores)
            if improved:
                writer.save_best(scored, state)
            lr = scheduler.get_last_lr()[0]
            seconds = round(time.monotonic() - epoch_started, 3)
            # The epoch's line before last.pt: a run stopped between them resumes from the epoch
            # before, whose resume drops the line (truncate_metrics) and trains the epoch again;
            # the other way round, the epoch's line was lost for good.
            _report_epoch(writer, state, loss=loss, lr=lr, dev=dev_scores, seconds=seconds)
            writer.save_last(model, optimizer, scheduler, state, average)
        # The other ranks wait here while rank 0 scores dev; they take its best and patience.
        state = distributed.broadcast(state, here)
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
    return score_parser(
        model, vocabs, sentences, decoder=settings.decoder, bf16=settings.bf16, **options
    )


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
    loss_module: nn.Module | None = None,
) -> float:
    """One pass over shuffled token-budget batches; advances ``state.epoch`` and ``state.step``.

    The epoch's batches are planned from ``settings.seed`` and the epoch alone, then cut into
    global batches of ``size * settings.accumulate`` consecutive batches, one per optimizer
    step: on a :class:`~biaffine.distributed.World` of ``size`` processes, rank ``r`` takes
    batches ``first + j * size + r`` of the global batch starting at ``first``. The gradient
    of a step is the mean of its batches' gradients, whatever ``size`` and ``accumulate`` are,
    and each batch draws its dropout from a seed of its own (:func:`batch_seed`), so the same
    global batches give the same weights on 2 processes as on 1 that accumulates 2 batches.

    ``average``, if given, takes the weights after every optimizer step. The pass ends early
    once ``settings.max_steps`` steps are done or ``time.monotonic()`` passes ``deadline``
    (on rank 0: all ranks stop at the same step).

    Args:
        model: the parser, on ``device``.
        optimizer: optimizer over its parameters.
        scheduler: stepped after every optimizer step.
        train_data: encoded training sentences.
        settings: loop settings.
        state: progress, advanced here.
        device: where batches go.
        average: weight average to update after every step, or None.
        deadline: a ``time.monotonic()`` after which to stop, or None.
        loss_module: :func:`training_module` of ``model`` (made here when None).

    Returns:
        The mean training loss per word, over all processes.

    Raises:
        FloatingPointError: if the loss becomes NaN or infinite.
    """
    here = distributed.world()
    device = torch.device(device)
    if loss_module is None:
        loss_module = training_module(model, here, device)
    loss_module.train()
    state.epoch += 1
    lengths = [len(e) for e in train_data]
    plan = plan_batches(
        lengths, settings.max_tokens, shuffle=True, seed=settings.seed, epoch=state.epoch
    )
    per_step = here.size * settings.accumulate
    total, words = 0.0, 0
    bar = tqdm(
        range(0, len(plan), per_step),
        desc=f"epoch {state.epoch}",
        disable=not (settings.progress_bar and here.is_main),
        leave=False,
        dynamic_ncols=True,
    )
    for first in bar:
        stop_if_terminated()  # a kill whose exception a weakref callback swallowed
        step = _GlobalBatch(plan, train_data, first, per_step, state.epoch)
        loss, n = _train_step(loss_module, optimizer, step, here, settings, device)
        late = deadline is not None and here.is_main and time.monotonic() >= deadline
        loss, n, late = distributed.sum_floats([loss, n, float(late)], here, device)
        if not math.isfinite(loss):
            raise FloatingPointError(
                f"loss is {loss} at epoch {state.epoch}, step {state.step + 1}"
            )
        scheduler.step()
        if average is not None:
            average.update_parameters(model)
        state.step += 1
        total, words = total + loss, words + int(n)
        bar.set_postfix(loss=f"{total / words:.4f}", refresh=False)
        if settings.max_steps is not None and state.step >= settings.max_steps:
            break
        if late:
            break
    bar.close()
    return total / max(words, 1)


class ParserLoss(nn.Module):
    """A parser's training loss as the forward of a module.

    :class:`~torch.nn.parallel.DistributedDataParallel` averages the gradients of the
    parameters its wrapped module's forward used; a parser's ``loss`` may use parameters of
    its own (the biaffine parser's label scorer), so the loss is computed inside the forward
    that DDP wraps.
    """

    def __init__(self, parser: nn.Module) -> None:
        """Wrap ``parser`` (a :class:`biaffine.parsers.base.Parser`)."""
        super().__init__()
        self.parser = parser

    def forward(self, batch: Batch) -> torch.Tensor:
        """``parser.loss(parser(batch), batch)``: a scalar."""
        return self.parser.loss(self.parser(batch), batch)


def training_module(
    model: nn.Module,
    here: distributed.World,
    device: torch.device | str,
    distilled: Distillation | None = None,
) -> nn.Module:
    """What a training step calls, wrapped in DDP on several processes.

    :class:`ParserLoss`, or :class:`~biaffine.training.distill.DistilledLoss` with the
    teachers' targets. DDP's constructor broadcasts rank 0's weights to every rank, so all
    start equal.
    """
    module = ParserLoss(model) if distilled is None else DistilledLoss(model, distilled)
    if here.size == 1:
        return module
    device = torch.device(device)
    ids = [device.index] if device.type == "cuda" else None
    return DistributedDataParallel(module, device_ids=ids)


def batch_seed(seed: int, epoch: int, index: int) -> int:
    """The torch seed of batch ``index`` of ``epoch``: its dropout, whichever process runs it."""
    return int(np.random.default_rng([seed, epoch, index]).integers(2**62))


@dataclass(frozen=True, slots=True)
class _GlobalBatch:
    """Batches ``first .. first + size - 1`` of an epoch's plan (fewer at the end of it)."""

    plan: list[np.ndarray]
    data: Sequence[Encoded]
    first: int
    size: int
    epoch: int

    @property
    def n_batches(self) -> int:
        return min(self.size, len(self.plan) - self.first)

    def batch(self, index: int) -> Batch:
        """Batch ``index`` of the epoch (global numbering)."""
        rows = self.plan[index]
        return collate([self.data[i] for i in rows], rows)


def _train_step(
    loss_module: nn.Module,
    optimizer: torch.optim.Optimizer,
    step: _GlobalBatch,
    here: distributed.World,
    settings: FitSettings,
    device: torch.device,
) -> tuple[float, int]:
    """One optimizer step on this rank's share of ``step``; returns its (loss * words, words)."""
    optimizer.zero_grad(set_to_none=True)
    total, words = 0.0, 0
    # Past the step's last batch no rank has one: trainer.accumulate=10**8 stepped through
    # 10**8 absent batches a step (one step of a short epoch took 24 s, 2**63 never ended).
    # Every rank counts the same rounds, and the last one's backward all-reduces.
    rounds = min(settings.accumulate, -(-step.n_batches // here.size))
    for j in range(rounds):
        index = step.first + j * here.size + here.rank
        present = index - step.first < step.n_batches
        if not present and here.size == 1:
            continue
        # A rank with no batch left in the epoch's last step still runs one, with weight 0,
        # because DDP's all-reduce needs every rank's backward.
        batch = step.batch(index if present else step.first).to(device)
        # DDP averages over ranks; the weight makes the step's gradient the mean over its
        # batches: sum_ranks sum_j (size / n) * grad_j / size.
        weight = here.size / step.n_batches if present else 0.0
        torch.manual_seed(batch_seed(settings.seed, step.epoch, index))
        last = j == rounds - 1
        sync = contextlib.nullcontext() if last or here.size == 1 else loss_module.no_sync()
        with sync:
            # The backward pass runs outside autocast, in the dtypes the forward recorded.
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=settings.bf16):
                loss = loss_module(batch)
            (loss * weight).backward()
        if present:
            n = int(batch.lengths.sum())
            total, words = total + loss.item() * n, words + n
    if settings.clip is not None:
        nn.utils.clip_grad_norm_(loss_module.parameters(), settings.clip)
    optimizer.step()
    return total, words


def score_parser(
    model: nn.Module,
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    *,
    decoder: DecoderSettings,
    max_tokens: int = 5000,
    exclude_punct: bool = False,
    bf16: bool = False,
) -> AttachmentScores:
    """Parse gold sentences with ``decoder`` (in bfloat16 if ``bf16``) and score the result."""
    predicted = parse(model, vocabs, sentences, decoder, max_tokens=max_tokens, bf16=bf16)
    return score_corpus(sentences, predicted, exclude_punct=exclude_punct)
