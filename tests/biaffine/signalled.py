"""Children of a test that a signal stops, whatever the suite itself was started to ignore."""

from __future__ import annotations

import signal


def default_signals() -> None:
    """``preexec_fn``: SIGINT and SIGHUP as a terminal's shell would leave them.

    A suite started in the background (``cmd &`` ignores SIGINT, ``nohup`` SIGHUP) passes those
    dispositions on to every process it starts; Python and the project's handlers then leave
    the signal ignored (rightly: ``nohup`` means it), and a test that stops a child by that
    signal would wait for it in vain.
    """
    for name in (signal.SIGINT, signal.SIGHUP):
        signal.signal(name, signal.SIG_DFL)
