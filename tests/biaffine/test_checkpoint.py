from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from builders import biaffine_parser

from biaffine import checkpoint
from biaffine.checkpoint import CheckpointError, build_model, load, save, weights_sha256
from biaffine.data.batching import batches_by_tokens, encode
from biaffine.data.conllu import Sentence, read_conllu, write_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, parse
from biaffine.parsers.graph import BiaffineParser

TINY = {"word_dim": 8, "char_dim": 6, "char_hidden": 5, "char_out": 7, "lstm_hidden": 10}
TINY |= {"lstm_layers": 2, "arc_mlp": 12, "rel_mlp": 6}
TINY |= {"tag_loss_weight": 0.5, "feats_loss_weight": 0.5}
DATA = Path(__file__).parents[1] / "data"

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def parser(vocabs: Vocabs) -> BiaffineParser:
    torch.manual_seed(0)
    model = biaffine_parser(vocabs, **TINY)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn_like(param) * 0.1)  # move away from the zero init
    return model.eval()


@pytest.fixture
def saved(
    tmp_path: Path, parser: BiaffineParser, vocabs: Vocabs, sentences: list[Sentence]
) -> Path:
    path = tmp_path / "model.pt"
    optimizer = torch.optim.Adam(parser.parameters())
    parser.train()
    batch = next(batches_by_tokens(encode(sentences, vocabs), 1000, shuffle=False))
    parser.loss(parser(batch), batch).backward()
    optimizer.step()
    parser.eval()
    save(
        path,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=vocabs,
        state_dict=parser.state_dict(),
        metadata={"train": "tiny.conllu", "best_dev": {"las": 12.5, "epoch": 3}},
        training_state={
            "optimizer": optimizer.state_dict(),
            "epoch": 3,
            "rng": torch.get_rng_state(),
        },
    )
    return path


