"""A transition parser paired with a separately trained graph parser at parsing time."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, run_script, untrained

import decoding
from biaffine.api import Parser
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocab
from biaffine.inference import DecoderSettings, parse
from biaffine.inference.transition import search
from biaffine.nn import Encoder
from biaffine.parsers import BiaffineParser
from biaffine.parsers.transition import check_partner

pytestmark = pytest.mark.usefixtures("one_torch_thread")

ROOT = Path(__file__).parents[3]
GOLDEN = ROOT / "tests" / "data" / "golden"
PAIRED = DecoderSettings(search="beam", beam_size=4, graph_weight=1.0)


def graph_parser(vocabs, seed: int = 0) -> BiaffineParser:
    """An untrained graph parser whose arc scores are spread (an untrained head scores alike)."""
    torch.manual_seed(seed)
    model = BiaffineParser(vocabs, Encoder(vocabs, **ENCODER), **HEADS).eval()
    with torch.no_grad():
        model.arcs.attn.weight.normal_(std=3.0)
    return model


def test_a_heavy_weight_finds_the_partners_best_projective_tree(vocabs) -> None:
    # The transition parser has no graph head: every arc score the search sees is the
    # partner's. Outweighing the transitions with a beam too wide to prune, the search
    # maximizes the partner's log-probabilities over arc-hybrid's trees (single-rooted,
    # projective): Eisner's algorithm with the root constraint on the partner's scores.
    forms = [["The", "cat", "sat", "on", "the", "mat", "."], ["It", "ran"], ["Dogs", "bark", "."]]
    sentences = [Sentence.from_forms(words) for words in forms]
    model, partner = untrained(vocabs, "arc_hybrid", 3), graph_parser(vocabs, 4)
    model.pair(partner)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    heavy = DecoderSettings(search="beam", beam_size=4096, graph_weight=1e4)
    with torch.inference_mode():
        encoded = model.encode(batch, tag=False)
        lengths = batch.lengths.numpy()
        found = search(model, encoded, lengths, heavy.transition_search()).heads
        log_probs = torch.log_softmax(partner(batch, tag=False).arc_scores, -1).numpy()
    np.testing.assert_array_equal(found, decoding.eisner(log_probs, lengths))


def test_a_paired_search_differs_from_the_unpaired_one_and_unpairing_restores_it(
    sentences, vocabs
) -> None:
    model = untrained(vocabs, "arc_hybrid", 1)
    alone = parse(model, vocabs, sentences, DecoderSettings(search="beam", beam_size=4))
    model.pair(graph_parser(vocabs, 2))
    heavy = DecoderSettings(search="beam", beam_size=4, graph_weight=100.0)
    paired = parse(model, vocabs, sentences, heavy)
    assert [s.heads for s in paired] != [s.heads for s in alone]
    model.pair(None)
    with pytest.raises(ValueError, match=r"graph_weight > 0 needs .*partner=PATH"):
        parse(model, vocabs, sentences, PAIRED)


def test_partners_that_read_batches_differently_are_refused(vocabs) -> None:
    with pytest.raises(ValueError, match="needs a graph parser's checkpoint, not a transition"):
        check_partner(untrained(vocabs, "arc_hybrid"), vocabs, vocabs)
    longer = Vocab([*vocabs.words.itos, "unseen"])
    other = dataclasses.replace(vocabs, words=longer)
    with pytest.raises(ValueError, match="its words vocabulary differs"):
        check_partner(graph_parser(other), vocabs, other)
    check_partner(graph_parser(vocabs), vocabs, vocabs)  # the same vocabularies: accepted


def test_only_a_transition_parser_takes_a_partner() -> None:
    graph = str(GOLDEN / "graph.pt")
    with pytest.raises(ValueError, match="only a transition parser"):
        Parser.load(graph, threads=1, partner=graph)


def test_predict_py_with_a_partner_writes_what_the_api_parses(tmp_path: Path) -> None:
    # The golden arc-hybrid and graph checkpoints were trained on the same treebank.
    transition, graph = GOLDEN / "arc_hybrid.pt", GOLDEN / "graph.pt"
    text = (GOLDEN / "input.conllu").read_text(encoding="utf-8")
    output = tmp_path / "out.conllu"
    args = [str(ROOT / "predict.py"), f"checkpoint={transition}"]
    args += [f"partner={graph}", f"input={GOLDEN / 'input.conllu'}", f"output={output}"]
    args += ["search=beam", "search.beam_size=4", "search.graph_weight=1.0", "threads=1"]
    run_script(args, tmp_path)
    parser = Parser.load(transition, threads=1, partner=graph)
    trees = parser.parse(text, search="beam", beam_size=4, graph_weight=1.0)
    assert output.read_text(encoding="utf-8") == parser.to_conllu(trees)
