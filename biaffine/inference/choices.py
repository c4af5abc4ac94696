"""What the families choose from their scores, on numpy arrays: heads, labels, column values.

Torch-free, so that the torch families (:mod:`biaffine.inference.graph`,
:mod:`biaffine.inference.transition`) and the ONNX runtime (:mod:`biaffine.onnxrun`) make the
same choices from the same scores with the same code: the torch families hand their tensors
over as float32 (or float64) arrays.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

import decoding
from biaffine.data.columns import strings, unseen_address
from biaffine.data.conllu import Sentence, universal_relation
from biaffine.data.lexicon import ANALYSED, Lexicon
from biaffine.data.vocab import SPECIALS, Vocab, Vocabs
from biaffine.inference.request import Tree
from biaffine.inference.settings import GraphDecoding, TransitionSearch
from decoding.types import IntArray

# transitions defines numba kernels at import: imported where a transition parser needs it, so
# that a graph parse in ONNX Runtime loads no numba (decoding.aot).
if TYPE_CHECKING:
    import transitions

__all__ = [
    "CANDIDATE_HEADS",
    "LEMMA_RUNNER_UP",
    "MST",
    "RELATION_SMOOTHING",
    "RELATION_WEIGHT",
    "ROOT_LABEL",
    "TAGGER_DOUBT",
    "TAG_SET_COLUMNS",
    "Found",
    "arc_label_ids",
    "best_classes",
    "best_head_labels",
    "decode_arc_scores",
    "decode_with_labels",
    "deprojectivize_batch",
    "doubtful",
    "find_trees",
    "find_with_labels",
    "guessed_upos",
    "head_log_probs",
    "joint_tags",
    "label_ids",
    "labelled_tree",
    "missing_taggers",
    "predicted_columns",
    "related_upos",
    "root_label_id",
    "runners_up",
    "word_label_ids",
    "word_slice",
]

ROOT_LABEL = "root"
"""UD's label of the word attached to ROOT, and of no other word."""

MST = GraphDecoding()
"""MST with exactly one word on ROOT, as UD requires."""

Found = TypeVar("Found")
"""What a search of :func:`find_with_labels` returns (k-best trees, one tree)."""


def root_label_id(labels: Vocab) -> int | None:
    """The id of ``root`` in the relation vocabulary, or None if the treebank never uses it."""
    return labels.stoi.get(ROOT_LABEL)


