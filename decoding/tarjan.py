"""Exact maximum spanning arborescence and single-rooted dependency tree for one sentence.

Tarjan's (1977) dense O(n^2) form of Chu & Liu (1965) / Edmonds (1967), with the root constraint of
Gabow & Tarjan (1984) as adapted by Zmigrod, Vieira & Cotterell (2020), in the contraction form
of Camerini, Fratta & Maffioli (1979): supernodes with fresh ids, expanded in reverse order.
"""

from __future__ import annotations

import numba
import numpy as np
import numpy.typing as npt

from .status import NO_SINGLE_ROOT, NO_TREE, OK
from .types import FloatArray, IntArray

# (scores, sup_val, sup_arc): the input, then per slot the row and the column of the supernode that
# occupies it, as adjusted values and original arcs h * (n+1) + d; see _tarjan.
Graph = tuple[FloatArray, FloatArray, IntArray]
# (in_val, node): per node id 0..2n the chosen arc's adjusted value, then int64[_ROWS, 2n+1] whose
# rows are named below. Two arrays, not one per row: every call between the kernel's functions
# passes them on, and numba passes each array as a struct of 7 or more words.
Forest = tuple[FloatArray, npt.NDArray[np.int64]]
# Per node id: the chosen arc (original arc h * (n+1) + d), the supernode union-find, the
# uncompressed contraction tree, the weak-component union-find, the node's slot, and the cached
# alternative arc of the root phase.
IN_ARC, UF, CPARENT, WC, SLOT, ALT_ARC = range(6)
# Per slot 0..n its live node (-1 when free); a scratch buffer for cycles; the slots that hold an
# original word and those that hold a supernode, as lists with their length first (ROOT's slot 0
# is in neither), and each listed slot's place in its list (scans over the lists skip free slots,
# and each loop reads one kind of row, testing nothing else); the supernode whose column is not
# written yet (-1 if none), how many members' columns it waits for, then those members (see
# _contract).
OCC, CYCLE, WORDS, SUPS, PLACE, PENDING = range(6, 12)
_ROWS = 12
# Constant arguments go in as np.int64 (or np.bool_), never as literals: numba compiles a
# function once per distinct argument type, and a literal such as Literal[int](0) is a type of
# its own, so literal arguments compiled some kernels twice (a slower first call, no faster
# later one).
ANY_SOURCE = np.int64(0)  # _best_source's lo: ROOT may be the source
WORD_SOURCE = np.int64(1)  # _best_source's lo: words and supernodes only
Alternatives = tuple[FloatArray, IntArray]


@numba.njit(cache=True)
def mst_kernel(scores: FloatArray, root_constraint: bool, heads: IntArray) -> int:
    """Maximum spanning arborescence rooted at 0 (Chu & Liu 1965; Edmonds 1967; Tarjan 1977).

    With ``root_constraint`` exactly one word attaches to ROOT (Gabow & Tarjan 1984, as adapted to
    dependency parsing by Zmigrod, Vieira & Cotterell 2020). Runs in O(n^2) time and memory.

    Args:
        scores: float64[n+1, n+1], C-contiguous, ``scores[d, h]`` scores the arc h -> d. Row 0 and
            the diagonal are ignored; ``-inf`` forbids an arc. No NaN (checked by the caller).
        root_constraint: require exactly one arc out of ROOT.
        heads: int64[n+1] output; ``heads[0] = -1`` and ``heads[d]`` is the head of word d.

    Returns:
        0 on success, 1 if no spanning arborescence exists, 2 if arborescences exist but none
        has a single root (only with ``root_constraint``). ``heads`` is unspecified unless 0.
    """
    n = scores.shape[0] - 1
    best = np.empty((2, n + 1))
    alt_head = np.empty(n + 1, dtype=np.int64)
    if not _argmax_heads(scores, heads, best, alt_head):
        return NO_TREE
    # Fast path: when every word's best head already forms a tree, nothing can beat it.
    roots = _count_roots(heads, n)
    if (
        roots < 0
        and _cycle_has_tie(scores, heads, best[0], -roots)
        and _tied_tree(scores, heads, best[0])
    ):
        roots = _count_roots(heads, n)
    if roots == 1 or (roots > 1 and not root_constraint):
        return OK
    on_root = np.empty(n + 1, dtype=np.int64)  # the root phase's set R, in either case
    if roots < 0:
        left = 0
    else:
        # Acyclic but several words on ROOT: the root phase may finish without a contraction,
        # and when it needs one, the full algorithm resumes where the moves on the head vector
        # stopped.
        left = _swap_roots(scores, heads, best, alt_head, on_root, roots)
        if left == 1:
            return OK
    # One call site with a variable: a literal argument would compile _tarjan a second time.
    return _tarjan(scores, root_constraint, heads, best, alt_head, on_root, left)


