"""UPOS, XPOS and FEATS chosen together among the training data's tag sets: the best set by the
sum of the columns' log-probabilities (brute force on small cases), whatever the chunking, and
nothing to choose with fewer than two columns or no set the vocabularies hold."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import biaffine.inference.choices as choices
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.inference.choices import joint_tags

CLASSES = {"upos": ["NOUN", "VERB", "PROPN"], "xpos": ["NN", "VB", "NNP"], "feats": ["_", "A=1"]}
VOCABS = Vocabs(
    words=Vocab([*SPECIALS, "w"]),
    chars=Vocab([*SPECIALS, "c"]),
    rels=Vocab(["root"], specials=False),
    columns={column: Vocab([*SPECIALS, *values]) for column, values in CLASSES.items()},
)
ALL_SETS = list(itertools.product(*CLASSES.values()))


def log_softmax(row: np.ndarray) -> np.ndarray:
    """Over the real classes (the specials' scores never count)."""
    real = row[len(SPECIALS) :].astype(np.float64)
    return real - np.log(np.exp(real - real.max()).sum()) - real.max()


def brute_force_best(
    scores: dict[str, np.ndarray], sets: list[tuple[str, ...]], word: int
) -> float:
    """The highest sum of log-probabilities of any set for one word, every set tried."""
    columns = list(scores)
    best = -np.inf
    for tags in sets:
        total = 0.0
        for column in columns:
            position = ("upos", "xpos", "feats").index(column)
            class_id = VOCABS.columns[column].stoi[tags[position]] - len(SPECIALS)
            total += log_softmax(scores[column][word])[class_id]
        best = max(best, total)
    return best


@settings(max_examples=150, deadline=None)
@given(
    st.data(),
    st.integers(1, 4),
    st.lists(st.sampled_from(ALL_SETS), min_size=1, max_size=10, unique=True),
    st.sampled_from([("upos", "xpos", "feats"), ("upos", "feats"), ("xpos", "upos")]),
    st.sampled_from([1, 3, 1 << 20]),
)
def test_each_word_gets_the_tag_set_with_the_highest_sum_of_log_probabilities(
    data, words: int, sets: list[tuple[str, str, str]], columns: tuple[str, ...], cells: int
) -> None:
    scores = {}
    for column in columns:
        width = len(SPECIALS) + len(CLASSES[column])
        rows = data.draw(st.lists(st.lists(st.floats(-6, 6), min_size=width, max_size=width),
                                  min_size=words, max_size=words))  # fmt: skip
        scores[column] = np.array(rows, dtype=np.float32)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(choices, "TAG_SET_CELLS", cells)  # chunks of one word and more
        chosen = joint_tags(scores, VOCABS, sets)
    assert sorted(chosen) == sorted(columns)
    projected = {
        tuple(tags[("upos", "xpos", "feats").index(c)] for c in sorted(columns)) for tags in sets
    }
    for word in range(words):
        picked = tuple(chosen[c][word] for c in sorted(columns))
        assert picked in projected  # only what training saw, on the columns scored
        one = {c: scores[c][word : word + 1] for c in columns}
        total = sum(
            log_softmax(one[c][0])[VOCABS.columns[c].stoi[chosen[c][word]] - len(SPECIALS)]
            for c in columns
        )
        assert total == pytest.approx(brute_force_best(scores, sets, word), abs=1e-9)


def test_the_independent_best_classes_give_way_to_a_set_seen_in_training() -> None:
    # UPOS says VERB (0.6 against NOUN 0.4), XPOS says NN by far: training saw NOUN-NN and
    # VERB-VB only, so NOUN-NN wins (0.4 * 0.9 against 0.6 * 0.05).
    def row(probs: dict[str, float], column: str) -> list[float]:
        logits = [-50.0] * (len(SPECIALS) + len(CLASSES[column]))
        for value, p in probs.items():
            logits[VOCABS.columns[column].stoi[value]] = np.log(p)
        return logits

    scores = {
        "upos": np.array([row({"VERB": 0.6, "NOUN": 0.4}, "upos")], dtype=np.float32),
        "xpos": np.array([row({"NN": 0.9, "VB": 0.05, "NNP": 0.05}, "xpos")], dtype=np.float32),
    }
    sets = [("NOUN", "NN", "_"), ("VERB", "VB", "_")]
    assert joint_tags(scores, VOCABS, sets) == {"upos": ["NOUN"], "xpos": ["NN"]}
    assert joint_tags(scores, VOCABS, [("VERB", "VB", "_")]) == {"upos": ["VERB"], "xpos": ["VB"]}


@pytest.mark.parametrize(
    ("columns", "sets"),
    [
        (("upos",), ALL_SETS),  # one column: nothing to choose together
        (("upos", "xpos"), [("NOUN", "XX", "_")]),  # XX: a class the vocabularies lack
        (("upos", "xpos"), [("<unk>", "NN", "_")]),  # a special's name is no class
        (("upos", "xpos"), []),
    ],
)
def test_nothing_is_chosen_together_without_two_columns_or_a_fitting_set(columns, sets) -> None:
    scores = {c: np.zeros((2, len(SPECIALS) + len(CLASSES[c])), np.float32) for c in columns}
    assert joint_tags({**scores, "lemma": np.zeros((2, 9))}, VOCABS, sets) == {}


def test_each_models_classes_read_the_same_tag_sets_apart() -> None:
    """The sets' table is kept between calls (choices._tag_set_ids): a model whose classes are
    in another order must not read the ids made for the first."""
    reordered = Vocabs(
        words=VOCABS.words,
        chars=VOCABS.chars,
        rels=VOCABS.rels,
        columns={c: Vocab([*SPECIALS, *reversed(values)]) for c, values in CLASSES.items()},
    )
    sets = [("NOUN", "NN", "_"), ("VERB", "VB", "_")]
    for vocabs in (VOCABS, reordered, VOCABS):
        scores = {}
        for column, best in (("upos", "VERB"), ("xpos", "NN")):
            logits = np.zeros((1, len(vocabs.columns[column])), dtype=np.float32)
            logits[0, vocabs.columns[column].stoi[best]] = 3.0 if column == "xpos" else 1.0
            scores[column] = logits
        assert joint_tags(scores, vocabs, sets) == {"upos": ["NOUN"], "xpos": ["NN"]}
