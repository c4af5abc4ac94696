"""End-to-end scores: system words aligned to gold words by characters, as the CoNLL 2018 scorer.

A system that tokenizes raw text need not find the gold tokens, words or sentences. Both files
are laid over one text, their characters with every space character (Unicode category Zs)
removed, so that differently spaced outputs compare (the convention of the shared task's
``conll18_ud_eval.py``; :func:`without_spaces`); every token, word and sentence is a span
``[start, end)`` of that text. Files whose texts differ cannot be scored together.

- Tokens and Sentences: a system span is correct when a gold span is the same span.
- Words: a word outside multiword tokens aligns to a gold word with the same span. Where
  multiword tokens overlap (on either side), the words of the smallest region that holds them
  whole align by a longest common subsequence of their lower-cased forms.
- UPOS ... BLEX (:data:`biaffine.metrics.ALIGNED_METRICS`): counted over aligned words by
  :meth:`Conll18Scores.of_aligned`, a system HEAD being right when it aligns to the gold HEAD
  (ROOT to ROOT).

Each score is precision, recall and F1 of the counts in a :class:`biaffine.metrics.Score`.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from biaffine.data.conllu import Sentence
from biaffine.metrics import (
    ALIGNED_METRICS,
    Conll18Scores,
    EvaluationError,
    Score,
    ScoredWord,
    annotated_columns,
    check_gold_tree,
    refuse_unannotated,
    scored_words,
)

__all__ = [
    "EndToEndScores",
    "Segmentation",
    "SpannedWord",
    "align_words",
    "check_same_text",
    "evaluate_end_to_end",
    "segmentation",
    "without_spaces",
]

Span = tuple[int, int]
"""``(start, end)``: characters ``start`` to ``end - 1`` of the text without whitespace."""

_UNALIGNED = -1
"""The gold ID given to system words (as HEAD or functional child) that align to none."""


@dataclass(frozen=True, slots=True)
class SpannedWord:
    """One word as the alignment sees it.

    Attributes:
        span: the span of its token (a multiword token's words share its span).
        multiword: whether its token is a multiword token.
        form: its FORM, lower-cased: what the longest common subsequence compares.
    """

    span: Span
    multiword: bool
    form: str


@dataclass(slots=True)
class Segmentation:
    """A file's tokens, words and sentences as spans of its text without whitespace.

    Attributes:
        source: the file it was read from, for messages.
        text: the characters of every token's FORM, spaces removed (:func:`without_spaces`),
            in file order.
        tokens: the span of each token.
        token_lines: the line of each token in ``source``.
        sentences: the span of each sentence, from its first token's start to its last's end.
        words: each word's span, multiword flag and form.
        scored: each word as the metrics compare it, IDs and HEADs numbered over the whole
            file (word ``i`` of a sentence after ``k`` words is ``k + i``; ROOT stays 0).
        annotated: the gold columns annotated somewhere (see :func:`annotated_columns`).
    """

    source: str
    text: str = ""
    tokens: list[Span] = field(default_factory=list)
    token_lines: list[int] = field(default_factory=list)
    sentences: list[Span] = field(default_factory=list)
    words: list[SpannedWord] = field(default_factory=list)
    scored: list[ScoredWord] = field(default_factory=list)
    annotated: frozenset[str] = frozenset()

    def line_at(self, position: int) -> int:
        """The line of the token holding character ``position`` (the last token past the end)."""
        starts = [start for start, _ in self.tokens]
        return self.token_lines[max(bisect.bisect_right(starts, position) - 1, 0)]


def segmentation(sentences: Iterable[Sentence], name: str) -> Segmentation:
    """Lays a file's sentences over its text without whitespace.

    Args:
        sentences: the sentences of one file, each with HEAD annotated.
        name: ``"gold"`` or ``"predicted"``, for messages.

    Returns:
        The spans of every token, word and sentence, and the words as the metrics see them.

    Raises:
        EvaluationError: if a sentence has no HEAD annotation, or a FORM is only spaces, or a
            gold sentence is not a single-rooted tree (:func:`check_gold_tree`).
    """
    pieces: list[str] = []
    found = Segmentation(source="<empty>")
    position = 0
    for number, sentence in enumerate(sentences, start=1):
        refuse_unannotated(sentence, number, name)
        if name == "gold":
            check_gold_tree(sentence, number)
        found.source = sentence.source
        offset, start = len(found.scored), position
        found.scored += [_numbered(word, offset) for word in scored_words(sentence)]
        found.annotated |= annotated_columns(sentence)
        for token in sentence.tokens:
            text = without_spaces(token.form)
            if not text:
                problem = f"FORM {token.form!r} is only spaces: it has no place in the text"
                raise EvaluationError(f"{sentence.source}:{token.line}: {problem}")
            span = (position, position + len(text))
            pieces.append(text)
            found.tokens.append(span)
            found.token_lines.append(token.line)
            # A one-word token's form is its text; the words of a multiword token keep theirs
            # (``du`` -> ``de le``), as the scorer compares them.
            forms = sentence.forms[token.first - 1 : token.last] if token.multiword else [text]
            found.words += [SpannedWord(span, token.multiword, form.lower()) for form in forms]
            position = span[1]
        found.sentences.append((start, position))
    found.text = "".join(pieces)
    return found


def without_spaces(form: str) -> str:
    """``form`` less its space characters (Unicode category Zs), as the text compares it.

    Only category Zs, as the CoNLL 2018 scorer removes (``conll18_ud_eval.py`` 1.1 and later):
    the space and the no-break spaces, so ``giật mình`` written with U+0020 or U+00A0 compares.
    Other characters ``str.isspace`` calls whitespace (U+0085, U+2028 LINE SEPARATOR, U+000C)
    stay characters of the text: removing them too would give gold tokens ``a<U+2028>`` ``b``
    and system tokens ``a`` ``<U+2028>b`` the same spans, which the scorer counts as different.
    """
    return "".join(c for c in form if unicodedata.category(c) != "Zs")


def _numbered(word: ScoredWord, offset: int) -> ScoredWord:
    """``word`` with its ID, HEAD and children's IDs counted over the file, not the sentence."""
    children = tuple((offset + d, *rest) for d, *rest in word.functional_children)
    head = offset + word.head if word.head else 0
    return replace(word, id=offset + word.id, head=head, functional_children=children)


def check_same_text(gold: Segmentation, system: Segmentation) -> None:
    """Raises unless both files have the same characters once whitespace is removed.

    Raises:
        EvaluationError: naming both files, the first character that differs and the lines
            of the tokens holding it.
    """
    if gold.text == system.text:
        return
    p = next(
        (i for i, (a, b) in enumerate(zip(gold.text, system.text, strict=False)) if a != b),
        min(len(gold.text), len(system.text)),
    )
    gold_part, system_part = gold.text[p : p + 20], system.text[p : p + 20]
    where = f"character {p + 1} of the text without whitespace"
    if not system_part:
        raise EvaluationError(
            f"{system.source}:{system.line_at(p)}: the predicted text ends before {where}, "
            f"but the gold text goes on at {gold.source}:{gold.line_at(p)} with {gold_part!r}"
        )
    gold_side = (
        f"{gold_part!r} at {gold.source}:{gold.line_at(p)}"
        if gold_part
        else f"the end of the gold text ({gold.source})"
    )
    raise EvaluationError(
        f"{system.source}:{system.line_at(p)}: the predicted text differs from the gold text "
        f"at {where}: {system_part!r} against {gold_side}"
    )


def align_words(
    gold: Sequence[SpannedWord], system: Sequence[SpannedWord]
) -> list[tuple[int, int]]:
    """Pairs of aligned words, as the CoNLL 2018 scorer aligns them.

    Words are visited in text order on both sides. Two words outside multiword tokens align
    when their spans are equal. Where a word of either side belongs to a multiword token, the
    smallest region holding every multiword token it meets whole is cut out
    (:func:`_multiword_region`) and its words align by a longest common subsequence of forms.

    Args:
        gold: the gold words in file order.
        system: the system words in file order, over the same text.

    Returns:
        ``(gold index, system index)`` of each aligned pair, increasing on both sides.
    """
    pairs: list[tuple[int, int]] = []
    g = s = 0
    while g < len(gold) and s < len(system):
        if gold[g].multiword or system[s].multiword:
            g_start, s_start, g, s = _multiword_region(gold, system, g, s)
            pairs += _common_subsequence(gold, system, range(g_start, g), range(s_start, s))
        elif gold[g].span == system[s].span:
            pairs.append((g, s))
            g, s = g + 1, s + 1
        elif gold[g].span[0] <= system[s].span[0]:
            g += 1
        else:
            s += 1
    return pairs


def _multiword_region(
    gold: Sequence[SpannedWord], system: Sequence[SpannedWord], g: int, s: int
) -> tuple[int, int, int, int]:
    """Word ranges ``[g_start, g_end)`` and ``[s_start, s_end)`` of one multiword region.

    The region opens with the multiword token at ``gold[g]`` (else ``system[s]``); a plain word
    of the other side that starts before it stays out. It then takes words of both sides in
    text order, stretching its end over every multiword token it takes, until the next word of
    each side lies past the end (a plain word ending after it, a multiword one starting at or
    after it).
    """
    if gold[g].multiword:
        end = gold[g].span[1]
        s += _plain_before(system[s], gold[g])
    else:
        end = system[s].span[1]
        g += _plain_before(gold[g], system[s])
    g_start, s_start = g, s
    while not (_past(gold, g, end) and _past(system, s, end)):
        take_gold = g < len(gold) and (s == len(system) or gold[g].span[0] <= system[s].span[0])
        word = gold[g] if take_gold else system[s]
        if word.multiword:
            end = max(end, word.span[1])
        g, s = (g + 1, s) if take_gold else (g, s + 1)
    return g_start, s_start, g, s


def _plain_before(word: SpannedWord, opener: SpannedWord) -> bool:
    return not word.multiword and word.span[0] < opener.span[0]


def _past(words: Sequence[SpannedWord], i: int, end: int) -> bool:
    if i == len(words):
        return True
    start, stop = words[i].span
    return start >= end if words[i].multiword else stop > end


def _common_subsequence(
    gold: Sequence[SpannedWord], system: Sequence[SpannedWord], g_range: range, s_range: range
) -> list[tuple[int, int]]:
    """Aligned pairs of a longest common subsequence of the two ranges' forms.

    Equal forms pair at once; otherwise the gold word is passed over when that keeps the
    longest length, else the system word (the scorer's choice among equally long ones).
    """
    g_forms = [gold[i].form for i in g_range]
    s_forms = [system[j].form for j in s_range]
    m, n = len(g_forms), len(s_forms)
    # longest[a][b]: length of a longest common subsequence of g_forms[a:] and s_forms[b:].
    longest = [[0] * (n + 1) for _ in range(m + 1)]
    for a in reversed(range(m)):
        for b in reversed(range(n)):
            same = longest[a + 1][b + 1] + 1 if g_forms[a] == s_forms[b] else 0
            longest[a][b] = max(same, longest[a + 1][b], longest[a][b + 1])
    pairs: list[tuple[int, int]] = []
    a = b = 0
    while a < m and b < n:
        if g_forms[a] == s_forms[b]:
            pairs.append((g_range[a], s_range[b]))
            a, b = a + 1, b + 1
        elif longest[a][b] == longest[a + 1][b]:
            a += 1
        else:
            b += 1
    return pairs


@dataclass(frozen=True, slots=True)
class EndToEndScores:
    """The CoNLL 2018 scorer's table: segmentation, then the scores over aligned words.

    Attributes:
        tokens: spans of tokens found.
        sentences: spans of sentences found.
        words: words aligned (correct), gold words, system words.
        aligned: :data:`ALIGNED_METRICS` (UPOS ... LAS ... BLEX) over the aligned words, with
            the gold file's annotated columns.
    """

    tokens: Score
    sentences: Score
    words: Score
    aligned: Conll18Scores

    @property
    def scores(self) -> dict[str, Score]:
        """Every score by the scorer's name, in its order (Tokens, Sentences, Words, UPOS ...)."""
        return {**self._segmentation, **self.aligned.scores}

    def reported(self) -> dict[str, Score]:
        """:attr:`scores` less those whose gold columns are empty (see ``Conll18Scores``)."""
        return {**self._segmentation, **self.aligned.reported()}

    @property
    def _segmentation(self) -> dict[str, Score]:
        return {"Tokens": self.tokens, "Sentences": self.sentences, "Words": self.words}

    def to_dict(self) -> dict[str, Any]:
        """Every score's counts and percentages, and the annotated gold columns, as JSON data."""
        scores = {name: score.to_dict() for name, score in self.scores.items()}
        return {"scores": scores, "annotated_gold_columns": sorted(self.aligned.annotated)}


def evaluate_end_to_end(
    gold_sentences: Iterable[Sentence], system_sentences: Iterable[Sentence]
) -> EndToEndScores:
    """Scores of a system file against the gold file, whatever the system's tokenization.

    Args:
        gold_sentences: the gold file's sentences (HEAD annotated).
        system_sentences: the system's sentences over the same text (HEAD annotated; trees
            may be malformed).

    Returns:
        Tokens, Sentences and Words F1, and every :data:`ALIGNED_METRICS` score.

    Raises:
        EvaluationError: if a sentence lacks HEAD annotation, or the texts without whitespace
            differ (see :func:`check_same_text`).
    """
    gold = segmentation(gold_sentences, "gold")
    system = segmentation(system_sentences, "predicted")
    check_same_text(gold, system)
    pairs = align_words(gold.words, system.words)
    to_gold = {system.scored[s].id: gold.scored[g].id for g, s in pairs}
    system_words = [_in_gold_ids(word, to_gold) for word in system.scored]
    aligned = Conll18Scores.of_aligned(
        gold.scored, system_words, [(gold.scored[g], system_words[s]) for g, s in pairs],
        ALIGNED_METRICS,
    )  # fmt: skip
    return EndToEndScores(
        _span_score(gold.tokens, system.tokens),
        _span_score(gold.sentences, system.sentences),
        Score(len(pairs), len(gold.words), len(system.words)),
        Conll18Scores(aligned.scores, gold.annotated),
    )


def _in_gold_ids(word: ScoredWord, to_gold: Mapping[int, int]) -> ScoredWord:
    """A system word whose ID, HEAD and children's IDs name the gold words they align to."""

    def gold_id(system_id: int) -> int:
        return to_gold.get(system_id, _UNALIGNED)

    children = tuple((gold_id(d), *rest) for d, *rest in word.functional_children)
    head = gold_id(word.head) if word.head else 0
    return replace(word, id=gold_id(word.id), head=head, functional_children=children)


def _span_score(gold: Sequence[Span], system: Sequence[Span]) -> Score:
    # Spans of one file start at increasing positions, so no span repeats: matching spans is
    # intersecting the two sets.
    return Score(len(set(gold) & set(system)), len(gold), len(system))
