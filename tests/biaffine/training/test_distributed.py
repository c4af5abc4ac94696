"""Training and parsing on 2 processes (gloo, CPU) against 1 process: same weights, same bytes."""

from __future__ import annotations

import copy
import fcntl
import json
import os
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp
from builders import biaffine_parser
from ddp_workers import (
    gradient_job,
    predict_job,
    run_processes,
    tiny_config,
    train_job,
)

from biaffine import checkpoint, distributed
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.predicting import predict
from biaffine.training import train
from biaffine.training.loop import ParserLoss

TINY_CONLLU = Path(__file__).parents[2] / "data" / "tiny.conllu"
SMALL = {"word_dim": 16, "char_dim": 8, "char_hidden": 8, "char_out": 16, "tag_dim": 8}
SMALL |= {"lstm_hidden": 16, "lstm_layers": 1, "arc_mlp": 16, "rel_mlp": 8, "tag_mlp": 8}


def weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(run_dir / "last.pt").state_dict


def epoch_records(run_dir: Path) -> list[dict]:
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if k != "seconds"} for r in records]


def assert_close(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6, msg=name)


def test_ddp_averages_the_gradients_of_both_ranks_exactly(
    sentences, vocabs, one_torch_thread, tmp_path: Path
) -> None:
    torch.manual_seed(0)
    model = biaffine_parser(vocabs, **SMALL)
    batches = list(batches_by_tokens(encode(sentences, vocabs), 10, shuffle=False))[:2]
    run_processes(gradient_job, model, batches, tmp_path / "grads.pt")
    averaged = torch.load(tmp_path / "grads.pt", weights_only=True)
    reference = []
    for rank, batch in enumerate(batches):
        alone = copy.deepcopy(model)
        torch.manual_seed(rank)
        ParserLoss(alone)(batch).backward()
        reference.append({name: p.grad for name, p in alone.named_parameters()})
    assert averaged.keys() == reference[0].keys()
    for name, grad in averaged.items():
        # Each rank divides by 2 before the all-reduce sums: exact in floating point.
        assert torch.equal(grad, (reference[0][name] + reference[1][name]) / 2), name


@pytest.mark.slow
@pytest.mark.parametrize("model", ["biaffine", "arc_hybrid", "combined"])
def test_two_processes_equal_one_accumulating_two_and_only_rank_0_writes(
    one_torch_thread, tmp_path: Path, model: str
) -> None:
    # Every parser family trains under DDP: a parameter left out of a step's loss would stop
    # DDP's reducer at the next step; the combined model has two heads on one encoder.
    run, elsewhere = tmp_path / "two", tmp_path / "rank1"
    # Rank 1 is handed another folder: it must leave it uncreated.
    run_processes(train_job, [run, elsewhere], ["trainer.max_epochs=2", f"model={model}"], None)
    assert not elsewhere.exists()
    written = {p.name for p in run.iterdir()} - {"curves.png"}  # drawn when matplotlib is there
    assert written == {"best.pt", "last.pt", "metrics.jsonl", "config.yaml", ".lock"}
    options = ("trainer.max_epochs=2", "trainer.accumulate=2", f"model={model}")
    one = train(tiny_config(*options), tmp_path / "one")
    # 5 batches an epoch, 2 per step: 3 steps, the last of one batch.
    assert [r["step"] for r in epoch_records(run)[:2]] == [3, 6]
    assert one.steps == 6
    assert_close(weights(run), weights(tmp_path / "one"))
    two_records, one_records = epoch_records(run), epoch_records(tmp_path / "one")
    for ours, theirs in zip(two_records, one_records, strict=True):
        assert ours.keys() == theirs.keys()
        if "train_loss" in theirs:  # the test record has none (pytest 9 refuses approx(None))
            assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-5)
    # The test can fail: one batch per step is another model.
    plain = train(tiny_config("trainer.max_epochs=2", f"model={model}"), tmp_path / "plain")
    assert plain.steps == 10
    assert not all(torch.allclose(a, b) for a, b in zip(
        weights(run).values(), weights(tmp_path / "plain").values(), strict=True
    ))  # fmt: skip


