"""What the entry points share: a user error is one line on stderr and exit status 2.

Errors a user can act on (:class:`ValueError` and :class:`OSError`, whose subclasses the
package raises for bad input: ``ConlluError``, ``CheckpointError``, ``EvaluationError``, a
missing treebank file, a refused setting) print ``error: <message>`` on stderr, with no
traceback. Any other exception is a bug and keeps its traceback. ``ROOTPARSE_DEBUG=1`` shows
the traceback of user errors too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import NoReturn, TypeVar

__all__ = ["DEBUG_ENV", "USER_ERRORS", "USER_ERROR_STATUS", "describe", "report_user_errors"]

T = TypeVar("T")

DEBUG_ENV = "ROOTPARSE_DEBUG"
USER_ERRORS = (ValueError, OSError)
USER_ERROR_STATUS = 2


def report_user_errors(task: Callable[[], T], *, on_error: Callable[[], None] | None = None) -> T:
    """Run ``task``; on a user error, call ``on_error``, print one line and exit with status 2.

    Args:
        task: the entry point's work.
        on_error: clean-up after a user error (e.g. removing an empty run folder).

    Raises:
        SystemExit: with status 2 after a user error (unless ``ROOTPARSE_DEBUG`` is set, which
            re-raises the error itself).
    """
    try:
        return task()
    except USER_ERRORS as error:
        if on_error is not None:
            on_error()
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        _exit(error)


def _exit(error: BaseException) -> NoReturn:
    print(f"error: {describe(error)}", file=sys.stderr)
    sys.exit(USER_ERROR_STATUS)


def describe(error: BaseException) -> str:
    """The message of an error, with the file named for an OS error that has one."""
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.filename}: {error.strerror}"
    return str(error)
