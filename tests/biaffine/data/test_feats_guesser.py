"""The torch-free FEATS guesser: its scores by hand, the UPOS's values only, plain data, a
word's pick independent of its batch, and its place in the lexicon."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.data.character_model import SPECIAL_SYMBOLS, encoder_shapes
from biaffine.data.feats_guesser import FeatsGuesser
from biaffine.data.lexicon import Lexicon

CHARS = tuple("abcdeklmnrsz")
TAGS = ("NOUN", "VERB")
CLASSES = ("Case=Loc", "Case=Nom", "Mood=Ind", "_")
ALLOWED = {"NOUN": (0, 1, 3), "VERB": (2, 3)}


def random_guesser(seed: int = 0, scale: float = 1.0, weight: float | None = None) -> FeatsGuesser:
    """Random weights, rounded to float16 as plain data stores them (so round trips are exact)."""
    rng = np.random.default_rng(seed)
    shapes = FeatsGuesser.shapes_for(
        SPECIAL_SYMBOLS + len(CHARS) + len(TAGS), 6, 5, {"classes": CLASSES}
    )
    weights = {
        name: (scale * rng.standard_normal(shape)).astype(np.float16).astype(np.float32)
        for name, shape in shapes.items()
    }
    return FeatsGuesser(CHARS, TAGS, 6, 5, weights, CLASSES, ALLOWED, weight)


def lstm_by_hand(inputs: list[np.ndarray], w_ih, w_hh, b) -> list[np.ndarray]:
    """A plain LSTM over a list of input vectors (torch's gate order), one state per step."""
    h, c, out = np.zeros(w_hh.shape[1]), np.zeros(w_hh.shape[1]), []
    for x in inputs:
        i, f, g, o = np.split(w_ih @ x + w_hh @ h + b, 4)
        sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return out


def states_by_hand(guesser: FeatsGuesser, form: str, upos: str) -> list[np.ndarray]:
    """The BiLSTM's state at each symbol of a word, in float64 (forward, then backward)."""
    w = {k: v.astype(np.float64) for k, v in guesser.weights.items()}
    inputs = [w["embed.weight"][k] for k in guesser.source(form, upos)]
    forward = lstm_by_hand(
        inputs, w["encoder.weight_ih_l0"], w["encoder.weight_hh_l0"],
        w["encoder.bias_ih_l0"] + w["encoder.bias_hh_l0"],
    )  # fmt: skip
    backward = lstm_by_hand(
        inputs[::-1], w["encoder.weight_ih_l0_reverse"], w["encoder.weight_hh_l0_reverse"],
        w["encoder.bias_ih_l0_reverse"] + w["encoder.bias_hh_l0_reverse"],
    )[::-1]  # fmt: skip
    return [np.concatenate([f, b]) for f, b in zip(forward, backward, strict=True)]


def test_each_words_states_are_its_own_in_its_place_and_zero_past_its_end() -> None:
    guesser = random_guesser(scale=2.0)
    words = [("ke", "NOUN"), ("kedilerde", "VERB"), ("", "NOUN"), ("kedi", "ADJ"), ("ab", "VERB")]
    symbols, states = guesser._read(words)
    assert symbols.order.tolist() == [1, 3, 0, 4, 2]  # longest first, ties as given
    assert symbols.lengths.tolist() == [10, 5, 3, 3, 1]  # the UPOS, then each character
    assert symbols.reading.tolist() == [5, 4, 4, 2, 2, 1, 1, 1, 1, 1]
    assert states.shape == (5, 10, 10)
    for row, (k, n) in enumerate(zip(symbols.order, symbols.lengths, strict=True)):
        expected = np.array(states_by_hand(guesser, *words[k]))
        np.testing.assert_allclose(states[row, :n], expected, rtol=1e-4, atol=1e-5)
        assert not states[row, n:].any()


def test_scores_are_the_head_over_the_mean_and_both_directions_last_states() -> None:
    guesser = random_guesser()
    w = {k: v.astype(np.float64) for k, v in guesser.weights.items()}
    form, upos = "kedi", "VERB"
    states = states_by_hand(guesser, form, upos)
    forward, backward = [s[:5] for s in states], [s[5:] for s in states]
    features = np.concatenate([np.mean(states, 0), forward[-1], backward[0]])
    expected = w["out.weight"] @ features + w["out.bias"]
    scores = guesser.scores([(form, upos)])[0]
    allowed = list(ALLOWED[upos])
    np.testing.assert_allclose(scores[allowed], expected[allowed], rtol=1e-4, atol=1e-5)
    assert np.isneginf(np.delete(scores, allowed)).all()
    assert guesser.feats([(form, upos)]) == [CLASSES[allowed[int(np.argmax(expected[allowed]))]]]


def test_a_word_takes_a_value_training_had_with_its_upos_any_for_an_unknown_upos() -> None:
    guesser = random_guesser(scale=3.0)
    words = [(form, upos) for form in ("a", "kedi", "masalar", "zz") for upos in TAGS]
    for (_, upos), picked in zip(words, guesser.feats(words), strict=True):
        assert CLASSES.index(picked) in ALLOWED[upos]
    unknown = guesser.scores([("kedi", "ADJ")])
    assert np.isfinite(unknown).all()


def test_plain_data_survives_json_exactly_and_picks_the_same() -> None:
    guesser = random_guesser(scale=2.0)
    data = json.loads(json.dumps(guesser.to_dict()))
    back = FeatsGuesser.from_dict(data)
    assert back == guesser
    assert back != random_guesser(seed=1, scale=2.0)
    words = [("kedilerde", "NOUN"), ("masa", "VERB"), ("", "NOUN")]
    assert back.feats(words) == guesser.feats(words)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("allowed"), "lacks keys"),
        (lambda d: d.update(classes=[1, 2, 3, 4]), "must be strings"),
        (lambda d: d["allowed"].update(NOUN=[7]), "are not its ids"),
        (lambda d: d.update(classes=[*CLASSES, "Number=Plur"]), r"weight 'out\.\w+' has"),
    ],
)
def test_bad_plain_data_is_refused(change, message: str) -> None:
    data = json.loads(json.dumps(random_guesser().to_dict()))
    change(data)
    with pytest.raises(ValueError, match=message):
        FeatsGuesser.from_dict(data)