def edit_config(saved: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Change the model config of a saved checkpoint in place (one JSON text since version 5)."""
    raw = torch.load(saved, weights_only=True)
    config = json.loads(raw["model_config"])
    edit(config)
    torch.save({**raw, "model_config": json.dumps(config)}, saved)


def scores_of(model: BiaffineParser, vocabs: Vocabs, sentences: list[Sentence]):
    batch = next(batches_by_tokens(encode(sentences, vocabs), 1000, shuffle=False))
    with torch.inference_mode():
        return model.eval()(batch)


def test_save_load_gives_identical_predictions(saved, parser, vocabs, sentences) -> None:
    ckpt = load(saved)
    rebuilt = build_model(ckpt)
    assert ckpt.vocabs.to_dict() == vocabs.to_dict()
    assert ckpt.model_config == parser.config()
    before, after = scores_of(parser, vocabs, sentences), scores_of(rebuilt, ckpt.vocabs, sentences)
    assert torch.equal(before.arc_scores, after.arc_scores)
    assert torch.equal(before.labels.dep, after.labels.dep)
    assert torch.equal(before.labels.head, after.labels.head)
    assert torch.equal(parser.labels.attn.weight, rebuilt.labels.attn.weight)
    assert before.tag_scores.keys() == after.tag_scores.keys()
    for column, tag_scores in before.tag_scores.items():
        assert torch.equal(tag_scores, after.tag_scores[column])


def test_checkpoint_holds_plain_data_only(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    assert raw["format"] == checkpoint.FORMAT
    assert raw["version"] == checkpoint.VERSION
    assert isinstance(raw["package_version"], str)
    plain = {field: json.loads(raw[field]) for field in checkpoint.JSON_FIELDS}
    assert plain["metadata"]["best_dev"]["las"] == 12.5
    names = {"words", "chars", "upos", "rels", "xpos", "feats", "lemma", "lemma_lexicon"}
    assert set(plain["vocabs"]) == names
    assert ["sat", "VERB", "sit"] in plain["vocabs"]["lemma_lexicon"]["tagged"]
    assert plain["model_config"]["encoder"]["lstm_hidden"] == TINY["lstm_hidden"]


def test_training_state_round_trips(saved, parser) -> None:
    ckpt = load(saved)
    assert ckpt.training_state is not None
    assert ckpt.training_state["epoch"] == 3
    optimizer = torch.optim.Adam(parser.parameters())
    optimizer.load_state_dict(ckpt.training_state["optimizer"])
    assert ckpt.training_state["rng"].dtype == torch.uint8


def test_save_leaves_no_temporary_file_and_replaces_atomically(saved) -> None:
    first = saved.read_bytes()
    ckpt = load(saved)
    save(
        saved,
        parser=ckpt.parser,
        model_config=ckpt.model_config,
        vocabs=ckpt.vocabs,
        state_dict=ckpt.state_dict,
        metadata={"second": True},
        training_state=None,
    )
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]
    assert saved.read_bytes() != first
    assert load(saved).metadata == {"second": True}
    assert load(saved).training_state is None


def test_a_checkpoint_gets_the_mode_the_umask_gives(tmp_path, parser, vocabs) -> None:
    old = os.umask(0o022)
    try:
        save(tmp_path / "m.pt", parser=parser.kind, model_config=parser.config(), vocabs=vocabs,
             state_dict=parser.state_dict(), metadata={})  # fmt: skip
    finally:
        os.umask(old)
    assert (tmp_path / "m.pt").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        ({"scores": np.zeros(3)}, r"checkpoint\['metadata'\]\['scores'\] is a ndarray"),
        # JSON would give the key back as the string "3".
        ({"epochs": {3: 80.5}}, r"checkpoint\['metadata'\]\['epochs'\]: key 3 is a int"),
    ],
)
def test_save_rejects_what_would_not_load_as_it_was(
    tmp_path, parser, vocabs, metadata: dict, problem: str
) -> None:
    with pytest.raises(TypeError, match=problem):
        save(
            tmp_path / "x.pt",
            parser=parser.kind,
            model_config=parser.config(),
            vocabs=vocabs,
            state_dict=parser.state_dict(),
            metadata=metadata,
        )
    assert list(tmp_path.iterdir()) == []


def test_save_converts_mapping_and_sequence_types(tmp_path, parser, vocabs) -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"data": {"files": ["a", "b"]}, "seed": 1})
    path = tmp_path / "x.pt"
    save(
        path,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=vocabs.to_dict(),
        state_dict=parser.state_dict(),
        metadata={"config": cfg},
    )
    assert load(path).metadata == {"config": {"data": {"files": ["a", "b"]}, "seed": 1}}


def test_save_converts_scalar_subclasses(tmp_path, parser, vocabs) -> None:
    path = tmp_path / "x.pt"
    metadata = {"las": np.float64(80.5), "epoch": np.int64(3), "ok": np.bool_(True)}
    save(
        path,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=vocabs,
        state_dict=parser.state_dict(),
        metadata=metadata,
    )
    loaded = load(path).metadata
    assert loaded == {"las": 80.5, "epoch": 3, "ok": True}
    assert [type(v) for v in loaded.values()] == [float, int, bool]


def test_missing_file(tmp_path) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        load(tmp_path / "absent.pt")
    with pytest.raises(CheckpointError, match="is not a file"):
        load(tmp_path)


@pytest.mark.parametrize("keep", [0.0, 0.5, 0.9])
def test_truncated_file(saved, keep: float) -> None:
    data = saved.read_bytes()
    saved.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load(saved)


def test_wrong_version(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    torch.save({**raw, "version": 1}, saved)
    with pytest.raises(CheckpointError, match=r"format version 1; .* reads versions 2, 3, 4, 5$"):
        load(saved)


def test_a_newer_version_asks_for_an_upgrade(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    torch.save({**raw, "version": checkpoint.VERSION + 1}, saved)
    with pytest.raises(CheckpointError, match="written by a newer rootparse: upgrade"):
        load(saved)


def test_an_unknown_parser_kind_is_named(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    torch.save({**raw, "parser": "shift_reduce"}, saved)
    with pytest.raises(CheckpointError, match="parser kind 'shift_reduce'; known kinds: biaffine"):
        build_model(load(saved))


def test_a_checkpoint_records_its_parser_kind(saved) -> None:
    assert torch.load(saved, weights_only=True)["parser"] == "biaffine"
    assert load(saved).parser == "biaffine"


def test_format_2_checkpoint_migrates_and_predicts_byte_identical_conllu(tmp_path) -> None:
    """A model trained and parsed by release 0.1.0 (format 2, before the shared encoder).

    ``format2-smoke.pt`` is ``python train.py experiment=smoke model.tag_loss_weight=0.5
    model.xpos_loss_weight=0.5 model.feats_loss_weight=0.5 trainer.max_epochs=4`` at commit
    6e11371, and ``format2-smoke-tiny.conllu`` its ``predict.py`` output on ``tiny.conllu``.
    That release took each label's argmax regardless of the head; labels now follow UD's root
    rule, so the DEPREL cells where the old output broke it (22 words labelled ``root`` off
    ROOT, 1 ROOT word labelled otherwise) must change to obey it, and every other byte must
    stay the same.
    """
    raw = torch.load(DATA / "format2-smoke.pt", weights_only=True)
    assert raw["version"] == 2
    old_names = {"tagger.1.weight", "xpos_tagger.1.weight", "lstms.0.forward_lstm.weight_ih_l0"}
    assert old_names <= set(raw["state_dict"])
    ckpt = load(DATA / "format2-smoke.pt")
    assert ckpt.parser == "biaffine"
    assert ckpt.model_config["encoder"]["kind"] == "bilstm"
    model = build_model(ckpt)  # strict load: every weight found its new name
    assert list(model.taggers) == ["upos", "xpos", "feats"]
    # That release chose heads before labels, as joint_labels=False still does.
    heads_first = DecoderSettings(joint_labels=False)
    parsed = parse(model, ckpt.vocabs, list(read_conllu(DATA / "tiny.conllu")), heads_first)
    out = tmp_path / "out.conllu"
    write_conllu(out, parsed)
    old_lines = (DATA / "format2-smoke-tiny.conllu").read_text().splitlines(keepends=True)
    new_lines = out.read_text().splitlines(keepends=True)
    assert len(new_lines) == len(old_lines)
    changed = 0
    for new, old in zip(new_lines, old_lines, strict=True):
        ours, theirs = new.split("\t"), old.split("\t")
        if theirs[0].isdigit() and (theirs[6] == "0") != (theirs[7] == "root"):
            assert (ours[6] == "0") == (ours[7] == "root"), new
            ours[7] = theirs[7]
            changed += 1
        assert ours == theirs
    assert changed == 23


def test_not_our_format(tmp_path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"state_dict": {}}, path)
    with pytest.raises(CheckpointError, match="not a rootparse-checkpoint file"):
        load(path)
    path.write_text("hello")
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load(path)


def test_pickled_objects_are_refused(tmp_path) -> None:
    path = tmp_path / "pickled.pt"
    torch.save({"format": checkpoint.FORMAT, "object": Path("x")}, path)
    with pytest.raises(CheckpointError, match=r"pickled Python object \(pathlib\.\w*Path\)"):
        load(path)


def test_weights_that_do_not_fit_the_config(saved) -> None:
    edit_config(saved, lambda config: config["encoder"].update(lstm_hidden=11))
    with pytest.raises(CheckpointError, match="weights do not fit"):
        build_model(load(saved))


def test_unknown_config_key(saved) -> None:
    edit_config(saved, lambda config: config.update(_target_="os.system"))
    with pytest.raises(CheckpointError, match="model config does not fit the 'biaffine' parser"):
        build_model(load(saved))


@pytest.mark.parametrize("text", ["root:x:0:0:root:/root:/bin/bash\n", "", "P"])
def test_a_file_that_is_no_archive_is_called_perhaps_no_checkpoint(tmp_path, text: str) -> None:
    """/etc/passwd was "truncated or corrupt checkpoint (the write may have been interrupted):
    IndexError: list index out of range"."""
    path = tmp_path / "passwd"
    path.write_text(text)
    with pytest.raises(CheckpointError, match="or not a checkpoint at all") as caught:
        load(path)
    assert "interrupted" not in str(caught.value)
    assert caught.value.__cause__ is None


def test_random_bytes_are_corrupt_not_pickled_objects(tmp_path) -> None:
    path = tmp_path / "best.pt"
    path.write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(CheckpointError, match="truncated or corrupt") as caught:
        load(path)
    assert "pickled" not in str(caught.value)


class _Malicious:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_a_malicious_pickle_is_named_and_torchs_retry_advice_never_shown(tmp_path) -> None:
    path = tmp_path / "best.pt"
    torch.save({"format": checkpoint.FORMAT, "payload": _Malicious()}, path)
    with pytest.raises(CheckpointError, match=r"pickled Python object \(posix\.system\)") as caught:
        load(path)
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__  # the chained torch message is not printed
    assert "weights_only" not in str(caught.value)


def test_a_missing_gpu_is_named_not_blamed_on_the_file(saved) -> None:
    with pytest.raises(CheckpointError, match=r"device=cuda:7 is not available") as caught:
        load(saved, map_location="cuda:7")
    assert "corrupt" not in str(caught.value)


def test_find_takes_files_and_the_best_checkpoints_under_folders(tmp_path: Path) -> None:
    for run in ("sweep/1_b", "sweep/0_a"):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "best.pt").write_bytes(b"")
        (tmp_path / run / "last.pt").write_bytes(b"")
    single = tmp_path / "model.pt"
    single.write_bytes(b"")
    found = checkpoint.find([single, tmp_path / "sweep"])
    assert found == [single, tmp_path / "sweep/0_a/best.pt", tmp_path / "sweep/1_b/best.pt"]
    with pytest.raises(FileNotFoundError, match="nowhere: no such checkpoint or folder"):
        checkpoint.find([tmp_path / "nowhere"])


