from __future__ import annotations

import pytest
import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from biaffine.nn.modules import (
    MLP,
    Biaffine,
    BiLSTM,
    CharEncoder,
    IndependentDropout,
    SharedDropout,
    _unique_rows,
    loading_weights,
    word_dropout,
)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


def test_shared_dropout_uses_one_mask_per_sequence() -> None:
    layer = SharedDropout(0.5).train()
    out = layer(torch.ones(4, 7, 16))
    assert torch.equal(out, out[:, :1].expand_as(out))
    assert set(out.unique().tolist()) <= {0.0, 2.0}


def test_shared_dropout_is_identity_in_eval() -> None:
    x = torch.randn(2, 3, 5)
    assert torch.equal(SharedDropout(0.5).eval()(x), x)


@pytest.mark.parametrize("p", [-0.1, 1.0])
def test_dropout_rejects_bad_probability(p: float) -> None:
    with pytest.raises(ValueError, match="must be in"):
        SharedDropout(p)
    with pytest.raises(ValueError, match="must be in"):
        IndependentDropout(p)


def _packed_reference(layer: BiLSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """The same layer as one packed nn.LSTM(bidirectional=True): the textbook computation."""
    hidden = layer.forward_lstm.hidden_size
    reference = torch.nn.LSTM(x.shape[-1], hidden, batch_first=True, bidirectional=True)
    with torch.no_grad():
        for name, param in layer.forward_lstm.named_parameters():
            getattr(reference, name).copy_(param)
            getattr(reference, f"{name}_reverse").copy_(getattr(layer.backward_lstm, name))
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = pad_packed_sequence(reference(packed)[0], batch_first=True, total_length=x.shape[1])
    return out


def test_bilstm_equals_packed_bidirectional_lstm() -> None:
    layer = BiLSTM(6, 5)
    lengths = torch.tensor([3, 7, 1, 7, 5])
    x = torch.randn(5, 7, 6)
    expected = _packed_reference(layer, x, lengths)
    assert torch.allclose(layer(x, lengths), expected, atol=1e-6)
    # Padding content must not reach any word, in either direction.
    garbage = x.clone()
    for b, n in enumerate(lengths.tolist()):
        garbage[b, n:] = 1e3
    assert torch.allclose(layer(garbage, lengths), expected, atol=1e-6)


def test_bilstm_gradients_reach_words_only() -> None:
    layer = BiLSTM(4, 3)
    lengths = torch.tensor([2, 4])
    x = torch.randn(2, 4, 4, requires_grad=True)
    layer(x, lengths).sum().backward()
    assert torch.count_nonzero(x.grad[0, 2:]) == 0
    assert torch.all(x.grad[0, :2].abs().sum(-1) > 0)
    assert torch.all(x.grad[1].abs().sum(-1) > 0)


def test_independent_dropout_rescales_survivors() -> None:
    layer = IndependentDropout(0.5).train()
    a, b = layer(torch.ones(50, 10, 3), torch.ones(50, 10, 4))
    per_position = torch.stack([a[..., 0], b[..., 0]], -1).reshape(-1, 2).unique(dim=0)
    # Both kept (1, 1), one kept and doubled (2, 0) / (0, 2), or both dropped (0, 0).
    assert {tuple(row) for row in per_position.tolist()} == {(1, 1), (2, 0), (0, 2), (0, 0)}
    assert torch.equal(a, a[..., :1].expand_as(a))


def test_word_dropout_only_touches_masked_positions() -> None:
    words = torch.full((20, 30), 7)
    mask = torch.zeros(20, 30, dtype=torch.bool)
    mask[:, 1:20] = True
    out = word_dropout(words, 0.5, unk_index=1, mask=mask)
    assert torch.equal(out[~mask], words[~mask])
    assert set(out[mask].unique().tolist()) == {1, 7}
    assert torch.equal(word_dropout(words, 0.0, unk_index=1, mask=mask), words)


def test_mlp_shape_and_leaky_relu() -> None:
    mlp = MLP(6, 4, dropout=0.0)
    x = torch.randn(2, 3, 6)
    out = mlp(x)
    assert out.shape == (2, 3, 4)
    linear = mlp.linear(x)
    assert torch.allclose(out, torch.where(linear > 0, linear, 0.1 * linear))


def test_biaffine_starts_at_zero() -> None:
    scores = Biaffine(5, 3)(torch.randn(2, 4, 5), torch.randn(2, 6, 5))
    assert scores.shape == (2, 4, 6, 3)
    assert torch.equal(scores, torch.zeros_like(scores))


@pytest.mark.parametrize(("bias_x", "bias_y"), [(True, False), (True, True), (False, False)])
def test_biaffine_matches_the_bilinear_formula(bias_x: bool, bias_y: bool) -> None:
    layer = Biaffine(3, 2, bias_x=bias_x, bias_y=bias_y)
    torch.nn.init.normal_(layer.weight)
    x, y = torch.randn(1, 4, 3), torch.randn(1, 5, 3)
    scores = layer(x, y)
    xb = torch.cat([x, torch.ones(1, 4, 1)], -1) if bias_x else x
    yb = torch.cat([y, torch.ones(1, 5, 1)], -1) if bias_y else y
    for i in range(4):
        for j in range(5):
            for o in range(2):
                expected = xb[0, i] @ layer.weight[o] @ yb[0, j]
                assert scores[0, i, j, o].item() == pytest.approx(expected.item(), abs=1e-5)


def test_biaffine_chunking_does_not_change_scores() -> None:
    layer = Biaffine(4, 3)
    torch.nn.init.normal_(layer.weight)
    x, y = torch.randn(7, 5, 4), torch.randn(7, 5, 4)
    whole = layer(x, y)
    layer.chunk_elements = 1  # one sentence per chunk
    assert torch.allclose(layer(x, y), whole, atol=1e-6)


@pytest.mark.parametrize("bias_x", [True, False])
@pytest.mark.parametrize("bias_y", [True, False])
@pytest.mark.parametrize("chunk_elements", [1, 1 << 18])
@pytest.mark.parametrize("n_out", [3, 9])  # fewer or more channels than x features: (x U) y, x y^T
def test_biaffine_score_pairs_equals_all_pairs_at_those_pairs(
    bias_x: bool, bias_y: bool, chunk_elements: int, n_out: int
) -> None:
    layer = Biaffine(4, n_out, bias_x=bias_x, bias_y=bias_y)
    torch.nn.init.normal_(layer.weight)
    layer.chunk_elements = layer.pair_chunk_elements = chunk_elements  # 1: one pair per chunk
    x, y = torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    partner = torch.tensor([[4, 0, 0, 2, 1], [1, 1, 3, 0, 2]])  # y position paired with x_i
    pairs = layer.score_pairs(x, y.gather(1, partner.unsqueeze(-1).expand(-1, -1, 4)))
    at_partner = partner[..., None, None].expand(-1, -1, 1, n_out)
    expected = layer(x, y).gather(2, at_partner).squeeze(2)
    assert pairs.shape == (2, 5, n_out)
    assert torch.allclose(pairs, expected, atol=1e-5)


def test_biaffine_x_bias_is_a_prior_over_y() -> None:
    # With only the bias row of U non-zero, the score depends on y (the head), not on x.
    layer = Biaffine(3, 1, bias_x=True, bias_y=False)
    with torch.no_grad():
        layer.weight[0, 3] = torch.tensor([1.0, -2.0, 0.5])
    scores = layer(torch.randn(1, 4, 3), torch.randn(1, 5, 3))[..., 0]
    assert torch.allclose(scores, scores[:, :1].expand_as(scores))


def _chars() -> torch.Tensor:
    chars = torch.zeros(2, 4, 3, dtype=torch.long)
    chars[0, 0] = torch.tensor([2, 0, 0])
    chars[0, 1] = torch.tensor([5, 6, 7])
    chars[0, 2] = torch.tensor([5, 6, 0])
    chars[1, 0] = torch.tensor([2, 0, 0])
    chars[1, 1] = torch.tensor([5, 6, 0])  # same word as chars[0, 2]
    return chars  # chars[0, 3], chars[1, 2:] are padding words


def test_char_encoder_matches_per_word_encoding() -> None:
    encoder = CharEncoder(10, char_dim=4, hidden=3, n_out=5).eval()
    chars = _chars()
    out = encoder(chars)
    assert out.shape == (2, 4, 5)
    for b, i in [(0, 0), (0, 1), (0, 2), (1, 1)]:
        word = chars[b, i][chars[b, i] != 0].unsqueeze(0)
        alone = encoder(word.unsqueeze(0))[0, 0]
        assert torch.allclose(out[b, i], alone, atol=1e-6)
    assert torch.equal(out[0, 2], out[1, 1])
    assert torch.equal(out[0, 3], torch.zeros(5))
    assert torch.equal(out[1, 2:], torch.zeros(2, 5))


def test_char_encoder_gradients_reach_shared_words() -> None:
    encoder = CharEncoder(10, char_dim=4, hidden=3, n_out=5)
    encoder(_chars()).sum().backward()
    assert encoder.embed.weight.grad[5].abs().sum() > 0
    assert encoder.embed.weight.grad[0].abs().sum() == 0  # padding_idx


def test_unique_rows_matches_torch_unique() -> None:
    rows = torch.randint(0, 4, (200, 3))
    types, inverse = _unique_rows(rows)
    assert torch.equal(types[inverse], rows)
    assert len(types) == len(torch.unique(rows, dim=0))


def test_loading_weights_skips_the_orthogonal_initialisation_and_only_it() -> None:
    torch.manual_seed(0)
    initialised = MLP(6, 4)
    with loading_weights():
        torch.manual_seed(0)
        skipped = MLP(6, 4)
    weight = initialised.linear.weight.detach()
    eye = torch.eye(4)
    assert torch.allclose(weight @ weight.T, eye, atol=1e-5)  # orthogonal rows
    assert not torch.allclose(
        skipped.linear.weight.detach() @ skipped.linear.weight.T, eye, atol=1e-2
    )
    torch.manual_seed(0)
    assert torch.allclose(MLP(6, 4).linear.weight, weight)  # the flag is reset afterwards