@numba.njit(cache=True)
def _argmax_heads(
    scores: FloatArray, heads: IntArray, best: FloatArray, alt_head: IntArray
) -> bool:
    """Per-word best head (ties -> lowest head) and best non-root head, with their scores.

    ``best[0, d]`` scores ``heads[d]``, ``best[1, d]`` scores ``alt_head[d]``. Returns False if
    some word has no finite head.
    """
    n = scores.shape[0] - 1
    heads[0] = -1
    feasible = True
    for d in range(1, n + 1):
        value = -np.inf
        arg = -1
        for h in range(1, d):  # two loops instead of testing h != d on every score
            if scores[d, h] > value:
                value = scores[d, h]
                arg = h
        for h in range(d + 1, n + 1):
            if scores[d, h] > value:
                value = scores[d, h]
                arg = h
        alt_head[d] = arg
        best[1, d] = value
        if scores[d, 0] >= value and scores[d, 0] > -np.inf:
            value = scores[d, 0]
            arg = 0
        heads[d] = arg
        best[0, d] = value
        feasible = feasible and arg >= 0
    return feasible


@numba.njit(cache=True)
def _count_roots(heads: IntArray, n: int) -> int:
    """Words on ROOT if ``heads`` (in 0..n) is acyclic, else -x for a word x on a cycle; O(n)."""
    # state: 0 unseen, d = on the walk started at d, -1 known to reach ROOT.
    state = np.zeros(n + 1, dtype=np.int64)
    state[0] = -1
    roots = 0
    for d in range(1, n + 1):
        if heads[d] == 0:
            roots += 1
        x = d
        while state[x] == 0:
            state[x] = d
            x = heads[x]
        if state[x] == d:
            return -x
        x = d
        while state[x] == d:
            state[x] = -1
            x = heads[x]
    return roots


@numba.njit(cache=True)
def _cycle_has_tie(scores: FloatArray, heads: IntArray, best: FloatArray, x: int) -> bool:
    """Whether a word on the cycle of ``heads`` through x has a second best head; O(n |cycle|)."""
    n1 = heads.shape[0]
    v = x
    for _ in range(n1):  # at most n words on the cycle
        for h in range(n1):
            if h != v and h != heads[v] and scores[v, h] == best[v]:
                return True
        v = heads[v]
        if v == x:
            break
    return False


@numba.njit(cache=True)
def _tied_tree(scores: FloatArray, heads: IntArray, best: FloatArray) -> bool:
    """Re-pick every word's head among its best ones so that they form a tree, if any do; O(n^2).

    Breadth-first search from ROOT along best arcs: when it reaches every word, its tree gives
    each word a best head, so it is a maximum arborescence, found without a contraction. On
    tied scores a cyclic argmax often hides such a tree. Words whose best heads include ROOT are
    reached first, so they stay on ROOT, as the argmax has them. ``best[d]`` scores word d's best
    head; ``heads`` changes only if the search succeeds.
    """
    n1 = heads.shape[0]
    parent = np.full(n1, -1, dtype=np.int64)
    queue = np.empty(n1, dtype=np.int64)
    queue[0] = 0
    parent[0] = 0
    reached = 1
    for i in range(n1):
        if i == reached:
            return False  # the words left have best heads only among themselves
        u = queue[i]
        for d in range(1, n1):
            if parent[d] < 0 and d != u and scores[d, u] == best[d]:
                parent[d] = u
                queue[reached] = d
                reached += 1
        if reached == n1:
            break
    for d in range(1, n1):  # a loop: slice assignment compiles numba's shape errors
        heads[d] = parent[d]
    return True


