"""Taggers trained again on a frozen encoder: the trees stay bit for bit, the taggers' own level
goes, the best dev epoch's taggers are the ones kept, and the command writes a loadable model."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from builders import (
    TINY_PARSER,
    biaffine_parser,
    randomized,
    run_module,
    save_model,
    training_vocabs,
    untrained,
)

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.models.card import _retag_lines
from biaffine.parsers.ensemble import EnsembleParser
from biaffine.training.retag import (
    _dev_accuracy,
    _states,
    retag_member,
    retagged_config,
    write_retagged,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY_CONLLU = Path(__file__).parents[2] / "data" / "tiny.conllu"
WEIGHTS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}
OWN_LEVEL = {**TINY_PARSER, "lstm_layers": 2, "tag_layer": 1, "tag_hidden": 6, **WEIGHTS}
OWN_LEVEL |= {"lemma_loss_weight": 1.0}
COLUMNS = {"upos", "xpos", "feats", "lemma"}
NO_TAGGERS = {f"{column}_loss_weight": 0.0 for column in ("tag", "xpos", "feats", "lemma")}


def own_level_parser(vocabs: Vocabs, seed: int) -> torch.nn.Module:
    """A tiny parser, random weights, whose taggers read a BiLSTM level of their own."""
    torch.manual_seed(seed)
    return randomized(biaffine_parser(vocabs, **OWN_LEVEL)).eval()


def batches(sentences: list[Sentence], vocabs: Vocabs) -> list:
    return list(batches_by_tokens(encode(sentences, vocabs), 5000, shuffle=False))


def test_the_config_drops_the_taggers_level_and_reads_the_top_too(vocabs: Vocabs) -> None:
    config = own_level_parser(vocabs, 0).config()
    retagged = retagged_config(config)
    assert "tag_hidden" not in retagged["encoder"]
    assert retagged["encoder"]["tag_reads_top"] is True
    assert {k: v for k, v in retagged.items() if k != "encoder"} == {
        k: v for k, v in config.items() if k != "encoder"
    }
    assert config["encoder"]["tag_hidden"] == 6  # the input is left as it was
    with pytest.raises(ValueError, match="no BiLSTM level of their own"):
        retagged_config(retagged)


def test_the_tree_is_the_same_and_the_best_dev_epoch_is_kept(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    old = own_level_parser(vocabs, 1)
    data = batches(sentences, vocabs)
    found = retag_member(old, vocabs, data, data, epochs=60, patience=60, seed=3, report=str)
    new = found.model
    assert not any(k.startswith("encoder.tag_lstm.") for k in new.state_dict())
    n_out = old.encoder.n_out
    assert next(new.taggers["upos"].parameters()).shape[1] == 2 * n_out  # level 1 and the top
    with torch.no_grad():
        for batch in data:
            before, after = old(batch), new(batch)
            assert torch.equal(before.arc_scores, after.arc_scores)
            for a, b in zip(before.labels, after.labels, strict=True):
                assert torch.equal(a, b)
            assert set(after.tag_scores) == set(before.tag_scores) == COLUMNS
    scores = [sum(epoch.values()) for epoch in found.dev]
    assert found.epochs == 60
    assert len(found.dev) == 60
    assert scores[found.best_epoch - 1] == max(scores)
    assert found.best_epoch == scores.index(max(scores)) + 1  # the first of the best
    assert _dev_accuracy(new, _states(new, data), data) == found.dev[found.best_epoch - 1]
    # Trained on the dev file itself, the taggers learn it: far above their first epoch.
    for column in COLUMNS:
        assert found.dev[found.best_epoch - 1][column] > found.dev[0][column] + 20
    assert all(not p.requires_grad or p.grad is None for p in new.encoder.parameters())


def test_training_stops_after_patience_epochs_without_a_better_dev(
    vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    data = batches(sentences, vocabs)
    found = retag_member(
        own_level_parser(vocabs, 2), vocabs, data, data, epochs=500, patience=2, seed=1, report=str
    )
    scores = [sum(epoch.values()) for epoch in found.dev]
    assert found.epochs < 500
    assert found.epochs - found.best_epoch == 2
    assert max(scores[found.best_epoch :]) <= scores[found.best_epoch - 1]


def test_an_ensemble_is_retagged_member_by_member_and_parses_the_same_trees(
    tmp_path: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    pair = EnsembleParser([own_level_parser(vocabs, 4), own_level_parser(vocabs, 5)])
    source = save_model(tmp_path / "pair.pt", pair, vocabs)
    out = tmp_path / "retagged.pt"
    lines: list[str] = []
    done = write_retagged(
        source, TINY_CONLLU, TINY_CONLLU, out, epochs=3, patience=3, report=lines.append
    )
    assert len(done) == 2
    assert lines[0] == "member 1 of 2"
    assert "member 2 of 2" in lines
    loaded = checkpoint.load(out)
    assert loaded.parser == "ensemble"
    for member in loaded.model_config["members"]:
        assert "tag_hidden" not in member["config"]["encoder"]
    assert [m["epochs"] for m in loaded.metadata["retagged"]["members"]] == [3, 3]
    before = Parser.load(source, threads=1).parse(sentences)
    after = Parser.load(out, threads=1).parse(sentences)
    assert [t.heads for t in after] == [t.heads for t in before]
    assert [t.deprels for t in after] == [t.deprels for t in before]
    tagged = Parser.load(out, threads=1).parse(sentences, columns=["upos"], overwrite=True)
    assert all(len(t.sentence.upos) == len(s) for t, s in zip(tagged, sentences, strict=True))


def test_the_command_refuses_a_parser_without_the_taggers_level(
    tmp_path: Path, vocabs: Vocabs
) -> None:
    torch.manual_seed(0)
    plain = biaffine_parser(vocabs, **TINY_PARSER, tag_loss_weight=1.0)
    source = save_model(tmp_path / "plain.pt", plain, vocabs)
    done = run_module(
        "biaffine.training.retag", source, TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt"
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {source}: the taggers have no BiLSTM level of their own (encoder tag_hidden)"
    ]
    assert not (tmp_path / "out.pt").exists()
    refused = run_module("biaffine.training.retag", source, TINY_CONLLU, TINY_CONLLU, source)
    assert refused.returncode == 2
    assert "error:" in refused.stderr


def test_the_record_written_is_the_line_a_model_card_shows(tmp_path: Path, vocabs: Vocabs) -> None:
    """The checkpoint's ``retagged`` is what ``models.build`` puts in a card as
    ``training.parser.retag``; ``docs/models.md`` renders it under the parser's lines."""
    source = save_model(tmp_path / "one.pt", own_level_parser(vocabs, 6), vocabs)
    out = tmp_path / "retagged.pt"
    write_retagged(source, TINY_CONLLU, TINY_CONLLU, out, epochs=2, patience=1, report=str)
    record = checkpoint.load(out).metadata["retagged"]
    [member] = record["members"]
    assert member["epochs"] == 2
    assert set(member["dev"]) == COLUMNS
    assert record["command"] == (
        "python -m biaffine.training.retag parser.pt TRAIN DEV OUT --epochs 2 --patience 1 --seed 1"
    )
    assert _retag_lines({"retag": record}) == [
        "  - then its taggers trained again on the frozen network, reading the states the tree "
        f"computes: `{record['command']}` ({record['minutes']} min, best epoch "
        f"{member['best_epoch']} of 2)."
    ]
    assert _retag_lines({}) == []


