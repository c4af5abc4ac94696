"""Beam training of the transition parser: the loss falls, searches use raw scores, init_from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, run_script, save_model, training_vocabs

import transitions
from biaffine import checkpoint
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import read_conllu
from biaffine.inference.settings import TransitionSearch
from biaffine.inference.transition import scorer, search
from biaffine.nn.encoder import Encoder
from biaffine.parsers import TransitionParser
from biaffine.training.compose import init_weights

ROOT = Path(__file__).parents[3]
TINY = ROOT / "tests" / "data" / "tiny.conllu"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def beam_parser(vocabs, system: str, seed: int = 0, **options) -> TransitionParser:
    torch.manual_seed(seed)
    encoder = Encoder(vocabs, **ENCODER)
    return TransitionParser(vocabs, encoder, system=system, **HEADS, **options)


@pytest.mark.parametrize(
    ("system", "options"),
    [
        ("arc_hybrid", {"beam_loss": {"size": 4}}),
        ("arc_eager", {"beam_loss": {"size": 4}}),
        # The combined model: the graph head's arc log-probabilities in the items' scores.
        ("arc_hybrid", {"beam_loss": {"size": 4, "graph_weight": 0.5}, "graph_loss_weight": 1.0}),
    ],
)
def test_beam_training_lowers_the_loss(sentences, system: str, options: dict) -> None:
    prepared, vocabs = training_vocabs(sentences, system)
    model = beam_parser(vocabs, system, **options).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        scores = model(batch)
        assert scores.beam_losses is not None
        assert scores.beam_losses.shape == (len(prepared),)
        assert (scores.beam_losses >= -1e-5).all()
        loss = model.loss(scores, batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
    # Out of training mode the model scores the static oracle as before (no beam).
    assert model.eval()(batch).beam_losses is None


def test_a_beam_trained_model_is_searched_on_its_raw_scores(sentences) -> None:
    prepared, vocabs = training_vocabs(sentences, "arc_eager")
    local = beam_parser(vocabs, "arc_eager").eval()
    trained = beam_parser(vocabs, "arc_eager", beam_loss={"size": 4}).eval()
    trained.load_state_dict(local.state_dict())
    with torch.no_grad():  # random raw scores whose sums rank paths unlike their log-softmax
        trained.transition_mlp[-1].bias.copy_(torch.tensor([3.0, -2.0, 1.0, 0.5]))
        local.transition_mlp[-1].bias.copy_(trained.transition_mlp[-1].bias)
    assert trained.global_scores
    assert not local.global_scores
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    lengths = batch.lengths.numpy()
    settings = TransitionSearch(search="beam", beam_size=3)
    with torch.no_grad():
        encoded = trained.encode(batch)
        found = search(trained, encoded, lengths, settings)
        options = {"beam_size": 3, "n_stack": 3, "n_buffer": 2}
        score = scorer(trained, encoded)
        raw = transitions.beam_search(trained.system, lengths, score, normalized=False, **options)
        normalized = transitions.beam_search(trained.system, lengths, score, **options)
        local_found = search(local, local.encode(batch), lengths, settings)
    np.testing.assert_array_equal(found.heads, raw.heads)
    np.testing.assert_array_equal(local_found.heads, normalized.heads)
    assert not np.array_equal(raw.scores, normalized.scores)


def test_bad_beam_options_are_refused(vocabs) -> None:
    with pytest.raises(ValueError, match="unknown keys"):
        beam_parser(vocabs, "arc_hybrid", beam_loss={"sise": 4})
    with pytest.raises(ValueError, match="integer >= 0"):
        beam_parser(vocabs, "arc_hybrid", beam_loss={"size": -1})
    with pytest.raises(ValueError, match="needs the graph head"):
        beam_parser(vocabs, "arc_hybrid", beam_loss={"size": 4, "graph_weight": 1.0})
    with pytest.raises(ValueError, match="static oracle"):
        beam_parser(vocabs, "arc_hybrid", beam_loss={"size": 4}, oracle="dynamic")


def test_init_from_takes_the_weights_of_a_model_of_the_same_config(sentences, tmp_path) -> None:
    _, vocabs = training_vocabs(sentences, "arc_hybrid")
    local = beam_parser(vocabs, "arc_hybrid", seed=1)
    path = save_model(tmp_path / "local.pt", local, vocabs)
    model = beam_parser(vocabs, "arc_hybrid", seed=2, beam_loss={"size": 8})
    where = f"trainer.init_from={path}"
    init_weights(model, checkpoint.load(path), where)
    for name, weight in local.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], weight, rtol=0, atol=0)
    other = beam_parser(vocabs, "arc_eager", beam_loss={"size": 8})
    with pytest.raises(ValueError, match=r"init_from=.*local\.pt: another model config: "):
        init_weights(other, checkpoint.load(path), where)


def test_train_py_beam_training_from_a_local_run_then_predict_py(tmp_path: Path) -> None:
    # The combined model: locally trained, then beam-trained from its best.pt, then parsed.
    train = [str(ROOT / "train.py"), "model=combined", "experiment=smoke", "trainer.threads=1"]
    run_script([*train, "trainer.max_epochs=1", f"hydra.run.dir={tmp_path / 'local'}"], tmp_path)
    beam = ["model.beam_loss.size=4", "model.beam_loss.graph_weight=0.5", "trainer.max_epochs=6"]
    beam += [f"trainer.init_from={tmp_path / 'local' / 'best.pt'}", "trainer.max_tokens=1000"]
    beam += ["optimizer.lr=0.01"]
    beam += ["search=beam", "search.beam_size=4", "search.graph_weight=0.5"]
    run_script([*train, *beam, f"hydra.run.dir={tmp_path / 'beam'}"], tmp_path)
    records = [json.loads(line) for line in (tmp_path / "beam" / "metrics.jsonl").open()]
    losses = [r["train_loss"] for r in records if r["event"] == "epoch"]
    assert losses[-1] < losses[0]  # one batch per epoch: the same sentences each step (seeded)
    saved = checkpoint.load(tmp_path / "beam" / "best.pt")
    assert saved.model_config["beam_loss"] == {"size": 4, "graph_weight": 0.5}
    predict = [str(ROOT / "predict.py"), f"checkpoint={tmp_path / 'beam' / 'best.pt'}"]
    options = ["search=beam", "search.beam_size=4", "search.graph_weight=0.5"]
    predicted = run_script([*predict, f"input={TINY}", *options], tmp_path)
    out = tmp_path / "out.conllu"
    out.write_text(predicted.stdout)
    parsed = list(read_conllu(out, require_trees=True))
    assert [s.forms for s in parsed] == [s.forms for s in read_conllu(TINY)]
