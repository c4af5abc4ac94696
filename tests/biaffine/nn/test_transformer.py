from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import torch
from builders import biaffine_parser, save_model
from hypothesis import given
from hypothesis import strategies as st

from biaffine import checkpoint
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.nn import TransformerEmbedding, TransformerEncoder, transformer
from biaffine.nn.transformer import assign_windows, chunk_windows, window_starts
from biaffine.parsers import BiaffineParser

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TINY = {"word_dim": 4, "char_dim": 3, "char_hidden": 3, "char_out": 3, "tag_dim": 3}
TINY |= {"lstm_hidden": 5, "lstm_layers": 1, "arc_mlp": 6, "rel_mlp": 3, "tag_mlp": 3}


def reference_states(tiny_bert: Path, ids: list[int]) -> torch.Tensor:
    """float[layers + 1, len(ids) + 2, H]: the model run directly on [CLS] ids [SEP]."""
    import transformers

    network = transformers.AutoModel.from_pretrained(tiny_bert, local_files_only=True).eval()
    with torch.no_grad():
        out = network(input_ids=torch.tensor([[2, *ids, 3]]), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0]


# "unbelievably" -> un ##believ ##ably; "cats" -> cat ##s; "dog" -> [UNK]
WORDS = ["The", "unbelievably", "cats", "dog", "sat"]
IDS = [5, 11, 12, 13, 6, 14, 1, 7]
PIECES = [[0], [1, 2, 3], [4, 5], [6], [7]]  # positions in IDS of each word's subwords


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_pooling_matches_a_hand_computation(tiny_bert: Path, pooling: str) -> None:
    embed = TransformerEmbedding(str(tiny_bert), pooling=pooling)
    assert [embed.subwords(w) for w in WORDS] == [[IDS[p] for p in ps] for ps in PIECES]
    with torch.no_grad():
        out = embed([WORDS, WORDS[:2]], len(WORDS) + 1)  # [2, 6, 8]
    states = reference_states(tiny_bert, IDS).mean(0)  # initial mix: the mean of all layers
    expected = [states[0]]  # ROOT: [CLS]
    for pieces in PIECES:
        rows = [p + 1 for p in pieces]  # +1 for [CLS]
        expected.append(states[rows[0]] if pooling == "first" else states[rows].mean(0))
    torch.testing.assert_close(out[0], torch.stack(expected))
    torch.testing.assert_close(out[1, 3:], torch.zeros(3, 8))  # padding


def test_loading_draws_no_progress_bar_and_leaves_the_setting_as_it_was(
    tiny_bert: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    import transformers

    bars = transformers.utils.logging
    assert bars.is_progress_bar_enabled()
    TransformerEmbedding(str(tiny_bert))
    assert capfd.readouterr().err == ""  # transformers 5 drew "Loading weights: 100%|..."
    assert bars.is_progress_bar_enabled()


def test_a_network_is_shared_only_with_the_states_it_computes(tiny_bert: Path) -> None:
    embed, other = TransformerEmbedding(str(tiny_bert)), TransformerEmbedding(str(tiny_bert))
    with pytest.raises(ValueError, match="only with the states"):
        embed.share(None, other.network)
    embed.share(transformer.SharedStates(), other.network)
    assert embed.network is other.network


def test_layer_choice_and_learned_root(tiny_bert: Path) -> None:
    embed = TransformerEmbedding(str(tiny_bert), layers=[-1], root="learned")
    with torch.no_grad():
        embed.root_vector.fill_(0.5)
        out = embed([WORDS], len(WORDS) + 1)
    states = reference_states(tiny_bert, IDS)[-1]
    torch.testing.assert_close(out[0, 0], torch.full((8,), 0.5))
    torch.testing.assert_close(out[0, 2], states[2])


@pytest.mark.parametrize(("layers", "states"), [([0, 1], [0, 1]), ([-2], [1]), ([0], [0])])
def test_a_mix_of_lower_states_runs_only_the_layers_below_them(
    tiny_bert: Path, layers: list[int], states: list[int]
) -> None:
    embed = TransformerEmbedding(str(tiny_bert), layers=layers)
    assert embed.layers == states
    assert embed.network.config.num_hidden_layers == max(1, *states)  # of the model's 2
    with torch.no_grad():
        out = embed([WORDS], len(WORDS) + 1)
    expected = reference_states(tiny_bert, IDS)[states].mean(0)
    first = [0] + [pieces[0] + 1 for pieces in PIECES]  # [CLS], then each word's first piece
    torch.testing.assert_close(out[0], expected[first])


def brute_force_owner(j: int, starts: list[int], window: int) -> int:
    """The window holding j farthest from its edges (the later one on ties)."""
    inside = [k for k, s in enumerate(starts) if s <= j < s + window]
    return max(inside, key=lambda k: (min(j - starts[k], starts[k] + window - 1 - j), k))


@given(st.integers(1, 60), st.integers(1, 12), st.data())
def test_windows_cover_everything_and_read_each_subword_where_most_central(
    n: int, window: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, window - 1))
    starts = window_starts(n, window, overlap)
    assert starts[0] == 0
    assert min(starts[-1] + window, n) == n
    assert all(b - a <= window - overlap for a, b in itertools.pairwise(starts))
    owners = assign_windows(n, starts, window)
    assert [k for k, _ in owners] == [brute_force_owner(j, starts, window) for j in range(n)]
    assert all(starts[k] + offset == j for j, (k, offset) in enumerate(owners))


