"""What the entry points share: a user error is one line on stderr and exit status 2.

Errors a user can act on (:class:`ValueError` and :class:`OSError`, whose subclasses the
package raises for bad input: ``ConlluError``, ``CheckpointError``, ``EvaluationError``, a
missing treebank file, a refused setting) print ``error: <message>`` on stderr, with no
traceback. Any other exception is a bug and keeps its traceback. ``ROOTPARSE_DEBUG=1`` shows
the traceback of user errors too.

Settings are checked before the work starts (:func:`refuse_missing`, :func:`check_types`), so a
forgotten ``checkpoint=`` or a ``trainer.max_epochs=abc`` is a user error, not a ``TypeError``
deep inside; so is a config group option without a file (:func:`refuse_unknown_options`:
``decoder=foo``), before Hydra composes the config and reports it in a dozen lines, and, for
the commands whose settings are a fixed list (:func:`refuse_unknown_settings`), a misspelt
setting or one Hydra cannot read (``probabilites=true``, ``input=a,b.conllu``); for the
training commands, whose settings depend on the groups chosen, the config composed as Hydra
will compose it (:func:`check_composition`: ``trainer.foo=1``).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import math
import os
import re
import signal
import sys
import textwrap
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

from biaffine.files import atomic_open

if TYPE_CHECKING:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Override

__all__ = [
    "DEBUG_ENV",
    "USER_ERRORS",
    "USER_ERROR_STATUS",
    "ArgumentParser",
    "check_composition",
    "check_groups",
    "check_positive",
    "check_rate",
    "check_seed",
    "check_threads",
    "check_types",
    "config_options",
    "describe",
    "exit_on_termination",
    "print_error",
    "refuse_missing",
    "refuse_unknown_options",
    "refuse_unknown_settings",
    "report_user_errors",
    "setting_types",
    "settings_of",
    "signals_held",
    "silence_closed_stdout",
    "written_whole",
]

T = TypeVar("T")

DEBUG_ENV = "ROOTPARSE_DEBUG"
USER_ERRORS = (ValueError, OSError)
NO_TORCH = (
    "this needs torch, which is not installed: pip install torch==2.13.0 --index-url "
    "https://download.pytorch.org/whl/cpu (the CPU build; any torch 2.13 build works)"
)
"""The one line where a torch path finds no torch (``runtime=onnx`` needs none)."""
USER_ERROR_STATUS = 2
# A group option as a plain name; anything else (a sweep a,b, an interpolation) is Hydra's to read.
_OPTION_NAME = re.compile(r"[\w-]+")
# Hydra's flags followed by a value (--cfg job), and the values --info may take.
_HYDRA_FLAGS_WITH_VALUES = {
    *("-c", "--cfg", "-p", "--package", "-cp", "--config-path", "-cn", "--config-name"),
    *("-cd", "--config-dir", "--experimental-rerun"),
}
_INFO = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}
# Flags that compose another config, or from other folders, than the command's own.
_CONFIG_FLAGS = {"-cp", "--config-path", "-cn", "--config-name", "-cd", "--config-dir"}


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose usage errors are one line ``error: ...`` and status 2.

    argparse prints the whole usage and then ``PROG: error: ...``: three lines or more for a
    missing argument, where every other user error of the toolkit is one line.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``error: PROG: message (see --help)`` and exit with status 2."""
        print_error(f"error: {self.prog}: {message} (see --help)")
        sys.exit(USER_ERROR_STATUS)


def freeze_loaded() -> None:
    """Put every object alive now out of the cyclic garbage collector's reach (``gc.freeze``).

    For an entry point whose models stay loaded until the process ends (predict.py, serve.py),
    called once they are: each full collection would otherwise walk every object of the models,
    their lexicons and of torch and numba (about 270,000), which took 0.25 to 0.7 s of each
    parse of EWT or IMST test (docs/speed.md). The price is that such an object left in a
    reference cycle later is never freed, so a library call never does this.
    """
    gc.freeze()


