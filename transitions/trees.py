"""Gold trees at the door: padding of head lists, one-line errors for trees that are not trees."""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import numpy.typing as npt

from decoding.types import IntArray
from tiered import tiered

OK, OUT_OF_RANGE, CYCLE, ROOTS, NON_PROJECTIVE = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def _status(heads, n, single_root, projective, detail):
    # detail = (word, other): the word at fault and a second word (head, crossing arc, ...).
    roots = 0
    for d in range(1, n + 1):
        if heads[d] < 0 or heads[d] > n or heads[d] == d:
            detail[0], detail[1] = d, heads[d]
            return OUT_OF_RANGE
        roots += heads[d] == 0
    for d in range(1, n + 1):
        node, steps = d, 0
        while node != 0 and steps <= n:
            node, steps = heads[node], steps + 1
        if node != 0:
            detail[0], detail[1] = d, heads[d]
            return CYCLE
    if single_root and roots != 1:
        detail[0], detail[1] = roots, -1
        return ROOTS
    if projective:
        # ROOT sits left of every word, so the tree is projective iff no two arcs cross.
        for d in range(1, n + 1):
            lo, hi = min(d, heads[d]), max(d, heads[d])
            for e in range(lo + 1, hi):
                if heads[e] < lo or heads[e] > hi:
                    detail[0], detail[1] = d, e
                    return NON_PROJECTIVE
    return OK


@numba.njit(cache=True)
def _first_problem(heads, lengths, single_root, projective, detail):
    # (sentence, status) of the first sentence that is not a tree of the requested kind.
    for s in range(lengths.shape[0]):
        code = _status(heads[s], lengths[s], single_root, projective, detail)
        if code != OK:
            return s, code
    return -1, OK


def pad_trees(trees: Sequence[npt.ArrayLike]) -> tuple[IntArray, IntArray]:
    """Stacks head vectors into a padded batch.

    Args:
        trees: S arrays ``heads`` int[n_s + 1] with ``heads[0] == -1`` (the project's layout).

    Returns:
        (heads int64[S, N+1] padded with -1, lengths int64[S]).
    """
    arrays = [np.asarray(t) for t in trees]
    for s, array in enumerate(arrays):
        if array.ndim != 1 or array.shape[0] < 2 or array.dtype.kind not in "iu":
            raise ValueError(
                f"sentence {s}: heads must be int[n+1] with n >= 1, got {array.dtype} {array.shape}"
            )
    sizes = np.fromiter((a.shape[0] for a in arrays), dtype=np.int64, count=len(arrays))
    flat = np.concatenate(arrays).astype(np.int64) if arrays else np.zeros(0, np.int64)
    starts = np.cumsum(sizes) - sizes
    bad = np.flatnonzero(flat[starts] != -1)
    if bad.size:
        s = int(bad[0])
        raise ValueError(f"sentence {s}: heads[0] must be -1 (ROOT), got {flat[starts[s]]}")
    heads = np.full((len(arrays), int(sizes.max(initial=1))), -1, dtype=np.int64)
    rows = np.repeat(np.arange(len(arrays)), sizes)  # [total]
    heads[rows, np.arange(flat.shape[0]) - starts[rows]] = flat
    return heads, sizes - 1


def check_trees(
    heads: IntArray, lengths: IntArray, *, single_root: bool, projective: bool, system: str
) -> None:
    """Raises ValueError naming the first sentence whose heads are not a tree the system takes.

    Args:
        heads: int64[S, N+1], ``heads[s, d]`` the gold head of word d (0 = ROOT).
        lengths: int64[S], words per sentence.
        single_root: the system builds exactly one word on ROOT.
        projective: the system's oracle needs projective trees.
        system: the system's name, for the message.
    """
    detail = np.zeros(2, dtype=np.int64)
    s, code = tiered(_first_problem)(heads, lengths, single_root, projective, detail)
    if code != OK:
        raise ValueError(f"sentence {s}: {_message(code, detail, system)}")


def _message(code: int, detail: IntArray, system: str) -> str:
    word, other = int(detail[0]), int(detail[1])
    if code == OUT_OF_RANGE:
        return f"head {other} of word {word} is not another word or ROOT"
    if code == CYCLE:
        return f"word {word} (head {other}) is on a cycle that never reaches ROOT"
    if code == ROOTS:
        return f"{word} words on ROOT, but {system} builds trees with exactly one"
    return (
        f"not projective (the arc into word {word} crosses the arc into word {other}); "
        f"{system}'s oracle needs projective trees: projectivize it first "
        "(transitions.projective.projectivize)"
    )
