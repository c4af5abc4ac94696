"""Trained models that ship with the project, loaded by name, offline.

Example::

    from biaffine import models

    models.names()                 # ['en_ewt', 'en_ewt_glove', ..., 'vi_vtb']
    parser = models.load("en_ewt")  # the same as biaffine.api.Parser.load("en_ewt")
    trees = parser.parse(text="The quick brown fox jumped over the lazy dog.")

``python -m biaffine.models`` lists them with their data, licence, size and scores; each
model's card (``models/NAME/card.json``, :mod:`biaffine.models.card`) and ``docs/models.md``
say how it was trained and what it scores. Where models are looked for:
:mod:`biaffine.installed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from biaffine.installed import (
    InstalledModel,
    MissingRequirementError,
    UnknownModelError,
    find,
    installed,
)

if TYPE_CHECKING:
    from biaffine.api import Parser

__all__ = [
    "InstalledModel",
    "MissingRequirementError",
    "UnknownModelError",
    "find",
    "installed",
    "load",
    "names",
]


def names() -> list[str]:
    """The installed models' names, sorted."""
    return list(installed())


def load(
    name: str, *, device: str = "cpu", threads: int | None = None, bf16: bool = False
) -> Parser:
    """The installed model ``name`` with its segmenter (never a file path: safe for servers).

    Raises:
        UnknownModelError: no model of that name (the message lists the installed ones).
    """
    from biaffine.api import Parser  # torch: listing the models (python -m) needs none

    return Parser.named(name, device=device, threads=threads, bf16=bf16)
