"""Train a biaffine parser.

Example: ``python train.py experiment=dozat_manning_2017 data=ud_english_ewt``

On several processes (DDP): ``torchrun --nproc_per_node=2 train.py ...``; rank 0 writes the run
folder and its log, the other ranks log to stderr only.
"""

import contextlib
import importlib
import inspect
import os
import sys
import typing
from collections.abc import Callable
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from biaffine import checkpoint, distributed
from biaffine.cli import (
    NULL_MEANS_NONE,
    check_composition,
    check_groups,
    check_rate,
    check_seed,
    check_threads,
    check_types,
    config_options,
    describe,
    exit_on_termination,
    null_settings,
    refuse_missing,
    refuse_unknown_options,
    report_user_errors,
    setting_types,
)
from biaffine.nn.averaging import check_ema_decay
from biaffine.runtime import select_device
from biaffine.training import train
from biaffine.training.compose import exit_if_jobs_refused, fit_settings, in_held_run_folder
from biaffine.training.optim import check_schedule

TRAINER_DEFAULTS = Path(__file__).parent / "conf" / "trainer" / "default.yaml"
OPTIMIZERS = sorted((Path(__file__).parent / "conf" / "optimizer").glob("*.yaml"))
# The trainer settings whose default is null, so that their type cannot be read off it.
NULL_DEFAULT_TYPES = {"max_steps": int, "max_minutes": float, "ema_decay": float, "threads": int}
NULL_DEFAULT_TYPES |= {"init_from": str}

CONF = Path(__file__).parent / "conf"
# --help lists each config group's files (${config_options:experiment}), so that a new recipe is
# listed once its file exists.
OmegaConf.register_new_resolver(  # replace: the other script may have registered it in-process
    "config_options", lambda group: config_options(CONF, group), replace=True
)


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float:
    """Train into Hydra's run directory; returns the best dev LAS (for sweepers to optimise).

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`);
    the run folder is removed if Hydra made it for this run and the run wrote nothing into it.
    """
    return in_held_run_folder(
        lambda held: _train(cfg, held.run_dir, lambda shared: held.start(cfg, shared))
    )


def _train(cfg: DictConfig, run_dir: Path, on_start: Callable[[Path], None]) -> float:
    check_settings(cfg)
    with distributed.process_group(select_device(cfg.trainer.device)) as here:
        # Each rank's Hydra named a folder from its own clock: rank 0's is the run's.
        shared = distributed.broadcast(run_dir, here)
        if shared != run_dir:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # empty: the other ranks write nothing
        return train(cfg, run_dir=shared, on_start=on_start).best_dev.las


def check_settings(cfg: DictConfig) -> None:
    """Refuse missing settings and trainer settings of the wrong type before training starts.

    Raises:
        ValueError: naming the setting (without it, ``trainer.max_epochs=abc`` would end in a
            ``TypeError`` traceback after the data was read).
    """
    refuse_missing(OmegaConf.missing_keys(cfg))
    nullable = null_settings(TRAINER_DEFAULTS) | NULL_MEANS_NONE
    check_types(cfg.trainer, trainer_types(), "trainer", nullable=nullable)
    # decoder.root_constraint=null was taken as false, =abc as true, for dev's trees;
    # model.arc_mlp=abc was "'<' not supported between instances of 'str' and 'int'"
    check_groups(cfg, CONF, ("decoder", "search", "model"))
    check_groups(cfg.model, CONF / "model", ("encoder",), where="model.")
    check_types(cfg.optimizer, setting_types(*OPTIMIZERS), "optimizer")  # lr=abc: a TypeError
    # +optimizer.amsgrad=abc was taken as true: keys no config file has, by the class's defaults
    types, nullable = optimizer_types(cfg.optimizer.get("_target_"))
    given = {key: kind for key, kind in types.items() if key in cfg.optimizer}
    check_types(cfg.optimizer, given, "optimizer", nullable=nullable)
    check_optimizer(cfg.optimizer)
    # lr=inf passed the optimizer's one step and trained NaN; the schedule's and the average's
    # settings were refused only once trainer.overwrite=true had removed the earlier run.
    check_rate(cfg.optimizer.get("lr"), "optimizer.lr")
    t = cfg.trainer
    check_rate(t.transformer_lr, "trainer.transformer_lr")
    check_schedule(t.lr_decay, t.lr_decay_steps, t.warmup_steps)
    if t.ema_decay is not None:
        check_ema_decay(t.ema_decay)
    if t.min_word_count < 1:  # refused after the treebank was read, and as "min_count"
        raise ValueError(f"trainer.min_word_count={t.min_word_count} must be >= 1")
    # model.encoder.lstm_hidden=100000 was torch's "can't allocate memory" traceback
    model = OmegaConf.to_container(cfg.model, resolve=True)
    checkpoint.check_sizes(model, "model", why="a checkpoint of it would not load")
    fit_settings(cfg)  # limits that train nothing: trainer.max_steps=0
    check_threads(cfg.trainer.threads, "trainer.threads")
    check_seed(cfg.trainer.seed, "trainer.seed", bits=32)  # numpy's words, after the data
    if cfg.trainer.resume_from is not None and not cfg.trainer.resume:  # a new run, silently
        raise ValueError(
            f"trainer.resume_from={cfg.trainer.resume_from} is read with trainer.resume=true: "
            "add it to continue that run, or leave resume_from out"
        )
    distill_from = cfg.trainer.get("distill_from")
    if distill_from is not None and not OmegaConf.is_list(distill_from):
        # a string was read as a list of one-letter paths: "a: no such checkpoint file"
        raise ValueError(f"trainer.distill_from={distill_from!r}: give a list, [A.pt,B.pt]")