def report_user_errors(
    task: Callable[[], T], *, on_error: Callable[[], None] | None = None, where: str = ""
) -> T:
    """Run ``task``; on a user error, call ``on_error``, print one line and exit with status 2.

    Args:
        task: the entry point's work.
        on_error: clean-up after a user error (e.g. removing an empty run folder).
        where: what the line names before the error (``job 1`` of a sweep), if anything.

    Raises:
        SystemExit: with status 2 after a user error (unless ``ROOTPARSE_DEBUG`` is set, which
            re-raises the error itself); with 128 + the signal after any error that followed
            a termination signal (:func:`exit_on_termination`).
    """
    try:
        return task()
    except BrokenPipeError:  # the reader went away (| head): nothing to tell it
        if on_error is not None:
            on_error()
        sys.exit(silence_closed_stdout())
    except KeyboardInterrupt:  # Ctrl-C: the user knows; a traceback would say nothing more
        if on_error is not None:
            on_error()
        sys.exit(128 + int(signal.SIGINT))
    except (*USER_ERRORS, ModuleNotFoundError) as error:
        # torch is an extra: a torch path without it is the user's to mend; any other missing
        # module is this project's fault.
        no_torch = isinstance(error, ModuleNotFoundError)
        if no_torch and error.name != "torch":
            raise
        if on_error is not None:
            on_error()
        if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
            raise
        _exit(ModuleNotFoundError(NO_TORCH) if no_torch else error, where)
    except Exception:
        if not _SIGNALLED:
            raise
        # A signal's exit raised inside compiled code came back wrapped in another error
        # (numba's "SystemError: CPUDispatcher(...) returned a result with an exception set"
        # during a long k-best search): a traceback and status 1 in place of 143.
        if on_error is not None:
            on_error()
        sys.exit(128 + _SIGNALLED[0])


def exit_on_termination() -> None:
    """End the process on SIGTERM or SIGHUP as on Ctrl-C: by an exception, which cleans up.

    Python's default for them ends the process at once, so that an output being written
    atomically left its temporary file behind (``kill`` of a long ``predict.py``);
    ``SystemExit`` with status 128 + the signal runs every ``finally`` and ``except
    BaseException`` on the way out, as ``KeyboardInterrupt`` does. Each signal is noted too,
    for :func:`stop_if_terminated`, which raises again an exception that Python dropped (and
    does not print: "Exception ignored in ..." with a traceback).
    """

    def leave(number: int, _frame: object) -> None:
        _SIGNALLED.append(number)
        if not _HELD:
            sys.exit(128 + number)

    def interrupt(number: int, _frame: object) -> None:
        _SIGNALLED.append(number)
        if not _HELD:
            raise KeyboardInterrupt

    previous = sys.unraisablehook

    def unraisable(found: Any) -> None:
        # The exception a callback dropped is raised again at the next step: no traceback.
        if not (_SIGNALLED and found.exc_type in (SystemExit, KeyboardInterrupt)):
            previous(found)

    sys.unraisablehook = unraisable
    handlers = {signal.SIGTERM: leave, signal.SIGHUP: leave, signal.SIGINT: interrupt}
    for number, handler in handlers.items():
        # A signal the process was started to ignore stays ignored: nohup's SIGHUP ended a
        # training whose terminal closed, and a background job of a script is given SIGINT
        # ignored so that the script's Ctrl-C leaves it running.
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, handler)


