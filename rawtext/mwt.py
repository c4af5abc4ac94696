"""Multi-word token expansion learned from a treebank: a dictionary, then suffix rules.

The dictionary maps each training token (lowercased) to its most frequent expansion. An unseen
token falls back to suffix rules in the manner of UDPipe 1's multi-word splitter (Straka et
al., 2016): a training MWT ``t`` with words ``w1 … wk`` whose first word shares the prefix
``p`` with ``t`` yields, for every suffix ``s`` of ``t`` with ``t = q + s`` and ``q`` a
non-empty prefix of ``p``, the rule ``s → (w1 minus q, w2, …, wk)``; Turkish
``kökenli → köken li`` gives ``li → ("", "li")``, English ``don't → do n't`` gives
``n't → ("", "n't")``. A suffix keeps its most frequent rule if that rule is right for at
least ``min_precision`` of the training MWTs ending in the suffix, and ``min_count`` times;
the longest kept suffix of an unseen token wins.

Lookups are case-insensitive and give the words the token's casing (French ``Du`` → ``De le``,
``DU`` → ``DE LE``; English ``BBC's`` → ``BBC 's``; Turkish ``İMKB'deki`` → ``İMKB'de ki``):
tokens are lower-cased code point by code point (:func:`lowered`), Turkish ``İ`` to ``i``.

The expander also knows which training tokens are multi-word tokens nearly every time they
occur (:data:`ALWAYS_SHARE`), so that :func:`rawtext.segment.segment` splits them even where
a segmenter missed the class: Turkish IMST's ``yoktu`` (``yok`` + ``du``), ``önemli``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .document import Document
from .segment import segment
from .treebank import TreebankToken, read_sentences

FORMAT = "rawtext.mwt"
VERSION = 1

ALWAYS_SHARE = 0.9
"""A training token that is a multi-word token in at least this share of its occurrences is
always split (:attr:`MwtExpander.always`). Chosen on the dev sets of EWT, Sequoia and IMST
(docs/raw_text.md): overruling the segmenter where the training majority says so lost on
Sequoia (French ``des`` is ``de les`` or an article by context); from 0.9 up, every treebank's
multi-word token F1 rose (IMST 38.0 -> 64.6)."""


@dataclass(frozen=True)
class MwtExpander:
    """Splits multi-word tokens into words; callable as the ``expand`` of :func:`segment`.

    Attributes:
        dictionary: lowercased token → its most frequent lowercased expansion.
        rules: lowercased suffix → the lowercased expansion of that suffix (the first word's
            part after the kept prefix, which may be empty, then the other words).
        always: lowercased tokens that were multi-word tokens in at least
            :data:`ALWAYS_SHARE` of their training occurrences (empty in data written before).
    """

    dictionary: Mapping[str, tuple[str, ...]]
    rules: Mapping[str, tuple[str, ...]]
    always: frozenset[str] = frozenset()

    @classmethod
    def from_conllu(
        cls, source: str | Path | TextIO, *, min_count: int = 2, min_precision: float = 0.5
    ) -> MwtExpander:
        """Learns the dictionary and the suffix rules from a training CoNLL-U file.

        Args:
            source: a path or an open text file.
            min_count: the fewest training MWTs a kept rule must be right for.
            min_precision: the least share of the training MWTs ending in a rule's suffix that
                the rule must be right for.

        Returns:
            The expander (empty for a treebank without MWTs: every token stays one word).
        """
        every = [token for sentence in read_sentences(source) for token in sentence.tokens]
        tokens = Counter(
            (lowered(token.form), tuple(lowered(word) for word in token.words))
            for token in every
            if token.is_mwt
        )
        shares = _split_shares(every)
        always = frozenset(form for form, share in shares.items() if share >= ALWAYS_SHARE)
        return cls(_dictionary(tokens), _rules(tokens, min_count, min_precision), always)

    def __call__(self, form: str) -> list[str]:
        """The words of a multi-word token: the dictionary's, else a rule's, else ``[form]``."""
        words = self.lookup(form)
        if words is None:
            words = self.fallback(form)
        return [form] if words is None else words

    def is_always(self, form: str) -> bool:
        """Whether ``form`` (any casing) is one of the tokens that training always split."""
        return lowered(form) in self.always

    def lookup(self, form: str) -> list[str] | None:
        """The dictionary's expansion of ``form`` (cased like it), or None if it is unseen."""
        words = self.dictionary.get(lowered(form))
        return None if words is None else _cased(form, words)

    def fallback(self, form: str) -> list[str] | None:
        """The expansion by the longest matching suffix rule, or None if no rule matches."""
        lower = lowered(form)
        for start in range(1, len(lower)):
            if lower[start - 1].isspace() or lower[start].isspace():
                continue  # "John\u00a0's": a word may not begin or end with a space
            rule = self.rules.get(lower[start:])
            if rule is not None:
                return _cased(form, (lower[:start] + rule[0], *rule[1:]))
        return None

    def to_data(self) -> dict[str, Any]:
        """Plain JSON-able data (for a checkpoint); :meth:`from_data` reads it back."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "dictionary": {form: list(words) for form, words in self.dictionary.items()},
            "rules": {suffix: list(words) for suffix, words in self.rules.items()},
            "always": sorted(self.always),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> MwtExpander:
        """The expander that :meth:`to_data` wrote.

        Raises:
            ValueError: data of another format or version, or expansions that are not lists of
                strings.
        """
        if data.get("format") != FORMAT or data.get("version") != VERSION:
            found = f"{data.get('format')!r} version {data.get('version')!r}"
            raise ValueError(f"not {FORMAT!r} version {VERSION} data: found {found}")
        always = data.get("always", [])
        if not isinstance(always, list) or not all(isinstance(form, str) for form in always):
            raise ValueError(f"{FORMAT} data: 'always' must be a list of strings")
        dictionary, rules = _expansions(data, "dictionary"), _expansions(data, "rules")
        return cls(dictionary, rules, frozenset(_as_lowered(form) for form in always))


def split_shares(source: str | Path | TextIO) -> dict[str, float]:
    """Each token of a CoNLL-U file, lower-cased: the share of it that is a multi-word token.

    :attr:`MwtExpander.always` keeps the tokens whose share is :data:`ALWAYS_SHARE` or more.
    """
    return _split_shares(token for sentence in read_sentences(source) for token in sentence.tokens)


def _split_shares(tokens: Iterable[TreebankToken]) -> dict[str, float]:
    split, seen = Counter[str](), Counter[str]()
    for token in tokens:
        form = lowered(token.form)
        seen[form] += 1
        split[form] += token.is_mwt
    return {form: split[form] / count for form, count in seen.items()}


def segment_with(text: str, labels: Any, expander: MwtExpander | None) -> Document:
    """:func:`rawtext.segment.segment` with a treebank's expander (None: one word a token).

    Multi-word tokens, which include the tokens training always split, get its words.
    """
    always = None if expander is None else expander.is_always
    return segment(text, labels, expander, always=always)


def _dictionary(tokens: Counter[tuple[str, tuple[str, ...]]]) -> dict[str, tuple[str, ...]]:
    best: dict[str, tuple[int, tuple[str, ...]]] = {}
    # most_common() is sorted by count, ties in first-seen order: the first seen wins a tie.
    for (form, words), count in tokens.most_common():
        best.setdefault(form, (count, words))
    return {form: words for form, (_, words) in best.items()}


def _rules(
    tokens: Counter[tuple[str, tuple[str, ...]]], min_count: int, min_precision: float
) -> dict[str, tuple[str, ...]]:
    ending = Counter[str]()  # suffix → training MWTs ending in it
    right: defaultdict[str, Counter[tuple[str, ...]]] = defaultdict(Counter)
    for (form, words), count in tokens.items():
        shared = _common_prefix(form, words[0])
        for start in range(1, len(form)):
            ending[form[start:]] += count
            if start <= shared:
                right[form[start:]][(words[0][start:], *words[1:])] += count
    rules = {}
    for suffix, counts in right.items():
        rule, count = counts.most_common(1)[0]
        if count >= min_count and count >= min_precision * ending[suffix]:
            rules[suffix] = rule
    return rules


def _common_prefix(first: str, second: str) -> int:
    size = 0
    for a, b in zip(first, second, strict=False):  # stops at the shorter string
        if a != b:
            break
        size += 1
    return size


def _cased(form: str, words: Iterable[str]) -> list[str]:
    """Lowercase ``words`` with ``form``'s casing, character by character while they spell it.

    Where the words stop spelling the form (``Du`` → ``de le`` at the ``e``), the character
    takes the case of the form's character there, and the rest is upper case if the form is,
    else left lowercase: ``BBC's`` → ``BBC 's``, ``Au`` → ``À le``, ``DU`` → ``DE LE``.
    """
    shouting = form.isupper() and len(form) > 1
    cased, position = [], 0
    for word in words:
        chars = []
        for char in word:
            if position < len(form) and lowered(form[position]) == char:
                chars.append(form[position])
                position += 1
                continue
            upper = shouting or (position < len(form) and form[position].isupper())
            chars.append(char.upper() if upper else char)
            position = len(form)  # the words no longer spell the form
        cased.append("".join(chars))
    return cased


def _expansions(data: Mapping[str, Any], key: str) -> dict[str, tuple[str, ...]]:
    table = data.get(key)
    if not isinstance(table, dict):
        raise ValueError(f"{FORMAT} data: {key!r} must be a mapping, got {type(table).__name__}")
    for form, words in table.items():
        if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
            raise ValueError(f"{FORMAT} data: {key}[{form!r}] must be a list of strings")
    return {
        _as_lowered(form): tuple(_as_lowered(word) for word in words)
        for form, words in table.items()
    }


def lowered(text: str) -> str:
    """``text`` lower-cased code point by code point: as long as it, position by position.

    ``str.lower`` turns Turkish ``İ`` (U+0130) into two code points, ``i`` and a combining dot
    above: ``İçindeydi`` then missed the training's ``içindeydi``, and the casing copied back
    from the form slipped by one (``İMKB'deki`` came out as ``I\u0307mkb'de ki``). A code point
    whose lower case is several takes the first of them (``İ`` → ``i``).
    """
    lower = text.lower()
    if len(lower) == len(text):
        return lower
    return "".join(char.lower()[0] for char in text)


def _as_lowered(stored: str) -> str:
    """A token or word of data that ``str.lower`` lower-cased, as :func:`lowered` gives it."""
    return stored.replace("i\u0307", "i")
