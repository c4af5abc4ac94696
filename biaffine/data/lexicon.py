"""A lexicon of the training data, looked up before the lemmatizer and the taggers.

A word seen in training usually has the lemma and the analysis it had there: Stanza and UDPipe
1 look it up first and classify (or generate) only the words they never saw. The lexicon holds,
from the training words with a lemma (:func:`biaffine.data.lemmas.is_annotated`):

- ``tagged``: (form, UPOS) -> the lemma that pair had most often, for every pair seen;
- ``forms``: form -> the lemma that form had most often, only where that lemma covers at least
  :data:`MIN_FORM_SHARE` of the form's occurrences: a form with several lemmas (French "de",
  a preposition, or the partitive article of lemma "un") is better left to the UPOS key or to
  the classifier, which sees the context;
- ``featured``: (form lower-cased, UPOS, FEATS) -> lemma, likewise only where it covers
  :data:`MIN_FORM_SHARE`, in treebanks that annotate FEATS: English "her" is "she" as an
  object and "her" as a possessive (``Poss=Yes``), which (form, UPOS) cannot tell apart;
- ``shapes``: for the words with a digit, their :func:`~biaffine.data.lemmas.digit_shape` -> the
  keep mask (:func:`~biaffine.data.lemmas.mask_of`) most of them took, where it covers
  :data:`MIN_FORM_SHARE` of at least :data:`MIN_SHAPE_COUNT` words: English numbers drop their
  thousands separators ("420,588" -> "420588", as 108 of 108 in EWT's training data do) and
  codes keep their casing ("E17", "01-Feb-02"), which an edit script classifier, taught by
  the caseless numbers that lower-casing cannot change, gets wrong;

and from every training word with a UPOS:

- ``analyses``: for XPOS and FEATS (:data:`ANALYSED`), (form, UPOS) -> the value that pair had
  most often, only where it covers at least :data:`MIN_ANALYSIS_SHARE` of its occurrences (a
  Turkish or Hungarian form seen in training nearly always has one analysis per UPOS; an
  English "read" does not);
- ``upos``: form -> its UPOS, for the forms that had one UPOS every time
  (:data:`MIN_UPOS_SHARE`);
- ``suffixes``: for FEATS (:data:`GUESSED`), (the form's last 1 to :data:`MAX_SUFFIX` characters
  lower-cased, UPOS) -> the value words so ending had most often, where at least
  :data:`MIN_SUFFIX_COUNT` words end so and the value covers :data:`MIN_SUFFIX_SHARE` of them:
  a guess for the words never seen in training, as UDPipe 1's guesser makes (Turkish "-lerinde"
  is plural locative with a third-person possessive whatever the stem);
- ``lemma_suffixes``: (the form's last 1 to :data:`MAX_SUFFIX` characters lower-cased, UPOS) ->
  the lemma edit script (:func:`~biaffine.data.lemmas.script_of`) words so ending had most
  often, where at least :data:`MIN_SUFFIX_COUNT` words end so and the script covers
  :data:`MIN_LEMMA_SUFFIX_SHARE` of them: a guess at the lemma of a word the lemma classifier
  finds no training lemma for (Hungarian "-ban" cut, whatever the stem);
- ``tag_sets``: every (UPOS, XPOS, FEATS) a training word had, the analyses the taggers choose
  among together (:func:`biaffine.inference.choices.joint_tags`): an English NNP is a PROPN,
  and a NOUN has no ``VerbForm``;
- ``relation_upos``: (form lower-cased, universal relation) -> how often each UPOS was that
  pair's, for the pairs seen :data:`MIN_RELATION_COUNT` times or more: English "for" is SCONJ
  as ``mark`` and ADP as ``case``, "up" ADP as ``compound:prt`` and ADV as ``advmod``; the
  parsed tree's relations weigh the UPOS with it
  (:func:`biaffine.inference.choices.related_upos`);

and, where one was trained for the model (:mod:`biaffine.training.lemma_generator`; not by
:func:`build_lexicon`):

- ``generator``: a character sequence-to-sequence model that writes the lemma of a word whose
  form training lacks (:mod:`biaffine.data.lemma_generator`, :meth:`Lexicon.lacks`);
- ``feats_guesser``: a character model that picks the FEATS of such a word
  (:mod:`biaffine.data.feats_guesser`; :mod:`biaffine.training.feats_guesser` trains it);
- ``upos_guesser``: a character model whose UPOS scores of such a word join the tagger's
  (:mod:`biaffine.data.upos_guesser`; :mod:`biaffine.training.upos_guesser` trains it);

and, where they were chosen on dev for the model (:mod:`biaffine.training.doubt`):

- ``doubt``: by column (UPOS, XPOS, FEATS), the probability of the tagger's best class below
  which a word the lexicon holds takes the lexicon's value
  (:data:`biaffine.inference.choices.TAGGER_DOUBT` for a column it lacks);
- ``runner_up``: the share of the best lemma script's probability a runner-up script needs to
  be tried where the best one's lemma is no training lemma
  (:data:`biaffine.inference.choices.LEMMA_RUNNER_UP` where it is None);
- ``exact_case``: whether a lemma made for a word the lexicon lacks counts as a training lemma
  only in the casing training wrote it (:meth:`Lexicon.knows`): Turkish, Hungarian and French
  lemmas are lower-case where their words start a sentence, and the casing training gives a
  lemma then decides between the scripts; English names keep their capitals in EWT's lemmas,
  where it does not.

Ties go to the value first in code-point order, so the lexicon does not depend on the order of
the sentences. The lemma lookup order (:meth:`Lexicon.lemma`) and its threshold were chosen by
measuring (``experiments/lemma_lexicon.py``, docs/lemmas.md), the tag thresholds likewise
(``experiments/lexicon_choices.py``, docs/tags.md). Torch-free; plain data for checkpoints
through :meth:`Lexicon.to_dict`.
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from biaffine.data.conllu import Sentence, universal_relation
from biaffine.data.feats_guesser import FeatsGuesser
from biaffine.data.lemma_generator import LemmaGenerator
from biaffine.data.lemmas import (
    DROP,
    KEEP,
    LOWER,
    apply,
    apply_mask,
    digit_shape,
    is_address,
    is_annotated,
    mask_of,
    script_of,
)
from biaffine.data.upos_guesser import UposGuesser

__all__ = [
    "ANALYSED",
    "CHARACTER_MODELS",
    "DOUBTED",
    "GUESSED",
    "MAX_READ",
    "MAX_SUFFIX",
    "MIN_ANALYSIS_SHARE",
    "MIN_FORM_SHARE",
    "MIN_LEMMA_SUFFIX_SHARE",
    "MIN_RELATION_COUNT",
    "MIN_SHAPE_COUNT",
    "MIN_SUFFIX_COUNT",
    "MIN_SUFFIX_SHARE",
    "MIN_UPOS_SHARE",
    "Lexicon",
    "LexiconCounts",
    "build_lexicon",
]

ANALYSED = ("xpos", "feats")
"""The tagged columns besides UPOS that the lexicon holds by (form, UPOS): ``analyses``."""

CHARACTER_MODELS = {
    "generator": ("lemma_generator", "lemma generator"),
    "feats_guesser": ("feats_guesser", "FEATS guesser"),
    "upos_guesser": ("upos_guesser", "UPOS guesser"),
}
"""The lexicon's character models by field, in the order they are trained: each one's
metadata key for the facts of its training (the :mod:`biaffine.training` module that trains
it) and its name."""

MIN_FORM_SHARE = 0.99
"""The share of a form's training occurrences its lemma must cover to be looked up by form
alone (chosen by measuring, see docs/lemmas.md)."""

GUESSED = ("feats",)
"""The columns guessed from word endings: not XPOS, whose guesses lost on IMST's dev set (88.89
against 89.03 without them, docs/tags.md)."""

MAX_SUFFIX = 6
"""The longest word ending the suffix tables hold (characters)."""

MIN_SUFFIX_COUNT = 2
"""The fewest training words a suffix table's entry stands on."""