_SIGNALLED: list[int] = []
"""The signals :func:`exit_on_termination`'s handlers have raised for, first first."""
_HELD: list[None] = []
"""One entry per :func:`signals_held` block open: its handlers then note a signal, no more."""


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Raise a termination signal's exception when the block ends, not inside it.

    ``torch.save`` writes through a C++ writer that calls the file's ``write``: SIGTERM's
    exception raised in such a call left the writer mid-record, and its clean-up then failed
    with a RuntimeError in place of the exit (status 1 and a traceback; a training killed as it
    wrote ``last.pt``), or aborted the process later. A block that ends by an exception of its
    own raises that one.

    Raises:
        KeyboardInterrupt: after SIGINT in the block.
        SystemExit: 128 + the signal, after SIGTERM or SIGHUP in the block.
    """
    before = len(_SIGNALLED)
    _HELD.append(None)
    try:
        yield
    finally:
        _HELD.pop()
    if len(_SIGNALLED) > before and not _HELD:
        _raise_for(_SIGNALLED[before])


@contextlib.contextmanager
def written_whole(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """A binary file written atomically (:func:`biaffine.files.atomic_open`), kills held off.

    For ``torch.save``: a termination signal during the block ends the process once the file is
    whole and in place (:func:`signals_held`), never with a half-written record's error; an
    exception of the block leaves ``path`` as it was.
    """
    with signals_held(), atomic_open(path, "wb") as handle:
        yield handle


def stop_if_terminated() -> None:
    """Raise again for a signal whose exception never left the code it was raised in.

    Python runs a signal's handler wherever the process is, and an exception raised inside a
    weak reference's callback or a ``__del__`` is printed as "Exception ignored" and dropped:
    a training given SIGTERM in one went on for good, and so did a parse given Ctrl-C. Long
    loops call this between their steps.

    Raises:
        KeyboardInterrupt: after SIGINT.
        SystemExit: 128 + the signal, after SIGTERM or SIGHUP.
    """
    if _SIGNALLED:
        _raise_for(_SIGNALLED[0])


def _raise_for(number: int) -> NoReturn:
    """Raise what :func:`exit_on_termination`'s handler raises for signal ``number``."""
    if number == signal.SIGINT:
        raise KeyboardInterrupt
    sys.exit(128 + number)


