"""experiments/feats_coverage.py: the two ceilings, on a treebank made by hand."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).parent.parent / "experiments" / "feats_coverage.py"
SPEC = importlib.util.spec_from_file_location("feats_coverage", SCRIPT)
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)
row = study.row


def words(feats: list[str]) -> str:
    lines = [f"{i}\tw{i}\t_\tX\t_\t{f}\t0\troot\t_\t_" for i, f in enumerate(feats, 1)]
    return "\n".join(lines) + "\n\n"


def test_a_new_combination_of_seen_pairs_is_within_reach_of_per_feature_only(tmp_path) -> None:
    folder = tmp_path / "UD_Test-Hand"
    folder.mkdir()
    (folder / "t-ud-train.conllu").write_text(words(["A=1", "B=2", "_"]))
    # Test words: seen whole string, a new combination of seen pairs, an unseen pair, none.
    (folder / "t-ud-test.conllu").write_text(words(["A=1", "A=1|B=2", "C=3", "_"]))
    # Whole-tag: A=1 and _ seen -> 2 of 4; per feature: all but C=3 -> 3 of 4.
    assert row(folder) == "| Test-Hand | 3 | 4 | 50.00 | 75.00 |"


def test_a_folder_without_a_test_file_has_no_row(tmp_path) -> None:
    (tmp_path / "t-ud-train.conllu").write_text(words(["_"]))
    assert row(tmp_path) is None
