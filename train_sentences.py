"""Train a word-level sentence model on top of a trained segmenter (sentence ends from the words).

Example: ``python train_sentences.py segmenter=models/en_ewt/segmenter.pt data=ud_english_ewt``
writes ``best.pt``: the segmenter with the sentence model added (``biaffine.segmenting.sentences``).
"""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from biaffine.cli import (
    check_composition,
    check_ranges,
    check_threads,
    check_types,
    checked_trainer,
    exit_on_termination,
    refuse_missing,
    refuse_unknown_options,
    report_user_errors,
    setting_types,
)
from biaffine.segmenting import sentence_training, training
from biaffine.training.compose import HeldRunFolder, exit_if_jobs_refused, in_held_run_folder
from biaffine.training.run_state import locked_run_dir

CONFIG = Path(__file__).parent / "conf" / "sentences.yaml"
NULLABLE = {"max_minutes": float, "patience": int, "threads": int}
"""The trainer settings whose default is null, so that their type cannot be read off it."""


@hydra.main(version_base="1.3", config_path="conf", config_name="sentences")
def main(cfg: DictConfig) -> float:
    """Train into Hydra's run directory; returns the best dev Sentences F1.

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`);
    the run folder is removed if Hydra made it for this run and the run wrote nothing into it.
    """
    return in_held_run_folder(lambda held: _train(cfg, held))


def _train(cfg: DictConfig, held: HeldRunFolder) -> float:
    run_dir = held.run_dir
    refuse_missing(OmegaConf.missing_keys(cfg))
    trainer, overwrite = checked_trainer(OmegaConf.to_container(cfg.trainer), CONFIG, NULLABLE)
    settings = sentence_training.SentenceSettings.from_mapping(trainer)
    check_threads(settings.threads, "trainer.threads")
    model = OmegaConf.to_container(cfg.model)  # model.hidden=abc was torch's TypeError
    check_types(model, setting_types(CONFIG, section="model"), "model", nullable=())
    check_ranges(model, "model", sizes=["hidden"], fractions=["dropout"])
    if not cfg.segmenter:  # read as ".", "no such segmenter checkpoint file"
        raise ValueError("segmenter= is empty: give the segmenter's best.pt")
    d = OmegaConf.to_container(cfg.data, resolve=True)
    inputs = training.input_files(d) | {"segmenter": cfg.segmenter}

    def refuse_the_folder() -> None:
        training.refuse_earlier_run(run_dir, overwrite)
        training.refuse_overwriting_inputs(run_dir, inputs)

    refuse_the_folder()  # at once, before the minutes of reading; again once it is held
    # Read and built before the folder is touched: a segmenter that cannot be read, or a
    # transformer setting that builds no model, refused the run once .hydra/ was written there.
    data = training.load_documents(d)
    sentence_training.refuse_no_paragraphs(data)
    stored, network = sentence_training.prepare(cfg.segmenter, model, settings)
    # Held for the whole run: two runs given one folder mixed their logs and checkpoints.
    with locked_run_dir(run_dir):
        refuse_the_folder()
        held.start(cfg)  # its .hydra/ record and log, once nothing refuses the run
        result = sentence_training.train(data, stored, network, settings, run_dir)
        return result["dev"]["sentences_f1"]


if __name__ == "__main__":
    conf = Path(__file__).parent / "conf"
    report_user_errors(lambda: refuse_unknown_options(sys.argv[1:], conf, ("data",)))
    closed = ("", "data", "model", "trainer")  # +trainer.max_epoch=1: a key nothing reads
    report_user_errors(
        lambda: check_composition(conf, "sentences", sys.argv[1:], groups=("data",), closed=closed)
    )
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    report_user_errors(main)  # Ctrl-C between a sweep's jobs: in Hydra's code, not a job's
    exit_if_jobs_refused()  # a sweep whose jobs were refused ends with status 2
