"""Predicted LEMMA: the lemmatizer's best edit script applied to each form, through the one
prediction path into CoNLL-U, refused without a lemmatizer, trained and scored end to end; the
training lexicon's lemma first where the vocabularies hold one, and a runner-up script whose
lemma the lexicon knows where the best one's it does not."""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import (
    TINY_PARSER,
    biaffine_parser,
    cells,
    expected_tags,
    randomized,
    save_model,
    split_options,
)
from conftest import TINY_CONLLU
from hypothesis import given, settings
from hypothesis import strategies as st

from biaffine.api import Parser
from biaffine.data.batching import IGNORE_INDEX, batches_by_tokens, encode
from biaffine.data.columns import strings
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lemmas import apply, script_of
from biaffine.data.lexicon import MIN_CODES, Lexicon
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.evaluate import evaluate_files
from biaffine.inference import Refused
from biaffine.inference.choices import LEMMA_RUNNER_UP, doubtful, runners_up
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).parents[3]
LEMMA = 2  # the LEMMA cell of a word line


@pytest.fixture(scope="module")
def scripts_only(vocabs: Vocabs) -> Vocabs:
    """The tiny vocabularies as a checkpoint from before the lexicon holds them: without it."""
    return dataclasses.replace(vocabs, lexicon=None)


@pytest.fixture(scope="module")
def lemma_checkpoint(tmp_path_factory: pytest.TempPathFactory, scripts_only: Vocabs) -> Path:
    """A tiny graph parser with a UPOS tagger and a lemmatizer, random weights, no lexicon."""
    torch.manual_seed(4)
    model = biaffine_parser(scripts_only, **TINY_PARSER, tag_loss_weight=1.0, lemma_loss_weight=1.0)
    path = tmp_path_factory.mktemp("lemma") / "best.pt"
    return save_model(path, randomized(model), scripts_only)


def lemmatizer_only(
    vocabs: Vocabs,
    family: str,
    script: str,
    upos: str | None = None,
    *,
    xpos: bool = False,
    feats: bool = False,
) -> torch.nn.Module:
    """A parser of ``family`` whose lemmatizer picks ``script`` for every word, and whose UPOS
    tagger (where ``upos`` is given, else none) picks ``upos``; with an XPOS and a FEATS tagger
    where asked."""
    torch.manual_seed(5)
    tagging = {"lemma_loss_weight": 1.0, "tag_loss_weight": 0.0 if upos is None else 1.0}
    tagging |= {"xpos_loss_weight": float(xpos), "feats_loss_weight": float(feats)}
    if family == "graph":
        model = biaffine_parser(vocabs, **TINY_PARSER, **tagging)
    else:
        encoder_options, parser_options = split_options(TINY_PARSER)
        encoder = Encoder(vocabs, **encoder_options)
        model = TransitionParser(vocabs, encoder, **parser_options, **tagging)
    force(model, vocabs, "lemma", script)
    if upos is not None:
        force(model, vocabs, "upos", upos)
    return model


def force(model: torch.nn.Module, vocabs: Vocabs, column: str, value: str, **others: float) -> None:
    """Make the tagger of ``column`` pick ``value`` for every word; each class of ``others``
    gets that share of its probability (every other class about e^-10 of it)."""
    output = model.taggers[column][-1]
    stoi = vocabs.columns[column].stoi
    with torch.no_grad():
        output.weight.zero_()
        output.bias.zero_()
        output.bias[stoi[value]] = 10.0
        for other, share in others.items():
            output.bias[stoi[other]] = 10.0 + math.log(share)


def test_the_tiny_lemmas_are_edit_scripts_and_words_without_one_are_ignored(
    sentences: list[Sentence], vocabs: Vocabs
) -> None:
    pairs = {(f, lemma) for s in sentences for f, lemma in zip(s.forms, s.lemmas, strict=True)}
    assert set(vocabs.columns["lemma"].itos[3:]) == {script_of(*pair) for pair in pairs}
    words = sentences[0].with_columns({"lemma": ["_", "_", "sit", "."]})
    batch = next(batches_by_tokens(encode([words], vocabs), 100, shuffle=False))
    stoi = vocabs.columns["lemma"].stoi
    assert batch.columns["lemma"][0, 1:].tolist() == [
        IGNORE_INDEX,
        IGNORE_INDEX,
        stoi[script_of("sat", "sit")],
        stoi[script_of(".", ".")],
    ]


