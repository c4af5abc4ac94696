"""Locating UD treebank files on disk, downloading missing ones, and holding out a dev split.

Typed functions only: :func:`biaffine.training.train` reads the ``data`` config and calls them.
"""

from __future__ import annotations

import logging
import os
import random
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar, cast

from biaffine.cli import check_types
from biaffine.data.conllu import ConlluError, Sentence, read_conllu
from biaffine.files import atomic_open

__all__ = [
    "DEFAULT_BASE_URL",
    "DownloadError",
    "Splits",
    "TreebankFiles",
    "check_tree",
    "configured_names",
    "configured_paths",
    "discover_files",
    "download_file",
    "load_splits",
    "locate_treebank",
    "project_root",
    "refuse_written_inputs",
    "resolve_root",
    "split_off_dev",
]

DEFAULT_BASE_URL = "https://raw.githubusercontent.com/UniversalDependencies/{repo}/master/{file}"
"""Raw file URL of a file in an official UD repository; ``{repo}`` is e.g. ``UD_English-EWT``."""

SPLITS = ("train", "dev", "test")

T = TypeVar("T")

log = logging.getLogger(__name__)


class DownloadError(OSError):
    """A treebank file could not be downloaded (HTTP error, unreachable host, empty body)."""


@dataclass(frozen=True, slots=True)
class TreebankFiles:
    """Paths of one treebank's splits; ``None`` where the treebank has no such split."""

    train: Path | None
    dev: Path | None
    test: Path | None


@dataclass(frozen=True, slots=True)
class Splits:
    """Gold sentences of a treebank's splits; ``test`` is None when the treebank has none."""

    train: list[Sentence]
    dev: list[Sentence]
    test: list[Sentence] | None


def project_root() -> Path:
    """The repository root (the folder holding ``conf/``, ``train.py`` and ``biaffine/``)."""
    return Path(__file__).resolve().parents[2]


def resolve_root(root: str | os.PathLike[str] | None) -> Path:
    """The folder that holds treebank folders.

    Args:
        root: a path (relative paths are taken from the current directory, which Hydra 1.3
            leaves unchanged), or ``None`` for the project root, so that fixtures shipped with
            the repository resolve from any working directory.
    """
    if root is None:
        return project_root()
    return Path(root).expanduser()


def configured_names(
    d: Mapping[str, Any], *, root: str | os.PathLike[str] | None = None
) -> tuple[Path, dict[str, str | None]]:
    """The treebanks folder and the file name of each split that a ``data`` config names.

    Args:
        d: the data config (a ``conf/data/*.yaml`` node or its plain dict copy): ``root``,
            ``treebank``, ``train``/``dev``/``test`` and ``discover`` (find the splits named null
            on disk, see :func:`discover_files`).
        root: a UD root to use instead of ``d["root"]`` (experiments reading a stored config).

    Raises:
        FileNotFoundError, ValueError: see :func:`discover_files`.
    """
    check_data_settings(d)
    names = {split: d[split] for split in SPLITS}
    folder = resolve_root(root if root is not None else d["root"])
    if d.get("discover", False):
        names = discover_files(folder / d["treebank"], names)
    return folder, names


DATA_TYPES = {
    **dict.fromkeys(("root", "treebank", "train", "dev", "test", "base_url"), str),
    **dict.fromkeys(("download", "discover"), bool),
    "dev_fraction": float,
    "split_seed": int,
}
"""The type of each setting of a ``data`` config (``conf/data/_ud.yaml`` and its treebanks)."""


def check_data_settings(d: Mapping[str, Any]) -> None:
    """Refuse ``data`` settings of the wrong type, before any file is looked for.

    ``data.dev_fraction=abc`` and ``data.train=123`` were TypeError tracebacks, and
    ``data.discover=abc`` was read as true. A setting the config lacks is not checked.

    Raises:
        ValueError: naming the setting, its value and the type expected.
    """
    types = {key: kind for key, kind in DATA_TYPES.items() if key in d}
    check_types(d, types, "data", nullable={"root", "train", "dev", "test"})


def configured_paths(d: Mapping[str, Any]) -> dict[str, Path | None]:
    """The file of each split that a ``data`` config names (None for a split it has not).

    Raises:
        FileNotFoundError, ValueError: see :func:`discover_files`.
    """
    folder, names = configured_names(d)
    return {split: folder / d["treebank"] / name if name else None for split, name in names.items()}


