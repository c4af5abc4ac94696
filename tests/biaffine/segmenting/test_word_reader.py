"""The sentence model's own word vectors: vocabularies, unknown words, padding and batches."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.segmenting.sentence_training import model_arguments
from biaffine.segmenting.sentences import SentenceModel
from biaffine.segmenting.word_reader import UNKNOWN, WordReader


def reader(**options: object) -> WordReader:
    """A reader of a few words with random weights, in eval mode."""
    torch.manual_seed(0)
    built = WordReader(["the", "cat", "."], list("thecaTHE."), dim=3, char_dim=2, filters=4)
    for name, value in options.items():
        built.settings[name] = value
    with torch.no_grad():
        for parameter in built.parameters():
            parameter.normal_()
        built.word_embed.weight[0] = built.char_embed.weight[0] = 0.0  # padding, as trained
    return built.eval()


def test_vocabularies_keep_the_lower_cased_forms_and_characters_seen_often_enough() -> None:
    forms = ["The", "the", "THE", "cat", "Cat", "dog", "."]
    found = WordReader.vocabularies(forms, min_count=2)
    assert found["words"] == ["the", "cat"]  # most frequent first; "dog" and "." once
    assert found["chars"] == ["t", "T", "h", "e", "a"]  # as written: t 3 times, the others 2
    assert WordReader.vocabularies(forms, min_count=1)["words"] == ["the", "cat", "dog", "."]


def test_an_unknown_word_reads_the_shared_vector_beside_its_own_characters() -> None:
    model = reader()
    out = model([["cat", "dog", "cow"]], 3)  # [1, 3, 3 + 4]
    unknown = model.word_embed.weight[UNKNOWN]
    torch.testing.assert_close(out[0, 1, :3], unknown)
    torch.testing.assert_close(out[0, 2, :3], unknown)
    torch.testing.assert_close(out[0, 0, :3], model.word_embed.weight[3])  # "cat" is the second
    assert not torch.equal(out[0, 1, 3:], out[0, 2, 3:])  # the characters still differ
    cased = model([["CAT"]], 1)
    torch.testing.assert_close(cased[0, 0, :3], out[0, 0, :3])  # one vector, whatever the case
    assert not torch.equal(cased[0, 0, 3:], out[0, 0, 3:])  # the characters keep the case


def test_a_long_form_is_read_as_its_two_ends() -> None:
    model = reader(max_chars=4)
    assert WordReader._shown("abcdefgh", 4) == "abgh"
    assert WordReader._shown("abcd", 4) == "abcd"
    same = model([["thXXXXe.", "thYYe."]], 2)
    torch.testing.assert_close(same[0, 0], same[0, 1])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["the", "Cat", ".", "dog", "THE", "x" * 30]),
                         min_size=1, max_size=6), min_size=1, max_size=4))  # fmt: skip
def test_a_run_reads_the_same_alone_as_in_a_batch_and_padding_is_zero(
    runs: list[list[str]],
) -> None:
    model = reader()
    width = max(map(len, runs)) + 1
    together = model(runs, width)
    assert together.shape == (len(runs), width, model.n_out)
    for b, run in enumerate(runs):
        torch.testing.assert_close(together[b, : len(run)], model([run], len(run))[0])
        assert not together[b, len(run) :].any()


def test_word_dropout_reads_known_words_as_unknown_in_training_only() -> None:
    model = reader(word_dropout=0.5)
    forms = [["the", "cat"] * 200]
    evaluated = model(forms, 400)[0, :, :3]
    assert not (evaluated == model.word_embed.weight[UNKNOWN]).all(-1).any()
    model.train()
    torch.manual_seed(1)
    dropped = (model(forms, 400)[0, :, :3] == model.word_embed.weight[UNKNOWN]).all(-1)
    assert 0.35 < dropped.float().mean().item() < 0.65


def test_a_sentence_model_reads_its_words_one_way_only() -> None:
    with pytest.raises(ValueError, match="give one of transformer and words"):
        SentenceModel()
    with pytest.raises(ValueError, match="give one of transformer and words"):
        SentenceModel({"model": "anywhere"}, words={"words": [], "chars": []})
    model = SentenceModel(words={"words": ["a"], "chars": ["a"], "dim": 2}, hidden=3)
    assert model.reads_own_words
    rebuilt = SentenceModel.from_config(model.config())
    assert rebuilt.config() == model.config()
    assert "transformer" not in model.config()


def test_model_arguments_keep_the_chosen_reader_with_the_training_vocabularies() -> None:
    gold = [type("Gold", (), {"forms": ["A", "a", "b", "a"]})()]
    section = {"reader": "words", "transformer": {"model": "x"}, "hidden": 8}
    section["words"] = {"min_count": 2, "dim": 4}
    assert model_arguments(section, gold) == {
        "hidden": 8,
        "words": {"dim": 4, "words": ["a"], "chars": ["a"]},
    }
    section["reader"] = "transformer"
    assert model_arguments(section, gold) == {
        "hidden": 8,
        "transformer": {"model": "x", "cache": True},
    }
    with pytest.raises(ValueError, match=r"model\.reader 'glove'"):
        model_arguments({**section, "reader": "glove"}, gold)
