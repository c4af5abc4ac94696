"""Gold trees at the door: padding of head lists, one-line errors for trees that are not trees.

The check itself is :func:`decoding.trees.tree_problem_kernel`; this module words its findings
for a transition system.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_int64
from decoding.trees import CYCLE, OK, OUT_OF_RANGE, ROOTS, first_problem_kernel
from decoding.types import IntArray
from tiered import tiered


def pad_trees(trees: Sequence[npt.ArrayLike]) -> tuple[IntArray, IntArray]:
    """Stacks head vectors into a padded batch.

    Args:
        trees: S arrays ``heads`` int[n_s + 1] with ``heads[0] == -1`` (the project's layout).

    Returns:
        (heads int64[S, N+1] padded with -1, lengths int64[S]).
    """
    if isinstance(trees, (str, bytes)) or not isinstance(trees, Iterable):
        raise ValueError(f"trees must be a sequence of head vectors, got {type(trees).__name__}")
    arrays = [as_array(t, f"sentence {s}: heads") for s, t in enumerate(trees)]
    for s, array in enumerate(arrays):
        if array.ndim != 1 or array.shape[0] < 2 or array.dtype.kind not in "iu":
            raise ValueError(
                f"sentence {s}: heads must be int[n+1] with n >= 1, got {array.dtype} {array.shape}"
            )
        check_int64(array, f"sentence {s}: heads")
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
    s, code = tiered(first_problem_kernel)(heads, lengths, single_root, projective, detail)
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
