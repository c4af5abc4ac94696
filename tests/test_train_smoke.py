"""End to end on the tiny fixture treebank: train, then predict; by function and by command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize
from omegaconf import OmegaConf

from biaffine import checkpoint
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import ConlluError, read_conllu
from biaffine.inference import DecoderSettings
from biaffine.metrics import is_well_formed
from biaffine.models import card
from biaffine.predicting import predict, quantized
from biaffine.training import TrainResult, train

ROOT = Path(__file__).parent.parent
TINY = ROOT / "tests" / "data" / "tiny.conllu"
OVERRIDES = ["experiment=smoke", "trainer.max_epochs=2", "trainer.progress_bar=false"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> TrainResult:
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", overrides=OVERRIDES)
    return train(cfg, tmp_path_factory.mktemp("run"))


def assert_only_head_and_deprel_differ(source: str, output: str) -> None:
    """Same lines in the same order; word lines may differ in HEAD and DEPREL only."""
    source_lines, output_lines = source.splitlines(), output.splitlines()
    assert len(output_lines) == len(source_lines)
    for number, (ours, theirs) in enumerate(zip(output_lines, source_lines, strict=True), 1):
        if theirs.split("\t", 1)[0].isdigit():
            ours_cols, theirs_cols = ours.split("\t"), theirs.split("\t")
            assert len(ours_cols) == 10, number
            del ours_cols[6:8], theirs_cols[6:8]
            assert ours_cols == theirs_cols, f"line {number}"
        else:
            assert ours == theirs, f"line {number}"


def assert_parsed_trees(path: Path, rels: list[str]) -> None:
    sentences = list(read_conllu(path, require_trees=True))
    assert len(sentences) == 7
    for sentence in sentences:
        assert is_well_formed(sentence.heads), sentence.line
        assert set(sentence.deprels) <= set(rels)


def test_training_writes_checkpoints_metrics_and_config(trained: TrainResult) -> None:
    run = trained.run_dir
    assert (trained.epochs, trained.stop_reason) == (2, "max_epochs")
    assert trained.test is not None
    assert trained.test.n_sentences == 7
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [(r["event"], r["epoch"]) for r in records] == [
        ("epoch", 1),
        ("epoch", 2),
        ("test", trained.best_epoch),
    ]
    assert records[-1]["test"]["las"] == trained.test.las
    config = OmegaConf.load(run / "config.yaml")
    assert config.trainer.max_epochs == 2
    assert config.data.treebank == "tests/data"
    for name in ("best.pt", "last.pt"):
        payload = torch.load(run / name, weights_only=True)  # plain data only
        metadata = json.loads(payload["metadata"])
        assert metadata["config"]["model"]["encoder"]["lstm_hidden"] == 16
        assert payload["parser"] == "biaffine"
    assert torch.load(run / "best.pt", weights_only=True)["training_state"] is None


def test_training_draws_its_curves(trained: TrainResult) -> None:
    pytest.importorskip("matplotlib")
    png = trained.run_dir / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_mtime >= (trained.run_dir / "metrics.jsonl").stat().st_mtime - 1


def test_predict_changes_only_head_and_deprel(trained: TrainResult, tmp_path: Path) -> None:
    out = tmp_path / "out.conllu"
    result = predict(trained.run_dir / "best.pt", TINY, out, evaluate=True)
    assert (result.n_sentences, result.n_words) == (7, 35)
    assert_only_head_and_deprel_differ(TINY.read_text(), out.read_text())
    rels = checkpoint.load(trained.run_dir / "best.pt").vocabs.rels.itos
    assert_parsed_trees(out, rels)
    # Same model, data and decoder as the final test evaluation of training.
    assert result.scores == trained.test


@pytest.mark.parametrize("decoder", [DecoderSettings("eisner", True), DecoderSettings("greedy")])
def test_predict_with_other_decoders(
    trained: TrainResult, tmp_path: Path, decoder: DecoderSettings
) -> None:
    out = tmp_path / "out.conllu"
    predict(trained.run_dir / "last.pt", TINY, out, decoder=decoder, chunk_sentences=3)
    assert_only_head_and_deprel_differ(TINY.read_text(), out.read_text())


def test_predict_in_int8_gives_trees_and_refuses_a_gpu(trained: TrainResult, tmp_path: Path):
    out = tmp_path / "out.conllu"
    result = predict(trained.run_dir / "best.pt", TINY, out, evaluate=True, int8=True)
    assert_only_head_and_deprel_differ(TINY.read_text(), out.read_text())
    assert_parsed_trees(out, checkpoint.load(trained.run_dir / "best.pt").vocabs.rels.itos)
    assert result.scores is not None
    assert result.scores.n_words == 35
    with pytest.raises(ValueError, match="int8=true runs on the CPU only"):
        predict(trained.run_dir / "best.pt", TINY, out, int8=True, device="cuda")


def test_quantized_model_has_int8_lstms_and_close_scores(trained: TrainResult) -> None:
    saved = checkpoint.load(trained.run_dir / "best.pt")
    model = checkpoint.build_model(saved).eval()
    small = quantized(model)
    assert all(not isinstance(m, torch.nn.LSTM) for m in small.modules())
    assert any(isinstance(m, torch.nn.LSTM) for m in model.modules())  # the original is kept
    batch = next(
        batches_by_tokens(encode(list(read_conllu(TINY)), saved.vocabs), 1000, shuffle=False)
    )
    with torch.inference_mode():
        full, approx = model(batch).arc_scores, small(batch).arc_scores
    finite = torch.isfinite(full)
    assert torch.equal(finite, torch.isfinite(approx))
    assert torch.allclose(full[finite], approx[finite], atol=0.05 * float(full[finite].abs().max()))


def test_predict_plain_text_input(trained: TrainResult, tmp_path: Path) -> None:
    forms = [sentence.forms for sentence in read_conllu(TINY)]
    source = tmp_path / "in.txt"
    source.write_text("".join(" ".join(f) + "\n" for f in forms if " " not in "".join(f)))
    out = tmp_path / "out.conllu"
    result = predict(trained.run_dir / "best.pt", source, out, input_format="text", evaluate=True)
    parsed = list(read_conllu(out, require_trees=True))
    assert [s.forms for s in parsed] == [f for f in forms if " " not in "".join(f)]
    assert result.scores is None  # no gold trees in plain text: evaluation is skipped


def test_predict_refuses_to_overwrite_its_input(trained: TrainResult, tmp_path: Path) -> None:
    copy = tmp_path / "in.conllu"
    copy.write_text(TINY.read_text())
    with pytest.raises(ValueError, match="is the input file"):
        predict(trained.run_dir / "best.pt", copy, copy)


def test_predict_refuses_a_hard_link_to_its_input(trained: TrainResult, tmp_path: Path) -> None:
    source, link = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text(TINY.read_text())
    os.link(source, link)
    with pytest.raises(ValueError, match="is the input file"):
        predict(trained.run_dir / "best.pt", source, link)
    assert source.read_text() == TINY.read_text()


def test_a_failed_predict_leaves_the_old_output_untouched(
    trained: TrainResult, tmp_path: Path
) -> None:
    # The first sentences parse (and, chunk by chunk, stream out) before the bad line is read.
    source, out = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text(TINY.read_text() + "1\tbroken line\n\n")
    out.write_text("an earlier result\n")
    with pytest.raises(ConlluError):
        predict(trained.run_dir / "best.pt", source, out, chunk_sentences=1)
    assert out.read_text() == "an earlier result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.conllu", "out.conllu"]


def test_predict_output_mode_follows_the_umask(trained: TrainResult, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        predict(trained.run_dir / "best.pt", TINY, tmp_path / "out.conllu")
    finally:
        os.umask(old)
    assert (tmp_path / "out.conllu").stat().st_mode & 0o777 == 0o644


def run(args: list[str], cwd: Path, status: int = 0, **env: str) -> subprocess.CompletedProcess:
    # The decoders run as plain Python here: JIT-compiling them again in each child process
    # would dominate the test time, and the parse results are the same.
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "HYDRA_FULL_ERROR": "1", **env}
    result = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == status, result.stderr[-3000:]
    return result


def test_user_errors_are_one_line_on_stderr_and_exit_2(tmp_path: Path) -> None:
    missing = run([str(ROOT / "predict.py"), f"checkpoint={tmp_path / 'best.pt'}", f"input={TINY}"],
                  tmp_path, status=2)  # fmt: skip
    assert missing.stderr == f"error: {tmp_path / 'best.pt'}: no such checkpoint file\n"
    assert missing.stdout == ""
    run_dir = tmp_path / "run"
    args = [str(ROOT / "train.py"), "data.root=/nonexistent", f"hydra.run.dir={run_dir}"]
    no_data = run(args, tmp_path, status=2)
    assert "Traceback" not in no_data.stderr
    assert no_data.stderr.splitlines()[-1].startswith("error: treebank file(s) not found")
    assert "data=tiny (or experiment=smoke) works offline" in no_data.stderr
    assert not run_dir.exists()  # the failed run wrote nothing, so left no folder behind
    debug = run(args, tmp_path, status=1, ROOTPARSE_DEBUG="1")
    assert "Traceback" in debug.stderr


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        # null was read with bool(): dev's trees decoded with several words on ROOT.
        ("decoder.root_constraint=null", "decoder.root_constraint=null: expected true or false"),
        ("decoder.joint_labels=abc", "decoder.joint_labels='abc': expected true or false"),
        ("search.beam_size=abc", "search.beam_size='abc': expected an integer"),
        # "'<' not supported between instances of 'str' and 'int'", naming nothing
        ("model.arc_mlp=abc", "model.arc_mlp='abc': expected an integer"),
        ("model.encoder.lstm_hidden=abc", "model.encoder.lstm_hidden='abc': expected an integer"),
        # A new run started, resume_from unread.
        (
            "trainer.resume_from=x/last.pt",
            "trainer.resume_from=x/last.pt is read with trainer.resume=true: add it to continue "
            "that run, or leave resume_from out",
        ),
    ],
)
def test_train_py_refuses_model_decoder_and_search_settings_of_the_wrong_type(
    tmp_path: Path, setting: str, message: str
) -> None:
    run_dir = tmp_path / "run"
    args = [str(ROOT / "train.py"), "experiment=smoke", "model=arc_hybrid", "search=beam"]
    refused = run([*args, setting, f"hydra.run.dir={run_dir}"], tmp_path, status=2)
    assert refused.stderr.splitlines()[-1] == f"error: {message}"
    assert not run_dir.exists()


def test_command_line_multirun_train_then_predict_to_stdout(tmp_path: Path) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    sweep = tmp_path / "sweep"
    train_args = [str(ROOT / "train.py"), "-m", "experiment=smoke", "trainer.max_epochs=1"]
    train_args += ["trainer.seed=1,2", f"hydra.sweep.dir={sweep}"]
    run(train_args, cwd)
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert [p.name for p in jobs] == ["0_tiny", "1_tiny"]
    for job in jobs:
        assert {"best.pt", "last.pt", "metrics.jsonl", "config.yaml", "train.log"} <= {
            p.name for p in job.iterdir()
        }
    assert "epoch 1" in (jobs[0] / "train.log").read_text()
    predict_args = [str(ROOT / "predict.py"), f"checkpoint={jobs[0] / 'best.pt'}"]
    predicted = run([*predict_args, f"input={TINY}", "eval=true"], cwd)
    assert_only_head_and_deprel_differ(TINY.read_text(), predicted.stdout)
    assert "sentences/s" in predicted.stderr
    assert "UAS" in predicted.stderr
    assert list(cwd.iterdir()) == []  # nothing written into the working directory


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def smoke_run(run_dir: Path, epochs: int) -> list[str]:
    """train.py's arguments for the smoke recipe, ``epochs`` epochs, into ``run_dir``."""
    recipe = ["experiment=smoke", f"trainer.max_epochs={epochs}", f"hydra.run.dir={run_dir}"]
    return [str(ROOT / "train.py"), *recipe]


