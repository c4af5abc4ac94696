"""A character sequence-to-sequence lemmatizer for the words training lacks, torch-free.

The lemmatizer head classifies each word into an edit script, and the training lexicon looks up
the words it saw; an unseen Turkish or Hungarian form still gets the wrong cut too often
(docs/lemmas.md). Stanza writes such words' lemmas one character at a time. So does this model:
a BiLSTM reads the word's UPOS as a first symbol and then its characters, and an LSTM decoder
with bilinear attention over the BiLSTM's states writes the lemma greedily, character by
character, until its end symbol. It is trained on the training file's distinct (form, UPOS,
lemma) triples by :mod:`biaffine.training.lemma_generator` (torch) and run here in numpy, so the
torch families and the ONNX runtime read it with the same code (it travels in the lexicon,
:class:`biaffine.data.lexicon.Lexicon`).

Each word reads only its own symbols (the backward direction starts at its last character, the
decoder's first state is the mean of its own states), so a word's lemma does not depend on the
other words of its batch; the torch model packs its sequences to compute the same thing.

Plain data (:meth:`LemmaGenerator.to_dict`): the symbols, and each weight as float16 bytes in
base64 (a quarter of JSON's decimal text; computed in float32), so the lexicon holding it stays
plain data in checkpoints and in ``export.json``.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

__all__ = ["BOS", "EOS", "PAD", "SPECIAL_SYMBOLS", "UNKNOWN", "LemmaGenerator", "weight_shapes"]

PAD, BOS, EOS, UNKNOWN = 0, 1, 2, 3
SPECIAL_SYMBOLS = 4
"""Symbol ids below this are padding, start, end and unknown; characters follow, then tags."""

BATCH = 512
"""Words decoded at once."""

Array = npt.NDArray[np.float32]


def weight_shapes(symbols: int, dim: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """Each weight's shape, by its name in the torch model's ``state_dict``.

    Args:
        symbols: symbol vocabulary size V (specials, characters, tags).
        dim: symbol embedding size D.
        hidden: encoder units per direction H (the decoder has 2H).
    """
    two = 2 * hidden
    lstm = {
        f"encoder.{kind}_l0{side}": shape
        for side in ("", "_reverse")
        for kind, shape in (
            ("weight_ih", (4 * hidden, dim)),
            ("weight_hh", (4 * hidden, hidden)),
            ("bias_ih", (4 * hidden,)),
            ("bias_hh", (4 * hidden,)),
        )
    }
    return {
        "embed.weight": (symbols, dim),
        **lstm,
        "bridge.weight": (two, two),
        "bridge.bias": (two,),
        "decoder.weight_ih": (4 * two, dim + two),
        "decoder.weight_hh": (4 * two, two),
        "decoder.bias_ih": (4 * two,),
        "decoder.bias_hh": (4 * two,),
        "attend.weight": (two, two),
        "out.weight": (symbols, 2 * two),
        "out.bias": (symbols,),
    }


@dataclass(frozen=True, slots=True, eq=False)
class LemmaGenerator:
    """Symbols and weights of a trained character seq2seq lemmatizer; see the module docstring.

    Attributes:
        chars: the characters it reads and writes (symbol ids 4, 5, ...).
        tags: the UPOS tags it reads (symbol ids after the characters).
        dim: symbol embedding size D.
        hidden: encoder units per direction H.
        weights: float32 arrays by name, shaped as :func:`weight_shapes` says.
    """

    chars: tuple[str, ...]
    tags: tuple[str, ...]
    dim: int
    hidden: int
    weights: Mapping[str, Array] = field(repr=False)
    _char_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _tag_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _inputs: dict[str, Array] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Check the weights' shapes; index the symbols."""
        expected = weight_shapes(self.symbols, self.dim, self.hidden)
        shapes = {name: tuple(array.shape) for name, array in self.weights.items()}
        if shapes != expected:
            raise ValueError(f"lemma generator weights {shapes} are not those of {expected}")
        chars = {c: SPECIAL_SYMBOLS + k for k, c in enumerate(self.chars)}
        tags = {t: SPECIAL_SYMBOLS + len(self.chars) + k for k, t in enumerate(self.tags)}
        object.__setattr__(self, "_char_ids", chars)
        object.__setattr__(self, "_tag_ids", tags)
        object.__setattr__(self, "_inputs", _input_tables(self.weights, self.dim))

    def __eq__(self, other: object) -> bool:
        """Same symbols, sizes and weights (value by value)."""
        if not isinstance(other, LemmaGenerator):
            return NotImplemented
        same = (self.chars, self.tags, self.dim, self.hidden) == (
            other.chars, other.tags, other.dim, other.hidden
        )  # fmt: skip
        return same and all(
            np.array_equal(array, other.weights[name]) for name, array in self.weights.items()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable arrays

    @property
    def symbols(self) -> int:
        """Symbol vocabulary size V."""
        return SPECIAL_SYMBOLS + len(self.chars) + len(self.tags)

    def source(self, form: str, upos: str) -> list[int]:
        """The symbols the encoder reads: the UPOS, then the form's characters."""
        chars = [self._char_ids.get(c, UNKNOWN) for c in form]
        return [self._tag_ids.get(upos, UNKNOWN), *chars]

    def target(self, lemma: str) -> list[int]:
        """The symbols the decoder writes: the lemma's characters, then the end."""
        return [*(self._char_ids.get(c, UNKNOWN) for c in lemma), EOS]

    def text(self, ids: Sequence[int]) -> str:
        """The characters of ``ids`` up to the first end (other symbols write nothing)."""
        first_tag = SPECIAL_SYMBOLS + len(self.chars)
        out = []
        for k in ids:
            if k == EOS:
                break
            if SPECIAL_SYMBOLS <= k < first_tag:
                out.append(self.chars[k - SPECIAL_SYMBOLS])
        return "".join(out)

    def lemmas(self, words: Sequence[tuple[str, str]]) -> list[str]:
        """The lemma written for each (form, UPOS).

        Each distinct word once, words of like length together, :data:`BATCH` at a time (a
        word's lemma does not depend on its batch, so the order only saves padding and steps).
        """
        distinct = sorted(set(words), key=lambda word: (len(word[0]), word))
        found: dict[tuple[str, str], str] = {}
        # One BLAS thread: the products are small, and where another process shares the cores
        # OpenBLAS's threads wait on each other (IMST test's 2,949 unseen words: 1.6-3.5 s on
        # one thread, 5.8-8.4 s on two, 2-core AMD EPYC at load 4).
        with threadpool_limits(limits=1, user_api="blas"):
            for start in range(0, len(distinct), BATCH):
                chosen = distinct[start : start + BATCH]
                found.update(zip(chosen, self._batch(chosen), strict=True))
        return [found[word] for word in words]

    def _batch(self, words: Sequence[tuple[str, str]]) -> list[str]:
        """:meth:`lemmas` of one batch."""
        if not words:
            return []
        rows = [self.source(form, upos) for form, upos in words]
        lengths = np.array([len(row) for row in rows])
        ids = np.zeros((len(rows), lengths.max()), dtype=np.int64)
        for k, row in enumerate(rows):
            ids[k, : len(row)] = row
        mask = np.arange(ids.shape[1]) < lengths[:, None]
        states = self._encode(ids, mask)
        written = self._greedy(states, mask, limits=2 * lengths + 8)
        return [self.text(row) for row in written]

    def _encode(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> Array:
        """The BiLSTM's states float32[W, S, 2H] (zero past each word's end).

        Args:
            ids: int64[W, S] symbols, padded.
            mask: bool[W, S], True on each word's symbols.
        """
        forward = self._direction(ids, mask, "", reverse=False)
        backward = self._direction(ids, mask, "_reverse", reverse=True)
        return np.concatenate([forward, backward], axis=-1)

    def _direction(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_], side: str, *, reverse: bool
    ) -> Array:
        """One direction's states float32[W, S, H]; state stays zero outside each word.

        Backward, a word's state starts at zero at its last symbol, as a packed sequence's does.
        """
        inputs = self._inputs[f"encoder{side}"]
        recurrent = self.weights[f"encoder.weight_hh_l0{side}"].T
        words, length = mask.shape
        h = np.zeros((words, self.hidden), dtype=np.float32)
        c = np.zeros_like(h)
        states = np.zeros((words, length, self.hidden), dtype=np.float32)
        for t in reversed(range(length)) if reverse else range(length):
            new_h, new_c = _lstm(inputs[ids[:, t]] + h @ recurrent, c)
            inside = mask[:, t, None]
            h, c = np.where(inside, new_h, h), np.where(inside, new_c, c)
            states[:, t] = np.where(inside, h, 0.0)
        return states

    def _greedy(
        self, states: Array, mask: npt.NDArray[np.bool_], limits: npt.NDArray[np.int64]
    ) -> list[list[int]]:
        """The decoder's best symbol at each step, per word up to its end or ``limits`` steps.

        The words still writing are gathered into smaller arrays whenever they are half of
        those computed or fewer: most lemmas end long before the batch's longest.

        Args:
            states: float32[W, S, 2H] encoder states.
            mask: bool[W, S] each word's symbols.
            limits: int64[W] the most symbols each word may write.
        """
        w, inputs = self.weights, self._inputs["decoder"]
        mean = states.sum(1) / mask.sum(1, keepdims=True)
        h = np.tanh(mean @ w["bridge.weight"].T + w["bridge.bias"])
        c, context = np.zeros_like(h), np.zeros_like(h)
        keys = states @ w["attend.weight"]  # (W_a h) . s == h . (W_a^T s), float32[W, S, 2H]
        reading = w["decoder.weight_ih"][:, self.dim :].T  # the context's part of the input
        recurrent, out, out_bias = w["decoder.weight_hh"].T, w["out.weight"].T, w["out.bias"]
        previous = np.full(len(states), BOS)
        written: list[list[int]] = [[] for _ in states]
        rows = np.arange(len(states))  # the word of each row computed
        open_ = np.ones(len(states), dtype=bool)  # whether that word is still writing
        for step in range(int(limits.max())):
            gates = inputs[previous] + context @ reading + h @ recurrent
            h, c = _lstm(gates, c)
            scores = np.where(mask, np.matmul(keys, h[:, :, None])[:, :, 0], -np.inf)
            attention = np.exp(scores - scores.max(1, keepdims=True))
            attention /= attention.sum(1, keepdims=True)
            context = np.matmul(attention[:, None, :], states)[:, 0]
            previous = (np.concatenate([h, context], axis=1) @ out + out_bias).argmax(1)
            for k, symbol in zip(rows[open_].tolist(), previous[open_].tolist(), strict=True):
                written[k].append(symbol)
            open_ &= (previous != EOS) & (step + 1 < limits[rows])
            if not open_.any():
                break
            if 2 * open_.sum() <= len(rows):
                kept = open_
                rows, h, c, context, previous = (a[kept] for a in (rows, h, c, context, previous))
                keys, states, mask, open_ = keys[kept], states[kept], mask[kept], open_[kept]
        return written

    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON's too.

        ``{"chars": [...], "tags": [...], "dim": D, "hidden": H, "weights": {name: base64 of
        its float16 bytes, little-endian, in C order}}``.
        """
        return {
            "chars": list(self.chars),
            "tags": list(self.tags),
            "dim": self.dim,
            "hidden": self.hidden,
            "weights": {
                name: base64.b64encode(array.astype("<f2").tobytes()).decode("ascii")
                for name, array in sorted(self.weights.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LemmaGenerator:
        """Inverse of :meth:`to_dict` (float16 weights widened to float32).

        Raises:
            ValueError: a key missing, symbols that are not strings, or weights of the wrong size.
        """
        missing = {"chars", "tags", "dim", "hidden", "weights"} - set(data)
        if missing:
            raise ValueError(f"lemma generator data lacks keys {sorted(missing)}")
        chars, tags = tuple(data["chars"]), tuple(data["tags"])
        if not all(isinstance(s, str) for s in chars + tags):
            raise ValueError("lemma generator symbols must be strings")
        dim, hidden = int(data["dim"]), int(data["hidden"])
        shapes = weight_shapes(SPECIAL_SYMBOLS + len(chars) + len(tags), dim, hidden)
        weights = {}
        for name, text in data["weights"].items():
            raw = base64.b64decode(text, validate=True)
            if name not in shapes or len(raw) != 2 * math.prod(shapes[name]):
                raise ValueError(f"lemma generator weight {name!r} has {len(raw) / 2} values")
            weights[name] = np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(shapes[name])
        return cls(chars, tags, dim, hidden, weights)


def _input_tables(weights: Mapping[str, Array], dim: int) -> dict[str, Array]:
    """Each symbol's part of the LSTMs' gates, biases included.

    float32[V, 4H] per encoder direction (``encoder``, ``encoder_reverse``) and float32[V, 8H]
    for the decoder, whose input is the previous symbol's embedding, then the attention's context.
    """
    embed = weights["embed.weight"]
    tables = {
        f"encoder{side}": embed @ weights[f"encoder.weight_ih_l0{side}"].T
        + weights[f"encoder.bias_ih_l0{side}"]
        + weights[f"encoder.bias_hh_l0{side}"]
        for side in ("", "_reverse")
    }
    decoder = embed @ weights["decoder.weight_ih"][:, :dim].T
    tables["decoder"] = decoder + weights["decoder.bias_ih"] + weights["decoder.bias_hh"]
    return tables


def _lstm(gates: Array, c: Array) -> tuple[Array, Array]:
    """An LSTM cell's new (h, c) from its gates float32[W, 4H] (torch's order: i, f, g, o)."""
    hidden = gates.shape[1] // 4
    # One tanh for all four gates: sigmoid(x) = (tanh(x / 2) + 1) / 2 (no overflow either).
    scale = np.full(4 * hidden, 0.5, dtype=np.float32)
    scale[2 * hidden : 3 * hidden] = 1.0
    squashed = np.tanh(gates * scale)
    i, f, g, o = np.split(squashed, 4, axis=1)
    c = 0.5 * (f + 1.0) * c + 0.5 * (i + 1.0) * g
    return 0.5 * (o + 1.0) * np.tanh(c), c