def test_a_batch_without_lemmas_adds_no_lemma_loss(sentences, vocabs) -> None:
    model = biaffine_parser(vocabs, **TINY_PARSER, lemma_loss_weight=1.0)
    unannotated = [s.with_columns({"lemma": ["_"] * len(s)}) for s in sentences]
    batch = next(batches_by_tokens(encode(unannotated, vocabs), 10_000, shuffle=False))
    scores = model(batch)
    assert scores.tag_scores.keys() == {"lemma"}
    zero = torch.zeros(())
    assert model.taggers.add_losses(zero, scores.tag_scores, batch).item() == 0.0


def test_columns_lemma_writes_the_best_script_applied_to_each_form(
    lemma_checkpoint: Path, sentences: list[Sentence]
) -> None:
    parser = Parser.load(lemma_checkpoint, threads=1)
    plain = parser.parse(sentences)
    lemmatized = parser.parse(sentences, columns=["lemma"], overwrite=True)
    scripts = expected_tags(parser, sentences, "lemma")
    changed = 0
    for ours, theirs, best, sentence in zip(lemmatized, plain, scripts, sentences, strict=True):
        forms = sentence.forms
        lemmas = [apply(script, form) or form for script, form in zip(best, forms, strict=True)]
        assert ours.sentence.lemmas == lemmas
        assert [row[LEMMA] for row in cells(ours.sentence)] == lemmas
        assert ours.heads == theirs.heads
        for row, plain_row in zip(cells(ours.sentence), cells(theirs.sentence), strict=True):
            changed += row[LEMMA] != plain_row[LEMMA]
            assert row[:LEMMA] + row[LEMMA + 1 :] == plain_row[:LEMMA] + plain_row[LEMMA + 1 :]
    assert changed > 0, "a random lemmatizer must change some LEMMA: else this proves nothing"


@pytest.mark.parametrize("family", ["graph", "transition"])
def test_a_script_that_cuts_the_whole_form_gives_the_form(
    family: str, scripts_only: Vocabs, sentences: list[Sentence], tmp_path: Path
) -> None:
    # "scheduled" -> "schedule": lower-case, cut one character at the end. On "." (one
    # character) it would keep nothing: the form stays.
    model = lemmatizer_only(scripts_only, family, script_of("scheduled", "schedule"))
    parser = Parser.load(save_model(tmp_path / "best.pt", model, scripts_only), threads=1)
    for tree in parser.parse(sentences, columns=["lemma"], overwrite=True):
        forms = tree.sentence.forms
        assert tree.sentence.lemmas == [f[:-1].lower() if len(f) > 1 else f for f in forms]


@pytest.mark.parametrize("family", ["graph", "transition"])
def test_the_lexicon_lemma_of_a_training_form_wins_over_a_wrong_script(
    family: str, vocabs: Vocabs, sentences: list[Sentence], tmp_path: Path
) -> None:
    # Every script is "cut one character, lower-case": wrong for every tiny word but
    # "scheduled". The vocabularies' lexicon knows them all; "Cats" it never saw.
    model = lemmatizer_only(vocabs, family, script_of("scheduled", "schedule"))
    parser = Parser.load(save_model(tmp_path / "best.pt", model, vocabs), threads=1)
    trees = parser.parse(sentences, columns=["lemma"], overwrite=True)
    assert [tree.sentence.lemmas for tree in trees] == [s.lemmas for s in sentences]
    words = Sentence.from_forms(["Cats", "sat", "."])
    [tree] = parser.parse([words], columns=["lemma"], overwrite=True)
    assert tree.sentence.lemmas == ["cat", "sit", "."]


# "sat" has a lemma per UPOS and one by form alone, all made up: which one is written shows
# which UPOS the lookup used.
MADE_UP = Lexicon(
    tagged={("sat", "VERB"): "sit-verb", ("sat", "NOUN"): "sit-noun"}, forms={"sat": "sit-form"}
)


