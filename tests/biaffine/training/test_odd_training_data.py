"""Training on odd or bad treebank files: valid oddities train, bad input is one located error.

The rule (``biaffine.cli``): bad input is one line naming the file, the line and the problem,
with exit status 2; nothing the user wrote is lost or overwritten.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize

from biaffine.data import treebanks
from biaffine.data.conllu import ConlluError
from biaffine.segmenting.training import load_documents, refuse_earlier_run
from biaffine.training import train

ROOT = Path(__file__).parents[3]
TINY = ROOT / "tests" / "data" / "tiny.conllu"
TREEBANK = "UD_Odd-Test"
ONE_EPOCH = ["experiment=smoke", "trainer.progress_bar=false", "trainer.max_epochs=1"]


def word(i: int, form: str, head: int | str, rel: str = "dep") -> str:
    return f"{i}\t{form}\t{form}\tX\t_\t_\t{head}\t{rel}\t_\t_\n"


def sentence(*heads: int | str) -> str:
    """A sentence of ``len(heads)`` words with these HEADs (0: ``root``)."""
    words = [word(i, f"w{i}", h, "root" if h == 0 else "dep") for i, h in enumerate(heads, 1)]
    return "# text = x\n" + "".join(words) + "\n"


def write(folder: Path, name: str, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def splits(tmp_path: Path, train: str | bytes, dev: str | bytes | None = None):
    folder = tmp_path / TREEBANK
    write(folder, "train.conllu", train)
    write(folder, "dev.conllu", dev if dev is not None else sentence(0))
    names = {"train": "train.conllu", "dev": "dev.conllu", "test": None}
    return treebanks.load_splits(tmp_path, TREEBANK, names)


def data_config(tmp_path: Path, **names: str | None) -> dict:
    config = {"root": str(tmp_path), "treebank": TREEBANK, "download": False, "base_url": ""}
    config |= {"train": "train.conllu", "dev": "dev.conllu", "test": None} | names
    return config | {"discover": False, "dev_fraction": 0.1, "split_seed": 1}


# Parser training data: gold trees.


@pytest.mark.parametrize(
    ("heads", "at", "problem"),
    [
        ((2, 2, 0), 2, r"word 2 is its own head"),
        ((2, 3, 1), 1, r"words 1 -> 2 -> 3 -> 1 form a cycle"),
        ((0, 3, 2), 2, r"words 2 -> 3 -> 2 form a cycle"),
        ((2, 1), 1, r"words 1 -> 2 -> 1 form a cycle"),
    ],
)
def test_gold_heads_that_are_no_tree_are_refused_at_their_line(
    tmp_path: Path, heads: tuple[int, ...], at: int, problem: str
) -> None:
    # Before: a word heading itself ended training in an inf-loss FloatingPointError traceback;
    # cycles trained silently on trees that no decoder can output.
    train_text = sentence(0) + sentence(*heads)  # word i of the second one is on line 4 + i
    path = tmp_path / TREEBANK / "train.conllu"
    with pytest.raises(ConlluError, match=f"^{path}:{4 + at}: {problem}"):
        splits(tmp_path, train_text)


def test_a_bad_tree_in_dev_is_refused_too(tmp_path: Path) -> None:
    path = tmp_path / TREEBANK / "dev.conllu"
    with pytest.raises(ConlluError, match=f"^{path}:3: word 1 is its own head"):
        splits(tmp_path, sentence(0), dev="\n" + sentence(1, 0))


def test_valid_odd_files_load_as_ud_defines_them(tmp_path: Path) -> None:
    text = TINY.read_bytes()  # multiword tokens (2-3) and an empty node (5.1) among others
    for odd in (
        b"\xef\xbb\xbf" + text,  # a byte order mark
        text.replace(b"\n", b"\r\n"),  # CRLF line ends
        text.rstrip(b"\n"),  # no final blank line, nor line break
        b"\n\n" + text,  # blank lines first
    ):
        loaded = splits(tmp_path, odd, dev=odd)
        assert [len(s) for s in loaded.train] == [4, 9, 5, 7, 5, 4, 1]
        assert len(loaded.dev) == 7
    one_word = splits(tmp_path, sentence(0) * 3, dev=sentence(0, 1))
    several_roots = splits(tmp_path, sentence(0, 0, 2), dev=sentence(0))  # the loss's to handle
    assert [s.heads for s in several_roots.train] == [[0, 0, 2]]
    assert [s.heads for s in one_word.train] == [[0]] * 3


def test_a_folder_given_as_a_split_file_is_named_a_folder(tmp_path: Path) -> None:
    (tmp_path / TREEBANK / "dev.conllu").mkdir(parents=True)
    write(tmp_path / TREEBANK, "train.conllu", sentence(0))
    names = {"train": "train.conllu", "dev": "dev.conllu", "test": None}
    folder = tmp_path / TREEBANK / "dev.conllu"
    # Before: "treebank file(s) not found: ...", for a path that exists, or with
    # data.download=true a download meant to replace the folder (here from a closed port).
    for download in (False, True):
        with pytest.raises(ConlluError, match=f"^{folder}:0: is a directory, not a file$"):
            treebanks.load_splits(
                tmp_path, TREEBANK, names, download=download, base_url="http://127.0.0.1:9/{file}"
            )


# The run folder: inputs never overwritten, a user's folder never removed.


def tiny_config(*overrides: str):
    with initialize(version_base="1.3", config_path="../../../conf"):
        return compose("train", overrides=[*ONE_EPOCH, *overrides])


@pytest.mark.parametrize("name", ["config.yaml", "train.log", "last.pt", "curves.png"])
def test_a_treebank_file_the_run_would_write_over_is_refused_and_kept(
    tmp_path: Path, name: str
) -> None:
    # Before: config.yaml, train.log and curves.png were removed, then config.yaml rewritten,
    # as the run started; the error then blamed the user's file for the run's config.
    run_dir = tmp_path / TREEBANK
    train_file = write(run_dir, name, TINY.read_bytes())
    write(run_dir, "dev.conllu", TINY.read_bytes())
    overrides = [f"data.root={tmp_path}", f"data.treebank={TREEBANK}", f"data.train={name}"]
    overrides += ["data.dev=dev.conllu", "data.test=null", "trainer.overwrite=true"]
    with pytest.raises(ValueError, match=f"^data.train: {train_file} is a file this run writes"):
        train(tiny_config(*overrides), run_dir)
    assert train_file.read_bytes() == TINY.read_bytes()
    assert sorted(p.name for p in run_dir.iterdir()) == sorted({name, "dev.conllu"})


def test_a_refused_run_keeps_the_users_folder_and_files(tmp_path: Path) -> None:
    # Before: the clean-up after a run refused for its data removed the whole folder when its
    # files had start-up names only, here .hydra/, whose files of the user's a run keeps.
    write(tmp_path / TREEBANK, "train.conllu", b"")
    write(tmp_path / TREEBANK, "dev.conllu", TINY.read_bytes())
    run_dir = tmp_path / "mine"
    write(run_dir / ".hydra", "notes.txt", "my own notes\n")
    data = [f"data.root={tmp_path}", f"data.treebank={TREEBANK}", "data.train=train.conllu"]
    data += ["data.dev=dev.conllu", "data.test=null", f"hydra.run.dir={run_dir}"]
    command = [sys.executable, str(ROOT / "train.py"), *ONE_EPOCH, *data]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / TREEBANK / 'train.conllu'}:0: no sentences found (0 lines, all blank)"
    ]
    assert (run_dir / ".hydra" / "notes.txt").read_text() == "my own notes\n"


# Segmenter training data: raw text.


@pytest.mark.parametrize("split", ["train", "dev"])
@pytest.mark.parametrize("content", ["", "# only a comment\n\n"])
def test_a_segmenter_split_without_text_is_refused(
    tmp_path: Path, split: str, content: str
) -> None:
    # Before: train_segmenter.py trained on no text (or scored on none) and exited 0.
    folder = tmp_path / TREEBANK
    write(folder, "train.conllu", TINY.read_bytes())
    write(folder, "dev.conllu", TINY.read_bytes())
    empty = write(folder, f"{split}.conllu", content)
    with pytest.raises(ConlluError, match=f"^{empty}:0: no sentences found"):
        load_documents(data_config(tmp_path))


def test_a_segmenter_input_in_its_run_folder_is_refused_and_kept(tmp_path: Path) -> None:
    from biaffine.segmenting.training import refuse_overwriting_inputs

    run_dir = tmp_path / "run"
    for name in ("best.pt", "metrics.jsonl"):
        path = write(run_dir, name, b"mine")
        with pytest.raises(ValueError, match=f"^segmenter: {path} is a file this run writes"):
            refuse_overwriting_inputs(run_dir, {"segmenter": path, "data.train": TINY})
        assert path.read_bytes() == b"mine"
    refuse_overwriting_inputs(run_dir, {"data.train": TINY, "data.dev": None})


@pytest.mark.parametrize("script", ["train_segmenter.py", "train_sentences.py"])
def test_a_segmenter_run_folder_holding_a_run_is_refused_unless_overwrite(
    tmp_path: Path, script: str
) -> None:
    # A second run given the same hydra.run.dir replaced the first one's best.pt unasked.
    run_dir = tmp_path / "run"
    earlier = write(run_dir, "best.pt", b"the first run's segmenter")
    command = [sys.executable, str(ROOT / script), f"hydra.run.dir={run_dir}"]
    if script == "train_sentences.py":
        command.append(f"segmenter={ROOT / 'models' / 'en_ewt' / 'segmenter.pt'}")
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.endswith(
        f"error: {run_dir} holds a run already (best.pt): replace it with "
        "trainer.overwrite=true, or choose another run folder (hydra.run.dir; hydra.sweep.dir "
        "in a sweep)\n"
    )
    assert earlier.read_bytes() == b"the first run's segmenter"
    refuse_earlier_run(run_dir, overwrite=True)  # asked for: the run may replace it
    refuse_earlier_run(tmp_path / "fresh", overwrite=False)
    with pytest.raises(ValueError, match=r"^trainer.overwrite='yes': expected true or false"):
        refuse_earlier_run(run_dir, overwrite="yes")


def test_init_from_a_run_of_other_labels_is_refused_naming_them(vocabs) -> None:
    # Its vocabularies were kept: the relations they lack were never learnt, without a word.
    from biaffine.data.conllu import Sentence
    from biaffine.training.compose import _refuse_unknown_relations

    known = vocabs.rels.itos[3]
    sentences = [Sentence(["a", "b"], heads=[0, 1], deprels=["root", "zz:new"])]
    with pytest.raises(ValueError, match=r"^trainer\.init_from=x\.pt knows no relation zz:new "):
        _refuse_unknown_relations(sentences, vocabs, "x.pt")
    same = [Sentence(["a", "b"], heads=[0, 1], deprels=["root", known])]
    _refuse_unknown_relations(same, vocabs, "x.pt")