def refuse_written_inputs(
    inputs: Mapping[str, str | os.PathLike[str] | None], written: Iterable[Path]
) -> None:
    """Refuse a run that would write over, or remove, a file it was given to read.

    Checked before the run touches its folder: a treebank file named ``config.yaml`` there,
    say, would be gone before it was read.

    Args:
        inputs: the file each setting names (``data.train``, ``segmenter``); None for none.
        written: the files the run writes or removes.

    Raises:
        ValueError: naming the setting and its file.
    """
    targets = {Path(path).resolve() for path in written}
    for setting, value in inputs.items():
        if value is not None and Path(value).resolve() in targets:
            raise ValueError(
                f"{setting}: {value} is a file this run writes in its folder: choose another "
                "hydra.run.dir, or move the file"
            )


def locate_treebank(
    root: Path,
    treebank: str,
    names: dict[str, str | None],
    *,
    download: bool = False,
    base_url: str = DEFAULT_BASE_URL,
    timeout: float = 60.0,
) -> TreebankFiles:
    """Paths of a treebank's train/dev/test files, downloading missing ones if allowed.

    Args:
        root: folder holding treebank folders (e.g. ``$UD_ROOT``).
        treebank: folder (and UD repository) name, e.g. ``UD_English-EWT``.
        names: file name per split (``train``, ``dev``, ``test``); ``None`` for a missing split.
        download: fetch files that are not on disk from ``base_url`` into ``root/treebank/``.
        base_url: URL template with ``{repo}`` and ``{file}`` fields.
        timeout: seconds to wait for the server on each request.

    Raises:
        FileNotFoundError: a named file is missing and ``download`` is False.
        DownloadError: a download failed.
        ConlluError: a named file is a directory.
    """
    folder = root / treebank
    paths = {split: folder / name if name else None for split, name in names.items()}
    for path in paths.values():
        if path is not None and path.is_dir():  # not missing: no download may replace it
            raise ConlluError(str(path), 0, "is a directory, not a file")
    # A pipe or device is read like a file (data.train=<(zcat train.conllu.gz)), not "missing".
    missing = [path for path in paths.values() if path is not None and not path.exists()]
    if missing and not download:
        listed = ", ".join(str(path) for path in missing)
        raise FileNotFoundError(
            f"treebank file(s) not found: {listed}. Point data.root (or the UD_ROOT environment "
            f"variable) at the folder holding {treebank}/, or set data.download=true. To try "
            "rootparse without treebanks, data=tiny (or experiment=smoke) works offline."
        )
    for path in missing:
        download_file(base_url.format(repo=treebank, file=path.name), path, timeout=timeout)
    return TreebankFiles(**{split: paths.get(split) for split in SPLITS})


def discover_files(folder: Path, names: dict[str, str | None]) -> dict[str, str | None]:
    """Fill the splits named None with the folder's standard ``*-ud-{split}.conllu`` file.

    A split with no such file stays None (no dev: part of train is held out; no test: none).

    Args:
        folder: a treebank folder on disk, e.g. ``$UD_ROOT/UD_Czech-PDT``.
        names: file name per split; None means "find it".

    Raises:
        FileNotFoundError: if ``folder`` does not exist.
        ValueError: if several files match one split.
    """
    if not folder.is_dir():
        raise FileNotFoundError(
            f"treebank folder {folder} not found: check data.treebank and data.root (or the "
            "UD_ROOT environment variable)"
        )
    found = dict(names)
    for split, name in names.items():
        if name is None:
            matches = sorted(path.name for path in folder.glob(f"*-ud-{split}.conllu"))
            if len(matches) > 1:
                raise ValueError(f"{folder}: several {split} files ({', '.join(matches)})")
            found[split] = matches[0] if matches else None
    log.info("%s: found %s", folder, found)
    return found


def load_splits(
    root: Path,
    treebank: str,
    names: dict[str, str | None],
    *,
    download: bool = False,
    base_url: str = DEFAULT_BASE_URL,
    dev_fraction: float = 0.1,
    split_seed: int = 1,
) -> Splits:
    """Read a treebank's gold trees, holding out part of train as dev when it has no dev split.

    Args:
        root: folder holding treebank folders.
        treebank: treebank folder name, e.g. ``UD_English-EWT``.
        names: file name per split; ``None`` for a missing split (train is required).
        download: fetch missing files (see :func:`locate_treebank`).
        base_url: URL template for downloads.
        dev_fraction: share of train held out as dev when ``names["dev"]`` is None.
        split_seed: seed of that hold-out (see :func:`split_off_dev`).

    Raises:
        ValueError: if the treebank has no train split.
        FileNotFoundError, DownloadError: see :func:`locate_treebank`.
        biaffine.data.conllu.ConlluError: on malformed files or missing trees.
    """
    if names.get("train") is None:
        raise ValueError(f"{treebank!r} has no train split: it cannot be trained on")
    files = locate_treebank(root, treebank, names, download=download, base_url=base_url)
    train, test = _read(files.train), _read(files.test)
    if files.dev is not None:
        return Splits(train, _read(files.dev), test)
    train, dev = split_off_dev(train, dev_fraction, seed=split_seed)
    log.info(
        "%s has no dev split: holding out %d of %d train sentences as dev "
        "(data.dev_fraction=%s, data.split_seed=%s)",
        treebank, len(dev), len(train) + len(dev), dev_fraction, split_seed,
    )  # fmt: skip
    return Splits(train, dev, test)


