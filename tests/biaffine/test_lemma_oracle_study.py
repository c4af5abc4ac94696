"""experiments/lemma_oracle.py: a model it cannot score is one line, not a traceback."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from builders import TINY_PARSER, biaffine_parser, save_model, sized_vocabs

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "experiments" / "lemma_oracle.py"
SPEC = importlib.util.spec_from_file_location("lemma_oracle_study", SCRIPT)
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)


def test_a_model_without_the_taggers_is_refused_by_name(tmp_path: Path) -> None:
    # A KeyError ('upos') traceback for a tree-only model, a TypeError one for a transition one.
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    path = save_model(tmp_path / "tree.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs)
    gold = ROOT / "tests" / "data" / "tiny.conllu"
    with pytest.raises(ValueError, match=r"tree\.pt: no tagger for feats, lemma, upos"):
        study.main(["--gold", str(gold), str(path)])
