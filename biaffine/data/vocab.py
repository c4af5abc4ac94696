"""String <-> index vocabularies for words, characters, tagged columns and relations.

Word, char and tag vocabularies start with the specials PAD=0, UNK=1, ROOT=2; the relation
vocabulary has none. Both classes round-trip through plain JSON-able dicts for checkpoints.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biaffine.data.columns import TAGGED, classes
from biaffine.data.conllu import Sentence
from biaffine.data.lexicon import Lexicon, LexiconCounts

PAD, UNK, ROOT = 0, 1, 2
SPECIALS = ("<pad>", "<unk>", "<root>")


class Vocab:
    """An indexed list of strings; unknown strings map to UNK when the vocabulary has specials.

    Attributes:
        itos: index -> string; with specials ``itos[:3] == ["<pad>", "<unk>", "<root>"]``.
        stoi: string -> index.
        specials: whether PAD/UNK/ROOT occupy indices 0, 1, 2.
    """

    __slots__ = ("itos", "specials", "stoi")

    def __init__(self, itos: Sequence[str], *, specials: bool = True) -> None:
        """Wraps an index -> string list.

        Raises:
            ValueError: duplicate strings, or ``specials`` but the list does not start with them.
        """
        self.itos = list(itos)
        self.specials = specials
        self.stoi = {token: index for index, token in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            duplicates = sorted(t for t, c in Counter(self.itos).items() if c > 1)
            raise ValueError(f"vocabulary has duplicate entries: {duplicates[:5]}")
        if specials and tuple(self.itos[:3]) != SPECIALS:
            raise ValueError(f"a vocabulary with specials must start with {SPECIALS}")

    @classmethod
    def build(
        cls, tokens: Mapping[str, int] | Iterable[str], *, min_count: int = 1, specials: bool = True
    ) -> Vocab:
        """Builds a vocabulary from token counts (a Counter or mapping) or a stream of tokens.

        Tokens are ordered by decreasing count, ties by the string itself, so the result does
        not depend on the input order.

        Args:
            tokens: token -> count, or an iterable of tokens to count.
            min_count: tokens seen fewer times are left out (they map to UNK).
            specials: put PAD, UNK and ROOT first.

        Raises:
            ValueError: ``min_count < 1``.
        """
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        counts = tokens if isinstance(tokens, Mapping) else Counter(tokens)
        reserved = set(SPECIALS) if specials else set()
        kept = [t for t, c in counts.items() if c >= min_count and t not in reserved]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls([*SPECIALS, *kept] if specials else kept, specials=specials)

    def __len__(self) -> int:
        """Number of entries, specials included."""
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        """Whether ``token`` has its own index."""
        return token in self.stoi

    def __getitem__(self, token: str) -> int:
        """Index of ``token``: UNK if unknown and the vocabulary has specials.

        Raises:
            KeyError: unknown token in a vocabulary without specials.
        """
        index = self.stoi.get(token)
        if index is not None:
            return index
        if self.specials:
            return UNK
        raise KeyError(f"{token!r} is not in this vocabulary (of {len(self)} entries)")

    def get(self, token: str, default: int) -> int:
        """Index of ``token``, or ``default`` if it has none (e.g. -100 for unknown relations)."""
        return self.stoi.get(token, default)

    def __eq__(self, other: object) -> bool:
        """Same entries in the same order, and the same specials flag."""
        if not isinstance(other, Vocab):
            return NotImplemented
        return self.itos == other.itos and self.specials == other.specials

    def __repr__(self) -> str:
        """Short summary with the first entries."""
        return f"Vocab({len(self)} entries, specials={self.specials}, head={self.itos[:6]})"

    def to_dict(self) -> dict[str, Any]:
        """Plain data: ``{"itos": list[str], "specials": bool}``."""
        return {"itos": list(self.itos), "specials": self.specials}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Vocab:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: missing keys or entries that are not strings.
        """
        missing = {"itos", "specials"} - set(data)
        if missing:
            raise ValueError(f"vocabulary data lacks keys {sorted(missing)}")
        itos = data["itos"]
        if not isinstance(itos, list) or not all(isinstance(t, str) for t in itos):
            raise ValueError("vocabulary 'itos' must be a list of strings")
        return cls(itos, specials=bool(data["specials"]))


