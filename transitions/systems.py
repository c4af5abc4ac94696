"""The transition systems behind one interface, and a registry by name.

Every system steps a batch of :class:`~transitions.configs.Configs` with numpy in, numpy out:

    system = transitions.get_system("arc_hybrid")
    configs = system.initial(lengths)                # int[C] -> C initial configurations
    while not (done := system.terminal(configs)).all():
        mask = system.legal(configs)                 # bool[C, T]; T = len(system.transitions)
        actions = choose(configs.positions(), mask)  # int[C], ids into system.transitions
        arcs = system.arcs(configs, actions, ~done)  # int64[C, 2]: (head, dependent) or -1
        labels = label_arcs(arcs)                    # int[C], the label scorer's choice
        system.apply(configs, actions, labels, ~done)
    heads, labels = system.tree(configs)             # int64[C, N+1], heads[:, 0] == -1

Terminal rows take no transition: ``active`` (bool[C]) False skips them, whatever their action
id. A label scorer learns which arc a transition creates from :meth:`TransitionSystem.arcs`
before applying it; an arc that no transition creates (arc-eager's leftovers, Unshift's last
word) gets label -1 in :meth:`TransitionSystem.tree`, for the caller to choose (UD: ``root``).
Beam search copies rows with :meth:`Configs.copy_rows` or :meth:`Configs.take`. Greedy search
steps its live rows alone with :meth:`TransitionSystem.observe` (legal actions and positions)
and :meth:`TransitionSystem.advance` (apply, then which rows are still live).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from decoding.checks import as_array, check_count, check_int64
from tiered import tiered

from . import _kernels as k
from .configs import BoolArray, Configs, IntArray, check_rows


@dataclass(frozen=True, slots=True)
class _Spec:
    code: int
    transitions: tuple[str, ...]
    table: tuple[int, ...]  # global transition id of each action
    single_root: bool  # every terminal tree has exactly one word on ROOT
    projective: bool  # builds (and its oracle takes) projective trees only
    dynamic: bool  # has a dynamic oracle


_ARCS = ("SHIFT", "LEFT-ARC", "RIGHT-ARC")
_ARC_IDS = (k.SHIFT, k.LEFT_ARC, k.RIGHT_ARC)
SPECS = {
    "arc_standard": _Spec(k.ARC_STANDARD, _ARCS, _ARC_IDS, True, True, False),
    "arc_eager": _Spec(k.ARC_EAGER, (*_ARCS, "REDUCE"), (*_ARC_IDS, k.REDUCE), False, True, True),
    "arc_eager_unshift": _Spec(
        k.ARC_EAGER_UNSHIFT,
        (*_ARCS, "REDUCE", "UNSHIFT"),
        (*_ARC_IDS, k.REDUCE, k.UNSHIFT),
        True,
        True,
        False,
    ),
    "arc_hybrid": _Spec(k.ARC_HYBRID, _ARCS, _ARC_IDS, True, True, True),
    "swap": _Spec(k.SWAP_SYSTEM, (*_ARCS, "SWAP"), (*_ARC_IDS, k.SWAP), True, False, False),
}
SWAP_ORACLES = ("lazy", "eager")


class TransitionSystem:
    """One transition system over batches of configurations.

    Systems (positions as everywhere: 0 is ROOT):

    - ``arc_standard`` (Nivre 2004): ROOT at the stack bottom; RIGHT-ARC from ROOT only as the
      last transition, so exactly one word on ROOT and exactly 2n transitions.
    - ``arc_eager`` (Nivre 2003; Nivre & Scholz 2004): ROOT at the stack bottom, terminal when
      the buffer is empty. ``attach_leftovers`` (MaltParser's heuristic, default on) puts the
      headless words left on the stack on ROOT, so a tree can have several words on ROOT;
      without it they keep head -1 (a fragmented parse, to be measured, not used).
    - ``arc_eager_unshift`` (Nivre & Fernandez-Gonzalez 2014, Figure 3): no dummy ROOT on the
      stack; UNSHIFT puts a headless s0 back when the buffer is empty; the one word left is the
      root: exactly one word on ROOT by construction, fewer than 4n transitions. SHIFT is
      allowed before the end of input and, after it, onto an empty stack only: LEFT-ARC from an
      unshifted word can pop the last stack word, and without that SHIFT the configuration
      ([], [i], A, true) would be a dead end (i then becomes the root). With it, the terminal
      trees are exactly the single-rooted projective trees (checked exhaustively, n <= 5), as
      they are when that LEFT-ARC is forbidden instead; this way the classifier keeps it.
      With ``attach_leftovers`` it is arc-eager without a dummy ROOT as Nivre & Scholz (2004)
      ran it: the same configurations and transitions up to the end of input, where it stops
      and puts the headless words left on the stack on ROOT. One classifier then parses with
      the heuristic or with Unshift, as Nivre & Fernandez-Gonzalez (2014) compare them.
    - ``arc_hybrid`` (Kuhlmann, Gomez-Rodriguez & Satta 2011): ROOT at the stack bottom with the
      arc-standard single-root rule rather than at the buffer end (Ballesteros & Nivre 2013):
      it keeps exactly 2n transitions (beam items stay comparable), the features of
      arc-standard, and the Goldberg & Nivre (2013) costs stay exact (checked by brute force).
    - ``swap`` (Nivre 2009): arc-standard plus SWAP, complete for non-projective trees; static
      oracle ``swap_oracle`` = "lazy" (Nivre, Kuhlmann & Hall 2009, default) or "eager".

    Attributes:
        name: registry name.
        transitions: action names; action ids index this tuple.
        single_root: every terminal tree has exactly one word on ROOT.
        projective: the system builds projective trees only (its oracle needs them).
        dynamic: :func:`transitions.costs` works for this system.
        attach_leftovers: the end-of-input heuristic of arc_eager, and of arc_eager_unshift in
            place of UNSHIFT (False for the other systems).
        lazy: swap's static oracle is the lazy one.
        code, table: the kernels' system code and the global transition id of each action.
    """

    def __init__(
        self, name: str, *, attach_leftovers: bool | None = None, swap_oracle: str | None = None
    ) -> None:
        """See :func:`get_system` for the arguments."""
        if not isinstance(name, str) or name not in SPECS:
            raise ValueError(f"unknown transition system {name!r}; known: {sorted(SPECS)}")
        if attach_leftovers is not None and name not in ("arc_eager", "arc_eager_unshift"):
            raise ValueError(
                f"attach_leftovers is an option of arc_eager and arc_eager_unshift, not of {name}"
            )
        if swap_oracle is not None and name != "swap":
            raise ValueError(f"swap_oracle is a swap option, not one of {name}")
        if swap_oracle is not None and swap_oracle not in SWAP_ORACLES:
            raise ValueError(f"swap_oracle must be one of {SWAP_ORACLES}, got {swap_oracle!r}")
        spec = SPECS[name]
        self.name = name
        self.transitions = spec.transitions
        self.single_root = spec.single_root
        self.projective = spec.projective
        self.dynamic = spec.dynamic
        default = name == "arc_eager"
        if attach_leftovers is not None and not isinstance(attach_leftovers, (bool, np.bool_)):
            # bool() would read "no" as True
            raise ValueError(
                f"attach_leftovers must be True, False or None, got {attach_leftovers!r}"
            )
        self.attach_leftovers = default if attach_leftovers is None else bool(attach_leftovers)
        self.lazy = (swap_oracle or "lazy") == "lazy"
        self.code = spec.code
        if name == "arc_eager_unshift" and self.attach_leftovers:
            self.code = k.ARC_EAGER_NO_ROOT  # stops at the end of input instead of unshifting
            self.single_root = False
        self.table = np.array(spec.table, dtype=np.int64)

    def __repr__(self) -> str:
        """The name and the options, as :func:`get_system` takes them."""
        options = ""
        if self.name == "arc_eager" or (self.name == "arc_eager_unshift" and self.attach_leftovers):
            options = f", attach_leftovers={self.attach_leftovers}"
        if self.name == "swap":
            options = f", swap_oracle={'lazy' if self.lazy else 'eager'!r}"
        return f"TransitionSystem({self.name!r}{options})"

    def initial(self, lengths: npt.ArrayLike, max_words: int | None = None) -> Configs:
        """Initial configurations.

        Args:
            lengths: int[C], words per sentence (each >= 1).
            max_words: N, the row width; defaults to ``max(lengths)``.

        Returns:
            C configurations.
        """
        lengths = as_lengths(lengths)
        width = int(lengths.max(initial=1)) if max_words is None else max_words
        check_count(width, "max_words", 1)  # 3.5 was a TypeError, -1 an empty batch of width 0
        bad = np.flatnonzero((lengths < 1) | (lengths > width))
        if bad.size:
            raise ValueError(f"sentence {bad[0]}: length {lengths[bad[0]]} outside [1, {width}]")
        configs = Configs.empty(lengths.shape[0], width)
        configs.lengths[:] = lengths
        tiered(k.init_batch)(self.code, configs.lengths, *configs.kernel_state())
        return configs

    def legal(self, configs: Configs) -> BoolArray:
        """bool[C, T]: which actions are legal in each configuration (none in a terminal one)."""
        out = np.empty((len(configs), self.table.shape[0]), dtype=np.bool_)
        c = configs
        state = (c.stack, c.stack_size, c.buffer, c.buffer_size, c.heads, c.ended)
        tiered(k.legal_batch)(self.code, self.table, *state, out)
        return out

    def observe(
        self, configs: Configs, rows: IntArray, n_stack: int = 3, n_buffer: int = 2
    ) -> tuple[BoolArray, IntArray]:
        """:meth:`legal` and :meth:`Configs.positions` of the configurations ``rows`` alone.

        Args:
            configs: C configurations.
            rows: int64[R], the rows to read.
            n_stack: stack slots of the positions.
            n_buffer: buffer slots of the positions.

        Returns:
            bool[R, T] and int64[R, n_stack + n_buffer], row i for configuration ``rows[i]``.
        """
        n_stack, n_buffer = check_count(n_stack, "n_stack"), check_count(n_buffer, "n_buffer")
        rows = check_rows(configs, rows)
        legal = np.empty((rows.shape[0], self.table.shape[0]), dtype=np.bool_)
        positions = np.empty((rows.shape[0], n_stack + n_buffer), dtype=np.int64)
        observe = tiered(k.observe_rows)
        observe(self.code, self.table, n_stack, rows, configs.kernel_state(), legal, positions)
        return legal, positions

    def advance(self, configs: Configs, rows: IntArray, actions: IntArray) -> BoolArray:
        """Applies ``actions[i]`` to configuration ``rows[i]`` in place, without labels.

        The search's :meth:`apply`, for the live rows alone: each action's legality is
        checked in the kernel that applies it, for its one action (a mask the caller kept
        from before an earlier step was trusted, and let the kernel write outside the stack).

        Args:
            configs: C configurations.
            rows: int64[R], distinct rows, none terminal.
            actions: int64[R], ids into :attr:`transitions`.

        Returns:
            bool[R], which of ``rows`` are not terminal afterwards.

        Raises:
            ValueError: a row outside the batch or given twice, ``actions`` not shaped like
                ``rows``, an action id the system lacks, or an action that is illegal in its
                configuration (NaN scores pick one); nothing is changed then.
        """
        rows = check_rows(configs, rows)
        actions = self._check_actions(rows, actions)
        live = np.empty(rows.shape[0], dtype=np.bool_)
        seen = np.zeros(len(configs), dtype=np.bool_)
        state = configs.kernel_state()
        advance = tiered(k.advance_rows)
        failed = advance(self.code, self.table, rows, actions, state, configs.steps, live, seen)
        if failed >= rows.shape[0]:
            i = failed - rows.shape[0]
            raise ValueError(f"rows[{i}]={rows[i]}: a configuration given twice in one step")
        if failed >= 0:
            c = int(rows[failed])
            raise ValueError(
                f"configuration {c}: {self.transitions[actions[failed]]} is illegal in "
                f"{configs.describe(c)} ({self.name})"
            )
        return live

    def _check_actions(self, rows: IntArray, actions: npt.ArrayLike) -> IntArray:
        """``actions`` as int64[R], checked against ``rows`` [R] and the system's action ids."""
        array = as_array(actions, "actions")
        n_actions = self.table.shape[0]
        if array.shape != rows.shape or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"actions must be int[{rows.shape[0]}], got {array.dtype} {array.shape}"
            )
        check_int64(array, "actions")
        # The kernel indexes the action table with them unchecked (a negative id wraps around).
        unknown = np.flatnonzero((array < 0) | (array >= n_actions))
        if unknown.size:
            i = int(unknown[0])
            raise ValueError(
                f"configuration {rows[i]}: action {array[i]} is not an id of {self.name}"
            )
        return array.astype(np.int64, copy=False)

    def terminal(self, configs: Configs) -> BoolArray:
        """bool[C]: which configurations are terminal."""
        out = np.empty(len(configs), dtype=np.bool_)
        tiered(k.terminal_batch)(
            self.code, configs.stack_size, configs.buffer_size, configs.ended, out
        )
        return out

    def arcs(
        self, configs: Configs, actions: npt.ArrayLike, active: npt.ArrayLike | None = None
    ) -> IntArray:
        """int64[C, 2]: the (head, dependent) each legal action would create, else (-1, -1).

        Rows where ``active`` (bool[C]) is False get (-1, -1).
        """
        active = self._active(configs, active)
        actions = self._check(configs, actions, active)
        out = np.empty((len(configs), 2), dtype=np.int64)
        c = configs
        tiered(k.arcs_batch)(
            self.code, self.table, actions, c.stack, c.stack_size, c.buffer, c.buffer_size, out
        )
        out[~active] = -1
        return out

    def candidate_arcs(self, configs: Configs, legal: BoolArray | None = None) -> IntArray:
        """int64[C, T, 2]: the (head, dependent) each legal action would create, else (-1, -1).

        One call for every action of every configuration (a beam scores all expansions).

        Args:
            configs: C configurations.
            legal: bool[C, T], the actions to consider (a beam's live expansions); those it
                leaves out, and actions the configuration does not allow, get -1s. None: all.

        Raises:
            ValueError: ``legal`` not bool[C, T].
        """
        shape = (len(configs), self.table.shape[0])
        legal = np.ones(shape, dtype=np.bool_) if legal is None else as_array(legal, "legal")
        if legal.shape != shape or legal.dtype != np.bool_:
            raise ValueError(f"legal must be bool{list(shape)}, got {legal.dtype} {legal.shape}")
        out = np.empty((*shape, 2), dtype=np.int64)
        tiered(k.arcs_of_all_batch)(self.code, self.table, legal, configs.kernel_state(), out)
        return out

    def apply(
        self,
        configs: Configs,
        actions: npt.ArrayLike,
        labels: npt.ArrayLike | None = None,
        active: npt.ArrayLike | None = None,
    ) -> None:
        """Applies ``actions[c]`` to configuration c in place.

        Args:
            configs: C configurations.
            actions: int[C], ids into :attr:`transitions`.
            labels: int[C], the label of the arc each action creates (ignored for the others);
                -1 for every arc when omitted.
            active: bool[C]; rows where it is False are left alone (terminal rows of a batch).

        Raises:
            ValueError: ``actions`` or ``labels`` not int[C], or an action that is unknown or
                illegal in its configuration (shown in the message).
        """
        active = self._active(configs, active)
        actions = self._check(configs, actions, active)
        arc_labels = np.full(len(configs), -1, dtype=np.int64)
        if labels is not None:
            given = as_array(labels, "labels")
            # Checked, not cast: a float label id (1.7) would be truncated into another label.
            if given.shape != (len(configs),) or not np.issubdtype(given.dtype, np.integer):
                raise ValueError(
                    f"labels must be int[{len(configs)}], got {given.dtype} {given.shape}"
                )
            check_int64(given, "labels")  # 2**64 - 1 became -1, "no label"
            arc_labels[:] = given
        tiered(k.apply_batch)(
            self.code,
            self.table,
            actions,
            arc_labels,
            active,
            configs.kernel_state(),
            configs.steps,
        )

    def tree(self, configs: Configs) -> tuple[IntArray, IntArray]:
        """The trees of terminal configurations.

        Returns:
            (heads, labels), int64[C, N+1]; ``heads[:, 0] == -1``, -1 at padding. Labels of arcs
            that no transition created (leftovers on ROOT, Unshift's root) are -1.

        Raises:
            ValueError: a configuration is not terminal.
        """
        done = self.terminal(configs)
        if not done.all():
            row = int(np.flatnonzero(~done)[0])
            raise ValueError(f"configuration {row} is not terminal: {configs.describe(row)}")
        heads, labels = configs.heads.copy(), configs.labels.copy()
        if self.name == "arc_eager_unshift" or self.attach_leftovers:
            width = configs.stack.shape[1]
            rows, slots = np.nonzero(np.arange(width) < configs.stack_size[:, None])  # [K]
            words = configs.stack[rows, slots]
            left = (words > 0) & (heads[rows, words] == -1)  # headless words left on the stack
            heads[rows[left], words[left]] = 0
        return heads, labels

    def _active(self, configs: Configs, active: npt.ArrayLike | None) -> BoolArray:
        if active is None:
            return np.ones(len(configs), dtype=np.bool_)
        array = as_array(active, "active")
        if array.shape != (len(configs),) or array.dtype != np.bool_:
            raise ValueError(
                f"active must be bool[{len(configs)}], got {array.dtype} {array.shape}"
            )
        return array

    def _check(self, configs: Configs, actions: npt.ArrayLike, active: BoolArray) -> IntArray:
        array = as_array(actions, "actions")
        if array.shape != (len(configs),) or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(
                f"actions must be int[{len(configs)}], got {array.dtype} {array.shape}"
            )
        check_int64(array, "actions")
        array = np.where(active, array, 0).astype(np.int64)
        unknown = np.flatnonzero((array < 0) | (array >= self.table.shape[0]))
        if unknown.size:
            c = int(unknown[0])
            raise ValueError(f"configuration {c}: action {array[c]} is not an id of {self.name}")
        ok = self.legal(configs)[np.arange(len(configs)), array]
        bad = np.flatnonzero(active & ~ok)
        if bad.size:
            c = int(bad[0])
            raise ValueError(
                f"configuration {c}: {self.transitions[array[c]]} is illegal in "
                f"{configs.describe(c)} ({self.name})"
            )
        return array


def as_lengths(lengths: npt.ArrayLike) -> IntArray:
    """``lengths`` as int64[C]; ValueError unless a 1-D array of integers (or empty).

    Refuses floats rather than rounding them: 2.7 words is a caller's bug, not 2 words.
    """
    array = as_array(lengths, "lengths")
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"lengths must be int[C], got {array.dtype} {array.shape}")
    check_int64(array, "lengths")
    return array.astype(np.int64, copy=False)


SYSTEM_NAMES = tuple(SPECS)


def get_system(
    name: str, *, attach_leftovers: bool | None = None, swap_oracle: str | None = None
) -> TransitionSystem:
    """The system registered as ``name`` (one of :data:`SYSTEM_NAMES`), with its options.

    Args:
        name: "arc_standard", "arc_eager", "arc_eager_unshift", "arc_hybrid" or "swap".
        attach_leftovers: arc_eager: the end-of-input heuristic (default True);
            arc_eager_unshift: stop at the end of input and use it instead of UNSHIFT (default
            False).
        swap_oracle: swap only: "lazy" (default) or "eager".
    """
    return TransitionSystem(name, attach_leftovers=attach_leftovers, swap_oracle=swap_oracle)
