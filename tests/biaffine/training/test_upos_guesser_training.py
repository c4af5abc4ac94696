"""Training the UPOS guesser: its torch twin scores as numpy does, its weight is the one that
tags the dev file best, and the command writes the model again with it, which then tags the
words its lexicon lacks with it and every other word as before."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import builders
import numpy as np
import pytest
import torch
from builders import conllu_file, randomized, run_module
from conftest import TINY_CONLLU

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.training.feats_guesser import ClassifierNet
from biaffine.training.lemma_generator import padded
from biaffine.training.upos_guesser import WEIGHTS, guesser_of, train_upos_guesser, upos_pairs
from biaffine.training.weighing import weigh

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Dev words the tiny treebank lacks ("Dogs", "slept", "there"), and one without a UPOS.
DEV = [
    Sentence(["Dogs", "slept", "there", "."], upos=["NOUN", "VERB", "ADV", "PUNCT"]),
    Sentence(["the", "cat", "barked"], upos=["DET", "NOUN", "_"]),
]


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return conllu_file(tmp_path_factory.mktemp("dev"), DEV)


@pytest.fixture(scope="module")
def tagging_model(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    return builders.tagging_model(tmp_path_factory.mktemp("tags"), vocabs)


def run_command(*arguments: str | Path) -> subprocess.CompletedProcess:
    return run_module("biaffine.training.upos_guesser", *arguments)


def test_the_pairs_are_distinct_forms_with_their_upos(sentences) -> None:
    pairs = upos_pairs([*sentences, *DEV])
    assert pairs == sorted(set(pairs))
    assert {middle for _, middle, _ in pairs} == {""}
    assert ("barked", "", "_") not in pairs  # no UPOS: nothing to learn
    expected = {(f, u) for s in [*sentences, *DEV] for f, u in zip(s.forms, s.upos, strict=True)}
    assert {(form, upos) for form, _, upos in pairs} == expected - {("barked", "_")}


def test_numpys_log_probabilities_are_the_torch_twins(sentences) -> None:
    torch.manual_seed(0)
    data = upos_pairs(sentences)
    chars = sorted({c for form, _, _ in data for c in form})
    classes = sorted({upos for _, _, upos in data})
    net = randomized(ClassifierNet(4 + len(chars), len(classes), dim=8, hidden=6)).eval()
    guesser = guesser_of(net, chars, classes)
    forms = [form for form, _, _ in data]
    with torch.no_grad():
        expected = net(padded([guesser.source(form, "") for form in forms])).log_softmax(1)
    np.testing.assert_allclose(guesser.log_probs(forms), expected.numpy(), atol=1e-4)
    assert guesser.weight == 1.0
    assert guesser.tags == ()


def test_the_weight_kept_is_the_one_that_tags_dev_best(sentences, tagging_model: Path) -> None:
    reports: list[str] = []
    trained = train_upos_guesser(sentences, DEV, minutes=5, max_epochs=2, report=reports.append)
    assert trained.held_out == 3  # "Dogs", "slept", "there"
    loaded = checkpoint.load(tagging_model)
    options = {"kind": "upos_guesser", "column": "upos", "weights": WEIGHTS}
    weighed = weigh(trained, loaded, DEV, **options, report=reports.append)
    assert [weight for weight, _ in weighed.tried] == list(WEIGHTS)
    assert len(reports) == 2 + len(WEIGHTS)
    best = max(right for _, right in weighed.tried)
    assert weighed.model.weight == min(w for w, right in weighed.tried if right == best)
    assert dataclasses.replace(weighed.model, weight=1.0) == trained.model
    assert weighed.facts() == trained.facts() | {"dev_upos": weighed.tried}
    # Each weight's score is the model's, tagging dev with the guesser so weighed.
    vocabs = loaded.vocabs
    for weight, right in weighed.tried:
        guesser = dataclasses.replace(trained.model, weight=weight)
        lexicon = dataclasses.replace(vocabs.lexicon, upos_guesser=guesser)
        parser = Parser(
            checkpoint.build_model(loaded),
            dataclasses.replace(vocabs, lexicon=lexicon),
            device=torch.device("cpu"),
        )
        trees = parser.parse(DEV, columns=["upos"], overwrite=True)
        tagged = [t for tree in trees for t in tree.sentence.upos]
        gold = [t for sentence in DEV for t in sentence.upos]
        counted = [k for k, t in enumerate(gold) if t != "_"]
        assert right == round(100 * sum(tagged[k] == gold[k] for k in counted) / 6, 2)


def test_the_command_adds_a_guesser_that_scores_the_upos_of_unseen_forms(
    tagging_model: Path, dev_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "with_guesser.pt"
    done = run_command(tagging_model, TINY_CONLLU, dev_file, out, "--max-epochs", "2")
    assert done.returncode == 0, done.stderr
    assert "UPOS guesser of epoch" in done.stdout
    before, after = checkpoint.load(tagging_model), checkpoint.load(out)
    assert all(torch.equal(after.state_dict[k], w) for k, w in before.state_dict.items())
    lexicon = after.vocabs.lexicon
    guesser = lexicon.upos_guesser
    assert guesser is not None
    assert guesser.weight in WEIGHTS
    assert dataclasses.replace(lexicon, upos_guesser=None) == before.vocabs.lexicon
    facts = after.metadata["upos_guesser"]
    assert facts["options"]["max_epochs"] == 2
    assert [weight for weight, _ in facts["dev_upos"]] == list(WEIGHTS)
    # Weighed heavily, it decides the UPOS of the words the lexicon lacks, and of no others.
    heavy = dataclasses.replace(lexicon, upos_guesser=dataclasses.replace(guesser, weight=1e4))
    words = [Sentence.from_forms(forms) for forms in (["Dogs", "slept", "."], ["the", "cats"])]
    plain = Parser.load(tagging_model, threads=1).parse(words, columns=["upos"])
    parser = Parser.load(out, threads=1)
    parser.vocabs = dataclasses.replace(parser.vocabs, lexicon=heavy)
    guessed = parser.parse(words, columns=["upos"])
    unseen = 0
    for old, new in zip(plain, guessed, strict=True):
        for form, was, now in zip(
            old.sentence.forms, old.sentence.upos, new.sentence.upos, strict=True
        ):
            if lexicon.lacks(form):
                picked = guesser.log_probs([form]).argmax(1)[0]
                assert now == guesser.classes[picked]
                unseen += 1
            else:
                assert now == was
    assert unseen == 3  # "Dogs", "slept", "cats"


def test_a_dev_file_without_unseen_words_is_refused_in_one_line(
    tagging_model: Path, tmp_path: Path
) -> None:
    done = run_command(tagging_model, TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(TINY_CONLLU) in done.stderr
    assert not (tmp_path / "out.pt").exists()
