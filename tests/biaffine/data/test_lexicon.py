"""The training lemma lexicon: majorities, ties, the form-only threshold, the lookup order, and
plain data through the vocabularies."""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from biaffine.data.conllu import Sentence, read_conllu, universal_relation
from biaffine.data.lemmas import digit_shape
from biaffine.data.lexicon import (
    MIN_ADDRESSES,
    MIN_CASED_PAIRS,
    MIN_CODES,
    MIN_FORM_SHARE,
    MIN_RELATION_COUNT,
    Lexicon,
    build_lexicon,
    is_code,
)
from biaffine.data.vocab import Vocabs, build_vocabs


def sentence(*words: tuple[str, str, str]) -> Sentence:
    """A sentence of (form, UPOS, lemma) words."""
    forms, upos, lemmas = (list(column) for column in zip(*words, strict=True))
    return Sentence(forms, lemmas=lemmas, upos=upos)


def test_each_key_gets_its_majority_lemma() -> None:
    sentences = [
        sentence(("est", "AUX", "être"), ("est", "AUX", "être"), ("est", "NOUN", "est")),
        sentence(("est", "AUX", "est"), ("Est", "PROPN", "Est")),
    ]
    lexicon = build_lexicon(sentences, min_form_share=0.0)
    assert lexicon.tagged == {
        ("est", "AUX"): "être",
        ("est", "NOUN"): "est",
        ("Est", "PROPN"): "Est",
    }
    # "est": lemma être twice, est twice: a tie, to the smaller string.
    assert lexicon.forms == {"est": "est", "Est": "Est"}


def test_ties_go_to_the_smallest_lemma_whatever_the_order() -> None:
    words = [("a", "X", "b"), ("a", "X", "c"), ("a", "X", "a2"), ("a", "X", "c"), ("a", "X", "b")]
    for seed in range(5):
        random.Random(seed).shuffle(words)
        lexicon = build_lexicon([sentence(w) for w in words], min_form_share=0.0)
        assert lexicon.tagged == {("a", "X"): "b"}
        assert lexicon.forms == {"a": "b"}


def test_a_form_is_kept_alone_only_where_its_majority_covers_the_threshold() -> None:
    # "de": 3 of 4 "de" (0.75); "la": 4 of 4; (form, UPOS) keys are kept whatever their share.
    words = [("de", "ADP", "de")] * 3 + [("de", "DET", "un")] + [("la", "DET", "le")] * 4
    sentences = [sentence(*words)]
    assert build_lexicon(sentences, min_form_share=0.75).forms == {"de": "de", "la": "le"}
    assert build_lexicon(sentences, min_form_share=0.76).forms == {"la": "le"}
    assert build_lexicon(sentences, min_form_share=1.01).forms == {}
    for share in (0.0, 0.76, 1.01):
        tagged = build_lexicon(sentences, min_form_share=share).tagged
        assert tagged == {("de", "ADP"): "de", ("de", "DET"): "un", ("la", "DET"): "le"}
    with pytest.raises(ValueError, match="min_form_share must be >= 0"):
        build_lexicon(sentences, min_form_share=-0.1)


def test_words_without_a_lemma_or_a_upos() -> None:
    # "_" lemma of a form not "_": no lemma given, nothing learnt; "_" UPOS: the form alone.
    lexicon = build_lexicon([sentence(("x", "NOUN", "_"), ("y", "_", "why"), ("_", "SYM", "_"))])
    assert lexicon.tagged == {("_", "SYM"): "_"}
    assert lexicon.forms == {"y": "why", "_": "_"}


def test_the_default_threshold_matches_a_brute_force_majority() -> None:
    rng = random.Random(7)
    words = [
        (rng.choice("abc"), rng.choice(["N", "V", "_"]), rng.choice(["l1", "l2", "l3", "_"]))
        for _ in range(400)
    ]
    lexicon = build_lexicon([sentence(*words[i : i + 10]) for i in range(0, 400, 10)])
    annotated = [(f, u, lemma) for f, u, lemma in words if lemma != "_"]
    for form in "abc":
        counts = Counter(lemma for f, _, lemma in annotated if f == form)
        best = sorted(counts, key=lambda lemma: (-counts[lemma], lemma))[0]
        expected = best if counts[best] >= MIN_FORM_SHARE * counts.total() else None
        assert lexicon.forms.get(form) == expected
        for upos in "NV":
            tagged = Counter(lemma for f, u, lemma in annotated if (f, u) == (form, upos))
            want = min(tagged, key=lambda lemma: (-tagged[lemma], lemma)) if tagged else None
            assert lexicon.tagged.get((form, upos)) == want


LEXICON = Lexicon(
    tagged={("sat", "VERB"): "sit", ("sat", "NOUN"): "sat-noun", ("les", "DET"): "le"},
    forms={"sat": "sit-form", "us": "we"},
)