@pytest.mark.parametrize(
    ("tagger", "given", "lemma"),
    [
        ("NOUN", "VERB", "sit-noun"),  # a UPOS tagger: its UPOS, even when not asked for
        (None, "VERB", "sit-verb"),  # none: the input's UPOS
        (None, "_", "sit-form"),  # none given either: the form alone
    ],
)
def test_the_lexicon_is_keyed_by_the_predicted_upos_else_the_given_one(
    tagger: str | None, given: str, lemma: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    with_lexicon = dataclasses.replace(vocabs, lexicon=MADE_UP)
    model = lemmatizer_only(with_lexicon, "graph", script_of("scheduled", "schedule"), tagger)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    words = Sentence(["The", "cat", "sat"], upos=["DET", "NOUN", given])
    [tree] = parser.parse([words], columns=["lemma"], overwrite=True)
    assert tree.sentence.lemmas == ["th", "ca", lemma]
    assert tree.sentence.upos == words.upos  # UPOS was not asked for: kept


@pytest.mark.parametrize(
    ("tagger", "lemma"),
    [
        (0, "sit-featured"),  # the FEATS tagger's FEATS, with the UPOS: the finest key
        (1, "sit-verb"),  # other FEATS: no such triple, (form, UPOS)
        (None, "sit-verb"),  # no FEATS tagger: the input's FEATS is never the key
    ],
)
def test_the_lexicon_is_keyed_by_the_predicted_feats_first(
    tagger: int | None, lemma: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    values = vocabs.columns["feats"].itos[len(SPECIALS) :][:2]
    featured = {("sat", "VERB", values[0]): "sit-featured"}
    with_lexicon = dataclasses.replace(
        vocabs, lexicon=dataclasses.replace(MADE_UP, featured=featured)
    )
    model = lemmatizer_only(with_lexicon, "graph", CUT_ONE, "VERB", feats=tagger is not None)
    if tagger is not None:
        force(model, with_lexicon, "feats", values[tagger])
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    words = Sentence(["The", "cat", "Sat"], feats=["_", "_", values[0]])
    [tree] = parser.parse([words], columns=["lemma"], overwrite=True)
    assert tree.sentence.lemmas[2] == lemma  # "Sat": the triple's form is lower-cased
    assert tree.sentence.feats == words.feats  # FEATS was not asked for: kept


CUT_ONE = script_of("scheduled", "schedule")  # lower-case, cut one character at the end
AS_IS = script_of("sheep", "sheep")  # lower-case, nothing cut


@pytest.mark.parametrize(
    ("share", "lemmas"),
    [
        (0.25, ["cat", "cat", "sheep", "cow"]),  # a likely runner-up: taken where known
        (LEMMA_RUNNER_UP * 0.9, ["cat", "cat", "shee", "cow"]),  # too unlikely: never taken
    ],
)
@pytest.mark.parametrize("family", ["graph", "transition"])
def test_a_runner_up_script_wins_only_where_its_lemma_is_known_and_the_best_ones_is_not(
    share: float, lemmas: list[str], family: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    # The lexicon has none of the forms but "kitten", so only the scripts decide the others'
    # lemmas (whose runners-up are computed apart from the lexicon's words, and must stay
    # theirs). It knows the lemmas "cat" (as its form-table value) and "Sheep" (as a tagged
    # value, so case aside).
    lexicon = Lexicon(tagged={("ewe", "NOUN"): "Sheep"}, forms={"kitten": "cat"})
    assert lexicon.known == {"cat", "sheep"}
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, family, CUT_ONE)
    force(model, with_lexicon, "lemma", CUT_ONE, **{AS_IS: share})
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    # cats: the best script's "cat" is known; sheep: "shee" is not, the runner-up's "sheep"
    # is; cows: neither "cow" nor "cows" is, the best stays.
    forms = ["cats", "kitten", "sheep", "cows"]
    [tree] = parser.parse([Sentence.from_forms(forms)], columns=["lemma"])
    assert tree.sentence.lemmas == lemmas


@pytest.mark.parametrize("family", ["graph", "transition"])
def test_the_lemmatizer_scores_only_the_words_whose_lemma_the_lexicon_cannot_give(
    family: str, scripts_only: Vocabs, sentences: list[Sentence], tmp_path: Path
) -> None:
    # A random lemmatizer (each word its own best script) and a lexicon that knows every other
    # form, with made-up lemmas no script writes: each of the others must get the script
    # scoring every word gives it, wherever it stands in the batch.
    forms = sorted({form for sentence in sentences for form in sentence.forms})
    known = {form: f"{form}-made-up" for form in forms[::2]}
    with_lexicon = dataclasses.replace(scripts_only, lexicon=Lexicon(forms=known))
    torch.manual_seed(6)
    model = lemmatizer_only(with_lexicon, family, CUT_ONE, "NOUN")
    saved = save_model(tmp_path / "best.pt", randomized(model), with_lexicon)
    parser = Parser.load(saved, threads=1)
    scripts = expected_tags(parser, sentences, "lemma")  # every word scored
    scored: list[int] = []
    lemmatizer = parser.model.taggers["lemma"]
    lemmatizer.register_forward_hook(lambda _, args, __: scored.append(args[0].shape[1]))
    trees = parser.parse(sentences, columns=["lemma"], overwrite=True)
    unknown = [form for sentence in sentences for form in sentence.forms if form not in known]
    assert sum(scored) == len(unknown) < sum(map(len, sentences))
    applied = 0
    for tree, best, sentence in zip(trees, scripts, sentences, strict=True):
        for lemma, script, form in zip(tree.sentence.lemmas, best, sentence.forms, strict=True):
            assert lemma == known.get(form, apply(script, form) or form)
            applied += form not in known and lemma != form.lower()[:-1]
    assert applied > 0, "every unknown word took CUT_ONE: a random lemmatizer must differ"


def test_where_no_script_gives_a_training_lemma_the_script_of_the_word_ending_does() -> None:
    """The lexicon's lemma, else the best script's if it is a training lemma, else a known
    runner-up's, else the script of the word's ending with its UPOS, else the best script's."""
    lexicon = Lexicon(
        tagged={("házban", "NOUN"): "ház", ("kertben", "NOUN"): "kert"},
        lemma_suffixes={("ban", "NOUN"): "L-0+|-3+"},
    )
    words = [  # form, UPOS, best script, runners-up, lemma
        ("kertben", "NOUN", "L-0+|-0+", (), "kert"),  # the lexicon's
        ("házakban", "NOUN", "L-0+|-5+", (), "ház"),  # the best script's: a training lemma
        ("kertekben", "NOUN", "L-0+|-0+", ("L-0+|-5+",), "kert"),  # a runner-up's: one too
        ("lakásban", "NOUN", "L-0+|-1+", ("L-0+|-2+",), "lakás"),  # none: its ending's, "ban"
        ("Lakásban", "NOUN", "L-0+|-1+", (), "lakás"),  # the ending lower-cased
        ("lakásban", None, "L-0+|-1+", (), "lakásba"),  # no UPOS: the best script's
        ("lakásban", "VERB", "L-0+|-1+", (), "lakásba"),  # no ending known with its UPOS
    ]
    forms, upos, best, others, lemmas = (list(column) for column in zip(*words, strict=True))
    found = strings("lemma", best, forms, lexicon=lexicon, upos=upos, runners_up=others)
    assert found == lemmas


def test_a_whole_lemma_script_is_no_evidence_that_a_word_the_lexicon_lacks_has_that_lemma() -> None:
    """A whole-lemma script always writes a training lemma ("best" -> "good"), so for a word
    the lexicon lacks it gives way to a runner-up edit script whose lemma is one, and is never
    taken as a runner-up for being one; where nothing else is found it stays the best."""
    lexicon = Lexicon(
        tagged={("best", "ADJ"): "good", ("kind", "ADJ"): "kind", ("was", "AUX"): "be"},
        lemma_suffixes={("liest", "ADJ"): "L-0+|-4+y"},
    )
    cut_est = "L-0+|-3+"
    words = [  # form, best script, runners-up, lemma
        ("kindest", "=good", (cut_est,), "kind"),  # the runner-up's training lemma
        ("Kindest", "=good", ("=be", cut_est), "kind"),  # a whole-lemma runner-up skipped
        ("friendliest", "=good", (), "friendly"),  # none: its ending's
        ("qualifier", "=good", ("=be",), "good"),  # nothing else: the best stays
        ("kind", cut_est, ("=good",), "kind"),  # the lexicon's, as ever
        ("kindest", cut_est, ("=good",), "kind"),  # an edit script's training lemma
    ]
    forms, best, others, lemmas = (list(column) for column in zip(*words, strict=True))
    upos = ["ADJ"] * len(forms)
    found = strings("lemma", best, forms, lexicon=lexicon, upos=upos, runners_up=others)
    assert found == lemmas


def test_with_exact_case_a_lemma_is_a_training_lemma_only_as_training_wrote_it() -> None:
    """Case aside (the default), a script that keeps a sentence's capital ("Ömür") passes for
    the training lemma "ömür", and so does "Mi" for the acronym "MI"; with ``exact_case`` each
    gives way to a runner-up or generator lemma in training's own casing."""
    lexicon = Lexicon(
        tagged={("ömrü", "NOUN"): "ömür", ("MI", "PROPN"): "MI", ("ev", "NOUN"): "ev"},
        lemma_suffixes={("red", "VERB"): "L-0+|-1+"},
    )
    keep, lower, cut_3 = "F-0+|-0+", "L-0+|-0+", "L-0+|-3+"
    words = [  # form, UPOS, best script, runners-up, generator's lemma, lemma: case aside, exact
        ("Ömür", "NOUN", keep, (lower,), None, "Ömür", "ömür"),
        ("mired", "VERB", cut_3, (), None, "mi", "mire"),  # "mi" passed for "MI"; the ending's
        ("Evler", "NOUN", cut_3, (), "Ev", "Ev", "ev"),  # the generator's "Ev" is no longer one
    ]
    forms, upos, best, others, written, aside, exact = (list(c) for c in zip(*words, strict=True))
    for case, lemmas in ((False, aside), (True, exact)):
        chosen = dataclasses.replace(lexicon, exact_case=case)
        found = strings(
            "lemma", best, forms, lexicon=chosen, upos=upos, runners_up=others, written=written
        )
        assert found == lemmas, case
    assert Lexicon.from_dict(dataclasses.replace(lexicon, exact_case=True).to_dict()).exact_case
    assert "exact_case" not in lexicon.to_dict()  # lexicons without it read and write the same


def test_an_address_the_lexicon_lacks_keeps_its_form_whatever_the_script_or_generator() -> None:
    """A web or e-mail address is its own lemma; one the lexicon holds takes the lexicon's."""
    lexicon = Lexicon(forms={"Compaq.com": "compaq.com-notebook.url", "cat": "cat"})
    words = [  # form, best script, generator's lemma, lemma
        (
            "http://en.wikipedia.org/wiki/Cubism",
            "L-0+|-0+",
            None,
            "http://en.wikipedia.org/wiki/Cubism",
        ),
        ("noc@paulhastings.com", "L-0+|-0+", None, "noc@paulhastings.com"),
        ("Seattlepi.com", "L-0+|-0+", "seattlepi.com", "Seattlepi.com"),
        ("Compaq.com", "K-0+|-0+", None, "compaq.com-notebook.url"),  # the lexicon's
        ("TEXT.htm", "L-0+|-0+", None, "text.htm"),  # a file name: the script's
        ("Cats", "L-0+|-1+", None, "cat"),
    ]
    forms, best, written, lemmas = (list(column) for column in zip(*words, strict=True))
    assert strings("lemma", best, forms, lexicon=lexicon, written=written) == lemmas
    assert strings("lemma", best, forms)[:3] == forms[:3]  # no lexicon: the same rule


def brute_runners_up(scores: np.ndarray, itos: list[str], share: float) -> list[tuple[str, ...]]:
    """:func:`runners_up` by a loop over each word's classes."""
    found = []
    for row in scores.astype(np.float64):
        real = range(3, len(row))  # the specials PAD, UNK, ROOT never count
        best = max(real, key=lambda i: (row[i], -i))
        near = [i for i in real if i != best and math.exp(row[i] - row[best]) >= share]
        found.append(tuple(itos[i] for i in sorted(near, key=lambda i: (-row[i], i))))
    return found


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 6).flatmap(
        lambda words: st.lists(
            st.lists(st.sampled_from([-3.0, -1.0, 0.0, 0.5, 2.0, 2.5]), min_size=7, max_size=7),
            min_size=words,
            max_size=words,
        )
    ),
    st.sampled_from([1.0, 0.5, 0.05, 1e-3]),
)
def test_runners_up_are_the_classes_within_the_share_of_the_best_in_score_order(
    rows: list[list[float]], share: float
) -> None:
    scores = np.array(rows, dtype=np.float32).reshape(len(rows), 7)
    itos = [*SPECIALS, "a", "b", "c", "d"]
    assert runners_up(scores, Vocab(itos), share) == brute_runners_up(scores, itos, share)


