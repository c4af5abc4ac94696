"""Scores of predicted CoNLL-U against gold: attachment scores and the CoNLL 2018 scores.

Counts add up over sentences (:class:`AttachmentScores`, :class:`Conll18Scores`); percentages
are derived from them. Punctuation is included by default, as in the CoNLL 2018 shared task
scorer (``conll18_ud_eval.py``), whose definitions of UPOS, XPOS, UFeats, AllTags, Lemmas,
CLAS, MLAS and BLEX :class:`Conll18Scores` follows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

import decoding
from biaffine.data.conllu import universal_relation

if TYPE_CHECKING:
    from biaffine.data.conllu import Sentence

PUNCT = "PUNCT"
ROOT = "root"

__all__ = [
    "ALIGNED_METRICS",
    "ATTACHMENT_METRICS",
    "COLUMNS_OF",
    "CONTENT_RELATIONS",
    "FUNCTIONAL_RELATIONS",
    "GOLD_COLUMNS",
    "METRICS",
    "PUNCT",
    "UNIVERSAL_FEATURES",
    "AttachmentScores",
    "Conll18Scores",
    "Evaluation",
    "EvaluationError",
    "Metric",
    "Score",
    "ScoredWord",
    "annotated_columns",
    "check_gold_tree",
    "dependency_accuracy_of",
    "evaluate_corpus",
    "follows_root_rule",
    "is_well_formed",
    "score_corpus",
    "score_sentence",
    "score_words",
    "scored_words",
    "universal_features",
    "universal_relation",
]


class EvaluationError(ValueError):
    """Gold and predicted input that cannot be scored together (misaligned or unannotated)."""


@dataclass(frozen=True, slots=True)
class AttachmentScores:
    """Counts behind the attachment scores of one sentence or a whole corpus.

    Instances add up with ``+``; ``sum(scores, AttachmentScores())`` totals a corpus. Every
    percentage is ``0.0`` when its denominator is zero.

    Attributes:
        n_sentences: sentences scored.
        n_words: words counted for UAS/LAS (all words, or non-punctuation words only).
        n_correct_heads: counted words whose predicted HEAD equals the gold HEAD.
        n_correct_labeled: of those, words whose full DEPREL also matches (``nmod:poss != nmod``).
        n_correct_universal: words with the right HEAD and the right universal DEPREL (subtype
            after ``:`` stripped on both sides, as the CoNLL 2018 scorer counts LAS).
        n_exact_unlabeled: sentences whose counted words all have the right HEAD.
        n_exact_labeled: sentences whose counted words all have the right HEAD and full DEPREL.
        n_gold_roots: words attached to ROOT (HEAD 0) in the gold trees.
        n_correct_roots: of those, words the prediction also attaches to ROOT.
        n_dependents: counted words whose gold HEAD is a word, not ROOT.
        n_correct_dependents: of those, words with the right HEAD.
        n_malformed: predicted sentences that are not single-rooted trees, or whose labels
            break UD's root rule (see :func:`follows_root_rule`).
    """

    n_sentences: int = 0
    n_words: int = 0
    n_correct_heads: int = 0
    n_correct_labeled: int = 0
    n_correct_universal: int = 0
    n_exact_unlabeled: int = 0
    n_exact_labeled: int = 0
    n_gold_roots: int = 0
    n_correct_roots: int = 0
    n_dependents: int = 0
    n_correct_dependents: int = 0
    n_malformed: int = 0

    def __add__(self, other: AttachmentScores) -> AttachmentScores:
        """Sum of two sets of counts, field by field."""
        if not isinstance(other, AttachmentScores):
            return NotImplemented
        totals = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        return AttachmentScores(**totals)

    @property
    def uas(self) -> float:
        """Unlabeled attachment score: percent of counted words with the right HEAD."""
        return _percent(self.n_correct_heads, self.n_words)

    @property
    def las(self) -> float:
        """Labeled attachment score on full labels: right HEAD and exactly the gold DEPREL."""
        return _percent(self.n_correct_labeled, self.n_words)

    @property
    def las_universal(self) -> float:
        """LAS on universal relations, equal to the CoNLL 2018 scorer's LAS on gold tokens."""
        return _percent(self.n_correct_universal, self.n_words)

    @property
    def uem(self) -> float:
        """Unlabeled exact match: percent of sentences with every counted HEAD right."""
        return _percent(self.n_exact_unlabeled, self.n_sentences)

    @property
    def lem(self) -> float:
        """Labeled exact match: percent of sentences with every counted HEAD and DEPREL right."""
        return _percent(self.n_exact_labeled, self.n_sentences)

    @property
    def dependency_accuracy(self) -> float:
        """DA of Yamada & Matsumoto (2003): percent of non-root counted words with the right HEAD.

        With root accuracy and UEM (CM), the measures Nivre & Scholz (2004) report.
        """
        return _percent(self.n_correct_dependents, self.n_dependents)

    @property
    def root_accuracy(self) -> float:
        """Percent of gold root words that the prediction attaches to ROOT."""
        return _percent(self.n_correct_roots, self.n_gold_roots)

    @property
    def malformed_rate(self) -> float:
        """Percent of predicted sentences that are not single-rooted trees or break the root rule.

        Malformed: several (or no) words on ROOT, a cycle, a HEAD out of range, or, where the
        gold sentence uses UD's ``root`` relation, a word on ROOT not labelled ``root`` or a
        word elsewhere labelled ``root``.
        """
        return _percent(self.n_malformed, self.n_sentences)

    def to_dict(self) -> dict[str, int | float]:
        """All counts and percentages as plain JSON-able data."""
        result: dict[str, int | float] = asdict(self)
        names = ("uas", "las", "las_universal", "uem", "lem", "dependency_accuracy")
        for name in (*names, "root_accuracy"):
            result[name] = getattr(self, name)
        result["malformed_rate"] = self.malformed_rate
        return result

    def selection_key(self) -> tuple[float, float]:
        """Key for best-dev model selection: LAS first, then UAS; larger is better."""
        return (self.las, self.uas)

    def is_better_than(self, other: AttachmentScores | None) -> bool:
        """Whether these scores beat ``other`` (None, meaning no score yet, is always beaten)."""
        return other is None or self.selection_key() > other.selection_key()


