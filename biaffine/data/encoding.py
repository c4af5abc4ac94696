"""Sentences -> index arrays (encoded once) -> padded numpy batches bucketed by length.

Position 0 of every sentence is ROOT, so gold heads index the padded arrays directly. Torch-free:
:mod:`biaffine.data.batching` turns the arrays into tensors, and the ONNX runtime
(:mod:`biaffine.onnxrun`) feeds them to its graphs as they are.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from biaffine.data.columns import classes
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import PAD, ROOT, UNK, Vocab, Vocabs
from decoding.types import Int32Array, IntArray

__all__ = [
    "IGNORE_INDEX",
    "PARSING_COLUMNS",
    "Encoded",
    "Padded",
    "VectorIndex",
    "encode",
    "pad",
    "plan_batches",
]

IGNORE_INDEX = -100
"""Relation id of positions without a gold label (the default ``ignore_index`` of torch losses)."""

MAX_WORD_CHARS = 20
"""Characters of a form the character model reads by default: longer forms keep their first."""


@dataclass(frozen=True, slots=True)
class Encoded:
    """One sentence as index arrays, position 0 = ROOT (see :func:`encode`).

    Stored as int32 to halve the memory of a corpus held for many epochs; batches are int64.

    Attributes:
        words: int32[n+1] word ids, ROOT at 0.
        chars: int32[n+1, C] char ids, PAD-filled after each word; row 0 is ``[ROOT, PAD, ...]``.
            C = min(longest form, max_word_chars); int32[n+1, 0] when encoded without them.
        heads: int32[n+1] gold heads; 0 at position 0, and everywhere if the sentence has none.
        rels: int32[n+1] gold relation ids; IGNORE_INDEX at 0 and where unknown or absent.
        columns: int32[n+1] ids of each tagged column (``upos``, ``xpos``, ``feats``: the whole
            FEATS string is one class; ``lemma``: the edit script), ROOT at 0, IGNORE_INDEX
            where a word has no class (no lemma given).
        forms: the n word forms (for encoders that read text: pretrained vectors, transformers).
    """

    words: Int32Array
    chars: Int32Array
    heads: Int32Array
    rels: Int32Array
    columns: dict[str, Int32Array]
    forms: tuple[str, ...] | None = None

    def __len__(self) -> int:
        """Number of words n (ROOT excluded)."""
        return self.words.shape[0] - 1


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """The row of each word's pretrained vector, looked up by form; row 0 (zeros) for the rest.

    Shared by the encoder's :class:`~biaffine.nn.pretrained.PretrainedEmbedding` and the ONNX
    runtime, which feeds the rows to an exported graph holding the vectors.

    Attributes:
        rows: word -> row (1-based: row 0 is ROOT, padding and unknown words).
        lowercase: words are looked up lower-cased.
    """

    rows: dict[str, int]
    lowercase: bool

    @classmethod
    def of(cls, vocabulary: Sequence[str], *, lowercase: bool) -> VectorIndex:
        """The index of vectors whose row i + 1 is ``vocabulary[i]``'s."""
        return cls({word: row + 1 for row, word in enumerate(vocabulary)}, lowercase)

    def lookup(self, forms: Sequence[Sequence[str]], positions: int) -> IntArray:
        """int64[B, positions]: the row of each word at 1..n, 0 at ROOT, padding and unknowns.

        Args:
            forms: B sentences of words (ROOT excluded), each at most ``positions - 1`` long.
            positions: N+1, the padded length with ROOT.
        """
        found = np.zeros((len(forms), positions), dtype=np.int64)
        for b, sentence in enumerate(forms):
            keys = (w.lower() for w in sentence) if self.lowercase else sentence
            found[b, 1 : len(sentence) + 1] = [self.rows.get(k, 0) for k in keys]
        return found


@dataclass(frozen=True, slots=True)
class Padded:
    """A padded batch as numpy arrays; position 0 = ROOT, B sentences of at most N words.

    The fields of :class:`biaffine.data.batching.Batch`, whose tensors share these arrays' memory
    (int64, ``mask`` bool): words [B, N+1], chars [B, N+1, C], heads [B, N+1], rels [B, N+1],
    mask [B, N+1], lengths [B], indices [B], columns by name [B, N+1], forms.
    """

    words: IntArray
    chars: IntArray
    heads: IntArray
    rels: IntArray
    mask: npt.NDArray[np.bool_]
    lengths: IntArray
    indices: IntArray
    columns: dict[str, IntArray]
    forms: tuple[tuple[str, ...], ...] | None = None