def test_a_refused_run_leaves_its_folder_as_it_was_and_overwrite_starts_afresh(
    tmp_path: Path,
) -> None:
    # A smoke run into runs/smoke (docs/training.md), run twice, must not replace
    # the first run, nor touch Hydra's record and log of it (.hydra/, train.log).
    run_dir = tmp_path / "runs" / "smoke"
    args = smoke_run(run_dir, epochs=1)
    run(args, tmp_path)
    before = snapshot(run_dir)
    assert {".hydra/config.yaml", ".hydra/overrides.yaml", "train.log", "best.pt"} <= set(before)
    again = run(args, tmp_path, status=2)
    assert again.stderr == (
        f"error: {run_dir} holds a run already (last.pt, best.pt, metrics.jsonl): continue it "
        "with trainer.resume=true, replace it with trainer.overwrite=true, or choose another "
        "run folder (hydra.run.dir; hydra.sweep.dir in a sweep)\n"
    )
    assert snapshot(run_dir) == before
    conflicting = run([*args, "trainer.resume=true", "trainer.seed=3"], tmp_path, status=2)
    assert conflicting.stderr.startswith("error: cannot resume with settings")
    assert conflicting.stderr.count("\n") == 1
    assert snapshot(run_dir) == before
    # A key added to a section that takes new keys was recorded and never read: the saved
    # optimizer state kept its own amsgrad.
    added = run([*args, "trainer.resume=true", "+optimizer.amsgrad=true"], tmp_path, status=2)
    assert added.stderr == (
        "error: cannot resume with settings the interrupted run did not have: "
        "optimizer.amsgrad=True (the interrupted run had no such setting); drop those "
        "overrides, or start a new run\n"
    )
    assert snapshot(run_dir) == before
    # Settings refused only once overwrite had removed the run, or never (lr=inf trained NaN;
    # a deletion and a size past what loads were tracebacks): refused before the folder.
    refused = {
        "trainer.lr_decay=0": "error: trainer.lr_decay=0 must be in (0, 1]\n",
        "trainer.ema_decay=2": "error: trainer.ema_decay=2 must be in (0, 1), or null to score",
        "optimizer.lr=inf": "error: optimizer.lr=inf must be finite and at most 3.403e+38\n",
        "~trainer.clip": "error: ~trainer.clip: a setting cannot be taken away; give trainer",
        "model.encoder.lstm_hidden=100000": "error: model.encoder.lstm_hidden=100000 is above",
        "trainer.min_word_count=0": "error: trainer.min_word_count=0 must be >= 1\n",
    }
    for setting, said in refused.items():
        answer = run([*args, "trainer.overwrite=true", setting], tmp_path, status=2)
        assert answer.stderr.startswith(said)
        assert answer.stderr.count("\n") == 1
        assert snapshot(run_dir) == before
    run([*args, "trainer.overwrite=true", "trainer.seed=2"], tmp_path)
    records = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["event"] for r in records] == ["epoch", "test"]
    assert "trainer.seed=2" in (run_dir / ".hydra" / "overrides.yaml").read_text()
    assert (run_dir / "train.log").read_text().count("stopped (max_epochs)") == 1


