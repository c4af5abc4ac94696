"""The runtime's table of character vectors: each distinct form encoded once, never padded."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaffine.data.encoding import char_ids
from biaffine.data.vocab import PAD, ROOT, Vocab
from biaffine.onnx_chars import CharVectors

CHARS = Vocab.build("abcdé")


class FakeChars:
    """A stand-in for ``chars.onnx``: a form's vector is its ids' sum, length and first id.

    Records each call, and refuses padding (PAD ids), which the table must never send.
    """

    def __init__(self) -> None:
        self.calls: list[np.ndarray] = []

    def run(self, outputs: None, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        chars = feed["chars"]
        assert chars.dtype == np.int64
        assert chars.ndim == 2
        assert not (chars == PAD).any(), "a padded form was sent"
        self.calls.append(chars)
        return [vector_of(chars)]


def vector_of(chars: np.ndarray) -> np.ndarray:
    """float32[U, 3] of long[U, C]."""
    count = np.full(len(chars), chars.shape[1])
    return np.stack([chars.sum(1), count, chars[:, 0]], 1).astype(np.float32)


def expected(forms: list[list[str]], positions: int) -> np.ndarray:
    """What ``of`` must return, each vector computed alone."""
    out = np.zeros((len(forms), positions, 3), dtype=np.float32)
    out[:, 0] = vector_of(np.array([[ROOT]]))[0]
    for b, sentence in enumerate(forms):
        for i, form in enumerate(sentence, 1):
            out[b, i] = vector_of(np.array([char_ids(form, CHARS)]))[0]
    return out


def test_each_distinct_form_is_encoded_once_in_groups_of_one_length() -> None:
    session = FakeChars()
    table = CharVectors(session, CHARS)
    first = [["abc", "d", "abc"], ["bad", "é", "x", "a" * 30]]
    found = table.of(first, 6)
    np.testing.assert_array_equal(found, expected(first, 6))
    assert not found[0, 4:].any()  # padding: zeros
    assert not found[1, 5:].any()
    encoded = [row.tolist() for call in session.calls[1:] for row in call]
    assert len(encoded) == len(table) == 6  # ROOT apart, each distinct form once
    assert [20] in [[len(row)] for row in encoded]  # a long form: its first 20 characters
    again = [["abc", "bad"], ["d"]]
    calls = len(session.calls)
    np.testing.assert_array_equal(table.of(again, 3), expected(again, 3))
    assert len(session.calls) == calls  # nothing new: no call


def test_a_full_table_starts_again() -> None:
    session = FakeChars()
    table = CharVectors(session, CHARS, limit=3)
    for batch in ([["a", "b"]], [["c", "d"]], [["a", "c", "e"]], [["ab", "bc", "cd", "de", "e"]]):
        np.testing.assert_array_equal(table.of(batch, 6), expected(batch, 6))
        assert len(table) <= max(3, len(batch[0]))
    assert len(table) == 5  # one batch with more forms than the limit: all of them kept


def test_the_limit_must_keep_a_form() -> None:
    with pytest.raises(ValueError, match="limit=0"):
        CharVectors(FakeChars(), CHARS, limit=0)


@given(
    st.lists(
        st.lists(st.lists(st.text("abcdéz", min_size=1, max_size=25), max_size=6), max_size=4),
        min_size=1,
        max_size=5,
    ),
    st.integers(1, 8),
)
def test_any_batches_give_each_word_its_own_vector(
    batches: list[list[list[str]]], limit: int
) -> None:
    table = CharVectors(FakeChars(), CHARS, limit=limit)
    for forms in batches:
        positions = 1 + max((len(s) for s in forms), default=0)
        np.testing.assert_array_equal(table.of(forms, positions), expected(forms, positions))


def test_threads_share_a_table() -> None:
    table = CharVectors(FakeChars(), CHARS, limit=4)
    batches = [[[f"{a}{b}" for b in "abcde"]] for a in "abcde"] * 4
    errors: list[BaseException] = []

    def parse(forms: list[list[str]]) -> None:
        try:
            np.testing.assert_array_equal(table.of(forms, 6), expected(forms, 6))
        except AssertionError as error:  # reported in the main thread
            errors.append(error)

    threads = [threading.Thread(target=parse, args=(b,)) for b in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
