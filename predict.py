"""Parse with a shipped model or a trained checkpoint.

Example: ``echo "The cat sat." | python predict.py model=en_ewt input=- format=raw``; a trained
model: ``python predict.py checkpoint=run/best.pt input=in.conllu > out.conllu``, from plain
text: ``python predict.py checkpoint=run/best.pt segmenter=seg/best.pt input=doc.txt format=raw``

On several processes: ``torchrun --nproc_per_node=2 predict.py ... input=in.conllu``; each
parses its share of the chunks, rank 0 writes the output (the same bytes as one process).
"""

import hydra
from omegaconf import DictConfig, OmegaConf

from biaffine import distributed, installed
from biaffine.cli import refuse_missing, report_user_errors
from biaffine.inference import DecoderSettings
from biaffine.predict_options import parse_columns
from biaffine.predicting import PredictOptions, predict
from biaffine.runtime import select_device


@hydra.main(version_base="1.3", config_path="conf/predict", config_name="predict")
def main(cfg: DictConfig) -> None:
    """Write CoNLL-U to ``cfg.output`` ('-' = stdout); logs go to stderr.

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`).
    """
    report_user_errors(lambda: _predict(cfg))


def _predict(cfg: DictConfig) -> None:
    refuse_missing(OmegaConf.missing_keys(cfg))  # input=
    decoder = DecoderSettings.from_config(cfg.decoder, cfg.get("search"))
    with distributed.process_group(select_device(cfg.device)):
        _predict_in(cfg, decoder)


def _model_files(cfg: DictConfig) -> tuple[str, str | None]:
    """The checkpoint and the segmenter (raw text only) that ``model=`` or ``checkpoint=`` name."""
    if (cfg.model is None) == (cfg.checkpoint is None):
        given = "both" if cfg.model is not None else "neither"
        raise ValueError(
            f"{given} of model= and checkpoint= given: give model=NAME (an installed model: "
            "python -m biaffine.models lists them) or checkpoint=PATH (a best.pt of train.py)"
        )
    if cfg.checkpoint is not None:
        return cfg.checkpoint, cfg.segmenter
    model = installed.find(cfg.model)
    own = model.segmenter if cfg.format == "raw" else None
    return str(model.parser), cfg.segmenter if cfg.segmenter is not None else own


def _predict_in(cfg: DictConfig, decoder: DecoderSettings) -> None:
    checkpoint, segmenter = _model_files(cfg)
    predict(
        checkpoint,
        cfg.input,
        cfg.output,
        input_format=cfg.format,
        decoder=decoder,
        evaluate=cfg.eval,
        exclude_punct=cfg.exclude_punct,
        max_tokens=cfg.max_tokens,
        chunk_sentences=cfg.chunk_sentences,
        device=cfg.device,
        threads=cfg.threads,
        int8=cfg.int8,
        bf16=cfg.bf16,
        options=PredictOptions(
            cfg.probabilities,
            cfg.kbest,
            cfg.keep_given_heads,
            parse_columns(cfg.columns),
            cfg.overwrite_columns,
        ),
        segmenter=segmenter,
    )


if __name__ == "__main__":
    main()
