"""Train a biaffine parser.

Example: ``python train.py experiment=dozat_manning_2017 data=ud_english_ewt``

On several processes (DDP): ``torchrun --nproc_per_node=2 train.py ...``; rank 0 writes the run
folder and its log, the other ranks log to stderr only.
"""

import contextlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from biaffine import distributed
from biaffine.cli import (
    check_threads,
    check_types,
    config_options,
    describe,
    exit_on_termination,
    refuse_missing,
    refuse_unknown_options,
    report_user_errors,
    setting_types,
)
from biaffine.files import atomic_open
from biaffine.runtime import select_device
from biaffine.training import train
from biaffine.training.run_state import HYDRA_RECORD, RunLog, remove_unused_run_dir, writing

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
    run_dir = Path(HydraConfig.get().runtime.output_dir)
    made_here = _made_for_this_run(run_dir)
    logs = _hold_log_files(run_dir)
    return report_user_errors(
        lambda: _train(cfg, run_dir, lambda shared: _start_record(cfg, shared, logs)),
        on_error=lambda: _clean_up(run_dir, made_here),
    )


def _made_for_this_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds only the empty log Hydra just opened: made for this run.

    Called first thing. A folder that held anything before (a user's ``config.yaml``, an
    earlier run's log) was not, and a refused run leaves it alone, whatever its files are named.
    """
    try:
        return all(p.suffix == ".log" and p.stat().st_size == 0 for p in run_dir.iterdir())
    except OSError:
        return False


def _clean_up(run_dir: Path, made_here: bool) -> None:
    """After a user error: remove the run folder if this run made it and wrote nothing there."""
    if made_here:
        remove_unused_run_dir(run_dir)


def _train(cfg: DictConfig, run_dir: Path, on_start: Callable[[Path], None]) -> float:
    check_settings(cfg)
    with distributed.process_group(select_device(cfg.trainer.device)) as here:
        # Each rank's Hydra named a folder from its own clock: rank 0's is the run's.
        shared = distributed.broadcast(run_dir, here)
        if shared != run_dir:
            with contextlib.suppress(OSError):
                run_dir.rmdir()  # empty: the other ranks write nothing
        return train(cfg, run_dir=shared, on_start=on_start).best_dev.las


def _hold_log_files(run_dir: Path) -> list[logging.FileHandler]:
    """Close the log files Hydra opened in the run folder (train.log) until the run owns it.

    A refused run (the folder is locked, holds a run, or a resume changes settings) then
    leaves the folder as it was; Hydra writes no ``.hydra/`` there either (conf/train.yaml).
    """
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


def _start_record(cfg: DictConfig, run_dir: Path, logs: list[logging.FileHandler]) -> None:
    """Write Hydra's record of the run into ``run_dir/.hydra`` and open its log files again."""
    hydra_cfg = HydraConfig.instance().cfg
    record = run_dir / HYDRA_RECORD
    files = {"config.yaml": cfg, "hydra.yaml": hydra_cfg}
    files["overrides.yaml"] = hydra_cfg.hydra.overrides.task
    with writing(record, run_dir):
        record.mkdir(exist_ok=True)
        for name, node in files.items():
            with atomic_open(record / name, "w", encoding="utf-8") as out:
                OmegaConf.save(node, out)
    for held in logs:
        handler = RunLog(held.baseFilename, encoding=held.encoding)
        handler.setFormatter(held.formatter)
        handler.setLevel(held.level)
        logging.getLogger().addHandler(handler)


def check_settings(cfg: DictConfig) -> None:
    """Refuse missing settings and trainer settings of the wrong type before training starts.

    Raises:
        ValueError: naming the setting (without it, ``trainer.max_epochs=abc`` would end in a
            ``TypeError`` traceback after the data was read).
    """
    refuse_missing(OmegaConf.missing_keys(cfg))
    check_types(cfg.trainer, trainer_types(), "trainer")
    check_types(cfg.optimizer, setting_types(*OPTIMIZERS), "optimizer")  # lr=abc: a TypeError
    check_optimizer(cfg.optimizer)
    check_threads(cfg.trainer.threads, "trainer.threads")
    distill_from = cfg.trainer.get("distill_from")
    if distill_from is not None and not OmegaConf.is_list(distill_from):
        # a string was read as a list of one-letter paths: "a: no such checkpoint file"
        raise ValueError(f"trainer.distill_from={distill_from!r}: give a list, [A.pt,B.pt]")


def check_optimizer(settings: DictConfig) -> None:
    """Refuse optimizer settings its class refuses, by building it for one parameter first.

    ``optimizer.betas=[0.9]`` was an IndexError traceback from inside torch once the data was
    read and the model built; torch's own ValueErrors (``lr=-1``) came as late.

    Raises:
        ValueError: naming the optimizer, the settings and what it said.
    """
    import torch
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        instantiate(settings, _convert_="all")([torch.nn.Parameter(torch.zeros(1))])
    except (InstantiationException, TypeError, ValueError, IndexError, KeyError) as error:
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


if __name__ == "__main__":
    report_user_errors(lambda: refuse_unknown_options(sys.argv[1:], CONF, GROUPS, ("experiment",)))
    sys.argv += _quiet_worker_args()
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
