from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from builders import biaffine_parser, sized_vocabs

import decoding
from biaffine.data.batching import Batch
from biaffine.nn.treecrf import tree_log_prob
from biaffine.parsers import build_parser
from biaffine.parsers.graph import BiaffineParser, GraphScores
from biaffine.parsers.heads import LabelScorer

N_WORDS, N_CHARS, N_TAGS, N_RELS, N_XPOS, N_FEATS = 20, 15, 6, 4, 8, 9
VOCABS = sized_vocabs(
    words=N_WORDS, chars=N_CHARS, upos=N_TAGS, rels=N_RELS, xpos=N_XPOS, feats=N_FEATS
)
TINY = {"word_dim": 8, "char_dim": 6, "char_hidden": 5, "char_out": 7, "tag_dim": 4}
TINY |= {"lstm_hidden": 10, "lstm_layers": 2, "arc_mlp": 12, "rel_mlp": 6, "tag_mlp": 5}

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_parser(**overrides: object) -> BiaffineParser:
    torch.manual_seed(0)
    return biaffine_parser(VOCABS, **{**TINY, **overrides})


def sentence(n: int, seed: int) -> dict[str, torch.Tensor]:
    """Random ids for n words and a random single-rooted (maybe non-projective) tree."""
    g = torch.Generator().manual_seed(seed)
    chars = torch.zeros(n + 1, 5, dtype=torch.long)
    chars[0, 0] = 2
    for i in range(1, n + 1):
        k = int(torch.randint(1, 6, (1,), generator=g))
        chars[i, :k] = torch.randint(3, N_CHARS, (k,), generator=g)
    order = (torch.randperm(n, generator=g) + 1).tolist()
    heads = torch.zeros(n + 1, dtype=torch.long)
    for k, word in enumerate(order[1:], start=1):
        heads[word] = order[int(torch.randint(0, k, (1,), generator=g))]
    return {
        "words": torch.cat([torch.tensor([2]), torch.randint(3, N_WORDS, (n,), generator=g)]),
        "chars": chars,
        "upos": torch.cat([torch.tensor([2]), torch.randint(3, N_TAGS, (n,), generator=g)]),
        "heads": heads,
        "rels": torch.cat([torch.tensor([-100]), torch.randint(0, N_RELS, (n,), generator=g)]),
        "xpos": torch.cat([torch.tensor([2]), torch.randint(3, N_XPOS, (n,), generator=g)]),
        "feats": torch.cat([torch.tensor([2]), torch.randint(3, N_FEATS, (n,), generator=g)]),
    }


def make_batch(sentences: Sequence[dict[str, torch.Tensor]]) -> Batch:
    """A padded Batch built by hand (PAD=0, ROOT at position 0)."""
    lengths = torch.tensor([len(s["words"]) - 1 for s in sentences])
    width, size = int(lengths.max()) + 1, len(sentences)
    fields = {
        "words": torch.zeros(size, width, dtype=torch.long),
        "chars": torch.zeros(size, width, 5, dtype=torch.long),
        "upos": torch.zeros(size, width, dtype=torch.long),
        "heads": torch.zeros(size, width, dtype=torch.long),
        "rels": torch.full((size, width), -100, dtype=torch.long),
        "xpos": torch.zeros(size, width, dtype=torch.long),
        "feats": torch.zeros(size, width, dtype=torch.long),
    }
    for b, s in enumerate(sentences):
        for key, tensor in fields.items():
            tensor[b, : len(s[key])] = s[key]
    mask = torch.arange(width).unsqueeze(0) <= lengths.unsqueeze(1)
    mask[:, 0] = False
    columns = {name: fields.pop(name) for name in ("upos", "xpos", "feats")}
    return Batch(**fields, columns=columns, mask=mask, lengths=lengths, indices=torch.arange(size))


def test_output_shapes_and_masked_heads() -> None:
    parser = tiny_parser().eval()
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    scores = parser(batch)
    assert scores.arc_scores.shape == (2, 6, 6)
    assert parser.labels.all(scores.labels).shape == (2, 6, 6, N_RELS)
    assert parser.labels.at(scores.labels, batch.heads).shape == (2, 6, N_RELS)
    assert scores.tag_scores == {}
    arcs = scores.arc_scores
    assert torch.isneginf(arcs[1, :, 4:]).all()  # heads beyond length 3
    assert torch.isneginf(arcs.diagonal(dim1=1, dim2=2)).all()
    assert torch.isfinite(arcs[0, 1:, :]).sum() == 5 * 5  # each word: 6 heads minus itself


