"""The ahead-of-time build of the batch kernels (decoding.aot) decodes exactly as numba's JIT.

The build is compiled once per session (about 30 s of one core) into the session's numba cache
folder; the JIT kernels are :mod:`decoding._batch`'s. Scores are small integers, so ties are
everywhere and any difference in tie-breaking shows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from decoding import _batch, _codes, aot, status

ROOT = Path(__file__).parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("NUMBA_DISABLE_JIT", "0") != "0",
        reason="numba's ahead-of-time compiler needs the JIT (NUMBA_DISABLE_JIT is set)",
    ),
]

DECODES_WITHOUT_NUMBA = """
import json, sys
import numpy as np
import decoding
compiled = decoding.use_compiled()
scores = np.array(json.loads(sys.argv[1]), dtype=np.float64)
heads = decoding.mst(scores).tolist()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))
print(json.dumps({"compiled": compiled, "heads": heads, "numba": loaded}))
"""


@pytest.fixture(scope="module")
def compiled() -> aot.Compiled:
    """The build of this checkout's sources, compiled if missing."""
    pytest.importorskip("setuptools", reason="numba.pycc builds with setuptools (export extra)")
    aot.ensure()
    built = aot.load()
    assert built is not None
    return built


def batch(seed: int, size: int = 70, width: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """float64[size, width+1, width+1] small-integer scores with -inf holes, and lengths."""
    rng = np.random.default_rng(seed)
    scores = rng.integers(-3, 3, (size, width + 1, width + 1)).astype(np.float64)
    scores[rng.random(scores.shape) < 0.15] = -np.inf
    lengths = rng.integers(1, width + 1, size).astype(np.int64)
    return scores, lengths


def run_blocks(
    run: Callable[..., None], scores: np.ndarray, lengths: np.ndarray, root: bool
) -> tuple[np.ndarray, np.ndarray]:
    """heads int64[B, N+1] and where int64[B, 3] of one blocks entry point on the whole batch."""
    heads = np.full(scores.shape[:2], -1, dtype=np.int64)
    where = np.zeros((scores.shape[0], 3), dtype=np.int64)
    claimed = np.zeros(-(-scores.shape[0] // _codes.BLOCK), dtype=np.bool_)
    run(scores, lengths, root, heads, where, claimed, 0)
    return heads, where


@pytest.mark.parametrize("algorithm", list(_codes.ALGORITHMS))
@pytest.mark.parametrize("root_constraint", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_the_build_decodes_batches_as_the_jit(
    compiled: aot.Compiled, algorithm: int, root_constraint: bool, seed: int
) -> None:
    scores, lengths = batch(seed)
    scores[5, 2, 1] = np.nan  # the checks too: a NaN, a +inf, a word without a head
    scores[9, 3, 0] = np.inf
    scores[11, 1, :] = -np.inf
    lengths[11] = max(lengths[11], 1)
    want = run_blocks(_batch.BLOCKS[algorithm], scores, lengths, root_constraint)
    got = run_blocks(compiled.blocks[algorithm], scores, lengths, root_constraint)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])
    assert (want[1][:, 0] == status.OK).sum() > len(lengths) // 2  # most sentences decoded


@pytest.mark.parametrize("algorithm", list(_codes.ALGORITHMS))
def test_the_build_decodes_one_matrix_as_the_jit(compiled: aot.Compiled, algorithm: int) -> None:
    scores, lengths = batch(7, size=30)
    for matrix, n in zip(scores, lengths, strict=True):
        matrix = np.ascontiguousarray(matrix[: n + 1, : n + 1])
        want, got = np.full(n + 1, -1), np.full(n + 1, -1)
        code = _batch.SINGLE[algorithm](matrix, True, want)
        assert compiled.single[algorithm](matrix, True, got) == tuple(code)
        if code[0] == status.OK:
            np.testing.assert_array_equal(got, want)


def decode_in_a_process(seed: int, env: dict[str, str] | None = None) -> dict:
    """DECODES_WITHOUT_NUMBA's findings on a small batch, and the JIT's heads for it as ``want``."""
    scores, _ = batch(seed, size=4, width=6)
    scores[np.isinf(scores)] = -5.0  # every sentence has a tree
    done = subprocess.run(
        [sys.executable, "-c", DECODES_WITHOUT_NUMBA, json.dumps(scores.tolist())],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    want = run_blocks(_batch.BLOCKS[_codes.MST], scores, np.full(4, 6), True)[0]
    return json.loads(done.stdout) | {"want": want.tolist()}


def test_a_process_that_asks_for_the_build_decodes_without_numba(compiled: aot.Compiled) -> None:
    found = decode_in_a_process(3)
    assert found["compiled"]
    assert found["numba"] == []
    assert found["heads"] == found["want"]


def test_without_a_build_the_jit_decodes_as_before(tmp_path: Path) -> None:
    found = decode_in_a_process(4, {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})  # no build
    assert not found["compiled"]
    assert "numba" in found["numba"]
    assert found["heads"] == found["want"]


def test_a_damaged_build_is_no_build_and_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A truncated file made use_compiled() raise ImportError ("file too short").
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    aot.path().parent.mkdir(parents=True, exist_ok=True)
    aot.path().write_bytes(b"\x7fELF")
    found = decode_in_a_process(5, {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)})
    assert not found["compiled"]
    assert found["heads"] == found["want"]
    monkeypatch.setattr(aot, "build", lambda: tmp_path / "built")
    assert aot.ensure() == tmp_path / "built"


def test_a_changed_source_is_another_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for source in aot.PACKAGE.glob("*.py"):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    monkeypatch.setattr(aot, "PACKAGE", tmp_path)
    before = aot.path()
    kernel = tmp_path / "tarjan.py"
    kernel.write_text(kernel.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    assert aot.path() != before
    assert aot.path().name.endswith(before.name[before.name.index(".") :])
