"""What a caller asks of a parse, and what comes back: one request type, one result type.

Every family of :mod:`biaffine.inference` answers a :class:`Request` for a batch with one
:class:`SentenceResult` per sentence, or refuses it with a one-line reason (:class:`Refused`).
The Python API, ``predict.py``, training's dev scoring and the experiments all ask this way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from numbers import Integral

from biaffine.data.columns import TAGGED

__all__ = [
    "ALL_COLUMNS",
    "Abandoned",
    "Refused",
    "Request",
    "SentenceResult",
    "Tree",
    "check_wanted",
]

ALL_COLUMNS = ("all",)
"""``Request.columns`` asking for every column the model's taggers predict."""


class Refused(ValueError):  # noqa: N818  (reads as what happened: "raise Refused")
    """A family or a model cannot answer a request (the message says what and why, in a line)."""


class Abandoned(Exception):  # noqa: N818  (reads as what happened: "raise Abandoned")
    """A parse stopped between batches: its caller no longer wants the answer.

    A server's request whose client has had its 503 (``limits.timeout_s``): parsing it on
    held the worker, and every request behind it, for as long as it took.
    """


def check_wanted(abandoned: Callable[[], bool] | None) -> None:
    """Raise :class:`Abandoned` where ``abandoned`` (None: never) says so; between batches."""
    if abandoned is not None and abandoned():
        raise Abandoned("the answer is no longer wanted")


@dataclass(frozen=True, slots=True)
class Request:
    """What to compute for each sentence besides its best tree.

    Attributes:
        probabilities: per-arc and per-label probabilities, and the tree's log-probability
            (graph parsers) or the transition path's (transition parsers).
        kbest: the k best trees of each sentence, best first (None: one tree).
        fixed_heads: per sentence, one entry per word: a head to keep (0 = ROOT), or None
            where the parser chooses (None as a whole: nothing fixed). Only integers (Python or
            numpy, not bool) are heads: ``3.7`` or ``"4"`` is refused, never rounded.
        columns: tagged columns to predict (:data:`biaffine.data.columns.TAGGED`), or
            ``("all",)``: every column the model has a tagger for.
        overwrite: write the predicted columns over the input's values; by default a cell the
            input fills (anything but ``_``) keeps its value and only ``_`` cells are filled.
    """

    probabilities: bool = False
    kbest: int | None = None
    fixed_heads: Sequence[Sequence[int | None]] | None = None
    columns: tuple[str, ...] = ()
    overwrite: bool = False

    def __post_init__(self) -> None:
        """Refuse malformed requests now, in one line each."""
        k = self.kbest
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"kbest={k!r} must be an integer >= 1 (or None for one tree)")
        if ALL_COLUMNS[0] in self.columns and self.columns != ALL_COLUMNS:
            raise ValueError(f"columns {list(self.columns)}: 'all' stands alone, or name each")
        unknown = [c for c in self.columns if c not in TAGGED and self.columns != ALL_COLUMNS]
        if unknown:
            raise ValueError(
                f"columns {unknown}: predictable columns are {', '.join(TAGGED)} (lower case), "
                "or 'all' alone"
            )
        if self.fixed_heads is not None:
            for k, heads in enumerate(self.fixed_heads):
                _check_heads(heads, k)

    def for_model(self, tagged: Sequence[str]) -> Request:
        """This request with ``columns=("all",)`` made the ``tagged`` columns of a model.

        Raises:
            Refused: ``all`` asked of a model without any tagger.
        """
        if self.columns != ALL_COLUMNS:
            return self
        if not tagged:
            raise Refused("columns=all: this model has no tagger (it predicts trees only)")
        return replace(self, columns=tuple(tagged))


def _check_heads(heads: Sequence[int | None], sentence: int) -> None:
    # Named by the argument's indices: "sentence 0, word 1" read as a sentence numbered from
    # 0 beside the other errors' <input>:LINE, numbered from 1.
    for index, head in enumerate(heads):
        if head is not None and (isinstance(head, bool) or not isinstance(head, Integral)):
            raise ValueError(
                f"fixed_heads[{sentence}][{index}]={head!r} (word {index + 1}) is a "
                f"{type(head).__name__}; a head is an int (0 = ROOT) or None"
            )


@dataclass(frozen=True, slots=True)
class Tree:
    """One tree of a sentence; head ``i - 1`` is word i's (0 = ROOT).

    Attributes:
        heads: int[n].
        rels: str[n], the relation of each word's arc.
        head_probs: float[n], marginal probability of each chosen arc (graph, probabilities).
        label_probs: float[n], probability of each chosen label at its arc (probabilities).
        log_prob: the tree's log-probability (graph, probabilities), or its score (k-best: the
            sum of its words' head log-probabilities).
        path_log_prob: transition parsers: log of the product of the probabilities of the
            transitions the search took (probabilities).
    """

    heads: list[int]
    rels: list[str]
    head_probs: list[float] | None = None
    label_probs: list[float] | None = None
    log_prob: float | None = None
    path_log_prob: float | None = None


@dataclass(frozen=True, slots=True)
class SentenceResult:
    """What a request found for one sentence.

    Attributes:
        trees: the best tree, or the k best, best first.
        columns: predicted values of each requested column, str[n] by column name.
    """

    trees: list[Tree]
    columns: dict[str, list[str]] = field(default_factory=dict)