def test_padding_does_not_change_a_sentences_scores() -> None:
    parser = tiny_parser().eval()
    short = sentence(4, 3)
    alone = parser(make_batch([short]))
    padded = parser(make_batch([sentence(9, 4), short]))
    assert torch.allclose(alone.arc_scores[0], padded.arc_scores[1, :5, :5], atol=1e-6)
    full_alone, full_padded = parser.labels.all(alone.labels), parser.labels.all(padded.labels)
    assert torch.allclose(full_alone[0], full_padded[1, :5, :5], atol=1e-6)


def test_label_scores_at_given_heads_equal_those_of_all_pairs() -> None:
    parser = tiny_parser().eval()
    with torch.no_grad():
        parser.labels.attn.weight.normal_()  # U starts at zero: make the scores differ
    batch = make_batch([sentence(6, 5), sentence(2, 6)])
    scores = parser(batch)
    heads = torch.tensor([[-1, 2, 0, 2, 6, 3, 3], [-1, 0, 1, -1, -1, -1, -1]])
    at_heads = parser.labels.at(scores.labels, heads)
    full = parser.labels.all(scores.labels)
    for b, d in zip(*torch.nonzero(heads >= 0, as_tuple=True), strict=True):
        assert torch.allclose(at_heads[b, d], full[b, d, heads[b, d]], atol=1e-5)


@pytest.mark.parametrize("n_labels", [3, 40])  # both orders of Biaffine.score_pairs
@pytest.mark.parametrize("seed", range(4))
def test_label_scores_at_words_equal_the_full_computation_there(n_labels: int, seed: int) -> None:
    """at_words (parsing) equals at (training) at every arc of a random batch, bit for bit."""
    torch.manual_seed(seed)
    scorer = LabelScorer(9, 6, n_labels, dropout=0.0).eval()
    with torch.no_grad():
        scorer.attn.weight.normal_()
    lengths = torch.randint(1, 12, (5,))
    states = torch.randn(5, int(lengths.max()) + 1, 9)
    positions = torch.arange(states.shape[1])
    heads = (torch.rand(5, states.shape[1]) * (lengths.unsqueeze(1) + 1)).long()
    real = (positions > 0) & (positions <= lengths.unsqueeze(1))
    headless = torch.rand(heads.shape) < 0.1  # arc-eager without attach_leftovers leaves some
    heads = heads.masked_fill(~real | headless, -1)
    with torch.no_grad():
        vectors = scorer(states)
        expected = scorer.at(vectors, heads)[heads >= 0]
        found = scorer.at_words(vectors, heads)
    assert found.shape == (int((heads >= 0).sum()), n_labels)
    assert torch.equal(found, expected)


def test_config_rebuilds_the_same_architecture() -> None:
    parser = tiny_parser(use_tags=True, xpos_loss_weight=0.5)
    config = parser.config()
    assert config["encoder"]["kind"] == "bilstm"
    assert config["encoder"]["use_tags"] is True
    plain = (int, float, bool, str)
    assert all(isinstance(v, plain) for v in config["encoder"].values())
    assert all(isinstance(v, plain) for k, v in config.items() if k != "encoder")
    clone = build_parser("biaffine", VOCABS, config)
    clone.load_state_dict(parser.state_dict())  # strict: every name and shape matches


def test_the_head_loss_round_trips_through_the_config() -> None:
    assert tiny_parser().config()["loss"] == "local"  # the default: older configs unchanged
    config = tiny_parser(loss="crf").config()
    assert config["loss"] == "crf"
    assert build_parser("biaffine", VOCABS, config).config() == config
    old = {k: v for k, v in config.items() if k != "loss"}  # a config from before the option
    assert build_parser("biaffine", VOCABS, old).config()["loss"] == "local"