MIN_SUFFIX_SHARE = 0.9
"""The share of the words with an ending whose value it must cover (chosen on dev sets, see
docs/tags.md)."""

MIN_SHAPE_COUNT = 2
"""The fewest training words a shape's keep mask stands on (dev sets gain as much with 1 to 10:
docs/lemmas.md)."""

MIN_LEMMA_SUFFIX_SHARE = 0.8
"""The share of the words with an ending whose lemma script it must cover (chosen on the dev
sets of EWT, IMST and Szeged, see docs/lemmas.md)."""

MIN_UPOS_SHARE = 1.0
"""The share of a form's training occurrences its majority UPOS must cover to be looked up
(every one: chosen on dev sets, see docs/tags.md)."""

MIN_ANALYSIS_SHARE = 0.99
"""The share of a (form, UPOS) pair's training occurrences its majority XPOS or FEATS must cover
to be looked up (chosen on dev sets, see docs/tags.md)."""

MIN_ADDRESSES = 20
"""The fewest web and e-mail addresses (:func:`~biaffine.data.lemmas.is_address`) among the
lexicon's (form, UPOS) pairs for :attr:`Lexicon.address_tags` to stand on."""

MIN_ADDRESS_SHARE = 0.9
"""The share of those addresses whose (UPOS, XPOS, FEATS) it must cover (EWT: 244 of 246 are
PROPN and ADD with no features)."""

MIN_CODES = 50
"""The fewest codes (:func:`is_code`) among the lexicon's (form, UPOS) pairs for
:attr:`Lexicon.code_upos` to stand on."""

MIN_CASED_PAIRS = 20
"""The fewest (form, UPOS) pairs of a UPOS, with a capital in the form and the form up to casing
as lemma, for :attr:`Lexicon.cased_upos` to judge that UPOS."""

