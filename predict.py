"""Parse with a shipped model or a trained checkpoint.

Example: ``echo "The cat sat." | python predict.py model=en_ewt input=- format=raw``; a trained
model: ``python predict.py checkpoint=run/best.pt input=in.conllu > out.conllu``, from plain
text: ``python predict.py checkpoint=run/best.pt segmenter=seg/best.pt input=doc.txt format=raw``

On several processes: ``torchrun --nproc_per_node=2 predict.py ... input=in.conllu``; each
parses its share of the chunks, rank 0 writes the output (the same bytes as one process).

Without torch: ``python predict.py runtime=onnx onnx=FOLDER input=in.conllu`` parses with a
folder of ``python -m biaffine.export`` in ONNX Runtime (:mod:`biaffine.onnxrun`, the same
bytes); torch is imported on the torch path only.
"""

import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

import decoding
from biaffine import installed
from biaffine.cli import (
    check_groups,
    check_types,
    config_options,
    exit_on_termination,
    null_settings,
    refuse_missing,
    refuse_unknown_options,
    refuse_unknown_settings,
    report_user_errors,
    setting_types,
    settings_of,
)
from biaffine.inference.settings import DecoderSettings
from biaffine.predict_options import PredictOptions, bracketed_lists, parse_columns

log = logging.getLogger(__name__)

RUNTIMES = ("torch", "onnx")

CONF = Path(__file__).parent / "conf"
PREDICT_CONF = CONF / "predict"
GROUPS = ("decoder", "search")
# The settings whose default is null, so that their type cannot be read off it (kbest and
# threads have their own checks: check_options, set_threads).
NULL_DEFAULT_TYPES = {"max_tokens": int}
NULL_DEFAULT_TYPES |= dict.fromkeys(("model", "checkpoint", "onnx", "partner", "segmenter"), str)
PATHS = ("input", "output", "checkpoint", "onnx", "partner", "segmenter")
"""The settings that name a file or folder (``model`` names an installed model)."""
# --help lists each config group's files (${config_options:experiment}), so that a new recipe is
# listed once its file exists.
OmegaConf.register_new_resolver(  # replace: the other script may have registered it in-process
    "config_options", lambda group: config_options(CONF, group), replace=True
)


@hydra.main(version_base="1.3", config_path="conf/predict", config_name="predict")
def main(cfg: DictConfig) -> None:
    """Write CoNLL-U to ``cfg.output`` ('-' = stdout); logs go to stderr.

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`).
    """
    exit_on_termination()
    report_user_errors(lambda: _predict(cfg))


def _predict(cfg: DictConfig) -> None:
    check_settings(cfg)
    if cfg.exclude_punct and not cfg.eval:  # it changes a score, and none is asked for
        raise ValueError("exclude_punct=true changes what eval=true scores: give eval=true too")
    decoder = DecoderSettings.from_config(cfg.decoder, cfg.get("search"))
    if cfg.runtime not in RUNTIMES:
        raise ValueError(f"runtime={cfg.runtime}; expected one of {', '.join(RUNTIMES)}")
    if cfg.runtime == "onnx":
        _predict_onnx(cfg, decoder)
        return
    if cfg.onnx is not None:
        raise ValueError("onnx= is read with runtime=onnx: give runtime=onnx, or leave onnx= out")
    from biaffine import distributed  # torch, on this path only
    from biaffine.runtime import select_device

    with distributed.process_group(select_device(cfg.device)):
        _predict_in(cfg, decoder)


def check_settings(cfg: DictConfig) -> None:
    """Refuse missing settings and settings of the wrong type before a model loads.

    Raises:
        ValueError: naming the setting (without it, ``chunk_sentences=abc`` ended in a
            ``TypeError`` traceback, and ``int8=no``, a non-empty string, turned int8 on); null
            where the default is not (``decoder.root_constraint=null`` was read as false).
    """
    refuse_missing(OmegaConf.missing_keys(cfg))  # input=
    top = PREDICT_CONF / "predict.yaml"
    types = setting_types(top) | NULL_DEFAULT_TYPES
    check_types(cfg, types, "", nullable=null_settings(top))  # output=null, input=123
    for key in PATHS:
        if cfg.get(key) == "":  # partner= was read as "." and named so: "is not a file"
            instead = "" if key == "input" else f", or leave {key}= out"
            raise ValueError(f"{key}= is empty: give a path{instead}")
    check_groups(cfg, PREDICT_CONF, GROUPS)