def _read(path: Path | None) -> list[Sentence] | None:
    if path is None:
        return None
    sentences = list(read_conllu(path, require_trees=True))
    for sentence in sentences:
        check_tree(sentence)
    return sentences


def check_tree(sentence: Sentence) -> None:
    """Refuse gold heads with a cycle: every word must reach ROOT.

    The reader checks each HEAD alone (an integer in 0..n); this checks them together. A word
    heading itself made the training loss infinite (no parser scores that arc), and a cycle is
    no tree any decoder outputs, which training would learn silently. Several words on ROOT
    are left to the parsers: the graph parser's loss normalises such a tree over all trees
    (:meth:`biaffine.parsers.graph.BiaffineParser.loss`), and a transition system that builds
    single-rooted trees refuses it by name.

    Args:
        sentence: a sentence read with ``require_trees=True`` (integer heads).

    Raises:
        ConlluError: naming the line of the first word of the cycle.
    """
    heads = cast("list[int]", sentence.heads)
    reaches_root = [True] + [False] * len(heads)  # by word ID; ROOT is 0
    for start in range(1, len(heads) + 1):
        path: dict[int, int] = {}  # words followed up from start (none known to reach ROOT)
        word = start
        while not reaches_root[word] and word not in path:
            path[word] = len(path)
            word = heads[word - 1]
        if not reaches_root[word]:
            _refuse_cycle(sentence, list(path)[path[word] :])
        for seen in path:
            reaches_root[seen] = True


def _refuse_cycle(sentence: Sentence, cycle: list[int]) -> NoReturn:
    """Raise for the words of ``cycle`` (each heads the next, the last the first)."""
    first = cycle.index(min(cycle))
    cycle = cycle[first:] + cycle[:first]
    if len(cycle) == 1:
        problem = f"word {cycle[0]} is its own head (HEAD {cycle[0]})"
    else:
        words = " -> ".join(str(word) for word in [*cycle, cycle[0]])
        problem = f"words {words} form a cycle (each the HEAD of the one before)"
    raise ConlluError(sentence.source, sentence.word_line(cycle[0]), problem)


def download_file(url: str, dest: Path, *, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` atomically: a temporary file in the same folder, then a rename.

    A failed download leaves nothing behind, so a later run never mistakes a partial file for a
    treebank.

    Raises:
        DownloadError: on an HTTP error status, an unreachable server or an empty body.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(dest, "wb") as out:
        if _copy_url(url, out, timeout=timeout) == 0:
            raise DownloadError(f"downloading {url} gave an empty file")
    return dest


def _copy_url(url: str, out, *, timeout: float) -> int:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            size = 0
            while chunk := response.read(1 << 20):
                out.write(chunk)
                size += len(chunk)
            return size
    except urllib.error.HTTPError as error:
        raise DownloadError(
            f"downloading {url} failed: HTTP {error.code} {error.reason}"
        ) from error
    except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
        reason = getattr(error, "reason", error)
        raise DownloadError(f"downloading {url} failed: {reason}") from error


def split_off_dev(items: Sequence[T], fraction: float, *, seed: int) -> tuple[list[T], list[T]]:
    """Hold out a random, seed-determined part of ``items`` as a dev set.

    Both parts keep the original order. At least one item goes to each side.

    Args:
        items: training sentences.
        fraction: share of ``items`` held out, in (0, 1).
        seed: seed of the random choice; the same seed always holds out the same items.

    Returns:
        ``(train, dev)``.

    Raises:
        ValueError: if ``fraction`` is outside (0, 1) or there are fewer than two items.
    """
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"data.dev_fraction={fraction} must lie strictly between 0 and 1")
    if len(items) < 2:
        raise ValueError(f"cannot hold out a dev set from {len(items)} training sentence(s)")
    n_dev = min(max(1, round(fraction * len(items))), len(items) - 1)
    held_out = set(random.Random(seed).sample(range(len(items)), n_dev))
    train = [item for i, item in enumerate(items) if i not in held_out]
    dev = [item for i, item in enumerate(items) if i in held_out]
    return train, dev