def optimizer_types(target: str | None) -> tuple[dict[str, type], set[str]]:
    """The type of each flag (bool) or number (float) the optimizer ``target`` takes; the nullable.

    Read off its signature: the defaults, and the annotations of those defaulting to None
    (``foreach: bool | None``). Nothing when ``target`` names nothing callable (instantiating
    it then says so, in :func:`check_optimizer`).
    """
    found = _located(str(target))
    try:
        parameters = inspect.signature(found).parameters.values() if callable(found) else []
    except (TypeError, ValueError):  # a builtin without a signature
        return {}, set()
    try:  # annotations written as strings (from __future__ import annotations) evaluated
        hints = typing.get_type_hints(found.__init__ if isinstance(found, type) else found)
    except Exception:  # a name the annotation uses may not resolve
        hints = {}
    kinds = {bool: bool, int: float, float: float}  # a number defaulting to 0 takes 0.9 too
    types, nullable = {}, set()
    for parameter in parameters:
        if type(parameter.default) in kinds:
            types[parameter.name] = kinds[type(parameter.default)]
        elif parameter.default is None:
            hint = hints.get(parameter.name, parameter.annotation)
            named = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(named) == 1 and named[0] in kinds:
                types[parameter.name] = kinds[named[0]]
                nullable.add(parameter.name)
    return types, nullable


def _located(target: str) -> object:
    """The object a dotted path names (``torch.optim.Adam``), or None; nothing is logged.

    Hydra's own lookup logs an error for a function, or a path that names nothing.
    """
    parts = target.split(".")
    if "" in parts:  # relative (..Adam) or empty: instantiating it says what is wrong
        return None
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # a module's own import code may raise anything
            continue
        for name in parts[cut:]:
            found = getattr(found, name, None)
        return found
    return None


def check_optimizer(settings: DictConfig) -> None:
    """Refuse optimizer settings its class refuses, by building it for one parameter first.

    ``optimizer.betas=[0.9]`` was an IndexError traceback from inside torch once the data was
    read and the model built; torch's own ValueErrors (``lr=-1``) came as late, and so did a
    first step that overflows (``lr=1e38``: Adam's step size is beyond float32), which is
    taken here too.

    Raises:
        ValueError: naming the optimizer, the settings and what it said.
    """
    import torch
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    parameter = torch.nn.Parameter(torch.zeros(1))
    parameter.grad = torch.ones(1)
    try:
        instantiate(settings, _convert_="all")([parameter]).step()
    except (
        InstantiationException,
        TypeError,
        ValueError,
        IndexError,
        KeyError,
        RuntimeError,
    ) as error:
        given = OmegaConf.to_container(settings)
        target = given.pop("_target_", "?")
        given.pop("_partial_", None)
        shown = ", ".join(f"{key}={value!r}" for key, value in given.items())
        cause = error.__cause__ or error  # Hydra wraps the optimizer's own error
        raise ValueError(f"optimizer: {target}({shown}) refused: {describe(cause)}") from None


def trainer_types() -> dict[str, type]:
    """The type of each boolean or numeric trainer setting, read off its default."""
    return setting_types(TRAINER_DEFAULTS) | NULL_DEFAULT_TYPES


def _quiet_worker_args() -> list[str]:
    """Overrides for ranks above 0 under torchrun: no ``.hydra/`` folder, warnings on stderr."""
    if int(os.environ.get("RANK", "0")) == 0:
        return []
    return [
        "hydra.output_subdir=null",
        "hydra/job_logging=stderr",
        "hydra.job_logging.root.level=WARNING",
    ]


GROUPS = ("data", "model", "optimizer", "trainer", "decoder", "search", "experiment")
"""The config groups of ``conf/train.yaml`` whose options are files."""
CLOSED = ("", "data", "trainer", "decoder", "search")
"""The sections whose every setting is in a config file: the model and optimizer take more."""


def refuse_sweep_under_torchrun(argv: list[str]) -> None:
    """Refuse ``-m`` in a process ``torchrun`` started.

    Each job opened the process group again in the same processes: the second job's ranks
    met the first's stale addresses, and failed in a traceback or waited for good.

    Raises:
        ValueError: naming what to do instead.
    """
    if distributed.launched() and ({"-m", "--multirun"} & set(argv)):
        raise ValueError(
            "-m under torchrun: a sweep's jobs would share its processes; run each job as "
            "its own torchrun command"
        )


if __name__ == "__main__":
    report_user_errors(lambda: refuse_sweep_under_torchrun(sys.argv[1:]))
    report_user_errors(lambda: refuse_unknown_options(sys.argv[1:], CONF, GROUPS, ("experiment",)))
    report_user_errors(  # trainer.foo=1; +trainer.max_epoch=1 (the model's keys are its own)
        lambda: check_composition(CONF, "train", sys.argv[1:], groups=GROUPS, closed=CLOSED)
    )
    sys.argv += _quiet_worker_args()
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    report_user_errors(main)  # Ctrl-C between a sweep's jobs: in Hydra's code, not a job's
    exit_if_jobs_refused()  # a sweep whose jobs were refused ends with status 2
