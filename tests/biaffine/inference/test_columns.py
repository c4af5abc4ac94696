"""Predicted UPOS, XPOS and FEATS: through the one prediction path into CoNLL-U, and scored."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from builders import (
    TINY_PARSER,
    biaffine_parser,
    cells,
    expected_tags,
    randomized,
    row_scores,
    save_model,
    split_options,
)
from conftest import TINY_CONLLU

from biaffine.api import Parser
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import ConlluError, Sentence, read_conllu
from biaffine.data.vocab import SPECIALS, Vocabs
from biaffine.evaluate import evaluate_files
from biaffine.inference import Refused, Request, predict
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).parents[3]
TAGGERS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}
COLUMN_INDEX = {"upos": 3, "xpos": 4, "feats": 5}


@pytest.fixture(scope="module")
def tagged_checkpoint(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    """A tiny graph parser with UPOS, XPOS and FEATS taggers, random weights, and no lexicon:
    every column is the taggers' (the lexicon's FEATS: test_lemma_column.py)."""
    torch.manual_seed(1)
    taggers_only = dataclasses.replace(vocabs, lexicon=None)
    model = randomized(biaffine_parser(taggers_only, **TINY_PARSER, **TAGGERS))
    return save_model(tmp_path_factory.mktemp("tagged") / "best.pt", model, taggers_only)


@pytest.fixture(scope="module")
def upos_only_checkpoint(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    torch.manual_seed(2)
    model = randomized(biaffine_parser(vocabs, **TINY_PARSER, tag_loss_weight=1.0))
    return save_model(tmp_path_factory.mktemp("upos") / "best.pt", model, vocabs)


def test_columns_write_the_taggers_best_classes_and_nothing_else(
    tagged_checkpoint: Path, sentences: list[Sentence]
) -> None:
    parser = Parser.load(tagged_checkpoint, threads=1)
    plain = parser.parse(sentences)
    tagged = parser.parse(sentences, columns=["upos", "feats"], overwrite=True)
    for column in ("upos", "feats"):
        expected = expected_tags(parser, sentences, column)
        assert [getattr(t.sentence, column) for t in tagged] == expected
        written = [[row[COLUMN_INDEX[column]] for row in cells(t.sentence)] for t in tagged]
        assert written == expected
    changed = 0
    for ours, theirs in zip(tagged, plain, strict=True):
        assert ours.heads == theirs.heads
        assert ours.deprels == theirs.deprels
        for row, plain_row in zip(cells(ours.sentence), cells(theirs.sentence), strict=True):
            changed += row[3] != plain_row[3]
            assert row[:3] + row[4:5] + row[6:] == plain_row[:3] + plain_row[4:5] + plain_row[6:]
    assert changed > 0, "random taggers must change some UPOS: else this test proves nothing"


def test_without_columns_the_input_tags_come_back(tagged_checkpoint, sentences) -> None:
    parser = Parser.load(tagged_checkpoint, threads=1)
    for tree, sentence in zip(parser.parse(sentences), sentences, strict=True):
        assert tree.sentence.upos == sentence.upos
        assert [row[3:6] for row in cells(tree.sentence)] == [row[3:6] for row in cells(sentence)]


def test_a_column_without_a_tagger_is_refused_in_one_line(upos_only_checkpoint, sentences):
    parser = Parser.load(upos_only_checkpoint, threads=1)
    with pytest.raises(Refused, match=r"^columns=xpos: this model has no tagger for xpos \("):
        parser.parse(sentences, columns=["upos", "xpos"])
    known = r"predictable columns are upos, xpos, feats, lemma \(lower case\), or 'all' alone$"
    with pytest.raises(ValueError, match=known):
        parser.parse(sentences, columns=["deprel"])
    # It said columns ['all'] were unknown, where 'all' is known but asks for every column.
    with pytest.raises(ValueError, match=r"^columns \['all', 'upos'\]: 'all' stands alone"):
        parser.parse(sentences, columns=["all", "upos"])


def test_a_cell_the_input_fills_is_kept_unless_overwrite(tagged_checkpoint, sentences) -> None:
    """What a user wrote is never replaced unasked: only ``_`` cells get the prediction."""
    parser = Parser.load(tagged_checkpoint, threads=1)
    first = sentences[0]
    blanked = first.with_columns({"upos": ["_", *first.upos[1:]]})
    [predicted] = parser.parse([blanked], columns=["upos"], overwrite=True)
    [kept] = parser.parse([blanked], columns=["upos"])
    assert kept.sentence.upos == [predicted.sentence.upos[0], *first.upos[1:]]
    assert predicted.sentence.upos != kept.sentence.upos, "random taggers: else proves nothing"
    [untouched] = parser.parse([first], columns=["upos"])
    assert untouched.sentence.lines == parser.parse([first])[0].sentence.lines


def test_columns_all_means_every_column_the_model_tags(
    upos_only_checkpoint, graph_checkpoint, sentences
) -> None:
    parser = Parser.load(upos_only_checkpoint, threads=1)
    [every] = parser.parse(sentences[:1], columns=["all"])
    [upos] = parser.parse(sentences[:1], columns=["upos"])
    assert every.sentence.lines == upos.sentence.lines
    with pytest.raises(Refused, match=r"^columns=all: this model has no tagger"):
        Parser.load(graph_checkpoint, threads=1).parse(sentences[:1], columns=["all"])


def test_a_transition_parser_predicts_columns_too(vocabs: Vocabs, sentences) -> None:
    torch.manual_seed(3)
    vocabs = dataclasses.replace(vocabs, lexicon=None)  # the tagger's classes alone
    encoder_options, parser_options = split_options(TINY_PARSER)
    encoder = Encoder(vocabs, **encoder_options)
    model = randomized(TransitionParser(vocabs, encoder, **parser_options, **TAGGERS)).eval()
    request = Request(columns=("xpos",))
    [result] = predict(model, vocabs, sentences[:3], request)[""].results[:1]
    itos = vocabs.columns["xpos"].itos
    with torch.inference_mode():
        batch = next(batches_by_tokens(encode(sentences[:3], vocabs), 10_000, shuffle=False))
        scores = model.encode(batch).tag_scores["xpos"]
        row = batch.indices.tolist().index(0)
        best = row_scores(scores, batch, row)[:, len(SPECIALS) :].argmax(-1) + len(SPECIALS)
    assert result.columns == {"xpos": [itos[i] for i in best.tolist()]}


def test_predict_py_columns_upos_is_scored_by_the_evaluator(tagged_checkpoint, tmp_path) -> None:
    """The issue's acceptance test: predict.py columns=upos writes UPOS, the evaluator scores it."""
    out = tmp_path / "pred.conllu"
    command = [sys.executable, str(REPO / "predict.py"), f"checkpoint={tagged_checkpoint}"]
    command += [
        f"input={TINY_CONLLU}",
        f"output={out}",
        "threads=1",
        "columns=upos",
        "overwrite_columns=true",
    ]
    subprocess.run(command, check=True, capture_output=True, cwd=REPO)
    evaluation = evaluate_files(str(TINY_CONLLU), str(out))
    upos = evaluation.words.scores["UPOS"]
    predicted = [s.upos for s in read_conllu(out)]
    gold = [s.upos for s in read_conllu(TINY_CONLLU)]
    right = sum(
        p == g for ps, gs in zip(predicted, gold, strict=True) for p, g in zip(ps, gs, strict=True)
    )
    assert (upos.correct, upos.gold) == (right, sum(map(len, gold)))
    assert upos.correct < upos.gold  # random taggers: the score is the prediction's, not 100
    assert evaluation.words.scores["XPOS"].correct == evaluation.words.scores["XPOS"].gold


