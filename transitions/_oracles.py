"""Numba kernels of the oracles: static next transition, treebank runs, dynamic-oracle costs.

Static oracles follow Nivre (2008) for arc-standard and arc-eager (Unshift's system uses the
arc-eager one, Nivre & Fernandez-Gonzalez 2014), Kuhlmann et al. (2011) for arc-hybrid, Nivre
(2009) for swap (eager) and Nivre, Kuhlmann & Hall (2009) for lazy swap. Costs are those of
Goldberg & Nivre (2012, arc-eager; 2013, arc-hybrid). Gold trees are trusted here.
"""

from __future__ import annotations

import numba
import numpy as np

from ._kernels import (
    ARC_HYBRID,
    ARC_STANDARD,
    LEFT_ARC,
    REDUCE,
    RIGHT_ARC,
    SHIFT,
    SWAP,
    SWAP_SYSTEM,
    apply_one,
    arc_of,
    init_one,
    is_eager,
    is_legal,
    is_terminal,
)

OK, STUCK, WRONG_TREE, OVERFLOW = 0, 1, 2, 3


@numba.njit(cache=True)
def projective_order(gold, n, order):
    """``order[w]`` = rank of word w in the inorder traversal of the gold tree (ROOT first)."""
    start = np.zeros(n + 2, dtype=np.int64)
    for d in range(1, n + 1):
        start[gold[d] + 1] += 1
    for v in range(n + 1):
        start[v + 1] += start[v]
    kids = np.empty(max(n, 1), dtype=np.int64)
    fill = start.copy()
    for d in range(1, n + 1):  # in sentence order, so each child list is sorted
        kids[fill[gold[d]]] = d
        fill[gold[d]] += 1
    node = np.empty(n + 1, dtype=np.int64)
    nxt = np.empty(n + 1, dtype=np.int64)
    done = np.zeros(n + 1, dtype=np.bool_)
    top, rank = 0, 0
    node[0], nxt[0] = 0, start[0]
    while top >= 0:
        v, i = node[top], nxt[top]
        if i < start[v + 1] and not (kids[i] > v and not done[v]):
            nxt[top] = i + 1
            top += 1
            node[top], nxt[top] = kids[i], start[kids[i]]
        elif not done[v]:  # all left children visited: v comes next
            order[v] = rank
            rank += 1
            done[v] = True
        else:
            top -= 1


@numba.njit(cache=True)
def _complete(w, missing):
    return missing[w] == 0


@numba.njit(cache=True)
def static_next(system, lazy, c, stack, ssize, buf, bsize, heads, ended, gold, missing, order, mpc):
    """The static oracle's global transition in configuration ``c``, or -1 when none leads on.

    ``missing[w]`` counts w's gold dependents not attached yet; ``order`` is the projective
    order and ``mpc`` the maximal projective component of each word (swap only).
    """
    ns, nb = ssize[c], bsize[c]
    s0 = stack[c, ns - 1] if ns > 0 else -1
    s1 = stack[c, ns - 2] if ns > 1 else -1
    b0 = buf[c, nb - 1] if nb > 0 else -1
    if is_eager(system):
        if ns > 0 and nb > 0 and s0 != 0 and heads[c, s0] == -1 and gold[s0] == b0:
            return LEFT_ARC
        if ns > 0 and nb > 0 and gold[b0] == s0:
            return RIGHT_ARC
        if ns > 0 and heads[c, s0] != -1 and _complete(s0, missing):
            return REDUCE
    elif system == ARC_HYBRID:
        if ns > 0 and nb > 0 and s0 != 0 and gold[s0] == b0 and _complete(s0, missing):
            return LEFT_ARC
    else:  # arc-standard and swap
        if ns > 1 and s1 != 0 and gold[s1] == s0 and _complete(s1, missing):
            return LEFT_ARC
    stack_family = system in (ARC_STANDARD, SWAP_SYSTEM, ARC_HYBRID)
    right = stack_family and ns > 1 and gold[s0] == s1 and _complete(s0, missing)
    if right and is_legal(system, RIGHT_ARC, c, stack, ssize, buf, bsize, heads, ended):
        return RIGHT_ARC
    # Lazy swap waits until no word of s0's maximal projective component is left in front.
    wait = lazy and nb > 0 and mpc[s0] == mpc[b0]
    if system == SWAP_SYSTEM and ns > 1 and s1 != 0 and order[s0] < order[s1] and not wait:
        return SWAP
    if is_legal(system, SHIFT, c, stack, ssize, buf, bsize, heads, ended):
        return SHIFT
    return -1