PARSING_COLUMNS = ("upos",)
"""The tagged columns parsing encodes: the input's UPOS, which an encoder with tag embeddings
reads (``model.encoder.use_tags``). The others are training's gold targets: a lemma's class is
its edit script, whose search costs more than the rest of the encoding."""


def encode(
    sentences: Sequence[Sentence],
    vocabs: Vocabs,
    *,
    max_word_chars: int = MAX_WORD_CHARS,
    columns: Collection[str] | None = None,
    with_chars: bool = True,
) -> list[Encoded]:
    """Maps each sentence to index arrays once, for batching in every epoch.

    Unknown words, chars and tags map to UNK; unknown relations and missing lemmas to
    IGNORE_INDEX.

    Args:
        sentences: the sentences, in the order ``Batch.indices`` will refer to.
        vocabs: vocabularies built on the training data.
        max_word_chars: longer forms keep their first ``max_word_chars`` characters.
        columns: the tagged columns of ``vocabs`` to encode (:data:`PARSING_COLUMNS` to parse),
            or None for all of them (training's gold targets).
        with_chars: False leaves the character ids out (``chars`` int32[n+1, 0]), for a
            runtime that finds the words' character vectors from their forms
            (:class:`biaffine.onnx_chars.CharVectors`).

    Returns:
        One Encoded per sentence, in input order.
    """
    if max_word_chars < 1:
        raise ValueError(f"max_word_chars must be >= 1, got {max_word_chars}")
    tagged = {
        name: vocab for name, vocab in vocabs.columns.items() if columns is None or name in columns
    }
    # Forms repeat: compute each char row once. None: no char rows.
    char_rows: dict[str, list[int]] | None = {} if with_chars else None
    return [_encode_one(s, vocabs, tagged, max_word_chars, char_rows) for s in sentences]


def _encode_one(
    sentence: Sentence,
    vocabs: Vocabs,
    tagged: Mapping[str, Vocab],
    max_chars: int,
    char_rows: dict | None,
) -> Encoded:
    word_ids = _ids(sentence.forms, vocabs.words)
    if sentence.heads is None:
        heads = [0] * len(word_ids)
        rels = [IGNORE_INDEX] * len(word_ids)
    else:
        heads = [0, *sentence.heads]
        rels = [IGNORE_INDEX] + [vocabs.rels.get(r, IGNORE_INDEX) for r in sentence.deprels]
    return Encoded(
        words=np.array(word_ids, dtype=np.int32),
        chars=(
            np.zeros((len(word_ids), 0), dtype=np.int32)
            if char_rows is None
            else _char_matrix(sentence.forms, vocabs.chars, max_chars, char_rows)
        ),
        heads=np.array(heads, dtype=np.int32),
        rels=np.array(rels, dtype=np.int32),
        columns={
            name: np.array(_ids(classes(sentence, name, vocab.stoi), vocab), dtype=np.int32)
            for name, vocab in tagged.items()
        },
        forms=tuple(sentence.forms),  # references to the sentence's strings: 8 bytes per word
    )


def _ids(column: list[str | None], vocab: Vocab) -> list[int]:
    """[ROOT, ids of the column's strings...], UNK for unknown strings, IGNORE_INDEX for None."""
    stoi = vocab.stoi
    return [ROOT] + [IGNORE_INDEX if token is None else stoi.get(token, UNK) for token in column]


def _char_matrix(forms: list[str], chars: Vocab, max_chars: int, char_rows: dict) -> Int32Array:
    """int32[n+1, C]: row 0 = [ROOT, PAD...], row i = chars of word i, PAD-filled."""
    rows = []
    for form in forms:
        row = char_rows.get(form)
        if row is None:
            row = char_rows[form] = char_ids(form, chars, max_chars)
        rows.append(row)
    width = max(map(len, rows))
    flat = [ROOT] + [PAD] * (width - 1)
    for row in rows:
        flat += row
        flat += [PAD] * (width - len(row))
    return np.array(flat, dtype=np.int32).reshape(len(forms) + 1, width)