# Per column: the tagger's class for every word, its runner-up, the lexicon's value for "sat".
ANALYSES = {
    "feats": ("Number=Sing", "Mood=Ind|Tense=Past|VerbForm=Fin", "Mood=Ind|Tense=Past"),
    "xpos": ("NN", "VBP", "VBD"),
}


@pytest.mark.parametrize("column", sorted(ANALYSES))
@pytest.mark.parametrize("unsure", [True, False])
@pytest.mark.parametrize("family", ["graph", "transition"])
def test_the_lexicon_analysis_of_a_training_pair_wins_where_the_tagger_is_unsure(
    column: str, unsure: bool, family: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    # The tagger gives one class to every word, sure of it (all but e^-10 of the probability)
    # or not (2/3, its runner-up 1/3); the lexicon knows ("sat", VERB) and ("cat", NOUN), and
    # the predicted UPOS, VERB for every word, is its key.
    best, runner_up, known = ANALYSES[column]
    lexicon = Lexicon(analyses={column: {("sat", "VERB"): known, ("cat", "NOUN"): "_"}})
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, family, CUT_ONE, "VERB", **{column: True})
    force(model, with_lexicon, column, best, **({runner_up: 0.5} if unsure else {}))
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    words = Sentence.from_forms(["The", "cat", "sat"])
    [tree] = parser.parse([words], columns=[column], overwrite=True)
    assert getattr(tree.sentence, column) == [best, best, known if unsure else best]
    without = dataclasses.replace(vocabs, lexicon=None)
    plain = Parser.load(save_model(tmp_path / "plain.pt", model, without), threads=1)
    [tree] = plain.parse([words], columns=[column], overwrite=True)
    assert getattr(tree.sentence, column) == [best] * 3


