"""experiments/lexicon_choices.py watches the one prediction path: it must keep up with it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from biaffine.data.conllu import read_conllu
from biaffine.inference import choices

ROOT = Path(__file__).parent.parent
SCRIPT = ROOT / "experiments" / "lexicon_choices.py"
SPEC = importlib.util.spec_from_file_location("lexicon_choices_study", SCRIPT)
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)


def test_the_scores_are_captured_as_the_model_parses() -> None:
    # Its watcher took the four arguments predicted_columns had before it read the workers and
    # the tree's relations: the documented command ended in a TypeError.
    sentences = list(read_conllu(ROOT / "tests" / "data" / "tiny.conllu"))
    captured, parser = study.captured_scores("en_ewt_small", sentences)
    assert choices.predicted_columns.__name__ == "predicted_columns"  # put back afterwards
    assert choices.lemma_words.__name__ == "lemma_words"
    assert sum(len(batch) for _, batch in captured) == len(sentences)
    words = sum(len(s) for s in sentences)
    for column in parser.model.tagged_columns:
        assert sum(scores[column].shape[0] for scores, _ in captured) == words


def test_a_model_without_its_name_is_a_usage_error(capsys) -> None:
    # "not enough values to unpack (expected 2, got 1)".
    with pytest.raises(SystemExit) as stopped:
        study.main(["--model", "dev.conllu"])
    assert stopped.value.code == 2
    assert "argument --model: 'dev.conllu': expected NAME=PATH" in capsys.readouterr().err
