"""The segmenter's checkpoint: a round trip keeps the classes; other files get one clear line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from builders import biaffine_parser, save_model, sized_vocabs
from segmenter_builders import TEXT, random_model, small_vocab

from biaffine.segmenting import Segmenter, SegmenterCheckpointError, checkpoint
from biaffine.segmenting.windows import classify
from rawtext.labels import MWT_END, SENTENCE_END
from rawtext.mwt import MwtExpander

MWT = MwtExpander(dictionary={"du": ("de", "le")}, rules={})


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    path = tmp_path / "best.pt"
    vocab = small_vocab()
    checkpoint.save(path, random_model(vocab, rnn_hidden=6), vocab, treebank="UD_X", mwt=MWT)
    return path


def test_a_round_trip_gives_the_same_classes_and_data(saved: Path) -> None:
    vocab = small_vocab()
    expected = classify(random_model(vocab, rnn_hidden=6), vocab, TEXT)
    segmenter = Segmenter.load(saved)
    np.testing.assert_array_equal(segmenter.classes(TEXT), expected)
    np.testing.assert_array_equal(segmenter.classes(TEXT), expected)  # deterministic
    assert (segmenter.treebank, segmenter.mwt) == ("UD_X", MWT)
    assert segmenter.vocab.chars == vocab.chars


def test_the_file_is_plain_data(saved: Path) -> None:
    payload = torch.load(saved, weights_only=True)
    assert payload["format"] == checkpoint.FORMAT == 1
    assert payload["kind"] == "segmenter"
    assert payload["mwt"] == MWT.to_data()
    assert sorted(payload) == sorted(
        ["format", "kind", "config", "chars", "weights", "treebank", "mwt"]
    )


@pytest.mark.parametrize("text", ["", " ", " \n\n\t\u00a0 "])
def test_empty_and_whitespace_texts_give_no_sentences(saved: Path, text: str) -> None:
    segmenter = Segmenter.load(saved)
    assert segmenter.classes(text).shape == (len(text),)
    assert list(segmenter.segment(text).sentences()) == []


def test_segment_expands_multi_word_tokens_by_the_stored_expander(
    saved: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    segmenter = Segmenter.load(saved)
    classes = np.array([0, MWT_END, 0, 0, 0, SENTENCE_END], dtype=np.uint8)  # "du vin"
    monkeypatch.setattr(segmenter, "classes", lambda text: classes)
    (sentence,) = segmenter.segment("Du vin").sentences()
    assert [token.words for token in sentence.tokens] == [("De", "le"), ("vin",)]


def test_a_parser_checkpoint_is_refused_in_one_line(tmp_path: Path) -> None:
    vocabs = sized_vocabs(words=6, chars=5, upos=3, rels=3)
    path = save_model(tmp_path / "parser.pt", biaffine_parser(vocabs), vocabs)
    with pytest.raises(SegmenterCheckpointError) as error:
        Segmenter.load(path)
    assert str(error.value) == (
        f"{path}: a parser checkpoint, not a segmenter checkpoint: give the best.pt that "
        "train_segmenter.py wrote"
    )


def test_a_truncated_file_is_refused_in_one_line(saved: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.pt"
    cut.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    with pytest.raises(SegmenterCheckpointError, match="truncated or corrupt") as error:
        Segmenter.load(cut)
    assert "\n" not in str(error.value)
    assert str(error.value).startswith(str(cut))


def test_other_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SegmenterCheckpointError, match="no such segmenter checkpoint file"):
        Segmenter.load(tmp_path / "missing.pt")
    other = tmp_path / "other.pt"
    torch.save({"weights": {}}, other)
    with pytest.raises(SegmenterCheckpointError, match="another kind of file"):
        Segmenter.load(other)
    torch.save({"kind": "segmenter", "format": 2}, other)
    with pytest.raises(SegmenterCheckpointError, match="format 2; this version reads format 1"):
        Segmenter.load(other)


def test_weights_that_do_not_fit_the_config_are_refused(saved: Path, tmp_path: Path) -> None:
    payload = torch.load(saved, weights_only=True)
    payload["config"]["channels"] += 1
    wrong = tmp_path / "wrong.pt"
    torch.save(payload, wrong)
    with pytest.raises(SegmenterCheckpointError, match="invalid segmenter checkpoint") as error:
        Segmenter.load(wrong)
    assert "\n" not in str(error.value)


def test_classes_run_on_one_thread_and_restore_the_count(saved: Path) -> None:
    segmenter = Segmenter.load(saved)
    seen = []
    original = segmenter.model.forward

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        segmenter.model.forward = spy
        segmenter.classes(TEXT)
        assert seen
        assert set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_sentences_entry_without_its_config_is_refused_in_one_line(
    saved: Path, tmp_path: Path
) -> None:
    # A KeyError traceback: the except clause named every other error.
    payload = torch.load(saved, weights_only=True)
    payload["sentences"] = {}
    damaged = tmp_path / "damaged.pt"
    torch.save(payload, damaged)
    with pytest.raises(SegmenterCheckpointError, match="invalid segmenter checkpoint"):
        Segmenter.load(damaged)