def dependency_accuracy_of(counts: Mapping[str, Any]) -> float:
    """DA from the counts of :meth:`AttachmentScores.to_dict`, as saved in results files.

    Files written before DA was counted lack ``n_dependents``; with every word counted
    (punctuation included, the default) the non-root words are the words less the gold roots,
    and the right ones the right heads less the right roots.
    """
    if "n_dependents" in counts:
        return _percent(counts["n_correct_dependents"], counts["n_dependents"])
    correct = counts["n_correct_heads"] - counts["n_correct_roots"]
    return _percent(correct, counts["n_words"] - counts["n_gold_roots"])


def _percent(part: int, whole: int) -> float:
    # 100 * (part / whole), as the CoNLL 2018 scorer computes it: 100 * 23 / 160 is 14.375
    # exactly and prints as 14.38 where the scorer's 14.374999... prints as 14.37.
    return 100 * (part / whole) if whole else 0.0


def follows_root_rule(heads: Sequence[int], deprels: Sequence[str]) -> bool:
    """Whether the words on ROOT, and only they, carry UD's ``root`` relation.

    Subtypes are ignored (``root:x`` counts as ``root``), as in LAS on universal relations.

    Args:
        heads: HEAD of words 1..n; 0 means ROOT.
        deprels: DEPREL of words 1..n.
    """
    return all(
        (head == 0) == (universal_relation(rel) == ROOT)
        for head, rel in zip(heads, deprels, strict=True)
    )


