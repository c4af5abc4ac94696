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


GOLD_TWO_DOCUMENTS = (
    "# newdoc\n# text = He left!\n1\tHe\the\tPRON\t_\t_\t2\tnsubj\t_\t_\n"
    "2\tleft\tleave\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n3\t!\t!\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
    "# text = She came.\n1\tShe\tshe\tPRON\t_\t_\t2\tnsubj\t_\t_\n"
    "2\tcame\tcome\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No\n3\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_\n\n"
    "# newdoc\n# text = Bye.\n1-2\tBye.\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tBye\tbye\tINTJ\t_\t_\t0\troot\t_\t_\n"
    "2\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\t_\n\n"
)


class _NoSentenceEnds:
    """A segmenter stub: the gold tokens, a wrong sentence end after "He", none of the others."""

    mwt = None

    def __init__(self, labels) -> None:
        self.labels = labels

    def classes(self, text: str):
        from rawtext.labels import MWT_END, MWT_SENTENCE_END, SENTENCE_END, TOKEN_END

        found = self.labels.copy()
        found[found == SENTENCE_END] = TOKEN_END
        found[found == MWT_SENTENCE_END] = MWT_END
        found[text.index("He ") + 1] = SENTENCE_END
        return found

    def segment(self, text: str):
        from rawtext.mwt import segment_with

        return segment_with(text, self.classes(text), None)

    def segment_stream(self, chunks, *, interactive=False):
        yield self.segment("".join(chunks))


def test_gold_sentence_ends_keep_the_tokens_and_take_the_gold_sentences(tmp_path: Path) -> None:
    from biaffine.pipeline import segmented
    from rawtext import labelled_corpus

    gold = tmp_path / "gold.conllu"
    gold.write_text(GOLD_TWO_DOCUMENTS, encoding="utf-8")
    corpus = labelled_corpus(gold)
    text = corpus.text
    assert len(corpus.labels) == len(text)
    stub = _NoSentenceEnds(corpus.labels)
    found = segmented(stub, text)
    assert [s.metadata["text"] for s in found] == ["He", "left! She came.", "Bye."]
    oracle = study.GoldSentenceEnds(stub, corpus)
    sentences = segmented(oracle, text)
    assert [s.metadata["text"] for s in sentences] == ["He left!", "She came.", "Bye."]
    assert [s.forms for s in sentences][2] == ["Bye."]  # the stub's tokens, kept whole
    with pytest.raises(ValueError, match="corpus text only"):
        oracle.segment(text + " more")
