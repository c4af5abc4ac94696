"""Numba kernels of the five transition systems: legality, application, terminal test.

One kernel set serves every system: ``system`` (an int code below) picks the rules, transitions
are global ids (``SHIFT`` ... ``UNSHIFT``), and each system's public action ids index its own
tuple of global ids (``table``). Kernels trust their input; :mod:`transitions.systems` checks.

State of configuration ``c`` (see :class:`transitions.configs.Configs`): ``stack[c, :ssize[c]]``
bottom to top; ``buf[c, :bsize[c]]`` holds the buffer **reversed**, so ``b0`` is
``buf[c, bsize[c] - 1]`` and pushing a word back in front of the buffer (SWAP, UNSHIFT) is an
append; ``heads[c]``/``labels[c]`` are -1 until an arc sets them; ``ended[c]`` is the flag *e* of
Nivre & Fernandez-Gonzalez (2014): the buffer has been empty once.
"""

from __future__ import annotations

import numba
import numpy as np

ARC_STANDARD, ARC_EAGER, ARC_EAGER_UNSHIFT, ARC_HYBRID, SWAP_SYSTEM = 0, 1, 2, 3, 4
# Arc-eager without a dummy ROOT that stops at the end of input (Nivre 2003; Nivre & Scholz
# 2004): Unshift's configurations and transitions up to the end of input, where it is terminal.
ARC_EAGER_NO_ROOT = 5

SHIFT, LEFT_ARC, RIGHT_ARC, REDUCE, SWAP, UNSHIFT = 0, 1, 2, 3, 4, 5


@numba.njit(cache=True)
def is_terminal(system, c, ssize, bsize, ended):
    """Whether configuration ``c`` is terminal."""
    if system in (ARC_EAGER, ARC_EAGER_NO_ROOT):
        return bsize[c] == 0
    if system == ARC_EAGER_UNSHIFT:
        return ended[c] and bsize[c] == 0 and ssize[c] == 1
    return bsize[c] == 0 and ssize[c] == 1


@numba.njit(cache=True)
def is_eager(system):
    """Whether ``system`` is one of the arc-eager family (REDUCE, arcs between s0 and b0)."""
    return system in (ARC_EAGER, ARC_EAGER_UNSHIFT, ARC_EAGER_NO_ROOT)


@numba.njit(cache=True)
def _root_rule(c, stack, ssize, bsize):
    # Single root (arc-standard family): an arc from ROOT only as the very last transition.
    return stack[c, ssize[c] - 2] != 0 or (bsize[c] == 0 and ssize[c] == 2)


@numba.njit(cache=True)
def is_legal(system, t, c, stack, ssize, buf, bsize, heads, ended):
    """Whether global transition ``t`` is legal in configuration ``c`` (never in a terminal one)."""
    if is_terminal(system, c, ssize, bsize, ended):
        return False
    ns, nb = ssize[c], bsize[c]
    s0 = stack[c, ns - 1] if ns > 0 else -1
    s1 = stack[c, ns - 2] if ns > 1 else -1
    eager = is_eager(system)
    if t == SHIFT:
        # After the end of input Unshift's system shifts only onto an empty stack: LEFT-ARC can
        # pop the last stack word in front of an unshifted one, and that word is then the root.
        return nb > 0 and not (system == ARC_EAGER_UNSHIFT and ended[c] and ns > 0)
    if t == LEFT_ARC:
        if eager:
            return ns > 0 and nb > 0 and s0 != 0 and heads[c, s0] == -1
        if system == ARC_HYBRID:
            return ns > 0 and nb > 0 and s0 != 0
        return ns > 1 and s1 != 0
    if t == RIGHT_ARC:
        if eager:
            return ns > 0 and nb > 0
        return ns > 1 and _root_rule(c, stack, ssize, bsize)
    if t == REDUCE:
        return eager and ns > 0 and heads[c, s0] != -1
    if t == SWAP:
        return system == SWAP_SYSTEM and ns > 1 and 0 < s1 < s0
    if t == UNSHIFT:
        unshift = system == ARC_EAGER_UNSHIFT and ended[c] and nb == 0
        return unshift and ns > 1 and heads[c, s0] == -1
    return False