MIN_CASED_SHARE = 0.9
"""The share of those pairs whose lemma is the form as written for the UPOS to keep a form's
casing (EWT: PROPN, 3,502 of 3,632; ADJ 209 of 574, NOUN 71 of 1,262)."""

MIN_RELATION_COUNT = 2
"""The fewest times a (form lower-cased, universal relation) pair is seen for ``relation_upos``
to keep it: EWT dev's UPOS with ``en_ewt`` is 96.34, 96.33 and 96.31 keeping the pairs seen 1, 2
and 3 times or more, for 35,725, 13,815 and 8,084 pairs (docs/tags.md)."""

DOUBTED = ("upos", *ANALYSED)
"""The columns whose tagger gives way to the lexicon where it is unsure (``Lexicon.doubt``)."""

_NO_VALUE = "_"
"""An empty CoNLL-U cell."""

_NO_UPOS = _NO_VALUE
"""The UPOS cell of a word without one: no (form, UPOS) key is made of it or looked up."""

_NO_MASK = ""
"""What a shape's training words count for a lemma that no keep mask makes."""

_MASKING = frozenset((KEEP, LOWER, DROP))
"""The characters of a keep mask."""

_SUFFIXES = "_suffixes"
"""What the plain data's key of a column's suffix table adds to the column's name."""

K = TypeVar("K", bound=Hashable)


def is_code(form: str) -> bool:
    """Whether ``form`` has a letter and a digit and is no web or e-mail address ("E17", "5x")."""
    return (
        any(c.isdigit() for c in form) and any(c.isalpha() for c in form) and not is_address(form)
    )


MAX_READ = 64
"""The longest form the lexicon's character models read, in characters. They read a word one
character at a time in numpy: a run of 200,000 characters without a space took 102 s with every
column (12 s for the tree alone); the longest word of the Turkish and Hungarian treebanks has 35.
"""


