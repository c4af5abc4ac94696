"""The torch-free lemma generator: symbols, plain data, a word's lemma independent of its batch,
its place in the lexicon, and the rule that chooses between its lemma and the classifier's."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.data.columns import prefer_written, strings
from biaffine.data.lemma_generator import (
    BOS,
    EOS,
    PAD,
    SPECIAL_SYMBOLS,
    UNKNOWN,
    LemmaGenerator,
    weight_shapes,
)
from biaffine.data.lexicon import Lexicon

CHARS = tuple("abcdeklmnrsz")
TAGS = ("NOUN", "VERB")


def random_generator(seed: int = 0, scale: float = 1.0) -> LemmaGenerator:
    """Random weights, rounded to float16 as plain data stores them (so round trips are exact)."""
    rng = np.random.default_rng(seed)
    shapes = weight_shapes(SPECIAL_SYMBOLS + len(CHARS) + len(TAGS), dim=6, hidden=5)
    weights = {
        name: (scale * rng.standard_normal(shape)).astype(np.float16).astype(np.float32)
        for name, shape in shapes.items()
    }
    return LemmaGenerator(CHARS, TAGS, 6, 5, weights)


def test_symbols_are_the_upos_then_the_characters_and_text_stops_at_the_end() -> None:
    generator = random_generator()
    a, b, noun, verb = 4, 5, 4 + len(CHARS), 5 + len(CHARS)
    assert generator.source("ab?", "VERB") == [verb, a, b, UNKNOWN]
    assert generator.source("a", "X") == [UNKNOWN, a]
    assert generator.target("ba") == [b, a, EOS]
    # Specials and tags write nothing; nothing after the end counts.
    assert generator.text([a, PAD, BOS, UNKNOWN, noun, b, EOS, a]) == "ab"
    assert generator.text([b, b]) == "bb"


def test_plain_data_survives_json_exactly_and_writes_the_same_lemmas() -> None:
    generator = random_generator(scale=2.0)
    data = json.loads(json.dumps(generator.to_dict()))
    back = LemmaGenerator.from_dict(data)
    assert back == generator
    assert back != random_generator(seed=1, scale=2.0)
    words = [("kedilerde", "NOUN"), ("masa", "VERB"), ("", "NOUN")]
    assert back.lemmas(words) == generator.lemmas(words)
    assert len(generator.lemmas(words)) == 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("hidden"), "lacks keys"),
        (lambda d: d.update(chars=[1, 2]), "strings"),
        (lambda d: d["weights"].update({"out.bias": "AAAA"}), "'out.bias' has 1.5 values"),
        (lambda d: d["weights"].update({"extra": "AAAA"}), "'extra'"),
        (lambda d: d["weights"].pop("attend.weight"), "are not those of"),
    ],
)
def test_bad_plain_data_is_refused(change, message: str) -> None:
    data = random_generator().to_dict()
    change(data)
    with pytest.raises(ValueError, match=message):
        LemmaGenerator.from_dict(data)


WORDS = st.lists(
    st.tuples(st.text(alphabet="abcdeklmnrsz?", min_size=0, max_size=12), st.sampled_from(TAGS)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=30, deadline=None)
@given(words=WORDS, seed=st.integers(0, 3))
def test_a_words_lemma_does_not_depend_on_the_other_words_of_its_batch(words, seed) -> None:
    # Padding must neither enter the backward direction, the decoder's first state, nor the
    # attention, and each word stops at its own limit.
    generator = random_generator(seed, scale=1.5)
    together = generator.lemmas(words)
    assert together == [generator.lemmas([word])[0] for word in words]
    assert generator.lemmas(words, workers=3) == together  # smaller batches, side by side
    limits = [2 * (len(form) + 1) + 8 for form, _ in words]
    assert all(len(lemma) <= limit for lemma, limit in zip(together, limits, strict=True))


def test_the_lexicon_holds_its_generator_as_plain_data_and_knows_the_forms_it_lacks() -> None:
    lexicon = Lexicon(tagged={("kediler", "NOUN"): "kedi"}, forms={"masalar": "masa"})
    assert "generator" not in lexicon.to_dict()
    assert Lexicon.from_dict(lexicon.to_dict()).generator is None
    with_generator = Lexicon(lexicon.tagged, lexicon.forms, generator=random_generator())
    back = Lexicon.from_dict(json.loads(json.dumps(with_generator.to_dict())))
    assert back == with_generator
    assert back.generator == random_generator()
    assert not lexicon.lacks("kediler")
    assert not lexicon.lacks("masalar")
    assert lexicon.lacks("Kediler")
    assert lexicon.lacks("kedi")


@pytest.mark.parametrize(
    ("found", "written", "chosen"),
    [
        ("kedi", "kedil", "kedi"),  # only the classifier's is a training lemma
        ("Kedi", "kedil", "Kedi"),  # case aside
        ("kedil", "kedi", "kedi"),  # only the generator's is
        ("masa", "kedi", "kedi"),  # both are: the generator's
        ("kedile", "kedil", "kedil"),  # neither is: the generator's
        ("kedi", None, "kedi"),  # none written (a form training has)
        ("kedile", "", "kedile"),  # an empty one
    ],
)
def test_the_generators_lemma_wins_unless_only_the_classifiers_is_a_training_lemma(
    found: str, written: str | None, chosen: str
) -> None:
    lexicon = Lexicon(tagged={("kediler", "NOUN"): "kedi"}, forms={"masalar": "masa"})
    assert prefer_written(found, written, lexicon) == chosen
    assert prefer_written(found, written, None) == found


def test_strings_apply_the_rule_after_the_lexicon_and_the_scripts() -> None:
    lexicon = Lexicon(tagged={("kediler", "NOUN"): "kedi"}, forms={"masalar": "masa"})
    cut_three = "L-0+|-3+"
    forms = ["kediler", "kitaplar", "kediyle"]
    found = strings(
        "lemma",
        [cut_three] * 3,
        forms,
        lexicon=lexicon,
        upos=["NOUN"] * 3,
        written=[None, "kitapl", "kedil"],
    )
    # The lexicon's; the generator's where neither its lemma nor the script's ("kitap") is a
    # training lemma; the script's where its "kedi" is one and the generator's "kedil" is not.
    assert found == ["kedi", "kitapl", "kedi"]