@pytest.mark.slow
def test_two_processes_accumulating_two_equal_one_accumulating_four(
    one_torch_thread, tmp_path: Path
) -> None:
    # An epoch's last step of one batch ran no synchronised backward once the rounds were cut
    # to the batches there are: each rank stepped on its own gradient, the weights drifted.
    run, elsewhere = tmp_path / "two", tmp_path / "rank1"
    run_processes(
        train_job, [run, elsewhere], ["trainer.max_epochs=2", "trainer.accumulate=2"], None
    )
    one = train(tiny_config("trainer.max_epochs=2", "trainer.accumulate=4"), tmp_path / "one")
    # 5 batches an epoch, 4 per step: 2 steps, the last of one batch.
    assert [r["step"] for r in epoch_records(run)[:2]] == [2, 4]
    assert one.steps == 4
    assert_close(weights(run), weights(tmp_path / "one"))


@pytest.mark.slow
def test_a_rank_killed_mid_epoch_resumes_to_the_uninterrupted_model(
    one_torch_thread, tmp_path: Path
) -> None:
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    run_processes(train_job, [whole, whole], ["trainer.max_epochs=3"], None)
    # Rank 1 runs 3 batches an epoch (the last a stand-in): its 5th is in epoch 2.
    with pytest.raises(mp.ProcessExitedException):
        run_processes(train_job, [parts, parts], ["trainer.max_epochs=3"], 5)
    assert [r["epoch"] for r in epoch_records(parts)] == [1]
    run_processes(train_job, [parts, parts], ["trainer.max_epochs=3", "trainer.resume=true"], None)
    assert epoch_records(parts) == epoch_records(whole)
    whole_weights, parts_weights = weights(whole), weights(parts)
    assert all(torch.equal(whole_weights[k], parts_weights[k]) for k in whole_weights)


@pytest.mark.slow
def test_a_locked_run_folder_is_refused_on_every_rank(one_torch_thread, tmp_path: Path) -> None:
    # Another run holds the folder: rank 0 is refused, and rank 1 must not train alone
    # (it would wait for rank 0 in DDP until the timeout).
    fd = os.open(tmp_path / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(mp.ProcessRaisedException, match="another run is writing"):
            run_processes(train_job, [tmp_path, tmp_path], ["trainer.max_epochs=1"], None)
    finally:
        os.close(fd)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]


@pytest.mark.slow
def test_two_process_prediction_is_byte_for_byte_the_one_process_output(
    one_torch_thread, tmp_path: Path
) -> None:
    train(tiny_config("trainer.max_epochs=1"), tmp_path / "run")
    best = tmp_path / "run" / "best.pt"
    one, two = tmp_path / "one.conllu", tmp_path / "two.conllu"
    predict(best, TINY_CONLLU, one, chunk_sentences=2, max_tokens=10)
    # 7 sentences in chunks of 2: rounds of 2 chunks, the last round a single sentence.
    run_processes(predict_job, best, TINY_CONLLU, two, 2)
    assert two.read_bytes() == one.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.conllu", "run", "two.conllu"]


def test_stdin_is_refused_on_several_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(distributed, "world", lambda: distributed.World(rank=0, size=2))
    with pytest.raises(ValueError, match=r"stdin\) with 2 processes"):
        predict("unused.pt", "-")


def test_a_numbered_gpu_is_refused_on_several_processes() -> None:
    two = distributed.World(rank=1, size=2, local_rank=1)
    assert distributed.local_device(torch.device("cuda"), two) == torch.device("cuda:1")
    assert distributed.local_device(torch.device("cpu"), two) == torch.device("cpu")
    with pytest.raises(ValueError, match="use device=cuda"):
        distributed.local_device(torch.device("cuda:0"), two)
