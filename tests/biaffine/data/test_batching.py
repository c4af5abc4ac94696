"""Tests for batching: encoding, padding and masks, token budgets, order, determinism."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from biaffine.data.batching import (
    IGNORE_INDEX,
    Batch,
    Encoded,
    batches_by_tokens,
    collate,
    encode,
    plan_batches,
)
from biaffine.data.conllu import Sentence, read_conllu, read_text
from biaffine.data.lemmas import apply
from biaffine.data.vocab import PAD, ROOT, UNK, Vocabs, build_vocabs

TINY = Path(__file__).parents[2] / "data" / "tiny.conllu"


@pytest.fixture(scope="module")
def tiny() -> list[Sentence]:
    return list(read_conllu(TINY, require_trees=True))


@pytest.fixture(scope="module")
def vocabs(tiny: list[Sentence]) -> Vocabs:
    return build_vocabs(tiny)


def synthetic(lengths: list[int]) -> list[Encoded]:
    """Encoded sentences of the given lengths whose words all carry their sentence number."""
    items = []
    for s, n in enumerate(lengths):
        ids = np.array([ROOT] + [3 + s] * n, dtype=np.int32)
        chars = np.full((n + 1, 2), 3 + s, dtype=np.int32)
        chars[0] = [ROOT, PAD]
        heads = np.arange(-1, n, dtype=np.int32)
        heads[0] = 0
        rels = np.array([IGNORE_INDEX] + [s % 7] * n, dtype=np.int32)
        columns = {name: ids.copy() for name in ("upos", "xpos", "feats")}
        items.append(Encoded(words=ids, chars=chars, heads=heads, rels=rels, columns=columns))
    return items


# --- encode -----------------------------------------------------------------------------------


def test_encode_puts_root_at_position_zero(tiny: list[Sentence], vocabs: Vocabs) -> None:
    encoded = encode(tiny, vocabs)
    assert len(encoded) == len(tiny)
    for sentence, item in zip(tiny, encoded, strict=True):
        n = len(sentence)
        assert len(item) == n
        for name in ("words", "heads", "rels"):
            assert getattr(item, name).shape == (n + 1,), name
        for name in ("upos", "xpos", "feats", "lemma"):
            assert item.columns[name].shape == (n + 1,), name
            assert item.columns[name][0] == ROOT
        assert item.words[0] == ROOT
        assert item.heads[0] == 0
        assert item.heads[1:].tolist() == sentence.heads
        assert item.rels[0] == IGNORE_INDEX
        assert [vocabs.rels.itos[r] for r in item.rels[1:]] == sentence.deprels
        for name in ("upos", "xpos", "feats"):
            ids = item.columns[name][1:]
            assert [vocabs.columns[name].itos[t] for t in ids] == getattr(sentence, name)
        scripts = [vocabs.columns["lemma"].itos[t] for t in item.columns["lemma"][1:]]
        lemmas = [apply(s, form) for s, form in zip(scripts, sentence.forms, strict=True)]
        assert lemmas == sentence.lemmas
        assert item.chars[0].tolist() == [ROOT] + [PAD] * (item.chars.shape[1] - 1)


def test_encode_maps_unknowns(tiny: list[Sentence], vocabs: Vocabs) -> None:
    sentence = tiny[0].with_tree([2, 3, 0, 3], ["det", "brand-new-label", "root", "punct"])
    item = encode([sentence], vocabs)[0]
    assert item.words[1] == UNK  # "The" occurs once: below min_word_count=2
    assert item.rels[2] == IGNORE_INDEX
    assert item.rels[3] == vocabs.rels["root"]
    unknown_chars = encode([Sentence.from_forms(["ß☃"])], vocabs)[0]
    assert unknown_chars.chars[1].tolist() == [UNK, UNK]


def test_encode_truncates_chars_and_pads_short_words(vocabs: Vocabs) -> None:
    sentence = Sentence.from_forms(["abcdefghij", "a", "the"])
    item = encode([sentence], vocabs, max_word_chars=4)[0]
    assert item.chars.shape == (4, 4)
    chars = vocabs.chars
    assert item.chars[1].tolist() == [chars[c] for c in "abcd"]
    assert item.chars[2].tolist() == [chars["a"], PAD, PAD, PAD]
    assert item.chars[3].tolist() == [chars["t"], chars["h"], chars["e"], PAD]
    with pytest.raises(ValueError, match="max_word_chars"):
        encode([sentence], vocabs, max_word_chars=0)


def test_unannotated_sentences_have_zero_heads_and_ignored_rels(vocabs: Vocabs) -> None:
    item = encode(list(read_text(io.StringIO("the cat sat\n"))), vocabs)[0]
    assert item.heads.tolist() == [0, 0, 0, 0]
    assert item.rels.tolist() == [IGNORE_INDEX] * 4


# --- padding and masks -------------------------------------------------------------------------


def test_collate_pads_and_masks(tiny: list[Sentence], vocabs: Vocabs) -> None:
    encoded = encode(tiny, vocabs)
    batch = collate(encoded, list(range(len(encoded))))
    size, positions = len(tiny), max(map(len, tiny)) + 1
    width = max(item.chars.shape[1] for item in encoded)
    assert batch.words.shape == (size, positions)
    assert batch.chars.shape == (size, positions, width)
    for name in ("words", "chars", "heads", "rels", "lengths", "indices"):
        assert getattr(batch, name).dtype == torch.long, name
    assert all(ids.dtype == torch.long for ids in batch.columns.values())
    assert batch.mask.dtype == torch.bool
    for b, item in enumerate(encoded):
        m = len(item) + 1
        assert batch.lengths[b] == len(item)
        assert batch.mask[b].tolist() == [False] + [True] * len(item) + [False] * (positions - m)
        assert batch.words[b, :m].tolist() == item.words.tolist()
        assert (batch.words[b, m:] == PAD).all()
        for ids in batch.columns.values():
            assert (ids[b, m:] == PAD).all()
        assert (batch.heads[b, m:] == 0).all()
        assert (batch.rels[b, m:] == IGNORE_INDEX).all()
        assert (batch.chars[b, m:] == PAD).all(), "padding words have all-PAD chars"
        assert batch.chars[b, :m, : item.chars.shape[1]].tolist() == item.chars.tolist()
        assert (batch.chars[b, :m, item.chars.shape[1] :] == PAD).all()
        assert batch.rels[b, 0] == IGNORE_INDEX
        assert batch.heads[b, 0] == 0


def test_batch_is_frozen_and_moves_to_a_device(tiny: list[Sentence], vocabs: Vocabs) -> None:
    batch = collate(encode(tiny[:2], vocabs), [0, 1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch.words = batch.heads  # type: ignore[misc]
    moved = batch.to("cpu")
    assert isinstance(moved, Batch)
    assert moved.batch_size == 2
    assert all(
        torch.equal(getattr(moved, f.name), getattr(batch, f.name))
        for f in dataclasses.fields(batch)
        if f.name not in ("forms", "columns")
    )
    assert moved.columns.keys() == batch.columns.keys() == {"upos", "xpos", "feats", "lemma"}
    assert all(torch.equal(moved.columns[k], batch.columns[k]) for k in batch.columns)
    assert moved.forms == batch.forms == tuple(tuple(s.forms) for s in tiny[:2])


# --- token budgets, order, determinism ---------------------------------------------------------


@given(
    st.lists(st.integers(1, 60), min_size=1, max_size=80),
    st.integers(1, 200),
    st.booleans(),
    st.integers(0, 3),
)
def test_every_sentence_once_and_budget_respected(
    lengths: list[int], max_tokens: int, shuffle: bool, epoch: int
) -> None:
    plan = plan_batches(lengths, max_tokens, shuffle=shuffle, epoch=epoch)
    flat = np.concatenate(plan)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    for index in plan:
        batch_lengths = np.asarray(lengths)[index]
        assert (np.diff(batch_lengths) >= 0).all()
        if len(index) > 1:
            assert len(index) * batch_lengths.max() <= max_tokens
            assert batch_lengths.sum() <= max_tokens


def test_batches_hold_the_planned_sentences_and_indices_map_back() -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 30, size=120).tolist()
    encoded = synthetic(lengths)
    seen = []
    for batch in batches_by_tokens(encoded, 100, shuffle=True, seed=3, epoch=1):
        assert batch.words.shape[0] * (batch.words.shape[1] - 1) <= 100
        for b, index in enumerate(batch.indices.tolist()):
            n = lengths[index]
            assert batch.lengths[b] == n
            assert batch.words[b, 1 : n + 1].tolist() == [3 + index] * n
            assert batch.heads[b, : n + 1].tolist() == encoded[index].heads.tolist()
            seen.append(index)
    assert sorted(seen) == list(range(len(lengths)))


def test_a_sentence_over_budget_gets_its_own_batch() -> None:
    plan = plan_batches([3, 50, 4, 2], 10, shuffle=False)
    assert [p.tolist() for p in plan] == [[3, 0], [2], [1]]


def test_shuffle_is_deterministic_per_seed_and_epoch() -> None:
    lengths = np.random.default_rng(0).integers(1, 12, size=300).tolist()  # many ties

    def plan(seed: int, epoch: int) -> list[list[int]]:
        return [p.tolist() for p in plan_batches(lengths, 40, shuffle=True, seed=seed, epoch=epoch)]

    assert plan(1, 0) == plan(1, 0)
    assert plan(1, 0) != plan(1, 1)
    assert plan(1, 0) != plan(2, 0)
    first = list(batches_by_tokens(synthetic(lengths), 40, shuffle=True, seed=1))
    again = list(batches_by_tokens(synthetic(lengths), 40, shuffle=True, seed=1))
    assert all(torch.equal(a.indices, b.indices) for a, b in zip(first, again, strict=True))


def test_no_shuffle_runs_by_increasing_length_in_a_fixed_order() -> None:
    lengths = [5, 1, 3, 1, 5, 2]
    plans = [plan_batches(lengths, 6, shuffle=False, seed=s, epoch=e) for s, e in [(0, 0), (9, 4)]]
    assert [p.tolist() for p in plans[0]] == [[1, 3, 5], [2], [0], [4]]
    assert [p.tolist() for p in plans[1]] == [p.tolist() for p in plans[0]]


@pytest.mark.parametrize("max_tokens", [None, 2.5, "10", True])
def test_a_budget_that_is_no_integer_is_refused_naming_max_tokens(max_tokens) -> None:
    with pytest.raises(TypeError, match=r"^max_tokens=.*: expected an integer$"):
        plan_batches([3, 4], max_tokens, shuffle=False)


def test_a_numpy_integer_budget_is_an_integer() -> None:
    assert [p.tolist() for p in plan_batches([3, 4], np.int64(5), shuffle=False)] == [[0], [1]]


def test_bad_budget_and_empty_input() -> None:
    with pytest.raises(ValueError, match="max_tokens must be >= 1"):
        batches_by_tokens(synthetic([3]), 0, shuffle=False)
    assert list(batches_by_tokens([], 10, shuffle=True)) == []