@numba.njit(cache=True)
def arc_of(system, t, c, stack, ssize, buf, bsize):
    """The arc (head, dependent) that legal transition ``t`` creates in ``c``, or (-1, -1)."""
    ns, nb = ssize[c], bsize[c]
    eager = is_eager(system)
    if t == LEFT_ARC:
        if eager or system == ARC_HYBRID:
            return buf[c, nb - 1], stack[c, ns - 1]
        return stack[c, ns - 1], stack[c, ns - 2]
    if t == RIGHT_ARC:
        if eager:
            return stack[c, ns - 1], buf[c, nb - 1]
        return stack[c, ns - 2], stack[c, ns - 1]
    return -1, -1


@numba.njit(cache=True)
def apply_one(system, t, label, c, stack, ssize, buf, bsize, heads, labels, ended):
    """Applies legal global transition ``t`` to configuration ``c`` in place."""
    head, dep = arc_of(system, t, c, stack, ssize, buf, bsize)
    if dep >= 0:
        heads[c, dep] = head
        labels[c, dep] = label
    ns, nb = ssize[c], bsize[c]
    eager = is_eager(system)
    if t == SHIFT or (t == RIGHT_ARC and eager):
        stack[c, ns] = buf[c, nb - 1]
        ssize[c] = ns + 1
        bsize[c] = nb - 1
        if nb == 1:
            ended[c] = True
    elif t == LEFT_ARC and not (eager or system == ARC_HYBRID):
        stack[c, ns - 2] = stack[c, ns - 1]
        ssize[c] = ns - 1
    elif t == SWAP:
        buf[c, nb] = stack[c, ns - 2]
        bsize[c] = nb + 1
        stack[c, ns - 2] = stack[c, ns - 1]
        ssize[c] = ns - 1
    elif t == UNSHIFT:
        buf[c, nb] = stack[c, ns - 1]
        bsize[c] = nb + 1
        ssize[c] = ns - 1
    else:  # REDUCE, LEFT-ARC of the eager family and arc-hybrid, RIGHT-ARC of the stack family
        ssize[c] = ns - 1


@numba.njit(cache=True)
def init_one(system, c, n, stack, ssize, buf, bsize, heads, labels, ended):
    """Initial configuration of an n-word sentence in row ``c`` (padding set to -1)."""
    stack[c, :] = -1
    buf[c, :] = -1
    heads[c, :] = -1
    labels[c, :] = -1
    ended[c] = False
    for i in range(n):
        buf[c, i] = n - i  # reversed: word 1 is b0 at the end
    bsize[c] = n
    if system in (ARC_EAGER_UNSHIFT, ARC_EAGER_NO_ROOT):
        ssize[c] = 0  # no dummy ROOT: the one word left at the end is the root
    else:
        stack[c, 0] = 0
        ssize[c] = 1


@numba.njit(cache=True)
def init_batch(system, lengths, stack, ssize, buf, bsize, heads, labels, ended):
    """Initial configurations for sentences of ``lengths`` words."""
    for c in range(lengths.shape[0]):
        init_one(system, c, lengths[c], stack, ssize, buf, bsize, heads, labels, ended)


@numba.njit(cache=True)
def legal_batch(system, table, stack, ssize, buf, bsize, heads, ended, out):
    """``out[c, a]`` = whether the system's action ``a`` (global id ``table[a]``) is legal."""
    for c in range(ssize.shape[0]):
        for a in range(table.shape[0]):
            out[c, a] = is_legal(system, table[a], c, stack, ssize, buf, bsize, heads, ended)


@numba.njit(cache=True)
def apply_batch(system, table, actions, arc_labels, active, state, steps):
    """Applies action ``actions[c]`` (its arc labelled ``arc_labels[c]``) where ``active[c]``."""
    stack, ssize, buf, bsize, heads, labels, ended = state
    for c in range(ssize.shape[0]):
        if active[c]:
            t = table[actions[c]]
            apply_one(system, t, arc_labels[c], c, stack, ssize, buf, bsize, heads, labels, ended)
            steps[c] += 1