@pytest.mark.parametrize(
    ("form", "upos", "lemma"),
    [
        ("sat", "VERB", "sit"),  # form + UPOS first
        ("sat", "NOUN", "sat-noun"),
        ("sat", "ADJ", "sit-form"),  # then the form alone
        ("sat", None, "sit-form"),  # no UPOS known: the form alone
        ("sat", "_", "sit-form"),  # an empty UPOS cell is no UPOS
        ("Les", "DET", "le"),  # then the form lower-cased, with its UPOS
        ("Les", None, None),  # ... never without one
        ("US", "PROPN", None),  # nor by the lower-cased form alone
        ("dog", "NOUN", None),  # unseen: left to the classifier
    ],
)
def test_the_lookup_order(form: str, upos: str | None, lemma: str | None) -> None:
    assert LEXICON.lemma(form, upos) == lemma


FORMS = st.sampled_from(["sat", "Sat", "les", "Les", "E17", "A1", "b2", "dog"])
UPOS = st.sampled_from(["VERB", "NOUN", "DET"])
FEATS = st.sampled_from(["_", "Number=Sing"])


@given(
    st.dictionaries(st.tuples(FORMS, UPOS), FORMS, max_size=4),
    st.dictionaries(FORMS, FORMS, max_size=3),
    st.dictionaries(st.tuples(FORMS, UPOS, FEATS), FORMS, max_size=3),
    st.sets(st.sampled_from(["A00", "A0", "a0"])).map(
        lambda shapes: {s: "l" * len(s) for s in shapes}
    ),
    FORMS,
    st.one_of(st.none(), UPOS),
    st.one_of(st.none(), FEATS),
)
def test_a_form_that_finds_a_lemma_finds_one_whatever_its_upos_and_feats(
    tagged, forms, featured, shapes, form, upos, feats
) -> None:
    """The columns try runners-up scripts only for the words this denies (choices.py)."""
    lexicon = Lexicon(tagged=tagged, forms=forms, featured=featured, shapes=shapes)
    assert lexicon.finds_lemma(form) == (form in forms or digit_shape(form) in shapes)
    if lexicon.finds_lemma(form):
        assert lexicon.lemma(form, upos, feats) is not None


def test_the_known_lemmas_are_every_lemma_of_both_tables_lower_cased(sentences) -> None:
    lexicon = build_lexicon(sentences)
    lemmas = {lemma for s in sentences for lemma in s.lemmas if lemma != "_"}
    assert lexicon.known == {lemma.lower() for lemma in lemmas}
    assert LEXICON.known == {"sit", "sat-noun", "le", "sit-form", "we"}
    assert Lexicon.from_dict(LEXICON.to_dict()).known == LEXICON.known
    assert Lexicon().known == frozenset()


def analysed(form: str, upos: str, feats: str, times: int, xpos: str = "_") -> list[Sentence]:
    """``times`` one-word sentences of ``form`` with that UPOS, XPOS and FEATS."""
    return [Sentence([form], upos=[upos], xpos=[xpos], feats=[feats]) for _ in range(times)]


def test_analyses_are_kept_where_one_covers_the_threshold() -> None:
    sentences = [
        *analysed("evde", "NOUN", "Case=Loc", 99, xpos="Noun"),
        *analysed("evde", "NOUN", "Case=Nom", 1, xpos="Noun"),  # 99%: kept
        *analysed("read", "VERB", "Tense=Past", 97, xpos="VBD"),
        *analysed("read", "VERB", "Tense=Pres", 3, xpos="VBP"),  # 97%: left to the tagger
        *analysed("read", "NOUN", "Number=Sing", 1, xpos="NN"),
        Sentence(["ev"], upos=["_"], feats=["Case=Nom"]),  # no UPOS: no key
    ]
    lexicon = build_lexicon(sentences)
    assert lexicon.analyses == {
        "feats": {("evde", "NOUN"): "Case=Loc", ("read", "NOUN"): "Number=Sing"},
        "xpos": {("evde", "NOUN"): "Noun", ("read", "NOUN"): "NN"},
    }
    every = build_lexicon(sentences, min_analysis_share=0.0).analyses
    assert every["feats"][("read", "VERB")] == "Tense=Past"
    assert every["xpos"][("read", "VERB")] == "VBD"
    assert build_lexicon(sentences, min_analysis_share=1.01).analyses == {"xpos": {}, "feats": {}}
    with pytest.raises(ValueError, match="min_analysis_share must be >= 0"):
        build_lexicon(sentences, min_analysis_share=-0.5)


def test_a_column_the_treebank_leaves_empty_is_no_table() -> None:
    sentences = analysed("evde", "NOUN", "Case=Loc", 2)  # XPOS "_" throughout
    assert build_lexicon(sentences).analyses == {"feats": {("evde", "NOUN"): "Case=Loc"}}


