"""The ``python -m biaffine.evaluate`` command: output, errors, and a recount on real UD files."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

import pytest

from biaffine import predicting
from biaffine.evaluate import evaluate_files, main
from biaffine.predict_options import PredictOptions
from biaffine.predicting import predict

REPO_ROOT = Path(__file__).resolve().parents[2]

GOLD = """\
# sent_id = 1
# text = The dog barks.
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tbarks\tbark\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# sent_id = 2
1\tMy\tmy\tPRON\t_\t_\t2\tnmod:poss\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_

"""

# Sentence 1: punctuation on the wrong head, "dog" mislabeled; sentence 2: subtype dropped.
PRED = """\
# sent_id = 1
# text = The dog barks.
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t3\tobj\t_\t_
3\tbarks\tbark\tVERB\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t_\t_\t2\tpunct\t_\t_

# sent_id = 2
1\tMy\tmy\tPRON\t_\t_\t2\tnmod\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_

"""


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_output_on_a_small_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold, pred = _write(tmp_path, "gold.conllu", GOLD), _write(tmp_path, "pred.conllu", PRED)
    result = _run_json(capsys, gold, pred)
    assert (result["n_sentences"], result["n_words"]) == (2, 6)
    assert result["uas"] == pytest.approx(500 / 6)
    assert result["las"] == pytest.approx(300 / 6)
    assert result["las_universal"] == pytest.approx(400 / 6)
    assert (result["uem"], result["lem"]) == (50.0, 0.0)
    assert (result["root_accuracy"], result["malformed_rate"]) == (100.0, 0.0)
    assert (result["gold"], result["pred"], result["exclude_punct"]) == (gold, pred, False)


def test_exclude_punct_switch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold, pred = _write(tmp_path, "gold.conllu", GOLD), _write(tmp_path, "pred.conllu", PRED)
    result = _run_json(capsys, gold, pred, "--exclude-punct")
    assert result["n_words"] == 5
    assert result["uas"] == 100.0
    assert result["las"] == pytest.approx(300 / 5)
    assert (result["uem"], result["lem"]) == (100.0, 0.0)
    assert result["exclude_punct"] is True


def test_table_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold, pred = _write(tmp_path, "gold.conllu", GOLD), _write(tmp_path, "pred.conllu", PRED)
    assert main([gold, pred]) == 0
    out = capsys.readouterr().out
    assert "sentences:  2" in out
    assert "words:      6 (punctuation included)" in out
    rows = {line[:24].strip(): line[24:].strip() for line in out.splitlines() if len(line) > 24}
    assert rows["UAS"] == "83.33"
    assert rows["LAS (full DEPREL)"] == "50.00"
    assert rows["LAS (universal DEPREL)"] == "66.67"
    assert rows["malformed rate"] == "0.00"
    assert "the CoNLL 2018 scorer's LAS strips subtypes" in out  # which LAS to compare with it


def test_the_table_without_punctuation_keeps_the_conll18_uas_and_las_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CoNLL 2018 table left its UAS and LAS to the attachment table, which
    # --exclude-punct makes another figure: the scorer's LAS (with punctuation, 66.67) was
    # nowhere, and the note still said to compare it with LAS (universal DEPREL), 80.00.
    gold, pred = _write(tmp_path, "gold.conllu", GOLD), _write(tmp_path, "pred.conllu", PRED)
    assert main([gold, pred, "--exclude-punct"]) == 0
    out = capsys.readouterr().out
    rows = [(line[:24].strip(), line[24:].split()) for line in out.splitlines()]
    assert [cells for name, cells in rows if name == "LAS (universal DEPREL)"] == [["80.00"]]
    # the attachment table's UAS, then the CoNLL 2018 table's P, R and F1
    assert [cells for name, cells in rows if name == "UAS"] == [["100.00"], ["83.33"] * 3]
    assert [cells for name, cells in rows if name == "LAS"] == [["66.67"] * 3]
    assert "compare its LAS with LAS (universal DEPREL)" not in out
    assert "its UAS and LAS are those of the CoNLL 2018 table here" in out
    assert main([gold, pred]) == 0  # with punctuation: once, in the attachment table
    rows = [(line[:24].strip(), line[24:].split()) for line in capsys.readouterr().out.splitlines()]
    assert [cells for name, cells in rows if name in ("UAS", "LAS")] == [["83.33"]]


def test_a_tree_breaking_the_root_label_rule_is_malformed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    on_root = PRED.replace("\t0\troot\t_\tSpaceAfter", "\t0\tpunct\t_\tSpaceAfter")
    elsewhere = PRED.replace("\t2\tnmod\t", "\t2\troot\t")
    for text in (on_root, elsewhere):
        assert text != PRED
        result = _run_json(capsys, gold, _write(tmp_path, "pred.conllu", text))
        assert (result["n_malformed"], result["malformed_rate"]) == (1, 50.0)
    assert main([gold, _write(tmp_path, "pred.conllu", on_root)]) == 0
    assert "word labelled root (UD's rule" in capsys.readouterr().out


def test_prediction_from_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    stdin = io.TextIOWrapper(io.BytesIO(PRED.encode()), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    result = _run_json(capsys, _write(tmp_path, "gold.conllu", GOLD), "-")
    assert result["uas"] == pytest.approx(500 / 6)


def test_invalid_utf8_on_standard_input_is_refused(tmp_path: Path) -> None:
    # Standard input was read as text with surrogateescape: bytes that are no UTF-8 passed.
    gold = _write(tmp_path, "gold.conllu", GOLD)
    bad = PRED.replace("\tcat\t", "\tc\udcffat\t", 1).encode("utf-8", "surrogateescape")
    command = [sys.executable, "-m", "biaffine.evaluate", gold, "-"]
    done = subprocess.run(command, input=bad, capture_output=True, cwd=REPO_ROOT, check=False)
    assert done.returncode == 2
    assert done.stdout == b""
    err = done.stderr.decode()
    assert err.count("\n") == 1
    assert err.startswith("error: <stdin>:")
    assert "not valid UTF-8" in err


def test_a_reader_closing_the_pipe_early_ends_it_quietly(tmp_path: Path) -> None:
    # evaluate ... | head -3 ended in a BrokenPipeError traceback, exit status 1.
    gold = _write(tmp_path, "gold.conllu", GOLD)
    command = [sys.executable, "-m", "biaffine.evaluate", gold, gold]
    read, write = os.pipe()
    os.close(read)  # the reader is gone before anything is written
    try:
        done = subprocess.run(
            command, stdout=write, stderr=subprocess.PIPE, cwd=REPO_ROOT, check=False
        )
    finally:
        os.close(write)
    assert done.stderr == b""
    assert done.returncode == 141


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_scores_that_cannot_be_written_are_one_line_and_status_2(tmp_path: Path) -> None:
    # evaluate ... > /dev/full (a full disk) ended in an OSError traceback, exit status 1.
    gold = _write(tmp_path, "gold.conllu", GOLD)
    for options in ([], ["--json"]):
        command = [sys.executable, "-m", "biaffine.evaluate", gold, gold, *options]
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                command, stdout=full, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT
            )
        assert (done.returncode, done.stderr) == (
            2,
            "error: standard output: No space left on device\n",
        )


def _expect_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "Traceback" not in captured.err
    return captured.err


def test_missing_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    missing = str(tmp_path / "missing.conllu")
    assert missing in _expect_error(capsys, gold, missing)
    assert missing in _expect_error(capsys, missing, gold)


# A prediction may tokenize differently (it is aligned, see test_aligned_eval.py), but its text
# without whitespace must be the gold text: these predictions change it and are refused.


def test_fewer_predicted_sentences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.split("\n\n")[0] + "\n\n")
    err = _expect_error(capsys, gold, pred)
    assert f"{pred}:6: the predicted text ends before character 13 " in err  # after "barks."
    assert f"gold text goes on at {gold}:9 with 'Mycat'" in err


def test_word_count_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    short = PRED.replace("1\tMy\tmy\tPRON\t_\t_\t2\tnmod\t_\t_\n2\tcat", "1\tcat")
    pred = _write(tmp_path, "pred.conllu", short)
    err = _expect_error(capsys, gold, pred)
    assert f"{pred}:9: the predicted text differs from the gold text at character 13 " in err
    assert f"'cat' against 'Mycat' at {gold}:9" in err


def test_form_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\tcat\tcat", "\tdog\tdog"))
    err = _expect_error(capsys, gold, pred)
    assert f"{pred}:10: the predicted text differs from the gold text at character 15 " in err
    assert f"'dog' against 'cat' at {gold}:10" in err


def test_malformed_conllu_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("1\tMy\tmy\tPRON", "1\tMy\tmy"))
    assert pred in _expect_error(capsys, gold, pred)


def test_unparsed_prediction_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\t0\troot\t", "\t_\troot\t"))
    message = f"{pred}:5: sentence 1: word 3 of the predicted sentence has no HEAD ('_')"
    assert message in _expect_error(capsys, gold, pred)


@pytest.mark.parametrize(
    ("change", "tokenized"),
    [
        (("2\tcat\tcat\tNOUN\t_\t_\t0", "2\tcat\tcat\tNOUN\t_\t_\t1"), "alike"),
        (("1\tMy\tmy\tPRON\t_\t_\t2", "1\tMy\tmy\tPRON\t_\t_\t0"), "alike"),
        (("2\tcat\tcat\tNOUN\t_\t_\t0", "2\tcat\tcat\tNOUN\t_\t_\t1"), "apart"),
    ],
    ids=["cycle", "two-roots", "cycle-raw-text"],
)
def test_a_gold_sentence_that_is_no_tree_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: tuple[str, str], tokenized: str
) -> None:
    # Scored as any other (a cycle gave UAS 50), where the shared task's scorer refuses it.
    gold = _write(tmp_path, "gold.conllu", GOLD.replace(*change))
    pred = (
        PRED
        if tokenized == "alike"
        else PRED.replace("1\tMy\tmy", "1\tM\tm").replace("2\tcat\tcat", "2\tycat\tycat")
    )
    err = _expect_error(capsys, gold, _write(tmp_path, "pred.conllu", pred))
    assert f"{gold}:8: sentence 2: the gold heads are not a tree with one word on ROOT" in err


def test_module_entry_point_reports_misalignment_without_traceback(tmp_path: Path) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\tcat\tcat", "\tdog\tdog"))
    done = _run_module(gold, pred)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "the predicted text differs from the gold text" in done.stderr


def _run_module(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "biaffine.evaluate", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)


# Real UD data: corrupt a dev file deterministically and recount with plain string splitting.

DEV_FILES = ["UD_Lithuanian-HSE/lt_hse-ud-dev.conllu", "UD_Tamil-TTB/ta_ttb-ud-dev.conllu"]


def _word_columns(path: Path) -> list[list[list[str]]]:
    sentences: list[list[list[str]]] = [[]]
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if sentences[-1]:
                sentences.append([])
        elif not line.startswith("#") and line.split("\t", 1)[0].isdigit():
            sentences[-1].append(line.split("\t"))
    return [words for words in sentences if words]


def _corrupt(text: str, seed: int) -> str:
    rng = random.Random(seed)
    blocks = text.split("\n\n")
    return "\n\n".join(_corrupt_block(block, rng) for block in blocks)


def _corrupt_block(block: str, rng: random.Random) -> str:
    lines = block.split("\n")
    n = sum(1 for line in lines if line.split("\t", 1)[0].isdigit())
    if rng.random() < 0.3:  # leave some sentences intact so exact match is not always 0
        return block
    for i, line in enumerate(lines):
        cols = line.split("\t")
        if not cols[0].isdigit():
            continue
        if rng.random() < 0.15:
            cols[6] = str(rng.randint(0, n))  # may add roots, cycles or self loops
        roll = rng.random()
        if roll < 0.1:
            cols[7] = cols[7].split(":")[0] + ":xx"  # wrong subtype, right universal relation
        elif roll < 0.2:
            cols[7] = rng.choice(["nmod", "obl", "punct", "nsubj", "advmod"])
        lines[i] = "\t".join(cols)
    return "\n".join(lines)


def _is_tree(heads: list[int]) -> bool:
    if heads.count(0) != 1:
        return False
    for start in range(1, len(heads) + 1):
        node = start
        for _ in range(len(heads)):
            if node == 0:
                break
            node = heads[node - 1]
        if node != 0:
            return False
    return True


def _recount(gold_path: Path, pred_path: Path, *, exclude_punct: bool) -> dict[str, float]:
    gold, pred = _word_columns(gold_path), _word_columns(pred_path)
    c: Counter[str] = Counter()
    for g_words, p_words in zip(gold, pred, strict=True):
        pairs = list(zip(g_words, p_words, strict=True))
        scored = [(g, p) for g, p in pairs if not (exclude_punct and g[3] == "PUNCT")]
        heads = [g[6] == p[6] for g, p in scored]
        labels = [g[6] == p[6] and g[7] == p[7] for g, p in scored]
        c["words"] += len(scored)
        c["uas"] += sum(heads)
        c["las"] += sum(labels)
        c["univ"] += sum(
            g[6] == p[6] and g[7].split(":")[0] == p[7].split(":")[0] for g, p in scored
        )
        c["uem"] += all(heads)
        c["lem"] += all(labels)
        c["roots"] += sum(g[6] == "0" for g, _ in pairs)
        c["root_ok"] += sum(g[6] == "0" and p[6] == "0" for g, p in pairs)
        rule = all((p[6] == "0") == (p[7].split(":")[0] == "root") for p in p_words)
        c["bad"] += not (_is_tree([int(p[6]) for p in p_words]) and rule)
    sentences = len(gold)
    return {
        "n_sentences": sentences,
        "n_words": c["words"],
        "uas": 100 * c["uas"] / c["words"],
        "las": 100 * c["las"] / c["words"],
        "las_universal": 100 * c["univ"] / c["words"],
        "uem": 100 * c["uem"] / sentences,
        "lem": 100 * c["lem"] / sentences,
        "root_accuracy": 100 * c["root_ok"] / c["roots"],
        "malformed_rate": 100 * c["bad"] / sentences,
    }


@pytest.mark.ud
@pytest.mark.parametrize("dev_file", DEV_FILES)
@pytest.mark.parametrize("exclude_punct", [False, True])
def test_cli_matches_an_independent_recount_on_real_data(
    ud_root: Path, tmp_path: Path, dev_file: str, exclude_punct: bool
) -> None:
    gold = ud_root / dev_file
    if not gold.is_file():
        pytest.skip(f"{gold} not found")
    pred = tmp_path / "pred.conllu"
    pred.write_text(_corrupt(gold.read_text(encoding="utf-8"), seed=13), encoding="utf-8")
    switch = ["--exclude-punct"] if exclude_punct else []
    done = _run_module(str(gold), str(pred), "--json", *switch)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    expected = _recount(gold, pred, exclude_punct=exclude_punct)
    assert {key: result[key] for key in expected} == pytest.approx(expected)
    # The corruption exercises every metric: nothing is trivially 0 or 100.
    assert 0 < result["malformed_rate"] < 100
    assert 0 < result["uem"] < 100
    assert result["las"] < result["las_universal"] < result["uas"] < 100


@pytest.mark.ud
@pytest.mark.parametrize("dev_file", DEV_FILES)
def test_gold_against_itself_scores_100(
    ud_root: Path, capsys: pytest.CaptureFixture[str], dev_file: str
) -> None:
    gold = ud_root / dev_file
    if not gold.is_file():
        pytest.skip(f"{gold} not found")
    result = _run_json(capsys, str(gold), str(gold))
    assert result["n_sentences"] == len(_word_columns(gold))
    for name in ("uas", "las", "las_universal", "uem", "lem", "root_accuracy"):
        assert result[name] == 100.0, name
    assert result["malformed_rate"] == 0.0
    assert result["n_malformed"] == 0


# The CoNLL 2018 scores: the corrupted trees above, tags, features and lemmas corrupted too,
# recounted here word by word from the column text with the scorer's sets written out again.

CONTENT = {
    *("nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl"),
    *("dislocated", "advcl", "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod"),
    *("conj", "fixed", "flat", "compound", "list", "parataxis", "orphan", "goeswith"),
    *("reparandum", "root", "dep"),
}
FUNCTIONAL = {"aux", "cop", "mark", "det", "clf", "case", "cc"}
UNIVERSAL = {
    *("PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy"),
    *("Number", "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice"),
    *("Evident", "Polarity", "Person", "Polite"),
}


def _corrupt_tags(text: str, seed: int) -> str:
    rng = random.Random(seed)
    lines = text.split("\n")
    for i, line in enumerate(lines):
        cols = line.split("\t")
        if not cols[0].isdigit():
            continue
        roll = rng.random()
        if roll < 0.05:
            cols[3] = rng.choice(["NOUN", "VERB", "ADP", "DET"])
        elif roll < 0.1:
            cols[4] = cols[4] + "x"
        elif roll < 0.15:
            cols[5] = "|".join(reversed(cols[5].split("|")))  # same features: still right
        elif roll < 0.2:
            cols[5] = "Typo=Yes" if cols[5] == "_" else "_"  # Typo is not universal
        elif roll < 0.25:
            cols[2] = cols[2].upper() + "x"
        elif roll < 0.3:
            cols[7] = rng.choice(["det", "case", "aux", "cc"])  # becomes a functional child
        lines[i] = "\t".join(cols)
    return "\n".join(lines)


def _feats(value: str) -> str:
    return "|".join(sorted(f for f in value.split("|") if f.split("=")[0] in UNIVERSAL))


def _conll18_recount(gold_path: Path, pred_path: Path) -> dict[str, tuple[int, int, int]]:
    counts: Counter[str] = Counter()
    for g_words, p_words in zip(_word_columns(gold_path), _word_columns(pred_path), strict=True):
        g_kids, p_kids = _kids(g_words), _kids(p_words)
        for i, (g, p) in enumerate(zip(g_words, p_words, strict=True), start=1):
            lemma_ok = g[2] == "_" or g[2] == p[2]
            tags_ok = {"UPOS": g[3] == p[3], "XPOS": g[4] == p[4]}
            tags_ok["UFeats"] = _feats(g[5]) == _feats(p[5])
            counts.update(name for name, ok in tags_ok.items() if ok)
            counts["AllTags"] += all(tags_ok.values())
            counts["Lemmas"] += lemma_ok
            g_rel, p_rel = g[7].split(":")[0], p[7].split(":")[0]
            counts["gold content"] += g_rel in CONTENT
            counts["system content"] += p_rel in CONTENT
            if g_rel not in CONTENT or g[6] != p[6] or g_rel != p_rel:
                continue
            counts["CLAS"] += 1
            counts["BLEX"] += lemma_ok
            same_kids = g_kids.get(i, []) == p_kids.get(i, [])
            counts["MLAS"] += tags_ok["UPOS"] and tags_ok["UFeats"] and same_kids
    n = counts["words"] = sum(len(words) for words in _word_columns(gold_path))
    content = (counts["gold content"], counts["system content"])
    return {
        name: (
            counts[name],
            *((n, n) if name in tags_ok or name in ("AllTags", "Lemmas") else content),
        )
        for name in ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "CLAS", "MLAS", "BLEX")
    }


def _kids(words: list[list[str]]) -> dict[int, list[tuple]]:
    kids: dict[int, list[tuple]] = {}
    for i, w in enumerate(words, start=1):
        if w[7].split(":")[0] in FUNCTIONAL and w[6] != "0":
            kids.setdefault(int(w[6]), []).append((i, w[7].split(":")[0], w[3], _feats(w[5])))
    return kids


@pytest.mark.ud
@pytest.mark.parametrize("dev_file", DEV_FILES)
def test_conll18_scores_match_an_independent_recount_on_real_data(
    ud_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], dev_file: str
) -> None:
    gold = ud_root / dev_file
    if not gold.is_file():
        pytest.skip(f"{gold} not found")
    pred = tmp_path / "pred.conllu"
    corrupted = _corrupt_tags(_corrupt(gold.read_text(encoding="utf-8"), seed=13), seed=7)
    pred.write_text(corrupted, encoding="utf-8")
    scores = _run_json(capsys, str(gold), str(pred))["conll18"]["scores"]
    found = {name: (s["correct"], s["gold"], s["system"]) for name, s in scores.items()}
    assert found == _conll18_recount(gold, pred)
    # Every score is exercised: none trivially 0 or 100, and precision differs from recall.
    assert all(0 < s["f1"] < 100 for s in scores.values())
    assert scores["CLAS"]["precision"] != scores["CLAS"]["recall"]
    assert scores["MLAS"]["f1"] < scores["CLAS"]["f1"]


def test_conll18_scores_of_the_small_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Content words: dog (nsubj, predicted obj: wrong), barks, My (nmod:poss vs nmod: right
    # after subtypes go), cat. Every tag is copied, so the tag scores are 100.
    gold, pred = _write(tmp_path, "gold.conllu", GOLD), _write(tmp_path, "pred.conllu", PRED)
    result = _run_json(capsys, gold, pred)["conll18"]
    for name in ("CLAS", "MLAS", "BLEX"):
        assert result["scores"][name] == {
            "correct": 3,
            "gold": 4,
            "system": 4,
            "precision": 75.0,
            "recall": 75.0,
            "f1": 75.0,
        }
    assert result["scores"]["UPOS"]["f1"] == 100.0
    assert result["annotated_gold_columns"] == ["lemmas", "upos"]
    assert main([gold, pred]) == 0
    out = capsys.readouterr().out
    assert "CLAS                       75.00   75.00   75.00" in out
    assert "the gold file leaves XPOS, FEATS empty ('_')" in out


@pytest.mark.parametrize(
    ("exclude_punct", "named"),
    [(False, "as the CoNLL 2018 scorer"), (True, "punctuation excluded")],
)
def test_predict_eval_names_its_universal_las_for_what_it_counts(
    graph_checkpoint: Path,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    exclude_punct: bool,
    named: str,
) -> None:
    # Without punctuation the figure was still called the CoNLL 2018 scorer's LAS.
    gold = REPO_ROOT / "tests" / "data" / "tiny.conllu"
    with caplog.at_level("INFO", logger="biaffine.predicting"):
        result = predict(
            graph_checkpoint,
            gold,
            tmp_path / "out.conllu",
            evaluate=True,
            exclude_punct=exclude_punct,
        )
    assert f"LAS {result.scores.las_universal:.2f} (universal DEPREL, {named})" in caplog.text


def test_predict_eval_logs_the_conll18_scores_of_what_it_wrote(
    graph_checkpoint: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # predict's eval=true line and the evaluator agree on the file predict wrote.
    gold = REPO_ROOT / "tests" / "data" / "tiny.conllu"
    out = tmp_path / "out.conllu"
    with caplog.at_level("INFO", logger="biaffine.predicting"):
        result = predict(graph_checkpoint, gold, out, evaluate=True, chunk_sentences=3)
    expected = evaluate_files(str(gold), str(out))
    assert (result.scores, result.conll18) == (expected.attachment, expected.words)
    # The tags and lemmas it wrote are the input's: scored, they were 100.00, as if predicted.
    tagged = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "MLAS", "BLEX")
    reported = expected.words.reported().items()
    figures = ", ".join(f"{k} {v.f1:.2f}" for k, v in reported if k not in tagged)
    assert f"CoNLL 2018 F1: {figures}\n" in caplog.text
    assert f"not scored: {', '.join(tagged)} (the output keeps the input's" in caplog.text
    assert figures.startswith("CLAS ")  # UAS and LAS: the line before, of every word


@pytest.mark.parametrize(
    ("columns", "overwrite", "scored"),
    [
        (None, False, ["CLAS"]),
        (("upos",), False, ["CLAS"]),  # filled only where the input has "_": the input's
        (("upos",), True, ["UPOS", "CLAS"]),
        (("upos", "feats"), True, ["UPOS", "UFeats", "CLAS", "MLAS"]),
        (("all",), True, ["UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "CLAS", "MLAS", "BLEX"]),
    ],
)
def test_predict_eval_scores_the_columns_it_predicted_over_the_input(
    columns, overwrite: bool, scored: list[str]
) -> None:
    model = types.SimpleNamespace(tagged_columns=("upos", "xpos", "feats", "lemma"))
    options = PredictOptions(columns=columns, overwrite_columns=overwrite)
    predicted = predicting._scored_columns(options, model)
    metrics = ("UPOS", "XPOS", "UFeats", "AllTags", "Lemmas", "CLAS", "MLAS", "BLEX")
    assert [m for m in metrics if predicting._predicts(m, predicted)] == scored
