"""The CoNLL-U columns a model can predict besides the tree, in one place.

A tagged column is one class per word: its name is at once the key of its vocabulary
(``Vocabs.columns``), of its gold ids (``Batch.columns``), of its tagger head and of its
predicted values, and the name :meth:`Sentence.with_columns` writes it under. The classes of
UPOS, XPOS and FEATS are the column's strings; those of LEMMA are edit scripts
(:mod:`biaffine.data.lemmas`), made from each word's form and lemma by :func:`classes` and
turned back into lemmas by :func:`strings`.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from biaffine.data.lemmas import apply, is_address, is_whole, script_of, scripts_of
from biaffine.data.lexicon import ANALYSED, Lexicon

if TYPE_CHECKING:
    from biaffine.data.conllu import Sentence

__all__ = [
    "CONLLU_NAMES",
    "LOSS_WEIGHTS",
    "TAGGED",
    "classes",
    "prefer_written",
    "strings",
    "unseen_address",
]

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


def classes(
    sentence: Sentence, column: str, known: Container[str] | None = None
) -> list[str | None]:
    """The class of each word of ``sentence`` in ``column`` (None: the word has none).

    UPOS, XPOS and FEATS: the column's strings. LEMMA: the edit script of each (form, lemma),
    None for an unannotated lemma (``_``); with ``known`` (a model's classes), the first script
    it holds among those that rebuild the lemma (:func:`~biaffine.data.lemmas.scripts_of`), so
    a model trained before a casing existed learns on its own classes (``trainer.init_from``).
    """
    if column != "lemma":
        return getattr(sentence, column)
    scripts = [
        _script_of(f, lemma) for f, lemma in zip(sentence.forms, sentence.lemmas, strict=True)
    ]
    if known is not None:
        pairs = zip(sentence.forms, sentence.lemmas, strict=True)
        for i, (script, (form, lemma)) in enumerate(zip(scripts, pairs, strict=True)):
            if script is not None and script not in known:
                scripts[i] = next((s for s in scripts_of(form, lemma) if s in known), script)
    return scripts


def strings(
    column: str,
    predicted: Sequence[str | None],
    forms: Sequence[str],
    *,
    lexicon: Lexicon | None = None,
    upos: Sequence[str | None] | None = None,
    feats: Sequence[str] | None = None,
    runners_up: Sequence[Sequence[str]] | None = None,
    doubtful: Sequence[bool] | None = None,
    written: Sequence[str | None] | None = None,
) -> list[str]:
    """The values to write for the ``predicted`` classes of a sentence's words in ``column``.

    LEMMA: the lexicon's lemma of each word it holds (:meth:`Lexicon.lemma`, by the word's
    UPOS where ``upos`` gives one, and its FEATS where ``feats`` does), else its script applied
    to its form, or the form itself where the script does not apply (it cuts more than the form
    has). A script whose lemma is
    no training lemma (:meth:`Lexicon.knows`) gives way to the first of the word's
    ``runners_up`` whose lemma is one: Turkish "limandan" takes "liman" (cut 3) over the
    best-scored "lim" (cut 5). A whole-lemma script (:func:`~biaffine.data.lemmas.is_whole`)
    is no such evidence, its lemma being a training lemma whatever the word: "Kindest" takes
    "kind" over the "good" of "best", and no runner-up is taken for being one. Where no
    runner-up gives a training lemma, the script of the word's ending with its UPOS
    (:meth:`Lexicon.guess_lemma`) is taken, if the lexicon has one. A word with a lemma
    ``written`` by the lexicon's generator (:mod:`biaffine.data.lemma_generator`) takes that
    one instead, unless the lemma found so is a training lemma and the written one is not
    (:func:`prefer_written`). A web or e-mail address the lexicon lacks keeps its form
    (:func:`~biaffine.data.lemmas.is_address`), whatever its script or generator says (EWT
    test Lemmas 97.43 -> 97.55 for ``en_ewt``). XPOS and FEATS: the
    lexicon's value for each ``doubtful`` word it holds (:meth:`Lexicon.analysis`, by the
    word's UPOS), or for an unseen one the value of its ending (:meth:`Lexicon.guess`), else
    the class. UPOS: the lexicon's
    UPOS of each ``doubtful`` word it holds (:meth:`Lexicon.tag`), else the class.

    Args:
        column: a column of :data:`TAGGED`.
        predicted: the class of each word, str[n]; LEMMA: None for a word whose lemma the
            lexicon gives (:meth:`Lexicon.finds_lemma`), which reads no script.
        forms: the words, str[n].
        lexicon: the training lemmas and tags, or None for the classes alone.
        upos: the UPOS of each word (None where unknown), or None for none at all.
        feats: LEMMA: the predicted FEATS of each word, or None for none.
        runners_up: LEMMA: the other scripts of each word worth trying, best first (str[n][*]),
            or None for none.
        doubtful: UPOS, XPOS and FEATS: whether the tagger is unsure of each word's class
            (bool[n]), or None for every word.
        written: LEMMA: the generator's lemma of each word (None where it wrote none: the
            words whose form the lexicon holds), or None for none.
    """
    tags = [None] * len(forms) if upos is None else upos
    unsure = [True] * len(forms) if doubtful is None else doubtful
    if column in ANALYSED and lexicon is not None:
        words = zip(predicted, forms, tags, unsure, strict=True)
        return [
            (ask and _analysis(lexicon, column, f, tag)) or value for value, f, tag, ask in words
        ]
    if column == "upos" and lexicon is not None:
        words = zip(predicted, forms, unsure, strict=True)
        return [(ask and lexicon.tag(form)) or upos for upos, form, ask in words]
    if column != "lemma":
        return list(predicted)
    others = [()] * len(forms) if runners_up is None else runners_up
    analyses = [None] * len(forms) if feats is None else feats
    generated = [None] * len(forms) if written is None else written
    words = zip(predicted, forms, tags, analyses, others, generated, strict=True)
    return [
        _address_kept(form, lexicon)
        or prefer_written(_lemma(script, form, (tag, f), lexicon, tried), lemma, lexicon)
        for script, form, tag, f, tried, lemma in words
    ]


def _address_kept(form: str, lexicon: Lexicon | None) -> str | None:
    """The form of a web or e-mail address the lexicon lacks (its lemma), else None."""
    return form if unseen_address(form, lexicon) else None


def unseen_address(form: str, lexicon: Lexicon | None) -> bool:
    """Whether ``form`` is a web or e-mail address that ``lexicon`` lacks (any, without one).

    Such a word's lemma is its form, and its tags those training gave addresses
    (:func:`~biaffine.data.lemmas.is_address`, :attr:`Lexicon.address_tags`).
    """
    return is_address(form) and (lexicon is None or lexicon.lacks(form))


def prefer_written(found: str, written: str | None, lexicon: Lexicon | None) -> str:
    """The generator's ``written`` lemma of a word, or the lemma ``found`` for it otherwise.

    ``found`` is kept where ``written`` is None or blank, or ``found`` is a training lemma
    (:meth:`Lexicon.knows`) and ``written`` is not: each is trusted where it names
    a lemma training has and the other does not; where both do, or neither, the generator's is
    taken. Chosen on the dev sets of IMST and Szeged among four rules (docs/lemmas.md): IMST's
    test Lemmas 93.14 -> 94.66, Szeged's 91.60 -> 92.53.
    """
    if written is None or not written.strip() or lexicon is None:
        return found
    if lexicon.knows(found) and not lexicon.knows(written):
        return found
    return written


def _analysis(lexicon: Lexicon, column: str, form: str, upos: str | None) -> str | None:
    """The lexicon's XPOS or FEATS of a word it holds, else its suffix guess, else None."""
    return lexicon.analysis(column, form, upos) or lexicon.guess(column, form, upos)


def _lemma(
    script: str | None,
    form: str,
    analysis: tuple[str | None, str | None],
    lexicon: Lexicon | None,
    alternatives: Sequence[str],
) -> str:
    """The lemma of one word with its (UPOS, FEATS), as :func:`strings` says.

    ``script`` is None only for a word whose lemma ``lexicon`` gives, which never reads it.
    """
    if lexicon is None:
        return _applied(script, form)
    found = lexicon.lemma(form, *analysis)
    if found is not None:
        return found
    best = _applied(script, form)
    if lexicon.knows(best) and not is_whole(script):
        return best
    for other in alternatives:
        lemma = None if is_whole(other) else apply(other, form)
        if lemma is not None and lexicon.knows(lemma):
            return lemma
    guessed = lexicon.guess_lemma(form, analysis[0])
    return best if guessed is None else guessed


def _applied(script: str, form: str) -> str:
    """``script`` applied to ``form``, or the form where it does not apply."""
    found = apply(script, form)
    return form if found is None else found
