"""Pseudo-projective parsing (Nivre & Nilsson 2005): lift, encode and restore non-projective arcs.

A projective parser trains on lifted trees whose labels record each lift, and its output is
deprojectivized back to a possibly non-projective tree.

An arc h -> d is non-projective when some word strictly between h and d does not descend from h.
Lifting it makes it g -> d with g the head of h. :func:`projectivize` lifts the shortest
non-projective arc until none is left (ties go to the arc whose left end is leftmost; two arcs
of one length and one left end would span the same words, which a tree cannot have); the
"Head" encoding labels a lifted arc ``deprel + separator + deprel of its syntactic head``, and
:func:`deprojectivize` searches below the arc's head, breadth-first and left to right, for a
word with that label.

ROOT: arcs from ROOT (position 0) are never non-projective, as ROOT dominates every word, so
only an arc r -> d with r on ROOT could be lifted onto ROOT. When r is the only word on ROOT it
dominates every word too, so its arcs are projective: single-rooted trees never gain a second
root child, at any step (lifting keeps r the only child of ROOT). Trees with several words on
ROOT can have arcs lifted onto ROOT, as the definition says.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numba
import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_int64
from decoding.trees import is_tree_kernel
from decoding.types import BoolArray, IntArray
from tiered import tiered

SEPARATOR = "|"
ENCODINGS = ("head",)


@numba.njit(cache=True)
def _subtrees(heads: IntArray, n: int, enter: IntArray, size: IntArray) -> None:
    """Preorder index ``enter`` and subtree size ``size`` of every node 0..n of a tree.

    Node k descends from h (or is h) iff ``enter[h] <= enter[k] < enter[h] + size[h]``.
    """
    first = np.full(n + 1, -1, dtype=np.int64)  # children as linked lists
    sibling = np.full(n + 1, -1, dtype=np.int64)
    for d in range(1, n + 1):
        sibling[d] = first[heads[d]]
        first[heads[d]] = d
    order = np.empty(n + 1, dtype=np.int64)
    stack = np.empty(n + 1, dtype=np.int64)
    stack[0], top, t = 0, 1, 0
    while top > 0:
        top -= 1
        v = stack[top]
        enter[v], order[t] = t, v
        t += 1
        c = first[v]
        while c >= 0:
            stack[top] = c
            top += 1
            c = sibling[c]
    size[:] = 1
    for t in range(n, 0, -1):  # children come after their head in preorder
        size[heads[order[t]]] += size[order[t]]


@numba.njit(cache=True)
def _is_nonprojective(heads: IntArray, d: int, enter: IntArray, size: IntArray) -> bool:
    h = heads[d]
    for k in range(min(h, d) + 1, max(h, d)):
        if not enter[h] <= enter[k] < enter[h] + size[h]:
            return True
    return False


@numba.njit(cache=True)
def nonprojective_kernel(heads: IntArray, n: int, out: BoolArray) -> None:
    """``out[d]``: whether the arc into word d is non-projective (``out[0]`` is False)."""
    enter = np.empty(n + 1, dtype=np.int64)
    size = np.empty(n + 1, dtype=np.int64)
    _subtrees(heads, n, enter, size)
    out[0] = False
    for d in range(1, n + 1):
        out[d] = _is_nonprojective(heads, d, enter, size)


@numba.njit(cache=True)
def lift_kernel(heads: IntArray, n: int) -> int:
    """Lifts the shortest (then leftmost) non-projective arc in place until none is left.

    Returns the number of lifts. Ends: each lift moves a word one step closer to ROOT.
    """
    enter = np.empty(n + 1, dtype=np.int64)
    size = np.empty(n + 1, dtype=np.int64)
    lifts = 0
    while True:
        _subtrees(heads, n, enter, size)
        best, best_length, best_left = -1, n + 1, n + 1
        for d in range(1, n + 1):
            left = min(d, heads[d])
            length = max(d, heads[d]) - left
            shorter = length < best_length or (length == best_length and left < best_left)
            if shorter and _is_nonprojective(heads, d, enter, size):
                best, best_length, best_left = d, length, left
        if best < 0:
            return lifts
        heads[best] = heads[heads[best]]
        lifts += 1


@dataclass(frozen=True, slots=True)
class Lifted:
    """A projectivized tree.

    Attributes:
        heads: int64[n+1], a projective tree, ``heads[0] == -1``.
        deprels: the labels in the layout they were given (str[n], or str[n+1] with position 0
            kept); a lifted arc's label carries the encoding.
        n_lifted: number of arcs lifted (words whose head changed).
        n_lifts: number of lift steps (an arc can be lifted more than once).
    """

    heads: IntArray
    deprels: list[str]
    n_lifted: int
    n_lifts: int


def _check_heads(heads: npt.ArrayLike) -> IntArray:
    """A copy of one tree as int64[n+1] with ``heads[0] == -1``; ValueError naming the problem."""
    array = as_array(heads, "heads")
    if array.ndim != 1 or array.shape[0] < 2:
        raise ValueError(f"heads must be int[n+1] with n >= 1 words, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise ValueError(f"heads must hold integers, got dtype {array.dtype}")
    check_int64(array, "heads")
    tree = array.astype(np.int64)  # a copy: the kernels work in place
    n = tree.shape[0] - 1
    if tree[0] != -1:
        raise ValueError(f"heads[0] must be -1 (heads is int[n+1], ROOT first), got {tree[0]}")
    # The fast path; words are found only on error.
    if not tiered(is_tree_kernel)(tree, n, False, False):
        for d in range(1, n + 1):
            if not 0 <= tree[d] <= n or tree[d] == d:
                raise ValueError(f"heads[{d}]={tree[d]} is not a head in 0..{n} other than {d}")
        raise ValueError("heads has a cycle, so it is not a tree")
    return tree


def _check_labels(deprels: Sequence[str], n: int) -> tuple[list[str], bool]:
    """Labels as str[n+1] (``""`` at 0) and whether they came with position 0."""
    if isinstance(deprels, str):  # its letters would pass as one label per word
        raise ValueError(f"deprels must be a sequence of str, one per word, got {deprels!r}")
    if len(deprels) not in (n, n + 1):
        raise ValueError(f"deprels must be str[n] or str[n+1] for n={n} words, got {len(deprels)}")
    with_root = len(deprels) == n + 1
    labels = ["", *deprels[with_root:]]
    for d in range(1, n + 1):
        if not isinstance(labels[d], str):
            raise ValueError(f"deprel of word {d} must be a str, got {type(labels[d]).__name__}")
    return labels, with_root


def _check_options(encoding: str, separator: str) -> None:
    if encoding not in ENCODINGS:
        raise ValueError(f"encoding must be one of {ENCODINGS}, got {encoding!r}")
    if not isinstance(separator, str) or not separator:
        raise ValueError(f"separator must be a non-empty string, got {separator!r}")


def _layout(labels: list[str], with_root: bool, root_label: str) -> list[str]:
    return [root_label, *labels[1:]] if with_root else labels[1:]


def nonprojective_arcs(heads: npt.ArrayLike) -> BoolArray:
    """Which arcs of one tree are non-projective (Nivre & Nilsson 2005).

    Args:
        heads: int[n+1], a tree (several words on ROOT allowed), ``heads[0] == -1``.

    Returns:
        bool[n+1]; entry d says whether the arc heads[d] -> d has a word strictly between its
        ends that does not descend from heads[d]. Entry 0 is False.

    Raises:
        ValueError: if ``heads`` is not a tree.
    """
    tree = _check_heads(heads)
    out = np.empty(tree.shape[0], dtype=np.bool_)
    tiered(nonprojective_kernel)(tree, tree.shape[0] - 1, out)
    return out


def projectivize(
    heads: npt.ArrayLike,
    deprels: Sequence[str],
    *,
    encoding: str = "head",
    separator: str = SEPARATOR,
) -> Lifted:
    """Projective tree by lifting non-projective arcs (Nivre & Nilsson 2005, "Head" encoding).

    Lifts the shortest non-projective arc (leftmost on ties) to the head of its head until the
    tree is projective, then labels each lifted arc ``f"{deprel}{separator}{head_deprel}"``,
    where ``head_deprel`` is the original label of the word it originally depended on.

    Args:
        heads: int[n+1], a tree, ``heads[0] == -1``.
        deprels: str[n] (CoNLL-U order) or str[n+1] (position 0 ignored and passed through).
        encoding: ``"head"``.
        separator: joins the two labels of a lifted arc; no input label may contain it.

    Returns:
        :class:`Lifted` with the projective heads, the encoded labels in the input's layout
        and the number of lifted arcs. A single-rooted tree stays single-rooted.

    Raises:
        ValueError: if ``heads`` is not a tree, ``deprels`` has the wrong length, or a label
            contains the separator (its lifts could not be decoded).
    """
    _check_options(encoding, separator)
    tree = _check_heads(heads)
    n = tree.shape[0] - 1
    labels, with_root = _check_labels(deprels, n)
    for d in range(1, n + 1):
        if separator in labels[d]:
            raise ValueError(
                f"deprel {labels[d]!r} of word {d} contains the separator {separator!r}"
            )
    original = tree.copy()
    n_lifts = tiered(lift_kernel)(tree, n)
    lifted = np.flatnonzero(tree != original) if n_lifts else ()
    encoded = labels.copy()
    for d in lifted:
        encoded[d] = f"{labels[d]}{separator}{labels[original[d]]}"
    root_label = deprels[0] if with_root else ""
    return Lifted(tree, _layout(encoded, with_root, root_label), len(lifted), n_lifts)


def _children(heads: IntArray) -> list[list[int]]:
    """Children of every node 0..n, left to right."""
    children: list[list[int]] = [[] for _ in range(heads.shape[0])]
    for d in range(1, heads.shape[0]):
        children[heads[d]].append(d)
    return children


def _search(children: list[list[int]], start: int, skip: int, label: str, base: list[str]) -> int:
    """First proper descendant of ``start`` labelled ``label`` (BFS, left to right), or -1.

    The search never enters the subtree of ``skip``, the word being reattached.
    """
    queue = deque(c for c in children[start] if c != skip)
    while queue:
        v = queue.popleft()
        if base[v] == label:
            return v
        queue.extend(children[v])  # skip is a child of start only
    return -1


def _restore_one(tree: IntArray, pending: dict[int, str], base: list[str]) -> bool:
    """Reattaches the first pending word (top-down, left to right) whose search succeeds."""
    children = _children(tree)
    queue = deque(children[0])
    while queue:
        d = queue.popleft()
        if d in pending:
            head = _search(children, tree[d], d, pending[d], base)
            if head >= 0:
                tree[d] = head
                del pending[d]
                return True
        queue.extend(children[d])
    return False


def deprojectivize(
    heads: npt.ArrayLike,
    deprels: Sequence[str],
    *,
    encoding: str = "head",
    separator: str = SEPARATOR,
) -> tuple[IntArray, list[str]]:
    """Undoes :func:`projectivize` on a parsed tree (Nivre & Nilsson 2005, "Head" encoding).

    A word labelled ``f"{deprel}{separator}{head_deprel}"`` moves to the first descendant of its
    current head, in breadth-first, left-to-right order, outside its own subtree, whose label
    (before any separator) is ``head_deprel``. Words are handled top-down, left to right, and
    each reattachment changes the tree, so the order is redone after each one until no search
    succeeds; a word whose search never succeeds keeps its head. Every label loses its encoding
    (the part from the first separator on). The result is a tree; reattaching moves a word
    below another, so a single-rooted input stays single-rooted and no input gains a root.

    Args:
        heads: int[n+1], a tree, ``heads[0] == -1``.
        deprels: str[n] or str[n+1] (position 0 ignored and passed through).
        encoding: ``"head"``.
        separator: as given to :func:`projectivize`.

    Returns:
        (int64[n+1] heads, labels in the input's layout).

    Raises:
        ValueError: if ``heads`` is not a tree or ``deprels`` has the wrong length.
    """
    _check_options(encoding, separator)
    tree = _check_heads(heads)
    labels, with_root = _check_labels(deprels, len(tree) - 1)
    parts = [label.partition(separator) for label in labels]
    base = [part[0] for part in parts]
    pending = {d: part[2] for d, part in enumerate(parts) if part[1]}
    while pending and _restore_one(tree, pending, base):
        pass
    root_label = deprels[0] if with_root else ""
    return tree, _layout(base, with_root, root_label)


@dataclass(frozen=True, slots=True)
class ProjectivityStats:
    """Counts for one treebank: how non-projective it is and how well lifting round-trips.

    Attributes:
        sentences, words: totals.
        nonprojective_sentences: sentences with at least one non-projective arc.
        nonprojective_arcs: arcs that are non-projective in the original trees.
        lifted_arcs: arcs whose head lifting changed (a superset of the non-projective ones:
            lifting an arc out of a head's subtree can make another arc of that head cross it).
        lifts: lift steps (an arc lifted twice counts twice).
        restored_arcs: lifted arcs whose original head deprojectivization finds again.
        restored_nonprojective_arcs: of those, the originally non-projective ones.
        exact_sentences: non-projective sentences that round-trip exactly, heads and labels.
    """

    sentences: int = 0
    words: int = 0
    nonprojective_sentences: int = 0
    nonprojective_arcs: int = 0
    lifted_arcs: int = 0
    lifts: int = 0
    restored_arcs: int = 0
    restored_nonprojective_arcs: int = 0
    exact_sentences: int = 0

    @property
    def recovered(self) -> float:
        """Share of originally non-projective arcs restored (1.0 if there are none)."""
        if not self.nonprojective_arcs:
            return 1.0
        return self.restored_nonprojective_arcs / self.nonprojective_arcs


def projectivity_stats(
    trees: Iterable[tuple[npt.ArrayLike, Sequence[str]]],
    *,
    encoding: str = "head",
    separator: str = SEPARATOR,
) -> ProjectivityStats:
    """Projectivizes and deprojectivizes every tree of a treebank and counts what happens.

    Args:
        trees: (heads int[n+1] with ``heads[0] == -1``, deprels str[n] or str[n+1]) per
            sentence, e.g. ``([-1, *s.heads], s.deprels)`` for CoNLL-U sentences ``s``.
        encoding: as for :func:`projectivize`.
        separator: as for :func:`projectivize`.

    Returns:
        The :class:`ProjectivityStats` of all trees.

    Raises:
        ValueError: ``"sentence i: problem"`` (i counts from 0) for a tree :func:`projectivize`
            rejects.
    """
    counts = dict.fromkeys(ProjectivityStats.__dataclass_fields__, 0)
    for i, (heads, deprels) in enumerate(trees):
        try:
            original = _check_heads(heads)
            crossing = nonprojective_arcs(original)
            lifted = projectivize(original, deprels, encoding=encoding, separator=separator)
        except ValueError as error:
            raise ValueError(f"sentence {i}: {error}") from None
        restored, labels = deprojectivize(
            lifted.heads, lifted.deprels, encoding=encoding, separator=separator
        )
        changed = lifted.heads != original
        correct = restored == original
        counts["sentences"] += 1
        counts["words"] += len(original) - 1
        counts["nonprojective_sentences"] += bool(crossing.any())
        counts["nonprojective_arcs"] += int(crossing.sum())
        counts["lifted_arcs"] += int(changed.sum())
        counts["lifts"] += lifted.n_lifts
        counts["restored_arcs"] += int((changed & correct).sum())
        counts["restored_nonprojective_arcs"] += int((crossing & correct).sum())
        exact = bool(correct.all()) and list(labels) == list(deprels)
        counts["exact_sentences"] += bool(crossing.any()) and exact
    return ProjectivityStats(**counts)