@pytest.mark.parametrize(
    ("form", "upos", "feats"),
    [
        ("evde", "NOUN", "Case=Loc"),
        ("evde", "VERB", None),  # an unseen pair
        ("evde", None, None),  # no UPOS: no lookup
        ("evde", "_", None),
        ("Evde", "NOUN", None),  # never lower-cased
    ],
)
def test_analyses_are_looked_up_by_form_and_upos_only(form, upos, feats) -> None:
    lexicon = Lexicon(analyses={"feats": {("evde", "NOUN"): "Case=Loc"}})
    assert lexicon.analysis("feats", form, upos) == feats
    assert lexicon.analysis("xpos", form, upos) is None  # no table: nothing


def test_upos_are_kept_for_the_forms_that_always_had_one() -> None:
    sentences = [
        *analysed("evde", "NOUN", "Case=Loc", 3),
        *analysed("read", "VERB", "Tense=Past", 99),
        *analysed("read", "NOUN", "Number=Sing", 1),  # 99%: not every time
        Sentence(["ev"], upos=["_"], feats=["_"]),  # no UPOS: not counted
    ]
    lexicon = build_lexicon(sentences)
    assert lexicon.upos == {"evde": "NOUN"}
    assert (lexicon.tag("evde"), lexicon.tag("read"), lexicon.tag("ev")) == ("NOUN", None, None)
    data = lexicon.to_dict()
    assert data["upos"] == [["evde", "NOUN"]]
    assert Lexicon.from_dict(json.loads(json.dumps(data))) == lexicon
    with pytest.raises(ValueError, match="'upos' must be a list of lists of 2 strings"):
        Lexicon.from_dict({**data, "upos": [["evde"]]})


def test_feats_of_word_endings_guess_those_of_unseen_words() -> None:
    sentences = [
        *analysed("evde", "NOUN", "Case=Loc", 1),
        *analysed("yerde", "NOUN", "Case=Loc", 1),  # "de" and "e" twice: kept; "rde" once: not
        *analysed("gelde", "VERB", "Mood=Imp", 1),
        *analysed("alma", "NOUN", "Case=Nom", 9),
        *analysed("ama", "NOUN", "Case=Dat", 1),  # "ma" 9 of 10 Nom: kept; "a" too
        *analysed("kama", "NOUN", "Case=Dat", 1),  # ... not with this one: 9 of 11
    ]
    lexicon = build_lexicon(sentences[:-1])
    assert lexicon.suffixes["feats"][("de", "NOUN")] == "Case=Loc"
    assert ("rde", "NOUN") not in lexicon.suffixes["feats"]
    assert lexicon.suffixes["feats"][("ma", "NOUN")] == "Case=Nom"
    assert "xpos" not in lexicon.suffixes  # XPOS is never guessed
    assert lexicon.guess("feats", "gölde", "NOUN") == "Case=Loc"  # the longest known ending
    assert lexicon.guess("feats", "Gölde", "NOUN") == "Case=Loc"  # lower-cased
    assert lexicon.guess("feats", "gölde", "VERB") is None  # "de" with VERB: once only
    assert lexicon.guess("feats", "evde", "NOUN") is None  # seen: analysis() and the tagger's
    assert lexicon.guess("feats", "gölde", None) is None
    assert lexicon.guess("feats", "e", "NOUN") is None  # no ending shorter than the word
    assert lexicon.guess("feats", "salma", "NOUN") == "Case=Nom"
    assert ("ma", "NOUN") not in build_lexicon(sentences).suffixes["feats"]
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["feats_suffixes"][0] == ["a", "NOUN", "Case=Nom"]
    assert Lexicon.from_dict(data) == lexicon


def test_analyses_round_trip_and_older_lexicons_have_none() -> None:
    tables = {"feats": {("evde", "NOUN"): "Case=Loc"}, "xpos": {("evde", "NOUN"): "Noun"}}
    lexicon = dataclasses.replace(LEXICON, analyses=tables)
    assert lexicon.to_dict()["feats"] == [["evde", "NOUN", "Case=Loc"]]
    assert lexicon.to_dict()["xpos"] == [["evde", "NOUN", "Noun"]]
    assert Lexicon.from_dict(json.loads(json.dumps(lexicon.to_dict()))) == lexicon
    older = LEXICON.to_dict()
    assert not {"feats", "xpos", "upos", "feats_suffixes"} & set(older)  # empty: not written
    assert Lexicon.from_dict(older).analyses == {}
    assert Lexicon.from_dict(older).upos == {}
    assert Lexicon.from_dict(older).suffixes == {}
    assert Lexicon.from_dict(older).to_dict() == older  # so older data round trips as is
    with pytest.raises(ValueError, match="'feats' must be a list of lists of 3 strings"):
        Lexicon.from_dict({**older, "feats": [["evde", "NOUN"]]})


