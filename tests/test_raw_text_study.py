"""experiments/raw_text.py: the rule-based front end and the segmentation-only scores."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent.parent / "experiments" / "raw_text.py"
SPEC = importlib.util.spec_from_file_location("raw_text_study", SCRIPT)
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)

TEXT = "Dr. Smith came home. He left!\n\nA new  paragraph.\n"


def test_spacy_front_end_keeps_every_character_and_the_paragraphs() -> None:
    pytest.importorskip("spacy", reason="the baseline needs spaCy (the bench extra)")
    sentences = study.spacy_sentences(TEXT, "en")
    assert ["".join(s.forms) for s in sentences] == [
        "Dr.Smithcamehome.",
        "Heleft!",
        "Anewparagraph.",
    ]
    assert [("newpar" in s.metadata) for s in sentences] == [True, False, True]
    assert [s.metadata["text"] for s in sentences][2] == "A new  paragraph."


def test_without_a_parser_only_the_segmentation_is_reported(tmp_path) -> None:
    pytest.importorskip("spacy", reason="the baseline needs spaCy (the bench extra)")
    gold = tmp_path / "gold.conllu"
    gold.write_text(
        "# text = He left!\n1\tHe\the\tPRON\t_\t_\t2\tnsubj\t_\t_\n"
        "2\tleft\tleave\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n3\t!\t!\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
    )
    scores = study.scored(None, study.spacy_sentences("He left!\n", "en"), gold)
    found = study.row("x", scores, parsed=False)
    assert (found["Tokens"], found["Sentences"], found["Words"]) == (100.0, 100.0, 100.0)
    assert found["LAS"] == found["UPOS"] == "-"
