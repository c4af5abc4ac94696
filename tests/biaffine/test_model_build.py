"""Packaging a shipped model: the card's training facts (the scoring itself is test_cards')."""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
from pathlib import Path

import pytest
from builders import TINY_PARSER, biaffine_parser, save_model, sized_vocabs
from segmenting.segmenter_builders import random_model, small_vocab

from biaffine import checkpoint as parser_checkpoints
from biaffine.data.lexicon import Lexicon
from biaffine.installed import CARD
from biaffine.models.build import (
    _SENTENCE_WEIGHTS,
    _WEIGHTS,
    PARSER,
    SEGMENTER,
    _check_same_parser,
    _check_same_segmenter,
    _kept_card,
    _lexicon_models,
    _limits,
    _training,
    _weights,
    main,
    size_bytes,
)
from biaffine.models.card import _branch_lines, _lexicon_model_lines, _member_lines, _run_line
from biaffine.segmenting import checkpoint
from biaffine.segmenting.sentences import SentenceModel
from biaffine.training.average import average_checkpoints
from biaffine.training.ensemble import ensemble_checkpoints

SEGMENTER_FACTS = {"recipe": "python train_segmenter.py x=1", "command": "python ...", "epochs": 3}


def run_folder(run: Path, overrides: list[str], log: str, minutes: int) -> Path:
    """A run folder as Hydra leaves it: its overrides, and a log ``minutes`` long."""
    (run / ".hydra").mkdir(parents=True)
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    stamps = [f"[2026-11-29 10:{m:02d}:00,000][x][INFO] - log\n" for m in (0, minutes)]
    (run / log).write_text("".join(stamps))
    return run


