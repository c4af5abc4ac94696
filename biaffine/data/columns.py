"""The CoNLL-U columns a model can predict besides the tree, in one place.

A tagged column is one class per word: its name is at once the key of its vocabulary
(``Vocabs.columns``), of its gold ids (``Batch.columns``), of its tagger head and of its
predicted values, and the name :meth:`Sentence.with_columns` writes it under. The classes of
UPOS, XPOS and FEATS are the column's strings; those of LEMMA are edit scripts
(:mod:`biaffine.data.lemmas`), made from each word's form and lemma by :func:`classes` and
turned back into lemmas by :func:`strings`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from biaffine.data.lemmas import apply, script_of

if TYPE_CHECKING:
    from biaffine.data.conllu import Sentence

__all__ = ["CONLLU_NAMES", "LOSS_WEIGHTS", "TAGGED", "classes", "strings"]

TAGGED = ("upos", "xpos", "feats", "lemma")
"""Tagged columns, in the order their vocabularies, tensors and heads are built."""

LOSS_WEIGHTS = {
    "upos": "tag_loss_weight",
    "xpos": "xpos_loss_weight",
    "feats": "feats_loss_weight",
    "lemma": "lemma_loss_weight",
}
"""The parser option weighting each column's tagger loss (0: no tagger for that column)."""

CONLLU_NAMES = {"upos": "UPOS", "xpos": "XPOS", "feats": "FEATS", "lemma": "LEMMA"}
"""Each tagged column's name in the CoNLL-U format (and in ``predict.py columns=...``)."""

# Words repeat: each (form, lemma) pair's script is made once while it stays among the recent.
_script_of = lru_cache(maxsize=1 << 16)(script_of)


def classes(sentence: Sentence, column: str) -> list[str | None]:
    """The class of each word of ``sentence`` in ``column`` (None: the word has none).

    UPOS, XPOS and FEATS: the column's strings. LEMMA: the edit script of each (form, lemma),
    None for an unannotated lemma (``_``).
    """
    if column == "lemma":
        return [
            _script_of(f, lemma) for f, lemma in zip(sentence.forms, sentence.lemmas, strict=True)
        ]
    return getattr(sentence, column)


def strings(column: str, predicted: Sequence[str], forms: Sequence[str]) -> list[str]:
    """The values to write for the ``predicted`` classes of a sentence's words in ``column``.

    LEMMA: each script applied to its form, or the form itself where the script does not apply
    (it cuts more than the form has). Other columns: the classes themselves.
    """
    if column != "lemma":
        return list(predicted)
    lemmas = (apply(script, form) for script, form in zip(predicted, forms, strict=True))
    return [form if lemma is None else lemma for lemma, form in zip(lemmas, forms, strict=True)]
