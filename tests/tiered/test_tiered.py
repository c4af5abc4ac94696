"""Tiered compilation: plain Python until the machine code is in numba's cache, same results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from compiled import NEEDS_JIT
from numba.core.dispatcher import Dispatcher

import tiered
from decoding import _batch, _codes
from tiered import Tiered, interpreted

pytestmark = NEEDS_JIT

# Parses with the graph decoders and a transition system, then reports which numba functions
# this process compiled itself (a cache miss) and which entry points run machine code; then, if
# asked, waits for the background compilation and does it all again.
PROBE = """
import json, sys
import numba, numpy as np
import decoding, transitions
import tiered

if sys.argv[2:] != ["budget"]:  # no small call interpreted first: the cache is what is probed
    tiered.prefer_machine_code()
rng = np.random.default_rng(0)
matrix = rng.normal(size=(9, 9))
scores = rng.normal(size=(120, 26, 26))  # enough work for the threaded batch driver
lengths = rng.integers(1, 26, size=120)
system = transitions.get_system("arc_hybrid")

def score(rows, positions):
    return np.cos(positions.sum(axis=1, keepdims=True) * np.arange(1, 4))

def run():
    return {
        "single": decoding.mst(matrix).tolist(),
        "batch": decoding.mst(scores, lengths).tolist(),
        "greedy": transitions.greedy_search(system, lengths[:20], score).heads.tolist(),
    }

def report():
    dispatchers = [
        (f"{module.__name__}.{name}", value)
        for module_name, module in list(sys.modules.items())
        if module_name.split(".")[0] in ("decoding", "transitions")
        for name, value in vars(module).items()
        if isinstance(value, numba.core.dispatcher.Dispatcher)
    ]
    return {
        "compiled_here": sorted(
            name for name, f in dispatchers if sum(f.stats.cache_misses.values())
        ),
        "machine_code": [  # of the entry points called so far
            entry.is_compiled
            for entry in tiered._ENTRIES.values()
            if entry.is_compiled or entry._job is not None
        ],
    }

first = {**run(), **report()}
again = None
if sys.argv[1] == "wait":
    for entry in list(tiered._ENTRIES.values()):
        entry.wait()
    again = {**run(), **report()}
