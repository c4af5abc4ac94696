"""experiments/seq2seq_lemmas.py: symbols, the combining rules and a model that can learn."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).parent.parent / "experiments" / "seq2seq_lemmas.py"
SPEC = importlib.util.spec_from_file_location("seq2seq_lemmas", SCRIPT)
study = importlib.util.module_from_spec(SPEC)
sys.modules[SPEC.name] = study  # its dataclasses look their module up
SPEC.loader.exec_module(study)
Word = study.Word

TRAIN = [
    Word("evlerde", "NOUN", "ev"),
    Word("kitaplar", "NOUN", "kitap"),
    Word("gel", "VERB", "gel"),
]


def conllu(words: list[Word]) -> str:
    lines = [
        f"{i}\t{w.form}\t{w.lemma}\t{w.upos}\t_\t_\t0\troot\t_\t_" for i, w in enumerate(words, 1)
    ]
    return "\n".join(lines) + "\n\n"


def test_symbols_read_back_what_they_encode() -> None:
    symbols = study.Symbols(TRAIN)
    assert symbols.text(symbols.target("kitap")) == "kitap"
    source = symbols.source("evler", "NOUN")
    assert source[0] == symbols.tag_id["NOUN"]
    assert len(source) == 6
    assert symbols.source("x", "ADJ") == [study.UNKNOWN, study.UNKNOWN]  # neither was trained


def test_the_rules_choose_as_named() -> None:
    lemmas = {"ev", "kitap"}
    unless = study.RULES["seq2seq's unless the model's is a training lemma and it is not"]
    assert unless("ev", "evl", lemmas) == "ev"  # the model's is known, seq2seq's is not
    assert unless("ev", "kitap", lemmas) == "kitap"
    assert unless("evle", "evl", lemmas) == "evl"
    known = study.RULES["seq2seq's where it is a training lemma and the model's is not"]
    assert known("evle", "ev", lemmas) == "ev"
    assert known("evle", "evl", lemmas) == "evle"


def test_scores_count_the_rule_on_unseen_words_only(tmp_path: Path) -> None:
    gold = [Word("evlerde", "NOUN", "ev"), Word("evde", "NOUN", "ev"), Word("geldi", "VERB", "gel")]
    system = [
        Word("evlerde", "NOUN", "ev"),
        Word("evde", "NOUN", "evd"),
        Word("geldi", "VERB", "x"),
    ]
    (tmp_path / "gold.conllu").write_text(conllu(gold))
    (tmp_path / "system.conllu").write_text(conllu(system))
    scored = study.Scored.read(
        str(tmp_path / "gold.conllu"), str(tmp_path / "system.conllu"), {"evlerde"}
    )
    assert scored.unseen == [1, 2]
    assert scored.items() == [("evde", "NOUN"), ("geldi", "VERB")]
    model_rule = study.RULES["the model's lemma"]
    assert scored.scores(model_rule, ["ev", "gel"], {"ev"}) == (0.0, 100 / 3)
    every = study.RULES["seq2seq's, every unseen form"]
    assert scored.scores(every, ["ev", "gel"], {"ev"}) == (100.0, 100.0)


def test_other_words_in_the_system_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "gold.conllu").write_text(conllu(TRAIN))
    (tmp_path / "system.conllu").write_text(conllu(TRAIN[:2]))
    with pytest.raises(SystemExit, match=r"system\.conllu: its words are not those of"):
        study.Scored.read(str(tmp_path / "gold.conllu"), str(tmp_path / "system.conllu"), set())


def test_the_model_learns_its_training_words() -> None:
    torch.manual_seed(1)
    symbols = study.Symbols(TRAIN)
    model = study.Seq2Seq(symbols.size, dim=16, hidden=32)
    model.dropout.p = 0.0
    optimizer = torch.optim.Adam(model.parameters(), 1e-2)
    source = study.padded([symbols.source(w.form, w.upos) for w in TRAIN])
    target = study.padded([symbols.target(w.lemma) for w in TRAIN])
    loss_of = torch.nn.CrossEntropyLoss(ignore_index=study.PAD)
    for _ in range(150):
        loss = loss_of(model(source, target).flatten(0, 1), target.flatten())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    items = [(w.form, w.upos) for w in TRAIN]
    assert study.lemmatize(model, symbols, items) == [w.lemma for w in TRAIN]
