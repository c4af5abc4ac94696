"""FEATS of the words training lacks, picked from their characters, torch-free.

The FEATS tagger reads a word in its sentence, but for a form training never had it has little
to go on: on IMST dev it gets 65% of such words' whole FEATS right (95% of the others), and 77%
of its FEATS errors are on them (docs/tags.md). Their endings say more in Turkish and
Hungarian. This model reads the word's UPOS and then its characters with a BiLSTM
(:mod:`biaffine.data.character_model`) and scores every FEATS value training had from the mean
of its states and the two directions' last states (its :class:`CharacterClassifier`); the value
picked is the best of those training had with that UPOS: by its scores alone, or, where it has
a weight, by the FEATS tagger's log-probabilities plus the weight times its own (a product of
the two distributions, as the UPOS guesser joins the UPOS tagger). It is trained on the
training file's distinct (form, UPOS, FEATS) triples, and its weight chosen on the dev file,
by :mod:`biaffine.training.feats_guesser`; it travels in the training lexicon
(:class:`biaffine.data.lexicon.Lexicon`), so both runtimes read it with the same code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from biaffine.data.character_model import CharacterClassifier, CharacterModel, read_distinct

__all__ = ["FeatsGuesser"]

BATCH = 1024
"""Words read at once."""

Array = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True, eq=False)
class FeatsGuesser(CharacterClassifier):
    """Symbols, FEATS values and weights of a character FEATS classifier (module docstring).

    Attributes:
        chars, tags, dim, hidden, weights: as :class:`CharacterClassifier`'s.
        classes: the C FEATS values it picks from (``_`` for none).
        allowed: by UPOS, the ids of the values training had with it; a word whose UPOS is not
            here may take any value.
        weight: what its log-probabilities count for beside the tagger's
            (:meth:`feats`), or None: its pick replaces the tagger's (as in lexicons
            written before the weight).
    """

    KIND: ClassVar[str] = "FEATS guesser"

    allowed: Mapping[str, tuple[int, ...]]
    weight: float | None = None
    _upos_rows: dict[str, int] = field(init=False, repr=False, compare=False)
    _allowed_mask: npt.NDArray[np.bool_] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """As :class:`CharacterModel`'s; and a row of allowed values per UPOS, then one for any.

        ``_allowed_mask``: bool[len(allowed) + 1, C], row k for the k-th UPOS of ``allowed``,
        the last row all True (a UPOS training never had).
        """
        if self.weight is not None and not (math.isfinite(self.weight) and self.weight > 0):
            raise ValueError(f"FEATS guesser weight must be finite and > 0, got {self.weight}")
        CharacterModel.__post_init__(self)  # (no zero-argument super() with slots)
        rows = {upos: k for k, upos in enumerate(self.allowed)}
        mask = np.zeros((len(rows) + 1, len(self.classes)), dtype=bool)
        for upos, ids in self.allowed.items():
            mask[rows[upos], list(ids)] = True
        mask[-1] = True
        object.__setattr__(self, "_upos_rows", rows)
        object.__setattr__(self, "_allowed_mask", mask)

    def own(self) -> dict[str, Any]:
        """``{"classes": [...], "allowed": {upos: [id, ...]}}``, and ``"weight": w`` where set."""
        allowed = {upos: list(ids) for upos, ids in sorted(self.allowed.items())}
        weight = {} if self.weight is None else {"weight": self.weight}
        return {**CharacterClassifier.own(self), "allowed": allowed, **weight}

    @classmethod
    def own_keys(cls) -> tuple[str, ...]:
        """``classes`` and ``allowed``."""
        return ("classes", "allowed")

    @classmethod
    def own_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The values and the UPOS's allowed ids, checked.

        Raises:
            ValueError: values that are not strings, ids that are not theirs, or a weight that
                is not a number.
        """
        classes = super(FeatsGuesser, cls).own_fields(data)["classes"]
        allowed = {}
        for upos, ids in dict(data["allowed"]).items():
            if not all(isinstance(k, int) and 0 <= k < len(classes) for k in ids):
                raise ValueError(f"FEATS guesser values allowed with {upos!r} are not its ids")
            allowed[str(upos)] = tuple(ids)
        weight = data.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int | float)):
            raise ValueError(f"FEATS guesser weight must be a number, got {weight!r}")
        return {
            "classes": classes,
            "allowed": allowed,
            "weight": None if weight is None else float(weight),
        }

    def feats(
        self, words: Sequence[tuple[str, str]], tagger: Array | None = None, workers: int = 1
    ) -> list[str]:
        """The FEATS picked for each (form, UPOS); each distinct word read once.

        Args:
            words: W (form, UPOS) pairs.
            tagger: float[W, C] the tagger's log-probabilities of the guesser's values for
                each word, or None. With a :attr:`weight`, the value picked is the best of the
                tagger's plus the weight times the guesser's (among those allowed with the
                UPOS); without one, or without ``tagger``, the guesser's best.
            workers: threads reading batches side by side (:func:`read_distinct`).
        """
        if self.weight is None or tagger is None:
            best = self._distinct(words, self.scores, workers).argmax(1)
        else:
            best = (tagger + self.weight * self._distinct(words, self.log_probs, workers)).argmax(1)
        return [self.classes[k] for k in best.tolist()]

    def log_probs(self, words: Sequence[tuple[str, str]]) -> Array:
        """float32[W, C] each word's log-probabilities of its UPOS's values, else ``-inf``."""
        scores = self.scores(words)
        scores -= scores.max(1, keepdims=True)
        scores -= np.log(np.exp(scores).sum(1, keepdims=True))
        return scores

    def _distinct(
        self,
        words: Sequence[tuple[str, str]],
        read: Callable[[Sequence[tuple[str, str]]], Array],
        workers: int,
    ) -> Array:
        """float32[W, C] ``read`` of each word: each distinct one once (:func:`read_distinct`)."""
        if not words:
            return np.empty((0, len(self.classes)), dtype=np.float32)
        return np.stack(read_distinct(words, read, BATCH, workers))

    def scores(self, words: Sequence[tuple[str, str]]) -> Array:
        """float32[W, C] scores of each word's values, ``-inf`` where its UPOS never had one."""
        scores = self.logits(words)
        rows = [self._upos_rows.get(upos, len(self._upos_rows)) for _, upos in words]
        return np.where(self._allowed_mask[rows], scores, np.float32(-np.inf))