@dataclass(frozen=True, slots=True)
class Lexicon:
    """Training lemmas, UPOS, XPOS and FEATS by form; see the module docstring.

    Attributes:
        tagged: (form, UPOS) -> lemma.
        forms: form -> lemma, for the forms unambiguous enough.
        featured: (form lower-cased, UPOS, FEATS) -> lemma, for the triples unambiguous enough
            (empty in lexicons written before it).
        analyses: column of :data:`ANALYSED` -> (form, UPOS) -> value, for the pairs
            unambiguous enough (a column absent in lexicons written before it).
        upos: form -> UPOS, for the forms unambiguous enough (empty in lexicons written
            before it).
        suffixes: column of :data:`GUESSED` -> (ending, UPOS) -> value (absent in lexicons
            written before it).
        tag_sets: every (UPOS, XPOS, FEATS) of a training word (empty in lexicons written
            before it).
        shapes: digit shape -> keep mask, for the words with a digit (empty in lexicons
            written before it).
        lemma_suffixes: (ending, UPOS) -> lemma edit script (empty in lexicons written
            before it).
        generator: the lemma writer for the forms training lacks, or None (none trained).
        feats_guesser: the FEATS picker for the forms training lacks, or None (none trained).
        upos_guesser: the UPOS scorer for the forms training lacks, or None (none trained).
        known: every lemma of the lemma tables, lower-cased (derived from them): the words a
            script's output is checked against (:func:`biaffine.data.columns.strings`).
        seen: every form of the lemma tables (derived from them), :meth:`lacks`'s test.
        address_tags: the (UPOS, XPOS, FEATS) of the web and e-mail addresses among the
            lexicon's (form, UPOS) pairs, where :data:`MIN_ADDRESSES` or more have one that
            covers :data:`MIN_ADDRESS_SHARE` of them, else None (derived from the tables): the
            tags an address the lexicon lacks takes
            (:func:`biaffine.inference.choices.predicted_columns`).
        relation_upos: (form lower-cased, universal relation) -> UPOS -> how many training
            words had them (empty in lexicons written before it).
        code_upos: the UPOS of the codes (:func:`is_code`) among the lexicon's (form, UPOS)
            pairs, where it has :data:`MIN_CODES` or more, else None (derived from the tables):
            the only UPOS a code the lexicon lacks may take (EWT's 165 are NOUN, PROPN, ADJ,
            X, ADV, SYM or PRON, never NUM, which the taggers gave 39 of EWT test's codes).
        doubt: column of :data:`DOUBTED` -> the share in [0, 1] below which its tagger gives
            way to the lexicon, chosen on dev for the model (empty: the default for all).
        exact_case: whether :meth:`knows` a lemma only in the casing training wrote it, chosen
            on dev for the model (False: case aside, as in lexicons written before it).
        runner_up: the share in (0, 1] of the best lemma script's probability a runner-up
            script needs to be tried, chosen on dev for the model (None: the default).
        known_cased: every lemma of the lemma tables in training's casing (derived from them).
        cased_upos: the UPOS whose words' lemmas keep the form's casing (derived from the
            tables, :data:`MIN_CASED_SHARE`): a form looked up alone for such a word keeps its
            casing (:meth:`lemma`).
    """

    tagged: dict[tuple[str, str], str] = field(default_factory=dict)
    forms: dict[str, str] = field(default_factory=dict)
    analyses: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    upos: dict[str, str] = field(default_factory=dict)
    suffixes: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict)
    featured: dict[tuple[str, str, str], str] = field(default_factory=dict)
    tag_sets: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)
    shapes: dict[str, str] = field(default_factory=dict)
    lemma_suffixes: dict[tuple[str, str], str] = field(default_factory=dict)
    generator: LemmaGenerator | None = None
    feats_guesser: FeatsGuesser | None = None
    upos_guesser: UposGuesser | None = None
    relation_upos: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    doubt: dict[str, float] = field(default_factory=dict)
    exact_case: bool = False
    runner_up: float | None = None
    known: frozenset[str] = field(init=False, repr=False, compare=False)
    known_cased: frozenset[str] = field(init=False, repr=False, compare=False)
    seen: frozenset[str] = field(init=False, repr=False, compare=False)
    address_tags: tuple[str, str, str] | None = field(init=False, repr=False, compare=False)
    code_upos: frozenset[str] | None = field(init=False, repr=False, compare=False)
    cased_upos: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Gather the derived tables: :attr:`known`, :attr:`seen`, the addresses and codes."""
        lemmas = {*self.tagged.values(), *self.forms.values(), *self.featured.values()}
        object.__setattr__(self, "known", frozenset(lemma.lower() for lemma in lemmas))
        object.__setattr__(self, "known_cased", frozenset(lemmas))
        seen = {form for form, _ in self.tagged} | set(self.forms)
        object.__setattr__(self, "seen", frozenset(seen))
        object.__setattr__(self, "address_tags", self._address_tags())
        codes = Counter(upos for form, upos in self.tagged if is_code(form))
        object.__setattr__(
            self, "code_upos", frozenset(codes) if codes.total() >= MIN_CODES else None
        )
        object.__setattr__(self, "cased_upos", self._cased_upos())

    def _cased_upos(self) -> frozenset[str]:
        """:attr:`cased_upos` from the (form, UPOS) table: each pair counts once."""
        pairs, kept = Counter[str](), Counter[str]()
        for (form, upos), lemma in self.tagged.items():
            if form != form.lower() and lemma.lower() == form.lower():
                pairs[upos] += 1
                kept[upos] += lemma == form
        return frozenset(
            upos
            for upos, count in pairs.items()
            if count >= MIN_CASED_PAIRS and kept[upos] >= MIN_CASED_SHARE * count
        )

    def _address_tags(self) -> tuple[str, str, str] | None:
        """:attr:`address_tags` from the tables: each (form, UPOS) pair counts once."""
        analyses = [self.analyses.get(column, {}) for column in ANALYSED]
        found = Counter(
            (upos, *(table.get((form, upos), _NO_VALUE) for table in analyses))
            for form, upos in self.tagged
            if is_address(form)
        )
        if not found:
            return None
        (tags, count), total = found.most_common(1)[0], found.total()
        return tags if total >= MIN_ADDRESSES and count >= MIN_ADDRESS_SHARE * total else None

    def unseen_code(self, form: str) -> bool:
        """Whether ``form`` is a code (:func:`is_code`) the lexicon lacks."""
        return self.lacks(form) and is_code(form)  # most words are seen: that test first

    def knows(self, lemma: str) -> bool:
        """Whether ``lemma`` is a training lemma (:attr:`exact_case`: only as training wrote it).

        ``exact_case`` is chosen on dev per model (:mod:`biaffine.training.doubt`); without it
        the casing does not count.
        """
        return lemma in self.known_cased if self.exact_case else lemma.lower() in self.known

    def lacks(self, form: str) -> bool:
        """Whether no training word with a lemma was written ``form`` (case counts)."""
        return form not in self.seen

    def reads(self, form: str) -> bool:
        """Whether the character models (generator, guessers) read ``form``.

        A word the lexicon :meth:`lacks`, of at most :data:`MAX_READ` characters; a longer one
        keeps what the taggers and the lemmatizer give it.
        """
        return len(form) <= MAX_READ and self.lacks(form)

    def __len__(self) -> int:
        """Number of entries, every table counted."""
        tables = [*self.analyses.values(), *self.suffixes.values()]
        tables += [self.shapes, self.lemma_suffixes, self.relation_upos]
        lemma_tables = len(self.tagged) + len(self.forms) + len(self.featured)
        return lemma_tables + len(self.upos) + sum(map(len, tables)) + len(self.tag_sets)

    def lemma(self, form: str, upos: str | None, feats: str | None = None) -> str | None:
        """The lemma of ``form``, or None for a word the lexicon lacks (left to the classifier).

        Looked up by (form lower-cased, UPOS, FEATS) where both are known, then by (form, UPOS)
        where a UPOS is known, then by form alone, then by (form lower-cased, UPOS): "Les" at
        the start of a sentence finds ("les", DET). The UPOS keeps the lower-cased lookup safe;
        by form alone it lost to the classifier ("US" -> "we"). Last, a form with a digit gets
        the keep mask of its shape. The form alone ignores the UPOS, so a lemma it finds that is
        the form up to casing, for a word whose UPOS keeps the form's casing
        (:attr:`cased_upos`), is the form as written: EWT's "Electric", a name's PROPN, is the
        adjective "electric" alone.

        Args:
            form: the word as written.
            upos: its UPOS (predicted or given), or None (or ``_``) when unknown.
            feats: its FEATS as the model predicts them, or None: a FEATS cell of the input may
                be empty for want of annotation, which the key would read as "no features".
        """
        tagged = upos is not None and upos != _NO_UPOS
        if tagged and feats is not None:
            found = self.featured.get((form.lower(), upos, feats))
            if found is not None:
                return found
        found = self.tagged.get((form, upos)) if tagged else None
        if found is None:
            found = self.forms.get(form)
            if found is not None and upos in self.cased_upos and found.lower() == form.lower():
                return form
        if found is None and tagged:
            found = self.tagged.get((form.lower(), upos))
        if found is None and (shape := digit_shape(form)) in self.shapes:
            found = apply_mask(self.shapes[shape], form)
        return found

    def finds_lemma(self, form: str) -> bool:
        """Whether :meth:`lemma` finds a lemma for ``form`` whatever its UPOS and FEATS.

        The lookups by (form, UPOS) and FEATS come first, but the form alone and its digit
        shape, which this tries, follow them for every key.
        """
        return self.lemma(form, None) is not None

    def analysis(self, column: str, form: str, upos: str | None) -> str | None:
        """The XPOS or FEATS (``column``) of ``form`` with ``upos``, or None where it has none.

        None for no UPOS, an unseen pair, or one without a clear majority: left to the tagger.
        """
        if upos is None or upos == _NO_UPOS:
            return None
        return self.analyses.get(column, {}).get((form, upos))

    def guess(self, column: str, form: str, upos: str | None) -> str | None:
        """A guess at the FEATS (``column``, of :data:`GUESSED`) of an unseen word, from its ending.

        The value of the longest ending of ``form`` the suffix table holds with ``upos``; None
        for a (form, UPOS) the lexicon holds (left to :meth:`analysis` and the tagger: every
        pair seen with a lemma is in ``tagged``), without a UPOS, or without a known ending.
        """
        if upos is None or upos == _NO_UPOS:
            return None
        if (form, upos) in self.tagged or (form, upos) in self.analyses.get(column, {}):
            return None
        return _by_ending(self.suffixes.get(column, {}), form, upos)

    def guess_lemma(self, form: str, upos: str | None) -> str | None:
        """A guess at the lemma of ``form`` with ``upos``, from its ending.

        The lemma that the script of the longest ending of ``form`` that ``lemma_suffixes``
        holds with ``upos`` makes of it; None without a UPOS or a known ending, or where that
        script cuts more than the form has.
        """
        if upos is None or upos == _NO_UPOS:
            return None
        script = _by_ending(self.lemma_suffixes, form, upos)
        return None if script is None else apply(script, form)

    def tag(self, form: str) -> str | None:
        """The UPOS ``form`` always had in training, or None (unseen, or seen with several)."""
        return self.upos.get(form)

    def to_dict(self) -> dict[str, Any]:
        r"""Plain data, entries sorted, lists only (it survives JSON too).

        ``{"tagged": [[form, upos, lemma], ...], "forms": [[form, lemma], ...],
        "xpos": [[form, upos, xpos], ...], "feats": [[form, upos, feats], ...],
        "upos": [[form, upos], ...], "feats_suffixes": [[ending, upos, feats], ...],
        "featured": [[form, upos, feats, lemma], ...], "tag_sets": [[upos, xpos, feats], ...],
        "shapes": [[shape, mask], ...], "lemma_suffixes": [[ending, upos, script], ...],
        "relation_upos": [[relation, upos, "form\tcount\tform\tcount..."], ...],
        "generator": {...}, "feats_guesser": {...}, "upos_guesser": {...},
        "doubt": {column: share}, "exact_case": true, "runner_up": share}``
        (:meth:`LemmaGenerator.to_dict`, :meth:`FeatsGuesser.to_dict`,
        :meth:`UposGuesser.to_dict`), without the tables after ``forms`` where they are empty
        (as in lexicons written before them, which thus read and write back the same data),
        without a character model where there is none, without ``exact_case`` where it is
        false and without ``runner_up`` where it is None.
        """
        data = {
            "tagged": _triples(self.tagged),
            "forms": [[form, lemma] for form, lemma in sorted(self.forms.items())],
        }
        for column in ANALYSED:
            if self.analyses.get(column):
                data[column] = _triples(self.analyses[column])
        if self.upos:
            data["upos"] = [[form, upos] for form, upos in sorted(self.upos.items())]
        for column in GUESSED:
            if self.suffixes.get(column):
                data[f"{column}{_SUFFIXES}"] = _triples(self.suffixes[column])
        if self.featured:
            data["featured"] = _triples(self.featured)
        if self.tag_sets:
            data["tag_sets"] = [list(tags) for tags in sorted(self.tag_sets)]
        if self.shapes:
            data["shapes"] = [[shape, mask] for shape, mask in sorted(self.shapes.items())]
        if self.lemma_suffixes:
            data["lemma_suffixes"] = _triples(self.lemma_suffixes)
        if self.relation_upos:
            data["relation_upos"] = _grouped(self.relation_upos)
        if self.generator is not None:
            data["generator"] = self.generator.to_dict()
        if self.feats_guesser is not None:
            data["feats_guesser"] = self.feats_guesser.to_dict()
        if self.upos_guesser is not None:
            data["upos_guesser"] = self.upos_guesser.to_dict()
        if self.doubt:
            data["doubt"] = dict(sorted(self.doubt.items()))
        if self.exact_case:
            data["exact_case"] = True
        if self.runner_up is not None:
            data["runner_up"] = self.runner_up
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Lexicon:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: missing keys, entries that are not lists of strings of the right size,
                a keep mask not as long as its shape, relation counts that are not
                (form, positive integer) pairs, doubt shares that are not numbers in [0, 1]
                keyed by a column of :data:`DOUBTED`, an ``exact_case`` that is no boolean, or
                a ``runner_up`` that is no number in (0, 1].
        """
        missing = {"tagged", "forms"} - set(data)
        if missing:
            raise ValueError(f"lemma lexicon data lacks keys {sorted(missing)}")
        forms = _rows(data["forms"], 2, "forms")
        analyses = {  # absent before the tags were kept
            column: _keyed(data, column) for column in ANALYSED if column in data
        }
        upos = _rows(data.get("upos", []), 2, "upos")
        suffixes = {
            column: _keyed(data, key)
            for column in GUESSED
            if (key := f"{column}{_SUFFIXES}") in data
        }
        featured = _keyed(data, "featured", 4) if "featured" in data else {}
        lemma_suffixes = _keyed(data, "lemma_suffixes") if "lemma_suffixes" in data else {}
        tag_sets = frozenset(map(tuple, _rows(data.get("tag_sets", []), 3, "tag_sets")))
        shapes = dict(_rows(data.get("shapes", []), 2, "shapes"))
        if any(len(shape) != len(mask) or set(mask) - _MASKING for shape, mask in shapes.items()):
            raise ValueError("lemma lexicon 'shapes' must pair each shape with a keep mask as long")
        exact_case = data.get("exact_case", False)
        if not isinstance(exact_case, bool):
            raise ValueError("lemma lexicon 'exact_case' must be true or false")
        runner_up = data.get("runner_up")
        if runner_up is not None and not (type(runner_up) in (int, float) and 0 < runner_up <= 1):
            raise ValueError("lemma lexicon 'runner_up' must be a number in (0, 1]")
        return cls(
            _keyed(data, "tagged"),
            dict(forms),
            analyses,
            dict(upos),
            suffixes,
            featured,
            tag_sets,
            shapes,
            lemma_suffixes,
            LemmaGenerator.from_dict(data["generator"]) if "generator" in data else None,
            FeatsGuesser.from_dict(data["feats_guesser"]) if "feats_guesser" in data else None,
            UposGuesser.from_dict(data["upos_guesser"]) if "upos_guesser" in data else None,
            _counted(data.get("relation_upos", [])),
            _shares(data.get("doubt", {})),
            exact_case,
            None if runner_up is None else float(runner_up),
        )