@numba.njit(cache=True)
def _scratch(cap):
    stack = np.full((1, cap), -1, dtype=np.int64)
    buf = np.full((1, cap), -1, dtype=np.int64)
    heads = np.full((1, cap), -1, dtype=np.int64)
    labels = np.full((1, cap), -1, dtype=np.int64)
    size = np.zeros((2, 1), dtype=np.int64)
    ended = np.zeros(1, dtype=np.bool_)
    return stack, buf, heads, labels, size, ended


@numba.njit(cache=True)
def _missing(gold, n):
    missing = np.zeros(n + 1, dtype=np.int64)
    for d in range(1, n + 1):
        missing[gold[d]] += 1
    return missing


@numba.njit(cache=True)
def components(gold, n, mpc):
    """Maximal projective components (Nivre, Kuhlmann & Hall 2009): ``mpc[w]`` = its root.

    Runs the arc-standard static oracle without SWAP until it is stuck; the trees built then
    are the components.
    """
    stack, buf, heads, labels, size, ended = _scratch(n + 1)
    ssize, bsize = size[0], size[1]
    init_one(ARC_STANDARD, 0, n, stack, ssize, buf, bsize, heads, labels, ended)
    missing = _missing(gold, n)
    while True:
        state = (stack, ssize, buf, bsize, heads, ended)
        t = static_next(ARC_STANDARD, False, 0, *state, gold, missing, missing, missing)
        if t == -1 or is_terminal(ARC_STANDARD, 0, ssize, bsize, ended):
            break
        h, d = arc_of(ARC_STANDARD, t, 0, stack, ssize, buf, bsize)
        if d >= 0:
            missing[h] -= 1
        apply_one(ARC_STANDARD, t, -1, 0, stack, ssize, buf, bsize, heads, labels, ended)
    for w in range(n + 1):
        top = w
        while heads[0, top] != -1:
            top = heads[0, top]
        mpc[w] = top


@numba.njit(cache=True)
def run_sentence(system, lazy, table, gold, gold_labels, n, n_stack, start, stop, record, out):
    """Runs the static oracle on one gold tree; returns (transitions, status, swaps).

    With ``record``, row ``start + k`` of ``out`` = (positions, legal, action, label) receives
    the k-th configuration's feature positions, legal mask, the system's action id and the gold
    label of the arc it creates (-1 if none); a run that needs row ``stop`` ends in OVERFLOW.
    """
    positions, legal, actions, arc_labels = out
    stack, buf, heads, labels, size, ended = _scratch(n + 1)
    ssize, bsize = size[0], size[1]  # views made once: each view costs a reference count
    init_one(system, 0, n, stack, ssize, buf, bsize, heads, labels, ended)
    missing = _missing(gold, n)
    order = np.zeros(n + 1, dtype=np.int64)
    mpc = np.zeros(n + 1, dtype=np.int64)
    if system == SWAP_SYSTEM:
        projective_order(gold, n, order)
        if lazy:
            components(gold, n, mpc)
    steps, swaps = 0, 0
    while not is_terminal(system, 0, ssize, bsize, ended):
        t = static_next(
            system, lazy, 0, stack, ssize, buf, bsize, heads, ended, gold, missing, order, mpc
        )
        if t == -1:
            return steps, STUCK, swaps
        h, d = arc_of(system, t, 0, stack, ssize, buf, bsize)
        if record:
            row = start + steps
            if row >= stop:
                return steps, OVERFLOW, swaps
            _positions_row(n_stack, stack, ssize, buf, bsize, positions, row)
            for a in range(table.shape[0]):
                legal[row, a] = is_legal(
                    system, table[a], 0, stack, ssize, buf, bsize, heads, ended
                )
            actions[row] = np.argmax(table == t)
            arc_labels[row] = gold_labels[d] if d >= 0 else -1
        if d >= 0:
            missing[h] -= 1
        apply_one(system, t, -1, 0, stack, ssize, buf, bsize, heads, labels, ended)
        steps += 1
        swaps += t == SWAP
    return steps, _check(system, gold, n, stack, size, heads), swaps


@numba.njit(cache=True)
def _positions_row(n_stack, stack, ssize, buf, bsize, positions, row):
    for k in range(positions.shape[1]):
        if k < n_stack:
            i = ssize[0] - 1 - k
            positions[row, k] = stack[0, i] if i >= 0 else -1
        else:
            i = bsize[0] - 1 - (k - n_stack)
            positions[row, k] = buf[0, i] if i >= 0 else -1


