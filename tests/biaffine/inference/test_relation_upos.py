"""The UPOS a word's form had in training with its relation, weighed beside the taggers': the
scores against a brute-force sum, the tags chosen from them, and the relations of the trees
found by both parser families reaching the columns word by word."""

from __future__ import annotations

import dataclasses
import math
import zlib

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, randomized, save_model, split_options
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.api import Parser
from biaffine.data.conllu import Sentence, universal_relation
from biaffine.data.lexicon import Lexicon
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.inference import DecoderSettings, Request, predict
from biaffine.inference.choices import (
    RELATION_SMOOTHING,
    RELATION_WEIGHT,
    predicted_columns,
    related_upos,
)
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

UPOS = Vocab([*SPECIALS, "ADP", "SCONJ", "ADV", "NOUN"])
TABLE = {
    ("for", "mark"): {"SCONJ": 20, "ADP": 1},
    ("for", "case"): {"ADP": 300},
    ("up", "compound"): {"ADP": 40, "ADV": 2},
    ("up", "advmod"): {"ADV": 9, "INTJ": 1},  # a class the vocabulary lacks counts for nothing
}
FORMS = ["For", "for", "up", "up", "dog", "for"]
RELATIONS = ["mark", "case", "compound:prt", "advmod", "nsubj", "obl"]


def expected_scores(scores: np.ndarray, forms: list[str], relations: list[str]) -> np.ndarray:
    """:func:`related_upos` word by word, class by class, as its docstring says."""
    found = scores.astype(np.float64)
    for k, (form, relation) in enumerate(zip(forms, relations, strict=True)):
        counts = TABLE.get((form.lower(), relation.split(":")[0]))
        if counts is None:
            continue
        held = {name: counts.get(name, 0) for name in UPOS.itos}
        total = sum(held.values()) + RELATION_SMOOTHING * len(UPOS.itos)
        for j, name in enumerate(UPOS.itos):
            found[k, j] += RELATION_WEIGHT * math.log((held[name] + RELATION_SMOOTHING) / total)
    return found


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-8, 8, width=32), min_size=6 * 7, max_size=6 * 7))
def test_a_held_pair_adds_its_weighted_smoothed_log_probabilities_and_no_other_word_changes(
    values: list[float],
) -> None:
    scores = np.array(values, dtype=np.float32).reshape(6, 7)
    lexicon = Lexicon(relation_upos=TABLE)
    found = related_upos(scores, FORMS, RELATIONS, UPOS, lexicon)
    assert found.dtype == np.float32
    expected = expected_scores(scores, FORMS, RELATIONS)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=2e-6)
    assert (found[4:] == scores[4:]).all()  # "dog" as nsubj and "for" as obl: not held
    assert found is not scores
    assert (scores == np.array(values, np.float32).reshape(6, 7)).all()


def test_nothing_is_added_where_no_pair_is_held() -> None:
    scores = np.zeros((2, 7), dtype=np.float32)
    assert related_upos(scores, ["dog", "for"], ["nsubj", "obl"], UPOS, Lexicon()) is scores
    lexicon = Lexicon(relation_upos=TABLE)
    assert related_upos(scores, ["dog", "for"], ["nsubj", "obl"], UPOS, lexicon) is scores


def test_the_relation_turns_a_tag_the_taggers_barely_prefer() -> None:
    """ "for" as ``mark``: the taggers' ADP by 0.5 nats gives way to SCONJ; as ``case`` it stays
    ADP; without the tree's relations, or without the table, the taggers decide."""
    vocabs = Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root", "mark", "case"], specials=False),
        columns={"upos": UPOS},
        lexicon=Lexicon(relation_upos=TABLE),
    )
    scores = np.full((2, 7), -9.0, dtype=np.float32)
    scores[:, UPOS.stoi["ADP"]] = 0.0
    scores[:, UPOS.stoi["SCONJ"]] = -0.5
    sentences = [Sentence(["for", "for"])]

    def tags(relations, lexicon=vocabs.lexicon) -> list[str]:
        chosen = dataclasses.replace(vocabs, lexicon=lexicon)
        [row] = predicted_columns({"upos": scores}, ["upos"], chosen, sentences, 1, relations)
        return row["upos"]

    assert tags([["mark", "case"]]) == ["SCONJ", "ADP"]
    assert tags(None) == ["ADP", "ADP"]
    assert tags([["mark", "case"]], Lexicon()) == ["ADP", "ADP"]


