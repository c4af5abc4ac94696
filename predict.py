"""Parse with a trained model.

Example: ``python predict.py checkpoint=run/best.pt input=in.conllu > out.conllu``; from plain
text: ``python predict.py checkpoint=run/best.pt segmenter=seg/best.pt input=doc.txt format=raw``

On several processes: ``torchrun --nproc_per_node=2 predict.py ... input=in.conllu``; each
parses its share of the chunks, rank 0 writes the output (the same bytes as one process).
"""

import hydra
from omegaconf import DictConfig, OmegaConf

from biaffine import distributed
from biaffine.cli import refuse_missing, report_user_errors
from biaffine.inference import DecoderSettings
from biaffine.predict_options import parse_columns
from biaffine.predicting import PredictOptions, predict
from biaffine.runtime import select_device


@hydra.main(version_base="1.3", config_path="conf", config_name="predict")
def main(cfg: DictConfig) -> None:
    """Write CoNLL-U to ``cfg.output`` ('-' = stdout); logs go to stderr.

    A user error prints one line on stderr and exits with status 2 (see :mod:`biaffine.cli`).
    """
    report_user_errors(lambda: _predict(cfg))


def _predict(cfg: DictConfig) -> None:
    refuse_missing(OmegaConf.missing_keys(cfg))  # checkpoint=, input=
    decoder = DecoderSettings.from_config(cfg.decoder, cfg.get("search"))
    with distributed.process_group(select_device(cfg.device)):
        _predict_in(cfg, decoder)


def _predict_in(cfg: DictConfig, decoder: DecoderSettings) -> None:
    predict(
        cfg.checkpoint,
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
        segmenter=cfg.segmenter,
    )


if __name__ == "__main__":
    main()
