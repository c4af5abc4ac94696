"""The evaluator against the CoNLL 2018 shared task's definitions, on hand-made file pairs.

Each case is one where ``python -m biaffine.evaluate`` once disagreed with the shared task's
scorer (``conll18_ud_eval.py`` 1.2), or deliberately differs from it. The expected counts are
worked out by hand in the comments; F1 = 2 * correct / (gold + system).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biaffine.alignment import evaluate_end_to_end
from biaffine.data.conllu import read_conllu
from biaffine.evaluate import main
from biaffine.metrics import Score


def _word(n: int, form: str, head: int, deprel: str) -> str:
    """One word line: lemma the form, UPOS X, no XPOS or features."""
    return "\t".join((str(n), form, form, "X", "_", "_", str(head), deprel, "_", "_"))


def _range(low: int, high: int, form: str) -> str:
    return "\t".join((f"{low}-{high}", form, *["_"] * 8))


def _write(path: Path, *lines: str) -> Path:
    """One sentence of ``lines`` as a CoNLL-U file."""
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("separator", ["\u2028", "\u0085", "\u000c"])
def test_only_space_characters_leave_the_text(tmp_path: Path, separator: str) -> None:
    # The scorer removes Unicode category Zs from FORMs, nothing else. U+2028 (LINE
    # SEPARATOR, Zl), U+0085 (NEXT LINE, Cc) and U+000C (FORM FEED, Cc) are whitespace to
    # str.isspace but not Zs: they stay in the text "a?b" (3 characters). Gold tokens "a?" and
    # "b" are spans (0, 2) and (2, 3); system tokens "a" and "?b" are (0, 1) and (1, 3): no
    # span is shared, so no token or word is found and nothing is aligned to score.
    # (Removing the character too would make both sides "a" "b" and count 2 of 2.)
    gold = _write(
        tmp_path / "gold.conllu", _word(1, f"a{separator}", 0, "root"), _word(2, "b", 1, "obj")
    )
    system = _write(
        tmp_path / "sys.conllu", _word(1, "a", 0, "root"), _word(2, f"{separator}b", 1, "obj")
    )
    scores = evaluate_end_to_end(read_conllu(gold), read_conllu(system)).scores
    assert scores["Tokens"] == scores["Words"] == Score(0, 2, 2)
    assert scores["UAS"] == scores["LAS"] == scores["UPOS"] == Score(0, 2, 2)


def test_a_no_break_space_still_leaves_the_text(tmp_path: Path) -> None:
    # U+00A0 is Zs: removed, as the scorer removes it. Text "ab"; gold "a<nbsp>" "b" and
    # system "a" "<nbsp>b" are both (0, 1) (1, 2): 2 of 2 tokens, words, heads.
    gold = _write(tmp_path / "gold.conllu", _word(1, "a\u00a0", 0, "root"), _word(2, "b", 1, "obj"))
    system = _write(
        tmp_path / "sys.conllu", _word(1, "a", 0, "root"), _word(2, "\u00a0b", 1, "obj")
    )
    scores = evaluate_end_to_end(read_conllu(gold), read_conllu(system)).scores
    assert scores["Tokens"] == scores["Words"] == scores["LAS"] == Score(2, 2, 2)


def test_same_forms_that_do_not_align_are_not_scored_as_gold_tokenization(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Gold: plain words "a b" (a word with a space, as in Vietnamese) and "c". System: the same
    # two FORMs as one multiword token "a bc". The FORMs agree word by word, yet the scorer
    # compares a plain word without its spaces ("ab") and a multiword token's word with them
    # ("a b"): in the region (0, 3) the longest common subsequence of ["ab", "c"] and
    # ["a b", "c"] is "c" alone. Text "abc":
    #   Tokens: gold (0, 2) (2, 3), system (0, 3): 0 of 2 gold, 1 system.
    #   Words: c only: 1 of 2 and 2 -> F1 50.
    #   UAS: c's HEAD is word 1 on both sides, but the system's word 1 aligns to nothing: 0.
    #   UPOS: c's X = X: 1 (F1 50). CLAS: "a b" (root) and c (obj) are content words on both
    #   sides, c's head is wrong: 0 of 2 and 2.
    # Pairing words by position (the gold-token path) would give 2 of 2 everywhere, so the
    # scores are the aligned ones only.
    gold = _write(tmp_path / "gold.conllu", _word(1, "a b", 0, "root"), _word(2, "c", 1, "obj"))
    system = _write(
        tmp_path / "sys.conllu",
        _range(1, 2, "a bc"),
        _word(1, "a b", 0, "root"),
        _word(2, "c", 1, "obj"),
    )
    assert main([str(gold), str(system), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tokenization"] == "aligned"
    assert "conll18" not in result
    assert "uas" not in result
    scores = result["end_to_end"]["scores"]

    def counts(name: str) -> tuple[int, int, int]:
        return scores[name]["correct"], scores[name]["gold"], scores[name]["system"]

    assert counts("Tokens") == (0, 2, 1)
    assert counts("Words") == counts("UPOS") == (1, 2, 2)
    assert scores["Words"]["f1"] == 50.0
    assert counts("UAS") == counts("LAS") == counts("CLAS") == (0, 2, 2)


def test_a_system_sentence_with_two_roots_is_scored(tmp_path: Path) -> None:
    # Deliberately unlike the scorer, which refuses such a file ("multiple roots"): a system
    # tree may be malformed. Gold: a on ROOT, b on a (obj). System: both on ROOT, b labelled
    # root. UAS: a right, b wrong: 1 of 2. LAS: a only: 1 of 2. CLAS: a (root) and b (obj)
    # are content words in gold, a and b (root) in the system: 1 of 2 and 2.
    gold = _write(tmp_path / "gold.conllu", _word(1, "a", 0, "root"), _word(2, "b", 1, "obj"))
    system = _write(tmp_path / "sys.conllu", _word(1, "a", 0, "root"), _word(2, "b", 0, "root"))
    scores = evaluate_end_to_end(read_conllu(gold), read_conllu(system)).scores
    assert scores["UAS"] == scores["LAS"] == scores["CLAS"] == Score(1, 2, 2)
    assert scores["Words"] == Score(2, 2, 2)
