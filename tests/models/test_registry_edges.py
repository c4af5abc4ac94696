"""The model registry on odd ``ROOTPARSE_MODELS`` and odd cards: one clear line, never a guess.

In-process (``biaffine.models.__main__.main``, :mod:`biaffine.installed`): no model is loaded
but where a test says so, so each test takes milliseconds.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from biaffine import installed
from biaffine.api import Parser
from biaffine.models.__main__ import main as listing

SMALL = installed.SHIPPED / "en_ewt_small"


def card_of(name: str = "en_ewt_small", **changes: object) -> dict:
    """A shipped model's card with ``changes`` made to it."""
    return json.loads((installed.SHIPPED / name / "card.json").read_text()) | changes


def model_folder(root: Path, name: str, card: dict | str) -> Path:
    """``root/name/card.json`` holding ``card`` (JSON, or the text given)."""
    folder = root / name
    folder.mkdir(parents=True)
    text = card if isinstance(card, str) else json.dumps(card)
    (folder / "card.json").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder that ``ROOTPARSE_MODELS`` names."""
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path))
    return tmp_path


def status_and_lines(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    """``python -m biaffine.models``'s exit status and stderr lines, run in this process."""
    try:
        status = listing(list(argv))
    except SystemExit as exit:
        status = exit.code
    return status, capsys.readouterr().err.splitlines()


@pytest.mark.parametrize("entry", ["missing", "a-file"])
def test_a_models_path_that_is_no_folder_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path / entry))
    # A typo there would have found the shipped model of the same name, silently.
    message = rf"^ROOTPARSE_MODELS names {tmp_path / entry}, which is not a folder"
    with pytest.raises(ValueError, match=message):
        installed.find("en_ewt_small")
    with pytest.raises(ValueError, match=message):
        Parser.load("en_ewt_small")


@pytest.mark.parametrize("value", ["", os.pathsep, os.pathsep * 3])
def test_empty_entries_of_the_models_path_are_no_folders_at_all(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(installed.ENVIRONMENT, value)
    assert installed.search_path() == [installed.SHIPPED]
    assert installed.find("en_ewt_small").folder == SMALL


def test_the_listing_reports_a_broken_card_in_one_line_and_status_2(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = (SMALL / "card.json").read_text()[:500]
    model_folder(registry, "xx_cut", truncated)
    status, lines = status_and_lines(capsys)
    assert status == 2
    assert len(lines) == 1
    assert lines[0].startswith(f"error: {registry / 'xx_cut' / 'card.json'}: not a model card (")


def test_the_listing_names_each_model_by_the_name_it_loads_by(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_folder(registry, "xx_copy", card_of())  # a copy of en_ewt_small's card, its name too
    rows = _listing_rows(capsys)
    assert rows["xx_copy"].endswith(str(registry / "xx_copy"))
    assert rows["en_ewt_small"].endswith(str(SMALL))


def _listing_rows(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The listing's rows by their first cell."""
    assert listing([]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.startswith("name ")
    return {row.split()[0]: row for row in rows}


def test_a_card_with_only_its_files_is_listed_with_unknown_facts(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model_folder(registry, "xx_plain", {"files": {"parser": "parser.pt"}})
    rows = _listing_rows(capsys)
    assert rows["xx_plain"].split()[:-1] == ["xx_plain", *["?"] * 7]


def test_a_cards_unprintable_characters_are_escaped_in_its_row(
    registry: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newline in a card's language broke its row in two; an escape reached the terminal."""
    card = {"files": {"parser": "parser.pt"}, "language": "Eng\nlish\x1b[2J", "treebank": {}}
    model_folder(registry, "xx_odd", card)
    assert listing([]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    (row,) = [line for line in out.splitlines() if line.startswith("xx_odd")]
    assert row.split()[1] == "Eng\\nlish\\x1b[2J"


@pytest.mark.parametrize(
    ("files", "problem"),
    [
        ({"parser": "../en_ewt_small/parser.pt"}, r"files\.parser '\.\./en_ewt_small/parser\.pt'"),
        ({"parser": str(SMALL / "parser.pt")}, r"files\.parser '/.*'"),
        ({"parser": ".."}, r"files\.parser '\.\.'"),
        ({"parser": ""}, r"files\.parser ''"),
        (
            {"parser": "parser.pt", "segmenter": "../x/segmenter.pt"},
            r"files\.segmenter '\.\./x/segmenter\.pt'",
        ),
        ({"parser": "parser.pt", "segmenter": 5}, r"files\.segmenter 5"),
    ],
)
def test_a_card_naming_a_file_outside_its_folder_is_refused(
    registry: Path, files: dict, problem: str
) -> None:
    model_folder(registry, "xx_out", {"files": files})
    message = rf"xx_out/card\.json: not a model card \({problem} is not a file name in its folder\)"
    with pytest.raises(ValueError, match=message):
        installed.find("xx_out")


@pytest.mark.parametrize("requires", ["rootparse[glove]", [1], None])
def test_a_card_whose_requirements_are_no_list_of_strings_is_refused(
    registry: Path, requires: object
) -> None:
    model_folder(registry, "xx_needs", {"files": {"parser": "parser.pt"}, "requires": requires})
    message = r"xx_needs/card\.json: not a model card \(requires is not a list of strings\)"
    with pytest.raises(ValueError, match=message):
        installed.require("xx_needs")


def test_a_card_naming_a_missing_checkpoint_is_refused_naming_the_file(registry: Path) -> None:
    model_folder(registry, "xx_empty", {"files": {"parser": "parser.pt"}})
    with pytest.raises(ValueError, match=r"xx_empty/parser\.pt: no such checkpoint file"):
        Parser.named("xx_empty")


def test_a_copied_model_loads_by_its_folders_name(registry: Path) -> None:
    folder = model_folder(registry, "xx_small", card_of())
    shutil.copy(SMALL / "parser.pt", folder / "parser.pt")
    shutil.copy(SMALL / "segmenter.pt", folder / "segmenter.pt")
    assert Parser.named("xx_small", threads=1).name == "xx_small"


def test_the_docs_page_keeps_a_shipped_model_another_folder_shadows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # write_docs listed the models installed() found in models/: a model of ROOTPARSE_MODELS
    # shadowed en_ewt's, and the rewritten page lacked en_ewt.
    from biaffine.models.build import write_docs

    mine = tmp_path / "mine" / "en_ewt"
    mine.mkdir(parents=True)
    shutil.copyfile(installed.SHIPPED / "en_ewt" / "card.json", mine / "card.json")
    monkeypatch.setenv("ROOTPARSE_MODELS", str(tmp_path / "mine"))
    assert installed.find("en_ewt").folder == mine
    page = tmp_path / "models.md"
    write_docs(installed.SHIPPED, page)
    shipped_page = installed.SHIPPED.parent / "docs" / "models.md"
    assert page.read_text(encoding="utf-8") == shipped_page.read_text(encoding="utf-8")
