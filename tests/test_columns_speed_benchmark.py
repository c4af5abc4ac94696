"""benchmarks/columns_speed.py: its slices and the order of its ways, by hand (no timing)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from benchmarks import columns_speed
from biaffine.data.conllu import read_conllu

TINY = Path(__file__).parent / "data" / "tiny.conllu"


@pytest.mark.parametrize("count", [1, 2, 3, 7, 100])
def test_the_slices_hold_every_sentence_once_in_order(count: int) -> None:
    text = TINY.read_text(encoding="utf-8")
    pieces = columns_speed.slices(text, count)
    assert 1 <= len(pieces) <= count
    every = [s.forms for piece in pieces for s in read_conllu(io.StringIO(piece))]
    assert every == [s.forms for s in read_conllu(TINY)]
    assert all(piece.endswith("\n\n") for piece in pieces)


def test_each_slice_parses_both_ways_and_which_goes_first_alternates(monkeypatch) -> None:
    calls: list[tuple[str, bool]] = []

    def seconds(parser, text: str, columns: list[str]) -> float:
        calls.append((text, bool(columns)))
        return 2.0 if columns else 1.0

    monkeypatch.setattr(columns_speed, "seconds", seconds)
    assert columns_speed.round_seconds(None, ["a", "b", "c"], first=1) == (3.0, 6.0)
    assert calls == [
        ("a", True), ("a", False), ("b", False), ("b", True), ("c", True), ("c", False)
    ]  # fmt: skip