def score_sentence(
    gold_heads: Sequence[int],
    gold_rels: Sequence[str],
    pred_heads: Sequence[int],
    pred_rels: Sequence[str],
    upos: Sequence[str],
    *,
    exclude_punct: bool = False,
) -> AttachmentScores:
    """Attachment counts of one predicted sentence against its gold tree.

    All sequences describe words 1..n in order (index 0 is word 1); HEAD 0 means ROOT.

    Args:
        gold_heads: gold HEAD per word.
        gold_rels: gold DEPREL per word.
        pred_heads: predicted HEAD per word (may be malformed: out of range, cycles, many roots).
        pred_rels: predicted DEPREL per word.
        upos: gold UPOS per word, used only to find punctuation.
        exclude_punct: leave words with gold UPOS ``PUNCT`` out of the UAS/LAS counts. Exact
            match (UEM/LEM) then looks at non-punctuation words only, so a sentence of
            punctuation alone is an exact match. Root accuracy and the malformed count are
            properties of whole trees and ignore this switch. A prediction is malformed if it
            is not a single-rooted tree or, when the gold sentence uses the ``root`` relation
            (every UD treebank does), breaks :func:`follows_root_rule`.

    Returns:
        Counts for this one sentence (``n_sentences == 1``).

    Raises:
        EvaluationError: if the sequences differ in length.
    """
    _check_lengths(gold_heads, gold_rels, pred_heads, pred_rels, upos)
    heads = rels = universal = words = dependents = correct_dependents = 0
    for d, gold_head in enumerate(gold_heads):
        if exclude_punct and upos[d] == PUNCT:
            continue
        words += 1
        dependents += gold_head != 0
        if pred_heads[d] != gold_head:
            continue
        heads += 1
        correct_dependents += gold_head != 0
        rels += pred_rels[d] == gold_rels[d]
        universal += universal_relation(pred_rels[d]) == universal_relation(gold_rels[d])
    gold_roots = [d for d, head in enumerate(gold_heads) if head == 0]
    return AttachmentScores(
        n_sentences=1,
        n_words=words,
        n_correct_heads=heads,
        n_correct_labeled=rels,
        n_correct_universal=universal,
        n_exact_unlabeled=int(heads == words),
        n_exact_labeled=int(rels == words),
        n_gold_roots=len(gold_roots),
        n_correct_roots=sum(1 for d in gold_roots if pred_heads[d] == 0),
        n_dependents=dependents,
        n_correct_dependents=correct_dependents,
        n_malformed=int(not _well_formed(gold_rels, pred_heads, pred_rels)),
    )


def _well_formed(gold_rels: Sequence[str], heads: Sequence[int], rels: Sequence[str]) -> bool:
    # The label rule is UD's: a gold tree without any ``root`` relation (another scheme) does
    # not make every prediction malformed.
    uses_root = any(universal_relation(rel) == ROOT for rel in gold_rels)
    return is_well_formed(heads) and (not uses_root or follows_root_rule(heads, rels))


def is_well_formed(heads: Sequence[int]) -> bool:
    """Whether ``heads`` form a tree over words 1..n with exactly one word on ROOT.

    The check is :func:`decoding.is_tree`'s; this only adapts the CoNLL-U layout.

    Args:
        heads: HEAD of words 1..n (``heads[0]`` is the HEAD of word 1); 0 means ROOT.

    Returns:
        False on a HEAD outside 0..n, a cycle (including a word heading itself) or a number of
        root words other than one; True otherwise (and for an empty sentence).
    """
    return not heads or bool(decoding.is_tree(np.array([-1, *heads], dtype=np.int64)))


def _check_lengths(*columns: Sequence[object]) -> None:
    names = ("gold_heads", "gold_rels", "pred_heads", "pred_rels", "upos")
    lengths = {name: len(column) for name, column in zip(names, columns, strict=True)}
    if len(set(lengths.values())) > 1:
        raise EvaluationError(f"columns of one sentence differ in length: {lengths}")


# The CoNLL 2018 scorer's sets (conll18_ud_eval.py), compared on universal relations.
CONTENT_RELATIONS = frozenset(
    {
        "nsubj", "obj", "iobj", "csubj", "ccomp", "xcomp", "obl", "vocative", "expl",
        "dislocated", "advcl", "advmod", "discourse", "nmod", "appos", "nummod", "acl", "amod",
        "conj", "fixed", "flat", "compound", "list", "parataxis", "orphan", "goeswith",
        "reparandum", "root", "dep",
    }
)  # fmt: skip
"""Relations of the words CLAS, MLAS and BLEX count (``punct`` and the functional ones are not)."""

FUNCTIONAL_RELATIONS = frozenset({"aux", "cop", "mark", "det", "clf", "case", "cc"})
"""Relations of the functional children whose relation, UPOS and features MLAS also compares."""

UNIVERSAL_FEATURES = frozenset(
    {
        "PronType", "NumType", "Poss", "Reflex", "Foreign", "Abbr", "Gender", "Animacy",
        "Number", "Case", "Definite", "Degree", "VerbForm", "Mood", "Tense", "Aspect", "Voice",
        "Evident", "Polarity", "Person", "Polite",
    }
)  # fmt: skip
"""Feature names UFeats compares; others (``Typo``, ``NumForm``, layered ``Number[psor]``) drop."""

