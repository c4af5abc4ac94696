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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from biaffine.data.character_model import (
    BOS,
    EOS,
    PAD,
    SPECIAL_SYMBOLS,
    UNKNOWN,
    CharacterModel,
    encoder_shapes,
    gate_scaled,
    lstm_cell,
    read_distinct,
)

__all__ = ["BOS", "EOS", "PAD", "SPECIAL_SYMBOLS", "UNKNOWN", "LemmaGenerator", "weight_shapes"]

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
    return {
        **encoder_shapes(symbols, dim, hidden),
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
class LemmaGenerator(CharacterModel):
    """Symbols and weights of a trained character seq2seq lemmatizer; see the module docstring.

    Attributes:
        chars: the characters it reads and writes (symbol ids 4, 5, ...).
        tags: the UPOS tags it reads (symbol ids after the characters).
        dim: symbol embedding size D.
        hidden: encoder units per direction H.
        weights: float32 arrays by name, shaped as :func:`weight_shapes` says.
    """

    KIND: ClassVar[str] = "lemma generator"

    @classmethod
    def shapes_for(
        cls, symbols: int, dim: int, hidden: int, own: Mapping[str, Any]
    ) -> dict[str, tuple[int, ...]]:
        """:func:`weight_shapes`."""
        return weight_shapes(symbols, dim, hidden)

    def _input_tables(self) -> dict[str, Array]:
        """The encoder's tables and the decoder's, halved as :func:`gate_scaled` says.

        ``decoder``: each symbol's part of the decoder's gates, biases included, float32[V, 8H]
        (its input is the previous symbol's embedding, then the attention's context);
        ``decoder.state``: what the decoder's last state and the attention's context add,
        float32[4H, 8H], the recurrent weights over the context's part of the input weights,
        so that one product of [h, context] float32[W, 4H] gives both (a single product of
        twice the depth takes 0.6 of the time of two, 300 words, one thread).
        """
        tables = CharacterModel._input_tables(self)  # (no zero-argument super() with slots)
        embed, w = self.weights["embed.weight"], self.weights
        decoder = embed @ w["decoder.weight_ih"][:, : self.dim].T
        tables["decoder"] = gate_scaled(decoder + w["decoder.bias_ih"] + w["decoder.bias_hh"])
        state = np.concatenate([w["decoder.weight_hh"].T, w["decoder.weight_ih"][:, self.dim :].T])
        tables["decoder.state"] = gate_scaled(state)
        return tables

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

    def lemmas(self, words: Sequence[tuple[str, str]], workers: int = 1) -> list[str]:
        """The lemma written for each (form, UPOS).

        Each distinct word once, words of like length together, :data:`BATCH` at a time, on
        ``workers`` threads (:func:`read_distinct`).
        """
        return read_distinct(words, self._batch, BATCH, workers)

    def _batch(self, words: Sequence[tuple[str, str]]) -> list[str]:
        """:meth:`lemmas` of one batch."""
        if not words:
            return []
        symbols, states = self._read(words)
        lengths = symbols.lengths
        mask = np.arange(states.shape[1]) < lengths[:, None]
        written = self._greedy(states, mask, limits=2 * lengths + 8)
        found = [""] * len(words)
        for k, row in zip(symbols.order.tolist(), written.tolist(), strict=True):
            found[k] = self.text(row)
        return found

    def _greedy(
        self, states: Array, mask: npt.NDArray[np.bool_], limits: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """The decoder's best symbol at each step, per word up to its end or ``limits`` steps.

        The words still writing are gathered into smaller arrays whenever they are three
        quarters of those computed or fewer: most lemmas end long before the batch's longest.
        (At a half, IMST test's unseen words took 13% more steps of a word, and 8% more time.)

        Args:
            states: float32[W, S, 2H] encoder states.
            mask: bool[W, S] each word's symbols.
            limits: int64[W] the most symbols each word may write.

        Returns:
            int64[W, L] the symbols written, PAD after each word's last (L the most ``limits``).
        """
        w, inputs, read = self.weights, self._inputs["decoder"], self._inputs["decoder.state"]
        two = 2 * self.hidden
        mean = states.sum(1) / mask.sum(1, keepdims=True)
        joint = np.zeros((len(states), 2 * two), dtype=np.float32)  # [h, context] float32[W, 4H]
        joint[:, :two] = np.tanh(mean @ w["bridge.weight"].T + w["bridge.bias"])
        c = np.zeros((len(states), two), dtype=np.float32)
        keys = states @ w["attend.weight"]  # (W_a h) . s == h . (W_a^T s), float32[W, S, 2H]
        out, out_bias = w["out.weight"].T, w["out.bias"]
        previous = np.full(len(states), BOS)
        written = np.full((len(states), int(limits.max())), PAD)  # PAD past each word's end
        rows = np.arange(len(states))  # the word of each row computed
        open_ = np.ones(len(states), dtype=bool)  # whether that word is still writing
        for step in range(int(limits.max())):
            gates = inputs[previous] + joint @ read
            h, c = lstm_cell(gates, c)
            scores = np.where(mask, np.matmul(keys, h[:, :, None])[:, :, 0], -np.inf)
            attention = np.exp(scores - scores.max(1, keepdims=True))
            attention /= attention.sum(1, keepdims=True)
            joint[:, :two] = h
            joint[:, two:] = np.matmul(attention[:, None, :], states)[:, 0]  # the context
            previous = (joint @ out + out_bias).argmax(1)
            written[rows[open_], step] = previous[open_]
            open_ &= (previous != EOS) & (step + 1 < limits[rows])
            if not open_.any():
                break
            if 4 * open_.sum() <= 3 * len(rows):
                kept = open_
                rows, joint, c, previous = (a[kept] for a in (rows, joint, c, previous))
                keys, states, mask, open_ = keys[kept], states[kept], mask[kept], open_[kept]
        return written
