"""Bad settings on the command line: one line on stderr, exit status 2, no run folder left."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from hydra import compose, initialize
from signalled import default_signals

from biaffine.cli import (
    check_composition,
    check_threads,
    check_types,
    config_options,
    describe,
    refuse_missing,
    refuse_run_dir_files,
    refuse_unknown_options,
    refuse_unknown_settings,
    settings_of,
)
from biaffine.runtime import set_threads

ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
CHECKPOINT = DATA / "format2-smoke.pt"
TINY = DATA / "tiny.conllu"
TRAIN = ["experiment=smoke", "trainer.max_epochs=1", "trainer.progress_bar=false"]


def load_script(name: str) -> ModuleType:
    """The module of a top-level script (``train.py``), imported without running it."""
    spec = importlib.util.spec_from_file_location(f"script_{name}", ROOT / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(ROOT / script), *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def assert_one_line_refusal(done: subprocess.CompletedProcess[str], pattern: str) -> None:
    """Exit status 2 and a single stderr line ``error: ...`` matching ``pattern``."""
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert re.fullmatch(f"error: {pattern}", lines[0]), lines[0]


@pytest.mark.parametrize("threads", [0, -1, "abc", True, 1.5])
def test_a_thread_count_that_is_no_positive_integer_is_refused(threads) -> None:
    before = torch.get_num_threads()
    with pytest.raises(ValueError, match=r"^trainer\.threads=.*: give a positive number"):
        check_threads(threads, "trainer.threads")
    with pytest.raises(ValueError, match=r"^threads=.*: give a positive number"):
        set_threads(threads)
    assert torch.get_num_threads() == before


def test_a_thread_count_torch_cannot_take_is_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match=r"^threads=99999999999999: give at most 4096 CPU"):
        set_threads(99999999999999)
    check_threads(4096)


@pytest.mark.parametrize("threads", [None, 1])
def test_a_positive_thread_count_or_none_is_taken(threads) -> None:
    before = torch.get_num_threads()
    try:
        set_threads(threads)
        assert torch.get_num_threads() == (threads or before)
    finally:
        torch.set_num_threads(before)


def test_missing_settings_are_named() -> None:
    refuse_missing([])
    with pytest.raises(ValueError, match=r"^missing setting input \(give input=\.\.\.\)$"):
        refuse_missing(["input"])
    with pytest.raises(ValueError, match=r"settings checkpoint, input \(give checkpoint=\.\.\. "):
        refuse_missing(["input", "checkpoint"])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_epochs": "abc"}, "trainer.max_epochs='abc': expected an integer"),
        ({"max_epochs": 2.5}, "trainer.max_epochs=2.5: expected an integer"),
        ({"max_epochs": True}, "trainer.max_epochs=True: expected an integer"),
        ({"clip": "5"}, "trainer.clip='5': expected a number"),
        ({"resume": 1}, "trainer.resume=1: expected true or false"),
    ],
)
def test_settings_of_another_type_are_refused(settings, message) -> None:
    types = {"max_epochs": int, "clip": float, "resume": bool}
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        check_types(settings, types, "trainer")


def test_a_top_level_setting_is_named_without_a_section() -> None:
    with pytest.raises(ValueError, match=r"^int8='no': expected true or false$"):
        check_types({"int8": "no"}, {"int8": bool}, "")


def test_settings_of_their_type_or_null_pass() -> None:
    types = {"max_epochs": int, "clip": float, "resume": bool, "absent": int}
    check_types({"max_epochs": 3, "clip": 5, "resume": False}, types, "trainer")
    check_types({"max_epochs": None, "clip": 0.5, "resume": True}, types, "trainer")


def test_a_message_of_several_lines_becomes_one() -> None:
    error = ValueError("Value 'abc' could not be converted\n    full_key: trainer.x\n")
    assert describe(error) == "Value 'abc' could not be converted; full_key: trainer.x"


def test_help_lists_a_new_recipe_once_its_file_exists_and_no_private_base(tmp_path) -> None:
    group = tmp_path / "experiment"
    group.mkdir()
    for name in ("_base", "b_recipe", "a_recipe", "notes"):
        (group / f"{name}.yaml").touch()
    (group / "notes.txt").touch()
    assert config_options(tmp_path, "experiment") == "a_recipe, b_recipe, notes"
    (group / "c_new.yaml").touch()
    assert config_options(tmp_path, "experiment") == "a_recipe, b_recipe, c_new, notes"


def test_help_lines_keep_to_their_width(tmp_path) -> None:
    group = tmp_path / "data"
    group.mkdir()
    names = [f"ud_language_{i:02d}_treebank" for i in range(12)]
    for name in names:
        (group / f"{name}.yaml").touch()
    lines = f"data: {config_options(tmp_path, 'data', width=60)}".splitlines()
    assert len(lines) > 1
    assert all(len(line) <= 60 for line in lines)
    assert all(line.startswith("  ") for line in lines[1:])
    assert " ".join(line.strip() for line in lines).removeprefix("data: ") == ", ".join(names)


PREDICT_CONF = ROOT / "conf" / "predict"
CONF = ROOT / "conf"


DECODERS = "eisner, greedy, mst, mst_multiroot"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("decoder=foo", f"decoder=foo: unknown decoder; choose one of {DECODERS}"),
        ("+search=foo", "search=foo: unknown search; choose one of beam, graph, greedy"),
        ("decoder=null", f"decoder=null: unknown decoder; choose one of {DECODERS}"),
    ],
)
def test_a_group_option_without_a_file_is_refused_with_the_choices(override, message) -> None:
    args = ["input=x", override]
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        refuse_unknown_options(args, PREDICT_CONF, ("decoder", "search"))


def test_known_group_options_and_what_only_hydra_reads_pass() -> None:
    args = ["decoder=eisner", "search=beam", "decoder.algorithm=foo", "decoder=mst,eisner"]
    refuse_unknown_options([*args, "decoder=${oc.env:X}", "--help"], PREDICT_CONF, ("decoder",))
    train_args = ["experiment=null", "+experiment=smoke"]
    refuse_unknown_options(train_args, CONF, ("experiment",), optional=("experiment",))
    with pytest.raises(ValueError, match=r"^experiment=null: unknown experiment"):
        refuse_unknown_options(["experiment=null"], CONF, ("experiment",))
    # A sweep's options each: Hydra reported one without a file in 13 lines, exit 1.
    with pytest.raises(ValueError, match=r"^decoder=foo: unknown decoder; choose one of"):
        refuse_unknown_options(["decoder=mst,foo"], PREDICT_CONF, ("decoder",))


def test_every_setting_of_the_predict_and_serve_configs_passes_and_hydras_own() -> None:
    known = settings_of(PREDICT_CONF, "predict", ("decoder", "search"))
    assert {"input", "kbest", "decoder.joint_labels", "search.beam_size"} <= known
    args = [f"{key}=1" for key in sorted(known)]
    refuse_unknown_settings([*args, "hydra.verbose=true", "--help", "--cfg", "job"], known)
    refuse_unknown_settings(["input='a,b.conllu'", "columns=[upos,lemma]", "kbest=null"], known)
    serve = settings_of(CONF, "serve")
    assert {"models", "limits", "limits.max_words"} <= serve
    refuse_unknown_settings(["models=[en_ewt,fr_sequoia]", "limits.timeout_s=5"], serve)
    with pytest.raises(ValueError, match=r"^limits\.max_wordz=3: unknown setting "):
        refuse_unknown_settings(["limits.max_wordz=3"], serve)


def test_the_composition_check_passes_what_hydra_composes_and_leaves_it_its_own() -> None:
    passes = [
        ["experiment=smoke", "trainer.max_epochs=1,2", "trainer.seed=range(1,3)"],  # sweeps
        ["-m", "experiment=smoke", "hydra.sweep.dir=x", "hydra/job_logging=disabled"],
        ["--cfg", "job", "experiment=smoke", "+model.note=x", "~trainer.clip"],
        ["trainer.lr=interval(0,1)"],  # a sweep only a sweeper plugin reads: Hydra's
        ["-cn", "mine", "trainer.foo=1"],  # another config: its keys are not train.yaml's
    ]
    for overrides in passes:
        check_composition(CONF, "train", overrides)
    with pytest.raises(ValueError, match=r"^Could not override 'model\.foo': Key 'foo' is not"):
        check_composition(CONF, "train", ["model=biaffine", "-m", "model.foo=3,4"])
    with pytest.raises(ValueError, match=r"^trainer\.x=\[1: not a setting KEY=VALUE"):
        check_composition(CONF, "segmenter", ["trainer.x=[1"])


def test_a_key_added_to_a_closed_section_is_refused_with_the_one_meant() -> None:
    # Hydra added +trainer.max_epoch=1 and train.py trained its 30 epochs.
    closed = ("", "data", "trainer", "decoder", "search")
    groups = ("data", "model", "optimizer", "trainer", "decoder", "search")
    for overrides, message in [
        (["+trainer.max_epoch=1"], r"trainer\.max_epoch: unknown setting \(did you mean "),
        (["-m", "+data.tree_bank=a,b"], r"data\.tree_bank: unknown setting \(did you mean data\."),
        (["+decoder.algoritm=mst"], r"decoder\.algoritm: .*decoder\.algorithm\?\)"),
        (["+fo=1"], r"fo: unknown setting; nothing would read it"),
    ]:
        with pytest.raises(ValueError, match=f"^{message}"):
            check_composition(CONF, "train", overrides, groups=groups, closed=closed)
    # The model and the optimizer take keys no file has; Hydra's and a deletion pass.
    for overrides in (["+model.note=x"], ["~trainer.clip"], ["+hydra.job.env_set.A=1"]):
        check_composition(CONF, "train", overrides, groups=groups, closed=closed)
    check_composition(CONF, "train", ["+trainer.max_epoch=1"])  # nothing closed: Hydra's rule
    with pytest.raises(ValueError, match=r"^model\.dilation: .*model\.dilations\?\)"):
        check_composition(
            CONF, "segmenter", ["+model.dilation=[1]"], groups=("data",), closed=("model",)
        )


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py", "train_sentences.py"])
def test_the_trainers_refuse_an_added_trainer_key_in_one_line(script: str, tmp_path: Path) -> None:
    given = ["segmenter=x.pt"] if script == "train_sentences.py" else []
    run_dir = tmp_path / "run"
    done = run(script, "data=tiny", *given, "+trainer.max_epoch=1", f"hydra.run.dir={run_dir}")
    assert_one_line_refusal(done, r"trainer\.max_epoch: unknown setting \(did you mean .*")
    assert not run_dir.exists()


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py"])
def test_a_job_of_a_sweep_refused_for_a_user_error_leaves_the_others_to_run(
    script: str, tmp_path: Path
) -> None:
    # The refusal's SystemExit went through Hydra's launcher: job 2 never ran.
    small = ["experiment=smoke"] if script == "train.py" else ["data=tiny"]
    sweep = [f"hydra.sweep.dir={tmp_path}", "trainer.max_epochs=1,0,1"]
    done = run(script, "-m", *small, *sweep)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: job 1: trainer.max_epochs=0 must be above 0",
        "error: the sweep's job(s) 1 refused (above); the others ran",
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["0_tiny", "2_tiny", "multirun.yaml"]
    assert (tmp_path / "2_tiny" / "best.pt").is_file()


def test_the_log_of_a_run_from_init_from_says_so(tmp_path: Path) -> None:
    # The model was loaded (and logged) before the run's log opened: train.log lacked both lines.
    first, second = tmp_path / "first", tmp_path / "second"
    assert run("train.py", *TRAIN, f"hydra.run.dir={first}").returncode == 0
    done = run(
        "train.py", *TRAIN, f"trainer.init_from={first / 'best.pt'}", f"hydra.run.dir={second}"
    )
    assert done.returncode == 0, done.stderr
    log = (second / "train.log").read_text(encoding="utf-8")
    assert f"weights from {first / 'best.pt'}" in log
    assert re.search(r"model: [\d,]+ parameters", log)


def test_a_transition_run_parses_dev_with_its_search_whatever_the_decoder(tmp_path: Path) -> None:
    # experiment=root_study model=arc_hybrid sets decoder=mst_multiroot for every kind: dev
    # parsing refused it after the first epoch.
    run_dir = tmp_path / "run"
    done = run(
        "train.py", *TRAIN, "model=arc_hybrid", "decoder=mst_multiroot", f"hydra.run.dir={run_dir}"
    )
    assert done.returncode == 0, done.stderr
    assert (run_dir / "best.pt").is_file()


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py", "train_sentences.py"])
def test_a_sweep_whose_every_job_is_refused_keeps_the_folders_record(
    script: str, tmp_path: Path
) -> None:
    # Hydra rewrote multirun.yaml with the refused sweep's settings, not those of the runs there.
    record = tmp_path / "multirun.yaml"
    record.write_text("the sweep that ran here\n", encoding="utf-8")
    given = ["segmenter=x.pt"] if script == "train_sentences.py" else []  # refused: no file
    small = ["experiment=smoke"] if script == "train.py" else ["data=tiny"]
    sweep = [f"hydra.sweep.dir={tmp_path}", "trainer.max_epochs=0,-1", *given]
    done = run(script, "-m", *small, *sweep)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: the sweep's job(s) 0, 1 refused (above); none ran"
    )
    assert record.read_text(encoding="utf-8") == "the sweep that ran here\n"
    # A new folder is not left behind, holding the refused sweep's record alone.
    fresh = tmp_path / "fresh"
    done = run(script, "-m", *small, f"hydra.sweep.dir={fresh}", *sweep[1:])
    assert done.returncode == 2, done.stderr
    assert not fresh.exists()


@pytest.mark.parametrize("script", ["train_segmenter.py", "train_sentences.py"])
def test_the_segmenters_trainers_refuse_unknown_data_in_one_line(script: str) -> None:
    done = run(script, "data=ud_nowhere")
    assert_one_line_refusal(done, r"data=ud_nowhere: unknown data; choose one of .*")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("segmenter=MISSING", "MISSING: no such segmenter checkpoint file"),
        ("segmenter=", "segmenter= is empty: give the segmenter's best.pt"),  # "error: .: no such"
        ("model.transformer.model=MISSING", ".*MISSING.*"),
    ],
)
@pytest.mark.parametrize("overwrite", [False, True])
def test_train_sentences_refused_for_what_it_reads_leaves_the_folder_as_it_was(
    tmp_path: Path, given: str, message: str, overwrite: bool
) -> None:
    # .hydra/ and .lock were written into the folder first; with overwrite=true an earlier
    # run's .hydra/overrides.yaml was replaced by the refused run's.
    run_dir = tmp_path / "run"
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "overrides.yaml").write_text("- earlier=run\n")
    (run_dir / "notes.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    missing = str(tmp_path / "missing")
    args = ["data=tiny", given.replace("MISSING", missing), f"hydra.run.dir={run_dir}"]
    if "transformer" in given:
        args.append(f"segmenter={ROOT / 'models' / 'en_ewt_small' / 'segmenter.pt'}")
    done = run("train_sentences.py", *args, f"trainer.overwrite={str(overwrite).lower()}")
    assert_one_line_refusal(done, message.replace("MISSING", re.escape(missing)))
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py", "train_sentences.py"])
def test_an_unknown_setting_in_a_sweep_is_one_line(script: str, tmp_path: Path) -> None:
    # Hydra printed six lines and exited with status 1, for the first job of the sweep.
    sweep = ["-m", f"hydra.sweep.dir={tmp_path / 'sweep'}", "trainer.max_epochz=1,2"]
    given = ["segmenter=x.pt"] if script == "train_sentences.py" else []
    done = run(script, "data=tiny", *given, *sweep)
    pattern = r"Could not override 'trainer\.max_epochz': Key 'max_epochz' is not in struct; .*"
    assert_one_line_refusal(done, pattern)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("script", ["train_segmenter.py", "train_sentences.py"])
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.max_epochs=abc", r"trainer\.max_epochs='abc': expected an integer"),
        ("trainer.lr=fast", r"trainer\.lr='fast': expected a number"),
        ("trainer.max_minutes=abc", r"trainer\.max_minutes='abc': expected a number"),
        ("trainer.max_epochs=null", r"trainer\.max_epochs=null: expected an integer"),
        # Trained nothing, then failed reading a best.pt no epoch wrote.
        ("trainer.max_epochs=0", r"trainer\.max_epochs=0 must be above 0"),
    ],
)
def test_the_segmenters_trainers_refuse_settings_of_another_type_in_one_line(
    script: str, override: str, message: str, tmp_path: Path
) -> None:
    # A TypeError traceback from inside the training, exit 1.
    given = ["segmenter=missing.pt"] if script == "train_sentences.py" else []  # read later
    done = run(script, "data=tiny", *given, override, f"hydra.run.dir={tmp_path / 'run'}")
    assert_one_line_refusal(done, message)
    assert list(tmp_path.iterdir()) == []  # the run folder Hydra made, with its .hydra/ record


QUOTE_HINT = (
    "{key}={value}: expected a string; quote one Hydra reads otherwise: " + """{key}="'{value}'\""""
)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("chunk_sentences=abc", "chunk_sentences='abc': expected an integer"),
        ("chunk_sentences=2.5", "chunk_sentences=2.5: expected an integer"),
        ("max_tokens=abc", "max_tokens='abc': expected an integer"),
        ("max_tokens=2.5", "max_tokens=2.5: expected an integer"),
        ("int8=no", "int8='no': expected true or false"),
        ("eval=abc", "eval='abc': expected true or false"),
        ("exclude_punct=1", "exclude_punct=1: expected true or false"),
        ("bf16=yes", "bf16='yes': expected true or false"),
        ("decoder.root_constraint=no", "decoder.root_constraint='no': expected true or false"),
        ("decoder.joint_labels=0", "decoder.joint_labels=0: expected true or false"),
        ("search.beam_size=abc", "search.beam_size='abc': expected an integer"),
        ("search.graph_weight=abc", "search.graph_weight='abc': expected a number"),
        # A TypeError traceback (exit 1), or a boolean read as false: null is no setting here.
        ("input=123", QUOTE_HINT.format(key="input", value="123")),
        ("output=null", "output=null: expected a string"),
        ("checkpoint=5", QUOTE_HINT.format(key="checkpoint", value="5")),
        ("chunk_sentences=null", "chunk_sentences=null: expected an integer"),
        ("decoder.root_constraint=null", "decoder.root_constraint=null: expected true or false"),
        ("eval=null", "eval=null: expected true or false"),
        # Read as ".": "error: .: is not a file, so not a checkpoint".
        ("partner=", "partner= is empty: give a path, or leave partner= out"),
        ("input=", "input= is empty: give a path"),
    ],
)
def test_predict_settings_of_another_type_are_refused(override: str, message: str) -> None:
    predict = load_script("predict")
    with initialize(version_base="1.3", config_path="../../conf/predict"):
        cfg = compose("predict", overrides=["input=x", override])
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        predict.check_settings(cfg)


