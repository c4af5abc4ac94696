from __future__ import annotations

import numpy as np
import pytest
import torch
from builders import biaffine_parser

import decoding
import tiered
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocab, Vocabs
from biaffine.inference import DecoderSettings, parse, warm_up
from biaffine.inference.graph import GraphFamily, choose_labels, decode_heads, root_label_id
from biaffine.parsers.graph import BiaffineParser

TINY = {"word_dim": 8, "char_dim": 6, "char_hidden": 5, "char_out": 7, "lstm_hidden": 10}
TINY |= {"lstm_layers": 2, "arc_mlp": 12, "rel_mlp": 6}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def untrained(vocabs: Vocabs) -> BiaffineParser:
    torch.manual_seed(0)
    parser = biaffine_parser(vocabs, **TINY)
    with torch.no_grad():  # U starts at zero (all scores tie); make the test scores informative
        parser.arcs.attn.weight.normal_()
        parser.labels.attn.weight.normal_()
    return parser.eval()


def decode(model, scores, lengths, decoder, *, root_label=None):
    """Heads, then the best label of each chosen arc (what the graph family does per batch)."""
    heads = decode_heads(scores.arc_scores, lengths, decoder)
    return heads, choose_labels(model.labels, scores.labels, heads, root_label=root_label)


def model_scores(vocabs: Vocabs, sentences: list[Sentence]):
    batch = next(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False))
    model = untrained(vocabs)
    with torch.inference_mode():
        return model, model(batch), batch


@pytest.mark.parametrize("root_constraint", [True, False])
@pytest.mark.parametrize("algorithm", ["mst", "eisner"])
def test_decode_gives_trees(vocabs, sentences, algorithm: str, root_constraint: bool) -> None:
    model, scores, batch = model_scores(vocabs, sentences)
    heads, rels = decode(model, scores, batch.lengths, DecoderSettings(algorithm, root_constraint))
    lengths = batch.lengths.numpy()
    assert heads.dtype == np.int64
    assert heads.shape == rels.shape == tuple(batch.words.shape)
    projective = algorithm == "eisner"
    assert decoding.is_tree(heads, root_constraint=root_constraint, projective=projective).all()
    if root_constraint:
        assert ((heads == 0).sum(1) == 1).all()
    for b, n in enumerate(lengths):
        assert heads[b, 0] == rels[b, 0] == -1
        assert (heads[b, n + 1 :] == -1).all()
        assert (rels[b, n + 1 :] == -1).all()


def test_mst_has_exactly_one_root_word_even_when_scores_prefer_many() -> None:
    arc_scores = torch.full((1, 4, 4), -5.0)
    arc_scores[0, 1:, 0] = 5.0  # every word prefers ROOT
    heads = decode_heads(arc_scores, torch.tensor([3]), DecoderSettings("mst"))
    assert (heads[0, 1:] == 0).sum() == 1
    assert decoding.is_tree(heads[0])
    multi = decode_heads(arc_scores, torch.tensor([3]), DecoderSettings(root_constraint=False))
    assert (multi[0, 1:] == 0).all()


def test_greedy_picks_the_row_argmax_and_labels_follow_heads(vocabs, sentences) -> None:
    model, scores, batch = model_scores(vocabs, sentences)
    heads, rels = decode(model, scores, batch.lengths, DecoderSettings("greedy"))
    mask = batch.mask.numpy()
    assert np.array_equal(heads[mask], scores.arc_scores.argmax(-1).numpy()[mask])
    with torch.inference_mode():
        all_pairs = model.labels.all(scores.labels)
    for b, d in zip(*np.nonzero(mask), strict=True):
        assert rels[b, d] == all_pairs[b, d, heads[b, d]].argmax().item()


@pytest.mark.parametrize("algorithm", ["greedy", "mst"])
def test_labels_follow_uds_root_rule_and_are_otherwise_the_best(
    vocabs, sentences, algorithm: str
) -> None:
    model, scores, batch = model_scores(vocabs, sentences)
    root = root_label_id(vocabs.rels)
    assert root is not None
    decoder = DecoderSettings(algorithm)
    heads, rels = decode(model, scores, batch.lengths, decoder, root_label=root)
    _, argmax_rels = decode(model, scores, batch.lengths, decoder)
    mask = batch.mask.numpy()
    with torch.inference_mode():
        all_pairs = model.labels.all(scores.labels)  # [B, N+1, N+1, R]: every arc, not only decoded
    for b, d in zip(*np.nonzero(mask), strict=True):
        pair = all_pairs[b, d, heads[b, d]].clone()
        if heads[b, d] == 0:
            assert rels[b, d] == root
        else:
            pair[root] = float("-inf")
            assert rels[b, d] == pair.argmax().item()
    # The untrained model's own argmax breaks the rule, so the rule is what changed the labels.
    assert ((argmax_rels == root) != (heads == 0))[mask].any()


def test_parse_labels_the_root_word_root_and_no_other(vocabs, sentences) -> None:
    for pred in parse(untrained(vocabs), vocabs, sentences):
        assert all((h == 0) == (r == "root") for h, r in zip(pred.heads, pred.deprels, strict=True))


def test_without_a_root_label_every_arc_takes_its_best_label(vocabs, sentences) -> None:
    model, scores, batch = model_scores(vocabs, sentences)
    heads = decode_heads(scores.arc_scores, batch.lengths)
    with torch.inference_mode():
        best = model.labels.at(scores.labels, torch.from_numpy(heads)).argmax(-1).numpy()
    mask = batch.mask.numpy()
    assert np.array_equal(choose_labels(model.labels, scores.labels, heads)[mask], best[mask])
    assert root_label_id(Vocab(["nsubj", "obj"], specials=False)) is None