_MISSING = "_"

GOLD_COLUMNS = ("upos", "xpos", "feats", "lemmas")
"""Columns a gold file may leave empty (``_``) that :data:`METRICS` read (``Sentence`` names)."""


def universal_features(feats: str) -> str:
    """FEATS as the CoNLL 2018 scorer compares them: universal features only, sorted.

    ``"Typo=Yes|Number=Sing|Case=Nom"`` -> ``"Case=Nom|Number=Sing"``; ``"_"`` and a FEATS of
    language-specific features only both give ``""``.
    """
    kept = (f for f in feats.split("|") if f.split("=", 1)[0] in UNIVERSAL_FEATURES)
    return "|".join(sorted(kept))


class _Annotated(Protocol):
    """What the CoNLL 2018 scores read of a sentence (``data.conllu.Sentence`` has it)."""

    lemmas: list[str]
    upos: list[str]
    xpos: list[str]
    feats: list[str]
    heads: list[int] | None
    deprels: list[str]


@dataclass(frozen=True, slots=True)
class ScoredWord:
    """One word as the CoNLL 2018 scorer compares it (see :func:`scored_words`).

    Attributes:
        id: the ID of the gold word it stands for (with gold tokenization, its own ID).
        head: the ID of the gold word its HEAD stands for; 0 for ROOT.
        deprel: the universal part of DEPREL.
        upos, xpos, lemma: the columns as written.
        feats: :func:`universal_features` of FEATS.
        functional_children: ``(id, deprel, upos, feats)`` of each word whose HEAD is this word
            and whose relation is in :data:`FUNCTIONAL_RELATIONS`, in word order.
    """

    id: int
    head: int
    deprel: str
    upos: str
    xpos: str
    feats: str
    lemma: str
    functional_children: tuple[tuple[int, str, str, str], ...] = ()

    @property
    def is_content(self) -> bool:
        """Whether CLAS, MLAS and BLEX count this word (its relation is a content relation)."""
        return self.deprel in CONTENT_RELATIONS


def scored_words(sentence: _Annotated) -> list[ScoredWord]:
    """The words of a sentence with a HEAD column, IDs as they are (gold tokenization).

    A HEAD outside 1..n (a malformed prediction) makes its word nobody's child.
    """
    assert sentence.heads is not None  # _check_aligned refuses sentences without HEAD
    deprels = [universal_relation(rel) for rel in sentence.deprels]
    feats = [universal_features(value) for value in sentence.feats]
    children: list[list[tuple[int, str, str, str]]] = [[] for _ in range(len(deprels) + 1)]
    for d, head in enumerate(sentence.heads, start=1):
        if deprels[d - 1] in FUNCTIONAL_RELATIONS and 1 <= head <= len(deprels):
            children[head].append((d, deprels[d - 1], sentence.upos[d - 1], feats[d - 1]))
    columns = zip(
        sentence.heads, deprels, sentence.upos, sentence.xpos, feats, sentence.lemmas, strict=True
    )
    return [
        ScoredWord(d, head, rel, upos, xpos, feat, lemma, tuple(children[d]))
        for d, (head, rel, upos, xpos, feat, lemma) in enumerate(columns, start=1)
    ]


def _lemma(word: ScoredWord, gold: ScoredWord) -> str:
    # A gold lemma "_" (not annotated) accepts any predicted lemma, as the scorer does.
    return word.lemma if gold.lemma != _MISSING else _MISSING


@dataclass(frozen=True, slots=True)
class Metric:
    """One CoNLL 2018 score: what of a word must match, and which words count.

    Attributes:
        name: the scorer's name (``"UPOS"``).
        key: ``key(word, gold)``: what must be equal for a predicted word and the gold word it
            aligns to, each given with that gold word (the lemma rule reads it).
        content_only: count only words with a content relation (:data:`CONTENT_RELATIONS`):
            gold ones for recall, predicted ones for precision.
        columns: the gold columns (besides HEAD and DEPREL) the score reads; see
            :meth:`Conll18Scores.reported`.
    """

    name: str
    key: Callable[[ScoredWord, ScoredWord], Hashable]
    content_only: bool
    columns: tuple[str, ...]