def test_weights_of_the_wrong_shape_are_refused() -> None:
    guesser = random_guesser()
    weights = dict(guesser.weights)
    weights["out.bias"] = np.zeros(3, dtype=np.float32)
    with pytest.raises(ValueError, match="FEATS guesser weights"):
        FeatsGuesser(CHARS, TAGS, 6, 5, weights, CLASSES, ALLOWED)
    assert set(encoder_shapes(18, 6, 5)) < set(guesser.weights)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(alphabet="abcdek?", max_size=9), st.sampled_from([*TAGS, "ADJ"])),
        min_size=1,
        max_size=12,
    )
)
def test_a_words_pick_does_not_depend_on_its_batch(words: list[tuple[str, str]]) -> None:
    guesser = random_guesser(scale=2.0)
    alone = [guesser.feats([word])[0] for word in words]
    assert guesser.feats(words) == alone
    assert guesser.feats(words, workers=3) == alone  # smaller batches, side by side
    np.testing.assert_allclose(
        guesser.scores(words), np.concatenate([guesser.scores([w]) for w in words]), atol=1e-5
    )


def test_the_lexicon_keeps_its_guesser_in_plain_data() -> None:
    lexicon = Lexicon(tagged={("kedi", "NOUN"): "kedi"}, feats_guesser=random_guesser())
    back = Lexicon.from_dict(json.loads(json.dumps(lexicon.to_dict())))
    assert back == lexicon
    assert back.feats_guesser == lexicon.feats_guesser
    assert "feats_guesser" not in Lexicon(tagged={("kedi", "NOUN"): "kedi"}).to_dict()


def test_weighed_its_log_probabilities_join_the_taggers_and_alone_its_pick_is_its_own() -> None:
    words = [("kedilerde", "NOUN"), ("masa", "VERB"), ("kedi", "ADJ"), ("masa", "VERB")]
    rng = np.random.default_rng(2)
    tagger = np.log(rng.dirichlet(np.ones(len(CLASSES)), size=len(words)))
    alone = random_guesser(scale=2.0)
    log_probs = alone.log_probs(words)
    for row, (_, upos) in enumerate(words):
        allowed = list(ALLOWED.get(upos, range(len(CLASSES))))
        np.testing.assert_allclose(np.exp(log_probs[row, allowed]).sum(), 1.0, rtol=1e-5)
        assert np.isneginf(np.delete(log_probs[row], allowed)).all()
    assert alone.feats(words, tagger) == alone.feats(words)  # no weight: the tagger unread
    for weight in (0.5, 2.0):
        weighed = random_guesser(scale=2.0, weight=weight)
        expected = (tagger + weight * log_probs).argmax(1)
        assert weighed.feats(words, tagger) == [CLASSES[k] for k in expected]
        assert weighed.feats(words) == alone.feats(words)
    # A tagger sure enough of a value the UPOS allows outweighs the guesser; one it does
    # not allow never wins.
    sure = np.full((1, len(CLASSES)), -50.0)
    sure[0, CLASSES.index("Mood=Ind")] = 0.0
    assert random_guesser(weight=0.5).feats([("kedi", "VERB")], sure) == ["Mood=Ind"]
    assert random_guesser(weight=0.5).feats([("kedi", "NOUN")], sure) != ["Mood=Ind"]


def test_its_weight_travels_in_plain_data_only_where_it_has_one() -> None:
    weighed = random_guesser(weight=2.0)
    data = json.loads(json.dumps(weighed.to_dict()))
    assert data["weight"] == 2.0
    assert FeatsGuesser.from_dict(data) == weighed
    assert FeatsGuesser.from_dict(data) != random_guesser()
    assert "weight" not in random_guesser().to_dict()  # as written before it had one
    data["weight"] = "2"
    with pytest.raises(ValueError, match="weight must be a number"):
        FeatsGuesser.from_dict(data)
    for weight in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite and > 0"):
            random_guesser(weight=weight)