@numba.njit(cache=True)
def _check(system, gold, n, stack, size, heads):
    # The tree the system outputs (arc-eager: leftovers on ROOT; Unshift: the last word on ROOT).
    for w in range(1, n + 1):
        h = heads[0, w]
        if h == -1 and is_eager(system):
            h = 0
        if h != gold[w]:
            return WRONG_TREE
    return OK


@numba.njit(cache=True)
def run_treebank(system, lazy, table, golds, gold_labels, lengths, n_stack, offsets, out, stats):
    """Runs :func:`run_sentence` on every sentence.

    Sentence s may fill rows ``offsets[s]:offsets[s + 1]`` of ``out``; ``stats[s]`` =
    (transitions, status, swaps). With an empty ``offsets`` nothing is recorded (a counting
    pass).
    """
    record = offsets.shape[0] > 0
    for s in range(lengths.shape[0]):
        start = offsets[s] if record else 0
        stop = offsets[s + 1] if record else 0
        steps, status, swaps = run_sentence(
            system,
            lazy,
            table,
            golds[s],
            gold_labels[s],
            lengths[s],
            n_stack,
            start,
            stop,
            record,
            out,
        )
        stats[s, 0], stats[s, 1], stats[s, 2] = steps, status, swaps


@numba.njit(cache=True)
def _count_children(where, size, gold, head, only_headless, heads):
    # Gold dependents of ``head`` among where[:size] (optionally only those without a head yet).
    total = 0
    for i in range(size):
        d = where[i]
        if d > 0 and gold[d] == head and not (only_headless and heads[d] != -1):
            total += 1
    return total


@numba.njit(cache=True)
def _eager_cost(t, s0, b0, gold, stack, ns, buf, nb, heads, in_stack, in_buf, heuristic):
    # Goldberg & Nivre (2012); with the heuristic a headless stack word still reaches ROOT.
    if t == SHIFT:
        g = gold[b0]
        lost = in_stack[g] and not (heuristic and g == 0)
        return lost + _count_children(stack, ns, gold, b0, True, heads)
    if t == LEFT_ARC:
        g = gold[s0]
        lost = (g != b0 and in_buf[g]) or (heuristic and g == 0)
        return lost + _count_children(buf, nb, gold, s0, False, heads)
    if t == RIGHT_ARC:
        g = gold[b0]
        lost = g != s0 and (in_stack[g] or in_buf[g])
        return lost + _count_children(stack, ns, gold, b0, True, heads)
    return _count_children(buf, nb, gold, s0, False, heads)  # REDUCE


@numba.njit(cache=True)
def _hybrid_cost(t, s0, s1, b0, gold, stack, ns, buf, nb, heads, in_stack, in_buf):
    # Goldberg & Nivre (2013): words on an arc-hybrid stack never have a head yet.
    if t == SHIFT:
        g = gold[b0]
        lost = in_stack[g] and g != s0
        return lost + _count_children(stack, ns, gold, b0, False, heads)
    g = gold[s0]
    # LEFT-ARC keeps only b0 as s0's head; RIGHT-ARC keeps only s1, which the stack settled.
    lost = (g != b0 and (in_buf[g] or g == s1)) if t == LEFT_ARC else in_buf[g]
    return lost + _count_children(buf, nb, gold, s0, False, heads)


@numba.njit(cache=True)
def costs_batch(system, heuristic, table, stack, ssize, buf, bsize, heads, ended, gold, out):
    """``out[c, a]`` = reachable gold arcs that action ``a`` loses in configuration c.

    -1 where the action is illegal. ``gold[c]`` is the projective gold tree of configuration c.
    """
    in_stack = np.zeros(stack.shape[1], dtype=np.bool_)
    in_buf = np.zeros(stack.shape[1], dtype=np.bool_)
    for c in range(ssize.shape[0]):
        ns, nb = ssize[c], bsize[c]
        in_stack[:] = False
        in_buf[:] = False
        in_stack[stack[c, :ns]] = True
        in_buf[buf[c, :nb]] = True
        s0 = stack[c, ns - 1] if ns > 0 else -1
        s1 = stack[c, ns - 2] if ns > 1 else -1
        b0 = buf[c, nb - 1] if nb > 0 else -1
        for a in range(table.shape[0]):
            t = table[a]
            if not is_legal(system, t, c, stack, ssize, buf, bsize, heads, ended):
                out[c, a] = -1
            elif system == ARC_HYBRID:
                out[c, a] = _hybrid_cost(
                    t, s0, s1, b0, gold[c], stack[c], ns, buf[c], nb, heads[c], in_stack, in_buf
                )
            else:
                where = (stack[c], ns, buf[c], nb, heads[c], in_stack, in_buf)
                out[c, a] = _eager_cost(t, s0, b0, gold[c], *where, heuristic)
