"""How torch's OpenMP threads wait for work: set before torch loads its OpenMP runtime.

torch's CPU kernels run on an OpenMP team (GNU libgomp in the Linux wheels, shared with MKL).
Between two parallel regions libgomp's idle threads spin for up to ``GOMP_SPINCOUNT`` iterations
(300,000 when ``OMP_WAIT_POLICY`` is unset) before they sleep, and a region cannot end before its
slowest thread. Parsing calls many short regions (one per LSTM time step and layer), so on
cores that another process also uses the spinning threads take CPU time from the thread that
does the work, and each region waits for a thread the kernel has descheduled. On 2 cores
shared with other jobs (load average 5-9, AMD EPYC), 300 EWT test sentences took 8-28 s to
parse with libgomp's default, 40-52 s with one more busy process on a core, and 1.6-3.5 s
with ``OMP_WAIT_POLICY=PASSIVE`` either way (benchmarks/under_load.py; a 10,000-spin wait
took 5-13 s).

libgomp reads its variables once, when it is loaded (the first ``import torch``), so
:func:`default_wait_policy` runs from ``biaffine/__init__.py``, before any module of the
package imports torch. It sets nothing the user has set: ``OMP_WAIT_POLICY=ACTIVE`` or any
``GOMP_SPINCOUNT`` keeps the user's choice. A program that imports torch before ``biaffine``
keeps libgomp's defaults in its own process (the variable still reaches its children).

numba's own thread pool (its ``omp``, ``tbb`` or ``workqueue`` threading layer) is not involved:
the decoders run their batches on plain Python threads over ``nogil`` kernels
(:func:`decoding.set_num_threads`), and no kernel of the project is ``parallel=True``.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["WAIT_VARIABLES", "default_wait_policy"]

# The variables through which a user chooses how OpenMP threads wait (libgomp reads both).
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def default_wait_policy(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Make OpenMP's idle threads sleep at once (``OMP_WAIT_POLICY=PASSIVE``) unless chosen.

    Args:
        environ: the environment to update (the process's own by default).

    Returns:
        Whether the default was set (False: the user set one of :data:`WAIT_VARIABLES`).
    """
    if any(name in environ for name in WAIT_VARIABLES):
        return False
    environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True
