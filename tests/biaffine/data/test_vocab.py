"""Tests for vocab: specials, min_count, UNK, ordering and the plain-data round trip."""

from __future__ import annotations

import dataclasses
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from biaffine.data.conllu import read_conllu
from biaffine.data.vocab import PAD, ROOT, SPECIALS, UNK, Vocab, Vocabs, build_vocabs

TINY = Path(__file__).parents[2] / "data" / "tiny.conllu"


def test_specials_take_the_first_three_indices() -> None:
    vocab = Vocab.build(["b", "a", "b"])
    assert (PAD, UNK, ROOT) == (0, 1, 2)
    assert vocab.itos == ["<pad>", "<unk>", "<root>", "b", "a"]
    assert [vocab[t] for t in SPECIALS] == [PAD, UNK, ROOT]
    assert len(vocab) == 5


def test_min_count_drops_rare_tokens_to_unk() -> None:
    vocab = Vocab.build(Counter({"often": 3, "twice": 2, "once": 1}), min_count=2)
    assert "once" not in vocab
    assert "twice" in vocab
    assert vocab["once"] == UNK
    assert vocab["never seen"] == UNK
    assert vocab["often"] == 3
    assert vocab["twice"] == 4


def test_order_is_by_count_then_string_whatever_the_input_order() -> None:
    tokens = ["c", "b", "a", "b", "c", "d"]
    assert Vocab.build(tokens).itos == Vocab.build(reversed(tokens)).itos
    assert Vocab.build(tokens).itos[3:] == ["b", "c", "a", "d"]


def test_without_specials_unknown_is_a_key_error() -> None:
    vocab = Vocab.build(["nsubj", "obj", "nsubj"], specials=False)
    assert vocab.itos == ["nsubj", "obj"]
    assert vocab["obj"] == 1
    with pytest.raises(KeyError, match="'amod' is not in this vocabulary"):
        vocab["amod"]
    assert vocab.get("amod", -100) == -100


def test_a_token_spelled_like_a_special_is_not_duplicated() -> None:
    vocab = Vocab.build(["<unk>", "x"])
    assert vocab.itos == [*SPECIALS, "x"]


@pytest.mark.parametrize("specials", [True, False])
def test_to_dict_is_json_and_round_trips(specials: bool) -> None:
    vocab = Vocab.build(["é", "a", "a", "漢"], specials=specials)
    data = json.loads(json.dumps(vocab.to_dict()))
    assert Vocab.from_dict(data) == vocab
    assert Vocab.from_dict(data).stoi == vocab.stoi


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"itos": ["a"]}, "lacks keys"),
        ({"itos": ["a", 1], "specials": False}, "list of strings"),
        ({"itos": ["a", "a"], "specials": False}, "duplicate"),
        ({"itos": ["a", "b", "c"], "specials": True}, "must start with"),
    ],
)
def test_from_dict_rejects_bad_data(data: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Vocab.from_dict(data)


def test_min_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="min_count must be >= 1"):
        Vocab.build(["a"], min_count=0)


def test_build_vocabs_on_tiny() -> None:
    vocabs = build_vocabs(iter(read_conllu(TINY)))  # one pass over a generator is enough
    assert vocabs.words.itos[3:] == [".", "go"]  # min_word_count=2 keeps the forms seen twice
    assert "the" not in vocabs.words
    assert "The" not in vocabs.words
    assert vocabs.words["The"] == UNK
    assert vocabs.words["."] > ROOT
    assert vocabs.words.itos[:3] == list(SPECIALS)
    assert {"T", "0", " ", "'"} <= set(vocabs.chars.itos)  # every char of every form
    assert vocabs.columns["upos"].itos[:3] == list(SPECIALS)
    assert "PUNCT" in vocabs.columns["upos"]
    assert vocabs.columns["xpos"].itos[3:5] == [".", "NN"]  # by frequency, 6 each, then the string
    assert vocabs.columns["feats"].itos[3] == "_"  # FEATS strings are whole classes, "_" included
    assert "Mood=Ind|Tense=Past|VerbForm=Fin" in vocabs.columns["feats"]
    assert not vocabs.rels.specials
    assert "_" not in vocabs.rels
    assert {"root", "nsubj:pass", "orphan", "obl:tmod"} <= set(vocabs.rels.itos)
    assert vocabs.rels.itos[:2] == ["root", "punct"]  # by frequency: 7 and 6
    assert build_vocabs(read_conllu(TINY), min_word_count=1).words["The"] > ROOT


def test_vocabs_to_dict_round_trips_through_json() -> None:
    vocabs = Vocabs.build(read_conllu(TINY))
    data = json.loads(json.dumps(vocabs.to_dict()))
    assert Vocabs.from_dict(data) == vocabs
    with pytest.raises(ValueError, match="lacks"):
        Vocabs.from_dict({k: v for k, v in data.items() if k != "rels"})


def test_vocabs_without_xpos_and_feats_load_with_specials_only() -> None:
    """Checkpoints written before the XPOS/FEATS taggers store four vocabularies."""
    data = Vocabs.build(read_conllu(TINY)).to_dict()
    old = Vocabs.from_dict({k: v for k, v in data.items() if k not in ("xpos", "feats")})
    assert old.columns["xpos"].itos == old.columns["feats"].itos == list(SPECIALS)
    assert old.columns["upos"] == Vocabs.from_dict(data).columns["upos"]


def test_sizes_name_every_vocabulary_and_column() -> None:
    vocabs = Vocabs.build(read_conllu(TINY))
    sizes = vocabs.sizes()
    assert list(sizes) == ["words", "chars", "rels", "upos", "xpos", "feats", "lemma"]
    assert sizes["upos"] == len(vocabs.columns["upos"])
    assert sizes["rels"] == len(vocabs.rels)


def test_a_difference_is_named_by_its_vocabulary_or_lexicon_entry() -> None:
    # average and ensemble said "the vocabularies differ" for members whose lexicons differed
    # only in the settings doubt chose for each.
    [sentence] = read_conllu(io.StringIO("1\tDogs\tdog\tNOUN\tNNS\tNumber=Plur\t0\troot\t_\t_\n\n"))
    vocabs = build_vocabs([sentence])
    assert vocabs.difference(build_vocabs([sentence])) is None
    other = build_vocabs([sentence])
    other.lexicon = dataclasses.replace(vocabs.lexicon, runner_up=0.5)
    assert vocabs.difference(other) == "lemma_lexicon.runner_up"
    other.lexicon = None
    assert vocabs.difference(other) == "lemma_lexicon"
    other = build_vocabs([sentence])
    other.rels = Vocab(["root", "dep"], specials=False)
    assert vocabs.difference(other) == "rels"
