"""Shipped models by name: the registry, loading, the listing, the quick start, the docs page."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from biaffine import checkpoint, installed, models
from biaffine.api import Parser
from biaffine.models.card import render_page

ROOT = Path(__file__).parents[2]
SHIPPED = ("en_ewt", "en_ewt_glove", "en_ewt_minilm", "en_ewt_small")
SHIPPED += ("fr_sequoia", "hu_szeged", "tr_imst", "vi_vtb")
FOX = "The quick brown fox jumped over the lazy dog."
PYPROJECT = (ROOT / "pyproject.toml").read_text()


@pytest.fixture(autouse=True)
def only_the_shipped_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(installed.ENVIRONMENT, raising=False)
    torch.set_num_threads(1)


def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, input=stdin, capture_output=True, text=True, check=False
    )


def test_the_shipped_models_are_installed_with_their_files() -> None:
    assert models.names() == sorted(SHIPPED)
    for model in installed.installed().values():
        files = [model.folder / name for name in model.card["files"].values()]
        assert model.card["size_bytes"] == sum(f.stat().st_size for f in files), model.name
        # The "about 20 MB": en_ewt_glove is 24.3 MB, 5 MB of it the GloVe vectors it
        # reads; en_ewt_minilm, an int8 network holding the four MiniLM layers it fine-tuned
        # (its subword embeddings are read from the wheel), 25 MB with its segmenter.
        assert model.card["size_bytes"] < 27e6, model.name
        for requirement in model.card["requires"]:  # an extra of this project, e.g. [transformer]
            extra = re.fullmatch(r"rootparse\[(\w+)\]", requirement)
            assert extra, requirement
            assert re.search(rf"^{extra.group(1)} = \[", PYPROJECT, re.M), requirement
        assert model.parser.is_file()
        assert model.segmenter.is_file()
    assert installed.find("en_ewt").card["requires"] == []  # the default: the base install


def test_the_shipped_parsers_are_in_the_current_checkpoint_format() -> None:
    """Their plain data as JSON texts (format 5): an older file loads 3-4x slower (en_ewt 1.6 s
    against 0.45 s), on every command and start of a server: `checkpoint.upgrade` rewrites one."""
    for model in installed.installed().values():
        raw = torch.load(model.parser, weights_only=True)
        assert raw["version"] == checkpoint.VERSION, model.name
        assert all(isinstance(raw[field], str) for field in checkpoint.JSON_FIELDS), model.name


def test_an_unknown_name_gets_the_installed_names() -> None:
    with pytest.raises(models.UnknownModelError) as error:
        models.load("en_gum")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"no model named 'en_gum'; installed: {', '.join(sorted(SHIPPED))} (")


@pytest.mark.parametrize("name", ["models/en_ewt/parser.pt", "../en_ewt", "/etc/passwd", "EN_EWT"])
def test_a_model_name_is_never_read_as_a_path(name: str) -> None:
    assert not installed.is_name(name)
    with pytest.raises(models.UnknownModelError, match=r"^no model named "):
        Parser.named(name)


def test_a_name_is_loaded_by_name_beside_a_folder_of_that_name(tmp_path, monkeypatch) -> None:
    # Run from models/ (or beside any folder en_ewt_small/), the folder was read as the
    # checkpoint: "en_ewt_small: is not a file, so not a checkpoint".
    (tmp_path / "en_ewt_small").mkdir()
    monkeypatch.chdir(tmp_path)
    assert Parser.load("en_ewt_small", threads=1).model.kind == "biaffine"


def test_a_models_own_folder_in_the_environment_variable_is_refused(tmp_path, monkeypatch):
    # Its models are the folders in it: it found none, and the shipped en_ewt_small was loaded
    # where the user meant their own copy.
    mine = tmp_path / "en_ewt_small"
    mine.mkdir()
    (mine / "card.json").write_text((installed.SHIPPED / "en_ewt_small" / "card.json").read_text())
    monkeypatch.setenv(installed.ENVIRONMENT, str(mine))
    with pytest.raises(ValueError, match="a model's own folder: give the folder that holds it"):
        models.names()


def test_folders_under_the_environment_variable_come_first(tmp_path, monkeypatch) -> None:
    mine = tmp_path / "en_ewt"
    mine.mkdir()
    card = json.loads((installed.SHIPPED / "en_ewt" / "card.json").read_text()) | {"mine": True}
    (mine / "card.json").write_text(json.dumps(card))
    (tmp_path / "xx_nocard").mkdir()  # no card: not a model
    (tmp_path / "Not-A-Name").mkdir()
    (tmp_path / "Not-A-Name" / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path))
    assert installed.find("en_ewt").folder == mine
    assert installed.find("en_ewt").card["mine"] is True
    assert models.names() == sorted(SHIPPED)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", r"\(Expecting"),
        ('{"files": {}}', r"\(no files\.parser\)"),
        ("[" * 5000 + "]" * 5000, r"\(nested too deeply\)"),  # a RecursionError traceback
        # a traceback naming no file, "nan MB" and invalid JSON from the listing, a listing
        # that failed to print
        ('{"size_bytes": ' + "1" * 5000 + "}", r"\(Exceeds the limit"),
        ('{"size_bytes": NaN}', r"\(NaN is not a JSON number\)"),
        ('{"language": "\\ud800"}', r"\('utf-8' codec can't encode character '\\ud800'"),
        ('{"size_bytes": 1e400}', r"\(1e400 is beyond a float\)"),  # inf MB, Infinity
        ('{"size_bytes": 1' + "0" * 400 + "}", r"\(10000000000000000000\.\.\. is beyond a 64-bit"),
        ('{"size_bytes": 9223372036854775808}', r"\(9223372036854775808 is beyond a 64-bit"),
    ],
    ids=[
        "not-json",
        "no-parser",
        "deep",
        "long-integer",
        "nan",
        "lone-surrogate",
        "float-overflow",
        "int-beyond-float",
        "int-beyond-int64",
    ],
)
def test_a_broken_card_is_named_in_one_line(tmp_path, monkeypatch, text, problem) -> None:
    (tmp_path / "xx_broken").mkdir()
    (tmp_path / "xx_broken" / "card.json").write_text(text)
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path))
    with pytest.raises(ValueError, match=rf"xx_broken/card\.json: not a model card {problem}"):
        installed.installed()


def test_load_by_name_brings_the_models_segmenter() -> None:
    parser = Parser.load("en_ewt")
    assert parser.name == "en_ewt"
    assert parser.segmenter is not None
    trees = parser.parse(text="The cat sat on the mat. It slept.")
    assert [tree.sentence.forms for tree in trees] == [
        ["The", "cat", "sat", "on", "the", "mat", "."],
        ["It", "slept", "."],
    ]
    first = trees[0].sentence
    assert first.upos == ["DET", "NOUN", "VERB", "ADP", "DET", "NOUN", "PUNCT"]
    assert first.lemmas == ["the", "cat", "sit", "on", "the", "mat", "."]
    assert trees[0].heads == [2, 3, 0, 6, 6, 3, 3]


def test_a_file_named_like_a_model_is_read_as_that_file(tmp_path, monkeypatch) -> None:
    shutil.copy(installed.SHIPPED / "en_ewt" / "parser.pt", tmp_path / "en_ewt")
    monkeypatch.chdir(tmp_path)
    parser = Parser.load("en_ewt")
    assert parser.name is None
    assert parser.segmenter is None


QUICK_ARGS = ("predict.py", "model=en_ewt", "input=-", "format=raw")
QUICK_START = f'echo "{FOX}" | python {" ".join(QUICK_ARGS)}'


@pytest.fixture(scope="module")
def quick_start() -> subprocess.CompletedProcess[str]:
    """The README's first command, run as it reads."""
    done = run(*QUICK_ARGS, stdin=FOX + "\n")
    assert done.returncode == 0, done.stderr
    return done


