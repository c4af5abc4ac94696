"""The transition parser: oracle training, lockstep greedy parsing, checkpoints, train.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import ENCODER, run_script, training_vocabs, trees, untrained

import transitions
from biaffine import checkpoint
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.inference import parse
from biaffine.inference.transition import deprojectivize_batch
from biaffine.parsers import PARSERS, TransitionParser, build_parser
from transitions.projective import projectivize

ROOT = Path(__file__).parents[3]
TINY = ROOT / "tests" / "data" / "tiny.conllu"
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def overfit(sentences: list[Sentence], system: str, steps: int = 60) -> tuple:
    """A parser trained on ``sentences`` until it parses them exactly (or ``steps`` run out)."""
    prepared, vocabs = training_vocabs(sentences, system)
    model = untrained(vocabs, system)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    for step in range(steps):
        model.train()
        optimizer.zero_grad()
        model.loss(model(batch), batch).backward()
        optimizer.step()
        if step % 10 == 9 and trees(parse(model, vocabs, sentences)) == trees(sentences):
            break
    return model, vocabs


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
def test_every_system_overfits_the_tiny_treebank(sentences, system: str) -> None:
    # Projective systems train on lifted trees: their output is right only if deprojectivizing
    # the parse restores tiny-2's non-projective arc and its label.
    model, vocabs = overfit(sentences, system)
    assert trees(parse(model, vocabs, sentences)) == trees(sentences)


def test_the_transition_loss_trains_on_every_oracle_transition(sentences) -> None:
    prepared, vocabs = training_vocabs(sentences, "arc_standard")
    model = untrained(vocabs, "arc_standard").train()
    scores = model(collate(encode(prepared, vocabs), range(len(prepared))))
    assert scores.transition_scores.shape == (2 * 35, 3)  # arc-standard: 2n transitions
    assert torch.isinf(scores.transition_scores).any()  # illegal transitions are masked
    picked = scores.transition_scores.gather(1, scores.actions.unsqueeze(1))
    assert torch.isfinite(picked).all()  # the oracle's transitions are legal


@pytest.mark.parametrize("system", ["arc_standard", "arc_eager_unshift", "swap"])
def test_an_untrained_parser_puts_one_word_on_root(sentences, vocabs, system: str) -> None:
    for seed in range(3):
        parsed = parse(untrained(vocabs, system, seed), vocabs, sentences)
        assert [s.heads.count(0) for s in parsed] == [1] * len(sentences)


@pytest.mark.parametrize("system", ["arc_hybrid", "arc_eager", "swap"])
def test_batch_parsing_equals_one_sentence_at_a_time(sentences, vocabs, system: str) -> None:
    model = untrained(vocabs, system)
    together = parse(model, vocabs, sentences, max_tokens=10_000)
    alone = [parse(model, vocabs, [sentence])[0] for sentence in sentences]
    assert trees(together) == trees(alone)
    assert len({tuple(s.heads) for s in together}) > 1  # not a trivial parse


def test_checkpoint_round_trip_parses_identically(sentences, tmp_path: Path) -> None:
    model, vocabs = overfit(sentences, "arc_eager", steps=20)
    model.eval()
    path = tmp_path / "model.pt"
    config = model.config()
    assert (config["system"], config["attach_leftovers"]) == ("arc_eager", True)
    state = model.state_dict()
    checkpoint.save(
        path, parser=model.kind, model_config=config, vocabs=vocabs, state_dict=state, metadata={}
    )
    loaded = checkpoint.build_model(checkpoint.load(path))
    assert type(loaded) is PARSERS["transition"] is TransitionParser
    assert loaded.config() == config
    assert trees(parse(loaded, vocabs, sentences)) == trees(parse(model, vocabs, sentences))


def test_options_of_another_system_are_refused(vocabs) -> None:
    encoder = {"encoder": {"kind": "bilstm", **ENCODER}}
    with pytest.raises(ValueError, match="swap_oracle is a swap option"):
        build_parser("transition", vocabs, {**encoder, "swap_oracle": "lazy"})
    with pytest.raises(ValueError, match="unknown transition system"):
        build_parser("transition", vocabs, {**encoder, "system": "arc_swift"})
    with pytest.raises(ValueError, match="one at least > 0"):
        build_parser("transition", vocabs, {**encoder, "n_stack": 0, "n_buffer": 0})


def test_prepare_training_lifts_for_projective_systems_only(sentences) -> None:
    nonprojective = sentences[1]
    assert nonprojective.heads[6] == 2  # hearing -> issue crosses "is scheduled"
    lifted = TransitionParser.prepare_training(sentences, {"system": "arc_hybrid"})
    assert (lifted[1].heads[6], lifted[1].deprels[6]) == (4, "nmod|nsubj:pass")
    assert lifted[0] is sentences[0]  # projective trees are left as they are
    assert TransitionParser.prepare_training(sentences, {"system": "swap"}) == sentences


def test_prepare_training_refuses_several_roots_for_a_single_root_system(sentences) -> None:
    two_roots = sentences[0].with_tree([2, 0, 0, 3], ["det", "root", "root", "punct"])
    with pytest.raises(ValueError, match=r"tiny.conllu:1: 2 words on ROOT, but arc_standard"):
        TransitionParser.prepare_training([two_roots], {"system": "arc_standard"})
    assert TransitionParser.prepare_training([two_roots], {"system": "arc_eager"}) == [two_roots]


def test_training_on_a_nonprojective_tree_without_lifting_is_a_clear_error(
    sentences, vocabs
) -> None:
    model = untrained(vocabs, "arc_standard").train()
    batch = collate(encode(sentences[:2], vocabs), [0, 1])
    with pytest.raises(ValueError, match=r"sentences \[0, 1\].*not projective.*prepare_training"):
        model(batch)


def test_deprojectivize_batch_restores_lifted_arcs_and_plain_labels(sentences) -> None:
    gold = sentences[1]
    lifted = projectivize([-1, *gold.heads], gold.deprels)
    names = sorted({*gold.deprels, *lifted.deprels})
    heads = np.array([[-1, *lifted.heads[1:], -1], [-1, 0, -1, -1, -1, -1, -1, -1, -1, -1, -1]])
    rels = np.full_like(heads, -1)
    rels[0, 1:-1] = [names.index(r) for r in lifted.deprels]
    rels[1, 1] = names.index("root")
    deprojectivize_batch(heads, rels, names)
    assert heads[0].tolist() == [-1, *gold.heads, -1]
    assert [names[r] for r in rels[0, 1:-1]] == gold.deprels
    assert (heads[1, 1], rels[1, 1]) == (0, names.index("root"))


def test_train_py_then_predict_py_with_a_combined_model(tmp_path: Path) -> None:
    # model=combined is arc-hybrid with a graph head: the transition parser's whole path, plus
    # the beam and the graph weight from predict.py's search group.
    run_dir = tmp_path / "run"
    overrides = ["model=combined", "experiment=smoke", "trainer.max_epochs=1"]
    run_script([str(ROOT / "train.py"), *overrides, f"hydra.run.dir={run_dir}"], tmp_path)
    saved = checkpoint.load(run_dir / "best.pt")
    assert (saved.parser, saved.model_config["system"]) == ("transition", "arc_hybrid")
    assert saved.model_config["graph_loss_weight"] == 1.0
    predict = [str(ROOT / "predict.py"), f"checkpoint={run_dir / 'best.pt'}", f"input={TINY}"]
    predicted = run_script([*predict, "eval=true"], tmp_path)
    assert "UAS" in predicted.stderr
    parsed = list(read_conllu(TINY))  # the same sentences back, with trees
    out = tmp_path / "out.conllu"
    out.write_text(predicted.stdout)
    assert [s.forms for s in read_conllu(out, require_trees=True)] == [s.forms for s in parsed]
    beam = ["search=beam", "search.beam_size=4", "search.graph_weight=0.5"]
    beamed = run_script([*predict, *beam], tmp_path)
    out.write_text(beamed.stdout)
    assert [s.heads.count(0) for s in read_conllu(out)] == [1] * len(parsed)
    # The beam experiment runs end to end on this checkpoint (its own tests are these).
    page = tmp_path / "beam_search.md"
    page.write_text("# old\n\n| old table |\n")
    experiment = [str(ROOT / "experiments" / "beam.py"), str(run_dir / "best.pt"), "--beams", "2"]
    options = ["--weights", "1.0", "--tune-beam", "2", "--results", str(tmp_path / "beam.json")]
    run_script([*experiment, *options, "--page", str(page), "--threads", "1"], tmp_path)
    rows = json.loads((tmp_path / "beam.json").read_text())
    names = {"greedy", "beam 2", "graph head mst", "graph head eisner", "combined 1", "combined 2"}
    assert set(rows[0]["settings"]) == names
    assert rows[0]["graph_weight"] == 1.0
    written = page.read_text()
    assert "| combined 2 |" in written
    assert "| old table |" not in written
    assert page.with_suffix(".png").stat().st_size > 0


def test_transition_scores_equal_the_mlp_on_concatenated_slot_states(sentences) -> None:
    """The per-slot precomputation and summed lookup equal W [x_1; ...; x_K] + b, gradients too."""
    prepared, vocabs = training_vocabs(sentences, "arc_hybrid")
    model = untrained(vocabs, "arc_hybrid")
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    generator = torch.Generator().manual_seed(0)
    n_configs, width = 40, model.n_stack + model.n_buffer
    rows = torch.randint(len(prepared), (n_configs,), generator=generator)
    limit = (batch.lengths[rows] + 1).unsqueeze(1)  # positions 0..n of each row's sentence
    positions = (torch.rand(n_configs, width, generator=generator) * limit).long()
    positions[torch.rand(n_configs, width, generator=generator) < 0.3] = -1  # empty slots

    fast = model.score_transitions(model.encode(batch), rows, positions)
    (fast_grad,) = torch.autograd.grad(fast.square().sum(), model.slot_weight)

    states = model.encoder(batch)  # [B, N+1, H]
    features = [
        torch.where((positions[:, k] >= 0).unsqueeze(1), states[rows, positions[:, k].clamp(min=0)],
                    model.empty)
        for k in range(width)
    ]  # fmt: skip
    weight = model.slot_weight.reshape(-1, model.slot_weight.shape[-1])  # [K * H, arc_mlp]
    plain = model.transition_mlp(torch.cat(features, 1) @ weight + model.slot_bias)
    (plain_grad,) = torch.autograd.grad(plain.square().sum(), model.slot_weight)
    torch.testing.assert_close(fast, plain, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(fast_grad, plain_grad, rtol=1e-4, atol=1e-5)