def _options(cfg: DictConfig) -> PredictOptions:
    return PredictOptions(
        cfg.probabilities,
        cfg.kbest,
        cfg.keep_given_heads,
        parse_columns(cfg.columns),
        cfg.overwrite_columns,
    )


def _predict_onnx(cfg: DictConfig, decoder: DecoderSettings) -> None:
    """Parse with an export folder in ONNX Runtime; settings it does not read are refused."""
    from biaffine.onnxrun import MAX_TOKENS, SUPPORTED, predict_file  # onnxruntime, only here

    if cfg.onnx is None:
        raise ValueError("runtime=onnx needs onnx=FOLDER (written by python -m biaffine.export)")
    unread = {
        "model=": cfg.model is not None,
        "checkpoint=": cfg.checkpoint is not None,
        "segmenter=": cfg.segmenter is not None,
        "partner=": cfg.partner is not None,
        "eval=true": cfg.eval,
        "int8=true": cfg.int8,
        "bf16=true": cfg.bf16,
        f"device={cfg.device}": cfg.device != "cpu",
    }
    given = [name for name, on in unread.items() if on]
    if given:
        raise ValueError(f"{', '.join(given)} with runtime=onnx: {SUPPORTED}")
    # A torch-free command: the decoders' ahead-of-time build spares it numba (about 130 MiB).
    if not decoding.use_compiled():
        log.info("decoders not compiled ahead of time (python -m decoding.aot): numba is loaded")
    sentences, seconds = predict_file(
        cfg.onnx,
        cfg.input,
        cfg.output,
        input_format=cfg.format,
        decoder=decoder,
        max_tokens=cfg.max_tokens if cfg.max_tokens is not None else MAX_TOKENS,
        chunk_sentences=cfg.chunk_sentences,
        threads=cfg.threads,
        options=_options(cfg),
    )
    log.info("parsed %d sentences in %.2fs with %s (onnxruntime)", sentences, seconds, cfg.onnx)


def _model_files(cfg: DictConfig) -> tuple[str, str | None, list[Path]]:
    """The checkpoint and the segmenter (raw text only) that ``model=`` or ``checkpoint=`` name.

    And an installed model's files, which the output must not be whatever the parse reads.
    """
    if (cfg.model is None) == (cfg.checkpoint is None):
        given = "both" if cfg.model is not None else "neither"
        raise ValueError(
            f"{given} of model= and checkpoint= given: give model=NAME (an installed model: "
            "python -m biaffine.models lists them) or checkpoint=PATH (a best.pt of train.py)"
        )
    if cfg.checkpoint is not None:
        return cfg.checkpoint, cfg.segmenter, []
    model = installed.require(cfg.model)
    own = model.segmenter if cfg.format == "raw" else None
    return str(model.parser), cfg.segmenter if cfg.segmenter is not None else own, model.files()


def _predict_in(cfg: DictConfig, decoder: DecoderSettings) -> None:
    from biaffine.predicting import MAX_TOKENS, predict  # torch, on this path only

    checkpoint, segmenter, protected = _model_files(cfg)
    predict(
        checkpoint,
        cfg.input,
        cfg.output,
        input_format=cfg.format,
        decoder=decoder,
        evaluate=cfg.eval,
        exclude_punct=cfg.exclude_punct,
        max_tokens=cfg.max_tokens if cfg.max_tokens is not None else MAX_TOKENS,
        chunk_sentences=cfg.chunk_sentences,
        device=cfg.device,
        threads=cfg.threads,
        int8=cfg.int8,
        bf16=cfg.bf16,
        options=_options(cfg),
        segmenter=segmenter,
        partner=cfg.partner,
        freeze=True,  # this process ends with the parse
        protected=protected,
    )


if __name__ == "__main__":
    sys.argv[1:] = bracketed_lists(sys.argv[1:])  # columns=upos,lemma: a list, not a sweep
    report_user_errors(lambda: refuse_unknown_options(sys.argv[1:], PREDICT_CONF, GROUPS))
    known = settings_of(PREDICT_CONF, "predict", GROUPS)
    report_user_errors(lambda: refuse_unknown_settings(sys.argv[1:], known))
    main()