@pytest.mark.parametrize("family", ["graph", "transition"])
def test_upos_and_xpos_are_chosen_together_among_the_lexicons_tag_sets(
    family: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    # UPOS says VERB (2/3, NOUN 1/3), XPOS says NN (99%, VBD 1%): apart, VERB-NN, which
    # training never saw; together, NOUN-NN (1/3 x 0.99 against 2/3 x 0.01), even where only
    # UPOS is asked for.
    lexicon = Lexicon(tag_sets=frozenset({("NOUN", "NN", "_"), ("VERB", "VBD", "_")}))
    with_sets = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_sets, family, CUT_ONE, "VERB", xpos=True)
    force(model, with_sets, "upos", "VERB", NOUN=0.5)
    force(model, with_sets, "xpos", "NN", VBD=0.01)
    words = [Sentence.from_forms(["The", "cat", "sat"])]
    joint = Parser.load(save_model(tmp_path / "best.pt", model, with_sets), threads=1)
    [tree] = joint.parse(words, columns=["upos", "xpos"])
    assert (tree.sentence.upos, tree.sentence.xpos) == (["NOUN"] * 3, ["NN"] * 3)
    [tree] = joint.parse(words, columns=["upos"])
    assert tree.sentence.upos == ["NOUN"] * 3
    apart = dataclasses.replace(vocabs, lexicon=Lexicon())
    plain = Parser.load(save_model(tmp_path / "plain.pt", model, apart), threads=1)
    [tree] = plain.parse(words, columns=["upos", "xpos"])
    assert (tree.sentence.upos, tree.sentence.xpos) == (["VERB"] * 3, ["NN"] * 3)