def featured(form: str, feats: str, lemma: str, times: int) -> list[Sentence]:
    """``times`` one-word sentences of PRON ``form`` with that FEATS and lemma."""
    return [Sentence([form], lemmas=[lemma], upos=["PRON"], feats=[feats]) for _ in range(times)]


HER = [
    *featured("her", "Case=Acc|Person=3", "she", 60),
    *featured("her", "Person=3|Poss=Yes", "her", 40),
    *featured("Her", "Person=3|Poss=Yes", "her", 9),  # counted with "her"
    *featured("it", "Case=Acc|Person=3", "it", 99),
    *featured("it", "Case=Acc|Person=3", "its", 1),  # 99 of 100: kept
]


@pytest.mark.parametrize(
    ("form", "feats", "lemma"),
    [
        ("her", "Case=Acc|Person=3", "she"),
        ("her", "Person=3|Poss=Yes", "her"),  # where (form, UPOS) alone says "she"
        ("her", None, "she"),  # FEATS unknown: (form, UPOS)
        ("her", "Number=Plur", "she"),  # an unseen triple: (form, UPOS)
        ("It", "Case=Acc|Person=3", "it"),  # the form lower-cased
        ("Her", "Person=3|Poss=Yes", "her"),
    ],
)
def test_a_lemma_is_looked_up_by_form_upos_and_feats_first(form, feats, lemma) -> None:
    lexicon = build_lexicon(HER)
    assert lexicon.featured == {
        ("her", "PRON", "Case=Acc|Person=3"): "she",
        ("her", "PRON", "Person=3|Poss=Yes"): "her",
        ("it", "PRON", "Case=Acc|Person=3"): "it",
    }
    assert lexicon.lemma(form, "PRON", feats) == lemma


def test_the_featured_table_round_trips_and_needs_annotated_feats() -> None:
    lexicon = build_lexicon(HER)
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["featured"][0] == ["her", "PRON", "Case=Acc|Person=3", "she"]
    assert Lexicon.from_dict(data) == lexicon
    assert "featured" not in LEXICON.to_dict()  # empty: not written, as before it existed
    with pytest.raises(ValueError, match="'featured' must be a list of lists of 4 strings"):
        Lexicon.from_dict({**data, "featured": [["her", "PRON", "she"]]})
    unannotated = [Sentence(["her"], lemmas=["she"], upos=["PRON"], feats=["_"])] * 3
    assert build_lexicon(unannotated).featured == {}  # FEATS "_" throughout: no table
    assert build_lexicon(HER, min_form_share=1.0).featured == {
        ("her", "PRON", "Case=Acc|Person=3"): "she",
        ("her", "PRON", "Person=3|Poss=Yes"): "her",
    }


def test_plain_data_round_trips_through_json_and_the_vocabularies(sentences) -> None:
    vocabs = build_vocabs(sentences)
    assert vocabs.lexicon == build_lexicon(sentences)
    assert vocabs.lexicon.lemma("sat", "VERB") == "sit"
    data = json.loads(json.dumps(vocabs.to_dict()))
    assert Vocabs.from_dict(data) == vocabs
    assert Lexicon.from_dict(json.loads(json.dumps(LEXICON.to_dict()))) == LEXICON


def test_vocabularies_without_a_lexicon_have_none_and_write_none(sentences) -> None:
    data = build_vocabs(sentences).to_dict()
    del data["lemma_lexicon"]
    old = Vocabs.from_dict(data)
    assert old.lexicon is None
    assert old.to_dict() == data


@pytest.mark.parametrize(
    "data",
    [
        {"tagged": []},
        {"tagged": [["a", "b"]], "forms": []},
        {"tagged": [], "forms": [["a", 1]]},
        {"tagged": [], "forms": "ab"},
    ],
)
def test_malformed_lexicon_data_is_refused(data) -> None:
    with pytest.raises(ValueError, match="lemma lexicon"):
        Lexicon.from_dict(data)


def test_tag_sets_are_the_analyses_of_the_training_words_and_round_trip() -> None:
    words = [
        Sentence(["cats", "sat"], upos=["NOUN", "VERB"], xpos=["NNS", "VBD"],
                 feats=["Number=Plur", "Tense=Past"]),
        Sentence(["cat", "a", "_"], upos=["NOUN", "DET", "_"], xpos=["NN", "DT", "XX"],
                 feats=["Number=Sing", "_", "Foo=Bar"]),
        Sentence(["dogs"], upos=["NOUN"], xpos=["NNS"], feats=["Number=Plur"]),
    ]  # fmt: skip
    lexicon = build_lexicon(words)
    assert lexicon.tag_sets == {  # a word without a UPOS has no analysis; each set once
        ("NOUN", "NNS", "Number=Plur"),
        ("VERB", "VBD", "Tense=Past"),
        ("NOUN", "NN", "Number=Sing"),
        ("DET", "DT", "_"),
    }
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["tag_sets"][0] == ["DET", "DT", "_"]  # sorted
    assert Lexicon.from_dict(data) == lexicon
    older = LEXICON.to_dict()
    assert "tag_sets" not in older  # empty: not written, as before it existed
    assert Lexicon.from_dict(older).tag_sets == frozenset()
    with pytest.raises(ValueError, match="'tag_sets' must be a list of lists of 3 strings"):
        Lexicon.from_dict({**older, "tag_sets": [["NOUN", "NN"]]})


