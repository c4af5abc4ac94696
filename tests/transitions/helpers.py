"""Conversions between the reference's tuple states and batched `Configs` (test-only)."""

from __future__ import annotations

import numpy as np

from transitions import Configs


def to_configs(states: list, n: int) -> Configs:
    """A batch holding the reference states (stack, buffer b0 first, heads, ended) as rows."""
    configs = Configs.empty(len(states), n)
    for c, (stack, buffer, heads, ended) in enumerate(states):
        configs.stack[c, : len(stack)] = stack
        configs.stack_size[c] = len(stack)
        configs.buffer[c, : len(buffer)] = buffer[::-1]
        configs.buffer_size[c] = len(buffer)
        configs.heads[c, : len(heads)] = heads
        configs.ended[c] = ended
        configs.lengths[c] = n
    return configs


def to_state(configs: Configs, c: int) -> tuple:
    """Row c as a reference state."""
    stack = tuple(int(w) for w in configs.stack[c, : configs.stack_size[c]])
    buffer = tuple(int(w) for w in configs.buffer[c, : configs.buffer_size[c]][::-1])
    heads = tuple(int(h) for h in configs.heads[c, : configs.lengths[c] + 1])
    return stack, buffer, heads, bool(configs.ended[c])


def replay(system, trees, actions, offsets) -> np.ndarray:
    """Applies each sentence's oracle actions through the public API, all sentences at once."""
    lengths = [len(t) - 1 for t in trees]
    configs = system.initial(lengths)
    steps = np.diff(offsets)
    for k in range(int(steps.max(initial=0))):
        active = steps > k
        chosen = np.where(active, actions[np.minimum(offsets[:-1] + k, len(actions) - 1)], 0)
        system.apply(configs, chosen, active=active)
    return system.tree(configs)[0]
