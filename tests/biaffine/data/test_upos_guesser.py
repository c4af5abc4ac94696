"""The torch-free UPOS guesser: its log-probabilities by hand, characters only, plain data, a
word's scores independent of its batch, and its place in the lexicon."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from data.test_feats_guesser import states_by_hand
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.data.character_model import SPECIAL_SYMBOLS, UNKNOWN
from biaffine.data.lexicon import Lexicon
from biaffine.data.upos_guesser import UposGuesser

CHARS = tuple("abcdeklmnrsz")
CLASSES = ("ADJ", "NOUN", "VERB")


def random_upos_guesser(seed: int = 0, scale: float = 1.0, weight: float = 0.5) -> UposGuesser:
    """Random weights, rounded to float16 as plain data stores them (so round trips are exact)."""
    rng = np.random.default_rng(seed)
    shapes = UposGuesser.shapes_for(SPECIAL_SYMBOLS + len(CHARS), 6, 5, {"classes": CLASSES})
    weights = {
        name: (scale * rng.standard_normal(shape)).astype(np.float16).astype(np.float32)
        for name, shape in shapes.items()
    }
    return UposGuesser(CHARS, (), 6, 5, weights, CLASSES, weight)


def log_probs_by_hand(guesser: UposGuesser, form: str) -> np.ndarray:
    """float64[C]: the head over the hand-made states' mean and last states, log-softmaxed."""
    states = states_by_hand(guesser, form, "")
    hidden = guesser.hidden
    features = np.concatenate([np.mean(states, 0), states[-1][:hidden], states[0][hidden:]])
    w = {k: v.astype(np.float64) for k, v in guesser.weights.items()}
    scores = w["out.weight"] @ features + w["out.bias"]
    return scores - np.log(np.exp(scores - scores.max()).sum()) - scores.max()


def test_log_probs_are_those_of_the_network_written_out_by_hand() -> None:
    guesser = random_upos_guesser(scale=0.5)
    forms = ["kedilerde", "a", "masa?", "ev"]
    found = guesser.log_probs(forms)
    assert found.shape == (4, 3)
    assert found.dtype == np.float32
    for row, form in enumerate(forms):
        np.testing.assert_allclose(found[row], log_probs_by_hand(guesser, form), atol=1e-5)
    np.testing.assert_allclose(np.exp(found).sum(1), 1.0, rtol=1e-5)


def test_it_reads_the_characters_alone() -> None:
    guesser = random_upos_guesser()
    assert guesser.source("ka", "NOUN") == guesser.source("ka", "VERB") == [4 + 5, 4 + 0]
    assert guesser.source("kx", "") == [4 + 5, UNKNOWN]
    assert guesser.source("", "") == [UNKNOWN]  # no word reads nothing
    assert np.isfinite(guesser.log_probs([""])).all()


def test_plain_data_survives_json_exactly_and_scores_the_same() -> None:
    guesser = random_upos_guesser(scale=2.0, weight=0.75)
    back = UposGuesser.from_dict(json.loads(json.dumps(guesser.to_dict())))
    assert back == guesser
    assert back != random_upos_guesser(scale=2.0, weight=0.5)  # the weight is the model's
    assert back != random_upos_guesser(seed=1, scale=2.0, weight=0.75)
    forms = ["kedilerde", "masa", "kedilerde"]
    np.testing.assert_array_equal(back.log_probs(forms), guesser.log_probs(forms))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("weight"), "lacks keys"),
        (lambda d: d.update(weight="0.5"), "must be a number"),
        (lambda d: d.update(weight=True), "must be a number"),
        (lambda d: d.update(weight=-1), "finite and >= 0"),
        (lambda d: d.update(weight=math.inf), "finite and >= 0"),
        (lambda d: d.update(classes=[1, 2, 3]), "must be strings"),
        (lambda d: d.update(tags=["NOUN"]), r"weight 'embed\.weight' has"),
        (lambda d: d.update(classes=[*CLASSES, "ADV"]), r"weight 'out\.\w+' has"),
    ],
)
def test_bad_plain_data_is_refused(change, message: str) -> None:
    data = json.loads(json.dumps(random_upos_guesser().to_dict()))
    change(data)
    with pytest.raises(ValueError, match=message):
        UposGuesser.from_dict(data)


def test_a_guesser_that_would_read_a_upos_or_weigh_less_than_nothing_is_refused() -> None:
    guesser = random_upos_guesser()
    fields = (CHARS, (), 6, 5, guesser.weights, CLASSES)
    with pytest.raises(ValueError, match="reads no UPOS"):
        UposGuesser(CHARS, ("NOUN",), *fields[2:], 0.5)
    for weight in (-0.5, math.nan):
        with pytest.raises(ValueError, match="finite and >= 0"):
            UposGuesser(*fields, weight)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet="abcdek?", max_size=9), min_size=1, max_size=12))
def test_a_words_scores_do_not_depend_on_the_others_read_with_it(forms: list[str]) -> None:
    guesser = random_upos_guesser(scale=1.5)
    together = guesser.log_probs(forms)
    for row, form in enumerate(forms):
        np.testing.assert_allclose(together[row], guesser.log_probs([form])[0], atol=1e-5)
    np.testing.assert_allclose(guesser.log_probs(forms, workers=3), together, atol=1e-6)


def test_the_lexicon_carries_it_in_plain_data() -> None:
    lexicon = Lexicon(tagged={("ev", "NOUN"): "ev"}, upos_guesser=random_upos_guesser())
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert set(data) == {"tagged", "forms", "upos_guesser"}
    back = Lexicon.from_dict(data)
    assert back == lexicon
    assert Lexicon.from_dict({"tagged": [], "forms": []}).upos_guesser is None