print(json.dumps({"first": first, "again": again}))
"""


def _probe(cache: Path | None, *args: str, **env: str) -> dict:
    """PROBE's report, run on numba cache ``cache`` (None: this process's)."""
    environment = {key: value for key, value in os.environ.items() if key != "ROOTPARSE_COMPILE"}
    if cache is not None:
        environment["NUMBA_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        env={**environment, **env},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_fresh_environment_parses_at_once_and_the_next_process_loads_machine_code(tmp_path):
    cold = _probe(tmp_path / "cold", "wait")
    first, again = cold["first"], cold["again"]
    # Nothing compiled in the process: every entry point ran interpreted...
    assert first["compiled_here"] == []
    assert first["machine_code"]
    assert not any(first["machine_code"])
    # ... while background processes compiled each into the cache, which it then loaded.
    assert again["compiled_here"] == []
    assert all(again["machine_code"])
    warm = _probe(tmp_path / "cold", "no-wait")["first"]
    assert warm["compiled_here"] == []
    assert all(warm["machine_code"])
    # The same trees from plain Python and from machine code (numba's own way: compiled in the
    # calling process, or loaded from this session's cache).
    native = _probe(None, "no-wait", ROOTPARSE_COMPILE="foreground")["first"]
    assert all(native["machine_code"])
    for run in (again, warm, native):
        for key in ("single", "batch", "greedy"):
            assert run[key] == first[key], key


@numba.njit(cache=True)
def _sum_of_squares(values):
    total = 0.0
    for value in values:
        total += value * value
    return total


def _never_in_cache(dispatcher, signature):
    return False


@pytest.fixture(autouse=True)
def spent_budget(monkeypatch):
    """Every call may turn to the machine code, as before small calls ran interpreted first."""
    budget = tiered._Budget()
    budget.close()
    monkeypatch.setattr(tiered, "_BUDGET", budget)
    return budget


def test_calls_are_interpreted_until_the_background_process_ends(monkeypatch):
    # A stand-in for the background process that fails: the calling process compiles after it.
    monkeypatch.setattr(tiered, "_in_cache", _never_in_cache)
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    monkeypatch.setattr(tiered, "_start", lambda request: subprocess.Popen(failing))
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    dispatcher = numba.njit(cache=True)(_sum_of_squares.py_func)
    entry = Tiered(dispatcher)
    values = np.arange(5.0)
    assert entry(values) == 30.0
    assert not entry.is_compiled
    assert dispatcher.signatures == []
    entry.wait()
    assert entry(values) == 30.0
    assert entry.is_compiled
    assert len(dispatcher.signatures) == 1


@pytest.mark.parametrize("cubic", [True, False])
def test_a_cubic_call_too_large_to_interpret_waits_for_the_background_process(monkeypatch, cubic):
    # An Eisner call on 600 words ran interpreted for 67 s, where compiling takes 11 s; mst on
    # 41 sentences of 120 words takes 0.6 s interpreted, and waited 14 s when every kernel did.
    monkeypatch.setattr(tiered, "_in_cache", _never_in_cache)
    slow = [sys.executable, "-c", "import time; time.sleep(0.5)"]
    monkeypatch.setattr(tiered, "_start", lambda request: subprocess.Popen(slow))
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    monkeypatch.setattr(tiered, "LARGE_WORK", 10, raising=False)
    dispatcher = numba.njit(cache=True)(_sum_of_squares.py_func)
    entry = Tiered(dispatcher, work=tiered.cubic_work if cubic else None)
    assert entry(np.arange(5.0)) == 30.0  # 5 elements: interpreted while it compiles
    assert not entry.is_compiled
    assert dispatcher.signatures == []
    assert entry(np.arange(11.0)) == 385.0  # 11: a cubic kernel waits, then runs machine code
    assert entry.is_compiled == cubic
    assert len(dispatcher.signatures) == cubic


def test_a_kernel_has_one_work_at_every_call_site():
    dispatcher = numba.njit(_sum_of_squares.py_func)
    assert tiered.tiered(dispatcher, work=tiered.cubic_work).work is tiered.cubic_work
    with pytest.raises(ValueError, match=r"_sum_of_squares: work=None, made with <function"):
        tiered.tiered(dispatcher)


def test_the_work_of_a_k_best_chart_and_of_the_matrix_tree_theorem_is_eisners_times_more():
    # kbest=2 decoder=eisner on 405 words ran 97 s interpreted, its work counted as Eisner's.
    from decoding import _kbest

    treecrf = pytest.importorskip("biaffine.nn.treecrf", reason="torch's tree-CRF: an extra")

    matrix = np.zeros((406, 406))
    assert tiered.cubic_work((matrix, False, 2)) == 406**3 < tiered.LARGE_WORK
    assert _kbest._chart_work((matrix, 2, False)) == 2 * 406**3 > tiered.LARGE_WORK
    assert treecrf._kernel_work((matrix[None], np.array([405]), True)) > tiered.LARGE_WORK


def test_a_long_sentence_is_too_large_to_interpret_and_a_batch_of_short_ones_is_not():
    # A batch's first axis counts its sentences, not their length: 250 sentences of 40 words
    # run interpreted in 9 s (eisner), where waiting for the compiler takes 11-25 s.
    batch = (np.zeros((250, 41, 41)), np.zeros(250, dtype=np.int64), np.zeros((250, 41)))
    assert tiered.cubic_work(batch) < tiered.LARGE_WORK
    assert tiered.cubic_work((np.zeros((601, 601)), np.zeros(601))) > tiered.LARGE_WORK


def test_no_background_process_or_the_foreground_setting_compiles_at_once(monkeypatch):
    monkeypatch.setattr(tiered, "_in_cache", _never_in_cache)
    monkeypatch.setattr(tiered, "_start", lambda request: None)  # no process could start
    dispatcher = numba.njit(cache=True)(_sum_of_squares.py_func)
    entry = Tiered(dispatcher)
    assert entry(np.ones(3)) == 3.0
    assert entry.is_compiled
    assert len(dispatcher.signatures) == 1

    def refuse(request):
        raise AssertionError("no background process in the foreground setting")

    monkeypatch.setattr(tiered, "_start", refuse)
    monkeypatch.setenv("ROOTPARSE_COMPILE", "foreground")
    dispatcher = numba.njit(cache=True)(_sum_of_squares.py_func)
    entry = Tiered(dispatcher)
    assert entry(np.ones(4)) == 4.0
    assert entry.is_compiled
    assert len(dispatcher.signatures) == 1


def test_a_dispatcher_has_one_entry_point_and_plain_functions_stay_plain():
    assert tiered.tiered(_sum_of_squares) is tiered.tiered(_sum_of_squares)
    assert tiered.tiered(_sum_of_squares.py_func) is _sum_of_squares.py_func
    assert _batch.SINGLE[_codes.MST] is tiered.tiered(_batch._mst_single)


def _python_twins():
    """Every twin that the tiered entry points of decoding and transitions build."""
    import transitions  # noqa: F401 (registers nothing; loads the modules scanned below)

    modules = [
        module
        for name, module in list(sys.modules.items())
        if name.split(".")[0] in ("decoding", "transitions")
    ]
    dispatchers = {
        id(value): value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, Dispatcher)
    }
    twins: dict = {}
    for dispatcher in dispatchers.values():
        interpreted(dispatcher, twins)
    return twins


def test_twins_call_only_twins():
    twins = _python_twins()
    assert len(twins) > 50
    for twin in twins.values():
        for name in tiered._names(twin.__code__):
            assert not isinstance(twin.__globals__.get(name), Dispatcher), (twin, name)


def test_a_twin_gives_what_the_machine_code_gives():
    rng = np.random.default_rng(3)
    for algorithm in tuple(_codes.ALGORITHMS):
        entry = _batch.SINGLE[algorithm]
        python = interpreted(entry.dispatcher, {})
        for n in (1, 2, 7, 30):
            matrix = rng.normal(size=(n + 1, n + 1))
            machine, plain = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
            assert entry.dispatcher(matrix, True, machine) == python(matrix, True, plain)
            np.testing.assert_array_equal(machine, plain)


def test_small_calls_run_interpreted_until_the_process_has_spent_its_budget(monkeypatch):
    looked_up = []
    monkeypatch.setattr(tiered, "_in_cache", lambda d, signature: looked_up.append(signature) or 1)
    monkeypatch.setattr(tiered, "_BUDGET", tiered._Budget())
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    dispatcher = numba.njit(cache=True)(_sum_of_squares.py_func)
    entry = Tiered(dispatcher)
    small = np.arange(5.0)
    assert entry(small) == 30.0
    assert entry(small) == 30.0
    assert (looked_up, entry.is_compiled, dispatcher.signatures) == ([], False, [])
    tiered._BUDGET.spend(tiered.INTERPRETED_SECONDS)  # as many small calls would
    assert entry(small) == 30.0
    assert len(looked_up) == 1
    assert entry.is_compiled
    assert len(dispatcher.signatures) == 1


def test_a_large_call_or_a_server_turns_to_the_machine_code_at_once(monkeypatch):
    monkeypatch.setattr(tiered, "_in_cache", lambda dispatcher, signature: True)
    monkeypatch.setattr(tiered, "_BUDGET", tiered._Budget())
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    large = np.ones(tiered.SMALL_CALL + 1)
    entry = Tiered(numba.njit(cache=True)(_sum_of_squares.py_func))
    assert entry(large) == float(large.size)
    assert entry.is_compiled
    entry = Tiered(numba.njit(cache=True)(_sum_of_squares.py_func))
    assert entry(large[:-1]) == float(large.size - 1)  # the largest small call
    assert not entry.is_compiled
    tiered.prefer_machine_code()
    assert entry(np.ones(2)) == 2.0
    assert entry.is_compiled


@pytest.mark.slow
def test_a_short_input_never_loads_the_machine_code_a_warm_cache_holds(tmp_path):
    cache = tmp_path / "cache"
    _probe(cache, "wait")  # fills the cache
    short = PROBE.replace('"batch": decoding.mst(scores, lengths).tolist(),', "")
    short = short.replace("lengths[:20]", "lengths[:1]")
    environment = {key: value for key, value in os.environ.items() if key != "ROOTPARSE_COMPILE"}
    done = subprocess.run(
        [sys.executable, "-c", short, "no-wait", "budget"],
        env={**environment, "NUMBA_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first = json.loads(done.stdout.strip().splitlines()[-1])["first"]
    assert first["machine_code"] == []  # no entry point loaded, none waits for a compiler
    assert first["compiled_here"] == []
    warm = _probe(cache, "no-wait")["first"]
    assert first["single"] == warm["single"]
    [tree] = first["greedy"]  # padded to its own length, the batch's to its longest
    assert tree == warm["greedy"][0][: len(tree)]


def _inf_minus_inf(value):
    return value - value


def test_an_interpreted_call_warns_of_no_float_exception_as_machine_code_does(monkeypatch):
    # tree_score of +inf and -inf arcs printed numpy's RuntimeWarning interpreted, an exception
    # under -W error, where the machine code gives its NaN in silence.
    import warnings

    monkeypatch.setattr(tiered, "_BUDGET", tiered._Budget())
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    entry = Tiered(numba.njit(cache=True)(_inf_minus_inf))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(entry(np.float64(np.inf)))
    assert not entry.is_compiled


_CALLEE = "import numba\n\n\n@numba.njit(cache=True)\ndef value():\n    return {}\n"
_ENTRY = (
    "import numba\nfrom kernels.callee import value\n\n\n"
    "@numba.njit(cache=True)\ndef entry(x):\n    return value() + x\n"
)


def test_an_edit_of_a_kernel_that_a_cached_kernel_calls_is_compiled_again(tmp_path: Path) -> None:
    # numba keys a cache on the entry's own file: an edit of decoding/tarjan.py alone left
    # decoding.mst running the old Tarjan from _batch.py's cache (a git pull into an install).
    package = tmp_path / "kernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "entry.py").write_text(_ENTRY)
    script = "import tiered\nfrom kernels.entry import entry\nprint(tiered.tiered(entry)(0))"
    root = Path(tiered.__file__).parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root)]),
        "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
        "ROOTPARSE_COMPILE": "foreground",
    }
    found = []
    for value in ("1", "1", "22"):
        (package / "callee.py").write_text(_CALLEE.format(value))
        run = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True
        )
        found.append(run.stdout.strip() or run.stderr)
    assert found == ["1", "1", "22"]
    assert any((tmp_path / "cache").rglob("*.nbc"))  # compiled into the cache, read from it
