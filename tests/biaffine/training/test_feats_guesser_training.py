"""Training the FEATS guesser: its torch twin scores as numpy does, and the command writes the
model again with it, which then picks the FEATS of the words its lexicon lacks."""

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
from biaffine.training.feats_guesser import (
    WEIGHTS,
    ClassifierNet,
    feats_triples,
    guesser_of,
    train_guesser,
)
from biaffine.training.lemma_generator import padded

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Dev words the tiny treebank lacks, analysed as its own words are.
DEV = [
    Sentence(
        ["Dogs", "slept", "there", "."],
        lemmas=["dog", "sleep", "there", "."],
        upos=["NOUN", "VERB", "ADV", "PUNCT"],
        feats=["Number=Plur", "Mood=Ind|Tense=Past|VerbForm=Fin", "_", "_"],
    ),
]


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return conllu_file(tmp_path_factory.mktemp("dev"), DEV)


@pytest.fixture(scope="module")
def tagging_model(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    return builders.tagging_model(tmp_path_factory.mktemp("tags"), vocabs)


def run_command(*arguments: str | Path) -> subprocess.CompletedProcess:
    return run_module("biaffine.training.feats_guesser", *arguments)


def test_numpys_scores_are_the_torch_twins(sentences) -> None:
    torch.manual_seed(0)
    data = feats_triples(sentences)
    chars = sorted({c for form, _, _ in data for c in form})
    tags = sorted({upos for _, upos, _ in data})
    values = len({feats for _, _, feats in data})
    net = randomized(ClassifierNet(4 + len(chars) + len(tags), values, dim=8, hidden=6)).eval()
    guesser = guesser_of(net, chars, tags, data)
    words = [(form, upos) for form, upos, _ in data]
    with torch.no_grad():
        expected = net(padded([guesser.source(*word) for word in words])).numpy()
    scores = guesser.scores(words)
    for row, (_, upos) in enumerate(words):
        allowed = list(guesser.allowed[upos])
        np.testing.assert_allclose(scores[row, allowed], expected[row, allowed], atol=1e-4)
    # Packed: a word's scores do not depend on the padding its batch adds.
    with torch.no_grad():
        alone = net(padded([guesser.source(*words[0])]))
    np.testing.assert_allclose(alone.numpy()[0], expected[0], atol=1e-5)


def test_the_values_of_each_upos_are_those_training_had(sentences) -> None:
    data = feats_triples(sentences)
    assert data == sorted(set(data))
    chars = sorted({c for form, _, _ in data for c in form})
    tags = sorted({upos for _, upos, _ in data})
    net = ClassifierNet(4 + len(chars) + len(tags), len({f for _, _, f in data}), dim=4, hidden=3)
    guesser = guesser_of(net, chars, tags, data)
    assert set(guesser.allowed) == set(tags)
    for upos, ids in guesser.allowed.items():
        assert {guesser.classes[k] for k in ids} == {f for _, u, f in data if u == upos}


def test_the_epoch_kept_is_the_one_with_most_held_out_words_right(sentences) -> None:
    reports: list[str] = []
    trained = train_guesser(sentences, DEV, minutes=5, max_epochs=3, report=reports.append)
    assert trained.epochs == 3
    assert len(reports) == 3
    rights = [float(line.split("right ")[1].rstrip("%")) for line in reports]
    assert trained.dev_right == round(max(rights), 2)
    assert trained.best_epoch == rights.index(max(rights)) + 1
    assert trained.held_out == 3  # "Dogs", "slept", "there": "." is a training form


def test_the_command_adds_a_guesser_that_picks_the_feats_of_unseen_forms(
    tagging_model: Path, dev_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "with_guesser.pt"
    done = run_command(tagging_model, TINY_CONLLU, dev_file, out, "--max-epochs", "2")
    assert done.returncode == 0, done.stderr
    assert "FEATS guesser of epoch" in done.stdout
    before, after = checkpoint.load(tagging_model), checkpoint.load(out)
    assert all(torch.equal(after.state_dict[k], w) for k, w in before.state_dict.items())
    lexicon = after.vocabs.lexicon
    assert lexicon.feats_guesser is not None
    assert dataclasses.replace(lexicon, feats_guesser=None) == before.vocabs.lexicon
    facts = after.metadata["feats_guesser"]
    assert facts["options"]["max_epochs"] == 2
    # Weighed on dev: each weight's score, and the first of the best kept.
    assert [weight for weight, _ in facts["dev_feats"]] == list(WEIGHTS)
    best = max(right for _, right in facts["dev_feats"])
    chosen = next(weight for weight, right in facts["dev_feats"] if right == best)
    assert lexicon.feats_guesser.weight == chosen
    # Alone (no weight), its pick is each unseen word's FEATS.
    alone = dataclasses.replace(lexicon.feats_guesser, weight=None)
    lexicon = dataclasses.replace(lexicon, feats_guesser=alone)
    words = [Sentence.from_forms(forms) for forms in (["Dogs", "slept", "."], ["the", "cats"])]
    plain = Parser.load(tagging_model, threads=1).parse(words, columns=["feats", "upos"])
    parser = Parser.load(out, threads=1)
    parser.vocabs = dataclasses.replace(parser.vocabs, lexicon=lexicon)
    guessed = parser.parse(words, columns=["feats", "upos"])
    unseen = 0
    for old, new in zip(plain, guessed, strict=True):
        assert new.sentence.upos == old.sentence.upos
        for form, upos, was, now in zip(
            old.sentence.forms, old.sentence.upos, old.sentence.feats, new.sentence.feats,
            strict=True,
        ):  # fmt: skip
            if lexicon.lacks(form):
                assert [now] == lexicon.feats_guesser.feats([(form, upos)])
                unseen += 1
            else:
                assert now == was
    assert unseen == 3  # "Dogs", "slept", "cats"
    # Without FEATS asked for, the guesser is not read.
    assert parser.parse(words, columns=["upos"])[0].sentence.feats == ["_"] * 3


def test_a_dev_file_without_unseen_words_is_refused_in_one_line(
    tagging_model: Path, tmp_path: Path
) -> None:
    done = run_command(tagging_model, TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(TINY_CONLLU) in done.stderr
    assert not (tmp_path / "out.pt").exists()


def test_a_model_without_a_feats_tagger_is_refused_before_the_training(
    vocabs: Vocabs, dev_file: Path, tmp_path: Path
) -> None:
    # It was refused after the minutes of training, by the weighing beside the tagger.
    weights = {"tag_loss_weight": 1.0, "lemma_loss_weight": 1.0}  # UPOS and lemmas, no FEATS
    model = builders.biaffine_parser(vocabs, **builders.TINY_PARSER, **weights)
    source = builders.save_model(tmp_path / "no_feats.pt", model, vocabs)
    done = run_command(source, TINY_CONLLU, dev_file, tmp_path / "out.pt", "--minutes", "0.1")
    assert done.returncode == 2
    assert (
        done.stderr == f"error: {source}: columns=feats: this model has no tagger for feats "
        "(train with the column's loss weight > 0)\n"
    )
    assert "epoch" not in done.stdout  # not one epoch trained
    assert not (tmp_path / "out.pt").exists()


def test_a_dev_file_without_upos_is_refused_before_the_training(
    tagging_model: Path, tmp_path: Path
) -> None:
    # It trained the whole budget, then weighed on no word: a ZeroDivisionError traceback.
    bare = [Sentence(s.forms, lemmas=s.lemmas, feats=s.feats) for s in DEV]  # UPOS "_"
    dev = conllu_file(tmp_path, bare)
    done = run_command(tagging_model, TINY_CONLLU, dev, tmp_path / "out.pt", "--max-epochs", "1")
    assert done.returncode == 2, done.stderr
    assert "unseen dev words with their UPOS" in done.stderr
    assert done.stderr.count("\n") == 1
    assert "epoch" not in done.stdout
    assert not (tmp_path / "out.pt").exists()
