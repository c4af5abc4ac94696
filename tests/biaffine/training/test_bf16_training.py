"""bfloat16: training (``trainer.bf16``; losses and weights stay float32) and parsing (``bf16``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize
from torch.nn.utils.rnn import PackedSequence

import decoding
from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.data.batching import collate, encode
from biaffine.data.conllu import read_conllu
from biaffine.data.vocab import build_vocabs
from biaffine.predicting import predict
from biaffine.training import build_model, train
from biaffine.training.compose import prepare_training
from biaffine.training.loop import ParserLoss

TINY = Path(__file__).parents[2] / "data" / "tiny.conllu"
NATIVE_BF16 = torch.ops.mkldnn._is_mkldnn_bf16_supported()
needs_bf16 = pytest.mark.skipif(
    not NATIVE_BF16, reason="this CPU has no native bfloat16 (AVX512-BF16 or AMX)"
)
SMALL = ["model.encoder.lstm_hidden=32", "model.arc_mlp=32", "model.rel_mlp=16"]


def config(*overrides: str):
    base = ["experiment=smoke", "trainer.max_tokens=40", "trainer.progress_bar=false"]
    with initialize(version_base="1.3", config_path="../../../conf"):
        return compose("train", overrides=[*base, *overrides])


@pytest.fixture
def lstm_dtypes(monkeypatch: pytest.MonkeyPatch) -> set[torch.dtype]:
    """The output dtypes of the sentence BiLSTMs run while the test runs."""
    seen: set[torch.dtype] = set()
    original = torch.nn.LSTM.forward

    def recording(self, *args, **kwargs):
        output = original(self, *args, **kwargs)
        if not isinstance(args[0], PackedSequence):
            seen.add(output[0].dtype)
        return output

    monkeypatch.setattr(torch.nn.LSTM, "forward", recording)
    return seen


def test_bf16_training_on_a_cpu_without_it_is_refused_before_the_run_dir_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=r"^trainer\.bf16=true needs a CPU with native bfloat16"):
        train(config("trainer.bf16=true"), run_dir)
    assert not run_dir.exists()


@needs_bf16
def test_bf16_training_runs_the_encoder_in_bf16_and_keeps_float32_weights(
    tmp_path: Path, lstm_dtypes: set[torch.dtype]
) -> None:
    result = train(config("trainer.bf16=true", "trainer.max_epochs=2"), tmp_path)
    assert lstm_dtypes == {torch.bfloat16}  # training, dev and test parsing alike
    assert result.test is not None
    assert 0.0 <= result.test.las <= 100.0
    saved = checkpoint.load(tmp_path / "best.pt").state_dict
    assert {value.dtype for value in saved.values() if value.is_floating_point()} == {torch.float32}


def _loss_and_gradient(module: ParserLoss, batch, bf16: bool) -> tuple[torch.Tensor, torch.Tensor]:
    module.zero_grad(set_to_none=True)
    torch.manual_seed(0)  # the same dropout masks in both precisions
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = module(batch)
    loss.backward()
    grads = [p.grad.flatten() for p in module.parameters() if p.grad is not None]
    return loss.detach(), torch.cat(grads)


@needs_bf16
@pytest.mark.parametrize(
    "overrides",
    [
        ["model.loss=local"],
        ["model.loss=crf"],
        ["model=arc_hybrid"],
        ["model=arc_hybrid", "model.oracle=dynamic"],
        ["model=combined"],
    ],
    ids=["local", "crf", "arc_hybrid", "arc_hybrid_dynamic", "combined"],
)
def test_a_bf16_step_follows_the_float32_gradient(overrides: list[str]) -> None:
    cfg = config(*overrides, *SMALL)
    sentences = prepare_training(cfg.model, list(read_conllu(TINY)))
    vocabs = build_vocabs(sentences, min_word_count=1)
    torch.manual_seed(0)
    module = ParserLoss(build_model(cfg.model, vocabs))
    module.train()
    encoded = list(encode(sentences, vocabs))
    batch = collate(encoded, list(range(len(encoded))))
    loss32, grad32 = _loss_and_gradient(module, batch, bf16=False)
    loss16, grad16 = _loss_and_gradient(module, batch, bf16=True)
    assert loss16.dtype == torch.float32  # losses leave autocast's bfloat16
    assert torch.isfinite(grad16).all()
    assert loss16.item() == pytest.approx(loss32.item(), rel=0.02)
    cosine = torch.nn.functional.cosine_similarity(grad32, grad16, dim=0)
    assert cosine > 0.99


@needs_bf16
def test_every_api_method_runs_the_network_in_bf16(
    graph_checkpoint: Path, sentences, lstm_dtypes: set[torch.dtype]
) -> None:
    parser = Parser.load(graph_checkpoint, threads=1, bf16=True)
    plain = parser.parse(sentences)
    with_probs = parser.parse(sentences, probabilities=True)
    best = parser.kbest(sentences, 2)
    given = [[None] * len(s) for s in sentences]
    constrained = parser.parse_constrained(sentences, given)
    assert lstm_dtypes == {torch.bfloat16}
    for tree, probs, ranked, fixed in zip(plain, with_probs, best, constrained, strict=True):
        assert decoding.is_tree(np.array([-1, *tree.heads]))
        # One network pass in one precision: every method finds the same best tree.
        assert probs.heads == ranked[0].heads == fixed.heads == tree.heads
        assert all(0.0 < p <= 1.0 for p in probs.head_probs + probs.label_probs)


@needs_bf16
def test_bf16_trees_are_close_to_float32_ones(graph_checkpoint: Path, sentences) -> None:
    exact = Parser.load(graph_checkpoint, threads=1).parse(sentences, probabilities=True)
    fast = Parser.load(graph_checkpoint, threads=1, bf16=True).parse(sentences, probabilities=True)
    pairs = zip(exact, fast, strict=True)
    same = [a == b for x, y in pairs for a, b in zip(x.heads, y.heads, strict=True)]
    assert sum(same) >= 0.9 * len(same)
    for x, y in zip(exact, fast, strict=True):
        assert y.log_prob == pytest.approx(x.log_prob, abs=0.5)


def test_predict_refuses_bf16_without_native_support_and_with_int8(
    graph_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out.conllu"
    with pytest.raises(ValueError, match=r"^int8=true and bf16=true do not combine"):
        predict(graph_checkpoint, TINY, out, int8=True, bf16=True)
    monkeypatch.setattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", lambda: False)
    with pytest.raises(ValueError, match=r"^bf16=true needs a CPU with native bfloat16"):
        predict(graph_checkpoint, TINY, out, bf16=True)
    with pytest.raises(ValueError, match=r"^bf16=true needs a CPU with native bfloat16"):
        Parser.load(graph_checkpoint, bf16=True)
    assert not out.exists()


@needs_bf16
def test_predict_in_bf16_writes_trees(graph_checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.conllu"
    result = predict(graph_checkpoint, TINY, out, evaluate=True, bf16=True)
    assert result.scores is not None
    assert result.scores.malformed_rate == 0.0
    assert [s.forms for s in read_conllu(out)] == [s.forms for s in read_conllu(TINY)]