def parser_run(root: Path) -> Path:
    """A parser run folder as Hydra leaves it: overrides, a log, the best checkpoint."""
    run = run_folder(root / "run", ["experiment=en_ewt", "hydra.run.dir=x"], "train.log", 30)
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    return save_model(run / "best.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs)


def arguments(parser: Path, **options: object) -> argparse.Namespace:
    defaults = {"name": "en_ewt", "segmenter": None, "keep_segmenter": False, "keep_parser": False}
    defaults |= {"member_recipe": [], "member_command": [], "command": None}
    defaults |= {"sentences": None, "lemma_generator": None}
    defaults |= {"note": None, "limit": []}
    return argparse.Namespace(parser=str(parser), machine="a CPU", **defaults | options)


def test_a_kept_segmenter_keeps_the_facts_of_the_card_it_had(tmp_path: Path) -> None:
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    args = arguments(parser_run(tmp_path), keep_segmenter=True)
    training = _training(args, folder, _kept_card(args, folder))
    assert training["segmenter"] == SEGMENTER_FACTS
    assert training["parser"]["recipe"] == "python train.py experiment=en_ewt"
    assert training["parser"]["command"] == "python train.py experiment=en_ewt"
    assert training["parser"]["minutes"] == 30.0


def test_a_kept_part_keeps_the_cards_limits_and_note_unless_given(tmp_path: Path) -> None:
    # A segmenter retrained beside the kept parser dropped both from the card.
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    card = {"training": {"segmenter": SEGMENTER_FACTS, "note": "two seeds"}, "limits": ["3000"]}
    (folder / CARD).write_text(json.dumps(card))
    args = arguments(parser_run(tmp_path), keep_segmenter=True)
    kept = _kept_card(args, folder)
    assert _training(args, folder, kept)["note"] == "two seeds"
    assert _limits(args, kept) == ["3000"]
    args = arguments(parser_run(tmp_path / "b"), keep_segmenter=True, note="new", limit=["9"])
    assert _training(args, folder, kept)["note"] == "new"
    assert _limits(args, kept) == ["9"]
    assert _limits(arguments(None), None) == []  # a whole build: those given alone


def test_a_retagged_parser_brings_its_record_to_the_card(tmp_path: Path) -> None:
    """``python -m biaffine.training.retag``'s record in the checkpoint becomes the card's
    ``training.parser.retag`` (which docs/models.md renders under the parser's lines)."""
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    best = parser_run(tmp_path)
    record = {"command": "python -m biaffine.training.retag ...", "minutes": 1.5, "members": []}
    loaded = parser_checkpoints.load(best)
    parser_checkpoints.rewrite(loaded, best, vocabs=loaded.vocabs, metadata={"retagged": record})
    args = arguments(best, keep_segmenter=True)
    training = _training(args, folder, _kept_card(args, folder))
    assert training["parser"]["retag"] == record
    assert training["parser"]["recipe"] == "python train.py experiment=en_ewt"
    plain = arguments(parser_run(tmp_path / "b"), keep_segmenter=True)
    assert "retag" not in _training(plain, folder, _kept_card(plain, folder))["parser"]


RESUMED_LOG = """\
[2026-12-05 18:42:44,514][biaffine.training.compose][INFO] - train: 12 sentences, 204 words
[2026-12-05 18:45:26,071][biaffine.training.loop][INFO] - epoch 1: loss 11.8473
[2026-12-05 19:42:58,381][biaffine.training.loop][INFO] - stopped (max_minutes) after epoch 22
[2026-12-05 19:43:05,512][biaffine.training.compose][INFO] - test (best model, epoch 21)
[2026-12-05 20:30:55,050][biaffine.training.compose][INFO] - train: 12 sentences, 204 words
[2026-12-05 20:30:59,365][biaffine.training.compose][INFO] - resumed after epoch 22 (step 3067)
[2026-12-05 20:33:40,833][biaffine.training.loop][INFO] - epoch 23: loss 0.5505
[2026-12-05 21:31:02,000][biaffine.training.loop][INFO] - stopped (max_minutes) after epoch 44
"""
RESUMED_COMMAND = "python train.py experiment=en_ewt trainer.max_minutes=120"


def resumed_run(root: Path) -> Path:
    """A parser run of two legs, the second with trainer.resume=true, 47 minutes apart."""
    best = parser_run(root)
    overrides = "- experiment=en_ewt\n- trainer.resume=true\n- trainer.max_minutes=60\n"
    (best.parent / ".hydra" / "overrides.yaml").write_text(overrides)
    (best.parent / "train.log").write_text(RESUMED_LOG)
    return best


def test_a_resumed_run_is_recorded_with_the_command_its_legs_amount_to(tmp_path: Path) -> None:
    folder = tmp_path / "en_ewt"
    args = arguments(resumed_run(tmp_path), keep_segmenter=True, command=RESUMED_COMMAND)
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    parser = _training(args, folder, _kept_card(args, folder))["parser"]
    assert (parser["command"], parser["resumes"]) == (RESUMED_COMMAND, 1)
    assert parser["minutes"] == 120.5  # 18:42:44-19:43:05 and 20:30:55-21:31:02, not the gap
    assert _run_line("parser", parser | {"epochs": 43}) == (
        "- Parser: `python train.py experiment=en_ewt` (120.5 min, 43 epochs); as run: "
        f"`{RESUMED_COMMAND}`, in 2 legs (trainer.resume=true)."
    )


def test_a_new_parser_beside_a_kept_segmenter_keeps_its_sentence_model_in_the_weights() -> None:
    # en_ewt_minilm's card lost "its sentence model" when its parser alone was retrained.
    kept = {"weights": _WEIGHTS["int8"] + _SENTENCE_WEIGHTS + "; the lexicon's lemma generator"}
    args = arguments("parser.pt", keep_segmenter=True, stored_as="float16")
    assert _weights(args, kept, models=[]) == _WEIGHTS["float16"] + _SENTENCE_WEIGHTS
    args.keep_segmenter, args.segmenter = False, "segmenter.pt"  # a new one: no sentence model
    assert _weights(args, kept, models=[]) == _WEIGHTS["float16"]


@pytest.mark.parametrize(
    ("resumed", "command", "problem"),
    [
        (True, None, "was resumed 1 time(s) and its overrides are its last start's: give "),
        (False, RESUMED_COMMAND, "--command: {} was never resumed; its overrides are its command"),
    ],
)
def test_a_resumed_run_needs_its_command_and_a_run_not_resumed_refuses_one(
    tmp_path: Path, resumed: bool, command: str | None, problem: str
) -> None:
    best = resumed_run(tmp_path) if resumed else parser_run(tmp_path)
    args = arguments(best, keep_segmenter=True, command=command)
    with pytest.raises(ValueError, match=re.escape(problem.format(best.parent))):
        _training(args, tmp_path, {"training": {"segmenter": SEGMENTER_FACTS}})


def test_keeping_a_segmenter_where_there_is_none_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = parser_run(tmp_path)
    (tmp_path / "UD_English-EWT").mkdir()
    (tmp_path / "UD_English-EWT" / "en_ewt-ud-test.conllu").write_text("")
    argv = ["en_ewt", "--parser", str(parser), "--keep-segmenter", "--treebank", "UD_English-EWT"]
    argv += ["--root", str(tmp_path), "--out", str(tmp_path / "models")]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: --keep-segmenter: ")
    assert error.endswith("holds no segmenter and card to keep")
    assert not (tmp_path / "models").exists()  # nothing written


def hydra_run(run: Path, overrides: list[str], minutes: int, epochs: list[int]) -> Path:
    """A parser run folder: overrides, a log ``minutes`` long, one epoch event per best epoch."""
    run_folder(run, overrides, "train.log", minutes)
    events = [{"event": "epoch", "epoch": i, "best_epoch": b} for i, b in enumerate(epochs, 1)]
    events.append({"event": "test", "epoch": epochs[-1]})
    (run / "metrics.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run


BRANCH_COMMAND = "python train.py experiment=en_ewt trainer.init_from=TRUNK/last.pt"


def averaged_branches(tmp_path: Path, trunks: tuple[str, str]) -> Path:
    """Two branch runs started from ``tmp_path / trunk / last.pt`` each, and their average."""
    hydra_run(tmp_path / "trunk", ["experiment=en_ewt", "trainer.threads=2"], 45, [1, 2, 3])
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    bests = []
    for seed, (trunk, minutes) in enumerate(zip(trunks, (52, 50), strict=True), 2):
        start = f"trainer.init_from={tmp_path / trunk / 'last.pt'}"
        run = hydra_run(
            tmp_path / f"b{seed}",
            ["experiment=en_ewt", start, f"trainer.seed={seed}"],
            minutes,
            [1, 2, 2],
        )
        bests.append(save_model(run / "best.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs))
    return average_checkpoints(bests, tmp_path / "averaged.pt").path


def test_an_averaged_parser_names_its_trunk_its_branches_and_the_averaging(tmp_path: Path) -> None:
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    averaged = averaged_branches(tmp_path, ("trunk", "trunk"))
    args = arguments(averaged, keep_segmenter=True)
    parser = _training(args, folder, _kept_card(args, folder))["parser"]
    assert parser["recipe"] == "python train.py experiment=en_ewt"
    assert parser["command"] == "python train.py experiment=en_ewt trainer.threads=2"
    assert (parser["minutes"], parser["epochs"]) == (45 + 52, 3)  # side by side: the longest
    assert parser["branches"] == [
        {
            "command": f"{BRANCH_COMMAND} trainer.seed={seed}",
            "minutes": minutes,
            "epochs": 2,
        }
        for seed, minutes in ((2, 52.0), (3, 50.0))
    ]
    assert parser["average"] == (
        "python -m biaffine.training.average averaged.pt BRANCH_1/best.pt BRANCH_2/best.pt"
    )
    lines = _branch_lines(parser)
    assert len(lines) == 3
    assert lines[-1].endswith("(97.0 min in all).")


def test_branches_of_different_runs_are_refused(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    averaged = averaged_branches(tmp_path, ("trunk", "other"))
    with pytest.raises(ValueError, match=r"not branches of one run \(trainer.init_from\)"):
        _training(arguments(averaged, keep_segmenter=False, segmenter="s.pt"), tmp_path)


PARSER_FACTS = {"recipe": "python train.py experiment=en_ewt", "command": "python ...", "epochs": 9}


def test_a_kept_parser_keeps_the_facts_of_the_card_it_had(tmp_path: Path) -> None:
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / PARSER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"parser": PARSER_FACTS}}))
    overrides = ["data=ud_english_ewt", "model.rnn_hidden=96"]
    segmenter_run = hydra_run(tmp_path / "seg", overrides, 16, [1, 2, 2])
    last = {"epoch": 3, "best_epoch": 2}  # a segmenter run's last line
    (segmenter_run / "metrics.jsonl").write_text(json.dumps(last) + "\n")
    args = arguments(None, keep_parser=True, segmenter=str(segmenter_run / "best.pt"))
    training = _training(args, folder, _kept_card(args, folder))
    assert training["parser"] == PARSER_FACTS
    command = "python train_segmenter.py data=ud_english_ewt model.rnn_hidden=96"
    assert training["segmenter"] == {
        "recipe": command,
        "command": command,
        "minutes": 16.0,
        "epochs": 2,
    }


@pytest.mark.parametrize(
    ("keeps", "problem"),
    [
        (
            ["--keep-parser", "--segmenter", "s.pt"],
            "--keep-parser: {} holds no parser and card to keep",
        ),
        (
            ["--keep-parser", "--keep-segmenter"],
            "--keep-parser with --keep-segmenter packages nothing new",
        ),
        (
            ["--keep-parser", "--segmenter", "s.pt", "--sentences", "r.pt"],
            "--sentences adds a sentence model to the model's segmenter: give --keep-segmenter",
        ),
        (
            ["--parser", "p.pt", "--keep-segmenter", "--lemma-generator", "g.pt"],
            "--lemma-generator adds to the model's parser: give --keep-parser",
        ),
    ],
)
def test_keeping_what_is_not_there_or_everything_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], keeps: list[str], problem: str
) -> None:
    (tmp_path / "UD_English-EWT").mkdir()
    (tmp_path / "UD_English-EWT" / "en_ewt-ud-test.conllu").write_text("")
    argv = ["en_ewt", *keeps, "--treebank", "UD_English-EWT"]
    argv += ["--root", str(tmp_path), "--out", str(tmp_path / "models")]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {problem.format(tmp_path / 'models' / 'en_ewt')}"
    )
    assert not (tmp_path / "models").exists()