def test_long_sentences_run_in_windows(tiny_bert: Path) -> None:
    words = ["the", "cat", "sat", "on", "a", "issue", "today", "."] * 2  # 16 subwords
    ids = [5, 6, 7, 17, 9, 18, 19, 8] * 2
    whole = TransformerEmbedding(str(tiny_bert), layers=[-1])
    windowed = TransformerEmbedding(str(tiny_bert), layers=[-1], window=6, overlap=2)
    with torch.no_grad():
        out = windowed([words], 17)[0]
        # A sentence that fits in one window gives what the unwindowed model gives.
        torch.testing.assert_close(windowed([words[:6]], 7)[0], whole([words[:6]], 7)[0])
    assert windowed.window == 6
    starts = window_starts(16, 6, 2)
    assert starts == [0, 4, 8, 10]
    for j, (k, offset) in enumerate(assign_windows(16, starts, 6)):
        chunk = ids[starts[k] : starts[k] + 6]
        torch.testing.assert_close(out[j + 1], reference_states(tiny_bert, chunk)[-1][offset + 1])
    torch.testing.assert_close(out[0], reference_states(tiny_bert, ids[:6])[-1][0])


@given(st.lists(st.integers(1, 40), min_size=1, max_size=30), st.integers(1, 120))
def test_chunks_partition_the_windows_within_the_budget(lengths: list[int], budget: int) -> None:
    groups = chunk_windows(lengths, budget)
    assert sorted(w for group in groups for w in group) == list(range(len(lengths)))
    for group in groups:
        longest = max(lengths[w] for w in group)
        assert len(group) == 1 or len(group) * longest <= budget
    order = [lengths[w] for group in groups for w in group]
    assert order == sorted(order)  # shortest first: a group pads to little


@pytest.mark.parametrize("budget", [1, 13, 10**6])
def test_a_batch_of_mixed_lengths_gives_each_sentence_its_unbatched_states(
    tiny_bert: Path, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transformer, "CHUNK_TOKENS", budget)
    sentences = [WORDS * 3, ["the"], WORDS[:2], ["cat", "sat", "."], WORDS]
    embed = TransformerEmbedding(str(tiny_bert), pooling="mean", window=9, overlap=3)
    calls = []
    embed.network.register_forward_hook(lambda *_: calls.append(1))
    with torch.no_grad():
        batch = embed(sentences, 16)
        assert len(calls) == {1: 8, 13: 7, 10**6: 1}[budget]  # windows of 3, 5, 6, 10 and 4x 11
        alone = [embed([s], len(s) + 1)[0] for s in sentences]
    for b, sentence in enumerate(sentences):
        torch.testing.assert_close(batch[b, : len(sentence) + 1], alone[b])
        torch.testing.assert_close(
            batch[b, len(sentence) + 1 :], torch.zeros(15 - len(sentence), 8)
        )


def test_cached_states_match_fresh_ones_and_skip_the_model(tiny_bert: Path) -> None:
    fresh = TransformerEmbedding(str(tiny_bert), pooling="mean")
    cached = TransformerEmbedding(str(tiny_bert), pooling="mean", cache=True)
    calls = []
    cached.network.register_forward_hook(lambda *_: calls.append(1))
    forms = [WORDS, ["the", "cat"], WORDS]
    with torch.no_grad():
        expected = fresh(forms, 6)
        torch.testing.assert_close(cached(forms, 6), expected, atol=1e-2, rtol=1e-2)  # float16
        assert len(calls) == 1
        torch.testing.assert_close(cached(forms[1:], 7)[:, :6], expected[1:], atol=1e-2, rtol=1e-2)
    assert len(calls) == 1
    # A model rebuilt from a checkpoint's config parses new sentences: it keeps none of them.
    rebuilt = TransformerEmbedding(**cached.config())
    rebuilt.network.register_forward_hook(lambda *_: calls.append(1))
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(forms, 6), expected)
        torch.testing.assert_close(rebuilt(forms, 6), expected)
    assert len(calls) == 3
    with pytest.raises(ValueError, match="needs a frozen model"):
        TransformerEmbedding(str(tiny_bert), cache=True, finetune=True)


