"""Each tagger's doubt share chosen on dev: the choice against the accuracies it is made from,
the share the columns then read, and the checkpoint written with it (weights untouched)."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, randomized, save_model, split_options

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lexicon import Lexicon
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.inference.choices import TAGGER_DOUBT, predicted_columns
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser
from biaffine.training import doubt
from biaffine.training.doubt import (
    MIN_GAIN,
    RUNNER_UP_SHARES,
    SHARES,
    DevScores,
    accuracy,
    best_share,
    choose_doubt,
    choose_lemmas,
    write_doubt,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY_CONLLU = Path(__file__).parents[2] / "data" / "tiny.conllu"

UPOS = Vocab([*SPECIALS, "NOUN", "PROPN", "VERB"])
XPOS = Vocab([*SPECIALS, "NN", "NNP", "VB"])


def gold_sentence(forms: list[str], upos: list[str], xpos: list[str]) -> Sentence:
    """A sentence whose words hang off the first (HEAD is annotated: the metrics need it)."""
    rows = [
        f"{k}\t{form}\t_\t{tag}\t{x}\t_\t{0 if k == 1 else 1}\t{'root' if k == 1 else 'dep'}\t_\t_"
        for k, (form, tag, x) in enumerate(zip(forms, upos, xpos, strict=True), start=1)
    ]
    [sentence] = read_conllu(io.StringIO("\n".join(rows) + "\n\n"))
    return sentence


def scores_for(vocab: Vocab, best: list[str], share: list[float]) -> np.ndarray:
    """Logits float32[W, C] giving each word's ``best`` class probability ``share`` and the
    rest of the probability to the first other real class."""
    found = np.full((len(best), len(vocab)), -30.0, dtype=np.float32)
    real = vocab.itos[len(SPECIALS) :]
    for k, (name, p) in enumerate(zip(best, share, strict=True)):
        other = next(c for c in real if c != name)
        found[k, vocab.stoi[name]] = np.log(p)
        found[k, vocab.stoi[other]] = np.log(1 - p)
    return found


def dev_of(lexicon: Lexicon, tagger: dict[str, tuple[list[str], list[float]]]) -> tuple:
    """Dev scores of one sentence "bank runs bank runs" (gold PROPN VERB NOUN VERB) and
    vocabularies holding ``lexicon``."""
    sentence = gold_sentence(
        ["bank", "runs", "bank", "runs"],
        ["PROPN", "VERB", "NOUN", "VERB"],
        ["NNP", "VB", "NN", "VB"],
    )
    vocabs = Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root", "dep"], specials=False),
        columns={"upos": UPOS, "xpos": XPOS},
        lexicon=lexicon,
    )
    vocab = {"upos": UPOS, "xpos": XPOS}
    tag_scores = {c: scores_for(vocab[c], *tagger[c]) for c in tagger}
    return DevScores([sentence], [([0], tag_scores)], [["root", "dep", "dep", "dep"]]), vocabs


def test_the_share_kept_is_the_best_and_among_equals_the_nearest_the_default() -> None:
    """The tagger is right on both "bank"s at 0.65 and 0.85; the lexicon says NOUN for every
    "bank" (wrong on the first). Shares above 0.65 hand the first "bank" to the lexicon: the
    best shares are 0, 0.3, 0.5 and 0.6, and the nearest 0.9 of them is kept. XPOS, whose
    tagger is sure of every word, moves with nothing and keeps the default."""
    lexicon = Lexicon(upos={"bank": "NOUN"}, analyses={"xpos": {("bank", "NOUN"): "NN"}})
    scored, vocabs = dev_of(
        lexicon,
        {
            "upos": (["PROPN", "VERB", "NOUN", "VERB"], [0.65, 0.99, 0.85, 0.99]),
            "xpos": (["NNP", "VB", "NN", "VB"], [0.99] * 4),
        },
    )
    chosen, tried = choose_doubt(scored, vocabs)
    by_share = {share: round(f1 * 4 / 100) for share, f1 in tried["upos"].items()}
    assert by_share == {s: 4 if s < 0.65 else 3 for s in SHARES}
    assert chosen == {"upos": 0.6, "xpos": TAGGER_DOUBT}
    assert set(tried["xpos"].values()) == {100.0}


def test_a_lexicon_better_than_its_tagger_is_asked_more_often() -> None:
    """The tagger is wrong on the second "bank" at 0.93; the lexicon (NOUN) is right there and
    wrong on none of the words it is asked about above 0.93 (the first "bank", PROPN at 0.999,
    is never doubted): 0.95 and 0.99 win, and 0.95 is the nearer to the default."""
    lexicon = Lexicon(upos={"bank": "NOUN"})
    scored, vocabs = dev_of(
        lexicon, {"upos": (["PROPN", "VERB", "PROPN", "VERB"], [0.999, 0.999, 0.93, 0.999])}
    )
    chosen, _ = choose_doubt(scored, vocabs)
    assert chosen == {"upos": 0.95}


@pytest.mark.parametrize(
    ("scores", "best"),
    [
        ({0.5: 96.33 + MIN_GAIN - 0.01, 0.9: 96.33, 0.99: 96.2}, 0.9),  # too little to move
        ({0.5: 96.33 + MIN_GAIN, 0.9: 96.33, 0.99: 96.2}, 0.5),
        ({0.5: 96.5, 0.8: 96.5, 0.95: 96.5, 0.9: 96.3}, 0.95),  # equals: nearest the default
        ({0.0: 97.0, 0.9: 96.0}, 0.0),
        ({0.9: 96.0}, 0.9),
    ],
)
def test_a_share_leaves_the_default_only_for_a_gain_of_at_least_the_margin(scores, best) -> None:
    assert best_share(scores) == best


def test_the_columns_read_the_models_own_share() -> None:
    """A tagger 0.7 sure of PROPN where the lexicon says NOUN: at the default share the lexicon
    decides, at a model's own 0.5 the tagger does, and a model's 0.99 asks the lexicon about a
    word the default leaves to a 0.95-sure tagger."""
    scored, vocabs = dev_of(
        Lexicon(upos={"bank": "NOUN"}),
        {"upos": (["PROPN", "VERB", "PROPN", "VERB"], [0.7, 0.99, 0.95, 0.99])},
    )
    [(_, tag_scores)] = scored.batches

    def tags(doubt: dict[str, float]) -> list[str]:
        lexicon = dataclasses.replace(vocabs.lexicon, doubt=doubt)
        chosen = dataclasses.replace(vocabs, lexicon=lexicon)
        [row] = predicted_columns(tag_scores, ["upos"], chosen, scored.sentences, 1)
        return row["upos"]

    assert tags({}) == ["NOUN", "VERB", "PROPN", "VERB"]
    assert tags({"upos": 0.5}) == ["PROPN", "VERB", "PROPN", "VERB"]
    assert tags({"upos": 0.99}) == ["NOUN", "VERB", "NOUN", "VERB"]
    assert tags({"xpos": 0.0}) == tags({})  # another column's share leaves UPOS alone
    assert accuracy(scored, vocabs, "upos") == 50.0  # VERB, VERB: both "bank"s are wrong


KEEP, LOWER, CUT_3 = "F-0+|-0+", "L-0+|-0+", "L-0+|-3+"


@pytest.mark.parametrize(
    ("form", "lemmatizer", "chosen"),
    [
        # Casing aside "Ömür" passes for training's "ömür"; as written it does not, and the
        # runner-up's "ömür" is taken at every share it is tried at (0.3 / 0.7 of the best).
        ("Ömür", {KEEP: 0.7, LOWER: 0.3}, (0.05, True)),
        ("ömür", {KEEP: 0.7, LOWER: 0.3}, (0.05, False)),  # both the same: the default stays
        # "evler" is no training lemma; the runner-up's "ev" is 0.03 as likely: tried at 0.01.
        ("evler", {LOWER: 0.97, CUT_3: 0.03}, (0.01, False)),
    ],
)
def test_the_lemma_checks_leave_the_default_where_another_gains_on_dev(
    form: str, lemmatizer: dict[str, float], chosen: tuple[float, bool]
) -> None:
    gold = "ev" if form == "evler" else "ömür"
    scripts = Vocab([*SPECIALS, KEEP, LOWER, CUT_3])
    rows = [f"1\t{form}\t{gold}\tNOUN\t_\t_\t0\troot\t_\t_"]
    rows += [f"{k}\t{form}\t{gold}\tNOUN\t_\t_\t1\tdep\t_\t_" for k in range(2, 5)]
    [sentence] = read_conllu(io.StringIO("\n".join(rows) + "\n\n"))
    vocabs = Vocabs(
        words=Vocab([*SPECIALS, "w"]),
        chars=Vocab([*SPECIALS, "c"]),
        rels=Vocab(["root", "dep"], specials=False),
        columns={"upos": UPOS, "lemma": scripts},
        lexicon=Lexicon(tagged={("ömrü", "NOUN"): "ömür", ("evi", "NOUN"): "ev"}),
    )
    lemma_scores = np.full((4, len(scripts)), -30.0, dtype=np.float32)
    for script, p in lemmatizer.items():
        lemma_scores[:, scripts.stoi[script]] = np.log(p)
    scored = DevScores(
        [sentence], [([0], {"lemma": lemma_scores})], [["root", "dep", "dep", "dep"]]
    )
    best, tried = choose_lemmas(scored, vocabs)
    assert best == chosen
    assert len(tried) == 2 * len(RUNNER_UP_SHARES)
    assert tried[best] == 100.0


@pytest.fixture(scope="module")
def tagging_checkpoint(tmp_path_factory: pytest.TempPathFactory, vocabs: Vocabs, sentences):
    """A tiny biaffine parser with random taggers, and a lexicon that holds a wrong UPOS for
    every form (the next class of the vocabulary after the form's first training UPOS)."""
    torch.manual_seed(7)
    names = [name for name in vocabs.columns["upos"].itos if name not in SPECIALS]
    wrong = {
        form: names[(names.index(tag) + 1) % len(names)]
        for sentence in sentences
        for form, tag in zip(sentence.forms, sentence.upos, strict=True)
    }
    told = dataclasses.replace(vocabs, lexicon=Lexicon(upos=wrong))
    model = randomized(biaffine_parser(told, **TINY_PARSER, tag_loss_weight=1.0))
    return save_model(tmp_path_factory.mktemp("doubt") / "best.pt", model, told)


def test_what_dev_cannot_choose_is_kept_as_the_model_had_it(tmp_path, tagging_checkpoint) -> None:
    """Without gold lemmas and FEATS on dev, the model's lemma rules and FEATS share were reset
    to the defaults (Sequoia's FEATS share 0.95 lost)."""
    loaded = checkpoint.load(tagging_checkpoint)
    rules = {"doubt": {"feats": 0.95}, "runner_up": 0.5, "exact_case": True}
    own = dataclasses.replace(loaded.vocabs.lexicon, **rules)
    source = tmp_path / "own.pt"
    checkpoint.rewrite(loaded, source, vocabs=dataclasses.replace(loaded.vocabs, lexicon=own))
    dev = tmp_path / "dev.conllu"
    dev.write_text(_blanked({2, 5}), encoding="utf-8")  # LEMMA and FEATS blank
    choices = write_doubt(source, dev, tmp_path / "out.pt")
    after = checkpoint.load(tmp_path / "out.pt").vocabs.lexicon
    assert after.doubt["feats"] == 0.95
    assert "feats" not in choices.tried
    assert (after.runner_up, after.exact_case) == (0.5, True)
    assert (choices.runner_up, choices.exact_case, choices.lemmas) == (0.5, True, {})


def test_the_checkpoint_written_has_the_shares_and_everything_else_as_it_was(
    tmp_path, tagging_checkpoint, sentences
) -> None:
    out = tmp_path / "tuned.pt"
    choices = write_doubt(tagging_checkpoint, TINY_CONLLU, out)
    chosen, tried = choices.doubt, choices.tried
    assert (choices.runner_up, choices.exact_case, choices.lemmas) == (0.05, False, {})  # no LEMMA
    before, after = checkpoint.load(tagging_checkpoint), checkpoint.load(out)
    assert after.vocabs.lexicon.doubt == chosen
    assert set(chosen) == {"upos", "xpos", "feats"} & set(tried)
    assert checkpoint.weights_sha256(after.state_dict) == checkpoint.weights_sha256(
        before.state_dict
    )
    assert after.metadata == before.metadata
    assert after.model_config == before.model_config
    untuned = dataclasses.replace(after.vocabs.lexicon, doubt={})
    assert dataclasses.replace(after.vocabs, lexicon=untuned).to_dict() == before.vocabs.to_dict()
    # A lexicon wrong on every word: the tagger alone is the best, whatever it says.
    assert tried["upos"][chosen["upos"]] == max(tried["upos"].values())
    assert tried["upos"][chosen["upos"]] > tried["upos"][0.99]
    # The model written parses with the share chosen as the choice scored it.
    parsed = Parser.load(out, threads=1).parse(sentences, columns=["upos"], overwrite=True)
    gold = [tag for sentence in sentences for tag in sentence.upos]
    found = [tag for tree in parsed for tag in tree.sentence.upos]
    right = sum(g == f for g, f in zip(gold, found, strict=True))
    assert 100 * right / len(gold) == pytest.approx(tried["upos"][chosen["upos"]], abs=1e-12)


def test_a_transition_checkpoint_is_refused_in_one_line(tmp_path, vocabs: Vocabs) -> None:
    encoder_options, parser_options = split_options(TINY_PARSER)
    model = TransitionParser(vocabs, Encoder(vocabs, **encoder_options), **parser_options)
    path = save_model(tmp_path / "transition.pt", model, vocabs)
    done = subprocess.run(
        [sys.executable, "-m", "biaffine.training.doubt", str(path), str(TINY_CONLLU), "out.pt"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: ")
    assert done.stderr.startswith(f"error: {path}: ")  # the file was not named
    assert "graph parsers" in done.stderr
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize("clash", ["checkpoint", "dev"])
def test_an_output_that_is_an_input_is_refused_and_kept(
    tmp_path, tagging_checkpoint, clash: str
) -> None:
    files = {"checkpoint": tmp_path / "in.pt", "dev": tmp_path / "dev.conllu"}
    files["checkpoint"].write_bytes(tagging_checkpoint.read_bytes())
    files["dev"].write_bytes(TINY_CONLLU.read_bytes())
    before = files[clash].read_bytes()
    with pytest.raises(ValueError, match="is the input file"):
        write_doubt(files["checkpoint"], files["dev"], files[clash])
    assert files[clash].read_bytes() == before


def test_a_special_file_as_output_is_refused_before_dev_is_scored(
    tmp_path, tagging_checkpoint, monkeypatch
) -> None:
    """/dev/stdout was refused by the write, once every share had been tried on dev."""
    fifo = tmp_path / "out.pt"
    os.mkfifo(fifo)

    def scored(*args, **kwargs):
        raise AssertionError("dev was scored")

    monkeypatch.setattr(doubt, "dev_scores", scored)
    with pytest.raises(ValueError, match=r"out\.pt is a named pipe, not a regular file"):
        write_doubt(tagging_checkpoint, TINY_CONLLU, fifo)


def _blanked(columns: set[int]) -> str:
    """tiny.conllu with the cells of ``columns`` (0-based CoNLL-U fields) of every word ``_``."""
    lines = []
    for line in TINY_CONLLU.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) == 10 and cells[0].isdigit():
            cells = ["_" if k in columns else cell for k, cell in enumerate(cells)]
        lines.append("\t".join(cells))
    return "\n".join(lines) + "\n"


def test_a_dev_file_without_gold_tags_is_refused_in_one_line(tmp_path, tagging_checkpoint) -> None:
    # It was read as a dev F1 of 0 at every share, and the default written back as if chosen.
    dev = tmp_path / "dev.conllu"
    dev.write_text(_blanked({3, 4, 5}), encoding="utf-8")  # UPOS, XPOS and FEATS all blank
    done = subprocess.run(
        [sys.executable, "-m", "biaffine.training.doubt", str(tagging_checkpoint), str(dev), "o"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {dev} gives no gold UPOS to choose the shares by\n"
    assert not (tmp_path / "o").exists()


def test_a_column_dev_leaves_blank_is_not_scored_and_keeps_the_default() -> None:
    lexicon = Lexicon(upos={"bank": "NOUN"})
    scored, vocabs = dev_of(
        lexicon,
        {
            "upos": (["PROPN", "VERB", "NOUN", "VERB"], [0.65, 0.99, 0.85, 0.99]),
            "xpos": (["NNP", "VB", "NN", "VB"], [0.6] * 4),
        },
    )
    [sentence] = scored.sentences
    blank = gold_sentence(sentence.forms, sentence.upos, ["_"] * len(sentence))
    chosen, tried = choose_doubt(dataclasses.replace(scored, sentences=[blank]), vocabs)
    assert set(tried) == set(chosen) == {"upos"}
    # A share the model has for the column dev leaves blank is kept, not reset to the default.
    own = dataclasses.replace(vocabs, lexicon=dataclasses.replace(lexicon, doubt={"xpos": 0.95}))
    chosen, tried = choose_doubt(dataclasses.replace(scored, sentences=[blank]), own)
    assert set(tried) == {"upos"}
    assert chosen == {"xpos": 0.95, "upos": chosen["upos"]}