def numbered(*pairs: tuple[str, str]) -> list[Sentence]:
    """One sentence of NUM words, (form, lemma) each."""
    return [sentence(*((form, "NUM", lemma) for form, lemma in pairs))]


def test_a_shape_keeps_the_mask_of_its_training_words_where_they_agree() -> None:
    words = numbered(
        ("420,588", "420588"),
        ("112,610", "112610"),
        ("1,993", "1993"),  # "0,000": one word, too few
        ("E17", "E17"),
        ("B52", "B52"),
        ("A1", "a1"),  # "A0" 1 of 2 kept, 1 lower-cased: no majority of 0.99
        ("A2", "A2"),
        ("1st", "first"),  # no mask makes it: counts against the shape's masks
        ("2nd", "2nd"),
        ("cats", "cat"),  # no digit, no shape
        ("cats", "cat"),
    )
    lexicon = build_lexicon(words)
    assert lexicon.shapes == {"000,000": "...-...", "A00": "..."}
    assert build_lexicon(words, min_form_share=0.5).shapes == {
        "000,000": "...-...",
        "A00": "...",
        "A0": "..",  # a tie of "." and "l": to the smaller string
    }  # "0aa": "2nd" against "first", a tie, goes to no mask


@pytest.mark.parametrize(
    ("form", "upos", "lemma"),
    [
        ("250,393", "NUM", "250393"),  # unseen: its shape's mask
        ("250,393", None, "250393"),  # no UPOS needed
        ("1,250,000", "NUM", None),  # "0,000,000": a shape not seen
        ("F16", "PROPN", "F16"),
        ("G1", "PROPN", "g1"),
        ("E17", "NOUN", "e-17"),  # seen: the lemma tables first
        ("Cats", "NOUN", None),  # no digit: no shape
    ],
)
def test_a_shape_is_looked_up_last(form: str, upos: str | None, lemma: str | None) -> None:
    lexicon = Lexicon(
        tagged={("E17", "NOUN"): "e-17"},
        shapes={"000,000": "...-...", "A00": "...", "Aaaa": "l...", "A0": "l."},
    )
    assert lexicon.lemma(form, upos) == lemma


def test_the_shapes_round_trip_and_older_lexicons_have_none() -> None:
    lexicon = build_lexicon(numbered(("420,588", "420588"), ("112,610", "112610")))
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["shapes"] == [["000,000", "...-..."]]
    assert Lexicon.from_dict(data) == lexicon
    older = LEXICON.to_dict()
    assert "shapes" not in older  # empty: not written, as before it existed
    assert Lexicon.from_dict(older).shapes == {}
    for shapes in ([["000,000", "...-.."]], [["000", "..x"]], [["000"]]):
        with pytest.raises(ValueError, match="lemma lexicon 'shapes' must"):
            Lexicon.from_dict({**older, "shapes": shapes})


def test_the_shapes_of_ewt_lemmatize_its_unseen_numbers_and_codes(ewt_dir) -> None:
    """On EWT dev, the words with a digit that no other table holds: the shapes find most of
    them and are right where they do, more often than the form itself would be."""
    lexicon = build_lexicon(read_conllu(ewt_dir / "en_ewt-ud-train.conllu"))
    without = dataclasses.replace(lexicon, shapes={})
    unseen = [
        (form, lemma)
        for s in read_conllu(ewt_dir / "en_ewt-ud-dev.conllu")
        for form, lemma, upos in zip(s.forms, s.lemmas, s.upos, strict=True)
        if digit_shape(form) is not None and without.lemma(form, upos) is None
    ]
    shaped = [(form, lemma) for form, lemma in unseen if lexicon.lemma(form, None) is not None]
    right = sum(lexicon.lemma(form, None) == lemma for form, lemma in shaped)
    as_form = sum(form == lemma for form, lemma in shaped)
    # 153 words, 105 of them shaped, 102 right (wrong: "22th" for "22nd", "s100" for "S100",
    # and "3-5290" whose lemma is "_"), 92 of them their own lemma
    assert len(shaped) > 0.6 * len(unseen)
    assert right > 0.95 * len(shaped)
    assert right > as_form + 5


def cased_pairs(upos: str, kept: int, lowered: int) -> dict[tuple[str, str], str]:
    """(form, UPOS) -> lemma pairs with a capital: ``kept`` keep the form, ``lowered`` do not."""
    return {
        **{(f"Kept{i}", upos): f"Kept{i}" for i in range(kept)},
        **{(f"Low{i}", upos): f"low{i}" for i in range(lowered)},
    }


