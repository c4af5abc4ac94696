"""What the tests of compiled kernels share: when they can run."""

from __future__ import annotations

import os

import pytest

NEEDS_JIT = pytest.mark.skipif(
    os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing is compiled without the JIT"
)
"""Skips a test of compilation where numba's JIT is off (the no-JIT pass of .ci/run)."""

POSIX_WITH_JIT = [
    pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX owners and modes"),
    NEEDS_JIT,
]
"""The marks of the tests of cache and lock folders: their owners and modes are POSIX's."""
