"""Training tokens with spaces inside as a segmenter feature: the flag, the file, the runtimes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from segmenter_builders import exported_segmenter, random_model

from biaffine.segmenting import Segmenter, SegmenterCheckpointError, checkpoint
from biaffine.segmenting.features import FEATURES, CharVocab, SpacedWords, char_features

WORDS = ["Hà Nội", "thủ đô", "thành phố Hồ Chí Minh", "thành phố", "một"]
TEXT = "Hà Nội là thủ đô.\nThủ\nđô, thành phố Hồ Chí Minh và (thành phố) HÀ  NỘI!\n\n" * 3


def marks(text: str) -> str:
    return "".join("^" if flag else "." for flag in SpacedWords(WORDS).joined(text))


def test_the_longest_known_word_wins_and_its_spaces_are_marked() -> None:
    assert marks("Hà Nội là thủ đô") == "..^..........^.."
    assert marks("thành phố Hồ Chí Minh") == ".....^...^..^...^...."  # not "thành phố" + rest
    assert marks("thành phố lớn") == ".....^......."


def test_casing_punctuation_and_several_spaces_do_not_hide_a_word() -> None:
    assert marks("(HÀ  NỘI!)") == "...^^....."
    assert marks("thủ đô.") == "...^..."


def test_a_line_break_ends_a_word_and_one_chunk_is_no_word() -> None:
    assert marks("Thủ\nđô") == "......"
    assert marks("một hai") == "......."
    assert SpacedWords(WORDS).to_data() == [
        "hà nội",
        "thành phố",
        "thành phố hồ chí minh",
        "thủ đô",
    ]


@given(st.lists(st.sampled_from(["hà", "nội", "thủ", "đô", "x.", " ", "  ", "\n"]), max_size=30))
def test_only_spaces_between_the_chunks_of_a_known_word_are_marked(parts: list[str]) -> None:
    text = "".join(parts)
    flags = SpacedWords(WORDS).joined(text)
    assert flags.shape == (len(text),)
    assert all(text[i].isspace() and text[i] != "\n" for i in np.flatnonzero(flags))
    for i in np.flatnonzero(flags):
        before, after = text[:i].split()[-1].lower(), text[i + 1 :].split()[0].lower()
        assert (before, after) in {("hà", "nội"), ("thủ", "đô")}


def test_the_vocabulary_adds_the_flag_as_one_more_column() -> None:
    plain, spaced = CharVocab(["a"]), CharVocab(["a"], spaced_words=WORDS)
    assert (plain.n_features, spaced.n_features) == (len(FEATURES), len(FEATURES) + 1)
    features = spaced.features("Hà Nội")
    np.testing.assert_array_equal(features[:, :-1], char_features("Hà Nội"))
    np.testing.assert_array_equal(features[:, -1], [0, 0, 1, 0, 0, 0])
    assert CharVocab(["a"], spaced_words=["one"]).spaced is None  # no word with a space


def spaced_segmenter(tmp_path: Path) -> Path:
    vocab = CharVocab.build([TEXT[:60]], min_count=1, spaced_words=WORDS)
    model = random_model(vocab, rnn_hidden=6, n_features=vocab.n_features)
    path = tmp_path / "best.pt"
    checkpoint.save(path, model, vocab, treebank="UD_Vietnamese-X")
    return path


def test_the_words_round_trip_and_the_network_reads_them(tmp_path: Path) -> None:
    path = spaced_segmenter(tmp_path)
    segmenter = Segmenter.load(path)
    assert segmenter.vocab.spaced_words == SpacedWords(WORDS).to_data()
    found = segmenter.classes(TEXT)
    without = CharVocab(segmenter.vocab.chars, spaced_words=["a b"])  # same chars, no match
    with torch.inference_mode():
        ids = torch.from_numpy(without.ids(TEXT))[None]
        blind = segmenter.model(ids, torch.from_numpy(without.features(TEXT))[None])
        seen = segmenter.model(ids, torch.from_numpy(segmenter.vocab.features(TEXT))[None])
    assert not torch.equal(blind, seen)  # the flag reaches the classes
    assert found.shape == (len(TEXT),)


def test_a_network_whose_flags_do_not_match_its_vocabulary_is_refused(tmp_path: Path) -> None:
    vocab = CharVocab.build([TEXT], min_count=1, spaced_words=WORDS)
    path = tmp_path / "best.pt"
    checkpoint.save(path, random_model(vocab, rnn_hidden=4), vocab, treebank="UD_X")  # 8 flags
    with pytest.raises(SegmenterCheckpointError, match="reads 8 flags per character, its "):
        checkpoint.load(path)


def test_the_onnx_segmenter_reads_the_words_as_torch_does(tmp_path: Path) -> None:
    path = spaced_segmenter(tmp_path)
    onnx = exported_segmenter(path, tmp_path / "export")
    assert onnx.vocab.spaced_words == SpacedWords(WORDS).to_data()
    np.testing.assert_array_equal(onnx.classes(TEXT), Segmenter.load(path).classes(TEXT))
