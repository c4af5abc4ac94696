"""What a fresh environment compiles: every kernel of the MST decoder once, no duplicates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Runs in a fresh process with an empty numba cache, so every kernel is compiled (and its
# signatures recorded) rather than loaded; prints the functions compiled more than once.
PROBE = """
import json, numba, numpy as np
import decoding, decoding.tarjan as tarjan
decoding.mst(np.random.default_rng(0).random((6, 6)))
compiled = {
    name: [str(sig) for sig in f.signatures]
    for name, f in vars(tarjan).items()
    if isinstance(f, numba.core.registry.CPUDispatcher)
}
print(json.dumps({name: sigs for name, sigs in compiled.items() if len(sigs) > 1}))
"""


@pytest.mark.skipif(
    os.environ.get("NUMBA_DISABLE_JIT") == "1", reason="nothing is compiled without the JIT"
)
def test_the_first_mst_call_compiles_each_kernel_once(tmp_path: Path) -> None:
    # A literal constant argument (f(x, 0)) is a numba type of its own: it compiled _tarjan and
    # three helpers a second time, about a third of the first call's 35 s of CPU.
    # In the foreground, as numba does by itself: a fresh process would otherwise run the kernels
    # as plain Python and compile them in another process (tiered).
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "ROOTPARSE_COMPILE": "foreground"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    duplicates = json.loads(result.stdout.strip().splitlines()[-1])
    assert duplicates == {}, duplicates