@pytest.mark.parametrize("unsure", [True, False])
def test_an_unseen_words_feats_are_guessed_from_its_ending_where_the_tagger_is_unsure(
    unsure: bool, vocabs: Vocabs, tmp_path: Path
) -> None:
    # The lexicon knows the ending "at" of verbs, and "cat" as a verb; every word is a VERB.
    best, runner_up, known = ANALYSES["feats"]
    lexicon = Lexicon(tagged={("cat", "VERB"): "cat"}, suffixes={"feats": {("at", "VERB"): known}})
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, "graph", CUT_ONE, "VERB", feats=True)
    force(model, with_lexicon, "feats", best, **({runner_up: 0.5} if unsure else {}))
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    [tree] = parser.parse([Sentence.from_forms(["The", "cat", "sat"])], columns=["feats"])
    # "cat" was seen: no guess; "sat" was not, and ends in "at".
    assert tree.sentence.feats == [best, best, known if unsure else best]


@pytest.mark.parametrize(
    ("runner_up", "upos", "lemma"),
    [
        (0.5, ["DET", "NOUN", "VERB"], "sit-noun"),  # unsure: the lexicon's UPOS of "cat"
        (None, ["VERB"] * 3, "sit-verb"),  # sure: the tagger's VERB everywhere
    ],
)
def test_the_lexicon_upos_of_a_form_wins_where_the_tagger_is_unsure_and_keys_the_lemma(
    runner_up: float | None, upos: list[str], lemma: str, vocabs: Vocabs, tmp_path: Path
) -> None:
    # "The" and "cat" always had one UPOS in the made-up training data, "sat" had two. The
    # UPOS written is the key of the lemma lookup: ("cat", NOUN) -> "sit-noun" shows it.
    lexicon = Lexicon(
        tagged={("cat", "NOUN"): "sit-noun", ("cat", "VERB"): "sit-verb"},
        upos={"The": "DET", "cat": "NOUN"},
    )
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, "graph", CUT_ONE, "VERB")
    others = {} if runner_up is None else {"NOUN": runner_up}
    force(model, with_lexicon, "upos", "VERB", **others)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    [tree] = parser.parse([Sentence.from_forms(["The", "cat", "sat"])], columns=["upos", "lemma"])
    assert tree.sentence.upos == upos
    assert tree.sentence.lemmas[1] == lemma


