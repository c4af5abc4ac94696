"""OpenMP's wait policy: set before torch loads libgomp, unless the user chose one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biaffine.openmp import WAIT_VARIABLES, default_wait_policy

ROOT = Path(__file__).parent.parent.parent

# Records the OpenMP variables as they are when torch is first imported (when libgomp loads and
# reads them), imports the module named in argv[1] and then torch (predict.py imports torch
# only on its torch path, when it parses), then prints the record.
PROBE = """
import importlib, json, os, sys

class Spy:
    seen = None
    def find_spec(self, name, path=None, target=None):
        if name == "torch" and Spy.seen is None:
            Spy.seen = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
        return None

sys.meta_path.insert(0, Spy())
importlib.import_module(sys.argv[1])
import torch
print(json.dumps(Spy.seen))
"""


def _seen_by_torch(module: str, **env: str) -> dict[str, str | None]:
    """The OpenMP variables at torch's first import when a fresh process imports ``module``."""
    environ = {k: v for k, v in os.environ.items() if k not in WAIT_VARIABLES} | env
    done = subprocess.run(
        [sys.executable, "-c", PROBE, module],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["biaffine.api", "biaffine.predicting", "predict", "train"])
def test_torch_loads_with_a_short_spin_when_the_user_chose_nothing(module: str) -> None:
    assert _seen_by_torch(module) == {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": "1000"}


@pytest.mark.parametrize(
    "env",
    [{"OMP_WAIT_POLICY": "ACTIVE"}, {"GOMP_SPINCOUNT": "300000"}, {"OMP_WAIT_POLICY": "passive"}],
)
def test_a_policy_the_user_set_is_kept(env: dict[str, str]) -> None:
    expected = {"OMP_WAIT_POLICY": None, "GOMP_SPINCOUNT": None} | env
    assert _seen_by_torch("biaffine.api", **env) == expected


def test_default_wait_policy_sets_a_short_spin_only_when_nothing_is_set() -> None:
    empty: dict[str, str] = {}
    assert default_wait_policy(empty) is True
    assert empty == {"GOMP_SPINCOUNT": "1000"}
    passive = {"OMP_WAIT_POLICY": "PASSIVE"}
    assert default_wait_policy(passive) is False
    assert passive == {"OMP_WAIT_POLICY": "PASSIVE"}
    spin = {"GOMP_SPINCOUNT": "10k"}
    assert default_wait_policy(spin) is False
    assert spin == {"GOMP_SPINCOUNT": "10k"}
