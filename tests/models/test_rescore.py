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


def refusal(argv: list[str], capsys) -> str:
    """The one line ``main(argv)`` prints before it exits with status 2."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["en_ewt", "--float32", "tr_imst=best.pt"], "--float32 names a model not rescored"),
        (["en_ewt", "NOT_A_MODEL"], "error: no model named 'NOT_A_MODEL'"),
        # A ValueError traceback, from dict() of "en_ewt".
        (["en_ewt", "--float32", "en_ewt"], "--float32 en_ewt: give NAME=PATH"),
        # Refused once every card had been scored and written.
        (["en_ewt", "--docs", "/nonexistent/x/models.md"], "the folder /nonexistent/x does not"),
        # Both refused once the models before them had been scored and their cards written.
        (["en_ewt", "--float32", "en_ewt=/nonexistent.pt"], "en_ewt=/nonexistent.pt: no such"),
        (["en_ewt", "--speed", "0"], "--speed 0: give a positive number of threads"),
    ],
)
def test_bad_arguments_are_refused_in_one_line_before_any_work(argv, words, capsys) -> None:
    assert words in refusal([*argv, "--root", "."], capsys)


def test_a_card_without_a_treebank_is_refused_naming_it(tmp_path, monkeypatch, capsys) -> None:
    # A KeyError traceback: the listing reads such a card.
    import json

    folder = tmp_path / "xx_bare"
    folder.mkdir()
    (folder / "card.json").write_text(json.dumps({"files": {"parser": "parser.pt"}}))
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path))
    err = refusal(["xx_bare", "--root", ".", "--dry-run"], capsys)
    assert "card.json: names no treebank.name to score on" in err


def test_a_model_outside_the_shipped_ones_leaves_their_page_alone(tmp_path, monkeypatch, capsys):
    # It rewrote docs/models.md, or was refused for it where the package has no docs/.
    import json

    folder = tmp_path / "xx_bare"
    folder.mkdir()
    (folder / "card.json").write_text(json.dumps({"files": {"parser": "parser.pt"}}))
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path))
    err = refusal(["xx_bare", "--root", ".", "--docs", "/nonexistent/x/models.md"], capsys)
    assert "card.json: names no treebank.name to score on" in err


def test_a_model_that_fails_leaves_every_card_as_it_was(tmp_path, monkeypatch, capsys) -> None:
    # The cards were written model by model: a failure on the second left the first rewritten.
    import json

    from biaffine.models import rescore as module

    for name in ("xx_one", "xx_two"):
        (tmp_path / name).mkdir()
        card = {"name": name, "files": {"parser": "parser.pt"}}
        (tmp_path / name / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path))

    def scored(name: str, *args, **kwargs) -> tuple[dict, dict]:
        if name == "xx_two":
            raise ValueError("xx_two: cannot be scored")
        return {"name": name}, {"name": name, "files": {"parser": "parser.pt"}, "scores": {}}

    monkeypatch.setattr(module, "rescore", scored)
    assert "xx_two: cannot be scored" in refusal(["xx_one", "xx_two", "--root", "."], capsys)
    assert json.loads((tmp_path / "xx_one" / "card.json").read_text()) == {
        "name": "xx_one",
        "files": {"parser": "parser.pt"},
    }


def test_a_card_that_cannot_be_written_leaves_the_others_as_they_were(
    tmp_path, monkeypatch, capsys
) -> None:
    # The cards were written one by one: the second failing (a full disk) left the first new.
    import json

    from biaffine.models import rescore as module

    for name in ("xx_one", "xx_two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "card.json").write_text(
            json.dumps({"name": name, "files": {"parser": "p.pt"}})
        )
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path))

    def scored(name: str, *args, **kwargs) -> tuple[dict, dict]:
        return {"name": name}, {"name": name, "files": {"parser": "p.pt"}, "scores": {}}

    def written(card: dict) -> str:
        if card["name"] == "xx_two":
            raise OSError(28, "No space left on device")
        return json.dumps(card)

    monkeypatch.setattr(module, "rescore", scored)
    monkeypatch.setattr(module, "write_json", written)
    assert "No space left on device" in refusal(["xx_one", "xx_two", "--root", "."], capsys)
    for name in ("xx_one", "xx_two"):
        card = json.loads((tmp_path / name / "card.json").read_text())
        assert card == {"name": name, "files": {"parser": "p.pt"}}
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "card.json",
        "card.json",
        "xx_one",
        "xx_two",
    ]