def _by_ending(table: Mapping[tuple[str, str], str], form: str, upos: str) -> str | None:
    """The value of the longest ending of ``form`` that ``table`` holds with ``upos``, or None."""
    for ending in reversed(_endings(form)):
        found = table.get((ending, upos))
        if found is not None:
            return found
    return None


def _endings(form: str) -> list[str]:
    """The last 1 to :data:`MAX_SUFFIX` characters of ``form`` lower-cased, never all of it."""
    lowered = form.lower()
    return [lowered[-length:] for length in range(1, min(MAX_SUFFIX, len(form) - 1) + 1)]


def _triples(table: Mapping[tuple[str, ...], str]) -> list[list[str]]:
    """A (key, ...) -> value table as sorted [key, ..., value] rows (:meth:`Lexicon.to_dict`)."""
    return [[*key, value] for key, value in sorted(table.items())]


def _keyed(data: Mapping[str, Any], name: str, size: int = 3) -> dict[Any, str]:
    """The table ``data[name]``: rows of ``size`` strings, checked (:func:`_triples` inverted)."""
    return {tuple(row[:-1]): row[-1] for row in _rows(data[name], size, name)}


def _rows(rows: Any, size: int, name: str) -> list[list[str]]:
    """``rows`` checked to be a list of lists of ``size`` strings (``name`` in the error).

    Their strings are interned, in place (equal values; new lists would take 2.5x the time):
    read from JSON (a checkpoint's, an export's), each occurrence of a form or a tag is an
    object of its own, and ``en_ewt``'s tables kept 20 MiB more than with one per distinct
    string (0.08 s to intern on the 2-core AMD EPYC).
    """
    # map() keeps the loops in C: a model's lexicon has some 120,000 rows, checked at every load.
    if not (
        isinstance(rows, list)
        and all(map(isinstance, rows, itertools.repeat(list)))
        and set(map(len, rows)) <= {size}
        and all(map(isinstance, itertools.chain.from_iterable(rows), itertools.repeat(str)))
    ):
        raise ValueError(f"lemma lexicon {name!r} must be a list of lists of {size} strings")
    for row in rows:
        row[:] = map(sys.intern, row)
    return rows


