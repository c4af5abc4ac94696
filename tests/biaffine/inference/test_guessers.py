"""The lexicon's guessers beside the taggers: the UPOS guesser's weighted log-probabilities
added to the scores of the words the lexicon lacks, and to no other word's, before the tags are
chosen; the FEATS guesser's added to the FEATS tagger's log-probabilities of such a word where
it has a weight, its pick alone where it has none."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from data.test_feats_guesser import ALLOWED, random_guesser
from data.test_feats_guesser import CLASSES as FEATS_CLASSES
from data.test_lemma_generator import random_generator
from data.test_upos_guesser import CLASSES, random_upos_guesser
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.data.character_model import LEAST_SHARED
from biaffine.data.conllu import Sentence
from biaffine.data.lexicon import Lexicon
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.inference.choices import guessed_upos, joint_tags, predicted_columns

UPOS = Vocab([*SPECIALS, "NOUN", "PROPN", "VERB", "ADJ"])  # PROPN: a class the guesser lacks
SEEN = {("ev", "NOUN"): "ev", ("kedi", "NOUN"): "kedi", ("gel", "VERB"): "gel"}
FORMS = ["ev", "kediler", "gel", "masada", "ev", "zzz"]


def lexicon(weight: float = 0.5, **tables) -> Lexicon:
    """The lexicon of :data:`SEEN`, with a random UPOS guesser so weighed."""
    guesser = random_upos_guesser(scale=1.5, weight=weight)
    return Lexicon(tagged=SEEN, upos_guesser=guesser, **tables)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-8, 8, width=32), min_size=6 * 7, max_size=6 * 7),
    st.sampled_from([0.25, 0.5, 1.5]),
)
def test_the_words_the_lexicon_lacks_get_the_weighted_log_probabilities_and_no_others(
    values: list[float], weight: float
) -> None:
    scores = np.array(values, dtype=np.float32).reshape(6, 7)
    kept = scores.copy()
    found = guessed_upos(scores, FORMS, UPOS, lexicon(weight))
    np.testing.assert_array_equal(scores, kept)  # the tagger's scores are not written over
    guesser = lexicon(weight).upos_guesser
    for row, form in enumerate(FORMS):
        if form in ("ev", "gel"):
            np.testing.assert_array_equal(found[row], scores[row])
            continue
        log_probs = guesser.log_probs([form])[0]
        for class_id, upos in enumerate(UPOS.itos):
            added = log_probs[CLASSES.index(upos)] if upos in CLASSES else log_probs.min()
            expected = scores[row, class_id] + weight * added
            assert found[row, class_id] == pytest.approx(expected, abs=1e-5)


def test_nothing_is_added_with_weight_0_or_no_word_lacking() -> None:
    scores = np.zeros((6, 7), dtype=np.float32)
    assert guessed_upos(scores, FORMS, UPOS, lexicon(0.0)) is scores
    seen_only = scores[[0, 2, 4]]
    assert guessed_upos(seen_only, ["ev", "gel", "ev"], UPOS, lexicon()) is seen_only


def test_the_tags_chosen_are_those_of_the_scores_with_the_guessers() -> None:
    rng = np.random.default_rng(3)
    feats = Vocab([*SPECIALS, "_", "Case=Loc"])
    vocabs = Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root"], specials=False),
        columns={"upos": UPOS, "feats": feats},
    )
    sets = frozenset({("NOUN", "_", "_"), ("NOUN", "_", "Case=Loc"), ("VERB", "_", "_")})
    sets |= {("ADJ", "_", "_"), ("PROPN", "_", "_")}
    sentences = [Sentence(FORMS[:3]), Sentence(FORMS[3:])]
    scores = {
        "upos": rng.normal(size=(6, 7)).astype(np.float32),
        "feats": rng.normal(size=(6, 5)).astype(np.float32),
    }
    for weight in (0.0, 3.0):
        vocabs = dataclasses.replace(vocabs, lexicon=lexicon(weight, tag_sets=sets))
        rows = predicted_columns(scores, ["upos", "feats"], vocabs, sentences)
        guessed = guessed_upos(scores["upos"], FORMS, UPOS, vocabs.lexicon)
        expected = joint_tags({"upos": guessed, "feats": scores["feats"]}, vocabs, sets)
        assert [tag for row in rows for tag in row["upos"]] == expected["upos"]
        assert [tag for row in rows for tag in row["feats"]] == expected["feats"]
    # Weighed heavily, the guesser decides the UPOS of the words the lexicon lacks.
    lacking = [1, 3, 5]
    picked = lexicon().upos_guesser.log_probs([FORMS[k] for k in lacking]).argmax(1)
    assert [expected["upos"][k] for k in lacking] == [CLASSES[k] for k in picked]


def test_the_feats_guesser_weighs_the_taggers_log_probabilities_where_it_has_a_weight() -> None:
    rng = np.random.default_rng(4)
    feats = Vocab([*SPECIALS, "_", "Mood=Ind", "Case=Loc"])  # no "Case=Nom": the guesser's only
    vocabs = Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root"], specials=False),
        columns={"upos": Vocab([*SPECIALS, "NOUN", "VERB"]), "feats": feats},
    )
    forms = ["ev", "kediler", "gel", "masada", "ev", "zzz"]
    sentences = [
        Sentence(forms[:3], upos=["NOUN", "VERB", "VERB"]),
        Sentence(forms[3:], upos=["NOUN", "NOUN", "VERB"]),
    ]
    scores = {"feats": rng.normal(scale=2.0, size=(6, 6)).astype(np.float32)}
    lacking = [1, 3, 5]
    upos = [tag for sentence in sentences for tag in sentence.upos]
    alone = random_guesser(scale=2.0)
    asked = [(forms[k], upos[k]) for k in lacking]
    picks = []
    for weight in (None, 0.5, 3.0):
        guesser = dataclasses.replace(alone, weight=weight)
        lexicon = Lexicon(tagged=SEEN, feats_guesser=guesser)
        rows = predicted_columns(
            scores, ["feats"], dataclasses.replace(vocabs, lexicon=lexicon), sentences
        )
        found = [value for row in rows for value in row["feats"]]
        if weight is None:
            expected = alone.feats(asked)
        else:
            real = scores["feats"][lacking, len(SPECIALS) :].astype(np.float64)
            tagger = real - real.max(1, keepdims=True)
            tagger -= np.log(np.exp(tagger).sum(1, keepdims=True))
            on_classes = np.repeat(tagger.min(1, keepdims=True), len(FEATS_CLASSES), axis=1)
            for j, value in enumerate(FEATS_CLASSES):
                if value in feats.stoi:
                    on_classes[:, j] = tagger[:, feats.stoi[value] - len(SPECIALS)]
            total = on_classes + weight * alone.log_probs(asked)
            expected = [FEATS_CLASSES[k] for k in total.argmax(1)]
        assert [found[k] for k in lacking] == expected
        picks.append(expected)
        for (_, tag), value in zip(asked, expected, strict=True):
            assert FEATS_CLASSES.index(value) in ALLOWED[tag]
        seen = [k for k in range(6) if k not in lacking]  # the tagger's best, as without it
        best = scores["feats"][seen, len(SPECIALS) :].argmax(1) + len(SPECIALS)
        assert [found[k] for k in seen] == [feats.itos[k] for k in best]
    assert picks[0] != picks[1]  # the case tells the weights apart


def every_column_vocabs() -> Vocabs:
    """Vocabularies of UPOS, FEATS and two lemma scripts (lower-cased; the last 3 letters cut)."""
    upos = Vocab([*SPECIALS, "NOUN", "VERB", "ADJ"])
    feats = Vocab([*SPECIALS, "_", "Case=Loc", "Mood=Ind"])
    lemma = Vocab([*SPECIALS, "L-0+|-0+", "L-0+|-3+"])
    return Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root"], specials=False),
        columns={"upos": upos, "feats": feats, "lemma": lemma},
    )


def random_scores(rng: np.random.Generator, vocabs: Vocabs, words: int) -> dict[str, np.ndarray]:
    """float32[words, classes] scores of each column of ``vocabs``."""
    return {
        name: rng.normal(scale=2.0, size=(words, len(vocab))).astype(np.float32)
        for name, vocab in vocabs.columns.items()
    }


def test_the_character_models_threads_change_no_column() -> None:
    """Every column with all three character models, on one thread and on three: the words
    the lexicon lacks are enough for three batches of :data:`LEAST_SHARED`."""
    rng = np.random.default_rng(5)
    vocabs = every_column_vocabs()
    letters = list("abcdeklmnrsz")
    forms = ["".join(rng.choice(letters, size=rng.integers(1, 9))) for _ in range(4 * LEAST_SHARED)]
    assert len(set(forms) - {form for form, _ in SEEN}) >= 3 * LEAST_SHARED
    sentences = [Sentence(forms[k : k + 16]) for k in range(0, len(forms), 16)]
    scores = random_scores(rng, vocabs, len(forms))
    lexicon = Lexicon(
        tagged=SEEN,
        generator=random_generator(scale=1.5),
        feats_guesser=random_guesser(scale=2.0, weight=0.5),
        upos_guesser=random_upos_guesser(scale=1.5, weight=1.0),
    )
    vocabs = dataclasses.replace(vocabs, lexicon=lexicon)
    columns = ["upos", "feats", "lemma"]
    alone = predicted_columns(scores, columns, vocabs, sentences, workers=1)
    assert predicted_columns(scores, columns, vocabs, sentences, workers=3) == alone
    written = {lemma for row in alone for lemma in row["lemma"]}
    assert written - {form.lower() for form in forms}  # the generator wrote some lemmas


def test_a_form_too_long_for_the_character_models_keeps_the_taggers_columns() -> None:
    # They read one character at a time: a word of 200,000 characters took 102 s.
    from biaffine.data.lexicon import MAX_READ

    rng = np.random.default_rng(6)
    vocabs = every_column_vocabs()
    forms = ["ab" * (MAX_READ // 2) + "k", "ab" * (MAX_READ // 2), "kediler"]
    sentences = [Sentence(forms)]
    scores = random_scores(rng, vocabs, len(forms))
    models = Lexicon(
        tagged=SEEN,
        generator=random_generator(scale=1.5),
        feats_guesser=random_guesser(scale=2.0),
        upos_guesser=random_upos_guesser(scale=1.5, weight=10.0),
    )
    assert (models.reads(forms[0]), models.reads(forms[1])) == (False, True)
    columns = ["upos", "feats", "lemma"]
    with_models = predicted_columns(
        scores, columns, dataclasses.replace(vocabs, lexicon=models), sentences
    )
    without = predicted_columns(
        scores, columns, dataclasses.replace(vocabs, lexicon=Lexicon(tagged=SEEN)), sentences
    )
    for column in columns:
        assert with_models[0][column][0] == without[0][column][0]
    assert any(with_models[0][c][1:] != without[0][c][1:] for c in columns)  # read: changed
