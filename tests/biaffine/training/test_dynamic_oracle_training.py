"""Training the transition parser with the dynamic oracle and error exploration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, training_vocabs, trees

import transitions
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import parse
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def dynamic(vocabs: Vocabs, system: str, exploration: float, seed: int = 0) -> TransitionParser:
    torch.manual_seed(seed)
    encoder = Encoder(vocabs, **ENCODER)
    options = {"oracle": "dynamic", "exploration": exploration}
    return TransitionParser(vocabs, encoder, system=system, **HEADS, **options)


@pytest.mark.parametrize("system", ["arc_hybrid", "arc_eager"])
def test_dynamic_oracle_training_overfits_the_tiny_treebank(sentences, system: str) -> None:
    prepared, vocabs = training_vocabs(sentences, system)
    model = dynamic(vocabs, system, exploration=0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    for _ in range(80):
        model.train()
        optimizer.zero_grad()
        model.loss(model(batch), batch).backward()
        optimizer.step()
    assert trees(parse(model, vocabs, sentences)) == trees(sentences)


@pytest.mark.parametrize("system", ["arc_hybrid", "arc_eager"])
@pytest.mark.parametrize("exploration", [0.0, 1.0])
def test_every_visited_configuration_has_a_zero_cost_target(
    sentences: list[Sentence], system: str, exploration: float
) -> None:
    prepared, vocabs = training_vocabs(sentences, system)
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    model = dynamic(vocabs, system, exploration).train()
    scores = model(batch)
    targets = scores.targets
    assert targets is not None
    assert targets.any(1).all()
    legal = torch.isfinite(scores.transition_scores)
    assert not (targets & ~legal).any()  # targets are legal
    picked = targets.gather(1, scores.actions.unsqueeze(1))
    assert picked.all()  # the recorded action is a target
    if system == "arc_hybrid":  # 2n transitions whatever the path
        assert len(targets) == 2 * int(batch.lengths.sum())
    loss = model.loss(scores, batch)
    assert torch.isfinite(loss)
    loss.backward()


def test_without_exploration_the_path_keeps_every_gold_arc(sentences) -> None:
    # Following only zero-cost transitions never loses a gold arc: every configuration's target
    # set is the static oracle's notion of correct, so the loss's targets include, at the first
    # configuration of each sentence, the static oracle's first transition.
    prepared, vocabs = training_vocabs(sentences, "arc_hybrid")
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    model = dynamic(vocabs, "arc_hybrid", exploration=0.0).train()
    scores = model(batch)
    gold = [np.array([-1, *s.heads]) for s in prepared]
    static = transitions.oracle_sequences(model.system, gold)
    first = static.actions[static.offsets[:-1]]
    assert scores.targets is not None
    assert scores.targets[np.arange(len(prepared)), first].all()  # step 0 rows: one per sentence


def test_dynamic_settings_are_checked(vocabs) -> None:
    encoder = Encoder(vocabs, **ENCODER)
    with pytest.raises(ValueError, match="swap has no dynamic oracle"):
        TransitionParser(vocabs, encoder, system="swap", oracle="dynamic", **HEADS)
    with pytest.raises(ValueError, match="oracle='gold'"):
        TransitionParser(vocabs, encoder, oracle="gold", **HEADS)
    with pytest.raises(ValueError, match="exploration=2"):
        TransitionParser(vocabs, encoder, oracle="dynamic", exploration=2.0, **HEADS)
