"""Train a raw-text segmenter on a treebank (characters -> token, sentence, multi-word token ends).

Example: ``python train_segmenter.py data=ud_english_ewt trainer.max_minutes=12``; any UD
treebank on disk: ``python train_segmenter.py data=ud data.treebank=UD_French-Sequoia``.
"""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from biaffine.cli import (
    check_composition,
    check_ranges,
    check_rate,
    check_threads,
    check_types,
    checked_trainer,
    exit_on_termination,
    refuse_missing,
    refuse_unknown_options,
    report_user_errors,
    setting_types,
)
from biaffine.segmenting import training
from biaffine.training.compose import HeldRunFolder, exit_if_jobs_refused, in_held_run_folder
from biaffine.training.run_state import locked_run_dir

CONFIG = Path(__file__).parent / "conf" / "segmenter.yaml"
NULLABLE = {"max_minutes": float, "patience": int, "threads": int, "ema_decay": float}
"""The trainer settings whose default is null, so that their type cannot be read off it."""


@hydra.main(version_base="1.3", config_path="conf", config_name="segmenter")
def main(cfg: DictConfig) -> float:
    """Train into Hydra's run directory; returns the best dev Tokens F1 + Sentences F1.

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`);
    the run folder is removed if Hydra made it for this run and the run wrote nothing into it.
    """
    return in_held_run_folder(lambda held: _train(cfg, held))


def _train(cfg: DictConfig, held: HeldRunFolder) -> float:
    run_dir = held.run_dir
    refuse_missing(OmegaConf.missing_keys(cfg))
    trainer, overwrite = checked_trainer(OmegaConf.to_container(cfg.trainer), CONFIG, NULLABLE)
    settings = training.settings_from(trainer)
    check_threads(settings.threads, "trainer.threads")
    # model.embed_dim=abc was torch's TypeError traceback, model.dilations=abc its message
    model = OmegaConf.to_container(cfg.model)
    check_types(model, setting_types(CONFIG, section="model"), "model", nullable=())
    check_ranges(
        model,
        "model",
        sizes=("embed_dim", "channels", "kernel"),
        counts=["rnn_hidden"],
        fractions=["dropout"],
        size_lists=["dilations"],
    )
    check_rate(model["sentence_bias"], "model.sentence_bias")  # NaN: every character an end
    d = OmegaConf.to_container(cfg.data, resolve=True)
    # Held for the whole run: two runs given one folder mixed their logs and checkpoints.
    with locked_run_dir(run_dir):
        training.refuse_earlier_run(run_dir, overwrite)
        training.refuse_overwriting_inputs(run_dir, training.input_files(d))
        data = training.load_documents(d)
        held.start(cfg)  # its .hydra/ record and log, once nothing refuses the run
        result = training.train(data, model, settings, run_dir)
        return sum(result.best_dev.values())


if __name__ == "__main__":
    conf = Path(__file__).parent / "conf"
    report_user_errors(lambda: refuse_unknown_options(sys.argv[1:], conf, ("data",)))
    closed = ("", "data", "model", "trainer")  # +trainer.max_epoch=1: a key nothing reads
    report_user_errors(
        lambda: check_composition(conf, "segmenter", sys.argv[1:], groups=("data",), closed=closed)
    )
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    report_user_errors(main)  # Ctrl-C between a sweep's jobs: in Hydra's code, not a job's
    exit_if_jobs_refused()  # a sweep whose jobs were refused ends with status 2