_TAG_METRICS = (
    Metric("UPOS", lambda w, g: w.upos, False, ("upos",)),
    Metric("XPOS", lambda w, g: w.xpos, False, ("xpos",)),
    Metric("UFeats", lambda w, g: w.feats, False, ("feats",)),
    Metric("AllTags", lambda w, g: (w.upos, w.xpos, w.feats), False, ("upos", "xpos", "feats")),
    Metric("Lemmas", _lemma, False, ("lemmas",)),
)
_CONTENT_METRICS = (
    Metric("CLAS", lambda w, g: (w.head, w.deprel), True, ()),
    Metric(
        "MLAS",
        lambda w, g: (w.head, w.deprel, w.upos, w.feats, w.functional_children),
        True,
        ("upos", "feats"),
    ),
    Metric("BLEX", lambda w, g: (w.head, w.deprel, _lemma(w, g)), True, ("lemmas",)),
)

METRICS: tuple[Metric, ...] = (*_TAG_METRICS, *_CONTENT_METRICS)
"""The CoNLL 2018 scores past UAS and LAS (those are :class:`AttachmentScores`), in its order."""

ATTACHMENT_METRICS: tuple[Metric, ...] = (
    Metric("UAS", lambda w, g: w.head, False, ()),
    Metric("LAS", lambda w, g: (w.head, w.deprel), False, ()),
)
"""UAS and LAS as the scorer counts them over aligned words (LAS on universal relations).

With gold tokenization their F1 equals :attr:`AttachmentScores.uas` and
:attr:`AttachmentScores.las_universal` (punctuation included).
"""

ALIGNED_METRICS: tuple[Metric, ...] = (*_TAG_METRICS, *ATTACHMENT_METRICS, *_CONTENT_METRICS)
"""Every score the CoNLL 2018 scorer computes over aligned words, in its order."""

COLUMNS_OF = {metric.name: metric.columns for metric in ALIGNED_METRICS}
"""The gold columns each CoNLL 2018 metric reads besides the tree (``lemmas`` for LEMMA)."""


@dataclass(frozen=True, slots=True)
class Score:
    """Counts of one CoNLL 2018 score, as the scorer keeps them.

    Attributes:
        correct: aligned words (gold ones counted by the metric) whose keys match.
        gold: gold words the metric counts.
        system: predicted words the metric counts.
    """

    correct: int = 0
    gold: int = 0
    system: int = 0

    def __add__(self, other: Score) -> Score:
        """Sum of two sets of counts."""
        return Score(
            self.correct + other.correct, self.gold + other.gold, self.system + other.system
        )

    @property
    def precision(self) -> float:
        """Percent of counted predicted words that are correct."""
        return _percent(self.correct, self.system)

    @property
    def recall(self) -> float:
        """Percent of counted gold words that are correct."""
        return _percent(self.correct, self.gold)

    @property
    def f1(self) -> float:
        """Harmonic mean of precision and recall: the score the CoNLL 2018 tables give."""
        return _percent(2 * self.correct, self.gold + self.system)

    def to_dict(self) -> dict[str, int | float]:
        """Counts and percentages as plain JSON-able data."""
        return {**asdict(self), "precision": self.precision, "recall": self.recall, "f1": self.f1}