def a_matrix(state_dict: dict[str, torch.Tensor]) -> str:
    """The name of the first weight matrix (names change with the model's layout; this does not)."""
    return next(k for k in sorted(state_dict) if state_dict[k].dim() == 2)


def resave(path: Path, raw: dict, *, checksum: bool = True) -> None:
    """Write ``raw`` back, with the checksum of its (altered) weights, as a crafted file would."""
    if checksum:
        raw["weights_sha256"] = checkpoint.weights_sha256(raw["state_dict"])
    torch.save(raw, path)


def test_save_records_the_checksum_of_the_weights(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    assert raw["weights_sha256"] == checkpoint.weights_sha256(raw["state_dict"])
    assert len(raw["weights_sha256"]) == 64
    renamed = {f"x{k}": v for k, v in raw["state_dict"].items()}
    assert checkpoint.weights_sha256(renamed) != raw["weights_sha256"]  # names count too


def test_the_checksum_sees_dtype_and_shape_not_only_bytes() -> None:
    weights = torch.arange(6, dtype=torch.int32)
    same_bytes = {
        "a": weights,
        "b": weights.reshape(2, 3),
        "c": weights.view(torch.float32),
        "d": weights.view(torch.bfloat16),  # numpy has no bfloat16: hashed as bytes
    }
    digests = {checkpoint.weights_sha256({"w": t}) for t in same_bytes.values()}
    assert len(digests) == len(same_bytes)


def test_a_flipped_byte_in_the_weights_is_refused(saved) -> None:
    weights = load(saved).state_dict
    weight = weights[a_matrix(weights)]
    data = bytearray(saved.read_bytes())
    at = data.find(weight.numpy().tobytes())
    assert at > 0
    assert data.find(weight.numpy().tobytes(), at + 1) < 0  # the bytes are that weight's
    data[at + 5] ^= 0x10
    saved.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"model\.pt: the weights differ from the checksum"):
        load(saved)