@numba.njit(cache=True)
def _swap_roots(
    scores: FloatArray,
    heads: IntArray,
    best: FloatArray,
    alt_head: IntArray,
    roots: IntArray,
    count: int,
) -> int:
    """The root phase on an acyclic argmax ``heads`` with ``count`` > 1 words on ROOT.

    Moves words off ROOT in exactly the order :func:`_root_phase` would, without its O(n^2)
    workspace, each to its lowest best non-root head, or on ties to another one if that would
    close a cycle. Stops before a move that closes a cycle whichever best head it takes (that
    needs a contraction) or when no word on ROOT has another head. Returns how many words are
    left on ROOT, listed in ``roots[:left]`` (int64[>= count] output) in the order
    :func:`_root_phase` resumes from; ``heads`` stays acyclic throughout.
    """
    n = heads.shape[0] - 1
    k = 0
    for v in range(1, n + 1):
        if heads[v] == 0:
            roots[k] = v
            k += 1
    while count > 1:
        i = _cheapest_swap(best[0], best[1], roots, count)
        if i < 0:
            break
        v = roots[i]
        h = alt_head[v]
        if _reaches(heads, h, v):
            h = _tied_head_outside(scores, heads, v, best[1, v])
            if h < 0:
                break
        heads[v] = h
        count -= 1
        roots[i] = roots[count]
    return count


@numba.njit(cache=True)
def _tied_head_outside(scores: FloatArray, heads: IntArray, v: int, value: float) -> int:
    """Lowest non-root head of v that scores ``value`` and lies outside v's subtree, or -1; O(n).

    Any best non-root arc is a valid choice for v once its ROOT arc is gone (Chu-Liu-Edmonds may
    break ties any way), so on tied scores a move that the lowest best head would turn into a
    cycle can often go to another best head instead, with no contraction at all.
    """
    n = heads.shape[0] - 1
    side = np.zeros(n + 1, dtype=np.int64)  # 0 unknown, 1 in v's subtree, 2 outside it
    side[v] = 1
    side[0] = 2
    for h in range(1, n + 1):
        if h == v or scores[v, h] != value:
            continue
        x = h
        while side[x] == 0:
            x = heads[x]
        found = side[x]
        x = h
        while side[x] == 0:  # label the walked path: each word is walked once per call
            side[x] = found
            x = heads[x]
        if found == 2:
            return h
    return -1


@numba.njit(cache=True)
def _reaches(heads: IntArray, s: int, v: int) -> bool:
    """Whether the chain of heads from s meets v before ROOT (s lies in v's subtree)."""
    while s != 0:
        if s == v:
            return True
        s = heads[s]
    return False


@numba.njit(cache=True, inline="always")
def _width(forest: Forest) -> int:
    """The number of original nodes, n + 1 (ROOT included)."""
    return (forest[1].shape[1] + 1) // 2


@numba.njit(cache=True, inline="always")
def _find(parent: IntArray, x: int) -> int:
    """Root of ``x`` in a union-find forest, halving the path on the way (no recursion)."""
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


@numba.njit(cache=True, inline="always")
def _entry(graph: Graph, forest: Forest, v: int, u: int) -> tuple[float, int]:
    """(adjusted value, original arc) of the best arc from live node u into live node v."""
    scores, sup_val, sup_arc = graph
    node = forest[1]
    slot = node[SLOT]
    n1 = scores.shape[0]
    if v >= n1:
        return sup_val[slot[v], slot[u]], sup_arc[slot[v], slot[u]]
    if u >= n1:
        return sup_val[slot[u], n1 + v], sup_arc[slot[u], n1 + v]
    return scores[v, u], u * n1 + v


@numba.njit(cache=True)
def _best_source(graph: Graph, forest: Forest, v: int, lo: int) -> int:
    """Live node with the best arc into supernode v, or -1; ``lo`` = 1 leaves ROOT out.

    Ties go to ROOT, then to words, then to supernodes, each in the order of their slot lists.
    """
    sup_val = graph[1]
    node = forest[1]
    slot, occ, words, sups = node[SLOT], node[OCC], node[WORDS], node[SUPS]
    r = slot[v]
    row = sup_val[r]
    value = row[0] if lo == 0 else -np.inf
    arg = 0 if lo == 0 else -1
    for j in range(1, 1 + words[0]):
        if row[words[j]] > value:
            value = row[words[j]]
            arg = words[j]
    for j in range(1, 1 + sups[0]):
        if sups[j] != r and row[sups[j]] > value:
            value = row[sups[j]]
            arg = sups[j]
    return occ[arg] if value > -np.inf else -1