def test_predict_py_refuses_an_unknown_column(tagged_checkpoint, tmp_path) -> None:
    command = [sys.executable, str(REPO / "predict.py"), f"checkpoint={tagged_checkpoint}"]
    command += [f"input={TINY_CONLLU}", f"output={tmp_path / 'o'}", "columns=[upos,misc]"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "error: columns=[upos,misc]: unknown misc; known: upos, xpos, feats, lemma, all"
    ]


def test_with_columns_changes_only_the_named_cells(sentences: list[Sentence]) -> None:
    sentence = sentences[0]
    n = len(sentence)
    upos = [f"T{i}" for i in range(n)]
    written = sentence.with_columns({"upos": upos, "lemma": ["l"] * n})
    assert written.upos == upos
    assert written.lemmas == ["l"] * n
    assert sentence.upos != upos, "the original is not modified"
    for ours, theirs in zip(written.lines, sentence.lines, strict=True):
        if ours == theirs:
            continue
        a, b = ours.split("\t"), theirs.split("\t")
        assert a[:2] + a[4:] == b[:2] + b[4:]
    assert written.with_tree(sentence.heads, sentence.deprels).upos == upos
    with pytest.raises(ConlluError, match="cannot write column 'misc'"):
        sentence.with_columns({"misc": ["_"] * n})
    with pytest.raises(ConlluError, match="invalid UPOS 'a b\\\\t' for word 1"):
        sentence.with_columns({"upos": ["a b\t", *upos[1:]]})