def test_an_ensemble_names_each_members_run_and_the_joining(tmp_path: Path) -> None:
    """One member from a run folder, one a shipped model's parser whose run folder is gone."""
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    shipped = tmp_path / "models" / "en_ewt_glove"
    shipped.mkdir(parents=True)
    glove = {"recipe": "python train.py experiment=en_ewt_glove", "command": "python train.py x=1"}
    glove |= {"minutes": 100.2, "epochs": 62}
    (shipped / CARD).write_text(json.dumps({"training": {"parser": glove | {"extra": 1}}}))
    first = save_model(shipped / PARSER, biaffine_parser(vocabs, **TINY_PARSER), vocabs)
    run = hydra_run(
        tmp_path / "tl1", ["experiment=en_ewt_glove", "trainer.progress_bar=false"], 59, [1, 1]
    )
    second = save_model(run / "best.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs)
    joined = ensemble_checkpoints([first, second], tmp_path / "ens.pt").path
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    args = arguments(joined, keep_segmenter=True, stored_as="int8")
    parser = _training(args, folder, _kept_card(args, folder))["parser"]
    joining = "python -m biaffine.training.ensemble parser.pt MEMBER_1/best.pt MEMBER_2/best.pt"
    assert parser["recipe"] == parser["command"] == f"{joining} --stored-as int8"
    assert parser["minutes"] == 100.2  # side by side: the longer member
    assert parser["members"] == [
        glove,
        {
            "recipe": "python train.py experiment=en_ewt",
            "command": "python train.py experiment=en_ewt_glove",  # no progress bar setting
            "minutes": 59.0,
            "epochs": None,  # the tiny member's metadata has no progress
        },
    ]
    lines = _member_lines(parser)
    assert lines[0] == (
        "  - `python train.py experiment=en_ewt_glove` (100.2 min, best epoch 62); "
        "as run: `python train.py x=1`;"
    )
    assert lines[-1] == f"  - joined: `{joining} --stored-as int8`."


def two_runs_joined(tmp_path: Path) -> Path:
    """An ensemble of two parsers, each from a Hydra run folder with its own overrides."""
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    paths = []
    for name, overrides in (("a", ["experiment=hu_szeged"]), ("b", ["trainer.patience=60"])):
        run = hydra_run(tmp_path / name, overrides, 40, [1, 1])
        paths.append(save_model(run / "best.pt", biaffine_parser(vocabs, **TINY_PARSER), vocabs))
    return ensemble_checkpoints(paths, tmp_path / "ens.pt").path


def test_each_member_of_an_ensemble_can_have_its_own_recipe(tmp_path: Path) -> None:
    own = "python train.py experiment=hu_szeged trainer.patience=60"
    kept = {"training": {"segmenter": SEGMENTER_FACTS}}
    args = arguments(two_runs_joined(tmp_path), keep_segmenter=True, stored_as="int8")
    args.name = "hu_szeged"
    default = _training(args, tmp_path, kept)["parser"]["members"]
    assert [m["recipe"] for m in default] == ["python train.py experiment=hu_szeged"] * 2
    args.member_recipe = ["python train.py experiment=hu_szeged", own]
    members = _training(args, tmp_path, kept)["parser"]["members"]
    assert [m["recipe"] for m in members] == args.member_recipe
    assert [m["command"] for m in members] == [
        "python train.py experiment=hu_szeged",
        "python train.py trainer.patience=60",
    ]
    args.member_recipe = [own]
    with pytest.raises(ValueError, match=r"^1 recipes for an ensemble of 2 parsers$"):
        _training(args, tmp_path, kept)


def test_a_member_from_a_resumed_run_takes_the_command_its_legs_amount_to(tmp_path: Path) -> None:
    # A member's card gave its last leg's overrides (trainer.resume=true) as the command it ran.
    args = arguments(two_runs_joined(tmp_path), keep_segmenter=True, stored_as="int8")
    (tmp_path / "b" / "train.log").write_text(RESUMED_LOG)
    kept = {"training": {"segmenter": SEGMENTER_FACTS}}
    problem = f"{tmp_path / 'b'} was resumed 1 time(s) and its overrides are its last start's: "
    with pytest.raises(ValueError, match=re.escape(problem + "give --member-command, the single")):
        _training(args, tmp_path, kept)
    args.member_command = ["", RESUMED_COMMAND]
    members = _training(args, tmp_path, kept)["parser"]["members"]
    assert [m["command"] for m in members] == [
        "python train.py experiment=hu_szeged",
        RESUMED_COMMAND,
    ]
    assert (members[1]["resumes"], members[1]["minutes"]) == (1, 120.5)
    assert _member_lines({"members": members, "command": "join"})[1] == (
        "  - `python train.py experiment=en_ewt` (120.5 min, best epoch None); as run: "
        f"`{RESUMED_COMMAND}`, in 2 legs (trainer.resume=true);"
    )
    args.member_command = [RESUMED_COMMAND, RESUMED_COMMAND]
    never = f"--member-command: {tmp_path / 'a'} was never resumed; its overrides are its command"
    with pytest.raises(ValueError, match=f"^{re.escape(never)}$"):
        _training(args, tmp_path, kept)
    args.member_command = [RESUMED_COMMAND]
    with pytest.raises(ValueError, match=r"^1 commands for an ensemble of 2 parsers$"):
        _training(args, tmp_path, kept)


def test_member_recipes_for_a_parser_that_is_no_ensemble_are_refused(tmp_path: Path) -> None:
    parser = parser_run(tmp_path)
    kept = {"training": {"segmenter": SEGMENTER_FACTS, "parser": {"recipe": "python ..."}}}
    args = arguments(parser, keep_segmenter=True, member_recipe=["python train.py x=1"])
    with pytest.raises(ValueError, match=r"^--member-recipe: .*best\.pt is no ensemble$"):
        _training(args, tmp_path, kept)
    args = arguments(parser, keep_parser=True, keep_segmenter=True, member_recipe=["python x=1"])
    with pytest.raises(ValueError, match=r"^--member-recipe: --keep-parser keeps its recipes$"):
        _training(args, tmp_path, kept)
    args.member_recipe = []
    assert _training(args, tmp_path, kept)["parser"] == {"recipe": "python ..."}
    args = arguments(parser, keep_segmenter=True, member_command=[RESUMED_COMMAND])
    with pytest.raises(ValueError, match=r"^--member-command: .*best\.pt is no ensemble$"):
        _training(args, tmp_path, kept)


def test_an_ensemble_member_without_facts_is_refused(tmp_path: Path) -> None:
    vocabs = sized_vocabs(words=5, chars=5, upos=4, rels=3)
    paths = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        model = biaffine_parser(vocabs, **TINY_PARSER)
        paths.append(save_model(tmp_path / name / "best.pt", model, vocabs))
    joined = ensemble_checkpoints(paths, tmp_path / "ens.pt").path
    args = arguments(joined, keep_segmenter=False, segmenter="s.pt", stored_as="int8")
    with pytest.raises(ValueError, match="neither in a training run folder nor a shipped model"):
        _training(args, tmp_path)


def saved_segmenter(path: Path, seed: int, sentences: object = None) -> Path:
    """A tiny segmenter checkpoint (random weights from ``seed``), with ``sentences`` if given."""
    vocab = small_vocab()
    network = random_model(vocab, rnn_hidden=6, seed=seed)
    checkpoint.save(path, network, vocab, treebank="UD_X", sentences=sentences)
    return path


def test_a_sentence_model_on_the_kept_segmenter_adds_its_runs_facts(
    tmp_path: Path, tiny_bert: Path
) -> None:
    folder = tmp_path / "en_ewt"
    folder.mkdir()
    saved_segmenter(folder / SEGMENTER, seed=0)
    (folder / CARD).write_text(json.dumps({"training": {"segmenter": SEGMENTER_FACTS}}))
    run = hydra_run(tmp_path / "sentences", ["segmenter=seg.pt", "trainer.threads=2"], 17, [1])
    (run / "metrics.jsonl").write_text(json.dumps({"best_epoch": 11, "stop": "max_epochs"}) + "\n")
    model = SentenceModel({"model": str(tiny_bert)}, hidden=4)
    saved_segmenter(run / "best.pt", seed=0, sentences=model)
    args = arguments(parser_run(tmp_path), keep_segmenter=True, sentences=str(run / "best.pt"))
    training = _training(args, folder, _kept_card(args, folder))
    command = "python train_sentences.py segmenter=seg.pt trainer.threads=2"
    sentences = {"recipe": command, "command": command, "minutes": 17.0, "epochs": 11}
    assert training["segmenter"] == SEGMENTER_FACTS | {"sentences": sentences}
    _check_same_segmenter(folder / SEGMENTER, str(run / "best.pt"))
    other = saved_segmenter(tmp_path / "other.pt", seed=1, sentences=model)
    with pytest.raises(ValueError, match="trained on another segmenter than"):
        _check_same_segmenter(folder / SEGMENTER, str(other))
    with pytest.raises(ValueError, match="holds no sentence model"):
        _check_same_segmenter(folder / SEGMENTER, str(folder / SEGMENTER))


def with_generator(
    source: Path, dest: Path, facts: dict, guesser: dict | None = None, upos: dict | None = None
) -> Path:
    """``source`` with a random lemma generator in its lexicon and a generator run's facts,
    with a random FEATS guesser and its run's facts where ``guesser`` gives them, and with a
    random UPOS guesser and its run's facts where ``upos`` gives them."""
    from data.test_feats_guesser import random_guesser
    from data.test_lemma_generator import random_generator
    from data.test_upos_guesser import random_upos_guesser

    loaded = parser_checkpoints.load(source)
    lexicon = Lexicon(  # the tiny parser has none
        generator=random_generator(),
        feats_guesser=random_guesser() if guesser else None,
        upos_guesser=random_upos_guesser() if upos else None,
    )
    vocabs = dataclasses.replace(loaded.vocabs, lexicon=lexicon)
    metadata = {"lemma_generator": facts} | ({"feats_guesser": guesser} if guesser else {})
    metadata |= {"upos_guesser": upos} if upos else {}
    parser_checkpoints.rewrite(loaded, dest, vocabs=vocabs, metadata=metadata, stored_as="int8")
    return dest


def test_a_lemma_generator_on_the_kept_parser_adds_its_runs_facts(tmp_path: Path) -> None:
    folder = tmp_path / "tr_imst"
    folder.mkdir()
    shipped = folder / PARSER
    parser_checkpoints.compact(parser_run(tmp_path), shipped, stored_as="int8")
    weights = "parser matrices stored as int8, segmenter float32"
    card = {"training": {"parser": PARSER_FACTS, "segmenter": SEGMENTER_FACTS}, "weights": weights}
    (folder / SEGMENTER).write_bytes(b"weights")
    (folder / CARD).write_text(json.dumps(card))
    treebank = tmp_path / "UD_Turkish-IMST"
    treebank.mkdir()
    (treebank / "tr_imst-ud-test.conllu").write_text("")
    options = {"minutes": 18.0, "seed": 1, "max_epochs": None, "hidden": 64, "stored_as": "int8"}
    facts = {"epochs": 20, "best_epoch": 17, "dev_right": 84.1, "held_out": 3347, "minutes": 18.2}
    generated = with_generator(shipped, tmp_path / "generated.pt", {"options": options, **facts})
    args = arguments(
        None,
        name="tr_imst",
        keep_parser=True,
        keep_segmenter=True,
        lemma_generator=str(generated),
        treebank="UD_Turkish-IMST",
        root=str(tmp_path),
    )
    training = _training(args, folder, _kept_card(args, folder))
    files = " ".join(
        f"$UD_ROOT/UD_Turkish-IMST/tr_imst-ud-{part}.conllu" for part in ("train", "dev")
    )
    # Each reads what the one before wrote: "parser.pt ... parser.pt" was refused by the
    # command (its output is its input).
    recipe = f"python -m biaffine.training.lemma_generator parser.pt {files} lemma_generator.pt"
    recipe += " --minutes 18.0 --seed 1 --hidden 64 --stored-as int8"
    assert training["parser"] == PARSER_FACTS | {"lemma_generator": {"recipe": recipe, **facts}}
    assert training["segmenter"] == SEGMENTER_FACTS
    assert _weights(args, card, models=["lemma generator"]) == (
        f"{weights}; the lexicon's lemma generator float16 (computed in float32)"
    )
    # A FEATS guesser trained on top: its recipe too, and both models in the weights.
    guesser_options = {"minutes": 12.0, "seed": 1, "max_epochs": None, "stored_as": "int8"}
    guesser_facts = {"epochs": 90, "best_epoch": 80, "dev_right": 74.2, "held_out": 3347}
    both = with_generator(
        shipped, tmp_path / "both.pt", {"options": options, **facts},
        {"options": guesser_options, **guesser_facts},
    )  # fmt: skip
    args.lemma_generator = str(both)
    parser = _training(args, folder, _kept_card(args, folder))["parser"]
    assert parser["lemma_generator"] == {"recipe": recipe, **facts}
    guessing = f"python -m biaffine.training.feats_guesser lemma_generator.pt {files}"
    guessing += " feats_guesser.pt"
    guessing += " --minutes 12.0 --seed 1 --stored-as int8"
    assert parser["feats_guesser"] == {"recipe": guessing, **guesser_facts}
    models = _lexicon_models(both)
    assert models == ["lemma generator", "FEATS guesser"]
    assert _weights(args, {"weights": _weights(args, card, models=models)}, models=models) == (
        f"{weights}; the lexicon's lemma generator and FEATS guesser float16 (computed in float32)"
    )
    # And a UPOS guesser on top of both, with the weights it tried.
    upos_facts = guesser_facts | {"dev_upos": [[0.0, 91.5], [0.5, 92.1]]}
    three = with_generator(
        shipped, tmp_path / "three.pt", {"options": options, **facts},
        {"options": guesser_options, **guesser_facts}, {"options": guesser_options, **upos_facts},
    )  # fmt: skip
    args.lemma_generator = str(three)
    parser = _training(args, folder, _kept_card(args, folder))["parser"]
    assert parser["feats_guesser"] == {"recipe": guessing, **guesser_facts}
    weighing = f"python -m biaffine.training.upos_guesser feats_guesser.pt {files}"
    weighing += " upos_guesser.pt --minutes 12.0 --seed 1 --stored-as int8"
    assert parser["upos_guesser"] == {"recipe": weighing, **upos_facts}
    models = _lexicon_models(three)
    assert models == ["lemma generator", "FEATS guesser", "UPOS guesser"]
    assert _weights(args, {"weights": _weights(args, card, models=models)}, models=models) == (
        f"{weights}; the lexicon's lemma generator, FEATS guesser and UPOS guesser float16 "
        "(computed in float32)"
    )
    _check_same_parser(shipped, str(generated))
    with pytest.raises(ValueError, match="holds no lemma generator"):
        _check_same_parser(shipped, str(shipped))
    other = tmp_path / "other"
    other.mkdir()
    retrained = parser_checkpoints.load(parser_run(other))
    changed = {k: v + 1 for k, v in retrained.state_dict.items()}
    parser_checkpoints.save(other / "changed.pt", **{
        "parser": retrained.parser, "model_config": retrained.model_config,
        "vocabs": retrained.vocabs, "state_dict": changed, "metadata": {},
    })  # fmt: skip
    with pytest.raises(ValueError, match="holds another network than"):
        _check_same_parser(other / "changed.pt", str(generated))


def test_the_lexicons_models_get_a_line_each_under_the_parser() -> None:
    facts = {"epochs": 20, "best_epoch": 17, "dev_right": 84.1, "held_out": 3347, "minutes": 18.2}
    run = {"recipe": "python train.py", "lemma_generator": {"recipe": "python -m g", **facts}}
    assert _lexicon_model_lines(run) == [
        "  - its lexicon's lemma generator: `python -m g` (18.2 min, best epoch 17 of 20, "
        "84.1% of the 3,347 dev words training lacks right)."
    ]
    run["feats_guesser"] = {"recipe": "python -m f", **facts, "held_out": 12}
    assert _lexicon_model_lines(run)[1].startswith("  - its lexicon's FEATS guesser: `python -m f`")
    assert "of the 12 dev words" in _lexicon_model_lines(run)[1]
    run["upos_guesser"] = {"recipe": "python -m u", **facts, "dev_upos": [[0.0, 91.5], [0.5, 92.1]]}
    assert _lexicon_model_lines(run)[2].startswith("  - its lexicon's UPOS guesser: `python -m u`")
    assert _lexicon_model_lines(run)[2].endswith(
        "right; dev UPOS by its weight beside the tagger: 0.0: 91.5, 0.5: 92.1)."
    )
    assert "dev UPOS" not in _lexicon_model_lines(run)[1]
    run["feats_guesser"]["dev_feats"] = [[None, 88.1], [0.5, 88.4]]
    assert _lexicon_model_lines(run)[1].endswith(
        "right; dev FEATS by its weight beside the tagger: alone: 88.1, 0.5: 88.4)."
    )
    assert _lexicon_model_lines({"recipe": "python train.py"}) == []


def segmenter_run(root: Path, treebank: str = "UD_English-EWT") -> Path:
    """A segmenter run folder as Hydra leaves it, with a random segmenter's best checkpoint."""
    run = run_folder(root / "segmenter_run", ["data=ud_english_ewt"], "train_segmenter.log", 5)
    vocab = small_vocab()
    checkpoint.save(run / "best.pt", random_model(vocab, rnn_hidden=6), vocab, treebank=treebank)
    return run / "best.pt"


@pytest.mark.parametrize(
    "wrong", ["segmenter is a parser", "parser without taggers", "segmenter of another treebank"]
)
def test_a_refused_build_leaves_the_model_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], wrong: str
) -> None:
    # The parts were written into the model's folder before the checks: a parser given as the
    # segmenter replaced the model's segmenter.pt, and the error named that file.
    # A Wolof segmenter built as UD_English-EWT made an English model's card, scored on EWT.
    trained_on = "UD_Wolof-WTB" if wrong == "segmenter of another treebank" else "UD_English-EWT"
    parser, segmenter = parser_run(tmp_path), segmenter_run(tmp_path, trained_on)
    if wrong == "segmenter is a parser":
        segmenter = parser
    treebank = tmp_path / "UD_English-EWT"
    treebank.mkdir()
    (treebank / "en_ewt-ud-test.conllu").write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n\n")
    model = tmp_path / "models" / "en_ewt"
    model.mkdir(parents=True)
    for name in ("parser.pt", "segmenter.pt", CARD):
        (model / name).write_text(f"the model's own {name}")
    argv = ["en_ewt", "--parser", str(parser), "--segmenter", str(segmenter)]
    # the folder's name, as a shell completes it, is the treebank's too
    argv += ["--treebank", "UD_English-EWT/", "--root", str(tmp_path), "--out", str(model.parent)]
    argv += ["--docs", str(tmp_path / "models.md"), "--speed-threads", "1"]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    if wrong == "segmenter is a parser":
        assert error.startswith(f"error: {parser}: ")
    elif wrong == "parser without taggers":
        assert "has no tagger" in error
    else:
        assert "segmenter.pt was trained on UD_Wolof-WTB, not on --treebank UD_English-EWT" in error
    assert {p.name: p.read_text() for p in model.iterdir()} == {
        name: f"the model's own {name}" for name in ("parser.pt", "segmenter.pt", CARD)
    }
    assert sorted(p.name for p in model.parent.iterdir()) == ["en_ewt"]  # no staging left