def test_a_checkpoint_without_a_checksum_still_loads(saved, vocabs, sentences) -> None:
    """Format 3 as released wrote no checksum (format 2 is tested above)."""
    raw = torch.load(saved, weights_only=True)
    del raw["weights_sha256"]
    torch.save(raw, saved)
    model = build_model(load(saved))
    name = a_matrix(raw["state_dict"])
    assert torch.equal(model.state_dict()[name], raw["state_dict"][name])


@pytest.mark.parametrize("dtype", [torch.int64, torch.float64, torch.bfloat16])
def test_weights_of_another_dtype_are_refused_not_cast(saved, dtype: torch.dtype) -> None:
    raw = torch.load(saved, weights_only=True)
    name = a_matrix(raw["state_dict"])
    raw["state_dict"][name] = raw["state_dict"][name].to(dtype)
    resave(saved, raw)
    kind = str(dtype).removeprefix("torch.")
    with pytest.raises(
        CheckpointError,
        match=rf"model\.pt: weights do not fit the model config: {re.escape(name)} is {kind}\[",
    ):
        build_model(load(saved))


def test_weights_under_other_names_are_listed_briefly(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    first = re.escape(sorted(raw["state_dict"])[0])
    raw["state_dict"] = {f"old.{k}": v for k, v in raw["state_dict"].items()}
    resave(saved, raw)
    n = len(raw["state_dict"])
    with pytest.raises(
        CheckpointError,
        match=rf"fit the model config: missing {first}, .* and {n - 3} more, "
        rf"unexpected old\.{first}, .* and {n - 3} more$",
    ):
        build_model(load(saved))


def test_weights_of_another_dtype_without_a_new_checksum_fail_the_checksum(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    name = a_matrix(raw["state_dict"])
    raw["state_dict"][name] = raw["state_dict"][name].to(torch.int64)
    resave(saved, raw, checksum=False)
    with pytest.raises(CheckpointError, match="differ from the checksum"):
        load(saved)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("checksum", [True, False])
def test_non_finite_weights_are_blamed_on_the_checkpoint(saved, value, checksum) -> None:
    raw = torch.load(saved, weights_only=True)
    if not checksum:
        del raw["weights_sha256"]
    raw["state_dict"]["encoder.lstms.0.backward_lstm.weight_hh_l0"][3, 2] = value
    resave(saved, raw, checksum=checksum)
    with pytest.raises(
        CheckpointError,
        match=r"model\.pt: weight encoder\.lstms\.0\.backward_lstm\.weight_hh_l0 holds NaN or inf",
    ):
        load(saved)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch.jit, to make the archive
def test_a_torchscript_archive_is_named_and_no_unsafe_advice_given(tmp_path) -> None:
    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path)
    with pytest.raises(CheckpointError, match=r"model\.pt: a TorchScript archive") as caught:
        load(path)
    assert "weights_only" not in str(caught.value)


def test_torchs_advice_to_load_with_weights_only_false_is_never_repeated(
    saved, monkeypatch
) -> None:
    def refuse(*args, **kwargs):
        raise RuntimeError("Re-running `torch.load` with `weights_only` set to `False` ...")

    monkeypatch.setattr(torch, "load", refuse)
    with pytest.raises(CheckpointError, match="truncated or corrupt") as caught:
        load(saved)
    assert "weights_only" not in str(caught.value)
    assert caught.value.__suppress_context__


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("encoder.lstm_hidden", 10**7),
        ("arc_mlp", checkpoint.MAX_SIZE + 1),
        ("encoder.lstm_layers", -(10**9)),
    ],
)
def test_sizes_above_the_bound_are_refused_before_anything_is_built(
    saved, monkeypatch, field: str, value: int
) -> None:
    *parents, key = field.split(".")

    def edit(config: dict[str, Any]) -> None:
        for parent in parents:
            config = config[parent]
        config[key] = value

    edit_config(saved, edit)
    monkeypatch.setattr(checkpoint, "build_parser", pytest.fail)  # nothing may be built
    with pytest.raises(
        CheckpointError, match=rf"model\.pt: model_config\.{field}={value} is above 65536"
    ):
        build_model(load(saved))