def test_cased_upos_are_those_whose_capitalized_words_keep_their_form_as_lemma() -> None:
    tagged = {
        **cased_pairs("PROPN", 9 * MIN_CASED_PAIRS, MIN_CASED_PAIRS),  # 90%: kept
        **cased_pairs("ADJ", MIN_CASED_PAIRS, MIN_CASED_PAIRS),  # 50%
        **cased_pairs("X", MIN_CASED_PAIRS - 1, 0),  # too few to judge
        **{(f"low{i}", "NOUN"): f"low{i}" for i in range(100)},  # lower-case: no evidence
        **{(f"Went{i}", "VERB"): "go" for i in range(100)},  # not the form up to casing
    }
    lexicon = Lexicon(tagged=tagged)
    assert lexicon.cased_upos == frozenset({"PROPN"})
    assert Lexicon.from_dict(lexicon.to_dict()).cased_upos == frozenset({"PROPN"})
    assert "cased_upos" not in lexicon.to_dict()  # derived: nothing new in checkpoints
    fewer = cased_pairs("PROPN", 9 * MIN_CASED_PAIRS, MIN_CASED_PAIRS + 1)
    assert Lexicon(tagged=fewer).cased_upos == frozenset()


@pytest.mark.parametrize(
    ("form", "upos", "lemma"),
    [
        ("Electric", "PROPN", "Electric"),  # the form alone, for a UPOS that keeps the casing
        ("Electric", "ADJ", "electric"),  # ... not for another
        ("Electric", None, "electric"),  # ... nor without a UPOS
        ("Kept0", "PROPN", "Kept0"),  # the (form, UPOS) pair first, as before
        ("Gone", "PROPN", "go"),  # a lemma that is not the form up to casing stays
    ],
)
def test_a_form_looked_up_alone_keeps_its_casing_where_its_upos_does(form, upos, lemma) -> None:
    tagged = cased_pairs("PROPN", MIN_CASED_PAIRS, 0)
    lexicon = Lexicon(tagged=tagged, forms={"Electric": "electric", "Gone": "go"})
    assert lexicon.lemma(form, upos) == lemma


def test_ewt_names_looked_up_by_their_form_alone_keep_its_casing(ewt_dir) -> None:
    """EWT dev and test, gold UPOS: the PROPN words that only the form alone finds, with a
    lemma differing from the form in casing only ("Electric" -> "electric" from the adjective):
    their gold lemma is the form (77 of 78), which the lookup gives now."""
    lexicon = build_lexicon(read_conllu(ewt_dir / "en_ewt-ud-train.conllu"))
    assert lexicon.cased_upos == frozenset({"PROPN"})
    found = [
        (form, lemma, lexicon.lemma(form, upos))
        for split in ("dev", "test")
        for s in read_conllu(ewt_dir / f"en_ewt-ud-{split}.conllu")
        for form, lemma, upos in zip(s.forms, s.lemmas, s.upos, strict=True)
        if upos == "PROPN"
        and (form, upos) not in lexicon.tagged
        and (alone := lexicon.forms.get(form)) is not None
        and alone != form
        and alone.lower() == form.lower()
    ]
    assert len(found) > 50
    assert all(looked_up == form for form, _, looked_up in found)
    assert sum(lemma == form for form, lemma, _ in found) > 0.95 * len(found)


def test_lemma_scripts_of_word_endings_guess_the_lemmas_of_unseen_words() -> None:
    words = [
        ("házban", "NOUN", "ház"),  # cut 3
        ("városban", "NOUN", "város"),  # cut 3: "ban" is kept, 2 of 2
        ("kertben", "NOUN", "kert"),  # cut 3
        ("kertekben", "NOUN", "kert"),  # cut 5: "ben", 1 of 2 each, is not
        ("van", "NOUN", "van"),  # as is, twice: "an" 2 of 4 cut 3, not kept
        ("van", "NOUN", "van"),
        ("Budapesten", "PROPN", "Budapest"),  # "ten" with PROPN: once only
    ]
    lexicon = build_lexicon([sentence(*words)])
    assert lexicon.lemma_suffixes == {("ban", "NOUN"): "L-0+|-3+"}
    assert lexicon.guess_lemma("lakásban", "NOUN") == "lakás"  # the longest ending known
    assert lexicon.guess_lemma("Lakásban", "NOUN") == "lakás"  # its script's casing
    assert lexicon.guess_lemma("lakásban", "VERB") is None
    assert lexicon.guess_lemma("lakásban", None) is None
    assert lexicon.guess_lemma("ban", "NOUN") is None  # no ending as long as the word
    assert lexicon.guess_lemma("kertekben", "NOUN") is None
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["lemma_suffixes"] == [["ban", "NOUN", "L-0+|-3+"]]
    assert Lexicon.from_dict(data) == lexicon
    assert "lemma_suffixes" not in LEXICON.to_dict()  # empty: not written, as before it existed
    assert Lexicon.from_dict(LEXICON.to_dict()).lemma_suffixes == {}


