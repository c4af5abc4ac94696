"""The background compiler: ``python -m tiered`` compiles the entry point pickled on stdin.

Started by :func:`tiered._start`; its output is discarded, so it never depends on a lock to
do its job (:mod:`tiered.lock`).
"""

from __future__ import annotations

import importlib
import pickle
import sys

from tiered.lock import compile_lock


def compile_request(payload: bytes) -> None:
    """Compile the requested entry point into numba's cache, one process of this user at a time.

    Args:
        payload: a pickled ``(module, qualified name, signature)`` (:data:`tiered.Request`).
    """
    with compile_lock():
        module, name, signature = pickle.loads(payload)
        getattr(importlib.import_module(module), name).compile(signature)


if __name__ == "__main__":
    compile_request(sys.stdin.buffer.read())