@dataclass(frozen=True, slots=True)
class Conll18Scores:
    """Counts of the :data:`METRICS` over a sentence or corpus; instances add up with ``+``.

    With gold tokenization every word aligns to itself, so UPOS to Lemmas have precision =
    recall = F1 = accuracy; CLAS, MLAS and BLEX count predicted content words (by predicted
    relation) for precision and gold ones for recall, so the two can differ.

    Attributes:
        scores: :class:`Score` per metric name, in :data:`METRICS` order.
        annotated: the :data:`GOLD_COLUMNS` with at least one value other than ``_``.
    """

    scores: Mapping[str, Score] = field(
        default_factory=lambda: {metric.name: Score() for metric in METRICS}
    )
    annotated: frozenset[str] = frozenset()

    def __add__(self, other: Conll18Scores) -> Conll18Scores:
        """Sum of two sets of counts, metric by metric."""
        if not isinstance(other, Conll18Scores):
            return NotImplemented
        sums = {name: score + other.scores[name] for name, score in self.scores.items()}
        return Conll18Scores(sums, self.annotated | other.annotated)

    @classmethod
    def of_aligned(
        cls,
        gold: Sequence[ScoredWord],
        system: Sequence[ScoredWord],
        pairs: Sequence[tuple[ScoredWord, ScoredWord]],
        metrics: Sequence[Metric] = METRICS,
    ) -> Conll18Scores:
        """Counts of predicted words against gold ones, as the scorer's ``alignment_score``.

        Args:
            gold: all gold words.
            system: all predicted words, IDs and HEADs given as the gold words they align to
                (a HEAD on a word that aligns to no gold word must equal no gold ID: ``-1``).
            pairs: (gold word, predicted word) of the aligned words; with gold tokenization,
                every word with itself.
            metrics: the scores to count, in the order they are kept (:data:`METRICS`, or
                :data:`ALIGNED_METRICS` with UAS and LAS).

        Returns:
            Counts of every metric (``annotated`` left empty).
        """
        return cls({metric.name: _count(metric, gold, system, pairs) for metric in metrics})

    def reported(self) -> dict[str, Score]:
        """The scores whose gold columns are annotated (e.g. no Lemmas for a file of ``_``)."""
        return {
            name: score
            for name, score in self.scores.items()
            if set(COLUMNS_OF[name]) <= self.annotated
        }

    def to_dict(self) -> dict[str, Any]:
        """Every score's counts and percentages, and the annotated gold columns, as JSON data."""
        scores = {name: score.to_dict() for name, score in self.scores.items()}
        return {"scores": scores, "annotated_gold_columns": sorted(self.annotated)}


def _count(
    metric: Metric,
    gold: Sequence[ScoredWord],
    system: Sequence[ScoredWord],
    pairs: Sequence[tuple[ScoredWord, ScoredWord]],
) -> Score:
    def counted(word: ScoredWord) -> bool:
        return word.is_content or not metric.content_only

    correct = sum(counted(g) and metric.key(g, g) == metric.key(s, g) for g, s in pairs)
    return Score(correct, sum(map(counted, gold)), sum(map(counted, system)))


def score_words(gold: _Annotated, pred: _Annotated) -> Conll18Scores:
    """CoNLL 2018 scores of one predicted sentence against its gold sentence (same words).

    Args:
        gold: the gold sentence (HEAD annotated).
        pred: the predicted sentence over the same words (HEAD annotated, may be malformed).

    Returns:
        Counts for this sentence.
    """
    gold_words, pred_words = scored_words(gold), scored_words(pred)
    pairs = list(zip(gold_words, pred_words, strict=True))
    scores = Conll18Scores.of_aligned(gold_words, pred_words, pairs)
    return Conll18Scores(scores.scores, annotated_columns(gold))


