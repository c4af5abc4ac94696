"""``python -m biaffine.models.rescore``: what it reports and refuses (scoring itself is
:func:`biaffine.models.scoring.card_scores`, checked against every card by test_cards.py)."""

from __future__ import annotations

import pytest

from biaffine.models.rescore import changes, main


def test_changes_name_each_figure_that_moved_and_nothing_else() -> None:
    old = {
        "scores": {"gold_tokenization": {"LAS": 86.43, "Lemmas": 96.36}},
        "float32_scores": {"gold_tokenization": {"Lemmas": 96.36}},
    }
    new = {
        "scores": {"gold_tokenization": {"LAS": 86.43, "Lemmas": 96.47}, "raw_text": {"LAS": 84.1}},
        "float32_scores": {"gold_tokenization": {"Lemmas": 96.36}},
    }
    assert changes("en_ewt", old, new) == [
        "en_ewt: scores gold_tokenization Lemmas 96.36 -> 96.47",
        "en_ewt: scores raw_text LAS None -> 84.1",
    ]
    assert changes("en_ewt", old, old) == []
    dropped = {k: v for k, v in new.items() if k != "float32_scores"}
    assert changes("en_ewt", old, dropped)[0] == "en_ewt: float32_scores dropped"


def test_changes_name_each_speed_figure_measured_again() -> None:
    old = {"speed": {"cpu": "AMD EPYC", "load": 2.5, "gold_sentences_per_second": 68}}
    new = {"speed": {"cpu": "AMD EPYC", "load": 0.4, "gold_sentences_per_second": 144}}
    assert changes("hu_szeged", old, new) == [
        "hu_szeged: speed load 2.5 -> 0.4",
        "hu_szeged: speed gold_sentences_per_second 68 -> 144",
    ]
    assert changes("hu_szeged", old, old) == []


def test_a_float32_checkpoint_for_a_model_not_rescored_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["en_ewt", "--root", ".", "--float32", "tr_imst=best.pt"])
    assert stopped.value.code == 2
    assert "--float32 names a model not rescored: ['tr_imst']" in capsys.readouterr().err


def test_an_unknown_model_is_refused_in_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["en_ewt", "NOT_A_MODEL", "--root", "."])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no model named 'NOT_A_MODEL'")
    assert err.count("\n") == 1


def test_a_float32_setting_without_a_path_is_refused(capsys) -> None:
    # dict() of "en_ewt" was a ValueError traceback.
    with pytest.raises(SystemExit) as stopped:
        main(["en_ewt", "--root", ".", "--float32", "en_ewt"])
    assert stopped.value.code == 2
    assert "--float32 en_ewt: give NAME=PATH" in capsys.readouterr().err


def test_docs_into_a_missing_folder_are_refused_before_any_card_is_written(capsys) -> None:
    # Refused once every card had been scored and written.
    with pytest.raises(SystemExit) as stopped:
        main(["en_ewt", "--root", ".", "--docs", "/nonexistent/folder/models.md"])
    assert stopped.value.code == 2
    assert "the folder /nonexistent/folder does not exist" in capsys.readouterr().err


def test_a_card_without_a_treebank_is_refused_naming_it(tmp_path, monkeypatch, capsys) -> None:
    # A KeyError traceback: the listing reads such a card.
    import json

    folder = tmp_path / "xx_bare"
    folder.mkdir()
    (folder / "card.json").write_text(json.dumps({"files": {"parser": "parser.pt"}}))
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        main(["xx_bare", "--root", ".", "--dry-run"])
    assert stopped.value.code == 2
    assert "card.json: names no treebank.name to score on" in capsys.readouterr().err