def test_docs_that_name_a_folder_are_refused_before_the_model_is_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "--docs DIR" was refused after the model's card and segmenter were replaced: a command
    # that failed had changed the model.
    model = tmp_path / "models" / "en_ewt"
    model.mkdir(parents=True)
    (model / CARD).write_text("the model's own card")
    argv = ["en_ewt", "--parser", "p.pt", "--segmenter", "s.pt", "--treebank", "UD_X"]
    argv += ["--root", str(tmp_path), "--out", str(model.parent), "--docs", str(tmp_path)]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err == (
        f"error: output {tmp_path} is a folder: give the path of a file to write\n"
    )
    assert [p.name for p in model.iterdir()] == [CARD]


def test_the_size_of_a_model_without_a_segmenter_counts_its_parser(tmp_path: Path) -> None:
    # rescore summed every entry of a card's files: "segmenter": null was a TypeError.
    (tmp_path / "parser.pt").write_bytes(b"12345")
    assert size_bytes(tmp_path, ["parser.pt", None]) == 5


@pytest.mark.parametrize("name", ["Tiny", "../evil", "en-ewt"])
def test_a_name_no_listing_reads_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    # "Tiny" was built, then missing from python -m biaffine.models and refused by model=Tiny.
    argv = [name, "--parser", "p.pt", "--segmenter", "s.pt", "--treebank", "UD_X"]
    argv += ["--root", str(tmp_path), "--out", str(tmp_path / "models")]
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith(f"error: {name!r} is no model name: ")
    assert not (tmp_path / "models").exists()


def test_a_card_scores_a_column_the_model_does_not_tag_as_empty(tmp_path: Path, vocabs) -> None:
    # The gold cells of a column without a tagger passed through: XPOS 100 from gold tokens on
    # the card of a model trained without an XPOS tagger (0 from raw text).
    from builders import tagging_model

    from biaffine.api import Parser
    from biaffine.models.scoring import GOLD, card_scores

    parser = Parser.load(tagging_model(tmp_path, vocabs))
    assert sorted(parser.model.tagged_columns) == ["feats", "lemma", "upos"]
    tiny = Path(__file__).resolve().parents[1] / "data" / "tiny.conllu"
    scores = card_scores(parser, tiny)[GOLD]
    assert scores["XPOS"] == scores["AllTags"] == 0
    assert scores["UPOS"] > 0