@numba.njit(cache=True)
def _collect_cycle(forest: Forest, x: int) -> int:
    """Store the cycle of chosen arcs through x in ``cycle[:k]``, a supernode first if any."""
    node = forest[1]
    in_arc, uf, cycle = node[IN_ARC], node[UF], node[CYCLE]
    n1 = _width(forest)
    k = 0
    y = x
    while k < n1:
        cycle[k] = y
        if y >= n1 > cycle[0]:  # c will reuse cycle[0]'s slot: nested contractions share rows
            cycle[0], cycle[k] = y, cycle[0]
        k += 1
        y = _find(uf, in_arc[y] // n1)
        if y == x:
            break
    return k


@numba.njit(cache=True, inline="always")
def _keep_better(
    val: FloatArray, arc: IntArray, t: int, value: float, source: int, first: bool
) -> None:
    """Store (value, source) at ``t`` of a row being merged if first or better than it."""
    if first or value > val[t]:
        val[t] = value
        arc[t] = source


@numba.njit(cache=True)
def _merge_rows(graph: Graph, forest: Forest, k: int) -> None:
    """Row of the new supernode: best arc into C from each live node, relative to C's arcs."""
    # Entering C at member v replaces v's chosen arc, so the arc is worth inc[v, u] - in_val[v]
    # (Tarjan 1977; the constant weight of C changes no argmax). cycle[0]'s row is updated in
    # place: it is read before it is written, element by element. Each member's kind picks one
    # of two loops per slot list, so the inner loops test nothing but the values.
    scores, sup_val, sup_arc = graph
    node = forest[1]
    in_val, slot, cycle, words, sups = forest[0], node[SLOT], node[CYCLE], node[WORDS], node[SUPS]
    n1 = scores.shape[0]
    s0 = slot[cycle[0]]
    val, arc = sup_val[s0], sup_arc[s0]
    for i in range(k):
        v = cycle[i]
        shift = in_val[v]
        first = i == 0
        if v >= n1:
            r = slot[v]
            _keep_better(val, arc, 0, sup_val[r, 0] - shift, sup_arc[r, 0], first)
            for j in range(1, 1 + words[0]):
                t = words[j]
                _keep_better(val, arc, t, sup_val[r, t] - shift, sup_arc[r, t], first)
            for j in range(1, 1 + sups[0]):
                t = sups[j]
                if t != s0:
                    _keep_better(val, arc, t, sup_val[r, t] - shift, sup_arc[r, t], first)
        else:
            _keep_better(val, arc, 0, scores[v, 0] - shift, v, first)
            for j in range(1, 1 + words[0]):
                t = words[j]
                _keep_better(val, arc, t, scores[v, t] - shift, t * n1 + v, first)
            for j in range(1, 1 + sups[0]):
                t = sups[j]
                if t != s0:  # a supernode's column of an original row lies in its own row
                    value = sup_val[t, n1 + v] - shift
                    _keep_better(val, arc, t, value, sup_arc[t, n1 + v], first)


@numba.njit(cache=True)
def _fold_columns(
    graph: Graph, forest: Forest, s0: int, members: IntArray, lo: int, hi: int, fresh: bool
) -> None:
    """Fold the arcs out of ``members[lo:hi]`` into the column of the supernode in slot s0.

    With ``fresh`` the first member's arcs replace what the column held.
    """
    # Original rows keep supernode columns in the supernode's slot, so scores is never copied:
    # the column of s0 in word y's row lies at sup_val[s0, n1 + y], in supernode t's row at
    # sup_val[t, s0].
    scores, sup_val, sup_arc = graph
    node = forest[1]
    slot, words, sups = node[SLOT], node[WORDS], node[SUPS]
    n1 = scores.shape[0]
    out_val, out_arc = sup_val[s0, n1:], sup_arc[s0, n1:]
    for i in range(lo, hi):
        u = members[i]
        r = slot[u]
        first = fresh and i == lo
        if u >= n1:
            for j in range(1, 1 + words[0]):
                y = words[j]
                _keep_better(out_val, out_arc, y, sup_val[r, n1 + y], sup_arc[r, n1 + y], first)
        else:
            for j in range(1, 1 + words[0]):
                y = words[j]
                _keep_better(out_val, out_arc, y, scores[y, u], u * n1 + y, first)
        for j in range(1, 1 + sups[0]):
            t = sups[j]
            if t != s0:
                _keep_better(sup_val[t], sup_arc[t], s0, sup_val[t, r], sup_arc[t, r], first)


@numba.njit(cache=True)
def _flush_columns(graph: Graph, forest: Forest, reader: int) -> None:
    """Write the pending column (see :func:`_contract`) unless there is none or it is reader's."""
    node = forest[1]
    slot, pending = node[SLOT], node[PENDING]
    if pending[0] >= 0 and pending[0] != reader:
        start, keep = np.int64(2), np.bool_(False)  # not literals: see ANY_SOURCE
        _fold_columns(graph, forest, slot[pending[0]], pending, start, start + pending[1], keep)
        pending[0] = -1
        pending[1] = 0


@numba.njit(cache=True, inline="always")
def _unlist(slots: IntArray, place: IntArray, t: int) -> None:
    """Remove slot t from the list ``slots`` (count first) by moving the last one into its place."""
    last = slots[slots[0]]
    slots[place[t]] = last
    place[last] = place[t]
    slots[0] -= 1


@numba.njit(cache=True)
def _contract(graph: Graph, forest: Forest, x: int, c: int) -> None:
    """Contract the cycle of chosen arcs through x into the fresh supernode c; O(n |C|)."""
    node = forest[1]
    uf, cparent, wc, slot, occ = node[UF], node[CPARENT], node[WC], node[SLOT], node[OCC]
    cycle, words, sups, place, pending = (
        node[CYCLE],
        node[WORDS],
        node[SUPS],
        node[PLACE],
        node[PENDING],
    )
    n1 = _width(forest)
    k = _collect_cycle(forest, x)
    head = cycle[0]
    _flush_columns(graph, forest, head)  # the merges read every column but head's
    for i in range(k):
        uf[cycle[i]] = c
        cparent[cycle[i]] = c  # never compressed: expansion walks it to find entrance sites
        occ[slot[cycle[i]]] = -1
        _unlist(sups if cycle[i] >= n1 else words, place, slot[cycle[i]])
    s0 = slot[head]
    slot[c] = s0
    occ[s0] = c
    sups[0] += 1
    sups[sups[0]] = s0
    place[s0] = sups[0]
    wc[c] = _find(wc, head)  # c inherits the weak component of the subtrees hanging off C
    _merge_rows(graph, forest, k)
    if head < n1:
        _fold_columns(graph, forest, s0, cycle, np.int64(0), k, np.bool_(True))
        return
    # A supernode head already holds its column where C's goes (C takes its slot). The other
    # members' columns are folded in only when something reads C's column (a contraction C is
    # not the head of, or an alternative of another supernode): when the root phase grows one
    # supernode a short path at a time, nothing does until it ends. The row has room: each node
    # is a member once, and the at most 2n - 2 nodes other than ROOT and c fit in the 2n - 1
    # places after the two counters.
    pending[0] = c
    for i in range(1, k):
        pending[2 + pending[1]] = cycle[i]
        pending[1] += 1


@numba.njit(cache=True)
def _choose(graph: Graph, forest: Forest, v: int, u: int) -> None:
    """Make the best arc from u the chosen arc of v."""
    node = forest[1]
    in_val, in_arc = forest[0], node[IN_ARC]
    in_val[v], in_arc[v] = _entry(graph, forest, v, u)


@numba.njit(cache=True)
def _contraction_phase(graph: Graph, forest: Forest, heads: IntArray, best: FloatArray) -> int:
    """Give every supernode its best incoming arc, contracting cycles; next free id, or -1."""
    node = forest[1]
    in_val, in_arc, uf, wc = forest[0], node[IN_ARC], node[UF], node[WC]
    n1 = heads.shape[0]
    c = n1
    for v in range(1, n1):
        # An original row only gains merged columns that keep its maximum, so the greedy argmax
        # stays a best choice and the row need not be scanned again.
        in_val[v] = best[v]
        in_arc[v] = heads[v] * n1 + v
        x = v
        while True:
            source = _find(wc, _find(uf, in_arc[x] // n1))
            target = _find(wc, x)
            if source != target:  # x had no chosen arc, so its component is its own subtree
                wc[target] = source
                break
            _contract(graph, forest, x, c)
            x = c
            c += 1
            u = _best_source(graph, forest, x, ANY_SOURCE)
            if u < 0:  # no arc enters this set of words: no arborescence at all
                return -1
            _choose(graph, forest, x, u)
    return c


@numba.njit(cache=True)
def _cheapest_swap(in_val: FloatArray, alt_val: FloatArray, roots: IntArray, count: int) -> int:
    """Position in ``roots[:count]`` of the child whose move to its alternative loses least."""
    cost = np.inf
    arg = -1
    for i in range(count):
        if in_val[roots[i]] - alt_val[roots[i]] < cost:
            cost = in_val[roots[i]] - alt_val[roots[i]]
            arg = i
    return arg  # -1 when no root child has a finite alternative


@numba.njit(cache=True)
def _below(forest: Forest, s: int, v: int) -> bool:
    """Whether s lies in v's subtree of chosen arcs (walk up from s until v or ROOT)."""
    node = forest[1]
    in_arc, uf = node[IN_ARC], node[UF]
    n1 = _width(forest)
    while s != 0:
        if s == v:
            return True
        s = _find(uf, in_arc[s] // n1)
    return False


@numba.njit(cache=True)
def _set_alternative(graph: Graph, forest: Forest, alt: Alternatives, v: int) -> None:
    """Cache supernode v's best incoming arc from a non-root node as (value, original arc)."""
    # Cached by original arc, never by node id: later contractions only merge columns (keeping
    # this maximum), and the union-find resolves the source when it is used.
    _flush_columns(graph, forest, v)  # v's row holds every other live node's column
    u = _best_source(graph, forest, v, WORD_SOURCE)
    alt[0][v], alt[1][v] = _entry(graph, forest, v, u) if u >= 0 else (-np.inf, -1)


@numba.njit(cache=True)
def _root_candidates(
    graph: Graph,
    forest: Forest,
    alt: Alternatives,
    roots: IntArray,
    alt_best: FloatArray,
    alt_head: IntArray,
    c: int,
) -> int:
    """After the contraction phase: store the live nodes on ROOT in ``roots``, return how many.

    Caches each one's best non-root alternative in ``alt`` on the way.
    """
    node = forest[1]
    in_arc, uf = node[IN_ARC], node[UF]
    n1 = _width(forest)
    count = 0
    for v in range(1, c):
        if uf[v] != v or in_arc[v] // n1 != 0:
            continue
        roots[count] = v
        count += 1
        if v >= n1:
            _set_alternative(graph, forest, alt, v)
        else:
            _word_alternative(alt, v, alt_best, alt_head, n1)
    return count


@numba.njit(cache=True, inline="always")
def _word_alternative(
    alt: Alternatives, v: int, alt_best: FloatArray, alt_head: IntArray, n1: int
) -> None:
    """Word v's best non-root arc, from the greedy pass: merged columns only repeat its row."""
    alt[0][v] = alt_best[v]
    alt[1][v] = alt_head[v] * n1 + v if alt_head[v] >= 0 else -1


@numba.njit(cache=True)
def _root_phase(
    graph: Graph, forest: Forest, alt: Alternatives, roots: IntArray, count: int, c: int
) -> int:
    """Move root children to their alternatives until one is left; next free id, or -1.

    ``roots[:count]`` is the set R, each with its alternative in ``alt`` (per node id).
    """
    # Gabow & Tarjan (1984); Zmigrod et al. (2020, Theorem 2).
    node = forest[1]
    in_val, in_arc, uf = forest[0], node[IN_ARC], node[UF]
    n1 = _width(forest)
    while count > 1:
        i = _cheapest_swap(in_val, alt[0], roots, count)
        if i < 0:  # every root child can only be entered from ROOT
            return -1
        v = roots[i]
        count -= 1
        roots[i] = roots[count]
        # The ROOT entry of v stays: a contraction below may have to bring v back onto ROOT.
        in_val[v] = alt[0][v]
        in_arc[v] = alt[1][v]
        if _below(forest, _find(uf, in_arc[v] // n1), v):
            _contract(graph, forest, v, c)
            # Its ROOT entry is >= cost(v) >= 0 and every other entry <= 0, so it takes ROOT;
            # forcing it avoids a tied arc from its own subtree closing another cycle.
            _choose(graph, forest, c, np.int64(0))  # np.int64: see ANY_SOURCE
            roots[count] = c
            count += 1
            _set_alternative(graph, forest, alt, c)
            c += 1
    return c


@numba.njit(cache=True)
def _expand(forest: Forest, c: int, heads: IntArray) -> None:
    """Break contracted cycles, newest first, at the member holding the entering arc's dependent."""
    node = forest[1]
    in_arc, cparent = node[IN_ARC], node[CPARENT]
    n1 = heads.shape[0]
    for s in range(c - 1, n1 - 1, -1):
        j = in_arc[s] % n1
        while cparent[j] != s and cparent[j] != j:
            j = cparent[j]
        in_arc[j] = in_arc[s]  # j drops its cycle arc; every other member keeps its own
    heads[0] = -1
    for d in range(1, n1):
        heads[d] = in_arc[d] // n1


@numba.njit(cache=True)
def _tarjan(
    scores: FloatArray,
    root_constraint: bool,
    heads: IntArray,
    best: FloatArray,
    alt_head: IntArray,
    roots: IntArray,
    count: int,
) -> int:
    """Contraction phase, optional root phase and expansion.

    ``roots`` is int64[n+1] workspace for the root phase's set R. With ``count`` = 0,
    ``heads`` is the argmax and everything runs. With ``count`` > 1, ``heads`` is acyclic as
    :func:`_swap_roots` left it, with ``roots[:count]`` on ROOT: there is nothing to contract,
    and the root phase resumes from there.
    """
    n1 = scores.shape[0]
    m = 2 * n1 - 1  # nodes 0..n, then at most n - 1 supernodes
    # Arcs between original words are read from ``scores`` in place. A supernode takes over the
    # slot of one of its members, a supernode one when it can, so nested contractions share the
    # same few rows; np.empty leaves the rows of slots never taken untouched. One float and one
    # int buffer hold everything: allocations are a large share of the time on short sentences.
    size = n1 * 2 * n1
    floats = np.empty(size + 2 * m)
    ints = np.empty(size + _ROWS * m, dtype=np.int64)
    sup_val = floats[:size].reshape((n1, 2 * n1))
    sup_arc = ints[:size].reshape((n1, 2 * n1))
    node = ints[size:].reshape((_ROWS, m))
    uf, cparent, wc, slot = node[UF], node[CPARENT], node[WC], node[SLOT]
    for x in range(m):
        uf[x] = x
        cparent[x] = x
        wc[x] = x
        slot[x] = x  # a supernode's slot is set when it is created
    for x in range(n1):  # loops: slice assignment compiles numba's shape errors
        node[OCC, x] = x
        node[PLACE, x] = x
        node[WORDS, x] = x
    node[WORDS, 0] = n1 - 1  # m >= n1 + 1
    node[SUPS, 0] = 0
    node[PENDING, 0] = -1  # no supernode's column is pending
    node[PENDING, 1] = 0
    in_val = floats[size : size + m]
    forest = (in_val, node)
    graph = (scores, sup_val, sup_arc)
    alt = (floats[size + m :], node[ALT_ARC])
    if count == 0:
        c = _contraction_phase(graph, forest, heads, best[0])
        if c < 0:
            return NO_TREE
        if root_constraint:
            count = _root_candidates(graph, forest, alt, roots, best[1], alt_head, c)
    else:  # no cycle: every word keeps its current head, the moved ones their alternative
        c = n1
        for v in range(1, n1):
            in_val[v] = scores[v, heads[v]]
            node[IN_ARC, v] = heads[v] * n1 + v
        for i in range(count):
            _word_alternative(alt, roots[i], best[1], alt_head, n1)
    if root_constraint:
        c = _root_phase(graph, forest, alt, roots, count, c)
        if c < 0:
            return NO_SINGLE_ROOT
    _expand(forest, c, heads)
    return OK
