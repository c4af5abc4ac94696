"""Packaging a shipped model: the card's training facts (the scoring itself is test_cards')."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from builders import TINY_PARSER, biaffine_parser, save_model, sized_vocabs

from biaffine.installed import CARD
from biaffine.models.build import SEGMENTER, _training, main

SEGMENTER_FACTS = {"recipe": "python train_segmenter.py x=1", "command": "python ...", "epochs": 3}


def parser_run(root: Path) -> Path:
    """A parser run folder as Hydra leaves it: overrides, a log, the best checkpoint."""
    run = root / "run"
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("- experiment=en_ewt\n- hydra.run.dir=x\n")
    (run / "train.log").write_text(
        "[2026-11-29 10:00:00,000][x][INFO] - start\n[2026-11-29 10:30:00,000][x][INFO] - end\n"
    )
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    return save_model(run / "best.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs)


def arguments(parser: Path, **options: object) -> argparse.Namespace:
    defaults = {"name": "en_ewt", "segmenter": None, "keep_segmenter": False}
    return argparse.Namespace(parser=str(parser), machine="a CPU", note=None, **defaults | options)


def test_a_kept_segmenter_keeps_the_facts_of_the_card_it_had(tmp_path: Path) -> None:
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    training = _training(arguments(parser_run(tmp_path), keep_segmenter=True), folder)
    assert training["segmenter"] == SEGMENTER_FACTS
    assert training["parser"]["recipe"] == "python train.py experiment=en_ewt"
    assert training["parser"]["command"] == "python train.py experiment=en_ewt"
    assert training["parser"]["minutes"] == 30.0


def test_keeping_a_segmenter_where_there_is_none_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = parser_run(tmp_path)
    (tmp_path / "UD_English-EWT").mkdir()
    (tmp_path / "UD_English-EWT" / "en_ewt-ud-test.conllu").write_text("")
    argv = ["en_ewt", "--parser", str(parser), "--keep-segmenter", "--treebank", "UD_English-EWT"]
    argv += ["--root", str(tmp_path), "--out", str(tmp_path / "models")]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: --keep-segmenter: ")
    assert error.endswith("holds no segmenter and card to keep")
    assert not (tmp_path / "models").exists()  # nothing written