def test_the_subword_cache_of_a_loaded_parser_is_bounded(
    tiny_bert: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A service parsing new forms without end kept every one's subword ids (~250 bytes each).
    monkeypatch.setattr(transformer, "MAX_CACHED_FORMS", 3)
    embed = TransformerEmbedding(str(tiny_bert))
    forms = ["cat", "dogs", "sat", "mat", "cat", "zebra"]
    fresh = TransformerEmbedding(str(tiny_bert))
    for form in forms:
        assert embed.subwords(form) == fresh.tokenizer(form, add_special_tokens=False)["input_ids"]
        assert len(embed._subwords) <= 3
    assert embed(  # the same states however often the cache started again
        [forms], len(forms) + 1
    ).equal(fresh([forms], len(forms) + 1))


def test_frozen_transformer_gets_no_gradient_and_stays_out_of_the_state_dict(
    tiny_bert: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    torch.manual_seed(0)
    encoder = TransformerEncoder(vocabs, model=str(tiny_bert), finetune=False)
    parser = BiaffineParser(vocabs, encoder, arc_mlp=6, rel_mlp=3)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    parser.loss(parser(batch), batch).backward()
    assert all(p.grad is None for p in encoder.embedding.network.parameters())
    assert encoder.embedding.mix.weights.grad is not None
    assert not any(k.startswith("encoder.embedding.model") for k in parser.state_dict())
    assert parser.double().encoder.embedding.network.embeddings.word_embeddings.weight.dtype == (
        torch.float64
    )


def test_finetuned_transformer_trains_and_is_saved(
    tiny_bert: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    torch.manual_seed(0)
    encoder = TransformerEncoder(vocabs, model=str(tiny_bert), finetune=True, dropout=0.0)
    parser = BiaffineParser(vocabs, encoder, arc_mlp=16, rel_mlp=8, mlp_dropout=0.0)
    assert any(k.startswith("encoder.embedding.model.") for k in parser.state_dict())
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = parser.loss(parser(batch), batch)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    assert encoder.embedding.network.embeddings.word_embeddings.weight.grad is not None


def test_kept_word_embeddings_neither_train_nor_go_into_checkpoints(
    tmp_path: Path, tiny_bert: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    torch.manual_seed(0)
    options = {"model": str(tiny_bert), "finetune": True, "keep_words": True}
    parser = biaffine_parser(vocabs, **TINY, transformer=options)
    embedding = parser.encoder.transformer
    table = embedding.network.get_input_embeddings().weight
    before = table.clone()
    names = [name for name, _ in parser.named_parameters()]
    assert not any("word_embeddings" in name for name in names)
    assert any(name.startswith("encoder.transformer.model.encoder.layer.0.") for name in names)
    assert not any("word_embeddings" in name for name in parser.state_dict())
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    optimizer = torch.optim.Adam(parser.parameters(), lr=1e-2)
    layer = embedding.network.encoder.layer[0].attention.self.query.weight
    trained = layer.clone()
    for _ in range(3):
        optimizer.zero_grad()
        parser.loss(parser(batch), batch).backward()
        optimizer.step()
    assert torch.equal(table, before)
    assert table.grad is None
    assert not torch.equal(layer, trained)  # the layers above it train
    path = tmp_path / "model.pt"
    save_model(path, parser.eval(), vocabs)
    reloaded = checkpoint.build_model(checkpoint.load(path))
    torch.testing.assert_close(reloaded(batch).arc_scores, parser(batch).arc_scores)
    assert parser.double().encoder.transformer.network.get_input_embeddings().weight.dtype == (
        torch.float64
    )
    with pytest.raises(ValueError, match="keep_words applies to a fine-tuned transformer"):
        TransformerEmbedding(str(tiny_bert), keep_words=True)


def test_bilstm_encoder_with_transformer_features_round_trips_a_checkpoint(
    tmp_path: Path, tiny_bert: Path, sentences: list[Sentence], vocabs: Vocabs
) -> None:
    torch.manual_seed(0)
    parser = biaffine_parser(vocabs, **TINY, transformer={"model": str(tiny_bert)}).eval()
    assert parser.encoder.transformer.n_out == 8
    path = tmp_path / "model.pt"
    save_model(path, parser, vocabs)
    batch = collate(encode(sentences, vocabs), range(len(sentences)))
    reloaded = checkpoint.build_model(checkpoint.load(path))
    torch.testing.assert_close(reloaded(batch).arc_scores, parser(batch).arc_scores)


def test_different_weights_are_a_checksum_error(tiny_bert: Path, vocabs: Vocabs) -> None:
    encoder = TransformerEncoder(vocabs, model=str(tiny_bert))
    config = encoder.config() | {"sha256": "0" * 64}
    with pytest.raises(ValueError, match=r"weights sha256 .* differ from 000000000000"):
        TransformerEncoder(vocabs, **{k: v for k, v in config.items() if k != "kind"})


def test_bad_options_are_named(tiny_bert: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no config\.json"):
        TransformerEmbedding(str(tmp_path))
    with pytest.raises(ValueError, match="pooling 'max'"):
        TransformerEmbedding(str(tiny_bert), pooling="max")
    with pytest.raises(ValueError, match=r"window=39 must be in \[1, 38\]"):
        TransformerEmbedding(str(tiny_bert), window=39)
    with pytest.raises(ValueError, match=r"layers \[0, 3\] must be in \[-3, 2\]"):
        TransformerEmbedding(str(tiny_bert), layers=[0, 3])  # state 3 once read state 0
    with pytest.raises(ValueError, match=r"layers \[\] mixes no state: give some of 0"):
        TransformerEmbedding(str(tiny_bert), layers=[])  # max(1, *[]): a TypeError
