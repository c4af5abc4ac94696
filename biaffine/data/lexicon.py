"""A lemma lexicon of the training data, looked up before the lemmatizer's edit script.

A word seen in training usually has the lemma it had there: Stanza and UDPipe 1 look it up
first and classify (or generate) only the words they never saw. The lexicon holds, from the
training words with a lemma (:func:`biaffine.data.lemmas.is_annotated`):

- ``tagged``: (form, UPOS) -> the lemma that pair had most often, for every pair seen;
- ``forms``: form -> the lemma that form had most often, only where that lemma covers at least
  :data:`MIN_FORM_SHARE` of the form's occurrences: a form with several lemmas (French "de",
  a preposition, or the partitive article of lemma "un") is better left to the UPOS key or to
  the classifier, which sees the context.

Ties go to the lemma first in code-point order, so the lexicon does not depend on the order of
the sentences. The lookup order (:meth:`Lexicon.lemma`) and the threshold were chosen by
measuring (``experiments/lemma_lexicon.py``, docs/lemmas.md). Torch-free; plain data for
checkpoints through :meth:`Lexicon.to_dict`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from biaffine.data.conllu import Sentence
from biaffine.data.lemmas import is_annotated

__all__ = ["MIN_FORM_SHARE", "LemmaCounts", "Lexicon", "build_lexicon"]

MIN_FORM_SHARE = 0.99
"""The share of a form's training occurrences its lemma must cover to be looked up by form
alone (chosen by measuring, see docs/lemmas.md)."""

_NO_UPOS = "_"
"""The UPOS cell of a word without one: no (form, UPOS) key is made of it or looked up."""

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Training lemmas by (form, UPOS) and by form; see the module docstring.

    Attributes:
        tagged: (form, UPOS) -> lemma.
        forms: form -> lemma, for the forms unambiguous enough.
        known: every lemma of the two tables, lower-cased (derived from them): the words a
            script's output is checked against (:func:`biaffine.data.columns.strings`).
    """

    tagged: dict[tuple[str, str], str] = field(default_factory=dict)
    forms: dict[str, str] = field(default_factory=dict)
    known: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Gather :attr:`known`, the lemmas of both tables lower-cased."""
        lemmas = {*self.tagged.values(), *self.forms.values()}
        object.__setattr__(self, "known", frozenset(lemma.lower() for lemma in lemmas))

    def __len__(self) -> int:
        """Number of entries, both keys counted."""
        return len(self.tagged) + len(self.forms)

    def lemma(self, form: str, upos: str | None) -> str | None:
        """The lemma of ``form``, or None for a word the lexicon lacks (left to the classifier).

        Looked up by (form, UPOS) where a UPOS is known, then by form alone, then by (form
        lower-cased, UPOS): "Les" at the start of a sentence finds ("les", DET). The UPOS keeps
        the lower-cased lookup safe; by form alone it lost to the classifier ("US" -> "we").

        Args:
            form: the word as written.
            upos: its UPOS (predicted or given), or None (or ``_``) when unknown.
        """
        tagged = upos is not None and upos != _NO_UPOS
        found = self.tagged.get((form, upos)) if tagged else None
        if found is None:
            found = self.forms.get(form)
        if found is None and tagged:
            found = self.tagged.get((form.lower(), upos))
        return found

    def to_dict(self) -> dict[str, Any]:
        """Plain data, entries sorted, lists only (it survives JSON too).

        ``{"tagged": [[form, upos, lemma], ...], "forms": [[form, lemma], ...]}``.
        """
        return {
            "tagged": [[form, upos, lemma] for (form, upos), lemma in sorted(self.tagged.items())],
            "forms": [[form, lemma] for form, lemma in sorted(self.forms.items())],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lexicon:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: missing keys, or entries that are not lists of strings of the right size.
        """
        missing = {"tagged", "forms"} - set(data)
        if missing:
            raise ValueError(f"lemma lexicon data lacks keys {sorted(missing)}")
        tagged = _rows(data["tagged"], 3, "tagged")
        forms = _rows(data["forms"], 2, "forms")
        return cls({(f, u): lemma for f, u, lemma in tagged}, dict(forms))


def _rows(rows: Any, size: int, name: str) -> list[list[str]]:
    """``rows`` checked to be a list of lists of ``size`` strings (``name`` in the error)."""
    if not isinstance(rows, list) or not all(
        isinstance(row, list) and len(row) == size and all(isinstance(s, str) for s in row)
        for row in rows
    ):
        raise ValueError(f"lemma lexicon {name!r} must be a list of lists of {size} strings")
    return rows


def build_lexicon(
    sentences: Iterable[Sentence], *, min_form_share: float = MIN_FORM_SHARE
) -> Lexicon:
    """The lexicon of ``sentences`` (training data, iterated once); see :class:`LemmaCounts`."""
    counts = LemmaCounts()
    for sentence in sentences:
        counts.add(sentence)
    return counts.lexicon(min_form_share=min_form_share)


class LemmaCounts:
    """The lemmas of each (form, UPOS) and each form, counted sentence by sentence.

    Words without a lemma (``_``) are skipped; a word without a UPOS counts for its form only.
    """

    def __init__(self) -> None:
        """No sentence counted yet."""
        self.tagged: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.forms: defaultdict[str, Counter[str]] = defaultdict(Counter)

    def add(self, sentence: Sentence) -> None:
        """Count the lemmas of ``sentence``'s words."""
        for form, lemma, upos in zip(sentence.forms, sentence.lemmas, sentence.upos, strict=True):
            if is_annotated(form, lemma):
                self.forms[form][lemma] += 1
                if upos != _NO_UPOS:
                    self.tagged[form, upos][lemma] += 1

    def lexicon(self, *, min_form_share: float = MIN_FORM_SHARE) -> Lexicon:
        """The lexicon of the words counted.

        Args:
            min_form_share: the share of a form's occurrences its majority lemma must cover
                for the form to be looked up alone (0 keeps every form, above 1 none).

        Raises:
            ValueError: ``min_form_share`` is negative.
        """
        if min_form_share < 0:
            raise ValueError(f"min_form_share must be >= 0, got {min_form_share}")
        return Lexicon(_majorities(self.tagged, 0.0), _majorities(self.forms, min_form_share))


def _majorities(counts: Mapping[K, Counter[str]], min_share: float) -> dict[K, str]:
    """Each key's most frequent lemma, where it covers ``min_share`` of the key's occurrences.

    Ties go to the smallest lemma string, so the order of the counts does not matter.
    """
    found = {}
    for key, lemmas in counts.items():
        lemma, count = min(lemmas.items(), key=lambda item: (-item[1], item[0]))
        if count >= min_share * lemmas.total():
            found[key] = lemma
    return found
