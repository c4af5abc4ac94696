"""The ``python -m biaffine.evaluate`` command: output, errors, and a recount on real UD files."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from biaffine.evaluate import main

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

    monkeypatch.setattr(sys, "stdin", io.StringIO(PRED))
    result = _run_json(capsys, _write(tmp_path, "gold.conllu", GOLD), "-")
    assert result["uas"] == pytest.approx(500 / 6)


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


def test_fewer_predicted_sentences(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.split("\n\n")[0] + "\n\n")
    err = _expect_error(capsys, gold, pred)
    assert "sentence 2" in err
    assert "predicted file ends after 1 sentences" in err
    assert f"{pred}:1" in err


def test_word_count_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    short = PRED.replace("1\tMy\tmy\tPRON\t_\t_\t2\tnmod\t_\t_\n2\tcat", "1\tcat")
    pred = _write(tmp_path, "pred.conllu", short)
    err = _expect_error(capsys, gold, pred)
    assert f"{pred}:8: sentence 2: 1 words" in err


def test_form_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\tcat\tcat", "\tdog\tdog"))
    err = _expect_error(capsys, gold, pred)
    assert f"{pred}:8: sentence 2: word 2 has FORM 'dog'" in err


def test_malformed_conllu_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("1\tMy\tmy\tPRON", "1\tMy\tmy"))
    assert pred in _expect_error(capsys, gold, pred)


def test_unparsed_prediction_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\t0\troot\t", "\t_\troot\t"))
    assert "no HEAD annotation" in _expect_error(capsys, gold, pred)


def test_module_entry_point_reports_misalignment_without_traceback(tmp_path: Path) -> None:
    gold = _write(tmp_path, "gold.conllu", GOLD)
    pred = _write(tmp_path, "pred.conllu", PRED.replace("\tcat\tcat", "\tdog\tdog"))
    done = _run_module(gold, pred)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "FORM" in done.stderr


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
