"""A slot MLP's transition scores, and the greedy search that runs on them alone.

The transition scorer of Chen & Manning (2014) and Kiperwasser & Goldberg (2016) reads K
feature words (s0, s1, ..., b0, ...) through one hidden layer. Its first layer on the
concatenated words is a sum of one projection per slot, so a parser projects every word once per
slot (``slots[b, i, k] = W_k x_i``) and a configuration's hidden layer is K rows gathered and
summed. What is left per step is a few thousand multiply-adds, less than the call that would
hand them to a network runtime: :class:`SlotScorer` holds the projections and the small layers
after them as numpy arrays, and :func:`transitions.greedy_search` given one runs the whole
search in one compiled loop (the scores, legality, feature positions and transitions of every
step) instead of one callback per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from decoding.types import FloatArray, IntArray
from tiered import tiered

from . import _kernels as k
from .configs import Configs
from .systems import TransitionSystem

__all__ = ["GREEDY_CHUNK", "SlotScorer"]

GREEDY_CHUNK = 16
"""Configurations per call of the compiled greedy loop (see :meth:`SlotScorer.greedy`)."""


@dataclass(frozen=True, slots=True)
class SlotScorer:
    """``score(c) = weight . LeakyReLU(bias + sum_k slots[row_c, p_k, k]) + out_bias``.

    A :data:`transitions.Scorer` (call it with ``rows`` and ``positions``), and what
    :func:`transitions.greedy_search` runs without callbacks. Build it with :meth:`of`.

    Attributes:
        slots: float32[B, N+2, K, H], the per-slot first-layer projections of each sentence's
            positions (ROOT and words), then one more row, the projection of the empty slot's
            vector, where a feature position is -1.
        bias: float32[H], the first layer's bias.
        weight: float32[A, H], the output layer.
        out_bias: float32[A].
        leak: the LeakyReLU's negative slope (float32).
    """

    slots: FloatArray
    bias: FloatArray
    weight: FloatArray
    out_bias: FloatArray
    leak: np.float32

    @classmethod
    def of(
        cls,
        slots: npt.ArrayLike,
        bias: npt.ArrayLike,
        weight: npt.ArrayLike,
        out_bias: npt.ArrayLike,
        leak: float,
    ) -> SlotScorer:
        """Check the shapes and hold C-contiguous float32 copies where they are not already.

        Raises:
            ValueError: the shapes disagree (named with what was given).
        """
        slots, bias, weight, out_bias = (
            np.ascontiguousarray(a, dtype=np.float32) for a in (slots, bias, weight, out_bias)
        )
        if slots.ndim != 4 or slots.shape[1] < 2:
            raise ValueError(f"slots must be float[B, N+2, K, H], got shape {slots.shape}")
        hidden = slots.shape[3]
        if bias.shape != (hidden,) or weight.ndim != 2 or weight.shape[1] != hidden:
            raise ValueError(
                f"bias float[H] and weight float[A, H] with H = {hidden}, got {bias.shape} and "
                f"{weight.shape}"
            )
        if out_bias.shape != (weight.shape[0],):
            raise ValueError(f"out_bias must be float[{weight.shape[0]}], got {out_bias.shape}")
        return cls(slots, bias, weight, out_bias, np.float32(leak))

    @property
    def n_slots(self) -> int:
        """K, the feature words read per configuration."""
        return self.slots.shape[2]

    def __call__(self, rows: IntArray, positions: IntArray) -> FloatArray:
        """float32[C, A]: raw scores of C configurations (:data:`transitions.Scorer`).

        Args:
            rows: int64[C], each configuration's sentence (a row of :attr:`slots`).
            positions: int64[C, K], feature positions, -1 for an empty slot.
        """
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        positions = np.ascontiguousarray(positions, dtype=np.int64)
        self._check_reads(rows, positions)
        out = np.empty((rows.shape[0], self.weight.shape[0]), dtype=np.float32)
        tiered(k.slot_scores_rows)(*self._layers(), rows, positions, out)
        return out

    def _check_reads(self, rows: IntArray, positions: IntArray) -> None:
        """Refuse rows and positions outside :attr:`slots`: the kernel reads them unchecked."""
        sentences, width = self.slots.shape[:2]
        if rows.ndim != 1 or positions.shape != (rows.shape[0], self.n_slots):
            raise ValueError(
                f"rows int[C] and positions int[C, K={self.n_slots}], got {rows.shape} and "
                f"{positions.shape}"
            )
        if rows.size and not (rows.min() >= 0 and rows.max() < sentences):
            raise ValueError(f"rows must be sentences 0..{sentences - 1} of the slots")
        if positions.size and not (positions.min() >= -1 and positions.max() <= width - 2):
            raise ValueError(f"positions must lie in -1..{width - 2} (N of the slots)")

    def greedy(self, system: TransitionSystem, configs: Configs, n_stack: int) -> FloatArray:
        """Run configuration ``c`` (on sentence ``c``) greedily to the end, in place.

        Returns:
            float64[C], the log-probability of each configuration's transition path.

        Raises:
            ValueError: slots not made for ``configs`` (a sentence per configuration, rows for
                its longest and the empty slot), scores that are NaN or +inf, or -inf for every
                legal transition, naming the configuration.
        """
        if len(configs) != self.slots.shape[0] or self.weight.shape[0] != len(system.table):
            raise ValueError(
                f"{len(configs)} configurations and {len(system.table)} actions for slots of "
                f"{self.slots.shape[0]} sentences and {self.weight.shape[0]} actions"
            )
        if self.slots.shape[1] < configs.max_words + 2:
            # Too few rows: the kernel read past them, or one short took the last word's row
            # for the empty slot's.
            raise ValueError(
                f"slots of {self.slots.shape[1]} rows for sentences of up to "
                f"{configs.max_words} words: give N+2 rows (ROOT, the words, the empty slot)"
            )
        log_probs = np.zeros(len(configs))
        state = configs.kernel_state()
        search = tiered(k.greedy_slots)
        # In calls of GREEDY_CHUNK configurations: while a fresh numba cache compiles the kernel
        # in the background, the calls run as plain Python (a fraction of a millisecond a step,
        # against a microsecond compiled), and the first call after it is ready runs the
        # machine code.
        args = (system.code, system.table, n_stack, self._layers(), state, configs.steps)
        for start in range(0, len(configs), GREEDY_CHUNK):
            stop = min(start + GREEDY_CHUNK, len(configs))
            failed = search(*args, log_probs, start, stop)
            if failed >= 0:
                raise ValueError(
                    f"configuration {failed}: a NaN or +inf transition score, or -inf for every "
                    f"legal transition, in {configs.describe(failed)}"
                )
        return log_probs

    def _layers(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, np.float32]:
        return self.slots, self.bias, self.weight, self.out_bias, self.leak