@numba.njit(cache=True)
def slot_position(n_stack, k, c, stack, ssize, buf, bsize):
    """Position of feature slot ``k`` of ``c``: s0..s{n_stack-1}, then b0, b1, ...; -1 if empty."""
    if k < n_stack:
        i = ssize[c] - 1 - k
        return stack[c, i] if i >= 0 else -1
    i = bsize[c] - 1 - (k - n_stack)
    return buf[c, i] if i >= 0 else -1


@numba.njit(cache=True)
def positions_batch(n_stack, stack, ssize, buf, bsize, out):
    """``out[c]`` = positions s0..s{n_stack-1}, then b0, b1, ...; -1 where the slot is empty."""
    for c in range(ssize.shape[0]):
        for k in range(out.shape[1]):
            out[c, k] = slot_position(n_stack, k, c, stack, ssize, buf, bsize)


@numba.njit(cache=True)
def terminal_batch(system, ssize, bsize, ended, out):
    """``out[c]`` = whether configuration ``c`` is terminal."""
    for c in range(ssize.shape[0]):
        out[c] = is_terminal(system, c, ssize, bsize, ended)


@numba.njit(cache=True)
def arcs_batch(system, table, actions, stack, ssize, buf, bsize, out):
    """``out[c]`` = (head, dependent) of the arc that ``actions[c]`` creates, or (-1, -1)."""
    for c in range(ssize.shape[0]):
        out[c, 0], out[c, 1] = arc_of(system, table[actions[c]], c, stack, ssize, buf, bsize)


@numba.njit(cache=True)
def arcs_of_all_batch(system, table, legal, state, out):
    """``out[c, a]`` = (head, dependent) that action ``a`` creates in ``c``, else -1s.

    Only for the actions that ``legal[c, a]`` keeps and the configuration allows: a mask of the
    caller's that is stale would have the arc read from outside the stack or buffer.
    """
    stack, ssize, buf, bsize, heads, _labels, ended = state
    for c in range(ssize.shape[0]):
        for a in range(table.shape[0]):
            if legal[c, a] and is_legal(
                system, table[a], c, stack, ssize, buf, bsize, heads, ended
            ):
                out[c, a, 0], out[c, a, 1] = arc_of(system, table[a], c, stack, ssize, buf, bsize)
            else:
                out[c, a, 0], out[c, a, 1] = -1, -1


@numba.njit(cache=True)
def observe_rows(system, table, n_stack, rows, state, legal, positions):
    """For each ``c = rows[i]``: ``legal[i, a]`` of the system's actions, ``positions[i]``.

    The greedy search's view of its live configurations in one pass: the legality mask and the
    feature positions (as :func:`legal_batch` and :func:`positions_batch`) of those rows only.
    """
    stack, ssize, buf, bsize, heads, _labels, ended = state
    for i in range(rows.shape[0]):
        c = rows[i]
        for a in range(table.shape[0]):
            legal[i, a] = is_legal(system, table[a], c, stack, ssize, buf, bsize, heads, ended)
        for k in range(positions.shape[1]):
            positions[i, k] = slot_position(n_stack, k, c, stack, ssize, buf, bsize)


@numba.njit(cache=True)
def advance_rows(system, table, rows, actions, state, steps, live, seen):
    """Applies action ``actions[i]`` (no label) to ``rows[i]``; ``live[i]``: not terminal.

    Checks first, changing nothing unless every row passes: returns ``i`` for the first action
    illegal in its configuration, ``R + i`` for the first row given twice (``seen``: bool[C],
    all False), else -1. An illegal action would write outside the stack or buffer.
    """
    stack, ssize, buf, bsize, heads, labels, ended = state
    n_rows = rows.shape[0]
    for i in range(n_rows):
        c = rows[i]
        if seen[c]:
            return n_rows + i
        seen[c] = True
        if not is_legal(system, table[actions[i]], c, stack, ssize, buf, bsize, heads, ended):
            return i
    for i in range(n_rows):
        c = rows[i]
        apply_one(system, table[actions[i]], -1, c, stack, ssize, buf, bsize, heads, labels, ended)
        steps[c] += 1
        live[i] = not is_terminal(system, c, ssize, bsize, ended)
    return -1