def test_decode_orientation_is_dependent_major() -> None:
    # Word 1 strongly prefers head 2 (row 1, column 2), word 2 prefers ROOT.
    arc_scores = torch.tensor([[[0.0, 0.0, 0.0], [0.0, 0.0, 9.0], [9.0, 0.0, 0.0]]])
    heads = decode_heads(arc_scores, torch.tensor([2]))
    assert heads.tolist() == [[-1, 2, 0]]


def test_decode_keeps_torchs_thread_count() -> None:
    # numba's OpenMP layer would otherwise reset it when its pool starts (see decode_heads).
    decode_heads(torch.zeros(1, 3, 3), torch.tensor([2]))
    assert torch.get_num_threads() == 1


def test_decoder_settings_refuse_an_unknown_algorithm() -> None:
    with pytest.raises(ValueError, match="algorithm='cky'; expected one of mst, eisner, greedy"):
        DecoderSettings("cky")


def test_warm_up_loads_every_decoder_unless_small_calls_run_interpreted(vocabs, monkeypatch):
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    budget = tiered._Budget()
    monkeypatch.setattr(tiered, "_BUDGET", budget)
    called, real = [], GraphFamily.warm_up
    loading = classmethod(lambda cls, settings: called.append(set(settings)) or real(settings))
    monkeypatch.setattr(GraphFamily, "warm_up", loading)
    menu = {f"{a}-{r}": DecoderSettings(a, r) for a in decoding.DECODERS for r in (True, False)}
    warm_up(untrained(vocabs), menu)
    assert called == []  # a short-lived process: nothing worth loading yet
    budget.close()  # as a server does (tiered.prefer_machine_code)
    warm_up(untrained(vocabs), menu)
    assert called == [set(menu)]


def test_parse_refuses_a_model_of_no_known_family(vocabs, sentences) -> None:
    with pytest.raises(ValueError, match="no inference for parser family None"):
        parse(torch.nn.Linear(2, 2), vocabs, sentences)


def test_parse_returns_trees_in_input_order(vocabs, sentences) -> None:
    parser = untrained(vocabs)
    one_batch = parse(parser, vocabs, sentences, DecoderSettings("mst", root_constraint=True))
    many_batches = parse(parser, vocabs, sentences, DecoderSettings("mst"), max_tokens=1)
    assert [s.forms for s in one_batch] == [s.forms for s in sentences]
    assert [s.heads for s in one_batch] == [s.heads for s in many_batches]
    assert [s.deprels for s in one_batch] == [s.deprels for s in many_batches]
    for gold, pred in zip(sentences, one_batch, strict=True):
        assert decoding.is_tree(np.array([-1, *pred.heads]))
        assert set(pred.deprels) <= set(vocabs.rels.itos)
        assert pred.upos == gold.upos
        assert pred.lines[0] == gold.lines[0]


def test_parse_in_bf16_gives_trees_or_a_clear_error(vocabs, sentences) -> None:
    if not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        with pytest.raises(ValueError, match="needs a CPU with native bfloat16"):
            parse(untrained(vocabs), vocabs, sentences, bf16=True)
        return
    parsed = parse(untrained(vocabs), vocabs, sentences, bf16=True)
    assert [s.forms for s in parsed] == [s.forms for s in sentences]
    for pred in parsed:
        assert decoding.is_tree(np.array([-1, *pred.heads]))


def test_parse_of_nothing_is_nothing(vocabs) -> None:
    assert parse(untrained(vocabs), vocabs, []) == []


def test_parse_reproduces_a_memorised_treebank(vocabs, sentences) -> None:
    torch.manual_seed(0)
    options = {**TINY, "lstm_hidden": 24, "arc_mlp": 24, "rel_mlp": 12}
    options |= {"embed_dropout": 0.0, "lstm_dropout": 0.0, "mlp_dropout": 0.0}
    parser = biaffine_parser(vocabs, **options)
    batch = next(batches_by_tokens(encode(sentences, vocabs), 10_000, shuffle=False))
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-2, betas=(0.9, 0.9))
    for _ in range(150):
        optimizer.zero_grad()
        parser.loss(parser(batch), batch).backward()
        optimizer.step()
    parsed = parse(parser, vocabs, sentences, DecoderSettings("mst"))
    assert [s.heads for s in parsed] == [s.heads for s in sentences]
    assert [s.deprels for s in parsed] == [s.deprels for s in sentences]


def test_labels_are_scored_at_the_words_only(vocabs, sentences, monkeypatch) -> None:
    """Parsing scores one label pair per word: none at ROOT or padding (issue 39)."""
    model, scores, batch = model_scores(vocabs, sentences)
    heads = decode_heads(scores.arc_scores, batch.lengths)
    pairs = []
    score_pairs = model.labels.attn.score_pairs

    def counted(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        pairs.append(x.shape[:-1].numel())
        return score_pairs(x, y)

    monkeypatch.setattr(model.labels.attn, "score_pairs", counted)
    with torch.inference_mode():
        rels = choose_labels(model.labels, scores.labels, heads, root_label=None)
    assert pairs == [int(batch.lengths.sum())] < [batch.mask.numel()]
    assert np.array_equal(rels >= 0, batch.mask.numpy())