def test_a_transition_parser_is_refused(tmp_path: Path, sentences: list[Sentence]) -> None:
    _, vocabs = training_vocabs(sentences, "arc_hybrid")
    source = save_model(tmp_path / "arc_hybrid.pt", untrained(vocabs, "arc_hybrid"), vocabs)
    with pytest.raises(ValueError, match="graph parsers and their ensembles only"):
        write_retagged(source, TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt", report=str)
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"epochs": 0}, "--epochs 0 must be a whole number >= 1"),
        ({"patience": 0}, "--patience 0 must be a whole number >= 1"),
        ({"threads": 0}, "threads"),
        # torch's "Overflow when unpacking long (long)", naming no option:
        ({"threads": 99999999999999}, "--threads=99999999999999: give at most 4096"),
        ({"seed": 10**23}, f"--seed {10**23}: give a seed in 0..2"),
        ({"seed": -1}, "--seed -1: give a seed in 0..2"),
    ],
)
def test_counts_below_one_are_refused_before_anything_is_read(
    tmp_path: Path, option: dict, message: str
) -> None:
    """An epoch count of 0 left no epoch to keep (a NameError after the data was read)."""
    with pytest.raises(ValueError, match=message):
        write_retagged(
            tmp_path / "none.pt", TINY_CONLLU, TINY_CONLLU, tmp_path / "out.pt", **option
        )


