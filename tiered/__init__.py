"""Tiered compilation: a numba entry point runs as plain Python until its machine code is cached.

numba compiles a function the first time a process calls it and keeps the machine code in its
on-disk cache (``cache=True``). In a fresh environment the first ``mst`` call compiles for 20-25 s
of CPU on a 2-core AMD EPYC (about four fifths of it numba's typing and lowering, in Python; the
rest LLVM), so the first parse of a new install waited for the compiler. The kernels are valid
Python (the test suite also runs them without the JIT), so a process need not wait:

- small calls run the very same functions interpreted (about 1 ms for a 25-word sentence) while
  the process has spent less than :data:`INTERPRETED_SECONDS` in them: the first use of numba's
  machine code in a process costs about 0.37 s (numba readies its code generator, then loads the
  kernels), more than a short input's whole parse takes interpreted;
- past that, or at the first large call (:data:`SMALL_CALL`), an entry point looks for its
  machine code in numba's cache and, if it is there, loads it and uses it from then on;
- otherwise that call and the next ones run interpreted, while one background process compiles
  the machine code into the cache; the first call after that process has ended loads it. (A
  process whose calls are all small starts none: the first one past its budget will.) A call
  of a kernel cubic in a sentence's length (``tiered(kernel, work=cubic_work)``: Eisner, its
  k-best, the matrix-tree theorem) too large to run interpreted in less time than the compiler
  takes (:data:`LARGE_WORK`) waits for that process instead, then runs the machine code.

A process that starts once and answers many calls (a server) calls :func:`prefer_machine_code`
first, so none of its answers waits for the loading.

The background process outlives a short-lived parent, so the next process finds the cache
filled. Background processes take a lock one at a time, so kernels shared by several entry
points are compiled once and loaded from the cache by the next process (:mod:`tiered.lock`).

This package is the one way Python calls the numba kernels of ``decoding``, ``transitions`` and
``biaffine``; it imports none of them.

``ROOTPARSE_COMPILE=foreground`` restores numba's own behaviour (compile in the calling process,
on the first call); so does anything that keeps the background process from starting or from
finishing its work (the first call after it ends then compiles whatever the cache still lacks).

numba keys a cached kernel on its own file alone, though its machine code holds every kernel it
calls: an entry point's cache is emptied, and compiled again, where the Python files of its
package or of a package whose kernels it calls changed since (:func:`_forget_if_edited`).

Where numba finds no folder to cache in (a read-only install, an unwritable home, no
``NUMBA_CACHE_DIR``), its ``njit(cache=True)`` refused to define a kernel at all; importing this
package adds a last folder for it to try, ``numba/`` in this user's private lock folder
(:func:`tiered.lock.lock_folder`). A cache file numba cannot read (truncated, corrupted) counts
as a miss and is emptied, so it is compiled again rather than raised on every call.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numba.core.caching import CacheImpl, NullCache, UserWideCacheLocator
from numba.core.dispatcher import Dispatcher

from tiered.lock import lock_folder

# (module, name, signature): an entry point to compile, as the background process receives it.
Request = tuple[str, str, tuple[Any, ...]]
# A call's work from its arguments (Tiered's ``work``).
Work = Callable[[tuple[Any, ...]], int]


INTERPRETED_SECONDS = 0.1
"""Seconds a process spends in small interpreted calls, all entry points together, before its
entry points turn to numba's machine code. A one-sentence parse spends about 1 ms: it never
loads the machine code (0.37 s on a 2-core AMD EPYC); a long input spends at most this, and one
small call, more than it would have with the machine code loaded at once."""

SMALL_CALL = 1 << 12
"""Array elements (all arguments together, outputs included) a call may pass and still run
interpreted while the budget lasts: a decoder's call on one sentence of up to 62 words, or on
five of 25. At about that length (63 words) the interpreted kernels take 4 ms (``mst``), 37 ms
(``eisner``) and 112 ms (the tree CRF's matrix-tree, ``probabilities=true``); a larger call turns
to the machine code at once."""

LARGE_WORK = 1 << 26
"""Work beyond which a call of a cubic kernel waits for the background compilation rather than
run interpreted, in steps of interpreted Eisner (:func:`cubic_work`: n**3 for one n x n matrix).
``eisner`` takes that long interpreted on one 410-word sentence (about 15 s; 67 s at 600 words,
about 40 minutes at 2,000), or on 1,000 sentences of 40 words (37 ms each), where the compiler
takes 11-25 s. Kernels without a ``work`` never wait: ``mst`` (quadratic) runs a batch of 41
sentences of 120 words in 1.9 s interpreted."""

COMPILE_MODES = ("background", "foreground")
"""The values of ``ROOTPARSE_COMPILE``; unset or empty is ``background``."""


def _foreground() -> bool:
    """Whether numba should compile in the calling process (``ROOTPARSE_COMPILE=foreground``).

    Raises:
        ValueError: another value than ``foreground``, ``background`` or empty (a typo such as
            ``forground`` read as the default, background, without a word).
    """
    mode = os.environ.get("ROOTPARSE_COMPILE", "") or "background"
    if mode not in COMPILE_MODES:
        raise ValueError(
            f"ROOTPARSE_COMPILE={mode!r}: expected {' or '.join(COMPILE_MODES)} (or unset)"
        )
    return mode == "foreground"


class PrivateCacheLocator(UserWideCacheLocator):
    """The last folder numba tries: ``numba/`` in this user's private lock folder.

    numba tries its own locators first (``$NUMBA_CACHE_DIR``, ``__pycache__`` beside the
    sources, ``~/.cache/numba``); where none can be written it raised ``RuntimeError: cannot
    cache function`` at import. The lock folder is this user's and closed to others, so no one
    else can plant machine code there.
    """

    def __init__(self, py_func: Callable[..., Any], py_file: str) -> None:
        """The user-wide locator of numba in the private folder; OSError where there is none."""
        super().__init__(py_func, py_file)
        folder = lock_folder()
        if folder is None:
            raise OSError("no private folder")
        self._cache_path = os.path.join(folder, "numba", self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Callable[..., Any], py_file: str) -> PrivateCacheLocator | None:
        """The locator of ``py_func``, its folder created; None where it cannot be written."""
        try:
            return super().from_function(py_func, py_file)
        except OSError:  # no private folder: numba then refuses, as before
            return None


if PrivateCacheLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.append(PrivateCacheLocator)


def _in_cache(dispatcher: Dispatcher, signature: tuple[Any, ...]) -> bool:
    """Whether numba's cache holds ``dispatcher``'s machine code for ``signature``.

    Reads the cache through numba's ``Dispatcher._cache``, the object numba itself loads from
    (``Dispatcher.compile``). A dispatcher without a cache (``cache=False``), or a numba without
    that attribute, counts as a hit, so the call compiles as numba does. A miss empties the
    unreadable cache files of this entry point and of the kernels it calls (:func:`_heal`).
    """
    cache = getattr(dispatcher, "_cache", None)
    load = getattr(cache, "load_overload", None)
    if load is None or isinstance(cache, NullCache):  # no cache: nothing to compile into
        return True
    # numba raises whatever unpickling a broken file raises: that is a miss too.
    with contextlib.suppress(Exception):
        if load(signature, dispatcher.targetctx) is not None:
            return True
    _heal(dispatcher, set())
    return False


def _heal(dispatcher: Dispatcher, seen: set[int]) -> None:
    """Empty the cache index of ``dispatcher`` and of the dispatchers it calls, where unreadable.

    numba raises (``UnpicklingError``, ``EOFError``...) on a truncated or corrupted cache file
    instead of compiling again, in the background compiler and in the calling process alike.
    Loading a signature that is never cached reads the whole index; ``flush`` replaces it,
    atomically, with an empty one, so the kernel is compiled again and its files rewritten.
    """
    python = dispatcher.py_func
    if id(python) in seen:
        return
    seen.add(id(python))
    cache = getattr(dispatcher, "_cache", None)
    if cache is not None and not isinstance(cache, NullCache):
        try:
            cache.load_overload((), dispatcher.targetctx)
        except Exception:  # as in _in_cache: whatever unpickling raises
            with contextlib.suppress(OSError):  # an unwritable cache stays as numba left it
                cache.flush()
    for callee in _callees(python):
        _heal(callee, seen)


def _names(code: types.CodeType) -> Iterator[str]:
    """The global names ``code`` and the code objects nested in it (comprehensions) refer to."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _names(constant)


def interpreted(function: Callable[..., Any], twins: dict[int, Callable[..., Any]]) -> Callable:
    """``function`` as plain Python, calling plain-Python twins of the numba functions it calls.

    A twin runs the dispatcher's own Python code (``py_func``) in a copy of its module's
    namespace where every numba dispatcher it names is replaced by that one's twin, recursively;
    ``twins`` (keyed by ``id`` of the Python function) ends cycles and shares twins.
    """
    python = getattr(function, "py_func", function)
    if id(python) in twins:
        return twins[id(python)]
    namespace = dict(python.__globals__)
    twin = types.FunctionType(
        python.__code__, namespace, python.__name__, python.__defaults__, python.__closure__
    )
    twin.__kwdefaults__ = python.__kwdefaults__
    twins[id(python)] = twin
    for name in set(_names(python.__code__)):
        if isinstance(namespace.get(name), Dispatcher):
            namespace[name] = interpreted(namespace[name], twins)
    return twin


def _start(request: Request) -> subprocess.Popen[bytes] | None:
    """Start ``python -m tiered`` compiling ``request``; None if none can start.

    The process runs in a session of its own, so a Ctrl-C in the caller's terminal does not stop
    it and it outlives the caller; its environment (``NUMBA_CACHE_DIR`` included) is the
    caller's. Processes wait for each other's lock, so kernels that several entry points share
    are compiled once and loaded from the cache by the next process.
    """
    # The caller may import this package from its script's folder: the child finds it too.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "tiered"],
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None
    assert process.stdin is not None
    with contextlib.suppress(OSError), process.stdin:  # a child that died at once has ended
        process.stdin.write(pickle.dumps(request))
    return process


class _Budget:
    """What is left of the process's :data:`INTERPRETED_SECONDS` of small interpreted calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._left = INTERPRETED_SECONDS

    def is_open(self) -> bool:
        """Whether some budget is left."""
        return self._left > 0

    def allows(self, args: tuple[Any, ...]) -> bool:
        """Whether a call with ``args`` may run interpreted: small, and some budget left."""
        return self.is_open() and sum(_elements(arg) for arg in args) <= SMALL_CALL

    def spend(self, seconds: float) -> None:
        """Count ``seconds`` of an interpreted call."""
        with self._lock:
            self._left -= seconds

    def close(self) -> None:
        """Spend what is left: from now on every entry point turns to its machine code."""
        with self._lock:
            self._left = 0.0


def _elements(arg: Any) -> int:
    """The number of elements of an array argument (numpy's ``size``), 0 for a scalar."""
    return getattr(arg, "size", 0) if hasattr(arg, "shape") else 0


def cubic_work(args: tuple[Any, ...]) -> int:
    """A call's work as Eisner's: its array elements times its matrices' longest last axis.

    That axis is a sentence's length: a batch float[B, N+1, N+1] is B cubes of N+1, not B**3.
    """
    sides = (arg.shape[-1] for arg in args if len(getattr(arg, "shape", ())) >= 2)
    return sum(_elements(arg) for arg in args) * max(sides, default=1)


_BUDGET = _Budget()


def prefer_machine_code() -> None:
    """Load machine code at each entry point's next call, with no small call interpreted first.

    For a process that starts once and then answers many calls, such as a server: its start-up
    pays for the loading (about 0.37 s), so no answer does. Calls still run interpreted while a
    background process compiles what the cache lacks.
    """
    _BUDGET.close()


def interpreting() -> bool:
    """Whether small calls still run interpreted in this process, whatever numba's cache holds.

    False in the foreground mode, after :func:`prefer_machine_code`, or once the budget is spent:
    a warm-up call then loads the machine code.
    """
    return not _foreground() and _BUDGET.is_open()


class Tiered:
    """A numba dispatcher called as plain Python until its machine code is worth loading.

    Small calls run interpreted while the process's budget lasts (:data:`INTERPRETED_SECONDS`);
    the others, and every call after it, run the machine code once it is in numba's cache.

    Thread-safe: threads may call it at once (the batch drivers do). Calls return exactly what
    the dispatcher returns, interpreted or compiled: both run the same code on the same types,
    and neither warns of a float exception.
    """

    def __init__(self, dispatcher: Dispatcher, *, work: Work | None = None) -> None:
        """Wrap ``dispatcher``; nothing is loaded or compiled before the first call.

        ``work``: a call's work from its arguments, in steps of interpreted Eisner
        (:func:`cubic_work` for a kernel as slow as Eisner); a call over :data:`LARGE_WORK`
        waits for the machine code rather than run interpreted. None: every call may run
        interpreted (a kernel that is at most quadratic).
        """
        self.dispatcher = dispatcher
        self.work = work
        self._lock = threading.Lock()
        self._compiled = False  # machine code loaded (or numba will compile on the next call)
        self._job: subprocess.Popen[bytes] | None = None  # the background compilation
        self._python: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        """``dispatcher(*args)``, compiled or interpreted."""
        if self._compiled or self._use_machine_code(args):
            return self.dispatcher(*args)
        if self.work is not None and self.work(args) > LARGE_WORK:  # slower than compiling
            self.wait()
            if self._use_machine_code(args):
                return self.dispatcher(*args)
        started = time.perf_counter()
        try:
            # Machine code never warns of a float exception (inf - inf is NaN without a word);
            # interpreted, numpy's scalars printed a RuntimeWarning, raised under -W error.
            with np.errstate(all="ignore"):
                return self._interpreted()(*args)
        finally:
            _BUDGET.spend(time.perf_counter() - started)

    def wait(self) -> None:
        """Block until the background compilation of this entry point, if one runs, has ended.

        The next call then runs the machine code.
        """
        with self._lock:
            job = self._job
        if job is not None:
            job.wait()

    @property
    def is_compiled(self) -> bool:
        """Whether calls now run the machine code."""
        return self._compiled

    def _signature(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(self.dispatcher.typeof_pyval(arg) for arg in args)

    def _use_machine_code(self, args: tuple[Any, ...]) -> bool:
        """Whether this call may run the machine code; starts the background compilation once."""
        with self._lock:
            if self._compiled:
                return True
            if self._job is None:
                if _foreground():
                    self._compiled = True
                    return True
                if _BUDGET.allows(args):  # not worth loading the machine code yet
                    return False
                signature = self._signature(args)
                if _in_cache(self.dispatcher, signature):
                    self._compiled = True
                    return True
                python = self.dispatcher.py_func
                self._job = _start((python.__module__, python.__qualname__, signature))
                # None: no process could start, so this call compiles, as numba does.
                self._compiled = self._job is None
            elif self._job.poll() is not None:  # ended, whether or not it succeeded
                self._compiled = True
            return self._compiled

    def _interpreted(self) -> Callable[..., Any]:
        if self._python is None:
            self._python = interpreted(self.dispatcher, _TWINS)
        return self._python


_ENTRIES: dict[Dispatcher, Tiered] = {}
# Twins of every entry point: kernels that several entry points call are built once.
_TWINS: dict[int, Callable[..., Any]] = {}


def _forget_if_edited(dispatcher: Dispatcher) -> None:
    """Empty ``dispatcher``'s cache where its package's sources changed since it was written.

    numba keys a cached kernel on its own file alone, yet the machine code holds every kernel
    it calls: after an edit of ``decoding/tarjan.py`` (a ``git pull`` into an editable
    install), ``decoding.mst`` ran the old Tarjan from ``_batch.py``'s cache. Beside each
    entry point's cache index lies a digest of the Python files (paths and bytes) of its
    package and of the packages of every kernel it calls (:func:`_package_roots`); another
    digest empties the index, so the kernel is compiled again, and the new digest is written.
    """
    cache = getattr(dispatcher, "_cache", None)
    folder = getattr(cache, "_cache_path", None)
    base = getattr(getattr(cache, "_impl", None), "filename_base", None)
    if folder is None or base is None or isinstance(cache, NullCache):
        return
    roots = sorted(_package_roots(dispatcher, set()))
    digest = hashlib.sha256("".join(map(_tree_digest, roots)).encode()).hexdigest()
    marker = os.path.join(folder, f"{base}.sources")
    with contextlib.suppress(OSError, UnicodeDecodeError), open(marker, encoding="utf-8") as file:
        if file.read() == digest:
            return
    with contextlib.suppress(OSError):  # an unwritable cache: numba's own rule, as before
        cache.flush()
        partial = f"{marker}.{os.getpid()}"
        with open(partial, "w", encoding="utf-8") as file:
            file.write(digest)
        os.replace(partial, marker)


def _package_roots(dispatcher: Dispatcher, seen: set[int]) -> set[str]:
    """The top folders of the packages holding ``dispatcher`` and every kernel it calls.

    ``transitions``' kernels call ``decoding``'s: an edit there is theirs too.
    """
    python = dispatcher.py_func
    if id(python) in seen:
        return set()
    seen.add(id(python))
    roots = set()
    source = python.__code__.co_filename
    if os.path.isfile(source):
        root = os.path.dirname(os.path.abspath(source))
        while os.path.isfile(os.path.join(os.path.dirname(root), "__init__.py")):
            root = os.path.dirname(root)
        roots.add(root)
    for callee in _callees(python):
        roots |= _package_roots(callee, seen)
    return roots


def _callees(python: Callable[..., Any]) -> Iterator[Dispatcher]:
    """The kernels (numba dispatchers) a kernel's Python function calls by a global name."""
    for name in set(_names(python.__code__)):
        callee = python.__globals__.get(name)
        if isinstance(callee, Dispatcher):
            yield callee


@functools.cache
def _tree_digest(root: str) -> str:
    """SHA-256 of the path and bytes of each Python file under ``root``."""
    digest = hashlib.sha256()
    for folder, folders, files in os.walk(root):
        folders.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode("utf-8", "surrogateescape"))
                with open(path, "rb") as file:
                    digest.update(hashlib.sha256(file.read()).digest())
    return digest.hexdigest()


def tiered(function: Callable[..., Any], *, work: Work | None = None) -> Callable[..., Any]:
    """``function`` (a numba dispatcher) as a :class:`Tiered` entry point, one per dispatcher.

    Python code calls kernels through it (``tiered(kernel)(*args)``); numba code calls them
    directly. Anything but a dispatcher (a plain function, as ``njit`` returns under
    ``NUMBA_DISABLE_JIT=1``) is returned as it is. ``work``: as :class:`Tiered` takes it, the
    same function at every call site of one kernel.

    Raises:
        ValueError: another ``work`` than the kernel's entry point was made with.
    """
    if not isinstance(function, Dispatcher):
        return function
    entry = _ENTRIES.get(function)
    if entry is None:
        _forget_if_edited(function)
        entry = _ENTRIES.setdefault(function, Tiered(function, work=work))
    if entry.work is not work:
        name = function.py_func.__qualname__
        raise ValueError(f"{name}: work={work!r}, made with {entry.work!r}")
    return entry