def test_a_users_own_files_of_a_runs_names_are_kept_without_overwrite(tmp_path: Path) -> None:
    # A folder without a run's record but with the user's config.yaml: replaced by the new
    # run's, status 0.
    run_dir = tmp_path / "mine"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("my: settings\n")
    refused = run(smoke_run(run_dir, epochs=1), tmp_path, status=2)
    assert refused.stderr.startswith(f"error: {run_dir} holds config.yaml, which no run there")
    assert (run_dir / "config.yaml").read_text() == "my: settings\n"


def test_accumulating_more_batches_than_an_epoch_has_takes_one_step_an_epoch(
    tmp_path: Path,
) -> None:
    # Each step went through all 10**12 batches it would add up, present or not: no end.
    huge = [*smoke_run(tmp_path / "run", epochs=1), "trainer.accumulate=1000000000000"]
    run(huge, tmp_path)
    records = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert json.loads(records[0])["step"] == 1


def test_a_resumed_runs_log_shows_its_two_legs_as_the_model_builder_reads_them(
    tmp_path: Path,
) -> None:
    # The builder tells a resumed run (whose overrides are its last start's) and its legs'
    # minutes apart by what the trainer logs: a change of wording must fail here.
    run_dir = tmp_path / "runs" / "smoke"
    run(smoke_run(run_dir, epochs=1), tmp_path)
    assert card.run_facts(run_dir, "train.py").get("resumes", 0) == 0
    run([*smoke_run(run_dir, epochs=2), "trainer.resume=true"], tmp_path)
    log = (run_dir / "train.log").read_text(encoding="utf-8")
    assert card.run_facts(run_dir, "train.py").get("resumes", 0) == 1
    assert log.count(card.LEG_START) == 2
    assert "trainer.resume=true" in (run_dir / ".hydra" / "overrides.yaml").read_text()


def test_a_training_killed_by_sigterm_leaves_no_temporary_file_and_resumes(tmp_path: Path) -> None:
    # Python's default for SIGTERM ended the process at once: 5 kills in 6 left a
    # .curves.png.*.tmp in the run folder, which no resume or overwrite removed.
    run = tmp_path / "run"
    command = [sys.executable, str(ROOT / "train.py"), "experiment=smoke", "trainer.threads=1"]
    command += ["trainer.max_epochs=100000", f"hydra.run.dir={run}"]
    process = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    while not (run / "last.pt").exists():
        assert process.poll() is None, process.communicate()[1][-2000:]
        threading.Event().wait(0.1)
    threading.Event().wait(1.0)  # a few epochs more, each writing last.pt and curves.png
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "Traceback" not in err
    assert [p.name for p in run.iterdir() if p.name.endswith(".tmp")] == []