def silence_closed_stdout() -> int:
    """Point standard output at the null device once its reader closed it; 128 + SIGPIPE.

    ``predict.py ... | head`` closes the pipe early: Unix tools end then without a word, with
    the status a SIGPIPE gives, and so do the commands here, not with a traceback or an error
    line. Python flushes standard output again at exit, which would fail into the closed pipe.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 128 + int(signal.SIGPIPE)


def _exit(error: BaseException, where: str = "") -> NoReturn:
    print_error(f"error: {where}{': ' if where else ''}{describe(error)}")
    sys.exit(USER_ERROR_STATUS)


def print_error(line: str) -> None:
    """Print ``line`` on standard error; nothing where it is closed (``2>&-``).

    Python's ``sys.stderr`` is then None, and ``print(file=None)`` writes to standard output:
    the error became the last line of the CoNLL-U a parse wrote there.
    """
    if sys.stderr is not None:
        print(line, file=sys.stderr)


def describe(error: BaseException) -> str:
    """The message of an error on one line, with the file named for an OS error that has one.

    A message of several lines (omegaconf's name the setting on a second line) has its lines
    joined with ``; ``.
    """
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        text = f"{error.filename}: {error.strerror}"  # a file's name may hold a line break
    else:
        text = str(error)
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def refuse_missing(keys: Iterable[str]) -> None:
    """Refuse settings left without a value (``???`` in a config: ``checkpoint``, ``input``).

    Args:
        keys: the settings that have no value, e.g. ``OmegaConf.missing_keys(cfg)``.

    Raises:
        ValueError: naming each of them, if there are any.
    """
    missing = sorted(keys)
    if missing:
        settings = "setting" if len(missing) == 1 else "settings"
        given = " ".join(f"{key}=..." for key in missing)
        raise ValueError(f"missing {settings} {', '.join(missing)} (give {given})")


def check_threads(threads: object, setting: str = "threads", default: str = "torch's") -> None:
    """Refuse a CPU thread count that is not a positive integer or None (the runtime's default).

    Torch-free, for the torch and ONNX runtimes alike (onnxruntime reads 0 as its default and
    took a negative count silently).

    Args:
        threads: the value given.
        setting: the option the error names (``threads``, ``trainer.threads``).
        default: whose default None keeps, for the message (``torch's``, ``onnxruntime's``).

    Raises:
        ValueError: for zero, a negative number, or a value that is no integer.
    """
    if threads is None:
        return
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(
            f"{setting}={threads!r}: give a positive number of CPU threads, or null for "
            f"{default} default"
        )
    if threads > MAX_THREADS:  # torch's own: "Overflow when unpacking long", no setting named
        raise ValueError(f"{setting}={threads}: give at most {MAX_THREADS} CPU threads")


MAX_THREADS = 4096
"""The most CPU threads a setting may ask for (torch takes a C int; no machine has more)."""


def check_seed(seed: object, setting: str = "--seed", bits: int = 63) -> None:
    """Refuse a random seed the generators cannot take: a whole number in 0..2**bits-1.

    Torch's takes 63 bits ("Overflow when unpacking long long" past them), numpy's legacy
    global one, which :func:`biaffine.runtime.seed_everything` seeds too, 32 ("Seed must be
    between 0 and 2**32 - 1", naming no setting, once the data was read).

    Raises:
        ValueError: naming ``setting`` (``--seed`` or ``trainer.seed``).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**bits:
        given = f"{setting} {seed!r}" if setting.startswith("--") else f"{setting}={seed!r}"
        raise ValueError(f"{given}: give a seed in 0..2**{bits}-1")


def check_rate(value: float | None, setting: str) -> None:
    """Refuse a learning rate, clip or weight that is not finite or float32 cannot hold.

    ``inf`` trained into NaN weights, and ``1e39`` was torch's "value cannot be converted to
    type float without overflow" from inside the optimizer.
    """
    if value is not None and not (math.isfinite(value) and abs(value) <= FLOAT32_MAX):
        raise ValueError(f"{setting}={value} must be finite and at most {FLOAT32_MAX:.4g}")


FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: a rate or weight the networks' float32 tensors can hold."""


def setting_types(*files: Path, section: str | None = None) -> dict[str, type]:
    """The type of each boolean, numeric or string setting of config ``files``, off its default.

    Args:
        files: YAML config files; a later one's setting wins.
        section: the mapping in each file that holds the settings (``trainer``); None: the
            file's top level.

    A setting whose default is null has no type to read: its command names it (``threads``).
    """
    types: dict[str, type] = {}
    for defaults in _sections(files, section):
        scalars = (bool, int, float, str)
        types |= {key: type(value) for key, value in defaults.items() if isinstance(value, scalars)}
    return types


def check_groups(
    cfg: Mapping[str, Any], conf: Path, groups: Iterable[str], where: str = ""
) -> None:
    """Refuse a setting of a config group (``decoder``, ``search``) of the wrong type or null.

    Each group's settings are typed by its options' files under ``conf`` (``conf/decoder/*.yaml``),
    so ``decoder.root_constraint=abc`` or ``=null``, read with ``bool()``, cannot pass for a
    setting; a ``cfg`` without the group, or a setting only other options have, is let be.
    ``where``: the section ``cfg`` is (``model.``), named before the group.

    Raises:
        ValueError: naming the setting.
    """
    for group in groups:
        options = sorted((conf / group).glob("*.yaml"))
        settings = cfg.get(group) or {}
        # the settings of the option chosen: another option's (search.beam_size) are absent
        types = {key: kind for key, kind in setting_types(*options).items() if key in settings}
        check_types(settings, types, where + group, nullable=null_settings(*options))


def checked_trainer(
    trainer: Mapping[str, Any], config: Path, nullable: Mapping[str, type]
) -> tuple[dict[str, Any], bool]:
    """A training command's ``trainer`` settings, typed by ``config``'s, and its ``overwrite``.

    Settings whose default is null take their type from ``nullable``; ``patience`` and ``clip``
    may be null too (:data:`NULL_MEANS_NONE`). ``overwrite`` belongs to the run folder, not the
    training, so it is taken out.

    Raises:
        ValueError: naming a setting of the wrong type (``trainer.max_epochs=abc`` was a
            TypeError traceback from inside the training).
    """
    settings = dict(trainer)
    types = setting_types(config, section="trainer") | dict(nullable)
    check_types(
        settings,
        types,
        "trainer",
        nullable=null_settings(config, section="trainer") | NULL_MEANS_NONE,
    )
    overwrite = settings.pop("overwrite", False)
    return settings, overwrite


def null_settings(*files: Path, section: str | None = None) -> set[str]:
    """The settings of config ``files`` whose default is null (:func:`setting_types`' args)."""
    return {
        key for defaults in _sections(files, section) for key, v in defaults.items() if v is None
    }


def _sections(files: Sequence[Path], section: str | None) -> Iterator[Mapping[str, Any]]:
    """The mapping of settings in each of ``files`` (``section`` of it, or its top level)."""
    from omegaconf import OmegaConf

    for path in files:
        defaults = OmegaConf.to_container(OmegaConf.load(path))
        yield defaults if section is None else defaults[section]


def check_positive(values: Mapping[str, float | None], section: str) -> None:
    """Refuse a count or budget that is zero or negative (None, no limit, passes).

    A training with ``max_epochs=0``, ``max_steps=0`` or ``max_minutes=0`` trains nothing, and
    was refused once the data was read, or blamed on another setting.

    Raises:
        ValueError: naming the first such setting, as ``section.key``.
    """
    for key, value in values.items():
        if value is not None and not value > 0:
            raise ValueError(f"{section}.{key}={value} must be above 0")


def check_types(
    settings: Mapping[str, Any],
    types: Mapping[str, type],
    where: str,
    *,
    nullable: Collection[str] | None = None,
) -> None:
    """Refuse a setting whose value is not of its type.

    An int is a float here, and a bool is no number (YAML reads ``true`` as a bool).

    Args:
        settings: the section's values, e.g. ``cfg.trainer``.
        types: the type of each setting to check; settings not named are not checked.
        where: the section's name, for the message (``trainer``; empty for the settings at
            the config's top level).
        nullable: the settings that may be null; None: any (null is then left to the code
            that reads it). ``decoder.root_constraint=null`` was read as false, and
            ``output=null`` or ``chunk_sentences=null`` ended in a TypeError traceback.

    Raises:
        ValueError: naming the first setting of another type, its value and the type expected.
    """
    for key, kind in types.items():
        value = settings.get(key)
        name = f"{where}.{key}" if where else key
        if value is None:
            if nullable is not None and key not in nullable:
                raise ValueError(f"{name}=null: expected {_EXPECTED.get(kind, kind.__name__)}")
            continue
        accepted = (int, float) if kind is float else (kind,)
        if not isinstance(value, accepted) or (kind is not bool and isinstance(value, bool)):
            expected = _EXPECTED.get(kind, kind.__name__)
            if kind is str:  # input=123: Hydra read a file name as a number
                expected += f"; quote one Hydra reads otherwise: {name}=\"'{value}'\""
            raise ValueError(f"{name}={value!r}: expected {expected}")


def check_ranges(
    settings: Mapping[str, Any],
    where: str,
    *,
    sizes: Iterable[str] = (),
    counts: Iterable[str] = (),
    fractions: Iterable[str] = (),
    size_lists: Iterable[str] = (),
) -> None:
    """Refuse network settings that build no network, naming them (torch's messages did not).

    Args:
        settings: the section's values, their types checked (:func:`check_types`).
        where: the section's name (``model``).
        sizes: settings that must be at least 1.
        counts: settings that must be at least 0.
        fractions: settings in [0, 1) (a dropout).
        size_lists: settings that must be lists of sizes (``model.dilations``).

    Raises:
        ValueError: naming the first setting out of range.
    """
    for key in sizes:
        if settings[key] < 1:
            raise ValueError(f"{where}.{key}={settings[key]}: give a positive integer")
    for key in counts:
        if settings[key] < 0:
            raise ValueError(f"{where}.{key}={settings[key]}: give 0 or more")
    for key in fractions:
        if not 0 <= settings[key] < 1:
            raise ValueError(f"{where}.{key}={settings[key]}: give a number in [0, 1)")
    for key in size_lists:
        values = settings[key]
        whole = isinstance(values, list) and values
        if not whole or not all(type(v) is int and v >= 1 for v in values):
            raise ValueError(f"{where}.{key}={values!r}: give a list of positive integers")


_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}

NULL_MEANS_NONE = frozenset({"patience", "clip"})
"""Trainer settings whose default is a number but whose null is a setting too: no early stop,
no clipping (every training command's)."""


def refuse_unknown_options(
    overrides: Sequence[str], conf: Path, groups: Sequence[str], optional: Sequence[str] = ()
) -> None:
    """Refuse a command-line option of a config group that has no file (``decoder=foo``).

    Called before Hydra composes the config, whose error for it is a dozen lines. A deletion
    (``'~trainer.clip'``) is refused too: the commands read every setting they compose, so one
    taken away was omegaconf's traceback where it was read.

    Args:
        overrides: the command line's arguments (``sys.argv[1:]``).
        conf: the folder holding the config groups (``conf/predict``).
        groups: the groups to check (``decoder``, ``search``).
        optional: those of ``groups`` that may be ``null`` (no option: ``experiment=null``).

    Raises:
        ValueError: naming the option and the group's options (:func:`config_options`).
    """
    for override in overrides:
        if override.startswith("~"):
            key = override[1:].partition("=")[0]
            raise ValueError(f"{override}: a setting cannot be taken away; give {key} a value")
        group, _, given = override.lstrip("+").partition("=")
        options = given.split(",")  # a sweep's, -m decoder=mst,foo: each of them
        if group not in groups or not all(map(_OPTION_NAME.fullmatch, options)):
            continue
        for option in options:
            if option == "null" and group in optional:
                continue
            known = _options(conf, group)
            if option not in known:
                choose = f"choose one of {', '.join(known)}"
                raise ValueError(f"{group}={option}: unknown {group}; {choose}")


def settings_of(conf: Path, config: str, groups: Sequence[str] = ()) -> set[str]:
    """The settings a command line may give: ``config``'s keys, each group's as ``group.key``.

    Keys inside a mapping count with their path (``limits`` and ``limits.max_words``).

    Args:
        conf: the folder of the config (``conf/predict``).
        config: its file's name without ``.yaml`` (``predict``).
        groups: config groups under ``conf`` whose files' keys count too (``decoder``).
    """
    from omegaconf import OmegaConf

    keys = set(_setting_paths(OmegaConf.to_container(OmegaConf.load(conf / f"{config}.yaml"))))
    for group in groups:
        keys.add(group)
        for option in (conf / group).glob("*.yaml"):
            keys |= set(_setting_paths(OmegaConf.to_container(OmegaConf.load(option)), f"{group}."))
    return keys


def refuse_unknown_settings(overrides: Sequence[str], known: Iterable[str]) -> None:
    """Refuse what Hydra cannot read, or would add unread, before it composes the config.

    Hydra reports an override it cannot parse, a misspelt key or a comma in a value (a sweep)
    in several lines and exits with status 1, and adds ``+key=value`` silently; a command whose
    settings are all known (predict.py, serve.py) refuses them in one line instead. Hydra's own
    settings (``hydra.*``) and flags (``--help``, ``--cfg job``) pass; ``-m``/``--multirun``
    does not: such a command runs once.

    Args:
        overrides: the command line's arguments (``sys.argv[1:]``).
        known: the settings it may give (:func:`settings_of`).

    Raises:
        ValueError: naming the argument and the problem.
    """
    from hydra.core.override_parser.types import OverrideType

    known = set(known)
    for text in overrides:
        if text in ("-m", "--multirun"):
            raise ValueError(f"{text}: this command runs once; give each setting one value")
    for text in _settings_given(overrides):
        override = _parsed(text)
        key = override.key_or_group
        if _is_hydras(key):
            continue
        if override.type != OverrideType.CHANGE:
            raise ValueError(f"{text}: give settings as KEY=VALUE (+ and ~ add or delete keys)")
        if key not in known:
            raise ValueError(f"{text}: unknown setting {key}; see --help for the settings")
        if override.is_sweep_override():
            raise ValueError(
                f"{text}: one value per setting; a value holding a comma needs quotes that "
                f"reach Hydra: \"{key}='{text.partition('=')[2]}'\""
            )


def check_composition(
    conf: Path,
    config: str,
    overrides: Sequence[str],
    *,
    groups: Sequence[str] = (),
    closed: Sequence[str] = (),
) -> None:
    """Compose ``config`` with the command line's settings as Hydra will, and refuse its errors.

    For a command whose settings depend on the groups chosen (train.py: ``trainer.foo=1``,
    ``+model.x=1`` into a group's struct, a value of the wrong type for a typed node): Hydra
    reports them in six lines and exits with status 1; they are one line and status 2 here. A
    sweep (``-m trainer.lr=1e-3,2e-3``) is composed with each setting's first value; Hydra's own
    settings (``hydra.*``), its flags and the sweeps it cannot enumerate here (``interval``,
    ``glob``) are left to Hydra.

    Args:
        conf: the folder of the config (``conf``).
        config: its file's name without ``.yaml`` (``train``).
        overrides: the command line's arguments (``sys.argv[1:]``).
        groups: the config groups whose files' keys are settings (:func:`settings_of`).
        closed: the sections whose settings are all in ``config``'s and ``groups``' files
            (``trainer``; ``""`` for the top level): a key added there (``+trainer.max_epoch=1``)
            is refused, since nothing reads it.

    Raises:
        ValueError: naming the setting and Hydra's reason, or the added key.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    if _CONFIG_FLAGS & set(overrides):  # another config or search path: Hydra's to compose
        return
    refuse_run_dir_files(overrides)
    settings = [_first_value(text) for text in _settings_given(overrides)]
    with initialize_config_dir(config_dir=str(conf.absolute()), version_base="1.3"):
        try:
            composed = compose(config, overrides=[text for text in settings if text is not None])
        except HydraException as error:
            # Hydra's first line and its cause's ("Key 'foo' is not in struct"), without the
            # advice to append +KEY=VALUE: a key nothing reads is no fix.
            cause = error.__cause__ if error.__cause__ is not None else error
            what, reason = (str(e).strip().splitlines()[0] for e in (error, cause))
            problem = what.rstrip(".") if reason == what else f"{what.rstrip('.')}: {reason}"
            raise ValueError(f"{problem}; see --help for the settings") from None
    if closed:
        plain = OmegaConf.to_container(composed)  # unresolved: ${now:...} needs Hydra's run
        refuse_added_settings(plain, settings_of(conf, config, groups), closed)


def refuse_run_dir_files(overrides: Sequence[str]) -> None:
    """Refuse ``hydra.run.dir`` or ``hydra.sweep.dir`` where no run folder can be written.

    Hydra's ``mkdir`` of it, or its opening of ``train.log`` there, failed in a traceback
    before the command's code ran: a file in its place or above it, a folder this user may not
    write in, a read-only file system.

    Raises:
        ValueError: naming the setting.
    """
    for text in _settings_given(overrides):
        override = _parsed(text)
        value = override.value()
        if override.key_or_group not in ("hydra.run.dir", "hydra.sweep.dir"):
            continue
        if isinstance(value, str) and "${" not in value:
            problem = _unwritable_folder(Path(value))
            if problem is not None:
                raise ValueError(f"{text}: {problem}")


def _unwritable_folder(path: Path) -> str | None:
    """Why a run cannot write in folder ``path`` (made if missing), or None if it can."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file; give a folder for the run"
    if os.access(existing, os.W_OK | os.X_OK):
        return None
    read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
    return f"cannot write in {existing}: " + (
        "a read-only file system" if read_only else "permission denied"
    )


def refuse_added_settings(
    composed: Mapping[str, Any], known: Iterable[str], closed: Sequence[str]
) -> None:
    """Refuse a key of a closed section that no config file has (``+trainer.max_epoch=1``).

    Hydra adds such a key silently, and the training ran with ``max_epochs`` as it was.

    Args:
        composed: the composed config.
        known: the settings of the config's files (:func:`settings_of`).
        closed: the sections to check, mappings inside them too (``""``: the top level's keys
            alone, each section's own keys being another's to check).

    Raises:
        ValueError: naming the first unknown setting, and the known one it is closest to.
    """
    import difflib

    known = set(known)
    for section in closed:
        values = composed.get(section) if section else {key: None for key in composed}
        prefix = f"{section}." if section else ""
        for name in _setting_paths(values, prefix) if isinstance(values, Mapping) else ():
            if name not in known:
                parent, _, leaf = name.rpartition(".")
                siblings = [key for key in known if key.rpartition(".")[0] == parent]
                leaves = {key.rpartition(".")[2]: key for key in siblings}
                close = difflib.get_close_matches(leaf, sorted(leaves), n=1)
                meant = f" (did you mean {leaves[close[0]]}?)" if close else ""
                raise ValueError(
                    f"{name}: unknown setting{meant}; nothing would read it, see --help"
                )


def _setting_paths(values: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every key of ``values`` with its path (``limits`` and ``limits.max_words``)."""
    found = []
    for key, value in values.items():
        if key not in ("defaults", "hydra"):
            found.append(prefix + key)
            if isinstance(value, Mapping):
                found += _setting_paths(value, f"{prefix}{key}.")
    return found


def _settings_given(overrides: Sequence[str]) -> list[str]:
    """The ``KEY=VALUE`` arguments of a command line, without Hydra's flags and their values."""
    settings, flag = [], None
    for text in overrides:
        if flag in _HYDRA_FLAGS_WITH_VALUES or (flag in ("-i", "--info") and text in _INFO):
            flag = None
            continue
        flag = text
        if not text.startswith("-"):
            settings.append(text)
    return settings


def _first_value(text: str) -> str | None:
    """``text`` with a sweep's first value (``a=1,2``: ``a=1``); None for Hydra's to read."""
    from hydra.errors import HydraException

    override = _parsed(text)
    if _is_hydras(override.key_or_group):
        return None
    if not override.is_sweep_override():
        return text
    try:
        first = next(iter(override.sweep_string_iterator()))
    except (HydraException, StopIteration):  # interval(), glob(): Hydra's to read
        return None
    return f"{override.get_key_element()}={first}"


def _is_hydras(key: str) -> bool:
    """Whether a setting is Hydra's own (``hydra.run.dir``, ``hydra/launcher``)."""
    return key == "hydra" or key.startswith(("hydra.", "hydra/"))


def _parsed(text: str) -> Override:
    """``text`` read by Hydra's override grammar.

    Raises:
        ValueError: where Hydra cannot read it, with the quoting a value may need, or it
            reads an integer of more digits than Python converts.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    try:
        (override,) = parser.parse_overrides([text])
    except OverrideParseException:
        at = _first_unread(parser, text)
        raise ValueError(
            f"{text}: not a setting KEY=VALUE that Hydra can read{at}; a value holding "
            "any of , = [ ] ( ) { } ' \" # ~ or a letter beyond ASCII needs quotes that reach "
            "Hydra: \"KEY='VALUE'\""
        ) from None
    except ValueError as error:  # Python's int() of more digits than it converts (4,300)
        key = text.partition("=")[0]
        raise ValueError(f"{key}: {error}".partition("; use sys.")[0]) from None
    return override


def _first_unread(parser: OverridesParser, text: str) -> str:
    """`` (at 'é')``: the character where the shortest unreadable start of ``text`` ends."""
    from hydra.errors import OverrideParseException

    key, equals, value = text.partition("=")
    for end in range(1, len(value) + 1) if equals else ():
        try:
            parser.parse_overrides([f"{key}={value[:end]}"])
        except OverrideParseException:
            return f" (at {value[end - 1]!r})"
    return ""


def config_options(conf: Path, group: str, width: int = 100) -> str:
    """The options a user picks from in a config group, as ``--help`` lists them.

    They are the group's files, without the private bases (``_ud.yaml``), so that a new recipe
    is listed the moment its file exists.

    Args:
        conf: the folder holding the config groups (``conf``).
        group: the group's path under it (``experiment``, ``model/encoder``).
        width: the longest line, counting the ``group: `` in front and the indent of the rest.

    Returns:
        The options, sorted and joined with ``, ``, wrapped onto lines indented by two spaces.
    """
    lines = textwrap.wrap(
        ", ".join(_options(conf, group)),
        width=width,
        initial_indent=" " * (len(group) + 2),
        subsequent_indent="  ",
        break_on_hyphens=False,
    )
    return "\n".join(lines).lstrip()


def _options(conf: Path, group: str) -> list[str]:
    """The group's files, sorted, without the private bases (``_ud.yaml``)."""
    return sorted(p.stem for p in (conf / group).glob("*.yaml") if not p.stem.startswith("_"))
