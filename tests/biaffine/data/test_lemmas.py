"""Lemma edit scripts: the round trip form -> script -> lemma on random strings and on every
training pair of every UD treebank, and scripts shared by words inflected alike; keep masks
against a brute force, and digit shapes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaffine.data import lemmas
from biaffine.data.columns import classes
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lemmas import (
    apply,
    apply_mask,
    digit_shape,
    is_address,
    is_annotated,
    mask_of,
    script_of,
    scripts_of,
)

# Letters of every script and case (titlecase "ǅ", "İ" whose lower case is two characters, "ß"
# whose upper case is), digits and punctuation, the script syntax's own characters included.
WORDS = st.text(
    st.characters(categories=("Lu", "Ll", "Lt", "Lo", "Nd", "Pd", "Po", "Sm"))
    | st.sampled_from("|+-=_İßǅΣς"),
    max_size=12,
)


@given(form=WORDS, lemma=WORDS)
def test_every_script_rebuilds_its_lemma(form: str, lemma: str) -> None:
    script = script_of(form, lemma)
    if not is_annotated(form, lemma):
        assert script is None
    else:
        assert apply(script, form) == lemma


@given(form=WORDS, lemma=WORDS)
def test_every_alternative_script_rebuilds_the_lemma_and_the_first_is_the_script(
    form: str, lemma: str
) -> None:
    scripts = scripts_of(form, lemma)
    if not is_annotated(form, lemma):
        assert scripts == []
        return
    assert scripts[0] == script_of(form, lemma)
    assert scripts[-1] == "=" + lemma
    assert len(set(scripts)) == len(scripts)
    assert all(apply(script, form) == lemma for script in scripts)


def test_a_vocabulary_without_a_casing_gets_the_scripts_it_knows() -> None:
    """A model trained before the F casing learns on T, U and K scripts (trainer.init_from)."""
    sentence = Sentence.from_forms(["Kodak", "HPL", "cats", "iPhone"], source="x", line=1)
    sentence = sentence.with_columns({"lemma": ["Kodak", "HPL", "cat", "iPhone"]})
    assert classes(sentence, "lemma") == ["F-0+|-0+", "F-0+|-0+", "L-0+|-1+", "F-0+|-0+"]
    old = {"T-0+|-0+", "U-0+|-0+", "L-0+|-1+"}
    expected = ["T-0+|-0+", "U-0+|-0+", "L-0+|-1+", "F-0+|-0+"]  # none known: the first
    assert classes(sentence, "lemma", old) == expected


@given(text=WORDS | st.text(st.sampled_from("aA\u03a3\u03c3\u03c2İißẞŉǅ ."), max_size=8))
def test_casing_keeps_every_position_as_one_character_at_a_time_does(text: str) -> None:
    """str.lower and str.upper in C where they agree with a character-by-character mapping."""
    assert lemmas._lower(text) == "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    assert lemmas._upper(text) == "".join(c if len(c.upper()) != 1 else c.upper() for c in text)


@given(stem=st.text(st.characters(categories=("Ll",)), min_size=1, max_size=8), ending=WORDS)
def test_a_lower_case_lemma_followed_by_an_ending_is_one_suffix_cut(stem: str, ending: str) -> None:
    assert script_of(stem + ending, stem) == f"L-0+|-{len(ending)}+"


@pytest.mark.parametrize(
    ("pairs", "script"),
    [
        ([("cats", "cat"), ("dogs", "dog"), ("Trees", "tree")], "L-0+|-1+"),
        ([("gemacht", "machen"), ("gesagt", "sagen")], "L-2+|-1+en"),
        ([("Kodak", "Kodak"), ("HPL", "HPL"), ("01-Feb-02", "01-Feb-02")], "F-0+|-0+"),
        ([("McDonald's", "McDonald"), ("iPhone's", "iPhone"), ("NASA's", "NASA")], "F-0+|-2+"),
        ([("PARIS", "Paris"), ("LONDON", "London")], "T-0+|-0+"),
        ([("Nasa", "NASA"), ("Un", "UN")], "U-0+|-0+"),
        ([("ge-McDonald", "McDonald"), ("xx-iPhone", "iPhone")], "K-3+|-0+"),
        ([("was", "be"), ("is", "be")], "=be"),
    ],
)
def test_words_inflected_alike_share_one_script(pairs: list[tuple[str, str]], script: str) -> None:
    assert {script_of(form, lemma) for form, lemma in pairs} == {script}


def test_unannotated_lemmas_have_no_script_but_an_underscore_word_has() -> None:
    assert script_of("cats", "_") is None
    assert apply(script_of("_", "_"), "_") == "_"


def test_a_script_for_longer_words_does_not_apply_and_garbage_is_refused() -> None:
    assert apply("L-0+|-4+", "cats") is None
    assert apply("L-0+|-3+", "cats") == "c"
    for garbage in ("", "X-0+|-0+", "L-0+", "L0+|-0+", "L-a+|-0+", "L-0|-0+", "L-\u0661+|-0+"):
        with pytest.raises(ValueError, match="not a lemma edit script"):
            apply(garbage, "cats")


@given(
    form=st.text(st.sampled_from(" \u00a0\u3000\x0bsS"), min_size=1, max_size=5),
    script=st.sampled_from(["L-0+|-1+", "K-1+|-0+", "F-0+|-2+", "T-1+|-1+", "U-0+|-1+"]),
)
def test_a_script_leaves_a_lemma_with_something_but_whitespace_or_none(
    form: str, script: str
) -> None:
    # " s" cut by one was " ", which no CoNLL-U column holds: the parse failed on its LEMMA.
    lemma = apply(script, form)
    assert lemma is None or lemma.strip()


def test_the_script_of_every_training_pair_of_every_ud_treebank_rebuilds_its_lemma(
    ud_root: Path,
) -> None:
    paths = sorted(ud_root.glob("UD_*/*-train.conllu"))
    assert paths, f"no training files under {ud_root}"
    for path in paths:
        pairs = {
            (form, lemma)
            for sentence in read_conllu(path)
            for form, lemma in zip(sentence.forms, sentence.lemmas, strict=True)
        }
        wrong = [p for p in pairs if is_annotated(*p) and apply(script_of(*p), p[0]) != p[1]]
        assert wrong == [], path.name


def every_mask_lemma(form: str) -> set[str]:
    """Every lemma some keep mask makes of ``form``: each character kept, lower-cased or dropped."""
    choices = [{c, c.lower(), ""} if len(c.lower()) == 1 else {c, ""} for c in form]
    return {"".join(chosen) for chosen in itertools.product(*choices)}


SHORT = st.text(st.sampled_from("aAbB01,İ-"), max_size=7)


@given(form=SHORT, lemma=SHORT)
def test_a_keep_mask_exists_exactly_where_a_brute_force_finds_one(form: str, lemma: str) -> None:
    mask = mask_of(form, lemma)
    assert (mask is not None) == (lemma in every_mask_lemma(form))
    if mask is not None:
        assert len(mask) == len(form)
        assert apply_mask(mask, form) == lemma
    shape = digit_shape(form)
    assert shape is None if not any(c.isdigit() for c in form) else len(shape) == len(form)


@given(form=WORDS, lemma=WORDS)
def test_every_keep_mask_rebuilds_its_lemma(form: str, lemma: str) -> None:
    mask = mask_of(form, lemma)
    assert mask is None or apply_mask(mask, form) == lemma


@pytest.mark.parametrize(
    ("form", "lemma", "shape", "mask"),
    [
        ("420,588", "420588", "000,000", "...-..."),
        ("01-Feb-02", "01-Feb-02", "00-Aaa-00", "........."),
        ("E17", "e17", "A00", "l.."),
        ("1990s", "1990", "0000a", "....-"),
        ("2nd", "second", "0aa", None),
        ("cats", "cat", None, "...-"),  # a mask, but no shape: no digit
    ],
)
def test_digit_shapes_and_keep_masks(form, lemma, shape, mask) -> None:
    assert digit_shape(form) == shape
    assert mask_of(form, lemma) == mask


def test_a_keep_mask_must_fit_its_form() -> None:
    with pytest.raises(ValueError, match="a keep mask of 3 characters for a form of 4"):
        apply_mask("...", "1,00")


@pytest.mark.parametrize(
    "form",
    [
        "http://en.wikipedia.org/wiki/Cubism",
        "https://example.org/a?b=c&d=e",
        "www.cogniview.com",
        "Kevin.A.Boone@accenture.com",
        "gottlie...@yahoo.com",
        "unitedway.enron.com",
        "Seattlepi.com",
        "amazon.com/gp/product/B000",
    ],
)
def test_web_and_email_addresses_are_addresses(form: str) -> None:
    assert is_address(form)


@pytest.mark.parametrize(
    "form",
    ["TEXT.htm", "Mr.Smith", "e.g.", "U.S.", "a.m.", "3.5", "foo@bar", "@user", "#tag", "com", ""],
)
def test_words_file_names_and_handles_are_not_addresses(form: str) -> None:
    assert not is_address(form)


@pytest.mark.ud
def test_ewt_training_keeps_the_form_of_nearly_every_address(ud_root: Path) -> None:
    """The rule's evidence: EWT's training file keeps the form as the lemma of its addresses
    (244 of 246 when this was written; the other two are one odd pair, Compaq.com)."""
    path = ud_root / "UD_English-EWT" / "en_ewt-ud-train.conllu"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    pairs = [
        (form, lemma)
        for sentence in read_conllu(path)
        for form, lemma in zip(sentence.forms, sentence.lemmas, strict=True)
        if is_address(form)
    ]
    kept = sum(form == lemma for form, lemma in pairs)
    assert len(pairs) > 200
    assert kept >= 0.99 * len(pairs)
