"""The composition root of training: the only module below ``train.py`` that reads a Hydra config.

:func:`train` turns the composed ``conf/train.yaml`` into typed objects (data splits,
vocabularies, a parser of any registered kind, optimizer, settings) and hands them to the
model-agnostic loop :func:`biaffine.training.loop.fit`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import torch
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.optim.swa_utils import AveragedModel

from biaffine import checkpoint, distributed
from biaffine.cli import USER_ERROR_STATUS, print_error, report_user_errors
from biaffine.data import treebanks
from biaffine.data.batching import encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs, build_vocabs
from biaffine.files import atomic_open
from biaffine.inference import DecoderSettings
from biaffine.metrics import AttachmentScores
from biaffine.nn.averaging import weight_average as make_weight_average
from biaffine.nn.transformer import TransformerEmbedding
from biaffine.parsers import PARSERS, build_parser
from biaffine.parsers.ensemble import EnsembleParser
from biaffine.runtime import check_bf16, seed_everything, select_device, set_threads
from biaffine.training.distill import check_teachers, distillation, load_teachers
from biaffine.training.loop import FitSettings, Scheduler, fit, score_parser
from biaffine.training.optim import lr_decay_scheduler, parameter_groups
from biaffine.training.run_state import (
    BEST,
    CONFIG,
    HYDRA_RECORD,
    RunFolderError,
    RunLog,
    RunWriter,
    TrainState,
    carry_history,
    find_resume_checkpoint,
    locked_run_dir,
    remove_stale_temporaries,
    remove_unused_run_dir,
    restore,
    resumes_in,
    run_files,
    start_afresh,
    writing,
)

__all__ = [
    "RESUMABLE_CHANGES",
    "HeldRunFolder",
    "TrainResult",
    "build_model",
    "check_resume_config",
    "check_resume_processes",
    "fit_settings",
    "given_settings",
    "in_held_run_folder",
    "init_weights",
    "load_splits",
    "train",
]

log = logging.getLogger(__name__)
T = TypeVar("T")


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


def train(
    cfg: DictConfig, run_dir: Path, *, on_start: Callable[[Path], None] | None = None
) -> TrainResult:
    """Train a parser as configured, then score its best checkpoint on test.

    Args:
        cfg: the composed ``conf/train.yaml`` (groups data, model, optimizer, trainer, decoder).
        run_dir: folder for checkpoints, ``metrics.jsonl`` and ``config.yaml``; locked for the
            whole run (see :func:`~biaffine.training.run_state.locked_run_dir`).
        on_start: called with ``run_dir`` once the folder is locked and ready, after the
            data is read (``train.py`` writes Hydra's record there and opens ``train.log``).

    Under ``torchrun`` (an open process group, see :mod:`biaffine.distributed`) every rank
    calls this: all train with DDP, rank 0 alone locks, scores dev and test and writes into
    ``run_dir``; every rank returns the same result.

    Returns:
        Best dev scores, test scores of the best model (None without a test split), epochs run.

    Raises:
        RunFolderError: another run writes to ``run_dir``, or it holds an earlier run's
            results and neither ``trainer.resume`` nor ``trainer.overwrite`` is set (nothing in
            ``run_dir`` is touched).
        DiskFullError: no space left while writing a file of the run.
        ValueError: among others, when resuming with settings the interrupted run did not have,
            or when a file the run reads (a treebank split, ``trainer.init_from``) is one it
            writes or removes in ``run_dir`` (before anything in ``run_dir`` is touched).
    """
    run_dir = Path(run_dir)
    here = distributed.world()
    t = cfg.trainer
    if t.bf16:  # refused before the run folder is touched
        check_bf16(select_device(cfg.trainer.device), setting="trainer.bf16")
    treebanks.refuse_written_inputs(_inputs(cfg), run_files(run_dir))
    # Read before the run folder is touched: a treebank or init_from that cannot be read
    # refused the run after trainer.overwrite=true had removed the earlier one.
    initial = None if t.resume else _initial(t.get("init_from"))
    inputs = _Inputs(load_splits(cfg.data), initial, _teachers(cfg))
    if not t.resume:
        inputs = _checked_start(cfg, inputs)
    with _opened_run_dir(cfg, run_dir, here, on_start, inputs.teachers) as resumed:
        return _train_in(cfg, run_dir, here, resumed, inputs)


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A run's training data and what it starts from, read and checked once."""

    sentences: list[Sentence]  # the training sentences as the parser learns from them
    vocabs: Vocabs
    model: nn.Module | None  # built (from the seed, or with trainer.init_from's weights)
    seeded: torch.Tensor | None = None  # torch's RNG state right after the seed built it


@dataclass(frozen=True, slots=True)
class _Inputs:
    """What a run reads besides the folder it resumes: the treebank, the start's checkpoint."""

    splits: treebanks.Splits
    initial: checkpoint.Checkpoint | None  # trainer.init_from's, for a run that resumes none
    teachers: list[tuple[nn.Module, Vocabs]]  # trainer.distill_from's, emptied once they taught
    prepared: _Prepared | None = None  # a new run's, by _checked_start


def _checked_start(cfg: DictConfig, inputs: _Inputs) -> _Inputs:
    """``inputs`` with a new run's training data, once what it starts from is checked.

    Before the run folder is touched: ``trainer.overwrite=true`` removed the earlier run's
    best.pt, last.pt and metrics, then ``trainer.init_from`` (relations it lacks, another kind
    of parser or config), ``trainer.distill_from`` (a teacher missing or of another kind, a
    negative weight) or a model setting that builds no network (``lstm_hidden=-3``, a missing
    vectors file) refused the run. The model is built here, from the seed as the training
    would build it once the folder is ready, and the training goes on from the random state
    its building left (:attr:`_Prepared.seeded`): the same weights as when it was built there.

    Raises:
        ValueError: naming the setting (one line).
    """
    prepared = _prepare(cfg, inputs.splits, inputs.initial, inputs.initial, inputs.teachers)
    if prepared.model is None:  # a model setting that builds none refused the run, once cleared
        seed_everything(cfg.trainer.seed)  # as _train_in seeds: the same first weights
        set_threads(cfg.trainer.threads)
        model = build_model(cfg.model, prepared.vocabs)
        prepared = replace(prepared, model=model, seeded=torch.get_rng_state())
    return replace(inputs, prepared=prepared)


def _teachers(cfg: DictConfig) -> list[tuple[nn.Module, Vocabs]]:
    """The teachers ``trainer.distill_from`` names, read before the run folder is touched.

    Raises:
        ValueError: a student that is no graph parser, a negative weight, a teacher that
            cannot be read or is no graph parser (one line each).
    """
    t = cfg.trainer
    paths = t.get("distill_from") or []
    if not paths:
        return []
    if getattr(PARSERS.get(cfg.model.kind), "family", None) != "graph":
        raise ValueError(
            "trainer.distill_from: only a graph parser (model=biaffine) can be distilled"
        )
    if t.get("distill_weight", 1.0) < 0:
        raise ValueError(f"trainer.distill_weight={t.distill_weight} must be >= 0")
    return load_teachers(paths)


def _prepare(
    cfg: DictConfig,
    splits: treebanks.Splits,
    source: checkpoint.Checkpoint | None,
    initial: checkpoint.Checkpoint | None,
    teachers: list[tuple[nn.Module, Vocabs]],
) -> _Prepared:
    """The training data and the model ``initial`` (``trainer.init_from``) loads, if given.

    The vocabularies are those of ``source`` (a resumed run or ``initial``) if given; the
    ``teachers`` are checked against them.

    Raises:
        ValueError: naming the setting (one line).
    """
    t = cfg.trainer
    if initial is not None:  # before its relations: those of another kind of parser differ
        refuse_other_kind(initial, cfg.model.kind, f"trainer.init_from={t.init_from}")
    sentences, vocabs = _training_data(cfg, splits, source)
    model = None
    if initial is not None:
        model = build_model(cfg.model, vocabs)
        init_weights(model, initial, f"trainer.init_from={t.init_from}")
    check_teachers(teachers, t.get("distill_from") or [], vocabs)
    return _Prepared(sentences, vocabs, model)


def _inputs(cfg: DictConfig) -> dict[str, str | Path | None]:
    """The files a run reads, by setting: the treebank's splits and the checkpoints it starts from.

    ``trainer.resume_from`` is left out: continuing the run in its own folder is what it is for.
    """
    t = cfg.trainer
    paths = {f"data.{split}": path for split, path in treebanks.configured_paths(cfg.data).items()}
    paths["trainer.init_from"] = t.get("init_from")
    for k, path in enumerate(t.get("distill_from") or []):
        paths[f"trainer.distill_from[{k}]"] = path
    return paths


@contextlib.contextmanager
def _opened_run_dir(
    cfg: DictConfig,
    run_dir: Path,
    here: distributed.World,
    on_start: Callable[[Path], None] | None,
    teachers: list[tuple[nn.Module, Vocabs]],
) -> Iterator[checkpoint.Checkpoint | None]:
    """Rank 0 locks and readies ``run_dir`` for the block; every rank gets the checkpoint to resume.

    A refusal on rank 0 is raised on every rank, so that none trains alone.
    """
    t = cfg.trainer
    with contextlib.ExitStack() as held:
        resumed, refusal = None, None
        if here.is_main:
            try:
                held.enter_context(locked_run_dir(run_dir))
                resumed = _ready_run_dir(cfg, run_dir, on_start, teachers)
            except Exception as error:  # raised below, on every rank
                refusal = error
        message = distributed.broadcast(None if refusal is None else str(refusal), here)
        if refusal is not None:
            raise refusal
        if message is not None:
            raise RunFolderError(message)
        if not here.is_main:
            resumed = find_resume_checkpoint(t.resume, t.resume_from, run_dir)
        yield resumed


def _ready_run_dir(
    cfg: DictConfig,
    run_dir: Path,
    on_start: Callable[[Path], None] | None,
    teachers: list[tuple[nn.Module, Vocabs]],
) -> checkpoint.Checkpoint | None:
    """Check what this run may do with the locked ``run_dir``; then clear it or keep the run.

    A resume's ``teachers`` are checked against its vocabularies here, before anything is
    written (a teacher of other vocabularies refused it once its config was rewritten).

    Returns:
        The ``last.pt`` to resume, or None for a new run.
    """
    t = cfg.trainer
    resumed = find_resume_checkpoint(t.resume, t.resume_from, run_dir)
    if resumed is not None:
        check_resume_config(resumed.metadata.get("config"), cfg, given_settings())
        check_resume_processes(resumed.metadata.get("processes"), distributed.world().size)
        check_teachers(teachers, t.get("distill_from") or [], resumed.vocabs)
    if resumed is not None and resumes_in(t.resume_from, run_dir):
        if t.overwrite:
            raise RunFolderError(
                f"trainer.overwrite=true would remove the run in {run_dir} that "
                "trainer.resume=true continues: pass one of them"
            )
    else:
        start_afresh(run_dir, overwrite=t.overwrite)
        carry_history(t.resume_from if resumed is not None else None, run_dir)
    for name in remove_stale_temporaries(run_dir):  # once nothing refuses the run
        log.info("removed %s, which a killed run left in %s", name, run_dir)
    config = run_dir / CONFIG
    with writing(config, run_dir), atomic_open(config, "w", encoding="utf-8") as out:
        OmegaConf.save(cfg, out, resolve=True)
    if on_start is not None:
        on_start(run_dir)
    return resumed


@dataclass(frozen=True, slots=True)
class _Trainee:
    """What training updates: the model, its optimizer and schedule, the weight average."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Scheduler
    average: AveragedModel | None


def _train_in(
    cfg: DictConfig,
    run_dir: Path,
    here: distributed.World,
    resumed: checkpoint.Checkpoint | None,
    inputs: _Inputs,
) -> TrainResult:
    """Train into the ready ``run_dir``, from ``resumed`` if given; then score test."""
    t = cfg.trainer
    seed_everything(t.seed)
    set_threads(t.threads)
    device = distributed.local_device(select_device(t.device), here)
    if here.size > 1:
        log.info("training on %d processes (%s)", here.size, device.type)
    splits = inputs.splits
    # A resume has its own weights; a new run starts from the model _checked_start built.
    prepared = inputs.prepared if resumed is None else None
    if prepared is None:  # resumed, or resume=true found no run: init_from is not read
        prepared = _prepare(cfg, splits, resumed, None, inputs.teachers)
    if prepared.seeded is not None:  # the training's draws follow the model's, as they did
        torch.set_rng_state(prepared.seeded)
    train_sentences, vocabs = prepared.sentences, prepared.vocabs
    _log_data(splits, vocabs)  # here, in the run's log: its "train:" line starts a leg
    trainee = _trainee(cfg, vocabs, device, prepared.model)
    writer = _run_writer(cfg, run_dir, trainee.model, vocabs)
    state = _restore(resumed, trainee, writer, here)
    settings = fit_settings(cfg)
    train_data = encode(train_sentences, vocabs)
    distilled = distillation(
        inputs.teachers, t.get("distill_weight", 1.0), train_sentences,
        max_tokens=t.eval_max_tokens,
    )  # fmt: skip
    inputs.teachers.clear()  # their targets are all the run needs of them: hours less memory
    state, reason = fit(
        trainee.model, trainee.optimizer, trainee.scheduler, train_data, splits.dev, vocabs,
        settings=settings, writer=writer, device=device, state=state, average=trainee.average,
        distilled=distilled,
    )  # fmt: skip
    if state.best_dev is None:
        raise ValueError("no epoch was trained: trainer.max_epochs must be at least 1")
    test = (
        _test_best(trainee.model, vocabs, splits.test, settings, writer) if here.is_main else None
    )
    test = distributed.broadcast(test, here)
    return TrainResult(
        state.best_dev, test, state.best_epoch, state.epoch, state.step, reason, run_dir
    )


def _training_data(
    cfg: DictConfig, splits: treebanks.Splits, source: checkpoint.Checkpoint | None
) -> tuple[list[Sentence], Vocabs]:
    """The training sentences as the parser learns from them, and the vocabularies.

    A run that starts from a checkpoint (``source``: resumed, or ``trainer.init_from``) keeps
    its vocabularies, which its weights index.
    """
    train_sentences = prepare_training(cfg.model, splits.train)
    if source is not None:
        vocabs = source.vocabs
        _refuse_unknown_relations(train_sentences, vocabs, cfg.trainer.get("init_from"))
    else:
        vocabs = training_vocabs(
            splits.train, train_sentences, min_word_count=cfg.trainer.min_word_count
        )
    return train_sentences, vocabs


def _refuse_unknown_relations(
    sentences: list[Sentence], vocabs: Vocabs, init_from: str | None
) -> None:
    """Refuse training data with relations the vocabularies kept from a checkpoint lack.

    ``trainer.init_from`` a run of another treebank trained on, its labels the checkpoint's:
    the relations it lacks were never learnt (their targets ignored), without a word.

    Raises:
        ValueError: naming a few of the relations.
    """
    missing = sorted({r for s in sentences for r in s.deprels} - set(vocabs.rels.stoi))
    if missing:
        where = f"trainer.init_from={init_from}" if init_from else "the checkpoint resumed"
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"{where} knows no relation {shown} of the training data: its vocabularies, kept, "
            "are another treebank's; start from a run on this one"
        )


def _trainee(
    cfg: DictConfig, vocabs: Vocabs, device: torch.device, model: nn.Module | None
) -> _Trainee:
    """The configured model on ``device``, with its optimizer, schedule and weight average.

    ``model``: the one built before the run folder was touched (from the seed, or with
    ``trainer.init_from``'s weights); None builds it (after the seed is set).
    """
    t = cfg.trainer
    if model is None:
        model = build_model(cfg.model, vocabs)
    elif t.get("init_from"):  # here, in the run's log, where a run's start is read
        log.info("weights from %s", t.init_from)
    log.info("model: %s parameters", f"{sum(p.numel() for p in model.parameters()):,}")
    log.debug("%s", model)
    model = model.to(device)
    groups = parameter_groups(model, transformer_lr=t.transformer_lr, layer_decay=t.layer_decay)
    optimizer = instantiate(cfg.optimizer, _convert_="all")(groups)
    scheduler = lr_decay_scheduler(
        optimizer, rate=t.lr_decay, steps=t.lr_decay_steps, warmup=t.warmup_steps
    )
    average = make_weight_average(model, t.ema_decay) if t.ema_decay is not None else None
    return _Trainee(model, optimizer, scheduler, average)


def _initial(path: str | None) -> checkpoint.Checkpoint | None:
    """The checkpoint ``trainer.init_from`` names, or None.

    Raises:
        ValueError: naming the key and the path (one line).
    """
    if path is None:
        return None
    try:
        return checkpoint.load(path)
    except ValueError as error:
        raise ValueError(f"trainer.init_from={path}: {error}") from None


INIT_CHANGES = ("beam_loss", "encoder.transformer.finetune", "encoder.transformer.cache")
INIT_CHANGES += ("encoder.finetune", "encoder.cache")
"""Model options a run from ``trainer.init_from`` may change: the beam loss (beam training
starts from a locally trained model), and whether a transformer (BiLSTM input or the encoder
itself) is fine-tuned: one frozen there keeps the weights of its folder, as it had them."""


def refuse_other_kind(saved: checkpoint.Checkpoint, kind: str, where: str) -> None:
    """Refuse a checkpoint of another kind of parser than ``kind``, naming ``where``.

    Raises:
        ValueError: one line.
    """
    if saved.parser != kind:
        raise ValueError(f"{where}: holds a {saved.parser} parser, this run a {kind} one")


def init_weights(model: nn.Module, saved: checkpoint.Checkpoint, where: str) -> None:
    """Load the weights of ``saved`` into ``model``, built on the checkpoint's vocabularies.

    Only the weights: the optimizer, schedule and progress of that run are left behind. The
    checkpoint must hold a parser of the same kind and config but for :data:`INIT_CHANGES`.
    A transformer frozen there and fine-tuned here has no weights in the checkpoint: it keeps
    those of its folder (the same files: their checksum is in the config).

    Raises:
        ValueError: naming ``where`` and what differs (one line).
    """
    refuse_other_kind(saved, model.kind, where)
    old, new = _flatten(saved.model_config), _flatten(model.config())
    differing = sorted(
        key
        for key in old.keys() | new.keys()
        if old.get(key) != new.get(key)
        and not any(key == c or key.startswith(f"{c}.") for c in INIT_CHANGES)
    )
    if differing:
        changes = ", ".join(f"model.{k}={new.get(k)!r} (was {old.get(k)!r})" for k in differing)
        raise ValueError(f"{where}: another model config: {changes}; only beam_loss may differ")
    tuned = tuple(
        f"{name}.model." for name, module in model.named_modules()
        if isinstance(module, TransformerEmbedding) and module.finetune
    )  # fmt: skip
    found = model.load_state_dict(saved.state_dict, strict=False)
    missing = [key for key in found.missing_keys if not key.startswith(tuned)]
    if missing or found.unexpected_keys:
        raise ValueError(f"{where}: weights do not fit: {[*missing, *found.unexpected_keys][:3]}")


def _run_writer(cfg: DictConfig, run_dir: Path, model: nn.Module, vocabs: Vocabs) -> RunWriter:
    """The writer of this run's checkpoints (carrying the resolved config) and metrics."""
    metadata = {"config": OmegaConf.to_container(cfg, resolve=True), "treebank": cfg.data.treebank}
    metadata["processes"] = distributed.world().size  # a resume must train on as many
    return RunWriter(
        run_dir, parser=model.kind, model_config=model.config(), vocabs=vocabs, metadata=metadata
    )


def _restore(
    resumed: checkpoint.Checkpoint | None,
    trainee: _Trainee,
    writer: RunWriter,
    here: distributed.World,
) -> TrainState | None:
    """Load the resumed run's states into ``trainee``; its progress (None for a new run)."""
    if resumed is None:
        return None
    state = restore(resumed, trainee.model, trainee.optimizer, trainee.scheduler, trainee.average)
    if here.is_main:
        writer.truncate_metrics(state.epoch)
    log.info("resumed after epoch %d (step %d)", state.epoch, state.step)
    return state


RESUMABLE_CHANGES = frozenset(
    {
        *("trainer.resume", "trainer.resume_from", "trainer.overwrite"),
        *("trainer.max_epochs", "trainer.max_steps"),
        *("trainer.max_minutes", "trainer.patience", "trainer.eval_max_tokens"),
        *("trainer.progress_bar", "trainer.device", "trainer.threads"),
        *("data.root", "data.download", "data.base_url"),
    }
)
"""Config keys a resumed run may change: limits, where things run, where the data lies. Not
``trainer.init_from``, which a resumed run does not read (it continues from its own weights): a
start given anew was ignored in silence, and one dropped was lost from the run's record, which
the next leg, resumed with the first command, then contradicted."""


def check_resume_config(
    saved: Mapping[str, Any] | None, cfg: DictConfig, given: Iterable[str] = ()
) -> None:
    """Refuse to resume with settings that differ from the interrupted run's.

    Args:
        saved: the resolved config stored in the resumed checkpoint (None in files that lack it:
            nothing to compare).
        cfg: the config of this run.
        given: the settings this run's command line names (:func:`given_settings`).

    Raises:
        ValueError: naming each key both configs hold, outside :data:`RESUMABLE_CHANGES`, whose
            values differ, with both values, and each key the command line adds or removes.
    """
    if saved is None:
        return
    old = _flatten(saved)
    new = _flatten(OmegaConf.to_container(cfg, resolve=True))
    shared = (old.keys() & new.keys()) - RESUMABLE_CHANGES
    changes = [
        f"{key}={new[key]!r} (was {old[key]!r})" for key in sorted(shared) if old[key] != new[key]
    ]
    # Other keys only one side has are left alone: a newer release may add settings, whose
    # defaults the interrupted run cannot contradict. One the command line adds was not read:
    # the saved optimizer state kept its amsgrad, the saved weights lacked a projection.
    given = tuple(given)
    named = [key for key in sorted(old.keys() ^ new.keys()) if _under_any(key, given)]
    changes += [
        f"{key}={new[key]!r} (the interrupted run had no such setting)"
        if key in new
        else f"{key} removed (was {old[key]!r})"
        for key in named
    ]
    if changes:
        changes_text = ", ".join(changes)
        raise ValueError(
            f"cannot resume with settings the interrupted run did not have: {changes_text}; "
            "drop those overrides, or start a new run"
        )


def given_settings() -> frozenset[str]:
    """The keys the command line sets, adds (``+``) or removes (``~``); none outside Hydra."""
    if not HydraConfig.initialized():
        return frozenset()
    task = HydraConfig.get().overrides.task
    return frozenset(item.split("=", 1)[0].lstrip("+~") for item in task)


def _under_any(key: str, sections: Iterable[str]) -> bool:
    """Whether ``key`` is one of ``sections`` or inside one (``model.encoder`` holds its keys)."""
    return any(key == section or key.startswith(f"{section}.") for section in sections)


def check_resume_processes(saved: int | None, processes: int) -> None:
    """Refuse to resume on another number of processes than the interrupted run trained on.

    A step takes a batch from each process (:func:`biaffine.training.loop.train_epoch`): on
    another number the steps, their batches and so the weights are another run's, as with
    another ``trainer.accumulate``, which the config check refuses.

    Args:
        saved: the interrupted run's (None in checkpoints written before it was kept).
        processes: this run's.

    Raises:
        ValueError: naming both numbers.
    """
    if saved is not None and saved != processes:
        raise ValueError(
            f"cannot resume on {processes} process(es) a run trained on {saved}: its steps "
            f"would take other batches (torchrun --nproc_per_node={saved}), or start a new run"
        )


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat |= _flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_splits(d: Mapping[str, Any], *, root: str | Path | None = None) -> treebanks.Splits:
    """The splits a ``data`` config names (a ``conf/data/*.yaml`` node, or its plain dict copy).

    Args:
        d: the data config: ``root``, ``treebank``, ``train``/``dev``/``test``, ``download``,
            ``base_url``, ``dev_fraction``, ``split_seed``, and ``discover`` (find the splits
            named null on disk, see :func:`biaffine.data.treebanks.discover_files`).
        root: a UD root to use instead of ``d["root"]`` (experiments reading a stored config).
    """
    folder, names = treebanks.configured_names(d, root=root)
    options = {"download": d["download"], "base_url": d["base_url"]}
    options |= {"dev_fraction": d["dev_fraction"], "split_seed": d["split_seed"]}
    return treebanks.load_splits(folder, d["treebank"], names, **options)


def prepare_training(model_cfg: DictConfig, sentences: list[Sentence]) -> list[Sentence]:
    """The training sentences as the configured parser learns from them.

    A parser class may transform them before the vocabularies are built, with a classmethod
    ``prepare_training(sentences, options)`` (e.g. pseudo-projective trees, whose encoded
    labels the relation vocabulary must hold); the others take them as they are.
    """
    prepare = getattr(parser_class(model_cfg.kind), "prepare_training", None)
    if prepare is None:
        return sentences
    options = OmegaConf.to_container(model_cfg, resolve=True)
    return prepare(sentences, {k: v for k, v in options.items() if k != "encoder"})


def training_vocabs(
    original: list[Sentence], prepared: list[Sentence], *, min_word_count: int
) -> Vocabs:
    """Vocabularies of the prepared training sentences, with the original relations as well.

    The relation vocabulary holds both the labels the parser learns (e.g. encoded
    pseudo-projective ones) and the treebank's own, which deprojectivized output carries.
    """
    original_rels = (rel for sentence in original for rel in sentence.deprels)
    return build_vocabs(prepared, min_word_count=min_word_count, extra_rels=original_rels)


def parser_class(kind: str) -> type:
    """The parser class a model config names by ``kind``.

    Raises:
        ValueError: a kind missing from :data:`biaffine.parsers.PARSERS`.
    """
    if kind not in PARSERS:
        raise ValueError(f"model.kind={kind!r}; known kinds: {', '.join(sorted(PARSERS))}")
    return PARSERS[kind]


def build_model(model_cfg: DictConfig, vocabs: Vocabs) -> nn.Module:
    """The configured parser (``kind``) on its configured encoder (``encoder.kind``).

    Both come from the registries checkpoints are loaded with
    (:func:`biaffine.parsers.build_parser`) and are sized by the vocabularies.

    Raises:
        ValueError: an unknown kind, a config that does not fit it, or an ensemble (assembled
            from trained parsers, never trained).
    """
    options = OmegaConf.to_container(model_cfg, resolve=True)
    kind = options.pop("kind")
    if kind == EnsembleParser.kind:
        raise ValueError(
            "model.kind=ensemble is not trained: train its members, then join them with "
            "python -m biaffine.training.ensemble"
        )
    return build_parser(kind, vocabs, options)


def fit_settings(cfg: DictConfig) -> FitSettings:
    """The typed :class:`FitSettings` of a composed training config."""
    t = cfg.trainer
    return FitSettings(
        max_epochs=t.max_epochs,
        max_tokens=t.max_tokens,
        eval_max_tokens=t.eval_max_tokens,
        seed=t.seed,
        decoder=_dev_decoder(cfg),
        patience=t.patience,
        clip=t.clip,
        max_steps=t.max_steps,
        max_minutes=t.max_minutes,
        exclude_punct=t.exclude_punct,
        progress_bar=t.progress_bar,
        accumulate=t.accumulate,
        bf16=t.bf16,
    )


def _dev_decoder(cfg: DictConfig) -> DecoderSettings:
    """How dev and test are parsed: the settings the model's family reads (see ``read_by``)."""
    settings = DecoderSettings.from_config(cfg.decoder, cfg.get("search"))
    family = getattr(PARSERS.get(cfg.model.get("kind")), "family", None)
    return settings if family is None else settings.read_by(family)


def _log_data(splits: treebanks.Splits, vocabs: Vocabs) -> None:
    for name in ("train", "dev", "test"):
        sentences = getattr(splits, name)
        if sentences is not None:
            words = sum(len(s) for s in sentences)
            log.info("%s: %d sentences, %d words", name, len(sentences), words)
    log.info("vocabulary sizes: %s", vocabs.sizes())


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
    options = {"max_tokens": settings.eval_max_tokens, "exclude_punct": settings.exclude_punct}
    scores = score_parser(
        model, vocabs, test, decoder=settings.decoder, bf16=settings.bf16, **options
    )
    epoch = best.metadata["progress"]["best_epoch"]
    writer.append_metrics({"event": "test", "epoch": epoch, "test": scores.to_dict()})
    log.info("test (best model, epoch %d): UAS %.2f LAS %.2f", epoch, scores.uas, scores.las)
    return scores


_STARTED_JOBS: list[int] = []
"""The jobs of this process's sweep (``-m``) started, by number."""
_REFUSED_JOBS: list[int] = []
"""The jobs of this process's sweep refused for a user error, by number."""


def _every_job_refused() -> bool:
    return bool(_STARTED_JOBS) and len(_REFUSED_JOBS) == len(_STARTED_JOBS)


def in_held_run_folder(task: Callable[[HeldRunFolder], T]) -> T | float:
    """Run ``task`` in Hydra's run folder, held until the run starts (:class:`HeldRunFolder`).

    A user error is one line and exit status 2 (:func:`biaffine.cli.report_user_errors`), and
    the folder goes if Hydra made it for this run and the run wrote nothing there. In a sweep
    the line names the job, which returns NaN, and the sweep goes on with its other jobs
    (:func:`exit_if_jobs_refused` ends it): ``trainer.max_epochs=2,0,3`` ran no job after 0.
    """
    hydra = HydraConfig.get()
    held = HeldRunFolder(Path(hydra.runtime.output_dir))
    if hydra.mode != RunMode.MULTIRUN:
        return report_user_errors(lambda: task(held), on_error=held.clean_up)
    _STARTED_JOBS.append(hydra.job.num)
    try:
        where = f"job {hydra.job.num}"
        return report_user_errors(lambda: task(held), on_error=held.clean_up, where=where)
    except SystemExit as stop:
        if stop.code != USER_ERROR_STATUS:
            raise  # Ctrl-C, SIGTERM: the whole sweep stops
        _REFUSED_JOBS.append(hydra.job.num)
        return math.nan


class SweepRecord(Callback):
    """Leaves a sweep folder as it was when a sweep into it has every job refused.

    Hydra rewrites that record before the first job starts: the same sweep run again into the
    same ``hydra.sweep.dir`` (each job refused, its folder holding a run) replaced the settings
    of the sweep whose runs are there. Registered in the configs' ``hydra.callbacks``.
    """

    def __init__(self) -> None:
        """Nothing held before a sweep starts."""
        self._record: Path | None = None
        self._earlier: bytes | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Read the record an earlier sweep left in the folder, if any."""
        self._record = Path(str(config.hydra.sweep.dir)) / "multirun.yaml"
        try:
            self._earlier = self._record.read_bytes()
        except OSError:  # none: a new folder
            self._earlier = None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """If no job of this sweep ran: the earlier record back, or the folder Hydra made gone."""
        if not _every_job_refused() or self._record is None:
            return
        if self._earlier is not None:
            with atomic_open(self._record, "wb") as out:
                out.write(self._earlier)
            return
        self._record.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # not empty: it holds what else was there
            self._record.parent.rmdir()


def exit_if_jobs_refused() -> None:
    """After a sweep: exit with status 2, naming its jobs refused for a user error, if any."""
    if _REFUSED_JOBS:
        jobs = ", ".join(map(str, _REFUSED_JOBS))
        others = "none ran" if _every_job_refused() else "the others ran"
        print_error(f"error: the sweep's job(s) {jobs} refused (above); {others}")
        sys.exit(USER_ERROR_STATUS)


class HeldRunFolder:
    """Hydra's run folder, left as it was until the run starts in it.

    For an entry point whose config sets ``hydra.output_subdir: null``: Hydra writes no
    ``.hydra/`` record before the run, and the log files it opened there are closed until
    :meth:`start`. A refused run (the folder holds a run, is locked, a resume changes settings)
    so leaves the folder as it found it: another run's ``.hydra/`` was rewritten by a refused
    segmenter run given the same ``hydra.run.dir``. Built first thing in the entry point.
    """

    def __init__(self, run_dir: Path) -> None:
        """Hold ``run_dir``: note whether Hydra made it for this run, close its log files."""
        self.run_dir = run_dir
        self.made_here = _made_for_this_run(run_dir)
        self.logs = _hold_log_files(run_dir)

    def start(self, cfg: DictConfig, run_dir: Path | None = None) -> None:
        """Write Hydra's record of the run into ``.hydra/`` and open the log files again.

        Args:
            cfg: the run's config.
            run_dir: where the run goes, if not the folder held (rank 0's under DDP).
        """
        run_dir = self.run_dir if run_dir is None else run_dir
        hydra_cfg = HydraConfig.instance().cfg
        record = run_dir / HYDRA_RECORD
        files = {"config.yaml": cfg, "hydra.yaml": hydra_cfg}
        files["overrides.yaml"] = hydra_cfg.hydra.overrides.task
        with writing(record, run_dir):
            record.mkdir(exist_ok=True)
            for name, node in files.items():
                with atomic_open(record / name, "w", encoding="utf-8") as out:
                    OmegaConf.save(node, out)
        for held in self.logs:
            handler = RunLog(held.baseFilename, encoding=held.encoding)
            handler.setFormatter(held.formatter)
            handler.setLevel(held.level)
            logging.getLogger().addHandler(handler)

    def clean_up(self) -> None:
        """After a refused run: remove the folder if Hydra made it for this run and it is unused.

        In a folder it did not make, the log files it opened are removed where still empty
        (an empty ``train.log`` was left beside the user's files).
        """
        if self.made_here:
            remove_unused_run_dir(self.run_dir)
            return
        for held in self.logs:
            with contextlib.suppress(OSError):
                if os.stat(held.baseFilename).st_size == 0:
                    os.unlink(held.baseFilename)


def _made_for_this_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds only the empty logs Hydra just opened: made for this run.

    A folder that held anything before (a user's ``config.yaml``, an earlier run's log) was
    not, and a refused run leaves it alone, whatever its files are named.
    """
    try:
        return all(p.suffix == ".log" and p.stat().st_size == 0 for p in run_dir.iterdir())
    except OSError:
        return False


def _hold_log_files(run_dir: Path) -> list[logging.FileHandler]:
    """Close the log files Hydra opened in ``run_dir`` (``train.log``), and return them."""
    root = logging.getLogger()
    held = [
        handler
        for handler in root.handlers
        if isinstance(handler, logging.FileHandler)
        and Path(handler.baseFilename).parent == run_dir.absolute()
    ]
    for handler in held:
        root.removeHandler(handler)
        handler.close()
    return held