def hashed_tag(vocabs: Vocabs, form: str, relation: str) -> str:
    """A UPOS of the vocabulary for (form lower-cased, universal relation), picked by a hash of
    the pair that no tagger could know."""
    names = [name for name in vocabs.columns["upos"].itos if name not in SPECIALS]
    key = f"{form.lower()} {universal_relation(relation)}".encode()
    return names[zlib.crc32(key) % len(names)]


def hashed_tags(vocabs: Vocabs, forms: list[str], relations: list[str]) -> list[str]:
    """:func:`hashed_tag` of each word."""
    return [hashed_tag(vocabs, f, r) for f, r in zip(forms, relations, strict=True)]


def decisive(vocabs: Vocabs, sentences: list[Sentence]) -> Vocabs:
    """``vocabs`` with a lexicon of nothing but a ``relation_upos`` that holds every (form,
    relation) with its :func:`hashed_tag` counted 10**12 times: :data:`RELATION_WEIGHT` times
    its log-probability (about -17 nats for every other class) outweighs what random taggers
    score."""
    relations = [name for name in vocabs.rels.itos if name not in SPECIALS]
    table = {
        (form.lower(), universal_relation(relation)): {hashed_tag(vocabs, form, relation): 10**12}
        for sentence in sentences
        for form in sentence.forms
        for relation in relations
    }
    return dataclasses.replace(vocabs, lexicon=Lexicon(relation_upos=table))


def test_the_graph_family_weighs_each_word_with_its_relation_in_the_tree_found(
    tmp_path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    torch.manual_seed(4)
    told = decisive(vocabs, sentences)
    model = randomized(biaffine_parser(told, **TINY_PARSER, tag_loss_weight=1.0))
    parser = Parser.load(save_model(tmp_path / "told.pt", model, told), threads=1)
    for tree in parser.parse(sentences, columns=["upos"], overwrite=True):
        assert tree.sentence.upos == hashed_tags(vocabs, tree.sentence.forms, tree.deprels)
    untold = dataclasses.replace(told, lexicon=Lexicon())
    parser = Parser.load(save_model(tmp_path / "untold.pt", model, untold), threads=1)
    trees = parser.parse(sentences, columns=["upos"], overwrite=True)
    assert any(
        t.sentence.upos != hashed_tags(vocabs, t.sentence.forms, t.deprels) for t in trees
    ), "random taggers must disagree with the table somewhere: else this test proves nothing"


def test_the_transition_family_weighs_each_word_with_its_relation_in_the_tree_found(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    torch.manual_seed(5)
    told = decisive(vocabs, sentences)
    encoder_options, parser_options = split_options(TINY_PARSER)
    encoder = Encoder(told, **encoder_options)
    model = randomized(TransitionParser(told, encoder, **parser_options, tag_loss_weight=1.0))
    results = predict(model.eval(), told, sentences, Request(columns=("upos",)))[""].results
    for sentence, result in zip(sentences, results, strict=True):
        [tree] = result.trees
        assert result.columns["upos"] == hashed_tags(vocabs, sentence.forms, tree.rels)


def test_each_decoder_setting_weighs_the_upos_with_its_own_trees(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    """Several settings in one pass (the experiments' way): each setting's columns follow the
    relations of its own trees, not those of another setting."""
    torch.manual_seed(6)
    told = decisive(vocabs, sentences)
    model = randomized(biaffine_parser(told, **TINY_PARSER, tag_loss_weight=1.0)).eval()
    settings = {"mst": DecoderSettings("mst"), "greedy": DecoderSettings("greedy")}
    found = predict(model, told, sentences, Request(columns=("upos",)), settings)
    relations = {}
    for name, predicted in found.items():
        relations[name] = [result.trees[0].rels for result in predicted.results]
        for sentence, result, rels in zip(
            sentences, predicted.results, relations[name], strict=True
        ):
            assert result.columns["upos"] == hashed_tags(vocabs, sentence.forms, rels)
    assert relations["mst"] != relations["greedy"], "the settings must differ: else proves nothing"
