"""Shared test configuration: hypothesis profiles and the real-UD-data fixture."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from hypothesis import settings

# The first call of a numba kernel compiles, which would blow hypothesis' default deadline.
settings.register_profile("default", deadline=None, max_examples=100)
settings.register_profile("ci", deadline=None, max_examples=60)
settings.register_profile("nojit", deadline=None, max_examples=15)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

TESTS_DIR = Path(__file__).parent
DATA_DIR = TESTS_DIR / "data"
# torch is an extra: without it, only the suites of the packages that run without it are read
# (decoding, transitions, rawtext, tiered), not those that import it (biaffine, models, tests/).
if importlib.util.find_spec("torch") is None:
    collect_ignore = [
        path.name
        for path in TESTS_DIR.iterdir()
        if path.name.startswith("test_") or (path.is_dir() and path.name in ("biaffine", "models"))
    ]


@pytest.fixture(scope="session")
def ud_root() -> Path:
    """The folder of real UD treebanks named by ``UD_ROOT``; skips when it is not configured."""
    value = os.environ.get("UD_ROOT")
    if not value:
        pytest.skip("UD_ROOT is not set: point it at a folder of UD_* treebanks to run this test")
    root = Path(value)
    if not root.is_dir():
        pytest.skip(f"UD_ROOT={value} is not a directory")
    return root


@pytest.fixture(scope="session")
def ewt_dir(ud_root: Path) -> Path:
    """The UD_English-EWT folder under ``UD_ROOT``."""
    path = ud_root / "UD_English-EWT"
    if not path.is_dir():
        pytest.skip(f"{path} not found")
    return path