def address_lexicon(tags: list[tuple[str, str, str]]) -> Lexicon:
    """A lexicon of one e-mail address per entry of ``tags`` (its UPOS, XPOS, FEATS)."""
    forms = [f"user{i}@example.com" for i in range(len(tags))]
    return Lexicon(
        tagged={(f, upos): f for f, (upos, _, _) in zip(forms, tags, strict=True)},
        analyses={
            "xpos": {(f, upos): xpos for f, (upos, xpos, _) in zip(forms, tags, strict=True)},
            "feats": {(f, upos): feats for f, (upos, _, feats) in zip(forms, tags, strict=True)},
        },
    )


@pytest.mark.parametrize(
    ("propn", "noun", "expected"),
    [
        (MIN_ADDRESSES, 0, ("PROPN", "ADD", "_")),
        (MIN_ADDRESSES - 1, 0, None),  # too few to stand on
        (18, 2, ("PROPN", "ADD", "_")),  # 90%
        (17, 3, None),  # 85%: no tags clear enough
        (2, 18, ("NOUN", "NN", "Number=Sing")),
    ],
)
def test_address_tags_are_the_majority_of_enough_addresses(
    propn: int, noun: int, expected: tuple[str, str, str] | None
) -> None:
    tags = [("PROPN", "ADD", "_")] * propn + [("NOUN", "NN", "Number=Sing")] * noun
    assert address_lexicon(tags).address_tags == expected


def test_address_tags_count_only_addresses_and_survive_plain_data() -> None:
    lexicon = address_lexicon([("PROPN", "ADD", "_")] * MIN_ADDRESSES)
    words = {(f"word{i}", "NOUN"): f"word{i}" for i in range(100)}  # no address: not counted
    mixed = dataclasses.replace(lexicon, tagged={**lexicon.tagged, **words})
    assert mixed.address_tags == ("PROPN", "ADD", "_")
    assert Lexicon.from_dict(mixed.to_dict()).address_tags == ("PROPN", "ADD", "_")
    assert Lexicon(tagged=words).address_tags is None


@pytest.mark.parametrize(
    ("form", "code"),
    [
        ("E17", True),
        ("5x", True),
        ("01-Feb-02", True),
        ("EY4096.1", True),
        ("1990'da", True),
        ("1990", False),
        ("3,000", False),
        ("E", False),
        ("user1@example.com", False),  # an address, with tags of its own
        ("www.a1.com", False),
    ],
)
def test_a_code_has_a_letter_and_a_digit_and_is_no_address(form: str, code: bool) -> None:
    assert is_code(form) == code


def test_code_upos_are_those_of_enough_codes_counted_once_a_pair_and_survive_plain_data() -> None:
    codes = {(f"E{i}", "NOUN" if i % 2 else "PROPN"): f"E{i}" for i in range(MIN_CODES)}
    words = {("x" * (i + 1), "NUM"): "x" for i in range(100)}  # no code: not counted
    addresses = {(f"u{i}@example.com", "NUM"): "u" for i in range(100)}
    lexicon = Lexicon(tagged={**codes, **words, **addresses})
    assert lexicon.code_upos == frozenset({"NOUN", "PROPN"})
    assert Lexicon.from_dict(lexicon.to_dict()).code_upos == frozenset({"NOUN", "PROPN"})
    assert "code_upos" not in lexicon.to_dict()  # derived: nothing new in checkpoints
    assert Lexicon(tagged=dict(list(codes.items())[1:])).code_upos is None
    assert [lexicon.unseen_code(form) for form in ("E99", "E3", "xxx", "cat")] == [
        True,
        False,
        False,
        False,
    ]


def related(*words: tuple[str, str, str]) -> Sentence:
    """A sentence of (form, UPOS, DEPREL) words."""
    forms, upos, deprels = (list(column) for column in zip(*words, strict=True))
    return Sentence(forms, upos=upos, deprels=deprels)