def head_log_probs(arc_scores: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Row-wise log-softmax in float64: float[B, N+1, N+1] -> float64[B, N+1, N+1].

    Rows that are ``-inf`` throughout (ROOT as a dependent, padding) become NaN, which no
    decoder reads.
    """
    scores = arc_scores.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore"):
        shifted = scores - scores.max(-1, keepdims=True)
        return shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))


def decode_arc_scores(
    arc_scores: npt.NDArray[np.floating], lengths: IntArray, decoder: GraphDecoding = MST
) -> IntArray:
    """Best tree per sentence from a batch of arc scores, heads alone.

    Heads are decoded from head log-probabilities (:func:`head_log_probs`), which changes no
    decoder's choice but keeps scores in a common range; :func:`decode_with_labels` decodes
    them with their labels.

    Args:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d.
        lengths: int64[B] words per sentence, excluding ROOT.
        decoder: the decoder and whether exactly one word goes to ROOT.

    Returns:
        heads: int64[B, N+1], ``-1`` at ROOT and at padding.

    Raises:
        ValueError: from :mod:`decoding` (NaN scores, bad lengths).
    """
    return _decoded(head_log_probs(arc_scores), lengths, decoder)


def _decoded(
    scores: npt.NDArray[np.float64], lengths: IntArray, decoder: GraphDecoding
) -> IntArray:
    """``decoder``'s trees of float64[B, N+1, N+1] scores (their sum is maximized)."""
    # decoding batches on plain Python threads, never numba's OpenMP layer, which would reset
    # torch's thread count when it starts (decoding._batch).
    return decoding.decode(
        scores,
        np.asarray(lengths, dtype=np.int64),
        algorithm=decoder.algorithm,
        root_constraint=decoder.root_constraint,
    )


CANDIDATE_HEADS = 2
"""Heads per word whose arcs :func:`decode_with_labels` labels before decoding: each word's
likeliest. Any number gives the same trees; more label arcs no tree takes, fewer decode
again more often (EWT test, ``en_ewt``: see docs/speed.md)."""

ARCS_PER_CALL = 65536
"""Arcs labelled in one call of the label scorer at most: bounds its memory where a long
sentence has every arc labelled (:meth:`_ArcLabels.label_more`)."""


def decode_with_labels(
    arc_scores: npt.NDArray[np.floating],
    lengths: IntArray,
    decoder: GraphDecoding,
    head_labels: Callable[[IntArray, IntArray, IntArray], tuple[np.ndarray, IntArray]],
) -> tuple[IntArray, IntArray]:
    """Best labelled tree per sentence, labelling only the arcs a best tree can take.

    The decoder maximizes head log-probabilities (:func:`head_log_probs`) plus each arc's best
    label's: a tree's sum is then the log-probability of the tree with its labels under the
    model's factorization ``P(h | d) P(l | d, h)``. Rather than scoring every label of every
    arc, the arcs of each word's :data:`CANDIDATE_HEADS` likeliest heads are labelled, every
    other arc is given its labels' upper bound, a log-probability of 0, and the trees are
    decoded. A tree whose arcs are all labelled scores no less than any other tree under the
    bounds, and so under the labels: it is the best. A tree that takes an unlabelled arc has
    it labelled, with more arcs that may tie with it (:meth:`_ArcLabels.label_more`), and its
    sentence is decoded again, until none does: some ten times at most for 1,000 words.

    Args:
        arc_scores: float[B, N+1, N+1], ``arc_scores[b, d, h]`` scores the arc h -> d.
        lengths: int64[B] words per sentence, excluding ROOT.
        decoder: the decoder and whether exactly one word goes to ROOT.
        head_labels: ``(rows, dependents, heads)``, int64[W] twice and int64[W, K], to the best
            label of each arc ``heads[w, k] -> dependents[w]`` in row ``rows[w]`` under UD's
            rule on ``root`` and its log-probability: (float64[W, K], int64[W, K])
            (:func:`best_head_labels` of the arcs' label scores).

    Returns:
        heads: int64[B, N+1], ``-1`` at ROOT and at padding.
        rels: int64[B, N+1], the label of each chosen arc, ``-1`` where heads is.

    Raises:
        ValueError: from :mod:`decoding` (NaN scores, bad lengths).
    """
    scores = head_log_probs(arc_scores)
    lengths = np.asarray(lengths, dtype=np.int64)
    arcs = _ArcLabels(scores, lengths, head_labels)
    rows, dependents = arcs.words(np.arange(scores.shape[0]))
    arcs.label((rows, dependents), _likeliest(scores[rows, dependents]))
    heads = np.full(scores.shape[:2], -1, dtype=np.int64)
    pending = np.arange(scores.shape[0])
    for again in itertools.count(1):
        found = _decoded(scores[pending] + arcs.bounds[pending], lengths[pending], decoder)
        heads[pending] = found
        rows, dependents = np.nonzero(found >= 0)
        rows = pending[rows]
        chosen = heads[rows, dependents]
        unlabelled = arcs.ids[rows, dependents, chosen] < 0
        if not unlabelled.any():
            return heads, arc_label_ids(arcs.ids, heads)
        rows, dependents = rows[unlabelled], dependents[unlabelled]
        arcs.label_more(rows, dependents, chosen[unlabelled], again)
        pending = np.unique(rows)
    raise AssertionError("unreachable: itertools.count never ends")


def find_with_labels(
    head_scores: npt.NDArray[np.float64],
    search: Callable[[npt.NDArray[np.float64]], Found],
    trees_of: Callable[[Found], Sequence[IntArray]],
    head_labels: Callable[[IntArray, IntArray], tuple[np.ndarray, IntArray]],
) -> tuple[Found, IntArray]:
    """What ``search`` finds on one sentence's head and label scores, few arcs labelled.

    As :func:`decode_with_labels` does for a batch, only the arcs the trees found may take are
    labelled. For any search that returns the trees of highest scores (the best, the k best,
    the best that keep some heads): trees whose arcs are all labelled score no less under the
    labels' upper bound (0) than any other tree, so they are the trees of highest scores under
    the labels too, with the same scores.

    Args:
        head_scores: float64[n+1, n+1], the head log-probabilities ``[d, h]`` of a sentence of
            n words.
        search: the trees of highest score in a float64[n+1, n+1] matrix (k-best, fixed heads).
        trees_of: the trees in what ``search`` returns, int64[n+1] heads each.
        head_labels: ``(dependents, heads)``, int64[W] and int64[W, K], to the best label of
            each arc ``heads[w, k] -> dependents[w]`` and its log-probability, as
            :func:`decode_with_labels` reads them (with the sentence's row).

    Returns:
        What ``search`` found on the labelled scores, and the label of every labelled arc,
        int64[n+1, n+1] (``[d, h]``; -1 where the arc was not labelled).
    """
    n = head_scores.shape[0] - 1
    arcs = _ArcLabels(
        head_scores[None],
        np.array([n]),
        lambda _, dependents, heads: head_labels(dependents, heads),
    )
    words = np.arange(1, n + 1)
    arcs.label((np.zeros_like(words), words), _likeliest(head_scores[1:]))
    for again in itertools.count(1):
        found = search(head_scores + arcs.bounds[0])
        unlabelled = {
            (dependent, int(tree[dependent]))
            for tree in trees_of(found)
            for dependent in range(1, n + 1)
            if arcs.ids[0, dependent, tree[dependent]] < 0
        }
        if not unlabelled:
            return found, arcs.ids[0]
        dependents, heads = np.array(sorted(unlabelled), dtype=np.int64).T
        arcs.label_more(np.zeros_like(dependents), dependents, heads, again)
    raise AssertionError("unreachable: itertools.count never ends")


class _ArcLabels:
    """The arcs of a batch labelled so far (float64/int64[B, N+1, N+1]), and what to label next.

    Attributes:
        bounds: each arc's best label's log-probability where it is labelled, else 0, the most
            any label's can be: what the decoders add to the head log-probabilities.
        ids: each labelled arc's best label, -1 where the arc is not labelled yet.
    """

    def __init__(
        self,
        scores: npt.NDArray[np.float64],
        lengths: IntArray,
        head_labels: Callable[[IntArray, IntArray, IntArray], tuple[np.ndarray, IntArray]],
    ) -> None:
        """No arc labelled.

        Args:
            scores: float64[B, N+1, N+1], the head log-probabilities (``[b, d, h]``).
            lengths: int64[B], words per sentence.
            head_labels: ``(rows, dependents, heads)``, int64[W] twice and int64[W, K], to
                each arc's best label's log-probability and the label, float64/int64[W, K].
        """
        self.bounds = np.zeros(scores.shape)
        self.ids = np.full(scores.shape, -1, dtype=np.int64)
        self._scores, self._lengths = scores, lengths
        self._head_labels = head_labels

    def words(self, rows: IntArray) -> tuple[IntArray, IntArray]:
        """(rows, dependents), int64[W] each: every word of the sentences ``rows``."""
        at, dependents = np.nonzero(
            np.arange(self._scores.shape[1]) <= self._lengths[rows][:, None]
        )
        words = dependents > 0
        return rows[at[words]], dependents[words]

    def label(self, where: tuple[IntArray, IntArray], heads: IntArray) -> None:
        """Label the arcs ``heads[w, k] -> dependents[w]`` of W words, int64[W, K].

        ``where`` is (rows, dependents), int64[W] each. At most :data:`ARCS_PER_CALL` arcs
        go to the label scorer at once.
        """
        step = max(1, ARCS_PER_CALL // max(1, heads.shape[-1]))
        for start in range(0, heads.shape[0], step):
            rows, dependents = (positions[start : start + step] for positions in where)
            part = heads[start : start + step]
            log_probs, found = self._head_labels(rows, dependents, part)
            self.bounds[rows[:, None], dependents[:, None], part] = log_probs
            self.ids[rows[:, None], dependents[:, None], part] = found

    def label_more(
        self, rows: IntArray, dependents: IntArray, chosen: IntArray, again: int
    ) -> None:
        """Label the unlabelled arcs ``chosen[w] -> dependents[w]`` trees took, and more.

        Where arcs tie (a sentence of 900 copies of one word), each new tree would take
        other unlabelled arcs, and labelling only those decoded such a sentence once per word
        (8 s for 900). So each word also gets its ``CANDIDATE_HEADS * 2**again`` likeliest
        heads labelled, and where that is as many as its sentence's words, every arc of the
        sentence, whose next decoding is then its last; and an arc from ROOT, which one word
        of a single-rooted tree takes after another, has every word of its sentence labelled
        from ROOT.

        Args:
            rows: int64[W], the sentences of the words whose tree took an unlabelled arc.
            dependents: int64[W], those words.
            chosen: int64[W], the head of that arc.
            again: 1 the first time their sentences are decoded again, 2 the next, ...
        """
        more = CANDIDATE_HEADS << min(again, 30)
        whole = more >= self._lengths[rows]
        every = self.words(np.unique(rows[whole]))
        width = self._scores.shape[-1]
        self.label(every, np.minimum(np.arange(width), self._lengths[every[0]][:, None]))
        rows, dependents, chosen = rows[~whole], dependents[~whole], chosen[~whole]
        likeliest = _likeliest(self._scores[rows, dependents], more)
        self.label((rows, dependents), np.concatenate([chosen[:, None], likeliest], axis=1))
        from_root = self.words(np.unique(rows[chosen == 0]))
        self.label(from_root, np.zeros((from_root[0].size, 1), dtype=np.int64))


def _likeliest(scores: npt.NDArray[np.float64], k: int | None = None) -> IntArray:
    """Each word's ``k`` likeliest heads (:data:`CANDIDATE_HEADS` when None), int64[W, <= k].

    From head log-probabilities float64[W, N+1]; fewer where a word has fewer heads (N: it
    cannot head itself).
    """
    k = min(CANDIDATE_HEADS if k is None else k, scores.shape[-1] - 1)
    return np.argpartition(-scores, k - 1, axis=-1)[:, :k]


def best_head_labels(
    label_scores: npt.NDArray[np.floating], heads: IntArray, *, root_label: int | None
) -> tuple[npt.NDArray[np.float64], IntArray]:
    """The log-probability of each arc's best label, and that label (:func:`label_ids`).

    Args:
        label_scores: float[..., R], the arcs' label scores (or log-probabilities).
        heads: int64[...], the arcs' heads (none -1).
        root_label: as :func:`label_ids` takes it.

    Returns:
        (float64[...], int64[...]).
    """
    scores = label_scores.astype(np.float64, copy=False)
    top = scores.max(-1, keepdims=True)
    normalizer = top[..., 0] + np.log(np.exp(scores - top).sum(-1))
    found = label_ids(scores, heads, root_label=root_label)
    best = np.take_along_axis(scores, found[..., None], -1)[..., 0]
    return best - normalizer, found


def arc_label_ids(label_ids: IntArray, heads: IntArray) -> IntArray:
    """The label of each chosen arc from every arc's best label: int64[B, N+1], -1 off words.

    Args:
        label_ids: int64[B, N+1, N+1], ``[b, d, h]`` the best label of the arc h -> d
            (:func:`best_head_labels`; any value where no chosen arc reads it).
        heads: int64[B, N+1] chosen heads, -1 at ROOT and padding.
    """
    chosen = np.take_along_axis(label_ids, np.maximum(heads, 0)[..., None], -1)[..., 0]
    return np.where(heads < 0, -1, chosen).astype(np.int64)


def label_ids(
    label_scores: npt.NDArray[np.floating], heads: IntArray, *, root_label: int | None
) -> IntArray:
    """The label id of each arc ``heads[..., d] -> d``: int64 like heads, -1 where heads is -1.

    UD labels the word on ROOT ``root`` and no other word, so the label depends on the head:
    an arc from ROOT takes ``root_label``, and any other arc the best label except
    ``root_label``. A plain argmax per arc ignores the rule: a briefly trained model labelled
    22 of the 35 words of ``tests/data/tiny.conllu`` ``root``.

    Args:
        label_scores: float[..., R], the label scores of each chosen arc (float[B, N+1, R], or
            float[W, R] for the words alone).
        heads: int64[...] chosen heads (int64[B, N+1], -1 at ROOT and padding, or int64[W]).
        root_label: id of ``root`` (:func:`root_label_id`); None when the vocabulary has no
            ``root`` (a tiny or non-UD treebank): then every arc simply takes its best label.
    """
    if root_label is None:
        rels = label_scores.argmax(-1)
    else:
        others = label_scores.copy()
        others[..., root_label] = -np.inf
        rels = np.where(heads == 0, root_label, others.argmax(-1))
    return np.where(heads < 0, -1, rels).astype(np.int64)


def word_label_ids(
    word_scores: npt.NDArray[np.floating], heads: IntArray, *, root_label: int | None
) -> IntArray:
    """:func:`label_ids` from the scores of the words' arcs alone: int64[B, N+1], -1 off them.

    Args:
        word_scores: float[W, R], the label scores of the arcs of the W entries of ``heads``
            that are >= 0, row by row (as ``LabelScorer.at_words`` and ``labels.onnx`` give
            them).
        heads: int64[B, N+1] chosen heads, -1 at ROOT and padding.
        root_label: as :func:`label_ids` takes it.
    """
    words = heads >= 0
    rels = np.full(heads.shape, -1, dtype=np.int64)
    rels[words] = label_ids(word_scores, heads[words], root_label=root_label)
    return rels


def best_classes(scores: npt.NDArray[np.floating], vocab: Vocab) -> list[str]:
    """The best class of each word in a column, never a special: float[W, n_classes] -> str[W]."""
    itos = vocab.itos
    return [itos[i] for i in _best_ids(scores).tolist()]


def _best_ids(scores: npt.NDArray[np.floating]) -> IntArray:
    """Each word's best class id, never a special's: float[W, n_classes] -> int64[W]."""
    first = len(SPECIALS)
    return scores[:, first:].argmax(-1) + first


def _real_classes(scores: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """A float64 copy of class scores float[W, C] with the specials' at ``-inf``."""
    allowed = scores.astype(np.float64)
    allowed[:, : len(SPECIALS)] = -np.inf
    return allowed


TAG_SET_COLUMNS = ("upos", "xpos", "feats")
"""The columns of a training lexicon's tag sets (:attr:`biaffine.data.lexicon.Lexicon.tag_sets`),
in their order there."""

TAG_SET_CELLS = 1 << 20
"""Words times tag sets scored at once by :func:`joint_tags` (float64: 8 MB a column)."""


@functools.lru_cache(maxsize=32)
def _tag_set_ids(
    tag_sets: frozenset[tuple[str, str, str]],
    columns: tuple[str, ...],
    classes: tuple[tuple[str, ...], ...],
) -> IntArray:
    """The tag sets projected on ``columns`` as class ids int64[K, len(columns)], sorted.

    ``classes``: each column's vocabulary (its ``itos``). A tag set holding a class the
    vocabularies lack (or a special's name) is left out. Kept for the last models' arguments,
    read-only: built anew, the table took 0.7 ms of the 1.8 ms a one-sentence parse spent on
    its columns.
    """
    positions = [TAG_SET_COLUMNS.index(c) for c in columns]
    ids_of = [{name: i for i, name in enumerate(itos)} for itos in classes]
    found = set()
    for tags in tag_sets:
        ids = [stoi.get(tags[k], -1) for stoi, k in zip(ids_of, positions, strict=True)]
        if min(ids, default=-1) >= len(SPECIALS):
            found.add(tuple(ids))
    table = np.array(sorted(found), dtype=np.int64).reshape(-1, len(columns))
    table.flags.writeable = False
    return table


def joint_tags(
    tag_scores: Mapping[str, npt.NDArray[np.floating]],
    vocabs: Vocabs,
    tag_sets: Collection[tuple[str, str, str]],
) -> dict[str, list[str]]:
    """Each word's UPOS, XPOS and FEATS chosen together among the tag sets seen in training.

    The taggers score each column apart, and their best classes need not fit each other (an
    English NNP that is a NOUN, a NOUN with ``VerbForm``). Of the training data's (UPOS, XPOS,
    FEATS), restricted to the columns in ``tag_scores`` and to classes the vocabularies hold,
    each word takes the one with the highest sum of its columns' log-probabilities (specials
    never count). Measured on the dev sets of the seven shipped models (docs/tags.md): AllTags
    +0.08 to +0.40, UPOS -0.05 to +0.08.

    Args:
        tag_scores: float[W, n_classes] class scores (logits) of W words for one or more of
            :data:`TAG_SET_COLUMNS`; other columns are ignored.
        vocabs: the columns' classes.
        tag_sets: (UPOS, XPOS, FEATS) triples, as the lexicon keeps them.

    Returns:
        str[W] per column of ``tag_scores`` among :data:`TAG_SET_COLUMNS`; empty where fewer
        than two such columns are scored or no tag set fits the vocabularies (nothing to
        choose together: the caller takes each column's best class).
    """
    columns = [c for c in TAG_SET_COLUMNS if c in tag_scores]
    classes = tuple(tuple(vocabs.columns[c].itos) for c in columns)
    table = _tag_set_ids(frozenset(tag_sets), tuple(columns), classes)
    if len(columns) < 2 or not len(table):
        return {}
    chosen = np.stack([_best_ids(tag_scores[c]) for c in columns], axis=1)
    # Where a word's best classes form a tag set, no set scores higher: only the other words
    # (a few in a hundred) are searched. A set's code reads its class ids as digits.
    widths = [len(vocabs.columns[c].itos) for c in columns]
    digits = np.array([math.prod(widths[j + 1 :]) for j in range(len(widths))], dtype=np.int64)
    searched = np.flatnonzero(~np.isin(chosen @ digits, table @ digits))
    if len(searched):
        log_probs = [head_log_probs(_real_classes(tag_scores[c][searched])) for c in columns]
        chosen[searched] = table[_best_sets(log_probs, table)]
    return {
        c: [vocabs.columns[c].itos[i] for i in chosen[:, j].tolist()] for j, c in enumerate(columns)
    }


def _best_sets(log_probs: Sequence[npt.NDArray[np.float64]], table: IntArray) -> IntArray:
    """Each word's best row of ``table``, every row tried: int64[W].

    Args:
        log_probs: per column of the table, float64[W, n_classes] the W words' log-probabilities.
        table: int64[K, C] tag sets as class ids, scored :data:`TAG_SET_CELLS` words times sets
            at a time.
    """
    words = len(log_probs[0])
    found = np.empty(words, dtype=np.int64)
    step = max(1, TAG_SET_CELLS // len(table))
    for start in range(0, words, step):
        part = slice(start, start + step)
        total = sum(lp[part][:, table[:, j]] for j, lp in enumerate(log_probs))
        found[part] = total.argmax(-1)
    return found


LEMMA_RUNNER_UP = 0.05
"""A lemma script whose probability is at least this share of the best script's is tried when
the best one's lemma is no training lemma (:func:`biaffine.data.columns.strings`), unless the
model's lexicon has a share of its own (:attr:`~biaffine.data.lexicon.Lexicon.runner_up`,
chosen on dev by :mod:`biaffine.training.doubt`). Chosen on the dev sets of EWT, Sequoia and
IMST (``experiments/lexicon_choices.py``, docs/lemmas.md): the one share of those tried that
gained on all three (IMST 85.15 -> 91.37); 0.01 gained more on Sequoia and IMST but lost on
EWT, and 0.5 gave back half of IMST's gain."""


TAGGER_DOUBT = 0.9
"""Below this probability of its best UPOS, XPOS or FEATS class, a tagger gives way to the
training lexicon's value for the word (:meth:`biaffine.data.lexicon.Lexicon.tag`,
:meth:`~biaffine.data.lexicon.Lexicon.analysis`), unless the model has its own share for the
column, chosen on dev (:attr:`~biaffine.data.lexicon.Lexicon.doubt`,
:mod:`biaffine.training.doubt`). Chosen on the dev sets of EWT (with and without MiniLM),
Sequoia and IMST (docs/tags.md): always taking the lexicon's FEATS cost the MiniLM model 0.02,
its UPOS 0.4 (its taggers know the context better); below 0.9 every model gained on every
column (IMST whole-FEATS accuracy 77.74 -> 81.53, UPOS 89.30 -> 90.83). Ensembles, whose mean
probabilities are lower, came to prefer lower shares on EWT (docs/tags.md)."""


RELATION_WEIGHT = 0.6
"""How much the UPOS a word's form and relation had in training weighs beside the taggers'
(:func:`related_upos`): its log-probability times this joins their scores. Chosen on the dev
sets of EWT, Sequoia, IMST, Szeged and VTB (docs/tags.md)."""

RELATION_SMOOTHING = 0.5
"""What each UPOS class counts for a (form, relation) pair besides its training words
(add-one smoothing at a half, :func:`related_upos`): a pair seen twice as ADP still leaves
SCONJ a chance. Chosen with :data:`RELATION_WEIGHT`."""


def doubtful(scores: npt.NDArray[np.floating], share: float = TAGGER_DOUBT) -> list[bool]:
    """Whether each word's best class has a probability below ``share``: float[W, C] -> bool[W].

    Specials never count (their scores are left out of the softmax). In the scores' own
    precision: each term of the sum is at most 1, so float32 holds it to about 1e-7.
    """
    allowed = scores[:, len(SPECIALS) :]
    best = 1.0 / np.exp(allowed - allowed.max(-1, keepdims=True)).sum(-1)  # e^0 / sum
    return (best < share).tolist()


def _doubt(lexicon: Lexicon | None, column: str) -> float:
    """The share below which ``column``'s tagger gives way to ``lexicon``.

    The model's own, chosen on dev (:attr:`Lexicon.doubt`), else :data:`TAGGER_DOUBT`.
    """
    return TAGGER_DOUBT if lexicon is None else lexicon.doubt.get(column, TAGGER_DOUBT)


def runners_up(
    scores: npt.NDArray[np.floating], vocab: Vocab, share: float = LEMMA_RUNNER_UP
) -> list[tuple[str, ...]]:
    """Each word's classes but its best whose probability is at least ``share`` of the best's.

    Args:
        scores: float[W, n_classes] class scores (logits) of W words; specials never count.
        vocab: the column's classes.
        share: in (0, 1]: p(class) / p(best) = exp(score - best score) at least this.

    Returns:
        str[W][*]: per word those classes, highest score first (ties: lower id first).
    """
    allowed = _real_classes(scores)
    best = allowed.argmax(-1)
    near = allowed >= allowed[np.arange(len(allowed)), best][:, None] + np.log(share)
    near[np.arange(len(allowed)), best] = False
    words, ids = near.nonzero()
    order = np.lexsort((ids, -allowed[words, ids], words))
    found: list[list[str]] = [[] for _ in range(len(allowed))]
    for word, class_id in zip(words[order].tolist(), ids[order].tolist(), strict=True):
        found[word].append(vocab.itos[class_id])
    return [tuple(classes) for classes in found]


def lemma_words(forms: Sequence[str], lexicon: Lexicon | None) -> list[int] | None:
    """The words whose LEMMA scores :func:`predicted_columns` reads: indices into ``forms``.

    Those whose lemma ``lexicon`` cannot give (:meth:`Lexicon.finds_lemma`), for any UPOS
    and FEATS; None for every word where there is no lexicon. Parsing scores these alone: on
    EWT test 3,668 of its 25,094 words for the English models, so the lemmatizer, the largest
    of their four tagger heads, costs a seventh of what it did.

    Args:
        forms: the batch's W words, row by row.
        lexicon: the training lexicon, or None.
    """
    if lexicon is None:
        return None
    return [word for word, form in enumerate(forms) if not lexicon.finds_lemma(form)]


def _scripts(
    scores: npt.NDArray[np.floating],
    vocab: Vocab,
    forms: Sequence[str],
    lexicon: Lexicon | None,
    scored: Sequence[int] | None,
) -> tuple[list[str | None], list[tuple[str, ...]] | None]:
    """Each word's best LEMMA script, and its :func:`runners_up` where a lexicon checks them.

    Only the words of :func:`lemma_words` read theirs: the others get None and ().

    Args:
        scores: float[W, n_classes] of the W words ``forms``, or float[U, n_classes] of the
            U words ``scored`` alone, in that order.
        vocab: the scripts.
        forms: the batch's words, row by row.
        lexicon: the training lexicon, or None (every word's own script, no runner-up).
        scored: the words ``scores`` hold, or None for every word.
    """
    words = lemma_words(forms, lexicon) if scored is None else scored
    if words is None:
        return best_classes(scores, vocab), None
    if scored is None:
        scores = scores[words]
    best: list[str | None] = [None] * len(forms)
    others: list[tuple[str, ...]] = [()] * len(forms)
    own = None if lexicon is None else lexicon.runner_up
    share = LEMMA_RUNNER_UP if own is None else own
    found = zip(words, best_classes(scores, vocab), runners_up(scores, vocab, share), strict=True)
    for word, script, tried in found:
        best[word], others[word] = script, tried
    return best, others


def _lexicon_read(columns: Sequence[str], vocabs: Vocabs) -> Lexicon | None:
    """The vocabularies' lexicon when writing ``columns`` reads it, else None."""
    return vocabs.lexicon if {"upos", "lemma", *ANALYSED} & set(columns) else None


def _featured(columns: Sequence[str], lexicon: Lexicon | None) -> bool:
    """Whether LEMMA is written and looked up by (form, UPOS, FEATS) first."""
    return lexicon is not None and bool(lexicon.featured) and "lemma" in columns


def scores_read(columns: Sequence[str], vocabs: Vocabs, tagged: Collection[str]) -> list[str]:
    """The taggers whose scores :func:`predicted_columns` reads to write ``columns``.

    ``columns`` themselves; UPOS too where the model tags it (of ``tagged``) and the lexicon is
    read (its key); FEATS too where LEMMA is written and the lexicon has its (form, UPOS,
    FEATS) table; every tag-set column the model tags where one of them is read and the lexicon
    has tag sets (:func:`joint_tags`: a word's UPOS must not depend on whether its FEATS were
    asked for).
    """
    lexicon = _lexicon_read(columns, vocabs)
    wanted = list(columns)
    if lexicon is not None and "upos" in tagged and "upos" not in wanted:
        wanted.append("upos")  # the lexicon's key
    if _featured(columns, lexicon) and "feats" in tagged and "feats" not in wanted:
        wanted.append("feats")  # with UPOS, the key of the finest lemma lookup
    if _joint(wanted, lexicon):  # chosen together whatever is asked for
        wanted += [c for c in TAG_SET_COLUMNS if c in tagged and c not in wanted]
    return wanted


def _joint(columns: Collection[str], lexicon: Lexicon | None) -> bool:
    """Whether ``columns`` hold a tag-set column and the lexicon has tag sets to choose among."""
    return (
        lexicon is not None and bool(lexicon.tag_sets) and bool(set(TAG_SET_COLUMNS) & set(columns))
    )


def predicted_columns(
    tag_scores: Mapping[str, npt.NDArray[np.floating]],
    columns: Sequence[str],
    vocabs: Vocabs,
    sentences: Sequence[Sentence],
    workers: int = 1,
    relations: Sequence[Sequence[str]] | None = None,
    lemma_scored: Sequence[int] | None = None,
) -> list[dict[str, list[str]]]:
    """The values of each requested column for every row of a batch, as the strings to write.

    Each word's best class, never a special (PAD, UNK, ROOT), turned back into the column's
    strings (:func:`biaffine.data.columns.strings`); UPOS, XPOS and FEATS chosen together
    (:func:`joint_tags`) where the lexicon has tag sets. LEMMA: the lemma of the vocabularies'
    lexicon where it holds the word, keyed by the word's UPOS: the predicted one where the
    model has a UPOS tagger (predicted even when not asked for), else the input's; and by its
    predicted FEATS where the model tags them (likewise; never the input's, which may be empty
    for want of annotation) and the lexicon has the table; else its
    edit script applied to the form, or the first of its :func:`runners_up` whose lemma is a
    training lemma where the best script's is not; for a word whose form the lexicon lacks,
    the lemma its generator writes, where it has one, unless the other is a training lemma and
    this one is not (:func:`biaffine.data.columns.prefer_written`). UPOS, XPOS and FEATS: the
    lexicon's where it holds the word (XPOS and FEATS: with that UPOS) and the tagger is
    :func:`doubtful`, else the best class; UPOS of a word whose form the lexicon lacks: scored
    by its UPOS guesser too, where it has one (:func:`guessed_upos`), before anything is
    chosen; FEATS of such a word: the pick of its FEATS guesser, where it has one, alone or
    weighed with the tagger's (:func:`_guess_feats`). The UPOS scores of every word are
    weighed with the UPOS its form had in training with its relation, where the tree's
    relations are given and the lexicon has them (:func:`related_upos`). One argmax per column
    for the whole batch.

    Args:
        tag_scores: tagger scores by column for the batch's words, row by row,
            float[W, n_classes] with W the sum of the sentences' lengths.
        columns: the columns to read.
        vocabs: their vocabularies.
        sentences: the sentence of each row (its forms, UPOS, and its n words).
        workers: threads the lexicon's character models may read on (the parser's own).
        relations: per row, each word's relation (DEPREL) in the tree found, or None (the
            columns are then chosen without the tree).
        lemma_scored: the words (indices among the W) whose rows ``tag_scores["lemma"]``
            holds, in order, where parsing scored only those of :func:`lemma_words`; None
            where it holds every word's.

    Returns:
        Per row, the predicted values by column, str[n] each.
    """
    lexicon = _lexicon_read(columns, vocabs)
    wanted = scores_read(columns, vocabs, tag_scores)
    featured = _featured(columns, lexicon)
    forms = [form for sentence in sentences for form in sentence.forms]
    if "upos" in wanted and lexicon is not None:  # the unseen words' UPOS, before any choice
        upos_scores, upos = tag_scores["upos"], vocabs.columns["upos"]
        if lexicon.upos_guesser is not None:
            upos_scores = guessed_upos(upos_scores, forms, upos, lexicon, workers)
        if lexicon.code_upos is not None:
            upos_scores = coded_upos(upos_scores, forms, upos, lexicon)
        if relations is not None and lexicon.relation_upos:
            related = [relation for row in relations for relation in row]
            upos_scores = related_upos(upos_scores, forms, related, upos, lexicon)
        tag_scores = {**tag_scores, "upos": upos_scores}
    best = (
        joint_tags({c: tag_scores[c] for c in wanted}, vocabs, lexicon.tag_sets)
        if _joint(wanted, lexicon)
        else {}
    )
    others = None
    if "lemma" in wanted:
        lemma_scores, scripts = tag_scores["lemma"], vocabs.columns["lemma"]
        best["lemma"], others = _scripts(lemma_scores, scripts, forms, lexicon, lemma_scored)
    for column in wanted:
        if column not in best:  # not chosen together: each column's own best class
            best[column] = best_classes(tag_scores[column], vocabs.columns[column])
    lemmas = lexicon is not None and "lemma" in columns
    checked = () if lexicon is None else [c for c in ("upos", *ANALYSED) if c in wanted]
    unsure = {column: doubtful(tag_scores[column], _doubt(lexicon, column)) for column in checked}
    rows = []
    ends = itertools.accumulate(len(sentence) for sentence in sentences)
    for sentence, end in zip(sentences, ends, strict=True):
        start = end - len(sentence)
        asked = {column: flags[start:end] for column, flags in unsure.items()}
        classes = {column: best[column][start:end] for column in wanted}
        if "upos" in classes:  # first: the lexicon's key for LEMMA and FEATS
            classes["upos"] = strings(
                "upos", classes["upos"], sentence.forms, lexicon=lexicon, doubtful=asked.get("upos")
            )
        upos = classes.get("upos", sentence.upos)
        if "feats" in classes:  # before LEMMA, whose lexicon key it is
            classes["feats"] = strings(
                "feats", classes["feats"], sentence.forms, lexicon=lexicon, upos=upos,
                doubtful=asked.get("feats"),
            )  # fmt: skip
        tried = None if others is None else others[start:end]
        rows.append((sentence, classes, upos, asked, tried))
    guessing = lexicon is not None and lexicon.feats_guesser is not None
    if guessing and "feats" in columns and "feats" in wanted:
        _guess_feats(lexicon, rows, tag_scores["feats"], vocabs.columns["feats"], workers)
    asked_lemmas = [(s.forms, upos) for s, _, upos, _, _ in rows]
    written = _written(lexicon, asked_lemmas, workers) if lemmas else None
    found: list[dict[str, list[str]]] = [{} for _ in sentences]
    addressed = lexicon is not None and lexicon.address_tags is not None
    address_tags = (
        dict(zip(TAG_SET_COLUMNS, lexicon.address_tags, strict=True)) if addressed else {}
    )
    for row, (sentence, classes, upos, asked, tried) in enumerate(rows):
        if addressed:
            _tag_addresses(classes, sentence.forms, lexicon, address_tags)
        for column in columns:
            found[row][column] = (
                classes[column]
                if column in ("upos", "feats")
                else strings(
                    column,
                    classes[column],
                    sentence.forms,
                    lexicon=lexicon,
                    upos=upos,
                    feats=classes.get("feats") if featured else None,
                    runners_up=tried,
                    doubtful=asked.get(column),
                    written=None if written is None else written[row],
                )
            )
    return found


def _tag_addresses(
    classes: dict[str, list[str]], forms: Sequence[str], lexicon: Lexicon, tags: dict[str, str]
) -> None:
    """Give each web or e-mail address the lexicon lacks the tags training gave addresses.

    In place, in the sentence's chosen ``classes``: ``tags``, :attr:`Lexicon.address_tags` by
    column (EWT's PROPN, ADD and no features), where the taggers read an address as a NOUN now
    and then (10 of EWT test's 86). Its lemma is its form already
    (:func:`biaffine.data.columns.strings`).
    """
    for i, form in enumerate(forms):
        if unseen_address(form, lexicon):
            for column in classes.keys() & tags.keys():
                classes[column][i] = tags[column]


def guessed_upos(
    scores: npt.NDArray[np.floating],
    forms: Sequence[str],
    vocab: Vocab,
    lexicon: Lexicon,
    workers: int = 1,
) -> npt.NDArray[np.floating]:
    """UPOS scores with the lexicon's UPOS guesser's added for the words whose form it lacks.

    The guesser's log-probabilities times its weight join the tagger's scores, a product of
    the two distributions (:mod:`biaffine.data.upos_guesser`); one call of the guesser for the
    whole batch. A class the guesser lacks gets its least likely class's (:func:`_on_classes`).

    Args:
        scores: float[W, C] the tagger's UPOS scores of W words (logits or log-probabilities).
        forms: str[W] the words' forms.
        vocab: the UPOS vocabulary (C classes).
        lexicon: the training lexicon, with a UPOS guesser.
        workers: threads the guesser reads on.

    Returns:
        float[W, C]: a new array where a word's form is lacking, else ``scores`` itself.
    """
    guesser = lexicon.upos_guesser
    assert guesser is not None
    rows = [k for k, form in enumerate(forms) if lexicon.reads(form)]
    if not rows or guesser.weight == 0:
        return scores
    guessed = guesser.log_probs([forms[k] for k in rows], workers)  # float32[R, G]
    added = guesser.weight * _on_classes(guessed, guesser.classes, vocab.itos)
    found = scores.copy()
    found[rows] += added.astype(scores.dtype, copy=False)
    return found


def related_upos(
    scores: npt.NDArray[np.floating],
    forms: Sequence[str],
    relations: Sequence[str],
    vocab: Vocab,
    lexicon: Lexicon,
) -> npt.NDArray[np.floating]:
    """UPOS scores weighed with the UPOS each word's form had in training with its relation.

    The parser and the taggers read the same states, yet the relation it finds often says
    which tag a function word takes where the taggers are torn: English "for" is SCONJ as
    ``mark`` and ADP as ``case``. For a word whose (form lower-cased, universal relation) the
    lexicon's ``relation_upos`` holds, :data:`RELATION_WEIGHT` times the log-probability of
    each UPOS given that pair (its training counts, each of the C classes counted
    :data:`RELATION_SMOOTHING` more) joins the taggers' scores, a product of the two
    distributions.

    Args:
        scores: float[W, C] the UPOS scores of W words (logits or log-probabilities).
        forms: str[W] the words' forms.
        relations: str[W] each word's relation (DEPREL) in the tree found.
        vocab: the UPOS vocabulary (C classes).
        lexicon: the training lexicon, with its ``relation_upos``.

    Returns:
        float[W, C]: a new array where a pair is held, else ``scores`` itself.
    """
    table = lexicon.relation_upos
    pairs = zip(forms, relations, strict=True)
    keys = ((form.lower(), universal_relation(relation)) for form, relation in pairs)
    rows, places, distinct = [], [], {}  # the words held, and the place of each one's pair
    for k, key in enumerate(keys):
        if key in table:
            rows.append(k)
            places.append(distinct.setdefault(key, len(distinct)))
    if not rows:
        return scores
    counted = np.zeros((len(distinct), len(vocab.itos)))
    for place, key in enumerate(distinct):
        for upos, count in table[key].items():
            if upos in vocab.stoi:
                counted[place, vocab.stoi[upos]] = count
    smoothed = counted + RELATION_SMOOTHING
    log_probs = np.log(smoothed / smoothed.sum(1, keepdims=True))
    found = scores.copy()
    found[rows] += (RELATION_WEIGHT * log_probs[places]).astype(scores.dtype)
    return found


def coded_upos(
    scores: npt.NDArray[np.floating], forms: Sequence[str], vocab: Vocab, lexicon: Lexicon
) -> npt.NDArray[np.floating]:
    """UPOS scores where a code the lexicon lacks can take only a UPOS training codes had.

    The other classes of such a word score ``-inf`` (:attr:`Lexicon.code_upos`), before the
    tag sets are chosen, so its XPOS and FEATS follow.

    Args:
        scores: float[W, C] the UPOS scores of W words.
        forms: str[W] the words' forms.
        vocab: the UPOS vocabulary (C classes).
        lexicon: the training lexicon, with its codes' UPOS.

    Returns:
        float[W, C]: a new array where a word is such a code, else ``scores`` itself.
    """
    allowed = lexicon.code_upos
    assert allowed is not None
    rows = [k for k, form in enumerate(forms) if lexicon.unseen_code(form)]
    if not rows:
        return scores
    barred = [k for k, name in enumerate(vocab.itos) if name not in allowed]
    found = scores.copy()
    found[np.ix_(rows, barred)] = -np.inf
    return found


def _on_classes(
    values: npt.NDArray[np.floating], classes: Sequence[str], wanted: Sequence[str]
) -> npt.NDArray[np.floating]:
    """Per-class values float[R, len(classes)] laid out on ``wanted``: float[R, len(wanted)].

    A class of ``wanted`` that ``classes`` lacks gets each row's least value.
    """
    found = np.repeat(values.min(1, keepdims=True), len(wanted), axis=1)
    ids = {name: k for k, name in enumerate(classes)}
    pairs = [(j, ids[name]) for j, name in enumerate(wanted) if name in ids]
    if pairs:
        to, of = map(list, zip(*pairs, strict=True))
        found[:, to] = values[:, of]
    return found


def _guess_feats(
    lexicon: Lexicon,
    rows: Sequence[tuple[Sentence, dict, Sequence[str], Any, Any]],
    scores: npt.NDArray[np.floating],
    vocab: Vocab,
    workers: int,
) -> None:
    """Give each word whose form the lexicon lacks the FEATS its guesser picks, in place.

    One call of :meth:`biaffine.data.feats_guesser.FeatsGuesser.feats` for the whole batch,
    keyed by the word's UPOS (chosen before its FEATS), with the FEATS tagger's
    log-probabilities where the guesser has a weight to add its own to them.

    Args:
        lexicon: the training lexicon, with a FEATS guesser.
        rows: per sentence, (sentence, its column values by name with ``feats`` str[n], its
            UPOS str[n], ...) as :func:`predicted_columns` gathers them.
        scores: float[W, C] the FEATS tagger's scores of the rows' W words, in their order.
        vocab: the FEATS vocabulary (C classes).
        workers: threads the guesser reads on.
    """
    guesser = lexicon.feats_guesser
    assert guesser is not None
    asked, where = [], []
    for k, (form, tag) in enumerate(
        (form, tag)
        for sentence, _, upos, _, _ in rows
        for form, tag in zip(sentence.forms, upos, strict=True)
    ):
        if lexicon.reads(form):
            asked.append((form, tag))
            where.append(k)
    tagger = None
    if guesser.weight is not None and asked:
        real = len(SPECIALS)  # the specials' scores never count
        log_probs = head_log_probs(scores[where, real:])
        tagger = _on_classes(log_probs, vocab.itos[real:], guesser.classes)
    picked = iter(guesser.feats(asked, tagger, workers))
    for sentence, classes, _, _, _ in rows:
        classes["feats"] = [
            next(picked) if lexicon.reads(form) else feats
            for form, feats in zip(sentence.forms, classes["feats"], strict=True)
        ]


def _written(
    lexicon: Lexicon, rows: Sequence[tuple[Sequence[str], Sequence[str]]], workers: int
) -> list[list[str | None]] | None:
    """The generator's lemma of each word whose form the lexicon lacks, None for the others.

    Args:
        lexicon: the training lexicon; None is returned where it has no generator.
        rows: per sentence, its forms and their UPOS (str[n] each).
        workers: threads the generator writes on.

    Returns:
        Per sentence, str | None [n]; one call of the generator for the whole batch.
    """
    generator = lexicon.generator
    if generator is None:
        return None
    asked = [
        (form, upos)
        for forms, tags in rows
        for form, upos in zip(forms, tags, strict=True)
        if lexicon.reads(form)
    ]
    lemmas = iter(generator.lemmas(asked, workers))
    return [[next(lemmas) if lexicon.reads(form) else None for form in forms] for forms, _ in rows]


def word_slice(values: np.ndarray, row: int, n: int) -> list:
    """``values[row, 1 : n + 1]`` as a list: a sentence's words, ROOT and padding dropped."""
    return values[row, 1 : n + 1].tolist()


def labelled_tree(heads: IntArray, rels: IntArray, row: int, n: int, labels: Vocab) -> Tree:
    """The tree of row ``row`` (``n`` words) of a batch's heads and label ids int64[B, N+1]."""
    itos = labels.itos
    return Tree(word_slice(heads, row, n), [itos[r] for r in word_slice(rels, row, n)])


def missing_taggers(columns: Sequence[str], tagged: Sequence[str]) -> str | None:
    """Why ``columns`` cannot be predicted by a model tagging ``tagged``, or None if they can."""
    missing = [c for c in columns if c not in tagged]
    if not missing:
        return None
    return (
        f"columns={','.join(missing)}: this model has no tagger for "
        f"{', '.join(missing)} (train with the column's loss weight > 0)"
    )


def deprojectivize_batch(heads: IntArray, rels: IntArray, rel_names: Sequence[str]) -> None:
    """Decodes pseudo-projective labels in place (Nivre & Nilsson, 2005, "head" encoding).

    Sentences whose labels carry no lift are left alone. A restored word keeps the base part of
    its label, as its id in ``rel_names``; a base label missing from the vocabulary (a relation
    seen only on lifted arcs in training) keeps the encoded id.

    Args:
        heads: int64[B, N+1] projective trees, ``-1`` at ROOT and padding.
        rels: int64[B, N+1] label ids into ``rel_names``, ``-1`` where heads is -1.
        rel_names: the relation vocabulary.
    """
    from transitions.projective import SEPARATOR, deprojectivize

    encoded = np.array([SEPARATOR in name for name in rel_names] + [False])  # -1 reads False
    ids = {name: i for i, name in enumerate(rel_names)}
    for b in np.flatnonzero(encoded[rels].any(1)):
        n = int((heads[b] >= 0).sum())
        labels = [rel_names[r] for r in rels[b, 1 : n + 1]]
        tree, base = deprojectivize(heads[b, : n + 1], labels)
        heads[b, : n + 1] = tree
        for d, (label, old) in enumerate(zip(base, labels, strict=True), 1):
            rels[b, d] = ids.get(label, ids[old])


def find_trees(
    system: transitions.TransitionSystem,
    lengths: IntArray,
    score: transitions.Scorer,
    settings: TransitionSearch,
    *,
    n_stack: int,
    n_buffer: int,
    global_scores: bool,
    arc_scores: npt.NDArray[np.floating] | None = None,
) -> transitions.SearchResult:
    """The transition search ``settings`` ask for, as both runtimes run it.

    Args:
        system: the parser's transition system.
        lengths: int64[B], words per sentence.
        score: the transition scorer (:data:`transitions.Scorer`).
        settings: ``search``, ``beam_size`` and ``graph_weight`` are read.
        n_stack: stack words the scorer reads per configuration.
        n_buffer: buffer words it reads.
        global_scores: the model was trained with the beam: paths are ranked by raw score
            sums (greedy takes the same argmax).
        arc_scores: float[B, N+1, N+1], a graph head's arc scores, read when
            ``graph_weight`` > 0: the search adds ``graph_weight`` times their row-wise
            log-softmax (:func:`head_log_probs`, float64) per arc built.
    """
    import transitions

    options = {"n_stack": n_stack, "n_buffer": n_buffer}
    beam = options | {"beam_size": settings.beam_size, "normalized": not global_scores}
    if settings.graph_weight > 0:
        if arc_scores is None:
            raise ValueError("graph_weight > 0 needs arc scores")
        weighted = settings.graph_weight * head_log_probs(arc_scores)
        return transitions.beam_search(system, lengths, score, arc_scores=weighted, **beam)
    if settings.search == "beam":
        return transitions.beam_search(system, lengths, score, **beam)
    return transitions.greedy_search(system, lengths, score, **options)