def test_the_predict_defaults_and_each_group_option_pass_the_settings_check() -> None:
    predict = load_script("predict")
    assert predict.setting_types(PREDICT_CONF / "predict.yaml")["int8"] is bool
    with initialize(version_base="1.3", config_path="../../conf/predict"):
        for group in predict.GROUPS:
            for option in (PREDICT_CONF / group).glob("*.yaml"):
                overrides = ["input=x", f"{group}={option.stem}", "max_tokens=500"]
                predict.check_settings(compose("predict", overrides=overrides))


def test_every_experiment_passes_the_settings_check() -> None:
    train = load_script("train")
    assert train.trainer_types()["max_epochs"] is int
    assert train.trainer_types()["threads"] is int
    experiments = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("[!_]*.yaml"))
    assert "smoke" in experiments
    with initialize(version_base="1.3", config_path="../../conf"):
        for experiment in experiments:
            cfg = compose("train", overrides=[f"experiment={experiment}"])
            train.check_settings(cfg)


@pytest.mark.parametrize(
    ("args", "pattern"),
    [
        ([f"checkpoint={CHECKPOINT}", f"input={TINY}", "threads=0"], r"threads=0: .*"),
        ([f"checkpoint={CHECKPOINT}", f"input={TINY}", "threads=-1"], r"threads=-1: .*"),
        ([f"input={TINY}"], r"neither of model= and checkpoint= given: give model=NAME .*"),
        (
            [f"input={TINY}", "model=xx_none", f"checkpoint={CHECKPOINT}"],
            r"both of model= and checkpoint= given: .*",
        ),
        ([f"input={TINY}", "model=xx_none"], r"no model named 'xx_none'; installed: .*"),
        ([f"checkpoint={CHECKPOINT}"], r"missing setting input \(give input=\.\.\.\)"),
        # The input is checked before the checkpoint is read: a mistyped path costs no loading.
        (
            ["checkpoint=/nonexistent/best.pt", "input=/nonexistent/in.conllu"],
            r"/nonexistent/in\.conllu: No such file or directory",
        ),
        (["checkpoint=/nonexistent/best.pt", f"input={ROOT}"], rf"{ROOT}: Is a directory"),
        # Before Hydra composes the config, which would print a dozen lines.
        ([f"input={TINY}", "decoder=foo"], r"decoder=foo: unknown decoder; choose one of .*"),
        # Each of these Hydra reported in several lines with exit status 1, or took silently.
        ([f"input={TINY}", "probabilites=true"], r"probabilites=true: unknown setting .*"),
        ([f"input={TINY}", "decoder.foo=1"], r"decoder\.foo=1: unknown setting decoder\.foo.*"),
        ([f"input={TINY}", "+foo=1"], r"\+foo=1: give settings as KEY=VALUE .*"),
        ([f"input={TINY}", "columns=[upos"], r"columns=\[upos: not a setting KEY=VALUE .*"),
        ([f"input={TINY}", "kbest"], r"kbest: not a setting KEY=VALUE .*"),
        ([f"input={TINY}", "kbest=" + "9" * 4301], r"kbest: Exceeds the limit \(4300 digits\) .*"),
        # The character Hydra cannot read unquoted is named: the list did not hold it.
        (["input=/tmp/\u00e9.conllu"], r"input=/tmp/\u00e9\.conllu: not a .* \(at '\u00e9'\);.*"),
        (["input=/tmp/a#b.conllu"], r"input=/tmp/a#b\.conllu: not a .* \(at '#'\); .* # ~ .*"),
        (["input=/tmp/a,b.conllu"], r"input=/tmp/a,b\.conllu: one value per setting; .*"),
        ([f"input={TINY}", "-m"], r"-m: this command runs once; .*"),
        # A non-empty string, so it used to turn int8 on.
        ([f"checkpoint={CHECKPOINT}", f"input={TINY}", "int8=no"], r"int8='no': expected .*"),
        # Silently unread without a score to change.
        (
            [f"checkpoint={CHECKPOINT}", f"input={TINY}", "exclude_punct=true"],
            r"exclude_punct=true changes what eval=true scores: give eval=true too",
        ),
    ],
)
def test_predict_refuses_bad_settings_in_one_line(args: list[str], pattern: str, tmp_path) -> None:
    done = run("predict.py", *args, f"output={tmp_path / 'out.conllu'}")
    assert_one_line_refusal(done, pattern)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ("lstm_hidden", r".*bad\.pt: model_config\.lstm_hidden=10000000 is above 65536.*"),
        ("nan", r".*bad\.pt: weight rel_attn\.weight holds NaN or infinite values.*"),
    ],
)
def test_predict_blames_a_bad_checkpoint_in_one_line(change: str, pattern: str, tmp_path) -> None:
    raw = torch.load(CHECKPOINT, weights_only=True)  # format 2: flat config, no checksum
    if change == "nan":
        raw["state_dict"]["rel_attn.weight"][0, 0, 0] = float("nan")
    else:
        raw["model_config"][change] = 10**7
    torch.save(raw, tmp_path / "bad.pt")
    done = run("predict.py", f"checkpoint={tmp_path / 'bad.pt'}", f"input={TINY}")
    assert_one_line_refusal(done, pattern)
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("trainer.max_epochs=abc", r"trainer\.max_epochs='abc': expected an integer"),
        # A TypeError traceback once the data was read; patience=null and clip=null are settings.
        ("trainer.max_epochs=null", r"trainer\.max_epochs=null: expected an integer"),
        ("trainer.device=null", r"trainer\.device=null: expected a string"),
        ("trainer.threads=0", r"trainer\.threads=0: give a positive number .*"),
        # numpy's "Seed must be between 0 and 2**32 - 1", naming no setting, after the data.
        ("trainer.seed=-1", r"trainer\.seed=-1: give a seed in 0\.\.2\*\*32-1"),
        ("data=ud", r"missing setting data\.treebank \(give data\.treebank=\.\.\.\)"),
        # Before Hydra composes the config, which would print a dozen lines.
        ("experiment=foo", r"experiment=foo: unknown experiment; choose one of .*smoke.*"),
        ("data=ud_english", r"data=ud_english: unknown data; choose one of .*ud_english_ewt.*"),
        # A TypeError traceback, gradient ascent, and "a: no such checkpoint file" before.
        ("optimizer.lr=abc", r"optimizer\.lr='abc': expected a number"),
        # A key no config file has was passed on unchecked: "abc" was a true amsgrad.
        ("+optimizer.amsgrad=abc", r"optimizer\.amsgrad='abc': expected true or false"),
        # Defaults to None, typed bool | None: torch took "no" as true.
        ("+optimizer.foreach=no", r"optimizer\.foreach='no': expected true or false"),
        # A TypeError traceback from the lookup of its options (status 1, train.log left).
        ("optimizer._target_=..Adam", r"optimizer: \.\.Adam\(.*\) refused: .*"),
        ("trainer.clip=-1", r"trainer\.clip=-1: give a positive norm, or null for none"),
        ("trainer.distill_from=abc", r"trainer\.distill_from='abc': give a list, .*"),
        # Trained no epoch after reading the data, and blamed max_epochs.
        ("trainer.max_steps=0", r"trainer\.max_steps=0 must be above 0"),
        ("trainer.max_minutes=-5", r"trainer\.max_minutes=-5 must be above 0"),
        # Hydra's six lines and status 1.
        ("trainer.foo=1", r"Could not override 'trainer\.foo': Key 'foo' is not in struct; .*"),
        ("model.encoder.lstm_hidden=[1", r"model\.encoder\.lstm_hidden=\[1: not a setting .*"),
        # An IndexError from inside torch once the model was built.
        (
            "optimizer.betas=[0.9]",
            r"optimizer: torch\.optim\.Adam\(.*betas=\[0\.9\].*\) refused: .*",
        ),
        ("optimizer.lr=-1", r"optimizer: torch\.optim\.Adam\(lr=-1, .*\) refused: .*-1"),
        # A RuntimeError traceback from Adam's first step, its step size beyond float32.
        ("optimizer.lr=1e38", r"optimizer: torch\.optim\.Adam\(lr=1e\+38, .*overflow"),
    ],
)
def test_train_refuses_bad_settings_in_one_line_and_leaves_no_run_folder(
    override: str, pattern: str, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    done = run("train.py", *TRAIN, f"hydra.run.dir={run_dir}", override)
    assert_one_line_refusal(done, pattern)
    assert list(tmp_path.iterdir()) == []


POSTPONED = """
from __future__ import annotations

import torch


class Fancy(torch.optim.SGD):
    def __init__(self, params, lr: float = 0.1, fancy: bool | None = None) -> None:
        super().__init__(params, lr=lr)
"""


def test_an_optimizer_annotated_as_strings_has_its_nullable_flags_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Postponed annotations are strings: "fancy: bool | None" went unchecked ("no" is true).
    (tmp_path / "fancy_optim.py").write_text(POSTPONED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("train_script", ROOT / "train.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.optimizer_types("fancy_optim.Fancy") == ({"lr": float, "fancy": bool}, {"fancy"})
    assert script.optimizer_types("..Adam") == ({}, set())


def test_an_optimizer_that_names_nothing_is_one_line_and_nothing_more(tmp_path: Path) -> None:
    # Hydra's lookup of the optimizer's options logged a three-line ERROR on stdout as well.
    given = ["optimizer._target_=torch.optim.Nope", f"hydra.run.dir={tmp_path / 'run'}"]
    done = run("train.py", *TRAIN, *given)
    assert_one_line_refusal(done, r"optimizer: torch\.optim\.Nope\(.*\) refused: .*")
    assert "ERROR" not in done.stdout


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py", "train_sentences.py"])
@pytest.mark.parametrize("setting", ["hydra.run.dir", "hydra.sweep.dir"])
def test_a_run_folder_that_is_a_file_is_refused_in_one_line(
    script: str, setting: str, tmp_path: Path
) -> None:
    # Hydra's mkdir failed in a FileExistsError traceback.
    given = ["segmenter=x.pt"] if script == "train_sentences.py" else []
    afile = tmp_path / "notes.txt"
    afile.write_text("mine", "utf-8")
    sweep = ["-m"] if setting == "hydra.sweep.dir" else []
    for folder in (afile, afile / "run"):  # the run's folder under a file: NotADirectoryError
        done = run(script, *sweep, "data=tiny", *given, f"{setting}={folder}")
        assert_one_line_refusal(done, re.escape(f"{setting}={folder}: {afile} is a file") + ".*")
    assert afile.read_text("utf-8") == "mine"


def test_a_run_folder_where_this_user_may_not_write_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Hydra's mkdir, or its opening of train.log, was an OSError traceback (a read-only file
    # system; EACCES for a user other than root, whom permissions do not stop).
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    with pytest.raises(ValueError, match="cannot write") as refused:
        refuse_run_dir_files([f"hydra.run.dir={tmp_path}/new/run"])
    assert str(refused.value) == (
        f"hydra.run.dir={tmp_path}/new/run: cannot write in {tmp_path}: permission denied"
    )
    refuse_run_dir_files([f"hydra.run.dir={tmp_path.parent}/run"])


def test_a_refused_training_keeps_a_folder_that_held_files(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("mine\n")
    done = run("train.py", *TRAIN, f"hydra.run.dir={run_dir}", "trainer.threads=-1")
    assert_one_line_refusal(done, r"trainer\.threads=-1: .*")
    assert (run_dir / "notes.txt").read_text() == "mine\n"
    assert [p.name for p in run_dir.iterdir()] == ["notes.txt"]  # and no empty train.log


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        ("biaffine.evaluate", ["gold.conllu"], "the following arguments are required: pred"),
        ("biaffine.render", ["in.conllu"], "the following arguments are required: -o/--output"),
        ("biaffine.models", ["--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_a_tools_usage_error_is_one_line_and_status_2(
    module: str, args: list[str], message: str
) -> None:
    # argparse printed its usage first: three lines or more.
    command = [sys.executable, "-m", module, *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: python -m {module}: {message} (see --help)\n",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["biaffine.models"], "standard output is closed: nowhere to print the models"),
        (
            ["biaffine.evaluate", str(DATA / "tiny.conllu"), str(DATA / "tiny.conllu")],
            "standard output is closed: nowhere to print the scores",
        ),
    ],
)
def test_a_tool_whose_standard_output_is_closed_says_so_in_one_line(
    args: list[str], message: str
) -> None:
    # sys.stdout is None there: an AttributeError traceback, status 1.
    done = subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, preexec_fn=lambda: os.close(1),
        stderr=subprocess.PIPE, text=True, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (2, f"error: {message}\n")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["predict.py", f"checkpoint={CHECKPOINT}", "input=INPUT"], "the input file INPUT"),
        (["predict.py", f"checkpoint={CHECKPOINT}", "input=-"], "standard input"),
        (["-m", "biaffine.evaluate", str(TINY), "INPUT"], "the input file INPUT"),
    ],
    ids=["predict", "predict-stdin", "evaluate"],
)
def test_standard_output_appending_to_an_input_is_refused(
    command: list[str], message: str, tmp_path: Path
) -> None:
    # `predict.py input=a.conllu >> a.conllu` appended the parse to the user's file.
    given = tmp_path / "a.conllu"
    shutil.copyfile(TINY, given)
    before = given.read_bytes()
    arguments = [part.replace("INPUT", str(given)) for part in command]
    with given.open("rb") as stdin, given.open("ab") as stdout:
        done = subprocess.run(
            [sys.executable, *arguments], cwd=ROOT, stdin=stdin, stdout=stdout,
            stderr=subprocess.PIPE, text=True, check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"error: standard output is {message.replace('INPUT', str(given))}: "
        "redirect it to another file\n"
    )
    assert given.read_bytes() == before


def test_an_output_file_that_standard_input_reads_is_refused(tmp_path: Path) -> None:
    # `predict.py input=- output=a.conllu < a.conllu` replaced the user's file with its parse.
    given = tmp_path / "a.conllu"
    shutil.copyfile(TINY, given)
    before = given.read_bytes()
    with given.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "predict.py", f"checkpoint={CHECKPOINT}", "input=-",
             f"output={given}"],
            cwd=ROOT, stdin=stdin, capture_output=True, text=True, check=False,
        )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2, f"error: output {given} is the file standard input reads: choose another\n"
    )  # fmt: skip
    assert given.read_bytes() == before