def test_an_address_the_lexicon_lacks_takes_the_tags_training_gave_addresses(
    vocabs: Vocabs, tmp_path: Path
) -> None:
    """Every column but UPOS forced to its first class; an unseen e-mail address gets the
    lexicon's address tags, a seen one and a word keep the taggers' (or the lexicon's)."""
    addresses = [f"user{i}@example.com" for i in range(20)]
    lexicon = Lexicon(
        tagged={(f, "PROPN"): f for f in addresses},
        analyses={"xpos": {(f, "PROPN"): "ADD" for f in addresses}, "feats": {}},
    )
    assert lexicon.address_tags == ("PROPN", "ADD", "_")
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, "graph", CUT_ONE, "VERB", xpos=True, feats=True)
    xpos, feats = (with_lexicon.columns[c].itos[len(SPECIALS)] for c in ("xpos", "feats"))
    force(model, with_lexicon, "xpos", xpos)
    force(model, with_lexicon, "feats", feats)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    forms = ["mail", "me@home.org", "user3@example.com", "www.example.org/a"]
    [tree] = parser.parse([Sentence.from_forms(forms)], columns=["upos", "xpos", "feats"])
    assert tree.sentence.upos == ["VERB", "PROPN", "VERB", "PROPN"]
    assert tree.sentence.xpos == [xpos, "ADD", xpos, "ADD"]
    assert tree.sentence.feats == [feats, "_", feats, "_"]


def test_a_code_the_lexicon_lacks_takes_only_a_upos_training_codes_had(
    vocabs: Vocabs, tmp_path: Path
) -> None:
    """UPOS forced to NUM, NOUN its runner-up: an unseen code (a letter and a digit) cannot be
    NUM where the lexicon's codes never were; a seen code, a number and a word keep NUM."""
    codes = {(f"E{i}", "NOUN"): f"E{i}" for i in range(MIN_CODES)}
    lexicon = Lexicon(tagged={**codes, ("A1", "NUM"): "A1"})
    assert lexicon.code_upos == frozenset({"NOUN", "NUM"})
    lexicon = Lexicon(tagged=codes)
    assert lexicon.code_upos == frozenset({"NOUN"})
    with_lexicon = dataclasses.replace(vocabs, lexicon=lexicon)
    model = lemmatizer_only(with_lexicon, "graph", CUT_ONE, "NUM")
    force(model, with_lexicon, "upos", "NUM", NOUN=0.5)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, with_lexicon), threads=1)
    forms = ["X99", "E3", "1990", "cat", "01-Feb-02", "me@home.org"]
    [tree] = parser.parse([Sentence.from_forms(forms)], columns=["upos"])
    assert tree.sentence.upos == ["NOUN", "NUM", "NUM", "NUM", "NOUN", "NUM"]
    few = dataclasses.replace(with_lexicon, lexicon=Lexicon(tagged=dict(list(codes.items())[1:])))
    assert few.lexicon.code_upos is None  # too few codes to stand on: the tagger's NUM stays
    parser = Parser.load(save_model(tmp_path / "few.pt", model, few), threads=1)
    [tree] = parser.parse([Sentence.from_forms(["X99"])], columns=["upos"])
    assert tree.sentence.upos == ["NUM"]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from([-2.0, 0.0, 1.0, 3.0]), min_size=6, max_size=6), max_size=5),
    st.sampled_from([0.3, 0.5, 0.9, 1.0]),
)
def test_doubtful_words_are_those_whose_best_class_is_below_the_share(
    rows: list[list[float]], share: float
) -> None:
    scores = np.array(rows, dtype=np.float32).reshape(len(rows), 6)
    expected = []
    for row in scores.astype(np.float64):
        real = np.exp(row[3:])  # the specials never count
        expected.append(bool(real.max() / real.sum() < share))
    assert doubtful(scores, share) == expected


