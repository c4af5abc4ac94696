"""The transition family: a batch of configurations advanced in lockstep, then a label per arc.

Every sentence of a batch takes one transition per step, chosen greedily among the legal ones
with one MLP call for all unfinished sentences; finished sentences drop out. Labels come from
the label scorer on the finished tree's arcs, as in the graph family, and projective systems'
pseudo-projective labels are then decoded (:func:`transitions.projective.deprojectivize`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import torch

import transitions
from biaffine.data.batching import Batch
from biaffine.inference import graph
from biaffine.inference.settings import DecoderSettings
from biaffine.parsers.transition import TransitionParser
from transitions.projective import SEPARATOR, deprojectivize

__all__ = ["deprojectivize_batch", "greedy_search", "parse_batch", "warm_up"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

Scorer = Callable[[IntArray, IntArray], FloatArray]
"""``score(rows int64[C], positions int64[C, K]) -> float[C, A]``: transition scores."""


def greedy_search(
    system: transitions.TransitionSystem,
    lengths: npt.ArrayLike,
    score: Scorer,
    *,
    n_stack: int = 3,
    n_buffer: int = 2,
) -> IntArray:
    """Greedy parsing of a batch in lockstep: the best legal transition, one step at a time.

    Args:
        system: the transition system.
        lengths: int[B], words per sentence.
        score: transition scores of the unfinished configurations (their batch rows and
            feature positions); called once per step.
        n_stack: stack words in the feature positions.
        n_buffer: buffer words in the feature positions.

    Returns:
        heads int64[B, N+1]: ``-1`` at ROOT and at padding (with arc_eager's
        ``attach_leftovers`` off, also at words left headless).
    """
    configs = system.initial(np.asarray(lengths, dtype=np.int64))
    actions = np.zeros(len(configs), dtype=np.int64)
    active = ~system.terminal(configs)
    while active.any():
        rows = np.flatnonzero(active)
        positions = configs.positions(n_stack, n_buffer)[rows]
        scores = np.asarray(score(rows, positions), dtype=np.float64)
        legal = system.legal(configs)[rows]
        actions[rows] = np.where(legal, scores, -np.inf).argmax(1)
        system.apply(configs, actions, None, active)
        active = ~system.terminal(configs)
    heads, _ = system.tree(configs)
    return heads


def deprojectivize_batch(heads: IntArray, rels: IntArray, rel_names: Sequence[str]) -> None:
    """Decodes pseudo-projective labels in place (Nivre & Nilsson, 2005, "head" encoding).

    Sentences whose labels carry no lift are left alone. A restored word keeps the base part of
    its label, as its id in ``rel_names``; a base label missing from the vocabulary (a relation
    seen only on lifted arcs in training) keeps the encoded id.

    Args:
        heads: int64[B, N+1] projective trees, ``-1`` at ROOT and padding.
        rels: int64[B, N+1] label ids into ``rel_names``, ``-1`` where heads is -1.
        rel_names: the relation vocabulary.
    """
    encoded = np.array([SEPARATOR in name for name in rel_names] + [False])  # -1 reads False
    ids = {name: i for i, name in enumerate(rel_names)}
    for b in np.flatnonzero(encoded[rels].any(1)):
        n = int((heads[b] >= 0).sum())
        labels = [rel_names[r] for r in rels[b, 1 : n + 1]]
        tree, base = deprojectivize(heads[b, : n + 1], labels)
        heads[b, : n + 1] = tree
        for d, (label, old) in enumerate(zip(base, labels, strict=True), 1):
            rels[b, d] = ids.get(label, ids[old])


def warm_up(settings: Mapping[str, DecoderSettings]) -> None:
    """Load every system's compiled kernels now, on a two-word sentence, so no timed call pays.

    The settings are the graph decoders' and do not apply to the greedy transition search.
    """
    del settings
    for name in transitions.SYSTEM_NAMES:
        system = transitions.get_system(name)
        n_actions = len(system.transitions)
        greedy_search(system, [2], lambda rows, _, n=n_actions: np.zeros((len(rows), n)))
    deprojectivize_batch(np.array([[-1, 0, 1]]), np.array([[-1, 0, 1]]), ["root", "x|root"])


def parse_batch(
    model: TransitionParser,
    batch: Batch,
    decoders: Mapping[str, DecoderSettings],
    *,
    bf16: bool = False,
    root_label: int | None = None,
) -> dict[str, tuple[IntArray, IntArray, float]]:
    """Encode one batch once and parse it greedily; every setting name gets that result.

    The graph decoder settings do not apply to the transition family: its search is greedy
    (beam search, a later addition, will take settings of its own).

    Args:
        model: a transition parser in eval mode, on the batch's device.
        batch: the batch to parse.
        decoders: name -> settings (the names are kept, the settings ignored).
        bf16: run the network in bfloat16 (``torch.autocast``).
        root_label: id of UD's ``root`` relation, for :func:`graph.choose_labels`'s rule.

    Returns:
        name -> (heads, rels, seconds): int64[B, N+1] each (``-1`` at ROOT and padding), and
        the seconds spent outside the encoder (the search with its MLP calls, labels and
        deprojectivization).
    """
    device = batch.words.device
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        encoded = model.encode(batch, tag=False)
        started = time.perf_counter()

        def score(rows: IntArray, positions: IntArray) -> FloatArray:
            rows_t = torch.from_numpy(rows).to(device)
            scores = model.score_transitions(
                encoded, rows_t, torch.from_numpy(positions).to(device)
            )
            return scores.float().cpu().numpy()

        options = {"n_stack": model.n_stack, "n_buffer": model.n_buffer}
        heads = greedy_search(model.system, batch.lengths.cpu().numpy(), score, **options)
        rels = graph.choose_labels(model, encoded, heads, root_label=root_label)  # type: ignore[arg-type]
    if model.system.projective:
        deprojectivize_batch(heads, rels, model.rel_names)
    seconds = time.perf_counter() - started
    return {name: (heads, rels, seconds) for name in decoders}