def _grouped(table: Mapping[tuple[str, str], Mapping[str, int]]) -> list[list[str]]:
    r"""``relation_upos`` as rows [relation, UPOS, "form\tcount\tform\tcount..."], sorted.

    A row per (relation, UPOS) rather than per (form, relation, UPOS) keeps checkpoints small:
    EWT's 15,149 counts take 216 rows and 144 KB in a checkpoint, against 470 KB a row each.
    A form holds no tab (CoNLL-U's separator).
    """
    forms: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
    for (form, relation), counts in sorted(table.items()):
        for upos, count in counts.items():
            forms[relation, upos].append(f"{form}\t{count}")
    return [[relation, upos, "\t".join(found)] for (relation, upos), found in sorted(forms.items())]


def _counted(rows: Any) -> dict[tuple[str, str], dict[str, int]]:
    """``relation_upos`` from its :func:`_grouped` rows, checked."""
    found: defaultdict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for relation, upos, packed in _rows(rows, 3, "relation_upos"):
        cells = packed.split("\t")
        forms, counts = cells[::2], cells[1::2]
        if len(forms) != len(counts) or not all(map(_is_count, counts)):
            raise ValueError(
                f"lemma lexicon 'relation_upos' of {relation} {upos} must pair each form with a"
                " positive count"
            )
        for form, count in zip(forms, counts, strict=True):
            found[form, relation][upos] = int(count)
    return dict(found)