def test_a_model_without_a_lemmatizer_refuses_columns_lemma(sentences, vocabs, tmp_path):
    model = biaffine_parser(vocabs, **TINY_PARSER, tag_loss_weight=1.0)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, vocabs), threads=1)
    with pytest.raises(Refused, match=r"^columns=lemma: this model has no tagger for lemma \("):
        parser.parse(sentences, columns=["upos", "lemma"])


def test_a_lemmatizer_trained_two_epochs_is_scored_by_the_evaluator(tmp_path: Path) -> None:
    run = tmp_path / "run"
    train = [sys.executable, str(REPO / "train.py"), "experiment=smoke", "trainer.max_epochs=2"]
    train += ["model.lemma_loss_weight=1", f"hydra.run.dir={run}"]
    subprocess.run(train, check=True, capture_output=True, cwd=REPO)
    out = tmp_path / "pred.conllu"
    command = [sys.executable, str(REPO / "predict.py"), f"checkpoint={run / 'best.pt'}"]
    command += [
        f"input={TINY_CONLLU}",
        f"output={out}",
        "threads=1",
        "columns=[lemma]",
        "overwrite_columns=true",
    ]
    subprocess.run(command, check=True, capture_output=True, cwd=REPO)
    evaluation = evaluate_files(str(TINY_CONLLU), str(out))
    lemmas = evaluation.words.scores["Lemmas"]
    predicted = [w for s in read_conllu(out) for w in s.lemmas]
    gold = [w for s in read_conllu(TINY_CONLLU) for w in s.lemmas]
    right = sum(p == g for p, g in zip(predicted, gold, strict=True))
    assert (lemmas.correct, lemmas.gold) == (right, len(gold))
    assert predicted == gold  # the smoke data is this file: the training lexicon knows it all
    wrong = tmp_path / "wrong.conllu"  # so the score is shown to be the prediction's thus:
    wrong.write_text(
        out.read_text(encoding="utf-8").replace("\tsat\tsit\t", "\tsat\tsat\t", 1), encoding="utf-8"
    )
    assert evaluate_files(str(TINY_CONLLU), str(wrong)).words.scores["Lemmas"].correct == right - 1
    assert evaluation.words.scores["UPOS"].correct == evaluation.words.scores["UPOS"].gold


@pytest.mark.parametrize("family", ["graph", "transition"])
@pytest.mark.parametrize(
    ("columns", "run"),
    [
        ([], set()),
        (["xpos"], {"xpos"}),  # no lexicon: nothing else is read
        (["lemma"], {"lemma"}),
        (["upos", "feats"], {"upos", "feats"}),
        (["all"], {"upos", "xpos", "feats", "lemma"}),
    ],
)
def test_a_parse_runs_only_the_taggers_its_columns_read(
    columns: list[str], run: set[str], family: str, scripts_only: Vocabs, tmp_path: Path
) -> None:
    model = lemmatizer_only(scripts_only, family, CUT_ONE, "NOUN", xpos=True, feats=True)
    parser = Parser.load(save_model(tmp_path / "best.pt", model, scripts_only), threads=1)
    ran: set[str] = set()
    for column, head in parser.model.taggers.items():
        head.register_forward_hook(lambda *_, column=column: ran.add(column))
    words = Sentence.from_forms(["The", "cats", "sat"])
    [tree] = parser.parse([words], columns=columns)
    assert ran == run
    if "lemma" in run:
        assert tree.sentence.lemmas == ["th", "cat", "sa"]  # CUT_ONE, no lexicon
