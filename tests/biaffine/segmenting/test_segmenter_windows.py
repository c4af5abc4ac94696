"""Running the segmenter in overlapping windows gives the classes of one pass over the text."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from segmenter_builders import TEXT, random_model, small_vocab

from biaffine.segmenting import Segmenter
from biaffine.segmenting.features import FEATURES, CharVocab, char_features
from biaffine.segmenting.windows import classify, log_probs, window_bounds
from rawtext import corpus_text
from rawtext.labels import MWT_SENTENCE_END, N_CLASSES, SENTENCE_END

SHIPPED = Path(__file__).parents[3] / "models" / "en_ewt" / "segmenter.pt"


@pytest.fixture
def vocab() -> CharVocab:
    return small_vocab()


def one_pass(model, vocab: CharVocab, text: str) -> np.ndarray:
    """The classes of the whole text as one unpadded row (no windows, no batches)."""
    ids = torch.from_numpy(vocab.ids(text))[None]
    features = torch.from_numpy(char_features(text))[None]
    with torch.inference_mode():
        return model(ids, features)[0].argmax(-1).numpy().astype(np.uint8)


@pytest.mark.parametrize(("window", "batch_size"), [(1, 7), (13, 1), (13, 4), (64, 2), (1000, 3)])
def test_convolutions_alone_give_the_one_pass_classes_in_any_windows(
    vocab: CharVocab, window: int, batch_size: int
) -> None:
    model = random_model(vocab, rnn_hidden=0)
    expected = one_pass(model, vocab, TEXT)
    assert len(set(expected.tolist())) >= 3  # the classes vary: a wrong window shows
    got = classify(
        model, vocab, TEXT, window=window, context=model.receptive_field, batch_size=batch_size
    )
    np.testing.assert_array_equal(got, expected)


def test_too_little_context_changes_the_classes(vocab: CharVocab) -> None:
    # The check above can fail: cut the context below the receptive field and it does.
    model = random_model(vocab, rnn_hidden=0)
    got = classify(model, vocab, TEXT, window=13, context=model.receptive_field - 4)
    assert (got != one_pass(model, vocab, TEXT)).any()


def test_with_the_bilstm_each_window_without_context_is_one_pass_over_its_characters(
    vocab: CharVocab,
) -> None:
    # The last window (40 characters) is padded beside the first (150) in one batch: packing
    # keeps the backward direction starting at its own end.
    model = random_model(vocab, rnn_hidden=6)
    text = TEXT[:190]
    got = classify(model, vocab, text, window=150, context=0, batch_size=2)
    np.testing.assert_array_equal(got[:150], one_pass(model, vocab, text[:150]))
    np.testing.assert_array_equal(got[150:], one_pass(model, vocab, text[150:]))
    assert len(set(got[150:].tolist())) >= 2


def test_windows_tile_the_text_once() -> None:
    for length in (0, 1, 5, 64, 65, 200):
        bounds = window_bounds(length, 16, 4)
        kept = [i for _, start, end, _ in bounds for i in range(start, end)]
        assert kept == list(range(length))
        for read_start, start, end, read_end in bounds:
            assert read_start == max(0, start - 4)
            assert read_end == min(length, end + 4)


def test_empty_text_gives_no_classes(vocab: CharVocab) -> None:
    model = random_model(vocab, rnn_hidden=6)
    assert classify(model, vocab, "").shape == (0,)
    assert char_features("").shape == (0, len(FEATURES))


def test_unknown_characters_read_as_unk() -> None:
    vocab = CharVocab.build(["aab"], min_count=2)
    assert vocab.chars == ["a"]
    assert vocab.ids("abz").tolist() == [2, 1, 1]
    assert CharVocab([]).ids("ab").tolist() == [1, 1]


def test_the_sentence_bias_moves_token_ends_to_sentence_ends(vocab: CharVocab) -> None:
    model = random_model(vocab, rnn_hidden=6)
    scores = torch.randn(50, N_CLASSES).log_softmax(-1)
    plain = model.decide(scores).numpy()
    model.settings["sentence_bias"] = 100.0
    assert set(model.decide(scores).tolist()) <= {SENTENCE_END, MWT_SENTENCE_END}
    model.settings["sentence_bias"] = -100.0
    never = model.decide(scores).numpy()
    assert not np.isin(never, (SENTENCE_END, MWT_SENTENCE_END)).any()
    # outside the sentence-end classes, the choice is the plain one
    kept = ~np.isin(plain, (SENTENCE_END, MWT_SENTENCE_END))
    np.testing.assert_array_equal(never[kept], plain[kept])


def test_batches_run_side_by_side_give_the_scores_of_one_at_a_time_bit_for_bit(
    vocab: CharVocab, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = random_model(vocab, rnn_hidden=6)
    how = {"window": 20, "context": 8, "batch_size": 3}  # 16 windows: 6 batches
    alone = log_probs(model, vocab, TEXT, **how)
    threads: set[int] = set()
    forward = model.forward

    def recorded(*arguments: torch.Tensor) -> torch.Tensor:
        threads.add(threading.get_ident())
        time.sleep(0.05)  # long enough that the second worker takes a batch
        return forward(*arguments)

    monkeypatch.setattr(model, "forward", recorded)
    side_by_side = log_probs(model, vocab, TEXT, workers=2, **how)
    assert len(threads) == 2
    assert threading.get_ident() not in threads
    assert torch.equal(side_by_side, alone)
    # Every character's row written (a row left at zeros would sum to N_CLASSES).
    torch.testing.assert_close(alone.exp().sum(-1), torch.ones(len(TEXT)))


def test_the_shipped_segmenter_finds_the_same_classes_on_one_thread_and_on_two(
    ewt_dir: Path,
) -> None:
    segmenter = Segmenter.load(SHIPPED)
    text = corpus_text(ewt_dir / "en_ewt-ud-dev.conllu")[:60000]  # 118 windows: 4 batches
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = segmenter.classes(text)
        torch.set_num_threads(2)
        two = segmenter.classes(text)
        assert torch.get_num_threads() == 2  # restored after the segmenter's one-thread block
    finally:
        torch.set_num_threads(before)
    np.testing.assert_array_equal(two, one)
