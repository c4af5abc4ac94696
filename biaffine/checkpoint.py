"""One-file checkpoints of plain data (no pickled objects), written atomically.

A checkpoint is a dict of strings, numbers, lists, dicts and tensors, so it loads with
``torch.load(path, weights_only=True)`` and can be inspected without this package. Its model
config, vocabularies and metadata are each one JSON text (``json.loads`` reads them back).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import pickle
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

import biaffine
from biaffine.cli import written_whole
from biaffine.data.vocab import Vocabs
from biaffine.nn.modules import loading_weights
from biaffine.parsers import build_parser
from biaffine.runtime import check_device

__all__ = [
    "FORMAT",
    "INT8_MIN_ELEMENTS",
    "INT8_SCALE",
    "JSON_FIELDS",
    "MAX_SIZE",
    "STORAGES",
    "VERSION",
    "Checkpoint",
    "CheckpointError",
    "build_model",
    "check_sizes",
    "compact",
    "find",
    "load",
    "save",
    "upgrade",
    "weights_sha256",
]

FORMAT = "rootparse-checkpoint"
# Bumped whenever saved state stops fitting the code. 2: each BiLSTM layer holds one LSTM per
# direction (BiLSTM), so version-1 state_dict keys no longer match. 3: the file names its parser
# kind, and the encoder is a submodule with a nested config. 4: the heads both parser families
# compose (biaffine.parsers.heads) hold their layers, so arc and label weights have new names.
# 5: the model config, vocabularies and metadata are JSON texts (:data:`JSON_FIELDS`).
# Versions 2 and 3 are migrated on load; version 4 reads as it is.
VERSION = 5
JSON_FIELDS = ("model_config", "vocabs", "metadata")
"""The fields a checkpoint of :data:`VERSION` holds as one JSON text each, not as pickled
objects: torch's weights-only unpickler, written in Python, took 1.9 s for the 700,000 strings,
lists and dicts of ``en_ewt``'s vocabularies and config (its lexicon, its GloVe words), and
``json.loads`` 0.3 s (2-core AMD EPYC)."""
_REQUIRED = (
    "package_version",
    "model_config",
    "vocabs",
    "state_dict",
    "metadata",
    "training_state",
)
_SCALARS = (bool, int, float, str)
# The largest integer a model config may hold (a layer size, a layer count, ...): a crafted
# config would otherwise ask the allocator for terabytes before any weight is compared.
MAX_SIZE = 65536
# Config integers that are counts of rows read from a file, which bounds them (GloVe: 400000).
_FILE_COUNTS = frozenset({"max_words"})


class CheckpointError(ValueError):
    """A checkpoint is missing, truncated, corrupt, foreign, or of another format version."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The contents of a checkpoint file.

    Attributes:
        parser: the parser kind, a key of :data:`biaffine.parsers.PARSERS`.
        model_config: the parser's ``config()`` (its encoder's as a nested ``encoder`` dict).
        vocabs: the vocabularies, rebuilt with ``Vocabs.from_dict``.
        state_dict: model weights.
        metadata: free plain data (training data, best dev scores, resolved config, ...).
        training_state: optimizer/scheduler/epoch state for resuming, or None.
        package_version: version of the package that wrote the file.
        path: the file it was read from (named in errors), or None.
        stored_as: the compact storage its weights were read from (:data:`STORAGES`), or None.
    """

    parser: str
    model_config: dict[str, Any]
    vocabs: Vocabs
    state_dict: dict[str, torch.Tensor]
    metadata: dict[str, Any]
    training_state: dict[str, Any] | None
    package_version: str
    path: Path | None = None
    stored_as: str | None = None


def save(
    path: str | os.PathLike[str],
    *,
    parser: str,
    model_config: Mapping[str, Any],
    vocabs: Vocabs | Mapping[str, Any],
    state_dict: Mapping[str, torch.Tensor],
    metadata: Mapping[str, Any],
    training_state: Mapping[str, Any] | None = None,
    stored_as: str | None = None,
) -> None:
    """Write a checkpoint atomically: a crash leaves the old file or the new one, never half.

    Args:
        path: destination file; its folder must exist.
        parser: ``model.kind``.
        model_config: ``model.config()``.
        vocabs: a :class:`Vocabs` or its ``to_dict()``.
        state_dict: ``model.state_dict()``.
        metadata: plain data to keep with the model.
        training_state: plain data to resume training (e.g. ``optimizer.state_dict()``), or None.
        stored_as: a compact storage of :data:`STORAGES` for shipped models, or None to store
            the weights as they are. ``"float16"``: float32 weights as float16 (half the
            size), rounded to 11 significant bits. ``"int8"``: float32 matrices of
            :data:`INT8_MIN_ELEMENTS` or more as int8, each row of their last axis scaled by
            its largest magnitude / 127 (a float32 scale per row, under the weight's name plus
            :data:`INT8_SCALE`), the other float32 weights as float16: a quarter of the size,
            each weight within half a step (its row's largest / 254) of what it was.
            :func:`load` gives both back as float32, so the model computes as before.

    The file records :func:`weights_sha256` of the weights as stored, which :func:`load`
    verifies; in a compact storage, equal stored tensors (an ensemble's members' frozen
    vectors) are written once.

    Raises:
        TypeError: if any value is not plain data (it would not load with ``weights_only=True``),
            or a key of the model config, vocabularies or metadata is not a string (JSON's
            keys are).
        ValueError: an unknown ``stored_as``; a weight beyond float16's range (about 65504)
            that float16 storage would hold.
    """
    weights = _stored({k: v.detach().cpu() for k, v in state_dict.items()}, stored_as)
    plain = {
        "model_config": model_config,
        "vocabs": vocabs.to_dict() if isinstance(vocabs, Vocabs) else vocabs,
        "metadata": metadata,
    }
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "package_version": biaffine.__version__,
        "parser": parser,
        **{field: _json_text(value, f"checkpoint[{field!r}]") for field, value in plain.items()},
        "state_dict": weights,
        "weights_sha256": weights_sha256(weights),
        "training_state": training_state,
    }
    if stored_as is not None:
        payload["stored_as"] = stored_as
    with written_whole(path) as handle:  # a kill waits for the whole file
        torch.save(_plain(payload, "checkpoint"), handle)


def _json_text(value: Any, where: str) -> str:
    """``value`` as plain data (:func:`_plain`) in one JSON text; tuples become lists.

    Raises:
        TypeError: data that is not plain, or a mapping key that is not a string (JSON would
            turn an int key into a string, and the data would load changed).
    """
    plain = _plain(value, where, keys=(str,))
    return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))


STORAGES = ("float16", "int8")
"""The compact storages of :func:`save`: float32 weights kept smaller, widened again on load."""

INT8_MIN_ELEMENTS = 16384
"""The fewest elements of a matrix stored as int8 (smaller ones, biases included, as float16)."""

INT8_SCALE = ":int8_scale"
"""What the name of an int8 weight's scales adds to its own (no module name holds a colon)."""


def _stored(weights: dict[str, torch.Tensor], stored_as: str | None) -> dict[str, torch.Tensor]:
    """The weights as ``stored_as`` keeps them; compacted, equal tensors share one (written once).

    Training checkpoints (``stored_as`` None, written every epoch) are not searched for equal
    tensors: only a shipped model's size is worth hashing every weight for.
    """
    if stored_as is None:
        return weights
    if stored_as not in STORAGES:
        raise ValueError(f"stored_as={stored_as!r}: expected one of {', '.join(STORAGES)}")
    return _shared(
        {
            key: value
            for name, tensor in weights.items()
            for key, value in _compacted(name, tensor, stored_as).items()
        }
    )


def _compacted(name: str, tensor: torch.Tensor, stored_as: str) -> dict[str, torch.Tensor]:
    """One weight as ``stored_as`` keeps it: itself, or an int8 matrix and its row scales."""
    if tensor.dtype != torch.float32:
        return {name: tensor}
    large = tensor.dim() >= 2 and tensor.numel() >= INT8_MIN_ELEMENTS
    if stored_as == "int8" and large:
        # Quantized from the float16 rounding, so a model rebuilt from shipped float16 weights
        # stores the same bytes as from the original (an ensemble's frozen vectors then match).
        rows = tensor.half().float().reshape(-1, tensor.shape[-1])  # [R, C]
        scale = rows.abs().amax(1) / 127  # [R]
        steps = torch.where(scale > 0, scale, torch.ones_like(scale)).unsqueeze(1)
        quantized = torch.round(rows / steps).to(torch.int8).reshape(tensor.shape)
        return {name: quantized, name + INT8_SCALE: scale}
    halved = tensor.half()
    if not bool(torch.isfinite(halved).all()):
        raise ValueError(f"weight {name} holds values beyond float16's range: store it as is")
    return {name: halved}


def _shared(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``weights`` with each group of equal tensors (dtype, shape, bytes) as one object.

    ``torch.save`` writes a storage once however many names hold it: an ensemble of parsers
    that read the same frozen vectors keeps one copy.
    """
    first: dict[tuple[str, tuple[int, ...], str], torch.Tensor] = {}
    shared = {}
    for name, tensor in weights.items():
        contiguous = tensor.contiguous()
        raw = contiguous.reshape(-1).view(torch.uint8).numpy()
        key = (str(tensor.dtype), tuple(tensor.shape), hashlib.sha256(raw.data).hexdigest())
        shared[name] = first.setdefault(key, contiguous)
    return shared


def compact(
    source: str | os.PathLike[str], dest: str | os.PathLike[str], stored_as: str = "float16"
) -> None:
    """Copy a checkpoint without its training state, its weights in a compact storage.

    What ships in ``models/``: half the size or less, and no optimizer state (a third of a
    ``last.pt``). Loading gives float32 weights again (:func:`load`).

    Args:
        source: the checkpoint to copy.
        dest: the file to write (atomically).
        stored_as: one of :data:`STORAGES` (see :func:`save`).

    Raises:
        CheckpointError: ``source`` is not a readable checkpoint.
        ValueError: a weight beyond float16's range.
    """
    saved = load(source)
    save(
        dest,
        parser=saved.parser,
        model_config=saved.model_config,
        vocabs=saved.vocabs,
        state_dict=saved.state_dict,
        metadata=saved.metadata,
        stored_as=stored_as,
    )


def upgrade(source: str | os.PathLike[str], dest: str | os.PathLike[str]) -> None:
    """Write the checkpoint ``source`` (any readable version) to ``dest`` in this version.

    Weights, their storage, config, vocabularies, metadata and training state stay as they
    were (``dest`` may be ``source``: it is replaced atomically); only the file's format
    changes, so that it loads faster (:data:`JSON_FIELDS`).

    Raises:
        CheckpointError: ``source`` is not a readable checkpoint.
    """
    loaded = load(source)
    rewrite(loaded, dest, vocabs=loaded.vocabs)


def rewrite(
    loaded: Checkpoint,
    dest: str | os.PathLike[str],
    *,
    vocabs: Vocabs,
    metadata: Mapping[str, Any] | None = None,
    stored_as: str | None = None,
) -> None:
    """Write ``loaded`` to ``dest`` (atomically) with ``vocabs``, all else as it was.

    Weights, config, training state and metadata (with ``metadata``'s keys added or replaced)
    are copied; ``stored_as`` as :func:`save` takes it, or where None the storage ``loaded``
    was read from: a shipped model's int8 or float16 weights, widened on load, are compacted
    again to the same bits (without ``--stored-as``, the tools that add to a shipped model
    wrote its int8 weights as float32, 17.9 MB becoming 31.3 MB).
    """
    save(
        dest,
        parser=loaded.parser,
        model_config=loaded.model_config,
        vocabs=vocabs,
        state_dict=loaded.state_dict,
        metadata={**loaded.metadata, **(metadata or {})},
        training_state=loaded.training_state,
        stored_as=stored_as if stored_as is not None else loaded.stored_as,
    )


def _plain(value: Any, where: str, keys: tuple[type, ...] = (str, int)) -> Any:
    """A copy made of dicts, lists, tuples, scalars and tensors (what weights_only accepts).

    Mappings and sequences such as OmegaConf containers become dicts and lists; anything else
    raises TypeError here rather than producing a file that cannot be loaded. A mapping's keys
    must be of ``keys``.
    """
    if value is None or type(value) in _SCALARS or isinstance(value, torch.Tensor):
        return value
    # Subclasses (numpy scalars, IntEnum, ...) would be pickled as such and then refused by
    # weights_only loading; metric values are often numpy floats.
    if isinstance(value, np.generic):
        return _plain(value.item(), where, keys)
    if isinstance(value, _SCALARS):
        return _base_scalar(value)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, keys):
                wanted = " or ".join(kind.__name__ for kind in keys)
                raise TypeError(f"{where}: key {key!r} is a {type(key).__name__}, not {wanted}")
        return {key: _plain(item, f"{where}[{key!r}]", keys) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(item, f"{where}[{i}]", keys) for i, item in enumerate(value))
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_plain(item, f"{where}[{i}]", keys) for i, item in enumerate(value)]
    raise TypeError(f"{where} is a {type(value).__name__}; checkpoints hold plain data only")


def _base_scalar(value: bool | int | float | str) -> bool | int | float | str:
    for kind in _SCALARS:  # bool first: it is also an int
        if isinstance(value, kind):
            return kind(value)
    raise TypeError(f"not a scalar: {value!r}")


def load(path: str | os.PathLike[str], map_location: str | torch.device = "cpu") -> Checkpoint:
    """Read a checkpoint written by :func:`save` (or by version 2), with ``weights_only=True``.

    Args:
        path: checkpoint file.
        map_location: device for the tensors.

    Returns:
        The :class:`Checkpoint`, in the current format.

    Raises:
        CheckpointError: if the file is missing, truncated or corrupt, holds pickled objects,
            is a TorchScript archive or no rootparse checkpoint, has an unknown format
            version, weights that differ from their recorded checksum or are not finite, or a
            model config with a size above :data:`MAX_SIZE`; or if ``map_location`` is a
            device this machine lacks (said so, not blamed on the file).
    """
    path = Path(path)
    try:
        check_device(map_location)
    except ValueError as error:
        raise CheckpointError(f"cannot load {path}: {error}") from None
    if not path.exists():
        raise CheckpointError(f"{path}: no such checkpoint file")
    if not path.is_file():
        raise CheckpointError(f"{path}: is not a file, so not a checkpoint")
    _refuse_torchscript(path)
    payload = _read(path, map_location)
    _check_format(payload, path)
    if payload["version"] >= 5:
        _read_json_fields(payload, path)
    _check_weights(payload, path)
    check_sizes(payload["model_config"], f"{path}: model_config")
    if payload["version"] == 2:
        payload = _migrate_v2(payload)
    if payload["version"] in (2, 3):
        payload = _migrate_v3(payload)
    weights = _widened(payload, path)
    try:
        vocabs = Vocabs.from_dict(payload["vocabs"])
    except (KeyError, TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: invalid vocabularies ({error})") from error
    return Checkpoint(
        parser=str(payload["parser"]),
        model_config=payload["model_config"],
        vocabs=vocabs,
        state_dict=weights,
        metadata=payload["metadata"],
        training_state=payload["training_state"],
        package_version=str(payload["package_version"]),
        path=path,
        stored_as=payload.get("stored_as"),
    )


def _read_json_fields(payload: dict[str, Any], path: Path) -> None:
    """Put in place of each of :data:`JSON_FIELDS` in ``payload`` what its JSON text holds.

    Each text leaves ``payload`` as it is read, so that it is let go before the next one is
    read (``en_ewt``'s vocabularies take 9 MB as a Python string).

    Raises:
        CheckpointError: a field that is no JSON text, whose text is not valid JSON, or whose
            JSON is no object.
    """
    for field in JSON_FIELDS:
        text = payload.pop(field)
        if not isinstance(text, str):
            raise CheckpointError(f"{path}: {field} is a {type(text).__name__}, not JSON text")
        try:
            value = json.loads(text)
        except ValueError as error:
            raise CheckpointError(f"{path}: {field} is not valid JSON ({error})") from None
        if not isinstance(value, dict):
            raise CheckpointError(f"{path}: {field} is not a JSON object")
        payload[field] = value


def _widened(payload: dict[str, Any], path: Path) -> dict[str, torch.Tensor]:
    """The weights as the model holds them: float32 again where a compact storage kept them."""
    stored_as = payload.get("stored_as")
    weights = payload["state_dict"]
    if stored_as is None:
        return weights
    if stored_as not in STORAGES:
        expected = " or ".join(STORAGES)
        raise CheckpointError(f"{path}: unknown weight storage {stored_as!r} (expected {expected})")
    widened = {}
    for name, tensor in weights.items():
        if name.endswith(INT8_SCALE):
            if name.removesuffix(INT8_SCALE) not in weights:
                raise CheckpointError(f"{path}: {name} scales no weight")
        elif tensor.dtype == torch.int8 and stored_as == "int8":
            widened[name] = _dequantized(name, tensor, weights.get(name + INT8_SCALE), path)
        else:
            widened[name] = tensor.float() if tensor.dtype == torch.float16 else tensor
    return widened


def _dequantized(
    name: str, quantized: torch.Tensor, scale: torch.Tensor | None, path: Path
) -> torch.Tensor:
    """float32 of an int8 weight: each row of its last axis times its scale."""
    if quantized.dim() < 2 or quantized.shape[-1] == 0:
        raise CheckpointError(f"{path}: int8 weight {name} is no matrix")
    rows = quantized.shape.numel() // quantized.shape[-1]
    if scale is None or scale.dtype != torch.float32 or scale.shape != (rows,):
        raise CheckpointError(f"{path}: int8 weight {name} has no float32 scale per row")
    widened = quantized.reshape(rows, -1).float() * scale.unsqueeze(1)
    return widened.reshape(quantized.shape)


def _refuse_torchscript(path: Path) -> None:
    """Name a TorchScript archive (``torch.jit.save``), which torch.load would call corrupt.

    Its zip holds ``<archive>/constants.pkl`` and ``<archive>/code/``; a checkpoint's never does.
    """
    if not zipfile.is_zipfile(path):
        return
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        return  # damaged: torch.load says so
    if any(name.split("/")[1:2] in (["constants.pkl"], ["code"]) for name in names):
        raise CheckpointError(
            f"{path}: a TorchScript archive (torch.jit.save), not a {FORMAT} file: give the "
            "best.pt or last.pt that train.py wrote"
        )


def _read(path: Path, map_location: str | torch.device) -> Any:
    # `from None` on unpickling errors: torch's message, chained or not, advises retrying with
    # weights_only=False, which would run whatever code a malicious file holds.
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except pickle.UnpicklingError as error:
        found = _PICKLED_GLOBAL.search(str(error))
        if found:
            raise CheckpointError(
                f"{path}: holds a pickled Python object ({found.group(1)}), which is never "
                f"loaded: not a {FORMAT} file (those contain plain data only)"
            ) from None
        raise CheckpointError(
            f"{path}: truncated or corrupt checkpoint, or not a checkpoint at all (its bytes "
            "are no pickle of plain data)"
        ) from None
    except Exception as error:
        # Unpickling arbitrary bytes fails in many ways (RuntimeError from the zip reader,
        # EOFError, KeyError, struct.error, ...): all mean the file is damaged, or is some
        # other file altogether where it does not begin as torch.save's archives do.
        if not _begins_as_saved(path):
            raise CheckpointError(
                f"{path}: truncated or corrupt checkpoint, or not a checkpoint at all (it does "
                "not begin as the zip archive torch.save writes)"
            ) from None
        detail = _torch_detail(error)
        raise CheckpointError(
            f"{path}: truncated or corrupt checkpoint (the write may have been interrupted){detail}"
        ) from (error if detail else None)


def _begins_as_saved(path: Path) -> bool:
    """Whether ``path`` begins as a zip archive or a pickle, the two formats of torch.save."""
    with open(path, "rb") as file:
        head = file.read(2)
    return head == b"PK" or head[:1] == b"\x80"


def _torch_detail(error: Exception) -> str:
    """``: <torch's words>``, or nothing where they advise loading with weights_only=False."""
    if "weights_only" in str(error):
        return ""
    return f": {type(error).__name__}: {error}"


# How torch's weights-only unpickler names a class or function it refuses to import.
_PICKLED_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def _check_format(payload: Any, path: Path) -> None:
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not a {FORMAT} file")
    version = payload.get("version")
    if version not in _READABLE:
        newer = isinstance(version, int) and version > VERSION
        hint = "; it was written by a newer rootparse: upgrade to read it" if newer else ""
        raise CheckpointError(
            f"{path}: checkpoint format version {version!r}; this version of rootparse "
            f"({biaffine.__version__}) reads versions {', '.join(map(str, _READABLE))}{hint}"
        )
    required = _REQUIRED if version == 2 else ("parser", *_REQUIRED)
    missing = [key for key in required if key not in payload]
    if missing:
        raise CheckpointError(f"{path}: checkpoint lacks {', '.join(missing)}")


_READABLE = (2, 3, 4, VERSION)


def weights_sha256(state_dict: Mapping[str, torch.Tensor]) -> str:
    """SHA-256 over each tensor's name, dtype, shape and bytes, in the order of sorted names.

    Args:
        state_dict: weights (any device; bfloat16 and other dtypes numpy lacks included).
    """
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().cpu().contiguous()
        raw = tensor.reshape(-1).view(torch.uint8).numpy()
        # The header gives the byte count, so no two different dicts feed the same stream.
        header = [name, str(tensor.dtype), list(tensor.shape), raw.nbytes]
        digest.update(json.dumps(header).encode() + b"\n")
        digest.update(raw.data)
    return digest.hexdigest()


def _check_weights(payload: dict[str, Any], path: Path) -> None:
    """Refuse weights that are no tensors, differ from their checksum, or are not finite.

    Files written before the checksum (formats 2 and 3 of earlier releases) lack it and are
    checked for the rest only.
    """
    weights = payload["state_dict"]
    if not isinstance(weights, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()
    ):
        raise CheckpointError(f"{path}: state_dict is not a dict of named tensors")
    recorded = payload.get("weights_sha256")
    if recorded is not None and recorded != weights_sha256(weights):
        raise CheckpointError(
            f"{path}: the weights differ from the checksum recorded when the file was written "
            "(damaged or altered since)"
        )
    bad = next((k for k, v in weights.items() if not _finite(v)), None)
    if bad is not None:
        raise CheckpointError(
            f"{path}: weight {bad} holds NaN or infinite values (training diverged, or the file "
            "is damaged): not usable"
        )


def _finite(tensor: torch.Tensor) -> bool:
    """Whether a tensor holds no NaN or infinity (integer and bool tensors always)."""
    if not (tensor.is_floating_point() or tensor.is_complex()):
        return True
    return bool(torch.isfinite(tensor).all())


def check_sizes(
    config: Any, where: str, why: str = "the config was altered or is not a model's"
) -> None:
    """Refuse any integer above :data:`MAX_SIZE` in a model config, before a layer is built.

    Args:
        config: the model config, or a part of it (dicts and lists are searched).
        where: the field, named in the error (``<file>: model_config.encoder``).
        why: what the error says such a size means.

    Raises:
        CheckpointError: naming the field.
    """
    if isinstance(config, dict):
        for key, value in config.items():
            if key not in _FILE_COUNTS:
                check_sizes(value, f"{where}.{key}", why)
    elif isinstance(config, (list, tuple)):
        for i, value in enumerate(config):
            if not isinstance(value, str):  # skipped cheaply: a GloVe config's 50,000 words
                check_sizes(value, f"{where}[{i}]", why)
    elif isinstance(config, int) and not isinstance(config, bool) and abs(config) > MAX_SIZE:
        raise CheckpointError(
            f"{where}={config} is above {MAX_SIZE}, the largest size rootparse builds: {why}"
        )


# Version 2 held only the biaffine parser, with the encoder's layers and options at top level.
_V2_ENCODER_OPTIONS = (
    *("word_dim", "char_dim", "char_hidden", "char_out", "use_tags", "tag_dim"),
    *("lstm_hidden", "lstm_layers", "embed_dropout", "lstm_dropout", "word_dropout"),
)
# Sizes now come from the vocabularies; a mismatch still shows when the weights are loaded.
_V2_SIZES = ("n_words", "n_chars", "n_tags", "n_rels", "n_xpos", "n_feats")
_V2_ENCODER_MODULES = ("word_embed.", "char_encoder.", "tag_embed.", "lstms.")
_V2_TAGGER_MODULES = {
    "tagger.": "taggers.upos.",
    "xpos_tagger.": "taggers.xpos.",
    "feats_tagger.": "taggers.feats.",
}


def _migrate_v2(payload: dict[str, Any]) -> dict[str, Any]:
    """A version-2 payload in the current format: same weights, new names, nested config."""
    config = {k: v for k, v in payload["model_config"].items() if k not in _V2_SIZES}
    encoder = {"kind": "bilstm", **{k: config.pop(k) for k in _V2_ENCODER_OPTIONS if k in config}}
    state_dict = {_v2_weight_name(key): value for key, value in payload["state_dict"].items()}
    model_config = {"encoder": encoder, **config}
    return payload | {"parser": "biaffine", "model_config": model_config, "state_dict": state_dict}


def _v2_weight_name(key: str) -> str:
    if key.startswith(_V2_ENCODER_MODULES):
        return f"encoder.{key}"
    return _renamed(key, _V2_TAGGER_MODULES)


# Version 3 named the arc and label layers on the parser itself; the combined model's graph head
# had the graph parser's arc names.
_V3_HEAD_MODULES = {
    "biaffine": {
        **{f"arc_{part}.": f"arcs.{part}." for part in ("dep", "head", "attn")},
        **{f"rel_{part}.": f"labels.{part}." for part in ("dep", "head", "attn")},
    },
    "transition": {
        **{f"arc_{part}.": f"graph.{part}." for part in ("dep", "head", "attn")},
        **{f"rel_{part}.": f"labels.{part}." for part in ("dep", "head", "attn")},
    },
}


def _migrate_v3(payload: dict[str, Any]) -> dict[str, Any]:
    """A version-3 payload (or a migrated version 2) with version 4's weight names."""
    renames = _V3_HEAD_MODULES.get(payload["parser"], {})
    state_dict = {_renamed(key, renames): value for key, value in payload["state_dict"].items()}
    return payload | {"state_dict": state_dict}


def _renamed(key: str, renames: Mapping[str, str]) -> str:
    for old, new in renames.items():
        if key.startswith(old):
            return new + key[len(old) :]
    return key


def build_model(checkpoint: Checkpoint) -> nn.Module:
    """The parser stored in a checkpoint, weights loaded, in eval mode.

    The weights' names, shapes and dtypes are compared with the built model's first:
    ``load_state_dict`` would silently cast (int64 into float32, say). The config's sizes were
    bounded by :func:`load` before anything is built.

    Raises:
        CheckpointError: if the parser kind is unknown, the config does not fit it, or the
            weights do not fit the config.
    """
    where = f"{checkpoint.path}: " if checkpoint.path is not None else ""
    model = _build_within_budget(checkpoint, where)
    model.load_state_dict(checkpoint.state_dict)  # strict, and now known to fit
    return model.eval()


def _build(checkpoint: Checkpoint, where: str) -> nn.Module:
    try:
        return build_parser(checkpoint.parser, checkpoint.vocabs, checkpoint.model_config)
    except ValueError as error:
        raise CheckpointError(f"{where}{error}") from error


class _AllocationBudget(TorchFunctionMode):
    """Refuses, before it allocates, a tensor that takes a build past the file's weights.

    Sizes each under :data:`MAX_SIZE` can still multiply into gigabytes (an LSTM 65536 wide
    holds 68 GB); weights that fit such a config would have to be in the file, so a build may
    allocate about as many elements as the file holds and no more. The count is taken at the
    factory calls modules allocate their weights with, before any memory is asked for. (The meta
    device would do the same, but its first use imports torch's compiler stack: 2 s of start-up.)
    """

    def __init__(self, budget: int, where: str) -> None:
        super().__init__()
        self.budget, self.where, self.used = budget, where, 0

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Sequence[type],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        """Count the elements of each factory call, refusing one past the budget; then call it."""
        if func in _FACTORIES:
            self.used += _requested(args, kwargs or {})
            if self.used > self.budget:
                raise CheckpointError(
                    f"{self.where}weights do not fit the model config: it asks for more than "
                    f"the {self.budget - _SLACK:,} weights the file holds"
                )
        return func(*args, **(kwargs or {}))


_FACTORIES = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.rand, torch.randn})
# Buffers and scratch tensors a build makes beside the stored weights.
_SLACK = 1 << 20


def _requested(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """Elements a factory call asks for: ``empty(3, 4)``, ``empty((3, 4))``, ``size=(3, 4)``."""
    if "size" in kwargs:
        size = kwargs["size"]
    elif args and isinstance(args[0], (tuple, list, torch.Size)):
        size = args[0]
    else:
        size = [arg for arg in args if isinstance(arg, int)]
    return math.prod(int(dim) for dim in size)


def _reads_files(config: Any) -> bool:
    """Whether an encoder (a member's too) reads inputs kept outside the checkpoint."""
    if not isinstance(config, Mapping):
        return False  # no parser's config: building it fails with a message of its own
    encoder = config.get("encoder")
    members = config.get("members")  # an ensemble's (biaffine.parsers.ensemble)
    if isinstance(members, list) and any(
        isinstance(member, Mapping) and _reads_files(member.get("config")) for member in members
    ):
        return True
    return isinstance(encoder, Mapping) and bool(
        encoder.get("pretrained") or encoder.get("transformer")
    )


def _build_within_budget(checkpoint: Checkpoint, where: str) -> nn.Module:
    """The model, built allocating no more than the file's weights, then compared with them.

    An encoder that reads pretrained inputs while it is built allocates them beside the file's
    weights: for it the size bounds of :func:`load` stand alone.
    """
    stored = sum(tensor.numel() for tensor in checkpoint.state_dict.values())
    budget = _AllocationBudget(stored + _SLACK, where)
    bounded = contextlib.nullcontext() if _reads_files(checkpoint.model_config) else budget
    with bounded, loading_weights():
        model = _build(checkpoint, where)
    _check_fit(model.state_dict(), checkpoint.state_dict, where)
    return model


def _check_fit(
    expected: Mapping[str, torch.Tensor], stored: Mapping[str, torch.Tensor], where: str
) -> None:
    """Refuse stored weights whose names, shapes or dtypes differ from the model's.

    Args:
        expected: ``state_dict()`` of the model the config builds.
        stored: the checkpoint's weights.
        where: ``<file>: `` or nothing, to start the message.
    """
    missing, unexpected = expected.keys() - stored.keys(), stored.keys() - expected.keys()
    if missing or unexpected:
        raise CheckpointError(
            f"{where}weights do not fit the model config: missing {_names(missing)}, "
            f"unexpected {_names(unexpected)}"
        )
    for name, want in expected.items():
        have = stored[name]
        if have.dtype != want.dtype or have.shape != want.shape:
            raise CheckpointError(
                f"{where}weights do not fit the model config: {name} is {_describe(have)} "
                f"where the config builds {_describe(want)}"
            )


def _names(keys: Iterable[str], shown: int = 3) -> str:
    """The first names in sorted order (a renamed module would otherwise list hundreds)."""
    names = sorted(keys)
    if not names:
        return "none"
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _describe(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}"


def find(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Checkpoint files named directly, or every ``best.pt`` under a folder (a sweep's runs).

    Raises:
        FileNotFoundError: a path that is neither a file nor a folder.
    """
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(path.rglob("best.pt")))
        elif path.is_file():
            found.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such checkpoint or folder")
    return found