def test_relation_upos_counts_forms_lower_cased_by_universal_relation_seen_often_enough() -> None:
    assert MIN_RELATION_COUNT == 2  # the counts below are written for it
    sentences = [
        related(("For", "SCONJ", "mark"), ("for", "ADP", "case"), ("up", "ADP", "compound:prt")),
        related(("for", "ADP", "case"), ("up", "ADP", "compound:lvc"), ("up", "ADV", "advmod")),
        related(("for", "ADP", "mark"), ("up", "_", "advmod"), ("up", "ADV", "_")),  # "_": none
    ]
    lexicon = build_lexicon(sentences)
    assert lexicon.relation_upos == {
        ("for", "mark"): {"SCONJ": 1, "ADP": 1},
        ("for", "case"): {"ADP": 2},
        ("up", "compound"): {"ADP": 2},
    }  # ("up", "advmod"): once only
    assert universal_relation("compound:prt") == "compound"
    assert universal_relation("nsubj") == "nsubj"
    data = json.loads(json.dumps(lexicon.to_dict()))
    assert data["relation_upos"] == [  # a row per (relation, UPOS): small checkpoints
        ["case", "ADP", "for\t2"],
        ["compound", "ADP", "up\t2"],
        ["mark", "ADP", "for\t1"],
        ["mark", "SCONJ", "for\t1"],
    ]
    assert Lexicon.from_dict(data) == lexicon
    many = {(f"w{k}", "obj"): {"NOUN": k + 1, "X": 2} for k in range(3)}
    many[("a b", "nmod")] = {"NOUN": 10}  # a form with a space (Vietnamese)
    assert Lexicon.from_dict(Lexicon(relation_upos=many).to_dict()).relation_upos == many
    assert "relation_upos" not in LEXICON.to_dict()  # empty: not written, as before it
    assert Lexicon.from_dict(LEXICON.to_dict()).relation_upos == {}


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([["case", "ADP"]], "must be a list of lists of 3 strings"),
        ([["case", "ADP", 2]], "must be a list of lists of 3 strings"),
        ({"case": "for\t2"}, "must be a list of lists of 3 strings"),
        ([["case", "ADP", "for"]], "of case ADP must pair each form with a positive count"),
        ([["case", "ADP", "for\t2\tto"]], "must pair each form with a positive count"),
        ([["case", "ADP", "for\t0"]], "must pair each form with a positive count"),
        ([["case", "ADP", "for\t-2"]], "must pair each form with a positive count"),
        ([["case", "ADP", "for\t2.0"]], "must pair each form with a positive count"),
        ([["case", "ADP", "for\t\u00b2"]], "must pair each form with a positive count"),
        ([["case", "ADP", ""]], "must pair each form with a positive count"),
    ],
)
def test_relation_upos_rows_must_pair_forms_with_positive_counts(rows, problem: str) -> None:
    data = {**LEXICON.to_dict(), "relation_upos": rows}
    with pytest.raises(ValueError, match=f"'relation_upos'.* {problem}"):
        Lexicon.from_dict(data)


def test_doubt_shares_round_trip_through_json_and_older_lexicons_have_none() -> None:
    doubted = Lexicon(doubt={"upos": 0.5, "feats": 0, "xpos": 1})
    data = json.loads(json.dumps(doubted.to_dict()))
    assert data["doubt"] == {"feats": 0, "upos": 0.5, "xpos": 1}
    assert Lexicon.from_dict(data).doubt == {"upos": 0.5, "feats": 0.0, "xpos": 1.0}
    assert "doubt" not in LEXICON.to_dict()  # none chosen: not written, as before it
    assert Lexicon.from_dict(LEXICON.to_dict()).doubt == {}


@pytest.mark.parametrize(
    "doubt",
    [
        {"lemma": 0.5},  # no tagger of LEMMA gives way to the lexicon
        {"upos": 1.5},
        {"upos": -0.1},
        {"upos": "0.5"},
        {"upos": True},
        {"upos": float("nan")},
        [["upos", 0.5]],
    ],
)
def test_doubt_shares_must_be_numbers_in_the_unit_interval_by_a_doubted_column(doubt) -> None:
    with pytest.raises(ValueError, match="'doubt' must map some of upos, xpos, feats"):
        Lexicon.from_dict({**LEXICON.to_dict(), "doubt": doubt})


def test_the_lemma_checks_round_trip_through_json_and_older_lexicons_have_the_defaults() -> None:
    checked = Lexicon(exact_case=True, runner_up=0.2)
    data = json.loads(json.dumps(checked.to_dict()))
    assert (data["exact_case"], data["runner_up"]) == (True, 0.2)
    found = Lexicon.from_dict(data)
    assert (found.exact_case, found.runner_up) == (True, 0.2)
    assert {"exact_case", "runner_up"}.isdisjoint(LEXICON.to_dict())  # the defaults: not written
    found = Lexicon.from_dict(LEXICON.to_dict())
    assert (found.exact_case, found.runner_up) == (False, None)


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("exact_case", 1, "'exact_case' must be true or false"),
        ("exact_case", "true", "'exact_case' must be true or false"),
        ("runner_up", 0, r"'runner_up' must be a number in \(0, 1\]"),
        ("runner_up", 1.5, r"'runner_up' must be a number in \(0, 1\]"),
        ("runner_up", True, r"'runner_up' must be a number in \(0, 1\]"),
        ("runner_up", float("nan"), r"'runner_up' must be a number in \(0, 1\]"),
    ],
)
def test_the_lemma_checks_must_be_a_boolean_and_a_share(key: str, value, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Lexicon.from_dict({**LEXICON.to_dict(), key: value})
