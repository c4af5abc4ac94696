"""Every oracle on every tree of every UD treebank under UD_ROOT: the replayed transitions rebuild
the gold tree with exactly one word on ROOT (projective systems: on the projective trees), and
lazy swap never uses more swaps than eager swap."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from helpers import replay

import decoding
from biaffine.conllu_io import read_conllu
from transitions import get_system, oracle_sequences
from transitions.trees import pad_trees

pytestmark = [pytest.mark.ud, pytest.mark.slow]

ORACLES = [
    ("arc_standard", {}),
    ("arc_eager", {}),
    ("arc_eager_unshift", {}),
    ("arc_hybrid", {}),
    ("swap", {"swap_oracle": "lazy"}),
    ("swap", {"swap_oracle": "eager"}),
]


@cache
def _trees(path: Path, projective_only: bool = False) -> list[np.ndarray]:
    if projective_only:
        return [t for t in _trees(path) if decoding.is_projective(t)]
    return [np.array([-1, *s.heads], dtype=np.int64) for s in read_conllu(path, require_trees=True)]


@pytest.mark.parametrize(("name", "options"), ORACLES)
def test_every_oracle_rebuilds_every_ud_tree_with_one_word_on_root(ud_root, name, options):
    system = get_system(name, **options)
    paths = sorted(ud_root.rglob("*.conllu"))
    assert paths, f"no .conllu files under {ud_root}"
    for path in paths:
        trees = _trees(path, system.projective)
        seq = oracle_sequences(system, trees)
        heads = replay(system, trees, seq.actions, seq.offsets)
        wrong = np.flatnonzero((heads != pad_trees(trees)[0]).any(axis=1))
        assert not wrong.size, f"{path.name} sentence {wrong[:1]}"
        assert ((heads[:, 1:] == 0).sum(axis=1) == 1).all(), path.name


def test_lazy_swap_uses_no_more_swaps_than_eager_swap_on_ud(ud_root):
    for path in sorted(ud_root.rglob("*.conllu")):
        trees = _trees(path)
        lazy = oracle_sequences(get_system("swap", swap_oracle="lazy"), trees).swaps
        eager = oracle_sequences(get_system("swap", swap_oracle="eager"), trees).swaps
        worse = np.flatnonzero(lazy > eager)
        assert not worse.size, f"{path.name} sentence {worse[:1]}: lazy {lazy[worse[:1]]}"