def _shares(data: Any) -> dict[str, float]:
    """``doubt`` from its plain data, checked: column of :data:`DOUBTED` -> share in [0, 1]."""
    if not (
        isinstance(data, dict)
        and set(data) <= set(DOUBTED)
        and all(type(share) in (int, float) and 0 <= share <= 1 for share in data.values())
    ):
        raise ValueError(
            f"lemma lexicon 'doubt' must map some of {', '.join(DOUBTED)} to numbers in [0, 1]"
        )
    return {column: float(share) for column, share in data.items()}


def _is_count(text: str) -> bool:
    """Whether ``text`` writes a positive integer in ASCII digits."""
    return text.isascii() and text.isdigit() and int(text) > 0


def build_lexicon(
    sentences: Iterable[Sentence],
    *,
    min_form_share: float = MIN_FORM_SHARE,
    min_analysis_share: float = MIN_ANALYSIS_SHARE,
) -> Lexicon:
    """The lexicon of ``sentences`` (training data, iterated once); see :class:`LexiconCounts`."""
    counts = LexiconCounts()
    for sentence in sentences:
        counts.add(sentence)
    return counts.lexicon(min_form_share=min_form_share, min_analysis_share=min_analysis_share)


class LexiconCounts:
    """Lemmas, XPOS, FEATS and UPOS of the training words, counted by the lexicon's keys.

    Words without a lemma (``_``) count for the tags only; a word without a UPOS counts for its
    form's lemmas only.
    """

    def __init__(self) -> None:
        """No sentence counted yet."""
        self.tagged: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.forms: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.analyses = {
            column: defaultdict[tuple[str, str], Counter[str]](Counter) for column in ANALYSED
        }
        self.upos: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.suffixes = {
            column: defaultdict[tuple[str, str], Counter[str]](Counter) for column in GUESSED
        }
        self.featured: defaultdict[tuple[str, str, str], Counter[str]] = defaultdict(Counter)
        self.tag_sets: set[tuple[str, str, str]] = set()
        self.shapes: defaultdict[str, Counter[str]] = defaultdict(Counter)
        self.lemma_suffixes: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self.relations: defaultdict[tuple[str, str], Counter[str]] = defaultdict(Counter)
        self._scripts: dict[tuple[str, str], str] = {}  # script_of each pair, computed once

    def add(self, sentence: Sentence) -> None:
        """Count the lemmas and tags of ``sentence``'s words."""
        analysed = {column: getattr(sentence, column) for column in self.analyses}
        for form, upos, deprel in zip(sentence.forms, sentence.upos, sentence.deprels, strict=True):
            if upos != _NO_UPOS and deprel not in (_NO_VALUE, ""):
                self.relations[form.lower(), universal_relation(deprel)][upos] += 1
        for i, (form, lemma, upos) in enumerate(
            zip(sentence.forms, sentence.lemmas, sentence.upos, strict=True)
        ):
            endings = _endings(form)
            if upos != _NO_UPOS:
                self.upos[form][upos] += 1
                self.tag_sets.add((upos, analysed["xpos"][i], analysed["feats"][i]))
                for column, counts in self.analyses.items():
                    value = analysed[column][i]
                    counts[form, upos][value] += 1
                    if column in self.suffixes:
                        for ending in endings:
                            self.suffixes[column][ending, upos][value] += 1
            if is_annotated(form, lemma):
                self.forms[form][lemma] += 1
                shape = digit_shape(form)
                if shape is not None:  # a lemma no mask makes counts against the shape's masks
                    self.shapes[shape][mask_of(form, lemma) or _NO_MASK] += 1
                if upos != _NO_UPOS:
                    self.tagged[form, upos][lemma] += 1
                    self.featured[form.lower(), upos, analysed["feats"][i]][lemma] += 1
                    script = self._script(form, lemma)
                    for ending in endings:
                        self.lemma_suffixes[ending, upos][script] += 1

    def _script(self, form: str, lemma: str) -> str:
        """:func:`script_of` an annotated pair, computed once for each pair."""
        script = self._scripts.get((form, lemma))
        if script is None:
            script = self._scripts[form, lemma] = script_of(form, lemma)
        return script

    def lexicon(
        self,
        *,
        min_form_share: float = MIN_FORM_SHARE,
        min_analysis_share: float = MIN_ANALYSIS_SHARE,
    ) -> Lexicon:
        """The lexicon of the words counted.

        Args:
            min_form_share: the share of a form's occurrences its majority lemma must cover
                for the form to be looked up alone (0 keeps every form, above 1 none), and
                likewise of a (form lower-cased, UPOS, FEATS) triple's and a shape's.
            min_analysis_share: the share of a (form, UPOS) pair's occurrences its majority
                XPOS or FEATS must cover to be kept (above 1: none).

        Raises:
            ValueError: a negative share.
        """
        for name, share in (
            ("min_form_share", min_form_share),
            ("min_analysis_share", min_analysis_share),
        ):
            if share < 0:
                raise ValueError(f"{name} must be >= 0, got {share}")
        filled = [  # a column the treebank leaves empty throughout has no tables
            column
            for column, counts in self.analyses.items()
            if any(value != _NO_VALUE for values in counts.values() for value in values)
        ]
        return Lexicon(
            _majorities(self.tagged, 0.0),
            _majorities(self.forms, min_form_share),
            {column: _majorities(self.analyses[column], min_analysis_share) for column in filled},
            _majorities(self.upos, MIN_UPOS_SHARE),
            {
                column: _majorities(self.suffixes[column], MIN_SUFFIX_SHARE, MIN_SUFFIX_COUNT)
                for column in filled
                if column in self.suffixes
            },
            _majorities(self.featured, min_form_share) if "feats" in filled else {},
            frozenset(self.tag_sets),
            _masks_kept(self.shapes, min_form_share),
            _majorities(self.lemma_suffixes, MIN_LEMMA_SUFFIX_SHARE, MIN_SUFFIX_COUNT),
            relation_upos={
                key: dict(counts)
                for key, counts in self.relations.items()
                if counts.total() >= MIN_RELATION_COUNT
            },
        )


def _majorities(
    counts: Mapping[K, Counter[str]], min_share: float, min_count: int = 1
) -> dict[K, str]:
    """Each key's most frequent value, where it covers ``min_share`` of its occurrences.

    Keys that occurred fewer than ``min_count`` times are left out. Ties go to the smallest
    string, so the order of the counts does not matter.
    """
    found = {}
    for key, values in counts.items():
        value, count = min(values.items(), key=lambda item: (-item[1], item[0]))
        total = values.total()
        if count >= min_share * total and total >= min_count:
            found[key] = value
    return found


def _masks_kept(counts: Mapping[str, Counter[str]], min_share: float) -> dict[str, str]:
    """Each shape's majority keep mask, where it is one and covers ``min_share`` of its words."""
    kept = _majorities(counts, min_share, MIN_SHAPE_COUNT)
    return {shape: mask for shape, mask in kept.items() if mask != _NO_MASK}
