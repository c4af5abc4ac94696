"""Training the lemma generator: its torch twin computes what numpy runs, the epoch kept is the
best on held-out words, and the command writes the model again with it, which then lemmatizes
the words its lexicon lacks by the rule."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, randomized, save_model
from conftest import TINY_CONLLU

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.columns import prefer_written
from biaffine.data.conllu import Sentence, read_conllu, write_conllu
from biaffine.data.lemma_generator import BOS, PAD, UNKNOWN
from biaffine.data.vocab import Vocabs
from biaffine.training import lemma_generator
from biaffine.training.lemma_generator import (
    Seq2Seq,
    generator_of,
    held_out,
    train_generator,
    triples,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).parents[3]

# Dev words the tiny treebank lacks, lemmatized as its own words are.
DEV = [
    Sentence(
        ["Dogs", "slept", "there", "."],
        lemmas=["dog", "sleep", "there", "."],
        upos=["NOUN", "VERB", "ADV", "PUNCT"],
    ),
    Sentence(["Birds", "sang", "."], lemmas=["bird", "sing", "."], upos=["NOUN", "VERB", "PUNCT"]),
]


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dev") / "dev.conllu"
    with path.open("w", encoding="utf-8") as out:
        write_conllu(out, DEV)
    return path


def test_numpys_greedy_lemmas_are_the_torch_twins_best_symbols(sentences) -> None:
    torch.manual_seed(0)
    data = triples(sentences)
    chars = sorted({c for form, _, lemma in data for c in form + lemma})
    tags = sorted({upos for _, upos, _ in data})
    model = randomized(Seq2Seq(4 + len(chars) + len(tags), dim=8, hidden=6), scale=1.0).eval()
    with torch.no_grad():  # only characters and the end written, so the text keeps every symbol
        model.out.bias[[PAD, BOS, UNKNOWN]] = -1e4
        model.out.bias[4 + len(chars) :] = -1e4
    generator = generator_of(model, chars, tags)
    words = [(form, upos) for form, upos, _ in data]
    written = generator.lemmas(words)
    source = lemma_generator.padded([generator.source(*word) for word in words])
    target = lemma_generator.padded([generator.target(lemma) for lemma in written])
    with torch.no_grad():
        best = model(source, target).argmax(-1)
    ended = 0
    for k, lemma in enumerate(written):
        limit = 2 * len(generator.source(*words[k])) + 8
        ended += len(lemma) < limit
        steps = min(len(lemma) + 1, limit)  # its end too, where it wrote one
        assert best[k, :steps].tolist() == target[k, :steps].tolist(), words[k]
    assert 0 < ended < len(words)
    # Packed: a word's scores do not depend on the padding its batch adds.
    with torch.no_grad():
        alone = model(source[:1, : len(generator.source(*words[0]))], target[:1])
        assert torch.allclose(alone, model(source, target)[:1], atol=1e-5)


def test_held_out_words_are_the_dev_words_training_lacks(sentences) -> None:
    seen = {form for sentence in sentences for form in sentence.forms}
    assert held_out(DEV, seen) == [
        (f, u, lemma)
        for s in DEV
        for f, u, lemma in zip(s.forms, s.upos, s.lemmas, strict=True)
        if f not in seen
    ]
    assert ("Dogs", "NOUN", "dog") in held_out(DEV, seen)
    assert all(form != "." for form, _, _ in held_out(DEV, seen))


def test_the_epoch_kept_is_the_one_with_most_held_out_words_right(sentences) -> None:
    reports: list[str] = []
    trained = train_generator(sentences, DEV, minutes=5, max_epochs=4, report=reports.append)
    assert trained.epochs == 4
    assert len(reports) == 4
    rights = [float(re.findall(r"right ([\d.]+)%", line)[0]) for line in reports]
    assert trained.best_epoch == 1 + rights.index(max(rights))  # the first best
    assert trained.dev_right == round(max(rights), 2)
    words = held_out(DEV, {form for sentence in sentences for form in sentence.forms})
    written = trained.model.lemmas([(form, upos) for form, upos, _ in words])
    right = sum(w == lemma for w, (_, _, lemma) in zip(written, words, strict=True))
    assert trained.dev_right == round(100 * right / len(words), 2)


@pytest.fixture(scope="module")
def lemma_model(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs) -> Path:
    """A tiny graph parser with UPOS and LEMMA taggers, random weights, and the tiny lexicon."""
    torch.manual_seed(3)
    model = biaffine_parser(vocabs, **TINY_PARSER, tag_loss_weight=1.0, lemma_loss_weight=1.0)
    return save_model(tmp_path_factory.mktemp("lemma") / "best.pt", randomized(model), vocabs)


def run_command(*arguments: str | Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "biaffine.training.lemma_generator", *map(str, arguments)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)


def test_the_command_adds_a_generator_that_writes_the_lemmas_of_unseen_forms(
    lemma_model: Path, dev_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "with_generator.pt"
    done = run_command(lemma_model, TINY_CONLLU, dev_file, out, "--max-epochs", "2")
    assert done.returncode == 0, done.stderr
    assert "lemma generator of epoch" in done.stdout
    before, after = checkpoint.load(lemma_model), checkpoint.load(out)
    assert after.state_dict.keys() == before.state_dict.keys()
    assert all(torch.equal(after.state_dict[k], w) for k, w in before.state_dict.items())
    lexicon = after.vocabs.lexicon
    assert lexicon.generator is not None
    assert dataclasses.replace(lexicon, generator=None) == before.vocabs.lexicon
    # Each word the lexicon lacks takes the rule's choice between the classifier's lemma and
    # the generator's; every other word keeps its lemma.
    words = [Sentence.from_forms(s.forms) for s in DEV]  # the UPOS predicted: the key
    plain = Parser.load(lemma_model, threads=1).parse(words, columns=["lemma", "upos"])
    generated = Parser.load(out, threads=1).parse(words, columns=["lemma", "upos"])
    changed = 0
    for old, new in zip(plain, generated, strict=True):
        assert new.sentence.upos == old.sentence.upos
        for form, upos, was, now in zip(
            old.sentence.forms,
            old.sentence.upos,
            old.sentence.lemmas,
            new.sentence.lemmas,
            strict=True,
        ):
            if lexicon.lacks(form):
                [written] = lexicon.generator.lemmas([(form, upos)])
                assert now == prefer_written(was, written, lexicon)
                changed += now != was
            else:
                assert now == was
    assert changed  # the generator decided some lemma


def test_the_networks_sizes_are_options_and_facts(
    lemma_model: Path, dev_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "small.pt"
    sizes = ["--max-epochs", "1", "--dim", "16", "--hidden", "8"]
    done = run_command(lemma_model, TINY_CONLLU, dev_file, out, *sizes)
    assert done.returncode == 0, done.stderr
    loaded = checkpoint.load(out)
    generator = loaded.vocabs.lexicon.generator
    assert (generator.dim, generator.hidden) == (16, 8)
    assert generator.weights["decoder.weight_hh"].shape == (4 * 16, 16)
    options = loaded.metadata["lemma_generator"]["options"]
    assert (options["dim"], options["hidden"]) == (16, 8)


def test_a_model_without_a_lexicon_is_refused_in_one_line(
    vocabs: Vocabs, dev_file: Path, tmp_path: Path
) -> None:
    no_lexicon = dataclasses.replace(vocabs, lexicon=None)
    path = save_model(tmp_path / "old.pt", biaffine_parser(no_lexicon, **TINY_PARSER), no_lexicon)
    done = run_command(path, TINY_CONLLU, dev_file, tmp_path / "out.pt", "--max-epochs", "1")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(path) in done.stderr
    assert "no lexicon" in done.stderr
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize("clash", ["checkpoint", "train", "dev"])
def test_an_output_that_is_an_input_is_refused_before_training(
    lemma_model: Path, dev_file: Path, tmp_path: Path, clash: str
) -> None:
    files = {"checkpoint": tmp_path / "in.pt", "train": tmp_path / "t.conllu", "dev": dev_file}
    files["checkpoint"].write_bytes(lemma_model.read_bytes())
    files["train"].write_bytes(TINY_CONLLU.read_bytes())
    before = files[clash].read_bytes()
    done = run_command(*files.values(), files[clash], "--max-epochs", "1")
    assert done.returncode == 2
    problem = f"output {files[clash]} is the input file {files[clash]}"
    assert done.stderr == f"error: {problem}: choose another output path\n"
    assert files[clash].read_bytes() == before


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--max-epochs", "0"], "--max-epochs 0: give a positive"),
        (["--minutes", "-1"], "--minutes"),
        (["--minutes", "inf"], "--minutes inf: give a finite number of minutes, or --max-epochs"),
        (["--dim", "0"], "--dim 0: give a positive size"),  # torch's message from training
        (["--hidden", "-2"], "--hidden -2: give a positive size"),
        (["--seed", str(10**23)], f"--seed {10**23}: give a seed in 0..2**63-1"),
    ],
)
def test_a_budget_or_size_that_trains_nothing_is_refused_in_one_line(
    lemma_model: Path, dev_file: Path, tmp_path: Path, option: list[str], message: str
) -> None:
    done = run_command(lemma_model, TINY_CONLLU, dev_file, tmp_path / "out.pt", *option)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {message}")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out.pt").exists()


def test_a_dev_file_without_unseen_words_is_refused_in_one_line(
    lemma_model: Path, tmp_path: Path
) -> None:
    done = run_command(lemma_model, TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert str(TINY_CONLLU) in done.stderr


def test_a_training_file_that_is_not_the_models_is_refused_in_one_line(
    lemma_model: Path, dev_file: Path, tmp_path: Path
) -> None:
    # Words were judged unseen by the file given, and a generator trained on it, in silence.
    done = run_command(lemma_model, dev_file, TINY_CONLLU, tmp_path / "out.pt")
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {dev_file}: lacks ")
    assert "forms the model's lexicon was built from" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "out.pt").exists()


def test_the_tiny_triples_are_distinct_sorted_and_annotated(sentences) -> None:
    data = triples(sentences)
    assert data == sorted(set(data))
    every = {
        (f, u, lemma)
        for s in read_conllu(TINY_CONLLU)
        for f, u, lemma in zip(s.forms, s.upos, s.lemmas, strict=True)
    }
    assert set(data) <= every
    assert len(data) > 10
    assert np.all([lemma != "_" or form == "_" for form, _, lemma in data])


@pytest.mark.parametrize("out", ["missing/x.pt", "."], ids=["missing-folder", "a-folder"])
def test_an_output_that_cannot_be_written_is_refused_before_training(
    tmp_path: Path, out: str
) -> None:
    # Refused when the trained model was written: minutes of training lost. The checkpoint
    # and the treebank are never read here (they do not exist): the output comes first.
    missing = tmp_path / "none.conllu"
    with pytest.raises(OSError, match=rf"^output {re.escape(str(tmp_path / out))}"):
        lemma_generator.add_generator(missing, missing, missing, tmp_path / out, minutes=1.0)