def char_ids(form: str, chars: Vocab, max_chars: int = MAX_WORD_CHARS) -> list[int]:
    """The ids the character model reads for ``form``: of its first ``max_chars`` characters."""
    stoi = chars.stoi
    return [stoi.get(c, UNK) for c in form[:max_chars]]


def pad(items: Sequence[Encoded], indices: Sequence[int] | IntArray) -> Padded:
    """Pads encoded sentences into the arrays of one batch (``batching.collate`` makes tensors).

    Args:
        items: B >= 1 encoded sentences.
        indices: int[B], the position of each item in the caller's list (``Padded.indices``).
    """
    lengths = np.array([len(item) for item in items], dtype=np.int64)
    size, width = len(items), max(item.chars.shape[1] for item in items)
    positions = int(lengths.max()) + 1
    fields_ = {name: np.zeros((size, positions), dtype=np.int64) for name in _WORD_FIELDS}
    fields_["rels"].fill(IGNORE_INDEX)
    columns = {name: np.zeros((size, positions), dtype=np.int64) for name in items[0].columns}
    chars = np.zeros((size, positions, width), dtype=np.int64)
    for b, item in enumerate(items):
        m = len(item) + 1
        for name, array in fields_.items():
            array[b, :m] = getattr(item, name)
        for name, array in columns.items():
            array[b, :m] = item.columns[name]
        chars[b, :m, : item.chars.shape[1]] = item.chars
    arange = np.arange(positions)[None, :]  # [1, N+1]
    mask = (arange >= 1) & (arange <= lengths[:, None])  # [B, N+1]
    arrays = fields_ | {"chars": chars, "mask": mask, "lengths": lengths}
    arrays["indices"] = np.asarray(indices, dtype=np.int64)
    forms = tuple(item.forms for item in items)
    return Padded(
        **arrays,
        columns=columns,
        forms=None if any(f is None for f in forms) else forms,
    )


_WORD_FIELDS = ("words", "heads", "rels")
"""Encoded fields with one id per position, padded into long[B, N+1] by :func:`pad`; the
tagged columns are padded the same way."""


def plan_batches(
    lengths: Sequence[int] | IntArray,
    max_tokens: int,
    *,
    shuffle: bool,
    seed: int = 0,
    epoch: int = 0,
) -> list[IntArray]:
    """Groups sentence indices into length-bucketed batches under a padded token budget.

    Sentences are sorted by length (ties broken at random when shuffling), cut greedily into
    batches with ``B * max_length <= max_tokens`` (so at most ``max_tokens`` words), and the
    batch order is shuffled. A sentence longer than ``max_tokens`` gets a batch of its own.

    Args:
        lengths: int[S] words per sentence.
        max_tokens: the word budget per batch (padding counted, ROOT not).
        shuffle: randomise tie order and batch order; otherwise batches run by increasing length.
        seed: with ``epoch``, fixes the randomness: same (seed, epoch) -> same batches.
        epoch: the epoch number, so each epoch gets a different order.

    Returns:
        int64 index arrays, each sorted by increasing length; together a partition of range(S).

    Raises:
        TypeError: ``max_tokens`` that is not an integer (worded as ``predict.py`` words it).
        ValueError: ``max_tokens`` < 1.
    """
    # A float budget would be compared fine and None not at all; bool is an int but no budget.
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
        raise TypeError(f"max_tokens={max_tokens!r}: expected an integer")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    lengths = np.asarray(lengths, dtype=np.int64)
    if shuffle:
        rng = np.random.default_rng([seed, epoch])
        order = np.lexsort((rng.random(lengths.shape[0]), lengths))
    else:
        order = np.argsort(lengths, kind="stable")
    batches = _chunk(order, lengths[order].tolist(), max_tokens)
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def _chunk(order: IntArray, sorted_lengths: list[int], max_tokens: int) -> list[IntArray]:
    batches, start = [], 0
    for k, length in enumerate(sorted_lengths):  # lengths ascend: `length` is the batch maximum
        if k > start and (k - start + 1) * length > max_tokens:
            batches.append(order[start:k])
            start = k
    if start < len(sorted_lengths):
        batches.append(order[start:])
    return batches
