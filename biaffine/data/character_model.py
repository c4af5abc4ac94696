"""What the lexicon's character models share, torch-free: symbols, a BiLSTM, plain data.

A character model reads one word at a time: its UPOS as a first symbol, then its characters,
through an embedding and a one-layer BiLSTM. :class:`biaffine.data.lemma_generator.LemmaGenerator`
writes a lemma from those states and :class:`biaffine.data.feats_guesser.FeatsGuesser` picks
FEATS. Both are trained in torch (with packed sequences) and run here in numpy, so both runtimes
read them with the same code, and both travel in the training lexicon as plain data: their
symbols, and each weight as float16 bytes in base64 (computed in float32).

Each word reads only its own symbols: the backward direction starts at its last symbol and a
state stays zero outside its word, so what a word gets does not depend on the other words of
its batch.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import math
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt
from threadpoolctl import OpenBLASController, ThreadpoolController, threadpool_limits

__all__ = [
    "LEAST_SHARED",
    "PAD",
    "SPECIAL_SYMBOLS",
    "UNKNOWN",
    "CharacterClassifier",
    "CharacterModel",
    "Reading",
    "encoder_shapes",
    "gate_scaled",
    "lstm_cell",
    "one_blas_thread",
    "read_distinct",
]

PAD, BOS, EOS, UNKNOWN = 0, 1, 2, 3
SPECIAL_SYMBOLS = 4
"""Symbol ids below this are padding, start, end and unknown; characters follow, then tags."""

Array = npt.NDArray[np.float32]
Word = tuple[str, str]
Found = TypeVar("Found")


LEAST_SHARED = 128
"""The fewest words a batch is given when words are shared out over threads: fewer are slower
on two threads than on one (IMST test's unseen words, the lemma generator and the UPOS guesser
on the 2-core AMD EPYC: 64 words at 0.85 of one thread's speed, 128 at 0.95, 256 at 1.23)."""


def read_distinct(
    words: Sequence[Word],
    read: Callable[[list[Word]], Sequence[Found]],
    batch: int,
    workers: int = 1,
    least: int = LEAST_SHARED,
) -> list[Found]:
    """``read`` of each (form, UPOS) word, each distinct word read once, in batches.

    Words of like length are read together (fewer padded steps), at most ``batch`` at a time,
    and in as many batches as ``workers`` where each gets ``least`` words or more, run side by
    side on as many threads: numpy releases the GIL inside its products, and the two cores of
    a parse's tagging step would otherwise leave one idle. What a word gets does not depend on
    the other words of its batch, so neither the batches nor the threads change it.

    Args:
        words: W (form, UPOS) pairs.
        read: what is found for a batch of distinct words, one item per word.
        batch: the most words read at once.
        workers: threads (1: the caller's own).
        least: the fewest words a batch is given to share the words out over threads.

    Returns:
        the item found for each of the W words.
    """
    distinct = sorted(set(words), key=lambda word: (len(word[0]), word))
    if not distinct:
        return []
    n = len(distinct)
    shared = min(workers, max(n // max(least, 1), 1))
    count = max(shared, -(-n // batch))  # batches of nearly equal sizes
    batches = [distinct[k * n // count : (k + 1) * n // count] for k in range(count)]
    # One BLAS thread per batch: the products are small, and where another process shares
    # the cores OpenBLAS's threads wait on each other (IMST test's 2,949 unseen words through
    # the lemma generator: 1.6-3.5 s on one thread, 5.8-8.4 s on two, 2-core AMD EPYC at load 4).
    with one_blas_thread():
        if len(batches) > 1 and workers > 1:
            with ThreadPoolExecutor(min(workers, len(batches))) as pool:
                found = list(pool.map(read, batches))
        else:
            found = [read(chosen) for chosen in batches]
    each = {
        word: item
        for chosen, items in zip(batches, found, strict=True)
        for word, item in zip(chosen, items, strict=True)
    }
    return [each[word] for word in words]


_blas_lock = threading.Lock()
_blas_blocks = 0  # open one_blas_thread blocks, over every thread
_blas_limits: threadpool_limits | None = None  # what the first of them found, to restore


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """One thread for numpy's BLAS in the block; the count it had comes back after it.

    A pthreads OpenBLAS's count is the process's, and calls of a parser from several threads
    overlap these blocks: each restoring what it found on entry left the last one out at 1 for
    good (a second block finds the first's 1). The first of overlapping blocks limits, the last
    to end restores. Where the count is each thread's own (:func:`_per_thread_blas`), each block
    limits its own.
    """
    global _blas_blocks, _blas_limits
    if _per_thread_blas():
        with threadpool_limits(limits=1, user_api="blas"):  # this thread's alone
            yield
        return
    with _blas_lock:
        if _blas_blocks == 0:
            _blas_limits = _as_any_thread(lambda: threadpool_limits(limits=1, user_api="blas"))
        _blas_blocks += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_blocks -= 1
            if _blas_blocks == 0 and _blas_limits is not None:
                _as_any_thread(_blas_limits.restore_original_limits)
                _blas_limits = None


@functools.cache
def _per_thread_blas() -> bool:
    """Whether numpy's BLAS counts threads per calling thread (OpenBLAS on OpenMP).

    Each block then limits and restores its own thread's count, and sharing one limit among
    overlapping blocks would leave the later ones unlimited and the first at 1 for good.
    """
    return any(
        getattr(controller, "threading_layer", None) == "openmp"
        for controller in ThreadpoolController().select(user_api="blas").lib_controllers
    )


def _as_any_thread(change: Callable[[], Found]) -> Found:
    """``change`` of OpenBLAS's thread count, made from whichever thread calls.

    threadpoolctl lets one thread at a time set a pthreads OpenBLAS's count and silently
    ignores the others until that one lets go, which a limit set and restored from different
    threads never does; :func:`one_blas_thread`'s lock orders the changes instead.
    """
    OpenBLASController.clear_controlling_thread(force=True)
    try:
        return change()
    finally:
        OpenBLASController.clear_controlling_thread(force=True)


def encoder_shapes(symbols: int, dim: int, hidden: int) -> dict[str, tuple[int, ...]]:
    """The embedding's and the BiLSTM's weight shapes, by their names in a torch ``state_dict``.

    Args:
        symbols: symbol vocabulary size V (specials, characters, tags).
        dim: symbol embedding size D.
        hidden: units per direction H.
    """
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
    return {"embed.weight": (symbols, dim), **lstm}


@dataclass(frozen=True, slots=True)
class Reading:
    """A batch of words as a character model's BiLSTM reads them, longest first.

    Attributes:
        ids: int64[2, W, S] each word's symbols, forward, then reversed (as rows of the
            backward direction's input table), padded with 0.
        reading: int64[S] how many words, the first ones, still read at each step.
        lengths: int64[W] symbols per word.
        order: int64[W] the place of each row's word among the words given.
    """

    ids: npt.NDArray[np.int64]
    reading: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    order: npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, eq=False)
class CharacterModel:
    """Symbols, sizes and weights of a character model; a subclass adds its head.

    Attributes:
        chars: the characters it reads (symbol ids 4, 5, ...).
        tags: the UPOS tags it reads (symbol ids after the characters).
        dim: symbol embedding size D.
        hidden: BiLSTM units per direction H.
        weights: float32 arrays by name, shaped as :meth:`shapes` says.
    """

    KIND: ClassVar[str] = "character model"
    """What error messages call it."""

    chars: tuple[str, ...]
    tags: tuple[str, ...]
    dim: int
    hidden: int
    weights: Mapping[str, Array] = field(repr=False)
    _char_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _tag_ids: dict[str, int] = field(init=False, repr=False, compare=False)
    _inputs: dict[str, Array] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Check the weights' shapes; index the symbols; tabulate each symbol's input."""
        expected = self.shapes()
        shapes = {name: tuple(array.shape) for name, array in self.weights.items()}
        if shapes != expected:
            raise ValueError(f"{self.KIND} weights {shapes} are not those of {expected}")
        chars = {c: SPECIAL_SYMBOLS + k for k, c in enumerate(self.chars)}
        tags = {t: SPECIAL_SYMBOLS + len(self.chars) + k for k, t in enumerate(self.tags)}
        object.__setattr__(self, "_char_ids", chars)
        object.__setattr__(self, "_tag_ids", tags)
        object.__setattr__(self, "_inputs", self._input_tables())

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """Each weight's shape, by name."""
        return self.shapes_for(self.symbols, self.dim, self.hidden, self.own())

    @classmethod
    def shapes_for(
        cls, symbols: int, dim: int, hidden: int, own: Mapping[str, Any]
    ) -> dict[str, tuple[int, ...]]:
        """Each weight's shape by name: the encoder's here, a subclass adds its head's.

        Args:
            symbols: symbol vocabulary size V.
            dim: symbol embedding size D.
            hidden: BiLSTM units per direction H.
            own: the subclass's own fields (:meth:`own`).
        """
        return encoder_shapes(symbols, dim, hidden)

    def own(self) -> dict[str, Any]:
        """A subclass's own fields by name, as :meth:`to_dict` writes them."""
        return {}

    def facts(self) -> tuple[Any, ...]:
        """Everything but the weights that two equal models share."""
        return (self.chars, self.tags, self.dim, self.hidden, self.own())

    def __eq__(self, other: object) -> bool:
        """Same kind, facts and weights (value by value)."""
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, CharacterModel)
        return self.facts() == other.facts() and all(
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

    def _input_tables(self) -> dict[str, Array]:
        """What the BiLSTM reads at each step, with its gates' halving folded in.

        ``encoder``: each symbol's part of the gates, biases included, forward then backward
        (float32[2V, 4H]: the backward direction's symbol ``k`` is row ``V + k``);
        ``encoder.recurrent``: each direction's recurrent weights float32[2, H, 4H]. Both are
        :func:`gate_scaled`, so the cell takes one tanh of its gates.
        """
        embed = self.weights["embed.weight"]
        sides = ("", "_reverse")
        inputs = [
            embed @ self.weights[f"encoder.weight_ih_l0{side}"].T
            + self.weights[f"encoder.bias_ih_l0{side}"]
            + self.weights[f"encoder.bias_hh_l0{side}"]
            for side in sides
        ]
        recurrent = [self.weights[f"encoder.weight_hh_l0{side}"].T for side in sides]
        return {
            "encoder": gate_scaled(np.concatenate(inputs)),
            "encoder.recurrent": gate_scaled(np.stack(recurrent)),
        }

    def _symbols(self, words: Sequence[tuple[str, str]]) -> Reading:
        """The (form, UPOS) words as the BiLSTM reads them: longest first (:class:`Reading`)."""
        rows = [self.source(form, upos) for form, upos in words]
        lengths = np.array([len(row) for row in rows], dtype=np.int64)
        order = np.argsort(-lengths, kind="stable")  # longest first
        width = int(lengths.max())
        ids = np.zeros((2, len(rows), width), dtype=np.int64)
        for place, k in enumerate(order.tolist()):
            ids[0, place, : lengths[k]] = rows[k]
            ids[1, place, : lengths[k]] = rows[k][::-1]
        ids[1] += self.symbols  # the backward direction's rows of the input table
        reading = (lengths[:, None] > np.arange(width)).sum(0)  # int64[S] words still reading
        return Reading(ids, reading, lengths[order], order)

    def _read(self, words: Sequence[tuple[str, str]]) -> tuple[Reading, Array]:
        """The BiLSTM's states of (form, UPOS) words, in the order it reads them.

        Returns:
            the words as read (:meth:`_symbols`; row ``r`` is word ``order[r]``), and float32[W,
            S, 2H] each row's states by position, forward then backward, zero past its end.
        """
        symbols = self._symbols(words)
        _, words_read, width = symbols.ids.shape
        states = np.zeros((words_read, width, 2 * self.hidden), dtype=np.float32)
        self._forward_pass(symbols, states)
        return symbols, states

    def _forward_pass(
        self, symbols: Reading, states: Array | None = None
    ) -> tuple[Array | None, Array]:
        """Both directions run as one pass, the backward one over each word's symbols reversed.

        The words still reading at a step are the first ones (longest first), so no step
        computes past a word's end, and a word's state stops changing at its end.

        Args:
            symbols: the words as read.
            states: float32[W, S, 2H] zeros, or None: filled, where given, with each word's
                forward state at each position and its backward state at the position it read.

        Returns:
            float32[2, W, H] each direction's states summed over the word (None where
            ``states`` are kept instead), and float32[2, W, H] each direction's last state
            (the forward one at the word's last symbol, the backward one at its first).
        """
        inputs, recurrent = self._inputs["encoder"], self._inputs["encoder.recurrent"]
        _, words, length = symbols.ids.shape
        h = np.zeros((2, words, self.hidden), dtype=np.float32)
        c = np.zeros_like(h)
        total = None if states is not None else np.zeros_like(h)
        rows = np.arange(words)
        for t in range(length):
            n = int(symbols.reading[t])
            gates = inputs[symbols.ids[:, :n, t]]
            gates += np.matmul(h[:, :n], recurrent)
            h[:, :n], c[:, :n] = lstm_cell(gates, c[:, :n])
            if states is None:
                total[:, :n] += h[:, :n]
            else:
                states[:n, t, : self.hidden] = h[0, :n]
                # Step t of the reversed reading is position n - 1 - t of a word of n symbols.
                states[rows[:n], symbols.lengths[:n] - 1 - t, self.hidden :] = h[1, :n]
        return total, h

    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON's too.

        ``{"chars": [...], "tags": [...], "dim": D, "hidden": H, "weights": {name: base64 of
        its float16 bytes, little-endian, in C order}}``, and a subclass's own keys.
        """
        return {
            "chars": list(self.chars),
            "tags": list(self.tags),
            "dim": self.dim,
            "hidden": self.hidden,
            **self.own(),
            "weights": {
                name: base64.b64encode(array.astype("<f2").tobytes()).decode("ascii")
                for name, array in sorted(self.weights.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Any:
        """Inverse of :meth:`to_dict` (float16 weights widened to float32).

        Raises:
            ValueError: a key missing, symbols that are not strings, or weights of the wrong size.
        """
        missing = {"chars", "tags", "dim", "hidden", "weights", *cls.own_keys()} - set(data)
        if missing:
            raise ValueError(f"{cls.KIND} data lacks keys {sorted(missing)}")
        chars, tags = tuple(data["chars"]), tuple(data["tags"])
        if not all(isinstance(s, str) for s in chars + tags):
            raise ValueError(f"{cls.KIND} symbols must be strings")
        dim, hidden = int(data["dim"]), int(data["hidden"])
        own = cls.own_fields(data)
        shapes = cls.shapes_for(SPECIAL_SYMBOLS + len(chars) + len(tags), dim, hidden, own)
        weights = {}
        for name, text in data["weights"].items():
            raw = base64.b64decode(text, validate=True)
            if name not in shapes or len(raw) != 2 * math.prod(shapes[name]):
                raise ValueError(f"{cls.KIND} weight {name!r} has {len(raw) / 2} values")
            weights[name] = np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(shapes[name])
        return cls(chars, tags, dim, hidden, weights, **own)

    @classmethod
    def own_keys(cls) -> tuple[str, ...]:
        """The keys a subclass adds to :meth:`to_dict`."""
        return ()

    @classmethod
    def own_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """A subclass's own fields from its :meth:`to_dict` data (checked).

        Raises:
            ValueError: data a subclass cannot read.
        """
        return {}


@dataclass(frozen=True, slots=True, eq=False)
class CharacterClassifier(CharacterModel):
    """A character model that scores classes of a word from its states; a subclass says which.

    The head reads the mean of the word's states and each direction's last state
    (:meth:`features`) through one linear layer.

    Attributes:
        chars, tags, dim, hidden, weights: as :class:`CharacterModel`'s; the head's weights
            are ``out.weight`` float32[C, 4H] and ``out.bias`` float32[C].
        classes: the C values it scores.
    """

    classes: tuple[str, ...]

    @classmethod
    def shapes_for(
        cls, symbols: int, dim: int, hidden: int, own: Mapping[str, Any]
    ) -> dict[str, tuple[int, ...]]:
        """The encoder's shapes and the head's: C classes from 4H features."""
        classes = len(own["classes"])
        return {
            **encoder_shapes(symbols, dim, hidden),
            "out.weight": (classes, 4 * hidden),
            "out.bias": (classes,),
        }

    def own(self) -> dict[str, Any]:
        """``{"classes": [...]}``."""
        return {"classes": list(self.classes)}

    @classmethod
    def own_keys(cls) -> tuple[str, ...]:
        """``classes``."""
        return ("classes",)

    @classmethod
    def own_fields(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """The classes, checked.

        Raises:
            ValueError: classes that are not strings.
        """
        classes = tuple(data["classes"])
        if not all(isinstance(value, str) for value in classes):
            raise ValueError(f"{cls.KIND} classes must be strings")
        return {"classes": classes}

    def logits(self, words: Sequence[tuple[str, str]]) -> Array:
        """float32[W, C] the head's scores of every class for each (form, UPOS) word."""
        symbols = self._symbols(words)
        total, last = self._forward_pass(symbols)
        assert total is not None
        scores = np.empty((len(words), len(self.classes)), dtype=np.float32)
        scores[symbols.order] = (
            self.features(total, last, symbols.lengths) @ self.weights["out.weight"].T
        )
        scores += self.weights["out.bias"]
        return scores

    @staticmethod
    def features(total: Array, last: Array, lengths: npt.NDArray[np.int64]) -> Array:
        """What the head reads, float32[W, 4H].

        The mean of each word's states, the forward direction's state at its last symbol and
        the backward direction's at its first (each direction's last step over the word).

        Args:
            total: float32[2, W, H] each direction's states summed over the word.
            last: float32[2, W, H] each direction's last state.
            lengths: int64[W] symbols per word.
        """
        mean = np.concatenate([total[0], total[1]], axis=1) / lengths[:, None].astype(np.float32)
        return np.concatenate([mean, last[0], last[1]], axis=1)


def gate_scaled(weights: Array) -> Array:
    """``weights`` float32[..., 4H] with the columns of the i, f and o gates halved.

    A cell whose gates come from such weights takes one tanh of them all (:func:`lstm_cell`):
    sigmoid(x) = (tanh(x / 2) + 1) / 2. Halving is exact in floating point, so the gates are
    bit for bit half of those of the weights as trained.
    """
    hidden = weights.shape[-1] // 4
    scale = np.full(4 * hidden, 0.5, dtype=np.float32)
    scale[2 * hidden : 3 * hidden] = 1.0
    return (weights * scale).astype(np.float32)


def lstm_cell(gates: Array, c: Array) -> tuple[Array, Array]:
    """An LSTM cell's new (h, c) from :func:`gate_scaled` gates float32[..., 4H] (i, f, g, o).

    i, f and o come halved, so one tanh squashes all four gates (sigmoid(x) = (tanh(x / 2) +
    1) / 2, which does not overflow either).
    """
    squashed = np.tanh(gates)
    i, f, g, o = np.split(squashed, 4, axis=-1)
    c = 0.5 * (f + 1.0) * c + 0.5 * (i + 1.0) * g
    return 0.5 * (o + 1.0) * np.tanh(c), c
