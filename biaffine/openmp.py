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

Sleeping at once has its own price: each region then wakes its threads, which on a virtual
machine's idle cores takes long enough that ``en_ewt`` parsed a 7-word sentence in 25-29 ms
where 1,000 spins first (a few tens of microseconds) gave 14 ms. So :func:`default_wait_policy`
sets ``GOMP_SPINCOUNT=1000``. On the 2-core AMD EPYC, against sleeping at once: idle, a
26-word sentence 21-22 ms against 55-65 ms and a third of EWT test 2.29-2.48 s against
2.64-3.04 s; beside one busy core, 36 against 23-24 ms (7 words) and 4.83 against 4.54-4.63 s;
beside two, 56 against 66 ms and 7.98 against 7.86 s. 10,000 spins lost more beside one busy
core (100 ms, 7.60 s). The runs: docs/parsing.md ("OpenMP's idle threads").

libgomp reads its variables once, when it is loaded (the first ``import torch``), so
:func:`default_wait_policy` runs from ``biaffine/__init__.py``, before any module of the
package imports torch. It sets nothing the user has set: ``OMP_WAIT_POLICY`` (``PASSIVE`` to
never spin, ``ACTIVE``) or any ``GOMP_SPINCOUNT`` keeps the user's choice. A program that
imports torch before ``biaffine`` keeps libgomp's defaults in its own process (the variable
still reaches its children).

numba's own thread pool (its ``omp``, ``tbb`` or ``workqueue`` threading layer) is not involved:
the decoders run their batches on plain Python threads over ``nogil`` kernels
(:func:`decoding.set_num_threads`), and no kernel of the project is ``parallel=True``.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["SPIN_COUNT", "WAIT_VARIABLES", "default_wait_policy"]

SPIN_COUNT = 1000
"""The spins of an idle OpenMP thread before it sleeps (the runs above)."""

# The variables through which a user chooses how OpenMP threads wait (libgomp reads both).
WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def default_wait_policy(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Make OpenMP's idle threads spin briefly, then sleep (``GOMP_SPINCOUNT=1000``), unless chosen.

    Args:
        environ: the environment to update (the process's own by default).

    Returns:
        Whether the default was set (False: the user set one of :data:`WAIT_VARIABLES`).
    """
    if any(name in environ for name in WAIT_VARIABLES):
        return False
    environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
    return True