def blanked(folder: Path, column: int) -> Path:
    """tiny.conllu with the cells of CoNLL-U field ``column`` (0-based) of every word ``_``."""
    lines = []
    for line in TINY_CONLLU.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) == 10 and cells[0].isdigit():
            cells[column] = "_"
        lines.append("\t".join(cells))
    path = folder / f"no_{column}.conllu"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_refusals_come_before_any_training(
    tmp_path: Path, vocabs: Vocabs, sentences: list[Sentence]
) -> None:
    """Each was found after minutes of training, or not at all (a lemma tagger with no gold
    lemma to learn from was written with its random weights, status 0)."""
    one = save_model(tmp_path / "one.pt", own_level_parser(vocabs, 7), vocabs)
    retagged = tmp_path / "retagged.pt"
    write_retagged(one, TINY_CONLLU, TINY_CONLLU, retagged, epochs=1, report=str)
    mixed = save_model(
        tmp_path / "mixed.pt",
        EnsembleParser([own_level_parser(vocabs, 7), Parser.load(retagged).model]),
        vocabs,
    )
    torch.manual_seed(0)
    untagged = save_model(
        tmp_path / "untagged.pt", biaffine_parser(vocabs, **OWN_LEVEL | NO_TAGGERS), vocabs
    )
    no_lemmas = blanked(tmp_path, 2)
    cases = [
        (one, no_lemmas, TINY_CONLLU, tmp_path / "a.pt", f"{no_lemmas}: no gold LEMMA"),
        (one, TINY_CONLLU, no_lemmas, tmp_path / "a.pt", f"{no_lemmas}: no gold LEMMA"),
        (one, TINY_CONLLU, TINY_CONLLU, tmp_path / "none" / "a.pt", "does not exist"),
        (one, TINY_CONLLU, TINY_CONLLU, tmp_path, "folder|directory"),
        (one, TINY_CONLLU, TINY_CONLLU, Path(os.devnull), "character device, not a regular"),
        (mixed, TINY_CONLLU, TINY_CONLLU, tmp_path / "a.pt", "member 2: the taggers have no"),
        (untagged, TINY_CONLLU, TINY_CONLLU, tmp_path / "a.pt", "has no taggers to train again"),
    ]
    for source, train, dev, out, message in cases:
        lines: list[str] = []
        with pytest.raises((ValueError, OSError), match=message):
            write_retagged(source, train, dev, out, epochs=1, report=lines.append)
        assert lines == []  # nothing trained
        assert not (tmp_path / "a.pt").exists()


def test_the_record_names_the_threads_and_storage_it_ran_with(
    tmp_path: Path, vocabs: Vocabs
) -> None:
    source = save_model(tmp_path / "one.pt", own_level_parser(vocabs, 8), vocabs)
    out = tmp_path / "out.pt"
    write_retagged(
        source, TINY_CONLLU, TINY_CONLLU, out, epochs=1, threads=1, stored_as="int8", report=str
    )
    assert (
        checkpoint.load(out)
        .metadata["retagged"]["command"]
        .endswith("--epochs 1 --patience 10 --seed 1 --threads 1 --stored-as int8")
    )
