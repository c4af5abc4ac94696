"""Decoder settings as a user gives them, refused or narrowed by the checkpoint's family."""

from __future__ import annotations

import pytest
from builders import TINY_PARSER, biaffine_parser, split_options

from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, Request, family_of
from biaffine.inference.settings import GraphDecoding, TransitionSearch
from biaffine.nn import Encoder
from biaffine.parsers import TransitionParser


@pytest.fixture(scope="module")
def graph(vocabs: Vocabs):
    return family_of(biaffine_parser(vocabs, **TINY_PARSER), vocabs)


@pytest.fixture(scope="module")
def transition(vocabs: Vocabs):
    encoder_options, parser_options = split_options(TINY_PARSER)
    model = TransitionParser(vocabs, Encoder(vocabs, **encoder_options), **parser_options)
    return family_of(model, vocabs)


@pytest.mark.parametrize("joint_labels", [True, False])
def test_each_family_reads_only_its_own_fields(graph, transition, joint_labels: bool) -> None:
    asked = DecoderSettings("eisner", False, "beam", 4, 0.5, joint_labels)
    assert graph.narrow(asked) == GraphDecoding("eisner", False, joint_labels)
    # A transition parser's labels follow its heads, whatever it is asked.
    assert transition.narrow(asked) == TransitionSearch(
        "beam", 4, 0.5, GraphDecoding("eisner", False, joint_labels=False)
    )


@pytest.mark.parametrize(
    ("settings", "asked"),
    [
        # graph_weight=0.0 was named too, a setting the user never gave
        (DecoderSettings(search="beam", beam_size=2), "search=beam"),
        (DecoderSettings(graph_weight=0.5), "graph_weight=0.5"),
        (DecoderSettings(search="beam", graph_weight=0.5), "search=beam with graph_weight=0.5"),
    ],
)
def test_a_graph_parser_refuses_a_search(graph, settings, asked: str) -> None:
    assert graph.refusal(Request(), settings) == (
        f"{asked} is for transition parsers; a graph parser decodes with decoder=mst|eisner|greedy"
    )


@pytest.mark.parametrize(
    ("settings", "what"),
    [
        (DecoderSettings(search="graph"), "search=graph"),
        (DecoderSettings(graph_weight=1.0), "graph_weight > 0"),
    ],
)
def test_a_transition_parser_without_a_graph_head_refuses_what_needs_one(
    transition, settings, what
) -> None:
    assert transition.refusal(Request(), settings).startswith(f"{what} needs a combined model")


@pytest.mark.parametrize(
    ("settings", "shown"),
    [
        (DecoderSettings("eisner"), "decoder=eisner"),
        (DecoderSettings(root_constraint=False), "decoder=mst, root_constraint=false"),
        (DecoderSettings("greedy", root_constraint=False), "decoder=greedy"),
    ],
)
def test_a_transition_parser_refuses_a_decoder_it_would_ignore(transition, settings, shown) -> None:
    # predict.py decoder=eisner parsed with the transition search, without a word.
    assert transition.refusal(Request(), settings) == (
        f"{shown} is for graph parsers; a transition parser reads it with search=graph alone "
        "(this one: search=greedy)"
    )


def test_training_keeps_the_settings_its_family_reads() -> None:
    asked = DecoderSettings("eisner", False, "beam", 4, 0.5, joint_labels=False)
    assert asked.read_by("graph") == DecoderSettings("eisner", False, joint_labels=False)
    assert asked.read_by("transition") == DecoderSettings(
        search="beam", beam_size=4, graph_weight=0.5, joint_labels=False
    )
    head = DecoderSettings("eisner", False, search="graph")  # a combined model's graph head
    assert head.read_by("transition") == head


def test_each_family_accepts_its_own_settings(graph, transition) -> None:
    assert graph.refusal(Request(kbest=2), DecoderSettings("eisner")) is None
    assert (
        transition.refusal(Request(probabilities=True), DecoderSettings(search="beam", beam_size=3))
        is None
    )
    assert graph.refusal(Request(kbest=2), DecoderSettings("greedy")).startswith("kbest needs")


def test_the_refusal_of_greedy_names_only_decoders_both_the_api_and_predict_accept(graph) -> None:
    # It suggested mst_multiroot, a name of predict.py's that the API refuses (its own is
    # decoder="mst" with root_constraint=False).
    why = graph.refusal(Request(fixed_heads=[[0]]), DecoderSettings("greedy"))
    assert why.startswith("fixed heads needs decoder=mst or eisner, not greedy")
    assert "mst_multiroot" not in why


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"beam_size": 4}, r"^beam_size=4: must be >= 1, and 1 unless search=beam$"),
        ({"graph_weight": 2.0}, r"^graph_weight=2\.0 with search=graph, which decodes the graph "),
    ],
)
def test_search_graph_refuses_what_it_would_not_read(options, message) -> None:
    # Both were taken and ignored, where search=greedy refused a beam size.
    with pytest.raises(ValueError, match=message):
        DecoderSettings(search="graph", **options)
    DecoderSettings(search="graph")