SWALLOWED = """
import os, signal, sys, weakref
from biaffine.cli import exit_on_termination, stop_if_terminated
exit_on_termination()
class Held: pass
held = Held()
def callback(_):  # the handler runs in here, and Python drops its exception
    os.kill(os.getpid(), signal.{name})
    for _ in range(10000): pass
reference = weakref.ref(held, callback)
del held
print("went on", flush=True)
stop_if_terminated()
print("not reached", flush=True)
"""


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", -2)])
def test_a_signal_whose_exception_a_callback_dropped_stops_the_next_step(
    name: str, status: int
) -> None:
    # A training given SIGTERM inside a WeakSet callback went on for good ("Exception ignored").
    script = SWALLOWED.replace("{name}", name)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False,
        preexec_fn=default_signals,
    )  # fmt: skip
    assert done.stdout == "went on\n"
    assert "Exception ignored" not in done.stderr  # Python's traceback of the dropped exception
    assert done.returncode == status  # SIGINT: Python ends an uncaught KeyboardInterrupt so
    assert done.stderr.rstrip().endswith("KeyboardInterrupt") == (name == "SIGINT")
    assert done.stderr.count("Traceback") == (name == "SIGINT")  # the one raised again


WRAPPED = """
import os, signal
from biaffine.cli import exit_on_termination, report_user_errors
exit_on_termination()
def search():  # compiled code: the handler's exit comes back wrapped, as numba's k-best did
    try:
        os.kill(os.getpid(), signal.{name})
    except BaseException as error:
        raise SystemError("returned a result with an exception set") from error
report_user_errors(search, on_error=lambda: print("cleaned up", flush=True))
"""


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", 130)])
def test_a_signal_wrapped_in_another_error_ends_with_its_status_and_no_traceback(
    name: str, status: int
) -> None:
    # SIGTERM during predict.py's k-best search: numba's SystemError, a traceback, status 1.
    done = subprocess.run(
        [sys.executable, "-c", WRAPPED.replace("{name}", name)], cwd=ROOT, capture_output=True,
        text=True, check=False, preexec_fn=default_signals,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (status, "cleaned up\n", "")


BETWEEN_JOBS = """
import runpy, sys
from hydra._internal.config_loader_impl import ConfigLoaderImpl
composed = ConfigLoaderImpl.load_sweep_config
calls = []
def load_sweep_config(*args, **kwargs):  # Ctrl-C while Hydra composes the second job
    calls.append(1)
    if len(calls) == 2:
        raise KeyboardInterrupt
    return composed(*args, **kwargs)
ConfigLoaderImpl.load_sweep_config = load_sweep_config
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("script", ["train.py", "train_segmenter.py", "train_sentences.py"])
def test_ctrl_c_between_the_jobs_of_a_sweep_ends_quietly(script: str, tmp_path: Path) -> None:
    # A traceback from Hydra's composition of the next job, the first job done.
    given = ["segmenter=x.pt"] if script == "train_sentences.py" else []
    sweep = [f"hydra.sweep.dir={tmp_path}", "trainer.max_epochs=1,2", *given]
    smoke = TRAIN[:1] if script == "train.py" else ["data=tiny"]
    command = [sys.executable, "-c", BETWEEN_JOBS, str(ROOT / script), "-m", *smoke, *sweep]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr


def test_a_signal_the_process_was_started_to_ignore_stays_ignored() -> None:
    # nohup's SIGHUP was handled, so a nohup'd training ended when its terminal closed.
    script = (
        "import os, signal\n"
        "from biaffine.cli import exit_on_termination\n"
        "exit_on_termination()\n"
        "os.kill(os.getpid(), signal.SIGHUP)\n"
        "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, flush=True)\n"
    )
    done = subprocess.run(
        ["nohup", sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


INTERRUPTED_SAVE = """
import contextlib, os, signal, sys
from pathlib import Path
import torch
from biaffine import cli
cli.exit_on_termination()
opened = cli.atomic_open
class Tripwire:  # a file whose third write is interrupted by the signal, as a kill's can be
    def __init__(self, handle):
        self.handle, self.calls = handle, 0
    def write(self, data):
        self.calls += 1
        if self.calls == 3:
            os.kill(os.getpid(), signal.{name})
        return self.handle.write(data)
    def flush(self):
        self.handle.flush()
@contextlib.contextmanager
def tripped(path, mode):
    with opened(path, mode) as handle:
        yield Tripwire(handle)
cli.atomic_open = tripped
weights = {{f"w{{i}}": torch.full((64, 64), i) for i in range(8)}}
try:
    with cli.written_whole(sys.argv[1]) as handle:  # as both kinds of checkpoint are saved
        torch.save(weights, handle)
finally:
    print("whole" if Path(sys.argv[1]).exists() else "none", flush=True)
"""


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGHUP", 129), ("SIGINT", -2)])
def test_a_signal_during_a_checkpoint_write_ends_the_process_once_the_file_is_whole(
    tmp_path: Path, name: str, status: int
) -> None:
    # torch.save's C++ writer, its write interrupted by the exit, failed in its clean-up: a
    # RuntimeError traceback and status 1 in place of 143 (a flaky CI run of train.py's kill).
    path = tmp_path / "last.pt"
    script = INTERRUPTED_SAVE.format(name=name)
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], cwd=ROOT, capture_output=True, text=True,
        check=False, preexec_fn=default_signals,
    )  # fmt: skip
    assert done.stdout == "whole\n"
    assert done.returncode == status, done.stderr
    assert "RuntimeError" not in done.stderr
    assert done.stderr.count("Traceback") == (name == "SIGINT")  # Python's for KeyboardInterrupt
    saved = torch.load(path, weights_only=True)
    assert [int(saved[f"w{i}"][0, 0]) for i in range(8)] == list(range(8))


def test_signals_held_raise_once_the_outermost_block_ends_and_yield_to_its_own_error() -> None:
    script = (
        "import os, signal\n"
        "from biaffine.cli import exit_on_termination, signals_held\n"
        "exit_on_termination()\n"
        "with signals_held():\n"
        "    pass\n"
        "print('no signal, no exit', flush=True)\n"
        "try:\n"
        "    with signals_held():\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        raise ValueError('own')\n"
        "except ValueError:\n"
        "    print('its own error first', flush=True)\n"
        "with signals_held():\n"
        "    with signals_held():\n"
        "        os.kill(os.getpid(), signal.SIGHUP)\n"
        "    print('inner block ended', flush=True)\n"
        "print('not reached', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=False,
        preexec_fn=default_signals,
    )  # fmt: skip
    assert done.stdout == "no signal, no exit\nits own error first\ninner block ended\n"
    assert done.returncode == 129, done.stderr  # the SIGHUP held in the block, not the SIGTERM
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "module",
    [
        "biaffine.training.doubt",
        "biaffine.training.lemma_generator",
        "biaffine.training.feats_guesser",
        "biaffine.training.upos_guesser",
    ],
)
def test_a_tools_usage_error_names_its_command(module: str) -> None:
    # "doubt.py: the following arguments are required": no file of that name is run.
    done = subprocess.run(
        [sys.executable, "-m", module], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: python -m {module}: the following arguments")


@pytest.mark.parametrize(
    ("script", "setting", "message"),
    [
        ("train_segmenter.py", "model.embed_dim=abc", "model.embed_dim='abc': expected an integer"),
        (
            "train_segmenter.py",
            "model.dilations=[1,0]",
            r"model.dilations=\[1, 0\]: give a list of",
        ),
        (
            "train_segmenter.py",
            "model.dropout=1.5",
            r"model.dropout=1.5: give a number in \[0, 1\)",
        ),
        ("train_sentences.py", "model.hidden=0", "model.hidden=0: give a positive integer"),
        ("train_sentences.py", "+model.transformer.foo=1", "model.transformer.foo: unknown .*"),
    ],
)
def test_model_settings_that_build_no_network_are_refused_by_name(
    script: str, setting: str, message: str, tmp_path: Path
) -> None:
    # Torch's TypeError tracebacks (model.embed_dim=abc), or its messages naming no setting
    # (model.dilations=abc: "Invalid padding string 'a'"), after the data was read.
    given = ["segmenter=models/en_ewt/segmenter.pt"] if script == "train_sentences.py" else []
    done = run(script, "data=tiny", *given, setting, f"hydra.run.dir={tmp_path / 'run'}")
    assert_one_line_refusal(done, message + ".*")
    assert list(tmp_path.iterdir()) == []


def test_a_sweep_under_torchrun_is_refused_before_any_job(tmp_path: Path) -> None:
    # Each job opened the process group again in torchrun's processes: the second failed in
    # a gloo traceback or waited for good.
    command = [sys.executable, str(ROOT / "train.py"), "-m", "experiment=smoke"]
    command += ["trainer.seed=1,2", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    environment = os.environ | {"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=environment)
    assert_one_line_refusal(done, "-m under torchrun: .*")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["predict.py", "model=en_gum", "input=-"],  # report_user_errors
        ["-m", "biaffine.evaluate", "missing.conllu", "missing.conllu"],
        ["-m", "biaffine.render", "missing.conllu", "-o", "-"],
        ["-m", "biaffine.models", "--no-such-option"],  # the one-line argparse error
    ],
)
def test_an_error_with_standard_error_closed_never_reaches_standard_output(command) -> None:
    """``predict.py ... 2>&- > out.conllu``: Python's sys.stderr is then None, and the error
    line was printed into the CoNLL-U (``print(file=None)`` writes to standard output)."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        preexec_fn=lambda: os.close(2),
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