@numba.njit(cache=True)
def slot_hidden(slots, bias, leak, row, positions, out):
    """``out = LeakyReLU(bias + sum_k slots[row, positions[k], k])``; position -1 reads the last.

    The hidden layer of a slot MLP (:class:`transitions.slots.SlotScorer`), summed in slot order
    in float32 as the torch module sums it. Whole-row array operations, elementwise, so that
    the plain-Python twin (:mod:`tiered`) runs at numpy's speed and gives the same floats.
    """
    empty = slots.shape[1] - 1
    out[:] = 0
    for k in range(positions.shape[0]):
        out += slots[row, positions[k] if positions[k] >= 0 else empty, k]
    out += bias
    out[:] = np.where(out >= 0, out, out * leak)


@numba.njit(cache=True)
def slot_output(weight, out_bias, hidden, a):
    """Raw score of action ``a``: ``weight[a] . hidden + out_bias[a]`` in float32."""
    total = weight[a, 0] * hidden[0]
    for h in range(1, hidden.shape[0]):
        total += weight[a, h] * hidden[h]
    return total + out_bias[a]


@numba.njit(cache=True)
def slot_scores_rows(slots, bias, weight, out_bias, leak, rows, positions, out):
    """``out[i, a]``: raw score of action ``a`` for configuration i (row ``rows[i]``)."""
    hidden = np.empty(slots.shape[3], dtype=np.float32)
    for i in range(rows.shape[0]):
        slot_hidden(slots, bias, leak, rows[i], positions[i], hidden)
        for a in range(out.shape[1]):
            out[i, a] = slot_output(weight, out_bias, hidden, a)


@numba.njit(cache=True)
def greedy_slots(system, table, n_stack, layers, state, steps, log_probs, start, stop):
    """Greedy search of configurations ``start``..``stop - 1`` to the end; -1 or a failing c.

    ``layers`` are the slot MLP's (slots, bias, weight, out_bias, leak); configuration ``c``
    reads row ``c`` of ``slots``. Each step scores the legal actions alone,
    takes the first best one (as ``argmax`` does) and adds its log-softmax over the legal ones,
    in float64 from the float32 scores, to ``log_probs[c]``. Returns the first configuration
    with a NaN or +inf score for a legal action, or none legal, or none finite (left where it
    stood), or -1.
    """
    stack, ssize, buf, bsize, heads, labels, ended = state
    slots, bias, weight, out_bias, leak = layers
    n_actions = table.shape[0]
    hidden = np.empty(slots.shape[3], dtype=np.float32)
    positions = np.empty(slots.shape[2], dtype=np.int64)
    scores = np.empty(n_actions, dtype=np.float64)
    legal = np.empty(n_actions, dtype=np.bool_)
    for c in range(start, stop):
        while not is_terminal(system, c, ssize, bsize, ended):
            for k in range(positions.shape[0]):
                positions[k] = slot_position(n_stack, k, c, stack, ssize, buf, bsize)
            slot_hidden(slots, bias, leak, c, positions, hidden)
            best = -1
            for a in range(n_actions):
                legal[a] = is_legal(system, table[a], c, stack, ssize, buf, bsize, heads, ended)
                if legal[a]:
                    scores[a] = slot_output(weight, out_bias, hidden, a)
                    if not scores[a] < np.inf:  # NaN or +inf (a float32 overflow)
                        return c
                    if best < 0 or scores[a] > scores[best]:
                        best = a
            if best < 0 or scores[best] == -np.inf:  # no legal action, or none finite
                return c
            total = 0.0
            for a in range(n_actions):
                if legal[a]:
                    total += np.exp(scores[a] - scores[best])
            log_probs[c] -= np.log(total)
            apply_one(system, table[best], -1, c, stack, ssize, buf, bsize, heads, labels, ended)
            steps[c] += 1
    return -1
