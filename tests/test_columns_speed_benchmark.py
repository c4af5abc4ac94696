"""benchmarks/columns_speed.py: its slices and the order of its ways (no timing)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from benchmarks import columns_speed
from biaffine.data.conllu import read_conllu
from biaffine.data.encoding import plan_batches

TINY = Path(__file__).parent / "data" / "tiny.conllu"


@pytest.mark.parametrize("count", [1, 2, 3, 100])
def test_each_slice_is_whole_batches_of_the_whole_text_in_file_order(count: int) -> None:
    text = TINY.read_text(encoding="utf-8")
    everything = [s.forms for s in read_conllu(TINY)]
    lengths = [len(forms) for forms in everything]
    batches = {tuple(b.tolist()) for b in plan_batches(lengths, 12, shuffle=False)}
    assert len(batches) > 2  # else slicing by batches proves nothing here
    pieces = columns_speed.slices(text, count, max_tokens=12)
    assert len(pieces) == min(count, len(batches))
    found = []
    for piece in pieces:
        assert piece.endswith("\n\n")
        forms = [s.forms for s in read_conllu(io.StringIO(piece))]
        rows = [everything.index(f) for f in forms]  # the tiny file's sentences are distinct
        assert rows == sorted(rows)
        planned = plan_batches([lengths[i] for i in rows], 12, shuffle=False)
        assert {tuple(rows[k] for k in b.tolist()) for b in planned} <= batches
        found += rows
    assert sorted(found) == list(range(len(everything)))


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