def test_the_largest_size_still_loads(saved) -> None:
    def edit(config: dict[str, Any]) -> None:
        config["encoder"]["pretrained"] = {"max_words": 400_000}  # a file's row count
        config["arc_mlp"] = checkpoint.MAX_SIZE

    edit_config(saved, edit)
    assert load(saved).model_config["arc_mlp"] == checkpoint.MAX_SIZE


def test_sizes_under_the_bound_that_multiply_into_gigabytes_allocate_nothing(
    saved, monkeypatch
) -> None:
    """Each size is allowed, but an LSTM 40000 wide would hold tens of GB: the weights in the
    file do not fit it, which is found before the first tensor beyond them is allocated."""

    def edit(config: dict[str, Any]) -> None:
        config["encoder"]["lstm_hidden"] = 40_000
        config["arc_mlp"] = 40_000

    edit_config(saved, edit)
    largest = []
    real_empty = torch.empty

    def recording_empty(*args, **kwargs):
        tensor = real_empty(*args, **kwargs)
        largest.append(tensor.numel())
        return tensor

    monkeypatch.setattr(torch, "empty", recording_empty)
    with pytest.raises(
        CheckpointError, match=r"model\.pt: weights do not fit the model config: it asks for more"
    ):
        build_model(load(saved))
    stored = sum(t.numel() for t in torch.load(saved, weights_only=True)["state_dict"].values())
    assert max(largest) <= stored  # nothing near 40000 x 40000 was ever allocated


@pytest.mark.parametrize(
    ("args", "kwargs", "elements"),
    [
        ((3, 4), {}, 12),
        (((3, 4),), {}, 12),
        ((torch.Size([2, 5]), 0.0), {}, 10),
        ((), {"size": (7,)}, 7),
    ],
)
def test_the_allocation_budget_reads_every_way_of_giving_a_size(args, kwargs, elements) -> None:
    assert checkpoint._requested(args, kwargs) == elements


ADD_LEXICON = Path(__file__).parents[2] / "experiments" / "add_lexicon.py"


def test_the_lemma_lexicon_round_trips_through_a_checkpoint(saved, vocabs) -> None:
    assert vocabs.lexicon is not None
    assert len(vocabs.lexicon) > 0
    assert load(saved).vocabs.lexicon == vocabs.lexicon


def test_add_lexicon_copies_an_old_checkpoint_with_the_lexicon_of_its_training_file(
    tmp_path, parser, vocabs
) -> None:
    old = tmp_path / "old.pt"
    data = vocabs.to_dict()
    del data["lemma_lexicon"]  # as written before the lexicon
    save(
        old,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=data,
        state_dict=parser.state_dict(),
        metadata={"train": "tiny.conllu"},
        training_state={"epoch": 3},
    )
    assert load(old).vocabs.lexicon is None
    new = tmp_path / "new.pt"
    command = [sys.executable, str(ADD_LEXICON), str(old), str(DATA / "tiny.conllu"), str(new)]
    done = subprocess.run(command, capture_output=True, text=True, env=_with_repo_path())
    assert done.returncode == 0, done.stderr
    before, after = load(old), load(new)
    assert after.vocabs == dataclasses.replace(before.vocabs, lexicon=vocabs.lexicon)
    assert weights_sha256(after.state_dict) == weights_sha256(before.state_dict)
    assert (after.metadata, after.training_state) == (before.metadata, before.training_state)
    assert (after.parser, after.model_config) == (before.parser, before.model_config)


