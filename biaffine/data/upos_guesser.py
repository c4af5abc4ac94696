"""UPOS of the words training lacks, weighed from their characters too, torch-free.

The UPOS tagger reads a word in its sentence, but for a form training never had it has its
characters only through the parser's small character model, and it gets fewer such words
right: 90.18% of them on Szeged dev, 81.92% on IMST dev (docs/tags.md). Their endings say more
in Turkish and Hungarian. This model reads the word's characters alone with a BiLSTM
(:mod:`biaffine.data.character_model`) and scores every UPOS training had (its
:class:`CharacterClassifier`). Its log-probabilities, times :attr:`UposGuesser.weight`, are
added to the tagger's scores of the words whose form the lexicon lacks, before the tag sets
are chosen (:func:`biaffine.inference.choices.predicted_columns`): the product of the two
models' distributions, weighed. It is trained on the training file's distinct (form, UPOS)
pairs, and its weight chosen on the dev file with the model it joins, by
:mod:`biaffine.training.upos_guesser`; it travels in the training lexicon
(:class:`biaffine.data.lexicon.Lexicon`), so both runtimes read it with the same code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from biaffine.data.character_model import (
    UNKNOWN,
    CharacterClassifier,
    CharacterModel,
    read_distinct,
)

__all__ = ["UposGuesser"]

BATCH = 1024
"""Words read at once."""

Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True, eq=False)
class UposGuesser(CharacterClassifier):
    """Characters, UPOS and weights of a character UPOS classifier (module docstring).

    Attributes:
        chars, dim, hidden, weights: as :class:`CharacterClassifier`'s.
        tags: none (it reads no UPOS: it scores them).
        classes: the C UPOS it scores.
        weight: what its log-probabilities count for beside the tagger's scores (0: nothing).
    """

    KIND: ClassVar[str] = "UPOS guesser"

    weight: float

    def __post_init__(self) -> None:
        """As :class:`CharacterModel`'s, and check that it reads no UPOS and has a fair weight.

        Raises:
            ValueError: tags to read, or a weight that is not finite and at least 0.
        """
        if self.tags:
            raise ValueError("a UPOS guesser reads no UPOS: its tags must be empty")
        if not math.isfinite(self.weight) or self.weight < 0:
            raise ValueError(f"UPOS guesser weight must be finite and >= 0, got {self.weight}")
        CharacterModel.__post_init__(self)  # (no zero-argument super() with slots)

    def source(self, form: str, upos: str) -> list[int]:
        """The symbols the encoder reads: the form's characters (``upos`` is not read)."""
        return [self._char_ids.get(c, UNKNOWN) for c in form] or [UNKNOWN]

    def own(self) -> dict[str, Any]:
        """``{"classes": [...], "weight": w}``."""
        return {**CharacterClassifier.own(self), "weight": self.weight}

    @classmethod
    def own_keys(cls) -> tuple[str, ...]:
        """``classes`` and ``weight``."""
        return ("classes", "weight")

    @classmethod
    def own_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The classes and the weight, checked.

        Raises:
            ValueError: classes that are not strings, or a weight that is not a number.
        """
        weight = data["weight"]
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise ValueError(f"UPOS guesser weight must be a number, got {weight!r}")
        classes = super(UposGuesser, cls).own_fields(data)["classes"]
        return {"classes": classes, "weight": float(weight)}

    def log_probs(self, forms: Sequence[str], workers: int = 1) -> Array:
        """float32[W, C] each form's log-probability of every UPOS; each distinct form read once.

        ``workers``: threads reading batches side by side (:func:`read_distinct`).
        """
        if not forms:
            return np.empty((0, len(self.classes)), dtype=np.float32)
        found = read_distinct([(form, "") for form in forms], self._log_probs, BATCH, workers)
        return np.stack(found)

    def _log_probs(self, words: Sequence[tuple[str, str]]) -> Array:
        """float32[W, C] :meth:`log_probs` of one batch of (form, "") words."""
        scores = self.logits(words)
        scores -= scores.max(1, keepdims=True)
        scores -= np.log(np.exp(scores).sum(1, keepdims=True))
        return scores
