"""Oracles: static transition sequences for whole treebanks, dynamic-oracle costs for a batch.

With a static oracle every training configuration is known before training: one call turns a
treebank into (feature positions, legal mask, gold action, gold label) rows, sentence after
sentence, so a batch of them is one gather and one classifier call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_count, check_int64
from tiered import tiered

from . import _oracles
from .configs import BoolArray, Configs, IntArray
from .systems import TransitionSystem
from .trees import check_trees, pad_trees


@dataclass(frozen=True, slots=True)
class OracleSequences:
    """The static oracle's configurations and transitions for S sentences, T rows in all.

    Rows of sentence s are ``offsets[s]:offsets[s + 1]``, in transition order.

    Attributes:
        positions: int64[T, K], feature positions of each configuration (s0.., then b0..; -1
            for an empty slot; K = n_stack + n_buffer).
        legal: bool[T, A], the legal actions there (A = len(system.transitions)).
        actions: int64[T], the gold action (ids into ``system.transitions``).
        labels: int64[T], the gold label of the arc the action creates, -1 if it creates none.
        offsets: int64[S + 1].
        swaps: int64[S], SWAP transitions per sentence (0 outside the swap system).
    """

    positions: IntArray
    legal: BoolArray
    actions: IntArray
    labels: IntArray
    offsets: IntArray
    swaps: IntArray


def oracle_sequences(
    system: TransitionSystem,
    trees: Sequence[npt.ArrayLike],
    labels: Sequence[npt.ArrayLike] | None = None,
    *,
    n_stack: int = 3,
    n_buffer: int = 2,
) -> OracleSequences:
    """Runs the system's static oracle on every gold tree.

    Args:
        system: the transition system (for swap, its ``swap_oracle`` picks eager or lazy).
        trees: S gold head vectors int[n_s + 1], ``heads[0] == -1``.
        labels: S label-id vectors int[n_s + 1] (entry 0 ignored); all -1 when omitted.
        n_stack: stack slots in ``positions``.
        n_buffer: buffer slots in ``positions``.

    Returns:
        The sequences; replaying ``actions`` from ``system.initial`` rebuilds each gold tree.

    Raises:
        ValueError: a tree is not a tree, has several words on ROOT where the system builds one,
            or is not projective for a projective system (projectivize it first); names the
            sentence.
    """
    check_count(n_stack, "n_stack")  # 2.5 and "3" were numpy's TypeErrors, True was 1
    check_count(n_buffer, "n_buffer")
    if not isinstance(system, TransitionSystem):  # "arc_hybrid": an AttributeError of str
        raise TypeError(
            f"system must be a TransitionSystem (transitions.get_system(name)), got {system!r}"
        )
    heads, lengths = pad_trees(trees)
    single, projective = system.single_root, system.projective
    check_trees(heads, lengths, single_root=single, projective=projective, system=system.name)
    gold_labels = _gold_labels(labels, heads, lengths)
    # Every word enters the stack once and leaves it at most once: 2n rows. A SWAP sends a word
    # back to the buffer (two more transitions): 4n rows cover n swaps, and the rare sentences
    # that need more run again, counted first.
    capacity = (4 if system.name == "swap" else 2) * lengths
    gold = (heads, gold_labels, lengths)
    out, stats = _run(system, gold, n_stack, n_stack + n_buffer, capacity)
    _raise_on_failure(stats, system, np.arange(len(lengths)))
    again = np.flatnonzero(stats[:, 1] == _oracles.OVERFLOW)
    out = _compact(out, capacity, np.where(stats[:, 1] == _oracles.OK, stats[:, 0], 0))
    if again.size:
        out = _rerun(system, gold, n_stack, n_stack + n_buffer, again, out, stats)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(stats[:, 0], out=offsets[1:])
    return OracleSequences(*out, offsets=offsets, swaps=stats[:, 2].copy())


def _gold_labels(
    labels: Sequence[npt.ArrayLike] | None, heads: IntArray, lengths: IntArray
) -> IntArray:
    # Label ids padded like heads; -1 everywhere when the caller has none.
    padded = np.full_like(heads, -1)
    if labels is None:
        return padded
    if len(labels) != len(lengths):
        raise ValueError(f"{len(labels)} label vectors for {len(lengths)} trees")
    for s, row in enumerate(labels):
        array = as_array(row, f"sentence {s}: labels")
        if array.shape != (lengths[s] + 1,) or array.dtype.kind not in "iu":
            raise ValueError(f"sentence {s}: labels must be int[{lengths[s] + 1}]")
        check_int64(array, f"sentence {s}: labels")
        padded[s, : array.shape[0]] = array
    return padded


def _rerun(
    system: TransitionSystem,
    gold: tuple,
    n_stack: int,
    width: int,
    again: IntArray,
    out: tuple,
    stats: IntArray,
) -> tuple:
    # Counts, then records, the sentences that overflowed; merges their rows in sentence order.
    subset = tuple(array[again] for array in gold)
    _, counted = _run(system, subset, n_stack, width, None)
    redone, stats[again] = _run(system, subset, n_stack, width, counted[:, 0])
    _raise_on_failure(stats[again], system, again)
    mine = np.zeros(stats.shape[0], dtype=np.bool_)
    mine[again] = True
    mine = np.repeat(mine, stats[:, 0])  # [rows]: which final rows come from the rerun
    return tuple(_interleave(a, b, mine) for a, b in zip(out, redone, strict=True))


def _run(
    system: TransitionSystem, gold: tuple, n_stack: int, width: int, capacity: IntArray | None
) -> tuple[tuple, IntArray]:
    # One oracle pass over (heads, labels, lengths); without capacity it only counts.
    heads, gold_labels, lengths = gold
    stats = np.zeros((len(lengths), 3), dtype=np.int64)
    offsets = np.zeros(0 if capacity is None else len(lengths) + 1, dtype=np.int64)
    if capacity is not None:
        np.cumsum(capacity, out=offsets[1:])
    out = _outputs(int(offsets[-1]) if offsets.size else 0, width, system)
    args = (system.code, system.lazy, system.table, heads, gold_labels, lengths)
    # Not tiered: one call covers a whole treebank, which plain Python would take minutes over.
    _oracles.run_treebank(*args, n_stack, offsets, out, stats)
    return out, stats


def _outputs(rows: int, width: int, system: TransitionSystem) -> tuple:
    return (
        np.empty((rows, width), dtype=np.int64),
        np.empty((rows, system.table.shape[0]), dtype=np.bool_),
        np.empty(rows, dtype=np.int64),
        np.empty(rows, dtype=np.int64),
    )


def _compact(out: tuple, capacity: IntArray, steps: IntArray) -> tuple:
    # Drops the unused rows at the end of each sentence's block.
    if (steps == capacity).all():
        return out
    starts = np.cumsum(capacity) - capacity
    rows = np.arange(int(capacity.sum())) - np.repeat(starts, capacity)  # [rows]
    keep = rows < np.repeat(steps, capacity)
    return tuple(array[keep] for array in out)


def _interleave(first: np.ndarray, second: np.ndarray, from_second: BoolArray) -> np.ndarray:
    merged = np.empty((from_second.shape[0], *first.shape[1:]), dtype=first.dtype)
    merged[~from_second] = first
    merged[from_second] = second
    return merged


def _raise_on_failure(stats: IntArray, system: TransitionSystem, index: IntArray) -> None:
    # Checked trees never fail; this guards the oracle itself, so a bug cannot pass silently.
    bad = np.flatnonzero((stats[:, 1] == _oracles.STUCK) | (stats[:, 1] == _oracles.WRONG_TREE))
    if bad.size:
        k = int(bad[0])
        what = "got stuck" if stats[k, 1] == _oracles.STUCK else "built another tree"
        raise ValueError(f"sentence {index[k]}: the static oracle of {system.name} {what}")


def costs(system: TransitionSystem, configs: Configs, gold: npt.ArrayLike) -> IntArray:
    """Dynamic-oracle costs (Goldberg & Nivre 2012 arc-eager, 2013 arc-hybrid).

    The cost of an action is the number of gold arcs reachable from the configuration that are
    no longer reachable after it; the zero-cost actions are the dynamic oracle. Arc-eager's
    costs follow its ``attach_leftovers`` option (a headless stack word can still reach ROOT).

    Args:
        system: ``arc_eager`` or ``arc_hybrid``.
        configs: C configurations.
        gold: int[C, N'+1] gold heads per configuration (projective trees, ``gold[c, 0] == -1``,
            padded with -1; N' <= N and at least the longest sentence of ``configs``).

    Returns:
        int64[C, A]: the cost of each action, -1 where it is illegal.

    Raises:
        ValueError: a system without a dynamic oracle, ``gold`` of the wrong shape, or a gold
            row that is not a projective tree the system builds; names the configuration.
    """
    if not system.dynamic:
        raise ValueError(f"{system.name} has no dynamic oracle (arc_eager and arc_hybrid do)")
    gold = as_array(gold, "gold")
    if gold.ndim != 2 or gold.shape[0] != len(configs) or gold.shape[1] > configs.max_words + 1:
        raise ValueError(f"gold must be int[{len(configs)}, <= {configs.max_words + 1}]")
    # A narrower gold would be cut to fewer words than the sentence has, and its costs computed
    # as if the words beyond it had no gold head.
    short = np.flatnonzero(configs.lengths >= gold.shape[1])
    if short.size:
        c = int(short[0])
        raise ValueError(
            f"configuration {c}: gold has {gold.shape[1]} columns, too few for its "
            f"{configs.lengths[c]} words and ROOT"
        )
    trees = [gold[c, : configs.lengths[c] + 1] for c in range(len(configs))]
    padded, lengths = pad_trees(trees)
    single = system.single_root
    check_trees(padded, lengths, single_root=single, projective=True, system=system.name)
    full = np.full((len(configs), configs.max_words + 1), -1, dtype=np.int64)
    full[:, : padded.shape[1]] = padded
    out = np.empty((len(configs), system.table.shape[0]), dtype=np.int64)
    c = configs
    state = (c.stack, c.stack_size, c.buffer, c.buffer_size, c.heads, c.ended)
    tiered(_oracles.costs_batch)(
        system.code, system.attach_leftovers, system.table, *state, full, out
    )
    return out


def zero_cost(system: TransitionSystem, configs: Configs, gold: npt.ArrayLike) -> BoolArray:
    """bool[C, A]: the dynamic oracle, the legal actions of cost 0 (see :func:`costs`)."""
    return costs(system, configs, gold) == 0