@dataclass(slots=True)
class Vocabs:
    """The vocabularies a parser needs: words as written, chars, relations, tagged columns.

    Attributes:
        words: word forms (rare ones map to UNK).
        chars: characters of the forms.
        rels: dependency relations (no specials).
        columns: one vocabulary per tagged column of :data:`biaffine.data.columns.TAGGED`
            (``upos``, ``xpos``, ``feats``: each whole FEATS string is one class; ``lemma``:
            edit scripts); a column missing from an old checkpoint holds the specials only.
        lexicon: the training lemmas looked up before the lemmatizer's scripts
            (:mod:`biaffine.data.lexicon`); None in checkpoints written before it, whose
            lemmas come from the scripts alone.
    """

    words: Vocab
    chars: Vocab
    rels: Vocab
    columns: dict[str, Vocab] = field(default_factory=dict)
    lexicon: Lexicon | None = None

    def __post_init__(self) -> None:
        """Give every tagged column a vocabulary (specials only where none was given)."""
        unknown = set(self.columns) - set(TAGGED)
        if unknown:
            raise ValueError(f"vocabularies of unknown columns {sorted(unknown)}")
        self.columns = {name: self.columns.get(name, Vocab(SPECIALS)) for name in TAGGED}

    def sizes(self) -> dict[str, int]:
        """The size of every vocabulary, the tagged columns' by their names."""
        named = {"words": self.words, "chars": self.chars, "rels": self.rels, **self.columns}
        return {name: len(vocab) for name, vocab in named.items()}

    @classmethod
    def build(cls, sentences: Iterable[Sentence], *, min_word_count: int = 2) -> Vocabs:
        """Same as :func:`build_vocabs`."""
        return build_vocabs(sentences, min_word_count=min_word_count)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """Plain data: one :meth:`Vocab.to_dict` per vocabulary, columns by their own names.

        The lexicon's :meth:`Lexicon.to_dict` goes under ``lemma_lexicon`` where there is one.
        """
        named = {"words": self.words, "chars": self.chars, "rels": self.rels, **self.columns}
        data = {name: named[name].to_dict() for name in _NAMES}
        if self.lexicon is not None:
            data[_LEXICON] = self.lexicon.to_dict()
        return data

    def difference(self, other: Vocabs) -> str | None:
        """Where ``other`` differs from these vocabularies, e.g. ``"lemma_lexicon.runner_up"``.

        None where they are the same. A part of the lexicon is named by its key: two members
        whose lexicons differ only in the settings ``doubt`` chose are named so, not as
        vocabularies built from other data.
        """
        return _first_difference(self.to_dict(), other.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Mapping[str, Any]]) -> Vocabs:
        """Inverse of :meth:`to_dict`.

        XPOS, FEATS and LEMMA may be absent (specials only then), and so may the lexicon (None).

        Raises:
            ValueError: a required vocabulary missing, or any one malformed.
        """
        missing = set(_REQUIRED) - set(data)
        if missing:
            raise ValueError(f"vocabulary data lacks {sorted(missing)}")
        vocabs = {name: Vocab.from_dict(data[name]) for name in _NAMES if name in data}
        columns = {name: vocabs.pop(name) for name in TAGGED if name in vocabs}
        lexicon = Lexicon.from_dict(data[_LEXICON]) if _LEXICON in data else None
        return cls(**vocabs, columns=columns, lexicon=lexicon)


# Checkpoints written before the XPOS/FEATS taggers (or the lemmatizer) existed lack those
# vocabularies.
_REQUIRED = ("words", "chars", "upos", "rels")
_NAMES = ("words", "chars", "upos", "rels", "xpos", "feats", "lemma")
# Optional too: checkpoints written before the lexicon lack it.
_LEXICON = "lemma_lexicon"


def build_vocabs(
    sentences: Iterable[Sentence], *, min_word_count: int = 2, extra_rels: Iterable[str] = ()
) -> Vocabs:
    """Counts forms, characters, tagged classes, relations in one pass over ``sentences``.

    Args:
        sentences: training sentences (iterated once).
        min_word_count: forms seen fewer times map to UNK (characters and tags keep everything).
        extra_rels: relation labels counted too: those of the original trees when a parser
            trains on transformed ones (pseudo-projective labels ``deprel|headdeprel``), so
            that every label it outputs after decoding them has an id.

    Returns:
        Vocabs; ``rels`` has no specials and skips ``_`` labels; ``columns["lemma"]`` holds the
        edit scripts of the lemmas given (:func:`biaffine.data.columns.classes`), ``lexicon``
        their lemmas by form (:mod:`biaffine.data.lexicon`).
    """
    words: Counter[str] = Counter()
    columns = {name: Counter[str]() for name in TAGGED}
    rels: Counter[str] = Counter()
    lemmas = LexiconCounts()
    for sentence in sentences:
        words.update(sentence.forms)
        lemmas.add(sentence)
        for name, counts in columns.items():
            counts.update(classes(sentence, name))
        rels.update(sentence.deprels)
    columns["lemma"].pop(None, None)  # words without a lemma
    rels.update(extra_rels)
    rels.pop("_", None)
    chars: Counter[str] = Counter()
    for form, count in words.items():  # count characters once per distinct form
        for char in form:
            chars[char] += count
    return Vocabs(
        words=Vocab.build(words, min_count=min_word_count),
        chars=Vocab.build(chars),
        rels=Vocab.build(rels, specials=False),
        columns={name: Vocab.build(counts) for name, counts in columns.items()},
        lexicon=lemmas.lexicon(),
    )


def _first_difference(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> str | None:
    """The dotted key of the first entry the two differ in (a vocabulary, a lexicon table)."""
    for key in sorted(set(mine) | set(theirs)):
        if mine.get(key) == theirs.get(key):
            continue
        inner = (mine.get(key), theirs.get(key))
        if key == _LEXICON and all(isinstance(part, Mapping) for part in inner):
            deeper = _first_difference(*inner)
            return key if deeper is None else f"{key}.{deeper}"
        return key
    return None
