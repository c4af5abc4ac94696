"""What the batch kernels, their drivers and the ahead-of-time build agree on.

The kernels (:mod:`decoding._batch`), the drivers that spread a batch over threads
(:mod:`decoding._drive`) and the build of the kernels ahead of time (:mod:`decoding.aot`) all
read these; defined below all three, so that none imports another for them.
"""

from __future__ import annotations

__all__ = ["ALGORITHMS", "BEST_OF_ROOTS", "BLOCK", "EISNER", "GREEDY", "MST", "Where"]

Where = tuple[int, int, int]  # (status, d, h), as a row of ``where``

# Algorithms understood by decoding._batch._decode_one.
MST, EISNER, GREEDY, BEST_OF_ROOTS = 0, 1, 2, 3
ALGORITHMS = {MST: "mst", EISNER: "eisner", GREEDY: "greedy", BEST_OF_ROOTS: "best_of_roots"}
"""Code -> the name of its entry points (``_batch._mst_blocks``, ``aot``'s ``mst_blocks``)."""

# Threads claim blocks of this many consecutive sentences: whole blocks keep two threads from
# writing the same cache line of ``where`` (3 int64 per sentence) over and over, and small ones
# leave little work for one thread alone at the end of a batch.
BLOCK = 16