def annotated_columns(gold: _Annotated) -> frozenset[str]:
    """The :data:`GOLD_COLUMNS` of a gold sentence with at least one value other than ``_``."""
    return frozenset(name for name in GOLD_COLUMNS if set(getattr(gold, name)) - {_MISSING})


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What :func:`evaluate_corpus` counts: attachment scores and the CoNLL 2018 scores."""

    attachment: AttachmentScores
    words: Conll18Scores


def score_corpus(
    gold_sentences: Iterable[Sentence],
    pred_sentences: Iterable[Sentence],
    *,
    exclude_punct: bool = False,
) -> AttachmentScores:
    """Attachment counts of predicted sentences against gold sentences, paired in order.

    Both inputs are consumed lazily, one sentence pair at a time. Tokenization must be the gold
    one: the same number of sentences, of words per sentence, and the same FORMs.

    Args:
        gold_sentences: gold trees, e.g. ``read_conllu(gold_path)``.
        pred_sentences: predicted trees for the same words.
        exclude_punct: see :func:`score_sentence`.

    Returns:
        Corpus totals.

    Raises:
        EvaluationError: naming the sentence number (1-based), the predicted file and line and
            what differs, when the inputs are misaligned or a sentence lacks HEAD annotation.
    """
    pairs = _aligned(gold_sentences, pred_sentences)
    return sum((_attachment(g, p, exclude_punct) for g, p in pairs), AttachmentScores())


def evaluate_corpus(
    gold_sentences: Iterable[Sentence],
    pred_sentences: Iterable[Sentence],
    *,
    exclude_punct: bool = False,
) -> Evaluation:
    """Attachment scores and CoNLL 2018 scores in one lazy pass (see :func:`score_corpus`).

    Args:
        gold_sentences: gold sentences, e.g. ``read_conllu(gold_path)``.
        pred_sentences: predicted sentences for the same words.
        exclude_punct: applies to the attachment scores only (the CoNLL 2018 scores are the
            scorer's, punctuation included; CLAS, MLAS and BLEX never count it).

    Returns:
        Corpus totals of both.

    Raises:
        EvaluationError: as :func:`score_corpus`.
    """
    attachment, words = AttachmentScores(), Conll18Scores()
    for gold, pred in _aligned(gold_sentences, pred_sentences):
        attachment += _attachment(gold, pred, exclude_punct)
        words += score_words(gold, pred)
    return Evaluation(attachment, words)


def _attachment(gold: Sentence, pred: Sentence, exclude_punct: bool) -> AttachmentScores:
    return score_sentence(
        gold.heads, gold.deprels, pred.heads, pred.deprels, gold.upos, exclude_punct=exclude_punct
    )


def _aligned(
    gold_sentences: Iterable[Sentence], pred_sentences: Iterable[Sentence]
) -> Iterator[tuple[Sentence, Sentence]]:
    """Sentence pairs in order, each checked by :func:`_check_aligned` before it is yielded."""
    previous: Sentence | None = None
    pairs = itertools.zip_longest(gold_sentences, pred_sentences)
    for number, (gold, pred) in enumerate(pairs, start=1):
        _check_aligned(number, gold, pred, previous)
        previous = pred
        yield gold, pred


def _check_aligned(
    number: int, gold: Sentence | None, pred: Sentence | None, previous: Sentence | None
) -> None:
    if pred is None:
        assert gold is not None  # zip_longest never yields two fill values
        source = f"{previous.source}:{previous.line}: " if previous is not None else ""
        raise EvaluationError(
            f"{source}sentence {number}: the predicted file ends after {number - 1} "
            f"sentences, but the gold file goes on ({gold.source}:{gold.line})"
        )
    where = f"{pred.source}:{pred.line}: sentence {number}"
    if gold is None:
        raise EvaluationError(f"{where}: the gold file ends after {number - 1} sentences")
    if len(pred) != len(gold):
        raise EvaluationError(
            f"{where}: {len(pred)} words, but the gold sentence ({gold.source}:{gold.line}) "
            f"has {len(gold)}"
        )
    pairs = zip(pred.forms, gold.forms, strict=True)
    for index, (pred_form, gold_form) in enumerate(pairs, start=1):
        if pred_form != gold_form:
            raise EvaluationError(
                f"{where}: word {index} has FORM {pred_form!r}, but the gold sentence "
                f"({gold.source}:{gold.line}) has {gold_form!r}"
            )
    for name, sentence in (("gold", gold), ("predicted", pred)):
        refuse_unannotated(sentence, number, name)
    check_gold_tree(gold, number)


def refuse_unannotated(sentence: Sentence, number: int, name: str) -> None:
    """Refuse a sentence with a HEAD ``_``, naming its first such word's line.

    Args:
        sentence: a gold or predicted sentence.
        number: its number in its file (1, 2, ...), for the message.
        name: ``"gold"`` or ``"predicted"``.

    Raises:
        EvaluationError: where a word has no HEAD (the sentence's first line was named).
    """
    if sentence.heads is not None:
        return
    word = sentence.given_heads().index(None) + 1
    raise EvaluationError(
        f"{sentence.source}:{sentence.word_line(word)}: sentence {number}: word {word} of the "
        f"{name} sentence has no HEAD ('_')"
    )


def check_gold_tree(gold: Sentence, number: int) -> None:
    """Refuse a gold sentence whose heads are not a tree with one word on ROOT.

    A prediction may be malformed (it is counted so); the gold standard may not, as the CoNLL
    2018 shared task's scorer refuses it ("There is a cycle in a sentence", "There are
    multiple roots in a sentence"): it would score against no tree at all.

    Raises:
        EvaluationError: naming the sentence's file, line and number.
    """
    if gold.heads is not None and not is_well_formed(gold.heads):
        raise EvaluationError(
            f"{gold.source}:{gold.line}: sentence {number}: the gold heads are not a tree "
            "with one word on ROOT (a cycle, or no or several words on ROOT)"
        )