def test_crf_loss_is_the_tree_nll_per_word_and_falls_back_to_all_trees_without_one_root() -> None:
    parser = tiny_parser(loss="crf")
    parser.eval()
    batch = make_batch([sentence(7, 10), sentence(5, 11), sentence(4, 12)])
    batch.heads[2, 1:5] = torch.tensor([0, 0, 1, 2])  # two words on ROOT
    with torch.no_grad():
        scores = parser(batch)
        rel = parser.labels.at(scores.labels, batch.heads)[batch.mask]
        rel_loss = F.cross_entropy(rel, batch.rels[batch.mask])
        one_root = tree_log_prob(scores.arc_scores[:2], batch.heads[:2], batch.lengths[:2])
        all_trees = tree_log_prob(
            scores.arc_scores[2:], batch.heads[2:], batch.lengths[2:], root_constraint=False
        )
        expected = -(one_root.sum() + all_trees.sum()) / 16 + rel_loss
        torch.testing.assert_close(parser.loss(scores, batch), expected)


def test_crf_loss_falls_back_to_local_cross_entropy_where_log_z_lost_precision(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parser = tiny_parser(loss="crf")
    parser.eval()
    batch = make_batch([sentence(3, 5), sentence(4, 6)])
    with torch.no_grad():
        scores = parser(batch)
    # Words' best heads in a cycle hundreds of nats above every tree: log Z is NaN there.
    lost = [[-171.0, 0.0, 422.0, 864.0], [-770.0, 458.0, 0.0, 936.0], [-971.0, 727.0, 962.0, 0]]
    arc_scores = scores.arc_scores.clone()
    arc_scores[0, 1:4, :4] = torch.tensor(lost)
    arc_scores[0, 1:4, 1:4].fill_diagonal_(-math.inf)
    scores = dataclasses.replace(scores, arc_scores=arc_scores)
    assert math.isnan(tree_log_prob(arc_scores[:1], batch.heads[:1], batch.lengths[:1]))
    kept = tree_log_prob(arc_scores[1:], batch.heads[1:], batch.lengths[1:])
    local = F.cross_entropy(arc_scores[0, 1:4], batch.heads[0, 1:4], reduction="sum")
    rel = parser.labels.at(scores.labels, batch.heads)[batch.mask]
    expected = (local - kept.sum()) / 7 + F.cross_entropy(rel, batch.rels[batch.mask])
    with caplog.at_level(logging.INFO, logger="biaffine.parsers.graph"):
        torch.testing.assert_close(parser.loss(scores, batch), expected)
    assert "log Z lost precision in 1 of 2 sentences" in caplog.text


def test_crf_loss_gradient_raises_gold_arcs_and_lowers_the_rest() -> None:
    parser = tiny_parser(loss="crf")
    parser.eval()
    batch = make_batch([sentence(6, 3), sentence(4, 4)])
    scores = parser(batch)
    arc_scores = scores.arc_scores.detach().requires_grad_(True)
    scores = dataclasses.replace(scores, arc_scores=arc_scores)
    parser.loss(scores, batch).backward()
    gold = torch.zeros_like(arc_scores, dtype=torch.bool)
    b, d = batch.mask.nonzero(as_tuple=True)
    gold[b, d, batch.heads[b, d]] = True
    assert (arc_scores.grad[gold] < 0).all()  # marginal - 1 < 0: descent raises gold arcs
    finite = torch.isfinite(arc_scores) & ~gold & batch.mask.unsqueeze(-1)
    assert (arc_scores.grad[finite] > 0).all()


def test_an_unknown_parser_or_encoder_kind_is_named() -> None:
    with pytest.raises(ValueError, match="parser kind 'shift_reduce'"):
        build_parser("shift_reduce", VOCABS, {})
    config = tiny_parser().config()
    with pytest.raises(ValueError, match="encoder kind 'gru'"):
        build_parser("biaffine", VOCABS, {**config, "encoder": {"kind": "gru"}})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"lstm_layers": 0}, "lstm_layers=0"),
        ({"mlp_dropout": 1.0}, "mlp_dropout=1.0"),
        ({"tag_loss_weight": -1.0}, "tag_loss_weight"),
        ({"use_tags": True, "tag_loss_weight": 0.5}, "would predict the input"),
        ({"loss": "hinge"}, "loss='hinge' is not one of local, crf"),
        ({"tag_layer": 0}, "tag_layer=0 must be a level below the top, 1 to 1"),
        ({"tag_layer": 2}, "tag_layer=2 must be a level below the top"),  # 2 = the top
        ({"tag_reads_top": True}, "tag_reads_top=true needs a tag_layer"),
        ({"tag_hidden": 4}, "tag_hidden needs a tag_layer"),
        ({"tag_layer": 1, "tag_hidden": 0}, "tag_hidden=0 must be >= 1"),
    ],
)
def test_bad_hyperparameters_fail_in_words(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tiny_parser(**overrides)


def test_unknown_hyperparameter_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        tiny_parser(lstm_hiden=3)


@pytest.mark.parametrize(
    ("weight", "column", "size"),
    [
        ("tag_loss_weight", "upos", N_TAGS),
        ("xpos_loss_weight", "xpos", N_XPOS),
        ("feats_loss_weight", "feats", N_FEATS),
    ],
)
def test_each_tagger_head_adds_its_scores_and_loss(weight: str, column: str, size: int) -> None:
    batch = make_batch([sentence(5, 0)])
    plain = tiny_parser().eval()
    multi = tiny_parser(**{weight: 1.0}).eval()
    scores = multi(batch)
    assert set(scores.tag_scores) == {column}
    assert scores.tag_scores[column].shape == (5, size)  # words only: no ROOT, no padding
    assert multi.loss(scores, batch) > plain.loss(plain(batch), batch)
    untagged = multi(batch, tag=False)
    assert untagged.tag_scores == {}
    assert torch.equal(untagged.arc_scores, scores.arc_scores)


def test_each_tagger_loss_reads_its_own_gold_column() -> None:
    parser = tiny_parser(tag_loss_weight=1.0, xpos_loss_weight=0.5, feats_loss_weight=2.0).eval()
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    scores = parser(batch)
    mask = batch.mask
    expected = parser.loss(GraphScores(scores.arc_scores, scores.labels), batch)
    weights = {"upos": 1.0, "xpos": 0.5, "feats": 2.0}
    for column, weight in weights.items():
        gold = batch.columns[column]
        expected = expected + weight * F.cross_entropy(scores.tag_scores[column], gold[mask])
    assert torch.allclose(parser.loss(scores, batch), expected)


def test_tagger_heads_are_named_by_column() -> None:
    parser = tiny_parser(tag_loss_weight=1.0, feats_loss_weight=1.0)
    assert list(parser.taggers) == ["upos", "feats"]
    keys = parser.state_dict()
    assert any(key.startswith("taggers.upos.") for key in keys)
    assert not any(key.startswith("taggers.xpos.") for key in keys)


def test_a_tag_layer_gives_the_taggers_a_lower_level_and_the_tree_heads_the_same_states() -> None:
    """The tree heads' states are those of the encoder without a tag layer (same weights); the
    taggers' are level 1's, which the UPOS scores are computed from."""
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    plain = tiny_parser(tag_loss_weight=1.0).eval()
    layered = tiny_parser(tag_loss_weight=1.0, tag_layer=1).eval()
    layered.load_state_dict(plain.state_dict())  # strict: a tag layer adds no weights
    assert layered.encoder.n_tag_out == layered.encoder.n_out == 20
    with torch.no_grad():
        states = layered.encoder(batch)
        assert states.shape == (2, 6, 40)
        tree, tagged = layered.split_states(states)
        assert torch.equal(tree, plain.encoder(batch))
        embedded = layered.encoder._embed(batch, None, None)
        first = layered.encoder.lstms[0](embedded, batch.lengths + 1)
        assert torch.equal(tagged, first)
        found, expected = layered(batch), plain(batch)
        assert torch.equal(found.arc_scores, expected.arc_scores)
        upos = layered.taggers["upos"](tagged[batch.mask].unsqueeze(0))[0]
        assert torch.equal(found.tag_scores["upos"], upos)
        assert not torch.allclose(found.tag_scores["upos"], expected.tag_scores["upos"])


def test_the_tag_layer_round_trips_through_the_config_and_is_absent_when_unset() -> None:
    assert "tag_layer" not in tiny_parser().config()["encoder"]  # older configs unchanged
    config = tiny_parser(tag_layer=1, tag_loss_weight=1.0).config()
    assert config["encoder"]["tag_layer"] == 1
    assert build_parser("biaffine", VOCABS, config).config() == config


def test_tag_reads_top_gives_the_taggers_both_levels_and_the_top_no_tagger_gradient() -> None:
    """The taggers read [level 1; top]; the tree's scores are unchanged; the tagging loss
    trains level 1 but leaves every weight of the top BiLSTM without a gradient, which the
    tree's loss does give it."""
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    parser = tiny_parser(tag_loss_weight=1.0, tag_layer=1, tag_reads_top=True)
    assert next(parser.taggers["upos"].parameters()).shape[1] == 40  # both levels, 20 each
    parser.eval()
    with torch.no_grad():
        states = parser.encoder(batch)
        tree, tagged = parser.split_states(states)
        assert torch.equal(tagged, torch.cat([states[..., 20:], tree], -1))
        upos = parser.taggers["upos"](tagged[batch.mask].unsqueeze(0))[0]
        assert torch.equal(parser(batch).tag_scores["upos"], upos)
        for weight in parser.parameters():  # the biaffine weights start at 0: no gradient yet
            weight.add_(0.1 * torch.randn_like(weight))
    scores = parser(batch)
    tag_loss = F.cross_entropy(scores.tag_scores["upos"], batch.columns["upos"][batch.mask])
    tag_loss.backward(retain_graph=True)
    top, first = parser.encoder.lstms[1], parser.encoder.lstms[0]
    assert all(p.grad is None or not p.grad.any() for p in top.parameters())
    assert any(p.grad is not None and p.grad.any() for p in first.parameters())
    parser.zero_grad()
    scores.arc_scores.sum().backward()
    assert any(p.grad is not None and p.grad.any() for p in top.parameters())


def test_tag_reads_top_round_trips_through_the_config_and_is_absent_when_unset() -> None:
    assert "tag_reads_top" not in tiny_parser(tag_layer=1).config()["encoder"]
    config = tiny_parser(tag_layer=1, tag_reads_top=True, tag_loss_weight=1.0).config()
    assert config["encoder"]["tag_reads_top"] is True
    assert build_parser("biaffine", VOCABS, config).config() == config


def test_tag_hidden_gives_the_taggers_a_level_of_their_own_above_the_tag_layer() -> None:
    """The taggers read their own BiLSTM over level 1; the tree heads' states and scores are
    those of the parser without it (same weights), and the tagging loss trains level 1 and the
    taggers' level, not the top level."""
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    plain = tiny_parser(tag_loss_weight=1.0, tag_layer=1).eval()
    own = tiny_parser(tag_loss_weight=1.0, tag_layer=1, tag_hidden=6)
    assert own.encoder.n_tag_out == 12
    assert next(own.taggers["upos"].parameters()).shape[1] == 12
    shared = {k: v for k, v in plain.state_dict().items() if not k.startswith("taggers.")}
    missing, unexpected = own.load_state_dict(shared, strict=False)
    assert unexpected == []
    assert {tuple(k.split(".")[:2]) for k in missing} == {
        ("encoder", "tag_lstm"),
        ("taggers", "upos"),
    }
    own.eval()
    with torch.no_grad():
        states = own.encoder(batch)
        assert states.shape == (2, 6, 20 + 12)
        tree, tagged = own.split_states(states)
        assert torch.equal(tree, plain.split_states(plain.encoder(batch))[0])
        embedded = own.encoder._embed(batch, None, None)
        first = own.encoder.lstms[0](embedded, batch.lengths + 1)
        assert torch.equal(tagged, own.encoder.tag_lstm(first, batch.lengths + 1))
        assert torch.equal(own(batch).arc_scores, plain(batch).arc_scores)
        for weight in own.parameters():  # the biaffine weights start at 0: no gradient yet
            weight.add_(0.1 * torch.randn_like(weight))
    scores = own(batch)
    F.cross_entropy(scores.tag_scores["upos"], batch.columns["upos"][batch.mask]).backward()
    trained = {
        name.split(".")[0]
        for name, p in own.encoder.named_parameters()
        if p.grad is not None and p.grad.any()
    }
    assert {"tag_lstm", "lstms"} <= trained
    top = own.encoder.lstms[1]
    assert all(p.grad is None or not p.grad.any() for p in top.parameters())


def calls_of(module: torch.nn.Module) -> list[int]:
    """A list that grows by one each time ``module`` runs."""
    calls: list[int] = []
    module.register_forward_hook(lambda *_: calls.append(1))
    return calls


@pytest.mark.parametrize("tag_reads_top", [False, True])
def test_a_parse_that_asks_for_no_tags_never_runs_the_taggers_own_level(
    tag_reads_top: bool,
) -> None:
    """``tag=False`` gives the tree heads' states alone and the same tree scores, without the
    taggers' BiLSTM level (it ran for every parse, 9% of EWT's tree time)."""
    batch = make_batch([sentence(5, 0), sentence(3, 1)])
    own = tiny_parser(tag_loss_weight=1.0, tag_layer=1, tag_hidden=6, tag_reads_top=tag_reads_top)
    own.eval()
    with torch.no_grad():
        for weight in own.parameters():  # the biaffine weights start at 0
            weight.add_(0.1 * torch.randn_like(weight))
    calls = calls_of(own.encoder.tag_lstm)
    with torch.no_grad():
        tree_only, tagged = own(batch, tag=False), own(batch, tag=True)
        states = own.encoder(batch, tag=False)
        # In no_grad too: with autograd on, some CPUs' kernels round otherwise.
        tagging_states = own.split_states(own.encoder(batch))[0]
    assert len(calls) == 2  # the tagging parse's and the last call's alone
    assert tree_only.tag_scores == {}
    assert torch.equal(tree_only.arc_scores, tagged.arc_scores)
    assert torch.equal(tree_only.labels.dep, tagged.labels.dep)
    assert states.shape == (2, 6, own.encoder.n_out)
    assert torch.equal(states, tagging_states)


def test_tag_hidden_round_trips_through_the_config_and_is_absent_when_unset() -> None:
    assert "tag_hidden" not in tiny_parser(tag_layer=1).config()["encoder"]
    config = tiny_parser(tag_layer=1, tag_hidden=6, tag_loss_weight=1.0).config()
    assert config["encoder"]["tag_hidden"] == 6
    assert build_parser("biaffine", VOCABS, config).config() == config


def test_use_tags_reads_the_input_tags() -> None:
    parser = tiny_parser(use_tags=True, embed_dropout=0.0).eval()
    batch = make_batch([sentence(5, 0)])
    other = make_batch([{**sentence(5, 0), "upos": torch.tensor([2, 3, 3, 3, 3, 3])}])
    with torch.no_grad():
        parser.arcs.attn.weight.normal_()
    assert not torch.allclose(parser(batch).arc_scores, parser(other).arc_scores)


def test_loss_is_finite_when_no_label_is_known() -> None:
    parser = tiny_parser()
    raw = sentence(4, 0)
    batch = make_batch([{**raw, "rels": torch.full((5,), -100)}])
    loss = parser.loss(parser(batch), batch)
    assert torch.isfinite(loss)
    loss.backward()


def test_training_mode_is_stochastic_and_eval_is_not() -> None:
    parser = tiny_parser(word_dropout=0.3)
    batch = make_batch([sentence(6, 0), sentence(4, 1)])
    with torch.no_grad():
        parser.arcs.attn.weight.normal_()
        parser.train()
        assert not torch.allclose(parser(batch).arc_scores, parser(batch).arc_scores)
        parser.eval()
        assert torch.equal(parser(batch).arc_scores, parser(batch).arc_scores)


@pytest.mark.parametrize("loss", ["local", "crf"])
def test_overfits_two_sentences(loss: str) -> None:
    parser = tiny_parser(
        lstm_hidden=24,
        arc_mlp=24,
        rel_mlp=12,
        embed_dropout=0.0,
        lstm_dropout=0.0,
        mlp_dropout=0.0,
        loss=loss,
    )
    batch = make_batch([sentence(7, 10), sentence(5, 11)])
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-2, betas=(0.9, 0.9))
    losses = []
    for _ in range(150):
        optimizer.zero_grad()
        loss = parser.loss(parser(batch), batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]
    parser.eval()
    with torch.no_grad():
        scores = parser(batch)
    # The tree decoder, not each word's argmax: the single-root CRF leaves the level of the ROOT
    # column free (every tree has one ROOT arc), so only whole trees are ranked.
    heads = torch.from_numpy(
        decoding.mst(scores.arc_scores.double().numpy(), batch.lengths.numpy())
    )
    rels = parser.labels.all(scores.labels).argmax(-1).gather(2, heads.clamp(min=0).unsqueeze(-1))
    rels = rels.squeeze(-1)
    assert torch.equal(heads[batch.mask], batch.heads[batch.mask])  # UAS 100%
    assert torch.equal(rels[batch.mask], batch.rels[batch.mask])  # LAS 100%
