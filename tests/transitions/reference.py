"""Pure-Python reference of the transition systems and brute force over them (test-only).

Written from the definitions in docs (tuples and dicts, one configuration at a time), sharing
no code with the `transitions` package, so the kernels are checked against an independent
reading. A state is (stack, buffer, arcs, ended): stack bottom-to-top, buffer b0 first, arcs a
tuple of heads (index 0 unused, -1 for none), ended whether the buffer has been empty once.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

SYSTEMS = ("arc_standard", "arc_eager", "arc_eager_unshift", "arc_hybrid", "swap")
VARIANTS = (*SYSTEMS, "arc_eager_no_root")  # the registry's systems and one option of them
NAMES = {
    "arc_standard": ("SHIFT", "LEFT-ARC", "RIGHT-ARC"),
    "arc_eager": ("SHIFT", "LEFT-ARC", "RIGHT-ARC", "REDUCE"),
    "arc_eager_unshift": ("SHIFT", "LEFT-ARC", "RIGHT-ARC", "REDUCE", "UNSHIFT"),
    # arc_eager_unshift with attach_leftovers: arc-eager without a dummy ROOT, stopping at the
    # end of input (never UNSHIFT); not a registry name.
    "arc_eager_no_root": ("SHIFT", "LEFT-ARC", "RIGHT-ARC", "REDUCE", "UNSHIFT"),
    "arc_hybrid": ("SHIFT", "LEFT-ARC", "RIGHT-ARC"),
    "swap": ("SHIFT", "LEFT-ARC", "RIGHT-ARC", "SWAP"),
}

State = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], bool]


def initial(system: str, n: int) -> State:
    stack = () if system in ("arc_eager_unshift", "arc_eager_no_root") else (0,)
    return stack, tuple(range(1, n + 1)), (-1,) * (n + 1), False


def terminal(system: str, state: State) -> bool:
    stack, buffer, _, ended = state
    if system in ("arc_eager", "arc_eager_no_root"):
        return not buffer
    if system == "arc_eager_unshift":
        return ended and not buffer and len(stack) == 1
    return not buffer and stack == (0,)


def _arc(arcs: tuple[int, ...], head: int, dep: int) -> tuple[int, ...]:
    return (*arcs[:dep], head, *arcs[dep + 1 :])


def _eager_moves(system: str, state: State) -> Iterator[tuple[str, State]]:
    stack, buffer, arcs, ended = state
    unshift = system == "arc_eager_unshift"
    if buffer and (not unshift or not ended or not stack):
        rest = buffer[1:]
        yield "SHIFT", (stack + buffer[:1], rest, arcs, ended or not rest)
    if stack and buffer:
        top, nxt = stack[-1], buffer[0]
        if top != 0 and arcs[top] == -1:
            yield "LEFT-ARC", (stack[:-1], buffer, _arc(arcs, nxt, top), ended)
        rest = buffer[1:]
        yield "RIGHT-ARC", ((*stack, nxt), rest, _arc(arcs, top, nxt), ended or not rest)
    if stack and arcs[stack[-1]] != -1:
        yield "REDUCE", (stack[:-1], buffer, arcs, ended)
    if unshift and ended and not buffer and len(stack) > 1 and arcs[stack[-1]] == -1:
        yield "UNSHIFT", (stack[:-1], (stack[-1],), arcs, ended)


def _stack_moves(system: str, state: State) -> Iterator[tuple[str, State]]:
    stack, buffer, arcs, ended = state
    if buffer:
        yield "SHIFT", (stack + buffer[:1], buffer[1:], arcs, ended or len(buffer) == 1)
    if system == "arc_hybrid":
        if stack and buffer and stack[-1] != 0:
            yield "LEFT-ARC", (stack[:-1], buffer, _arc(arcs, buffer[0], stack[-1]), ended)
    elif len(stack) > 1 and stack[-2] != 0:
        yield "LEFT-ARC", (stack[:-2] + stack[-1:], buffer, _arc(arcs, stack[-1], stack[-2]), ended)
    if len(stack) > 1 and (stack[-2] != 0 or (not buffer and len(stack) == 2)):
        yield "RIGHT-ARC", (stack[:-1], buffer, _arc(arcs, stack[-2], stack[-1]), ended)
    if system == "swap" and len(stack) > 1 and 0 < stack[-2] < stack[-1]:
        yield "SWAP", (stack[:-2] + stack[-1:], stack[-2:-1] + buffer, arcs, ended)


def moves(system: str, state: State) -> dict[str, State]:
    """The legal transitions of ``state`` and where each leads (none from a terminal state)."""
    if terminal(system, state):
        return {}
    if system in ("arc_eager", "arc_eager_unshift", "arc_eager_no_root"):
        return dict(_eager_moves(system, state))
    return dict(_stack_moves(system, state))


def tree(system: str, state: State, attach_leftovers: bool = True) -> tuple[int, ...]:
    """The heads a terminal state outputs (heads[0] == -1)."""
    stack, _, arcs, _ = state
    heads = list(arcs)
    leftovers = system in ("arc_eager_unshift", "arc_eager_no_root")
    if leftovers or (system == "arc_eager" and attach_leftovers):
        for w in stack:
            if w != 0 and heads[w] == -1:
                heads[w] = 0
    return tuple(heads)


def reachable(system: str, n: int) -> dict[State, dict[str, State]]:
    """Every state reachable from the initial one, with its moves."""
    seen: dict[State, dict[str, State]] = {}
    todo = [initial(system, n)]
    while todo:
        state = todo.pop()
        if state in seen:
            continue
        seen[state] = moves(system, state)
        todo.extend(seen[state].values())
    return seen


def terminal_trees(system: str, n: int, attach_leftovers: bool = True) -> set[tuple[int, ...]]:
    graph = reachable(system, n)
    return {tree(system, s, attach_leftovers) for s, out in graph.items() if terminal(system, s)}


def best_correct(
    system: str, gold: tuple[int, ...], graph: dict, attach_leftovers: bool = True
) -> dict[State, int]:
    """For each state of ``graph``, the most gold arcs any terminal tree reachable from it has."""

    @functools.cache
    def best(state: State) -> int:
        if terminal(system, state):
            heads = tree(system, state, attach_leftovers)
            return sum(heads[d] == gold[d] for d in range(1, len(gold)))
        return max(best(nxt) for nxt in graph[state].values())

    return {state: best(state) for state in graph}


def is_tree(heads: tuple[int, ...], single_root: bool) -> bool:
    n = len(heads) - 1
    for d in range(1, n + 1):
        node, steps = d, 0
        while node not in (0, -1) and steps <= n:
            node, steps = heads[node], steps + 1
        if node != 0:
            return False
    return not single_root or sum(h == 0 for h in heads[1:]) == 1


def projective(heads: tuple[int, ...]) -> bool:
    """Every word strictly between a head and its dependent descends from the head."""
    for d in range(1, len(heads)):
        h = heads[d]
        for w in range(min(h, d) + 1, max(h, d)):
            node = w
            while node not in (0, h):
                node = heads[node]
            if node != h:
                return False
    return True


@functools.cache
def all_trees(n: int, *, single_root: bool, only_projective: bool) -> list[tuple[int, ...]]:
    """Every tree over n words (heads[0] == -1) by exhaustive enumeration (cached: do not
    mutate the list)."""
    found = []
    for combo in itertools.product(range(n + 1), repeat=n):
        heads = (-1, *combo)
        if any(heads[d] == d for d in range(1, n + 1)) or not is_tree(heads, single_root):
            continue
        if not only_projective or projective(heads):
            found.append(heads)
    return found