def readme_output(command: str) -> list[str]:
    """The lines the README shows under ``command``: its indented block, indent removed."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index(f"    {command}") + 1
    while not lines[start]:
        start += 1
    shown = list(itertools.takewhile(lambda line: line.startswith("    "), lines[start:]))
    return [line.removeprefix("    ") for line in shown]


def test_the_quick_start_parses_a_sentence_of_english(
    quick_start: subprocess.CompletedProcess[str],
) -> None:
    lines = quick_start.stdout.splitlines()
    assert lines[:4] == ["# newdoc", "# newpar", "# sent_id = 1", f"# text = {FOX}"]
    words = [line.split("\t") for line in lines[4:] if line]
    assert [w[1] for w in words] == FOX.replace(".", " .").split()
    assert [w[2] for w in words] == [
        "the",
        "quick",
        "brown",
        "fox",
        "jump",
        "over",
        "the",
        "lazy",
        "dog",
        ".",
    ]
    assert [w[3] for w in words] == [
        "DET",
        "ADJ",
        "ADJ",
        "NOUN",
        "VERB",
        "ADP",
        "DET",
        "ADJ",
        "NOUN",
        "PUNCT",
    ]
    assert [int(w[6]) for w in words] == [4, 4, 4, 5, 0, 9, 9, 9, 5, 5]
    deprels = ["det", "amod", "amod", "nsubj", "root", "case", "det", "amod", "obl", "punct"]
    assert [w[7] for w in words] == deprels
    assert words[8][9] == "SpaceAfter=No"


def test_the_readme_shows_what_the_quick_start_prints(
    quick_start: subprocess.CompletedProcess[str],
) -> None:
    # Byte for byte, FEATS and XPOS included, which the test above leaves free: the README
    # once showed an analysis the shipped model no longer gave.
    assert readme_output(QUICK_START) == quick_start.stdout.rstrip("\n").splitlines()


def test_predict_refuses_an_unknown_model_in_one_line() -> None:
    done = run("predict.py", "model=en_gum", "input=-", "format=raw", stdin=FOX)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("error: no model named 'en_gum'; installed: en_ewt")
    )


@pytest.mark.parametrize("written", ["segmenter.pt", "card.json", "parser.pt"])
def test_predict_refuses_to_write_over_a_file_of_the_named_model(
    tmp_path, monkeypatch, written: str
) -> None:
    """output=.../segmenter.pt of a CoNLL-U parse, or card.json, wrote the parse over them."""
    mine = tmp_path / "my_small"
    mine.mkdir()
    card = (installed.SHIPPED / "en_ewt_small" / "card.json").read_bytes()
    (mine / "card.json").write_bytes(card)
    for name in ("parser.pt", "segmenter.pt"):  # never read: the refusal comes first
        (mine / name).write_bytes(b"weights of " + name.encode())
    before = {path.name: path.read_bytes() for path in mine.iterdir()}
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path))
    done = run("predict.py", "model=my_small", "input=-", f"output={mine / written}", stdin=FOX)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: output {mine / written} is the input file {mine / written}: choose another "
        "output path"
    )
    assert {path.name: path.read_bytes() for path in mine.iterdir()} == before


def test_the_listing_names_each_model_with_its_licence_size_and_scores() -> None:
    done = run("-m", "biaffine.models")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:5] == ["name", "language", "treebank", "UD", "licence"]
    assert [row.split()[0] for row in rows] == sorted(SHIPPED)
    for row, model in zip(rows, installed.installed().values(), strict=True):
        card = model.card
        assert card["treebank"]["licence"] in row
        assert f"{card['scores']['gold_tokenization']['LAS']}" in row
        assert f"{card['scores']['raw_text']['LAS']}" in row
    assert "(NC)" in next(row for row in rows if row.startswith("tr_imst"))


def test_the_docs_page_is_the_cards_rendered() -> None:
    cards = [model.card for model in installed.installed().values()]
    assert (ROOT / "docs" / "models.md").read_text(encoding="utf-8") == render_page(cards)


def train_config(command: str) -> dict:
    overrides = command.split()[2:]  # python train.py ...
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return OmegaConf.to_container(compose("train", overrides=overrides))


@pytest.mark.parametrize("name", SHIPPED)
def test_each_recipe_composes_the_configuration_its_run_had(name: str) -> None:
    parser = installed.find(name).card["training"]["parser"]
    runs = parser.get("members", [parser])  # an ensemble: each member's run
    if "members" in parser:
        assert parser["recipe"].startswith("python -m biaffine.training.ensemble parser.pt ")
    assert f"python train.py experiment={name}" in [run["recipe"] for run in runs]
    for run in runs:
        assert train_config(run["recipe"]) == train_config(run["command"])


def sentences_config(command: str) -> dict:
    overrides = command.split()[2:]  # python train_sentences.py ...
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return OmegaConf.to_container(compose("sentences", overrides=overrides))


def sentence_models() -> list[str]:
    """The shipped models whose segmenter has a sentence model (train_sentences.py)."""
    return [n for n in SHIPPED if "sentences" in installed.find(n).card["training"]["segmenter"]]


@pytest.mark.parametrize("name", sentence_models())
def test_a_sentence_models_recipe_composes_the_configuration_its_run_had(name: str) -> None:
    sentences = installed.find(name).card["training"]["segmenter"]["sentences"]
    assert sentences["recipe"].startswith("python train_sentences.py ")
    assert sentences_config(sentences["recipe"]) == sentences_config(sentences["command"])


def test_the_readmes_table_shows_what_each_card_says() -> None:
    rows = re.findall(r"^\| `(\w+)`[^|]*\|([^\n]*)$", (ROOT / "README.md").read_text(), re.M)
    shown = {name: [cell.strip() for cell in cells.split("|")] for name, cells in rows}
    assert sorted(shown) == sorted(SHIPPED)
    for name, cells in shown.items():
        card = installed.find(name).card
        raw, gold = card["scores"]["raw_text"], card["scores"]["gold_tokenization"]
        figures = [raw["LAS"], gold["LAS"], gold["UPOS"], gold["Lemmas"]]
        assert cells[2:6] == [f"{f:.2f}" for f in figures], name
        assert cells[6] == f"{card['size_bytes'] / 1e6:.1f} MB", name


def test_the_readme_states_the_size_of_the_committed_models() -> None:
    files = [path for path in installed.SHIPPED.glob("*/*") if path.is_file()]
    total = sum(path.stat().st_size for path in files)  # du -cb models/*/*
    stated = re.search(
        r"The committed models take (\d+) MB in all", (ROOT / "README.md").read_text()
    )
    assert stated is not None
    assert int(stated.group(1)) == round(total / 1e6)


def test_loading_and_parsing_by_name_never_touch_the_network(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("a socket was opened")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for name in SHIPPED:
        if not installed.find(name).missing():  # a model needing an absent extra cannot load
            assert models.load(name).parse(text="Hello world.\n")


def test_a_model_whose_extra_is_missing_says_what_to_install(tmp_path, monkeypatch) -> None:
    mine = tmp_path / "xx_needy"
    mine.mkdir()
    card = json.loads((installed.SHIPPED / "en_ewt" / "card.json").read_text())
    card["requires"] = ["rootparse[transformer]"]
    (mine / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv(installed.ENVIRONMENT, str(tmp_path))
    monkeypatch.setitem(installed.EXTRAS, "transformer", ("no_such_module_xyz",))
    assert installed.find("xx_needy").missing() == ["rootparse[transformer]"]
    message = (
        r"^model 'xx_needy' needs more than is installed: pip install 'rootparse\[transformer\]'$"
    )
    with pytest.raises(models.MissingRequirementError, match=message):
        models.load("xx_needy")
    monkeypatch.setitem(installed.EXTRAS, "transformer", ("json",))  # importable: loads
    assert installed.require("xx_needy").missing() == []