def test_add_lexicon_only_adds_the_tables_named(tmp_path, parser, vocabs) -> None:
    # A shipped model keeps the tables measured for it (here: no FEATS suffixes) and gets the
    # (form, UPOS, FEATS) lemma table alone.
    assert vocabs.lexicon.featured  # tiny.conllu annotates FEATS
    assert vocabs.lexicon.suffixes
    kept = dataclasses.replace(vocabs.lexicon, featured={}, suffixes={})
    old = tmp_path / "old.pt"
    save(
        old,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=dataclasses.replace(vocabs, lexicon=kept),
        state_dict=parser.state_dict(),
        metadata={},
    )
    new = tmp_path / "new.pt"
    command = [sys.executable, str(ADD_LEXICON), str(old), str(DATA / "tiny.conllu"), str(new)]
    done = subprocess.run(
        [*command, "--only", "featured"], capture_output=True, text=True, env=_with_repo_path()
    )
    assert done.returncode == 0, done.stderr
    expected = dataclasses.replace(kept, featured=vocabs.lexicon.featured)
    assert load(new).vocabs.lexicon == expected


def test_add_lexicon_only_offers_no_trained_model_or_setting_chosen_on_dev() -> None:
    # --only upos_guesser replaced a trained guesser with an untrained lexicon's none.
    import importlib.util

    spec = importlib.util.spec_from_file_location("add_lexicon", ADD_LEXICON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    kept = {"generator", "feats_guesser", "upos_guesser", "doubt", "exact_case", "runner_up"}
    assert not kept & set(module.TABLES)
    assert {"tag_sets", "featured", "relation_upos"} <= set(module.TABLES)


def test_add_lexicon_only_on_a_checkpoint_without_a_lexicon_adds_the_tables(
    tmp_path, parser, vocabs
) -> None:
    # dataclasses.replace(None, ...): a TypeError traceback, for the checkpoints it is for.
    old = tmp_path / "old.pt"
    data = vocabs.to_dict()
    del data["lemma_lexicon"]
    model = dict(parser=parser.kind, model_config=parser.config(), metadata={})
    save(old, **model, vocabs=data, state_dict=parser.state_dict())
    new = tmp_path / "new.pt"
    command = [sys.executable, str(ADD_LEXICON), str(old), str(DATA / "tiny.conllu"), str(new)]
    done = subprocess.run(
        [*command, "--only", "tag_sets"], capture_output=True, text=True, env=_with_repo_path()
    )
    assert done.returncode == 0, done.stderr
    assert load(new).vocabs.lexicon.tag_sets == vocabs.lexicon.tag_sets
    assert not load(new).vocabs.lexicon.tagged


@pytest.mark.parametrize("stored_as", ["float16", "int8"])
def test_add_lexicon_keeps_a_shipped_models_compact_weights_bit_for_bit(
    tmp_path, parser, vocabs, stored_as: str
) -> None:
    # A shipped parser.pt (float16, or int8 with a scale per row) gets the tag sets alone: its
    # weights, widened on load and compacted again, are stored with the same bits.
    kept = dataclasses.replace(vocabs.lexicon, tag_sets=frozenset())
    old = tmp_path / "parser.pt"
    model = dict(parser=parser.kind, model_config=parser.config(), metadata={})
    save(old, **model, vocabs=dataclasses.replace(vocabs, lexicon=kept),
         state_dict=parser.state_dict(), stored_as=stored_as)  # fmt: skip
    new = tmp_path / "new.pt"
    command = [sys.executable, str(ADD_LEXICON), str(old), str(DATA / "tiny.conllu"), str(new)]
    options = ["--only", "tag_sets", "--stored-as", stored_as]
    done = subprocess.run(
        [*command, *options], capture_output=True, text=True, env=_with_repo_path()
    )
    assert done.returncode == 0, done.stderr
    stored = [torch.load(path, weights_only=True) for path in (old, new)]
    assert stored[1]["weights_sha256"] == stored[0]["weights_sha256"]
    assert stored[1]["stored_as"] == stored_as
    assert load(new).vocabs.lexicon == dataclasses.replace(kept, tag_sets=vocabs.lexicon.tag_sets)
    assert vocabs.lexicon.tag_sets  # tiny.conllu has UPOS, XPOS and FEATS


def test_add_lexicon_names_a_bad_training_file_in_one_line(tmp_path, saved) -> None:
    bad = tmp_path / "bad.conllu"
    bad.write_text("1\tx\n\n", encoding="utf-8")
    out = tmp_path / "new.pt"
    command = [sys.executable, str(ADD_LEXICON), str(saved), str(bad), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=_with_repo_path())
    assert done.returncode == 2
    assert done.stderr.startswith("error: ")
    assert str(bad) in done.stderr
    assert done.stderr.count("\n") == 1
    assert not out.exists()


def _with_repo_path() -> dict[str, str]:
    """The environment with this repository first on the import path (as ``PYTHONPATH=.``)."""
    return os.environ | {"PYTHONPATH": str(Path(__file__).parents[2])}


def test_compact_halves_the_weights_and_loads_them_back_as_float32(saved, tmp_path) -> None:
    compact = tmp_path / "compact.pt"
    checkpoint.compact(saved, compact)
    raw = torch.load(compact, weights_only=True)
    assert raw["stored_as"] == "float16"
    assert raw["training_state"] is None
    assert {v.dtype for v in raw["state_dict"].values()} == {torch.float16}
    original, loaded = load(saved), load(compact)
    assert loaded.vocabs.to_dict() == original.vocabs.to_dict()
    assert loaded.metadata == original.metadata
    for name, weight in original.state_dict.items():
        # float32 again, each weight the nearest float16 of the original
        assert torch.equal(loaded.state_dict[name], weight.half().float()), name
    build_model(loaded)  # fits the model config: no dtype refused
    assert compact.stat().st_size < 0.6 * saved.stat().st_size


def test_float16_weights_without_the_storage_mark_are_refused_not_cast(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    name = a_matrix(raw["state_dict"])
    raw["state_dict"][name] = raw["state_dict"][name].half()
    resave(saved, raw)
    with pytest.raises(CheckpointError, match=rf"{re.escape(name)} is float16\["):
        build_model(load(saved))


def test_an_unknown_weight_storage_is_named(saved) -> None:
    raw = torch.load(saved, weights_only=True)
    raw["stored_as"] = "int4"
    resave(saved, raw)
    with pytest.raises(CheckpointError, match=r"model\.pt: unknown weight storage 'int4'"):
        load(saved)


def test_int8_storage_keeps_each_row_within_half_a_step(saved, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(checkpoint, "INT8_MIN_ELEMENTS", 64)  # the tiny parser's matrices too
    small = tmp_path / "int8.pt"
    checkpoint.compact(saved, small, stored_as="int8")
    raw = torch.load(small, weights_only=True)
    assert raw["stored_as"] == "int8"
    stored = raw["state_dict"]
    quantized = [k for k, v in stored.items() if v.dtype == torch.int8]
    assert len(quantized) > 5
    assert {v.dtype for v in stored.values()} == {torch.int8, torch.float16, torch.float32}
    assert all(stored[k + checkpoint.INT8_SCALE].dtype == torch.float32 for k in quantized)
    original, loaded = load(saved), load(small)
    assert loaded.state_dict.keys() == original.state_dict.keys()  # no scale left over
    for name in quantized:
        weight = original.state_dict[name].half().float()
        rows = weight.reshape(-1, weight.shape[-1])
        step = rows.abs().amax(1, keepdim=True) / 127
        error = (loaded.state_dict[name].reshape(rows.shape) - rows).abs()
        assert bool((error <= step / 2 + 1e-7).all()), name
        assert stored[name].abs().amax() == 127  # each matrix uses the whole range
    build_model(loaded)


def test_a_rewrite_keeps_the_compact_storage_it_read(saved, tmp_path, monkeypatch) -> None:
    """Without stored_as, a shipped model's int8 weights were written again as float32."""
    monkeypatch.setattr(checkpoint, "INT8_MIN_ELEMENTS", 64)
    small, again = tmp_path / "int8.pt", tmp_path / "again.pt"
    checkpoint.compact(saved, small, stored_as="int8")
    loaded = load(small)
    checkpoint.rewrite(loaded, again, vocabs=loaded.vocabs)
    assert torch.load(again, weights_only=True)["stored_as"] == "int8"
    assert again.stat().st_size == small.stat().st_size
    assert checkpoint.weights_sha256(load(again).state_dict) == checkpoint.weights_sha256(
        loaded.state_dict
    )
    checkpoint.rewrite(load(saved), again, vocabs=loaded.vocabs)  # float32 stays float32
    assert "stored_as" not in torch.load(again, weights_only=True)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [("scale", "int8 weight {} has no float32 scale per row"), ("weight", "{}:int8_scale scales")],
)
def test_int8_weights_and_scales_come_in_pairs(
    saved, tmp_path, monkeypatch, damage: str, problem: str
) -> None:
    monkeypatch.setattr(checkpoint, "INT8_MIN_ELEMENTS", 64)
    checkpoint.compact(saved, saved, stored_as="int8")
    raw = torch.load(saved, weights_only=True)
    name = next(k for k, v in sorted(raw["state_dict"].items()) if v.dtype == torch.int8)
    del raw["state_dict"][name + checkpoint.INT8_SCALE if damage == "scale" else name]
    resave(saved, raw)
    with pytest.raises(CheckpointError, match=re.escape(problem.format(name))):
        load(saved)


@pytest.mark.parametrize("shape", [(), (4,), (3, 0)])
def test_an_int8_weight_that_is_no_matrix_is_named(saved, shape: tuple[int, ...]) -> None:
    raw = torch.load(saved, weights_only=True)
    raw["stored_as"] = "int8"
    raw["state_dict"]["crafted"] = torch.zeros(shape, dtype=torch.int8)
    resave(saved, raw)
    with pytest.raises(CheckpointError, match="int8 weight crafted is no matrix"):
        load(saved)


def test_an_unknown_storage_is_refused_before_anything_is_written(saved, tmp_path) -> None:
    with pytest.raises(ValueError, match="stored_as='int4': expected one of float16, int8"):
        checkpoint.compact(saved, tmp_path / "out.pt", stored_as="int4")
    assert not (tmp_path / "out.pt").exists()


def test_compact_refuses_a_weight_beyond_float16s_range(saved, tmp_path) -> None:
    raw = torch.load(saved, weights_only=True)
    name = a_matrix(raw["state_dict"])
    raw["state_dict"][name][0, 0] = 1e6
    resave(saved, raw)
    with pytest.raises(ValueError, match=rf"weight {re.escape(name)} holds values beyond"):
        checkpoint.compact(saved, tmp_path / "compact.pt")
    assert not (tmp_path / "compact.pt").exists()


def as_version_4(saved: Path) -> None:
    """Rewrite a saved checkpoint as version 4 wrote it: its plain data pickled as objects."""
    raw = torch.load(saved, weights_only=True)
    plain = {field: json.loads(raw[field]) for field in checkpoint.JSON_FIELDS}
    torch.save({**raw, **plain, "version": 4}, saved)


@pytest.mark.parametrize("stored_as", [None, "int8"])
def test_a_version_4_checkpoint_loads_and_upgrades_to_the_same_model(
    tmp_path, parser, vocabs, monkeypatch, stored_as: str | None
) -> None:
    monkeypatch.setattr(checkpoint, "INT8_MIN_ELEMENTS", 64)  # the tiny model's matrices too
    old, new = tmp_path / "old.pt", tmp_path / "new.pt"
    save(
        old,
        parser=parser.kind,
        model_config=parser.config(),
        vocabs=vocabs,
        state_dict=parser.state_dict(),
        metadata={"best_dev": {"las": 1.5}},
        training_state={"epoch": 2, "rng": torch.get_rng_state()},
        stored_as=stored_as,
    )
    as_version_4(old)
    assert isinstance(torch.load(old, weights_only=True)["vocabs"], dict)
    before = load(old)
    checkpoint.upgrade(old, new)
    raw_old, raw_new = torch.load(old, weights_only=True), torch.load(new, weights_only=True)
    assert raw_new["version"] == checkpoint.VERSION
    assert all(isinstance(raw_new[field], str) for field in checkpoint.JSON_FIELDS)
    assert raw_new["weights_sha256"] == raw_old["weights_sha256"]  # the same stored bytes
    assert raw_new.get("stored_as") == stored_as
    after = load(new)
    assert after.model_config == before.model_config == parser.config()
    assert after.vocabs.to_dict() == before.vocabs.to_dict() == vocabs.to_dict()
    assert after.metadata == before.metadata
    assert after.stored_as == before.stored_as == stored_as
    assert torch.equal(after.training_state["rng"], before.training_state["rng"])
    assert all(torch.equal(after.state_dict[k], v) for k, v in before.state_dict.items())
    checkpoint.upgrade(new, new)  # in place, atomically: the same file again
    assert torch.load(new, weights_only=True)["weights_sha256"] == raw_old["weights_sha256"]


@pytest.mark.parametrize(
    ("field", "text", "problem"),
    [
        ("vocabs", {"words": []}, "vocabs is a dict, not JSON text"),
        ("metadata", "{'a': 1}", "metadata is not valid JSON"),
        ("model_config", "[1, 2]", "model_config is not a JSON object"),
    ],
)
def test_plain_data_that_is_no_json_object_is_named(saved, field: str, text, problem) -> None:
    raw = torch.load(saved, weights_only=True)
    torch.save({**raw, field: text}, saved)
    with pytest.raises(CheckpointError, match=rf"model\.pt: {problem}"):
        load(saved)
