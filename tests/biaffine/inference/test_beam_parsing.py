"""Beam search and the combined model through the torch side: settings, losses, exactness."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, training_vocabs, trees, untrained

import decoding
import transitions
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.inference.transition import search
from biaffine.nn import Encoder
from biaffine.parsers import BiaffineParser, TransitionParser
from biaffine.predicting import quantized

pytestmark = pytest.mark.usefixtures("one_torch_thread")

BEAM_1 = DecoderSettings(search="beam", beam_size=1)
GRAPH = DecoderSettings("eisner", search="graph")


def combined(vocabs: Vocabs, system: str = "arc_hybrid", seed: int = 0) -> TransitionParser:
    torch.manual_seed(seed)
    encoder = Encoder(vocabs, **ENCODER)
    options = {"graph_loss_weight": 1.0, "graph_mlp": 16}
    return TransitionParser(vocabs, encoder, system=system, **HEADS, **options).eval()


@pytest.mark.parametrize("system", transitions.SYSTEM_NAMES)
def test_a_beam_of_one_parses_as_greedy(sentences, vocabs, system: str) -> None:
    for seed in range(2):
        model = untrained(vocabs, system, seed)
        greedy = parse(model, vocabs, sentences)
        assert trees(parse(model, vocabs, sentences, BEAM_1)) == trees(greedy)


@pytest.mark.parametrize("system", ["arc_standard", "arc_eager_unshift", "swap", "arc_hybrid"])
def test_beam_trees_have_one_word_on_root(sentences, vocabs, system: str) -> None:
    model = combined(vocabs, system)
    for settings in (
        DecoderSettings(search="beam", beam_size=4),
        DecoderSettings(search="beam", beam_size=4, graph_weight=1.0),
    ):
        parsed = parse(model, vocabs, sentences, settings)
        assert [s.heads.count(0) for s in parsed] == [1] * len(sentences)


def test_the_combined_loss_adds_the_graph_heads_cross_entropy(sentences) -> None:
    prepared, vocabs = training_vocabs(sentences, "arc_hybrid")
    batch = collate(encode(prepared, vocabs), range(len(prepared)))
    model = combined(vocabs)
    scores = model(batch)
    arc_scores = scores.encoded.arc_scores
    assert arc_scores is not None
    assert arc_scores.shape == batch.heads.shape + batch.heads.shape[1:]
    head_loss = torch.nn.functional.cross_entropy(arc_scores[batch.mask], batch.heads[batch.mask])
    model._config["graph_loss_weight"] = 3.0
    with_three = model.loss(scores, batch)
    model._config["graph_loss_weight"] = 1.0
    difference = (with_three - model.loss(scores, batch)).item()
    assert difference == pytest.approx(2 * head_loss.item(), rel=1e-5)


def test_a_heavy_graph_weight_finds_the_best_projective_tree_of_the_graph_head(vocabs) -> None:
    # With the transition scores outweighed and a beam too wide to prune, the search maximizes
    # the graph head's log-probabilities over the trees arc-hybrid builds (single-rooted and
    # projective), which is what Eisner's algorithm with the root constraint finds.
    forms = [["The", "cat", "sat", "on", "the", "mat", "."], ["It", "ran"], ["Dogs", "bark", "."]]
    sentences = [Sentence.from_forms(words) for words in forms]
    model = combined(vocabs, seed=3)
    with torch.no_grad():  # an untrained head scores arcs almost alike: spread them
        model.graph.attn.weight.normal_(std=3.0)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    with torch.inference_mode():
        encoded = model.encode(batch, tag=False)
        lengths = batch.lengths.numpy()
        heavy = DecoderSettings(search="beam", beam_size=4096, graph_weight=1e4)
        found = search(model, encoded, lengths, heavy).heads
        log_probs = torch.log_softmax(encoded.arc_scores, -1).numpy()
    best = decoding.eisner(log_probs, lengths)
    np.testing.assert_array_equal(found, best)


def test_search_graph_decodes_the_graph_head_alone(sentences, vocabs) -> None:
    model = combined(vocabs, system="swap", seed=1)  # swap: no pseudo-projective labels
    with torch.no_grad():  # an untrained head scores arcs almost alike: spread them
        model.graph.attn.weight.normal_(std=3.0)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    with torch.inference_mode():
        log_probs = torch.log_softmax(model.encode(batch, tag=False).arc_scores, -1)
    best = decoding.eisner(log_probs.double().numpy(), batch.lengths.numpy())
    parsed = parse(model, vocabs, sentences, GRAPH)
    for sentence, row in zip(parsed, best, strict=True):
        assert sentence.heads == row[1 : len(sentence) + 1].tolist()


def test_settings_that_do_not_fit_the_parser_are_refused(sentences, vocabs) -> None:
    plain = untrained(vocabs, "arc_hybrid")
    for settings, asked in ((DecoderSettings(graph_weight=1.0), "graph_weight"), (GRAPH, "search")):
        with pytest.raises(ValueError, match=f"{asked}.* needs a combined model"):
            parse(plain, vocabs, sentences, settings)
    for bad, message in (
        ({"search": "viterbi"}, "search='viterbi'"),
        ({"search": "greedy", "beam_size": 4}, "beam_size=4"),
        ({"search": "beam", "beam_size": 0}, "beam_size=0"),
        ({"graph_weight": -1.0}, "graph_weight=-1.0"),
        ({"graph_weight": float("nan")}, "graph_weight=nan"),
    ):
        with pytest.raises(ValueError, match=message):
            DecoderSettings(**bad)


def test_a_graph_parser_refuses_a_beam(sentences, vocabs) -> None:
    model = BiaffineParser(vocabs, Encoder(vocabs, **ENCODER), **HEADS).eval()
    with pytest.raises(ValueError, match="for transition parsers"):
        parse(model, vocabs, sentences, DecoderSettings(search="beam", beam_size=4))


def test_from_config_reads_both_groups() -> None:
    settings = DecoderSettings.from_config(
        {"algorithm": "eisner", "root_constraint": True},
        {"name": "beam", "beam_size": 16, "graph_weight": 0.5},
    )
    assert settings == DecoderSettings("eisner", True, "beam", 16, 0.5)
    assert DecoderSettings.from_config({"algorithm": "mst", "root_constraint": False}) == (
        DecoderSettings("mst", False)
    )


@pytest.mark.parametrize("settings", [DecoderSettings(), DecoderSettings(search="beam")])
def test_a_parser_with_int8_weights_searches_on_its_dequantized_output_layer(
    sentences, vocabs, settings: DecoderSettings
) -> None:
    """predict.py int8=true quantizes every Linear, the transition MLP's output layer too."""
    model = quantized(untrained(vocabs, "arc_hybrid", 0))
    output = model.transition_mlp[2]
    layers = model.slot_mlp()
    np.testing.assert_array_equal(layers["weight"], output.weight().dequantize().numpy())
    np.testing.assert_array_equal(layers["out_bias"], output.bias().detach().numpy())
    parsed = parse(model, vocabs, sentences, settings)
    assert [s.heads.count(0) for s in parsed] == [1] * len(sentences)


@pytest.mark.parametrize("settings", [DecoderSettings(), DecoderSettings(search="beam")])
def test_the_search_calls_no_torch_module_per_step(
    sentences, vocabs, settings: DecoderSettings, monkeypatch
) -> None:
    """The per-step MLP runs on the model's numpy arrays (transitions.SlotScorer): no torch call
    per step to wait for a descheduled torch thread beside busy processes."""
    model = untrained(vocabs, "arc_hybrid", 0)
    expected = trees(parse(model, vocabs, sentences, settings))

    def refused(*args: torch.Tensor) -> torch.Tensor:
        raise AssertionError("the search called the torch MLP")

    monkeypatch.setattr(model, "score_slots", refused)
    monkeypatch.setattr(model, "score_transitions", refused)
    assert trees(parse(model, vocabs, sentences, settings)) == expected
