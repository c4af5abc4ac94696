"""ONNX export: every family's graphs give the eager scores on real EWT sentences.

The graph parser is the shipped EWT model (and the shipped GloVe one, whose vectors the graph
holds); the transition families (each system, and the
combined model) are small random models on the same sentences' vocabularies. Batches are runs
of consecutive sentences (mixed lengths, so padding sits beside real words in every batch).
Scores are compared with ``|onnx - eager| <= 1e-5 + 1e-5 * |eager|``: float32 scores of
magnitude 100 are 7.6e-6 apart at the closest.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from builders import ENCODER, HEADS, TINY_PARSER, biaffine_parser, randomized, training_vocabs

import transitions
from biaffine import checkpoint
from biaffine.cli import describe
from biaffine.data.batching import Batch, collate, encode
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocabs
from biaffine.export import (
    FORMAT,
    MANIFEST,
    OPSET,
    _not_an_export,
    _replace,
    export,
    exported_width,
    parse_settings,
)
from biaffine.nn import Encoder
from biaffine.parsers import BiaffineParser, TransitionParser
from biaffine.parsers.ensemble import EnsembleParser
from biaffine.parsers.heads import LabelVectors
from biaffine.training import compose

ROOT = Path(__file__).parents[2]
SHIPPED = ROOT / "models" / "en_ewt_small" / "parser.pt"
SHIPPED_GLOVE = ROOT / "models" / "en_ewt_glove" / "parser.pt"
N_SENTENCES = 200
BATCH_SIZES = (1, 3, 8, 29, 64, 95)  # 200 sentences, in file order
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
NO_RUNTIME = "onnxruntime is not installed (the export extra: pip install 'rootparse[export]')"
NO_ONNX = "onnx is not installed, which torch writes ONNX files with (the export extra)"


@pytest.fixture(autouse=True)
def _one_thread(one_torch_thread: None) -> None:
    """One torch thread, as onnxruntime's sessions here: nothing races for the cores."""


@pytest.fixture(scope="module")
def ewt_test(ewt_dir: Path) -> list[Sentence]:
    """The first sentences of EWT test."""
    sentences = read_conllu(ewt_dir / "en_ewt-ud-test.conllu")
    return [s for _, s in zip(range(N_SENTENCES), sentences, strict=False)]


def mixed_batches(sentences: Sequence[Sentence], vocabs: Vocabs) -> Iterator[Batch]:
    """Runs of consecutive sentences, of the sizes of BATCH_SIZES."""
    encoded = encode(sentences, vocabs)
    start = 0
    for size in BATCH_SIZES:
        indices = list(range(start, min(start + size, len(encoded))))
        start += size
        yield collate([encoded[i] for i in indices], indices)


def exporter() -> None:
    pytest.importorskip("onnx", reason=NO_ONNX)


def runtime():
    return pytest.importorskip("onnxruntime", reason=NO_RUNTIME)


@functools.cache
def session(folder: Path, name: str):
    options = runtime().SessionOptions()
    options.intra_op_num_threads = 1
    path = str(folder / f"{name}.onnx")
    return runtime().InferenceSession(path, options, providers=["CPUExecutionProvider"])


def inputs(batch: Batch, encoder: Encoder) -> dict[str, np.ndarray]:
    """scores.onnx's feed, its character vectors the eager model's: each graph checked alone."""
    with torch.inference_mode():
        char_vectors = encoder.char_encoder(batch.chars)
    feed = {"words": batch.words, "char_vectors": char_vectors, "lengths": batch.lengths}
    if encoder.use_tags:
        feed["upos"] = batch.columns["upos"]
    if encoder.pretrained is not None:  # the runtime's lookup, done here by the eager module
        feed["vector_rows"] = encoder.pretrained.rows(batch.forms, batch.words.shape[1])
    return {name: tensor.numpy() for name, tensor in feed.items()}


def eager_scores(model: torch.nn.Module, batch: Batch) -> dict[str, torch.Tensor]:
    """What the eager model computes, by the names of the exported outputs."""
    with torch.inference_mode():
        if model.family == "transition":
            encoded = model.encode(batch, tag=True)
            named = {"slots": encoded.slots}
            if encoded.arc_scores is not None:
                named["arc_scores"] = encoded.arc_scores
        else:
            encoded = model(batch, tag=True)
            named = {"arc_scores": encoded.arc_scores}
        named["states"] = exported_states(model.encoder, batch)
    named |= {"label_dep": encoded.labels.dep, "label_head": encoded.labels.head}
    return named | {f"{column}_scores": s for column, s in encoded.tag_scores.items()}


def exported_states(encoder: Encoder, batch: Batch) -> torch.Tensor:
    """``scores.onnx``'s ``states`` of the eager encoder: the top level and the tag level."""
    top, below = encoder.levels(batch)
    return top if below is None else torch.cat([top, below], -1)


def run_graph(folder: Path, name: str, feed: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    graph = session(folder, name)
    found = graph.run(None, feed)
    names = [output.name for output in graph.get_outputs()]
    return {name: torch.from_numpy(array) for name, array in zip(names, found, strict=True)}


def check_chars(model: torch.nn.Module, folder: Path, batch: Batch) -> None:
    """chars.onnx on the batch's distinct forms against the eager (packed) character model.

    Both as the runtime calls it (a group of forms of one length, no padding) and on all of
    them padded to the longest (the dense path's reversal within each length).
    """
    rows = torch.unique(batch.chars.reshape(-1, batch.chars.shape[-1]), dim=0)
    lengths = (rows != 0).sum(1)
    groups = [rows[lengths == n][:, :n] for n in lengths.unique().tolist() if n > 0]
    assert len(groups) > 1
    for group in [rows, *groups]:
        found = run_graph(folder, "chars", {"chars": group.numpy()})["char_vectors"]
        with torch.inference_mode():
            expected = model.encoder.char_encoder(group.unsqueeze(0))[0]
        torch.testing.assert_close(found, expected, **TOLERANCE)


def check_scores(model: torch.nn.Module, folder: Path, batch: Batch) -> dict[str, torch.Tensor]:
    """Compare chars.onnx, scores.onnx and tags.onnx with the eager model; returns the eager
    scores."""
    check_chars(model, folder, batch)
    expected = eager_scores(model, batch)
    found = run_graph(folder, "scores", inputs(batch, model.encoder))
    if model.tagged_columns:  # on the eager states, so that each graph is checked alone
        feed = {"states": expected["states"].numpy(), "lengths": batch.lengths.numpy()}
        found |= run_graph(folder, "tags", feed)
    assert sorted(found) == sorted(expected)
    for name, tensor in found.items():
        torch.testing.assert_close(tensor, expected[name], **TOLERANCE)
    return expected


def check_labels(model: torch.nn.Module, folder: Path, scores: dict, heads: torch.Tensor) -> None:
    """labels.onnx on the words' arcs ``heads`` long[B, N+1] against ``LabelScorer.at_words``
    (the runtime gathers the arcs' vectors as done here)."""
    dep, head = scores["label_dep"], scores["label_head"]
    with torch.inference_mode():
        expected = model.labels.at_words(LabelVectors(dep, head), heads)
    rows, dependents = (heads >= 0).nonzero(as_tuple=True)
    feed = {
        "label_dep": dep[rows, dependents].numpy(),
        "label_head": head[rows, heads[rows, dependents]].numpy(),
    }
    (found,) = session(folder, "labels").run(None, feed)
    assert found.shape == (int((heads >= 0).sum()), model.labels.attn.n_out)
    torch.testing.assert_close(torch.from_numpy(found), expected, **TOLERANCE)


def check_head_labels(
    model: torch.nn.Module, folder: Path, scores: dict, mask: torch.Tensor
) -> None:
    """head_labels.onnx on the words of ``mask`` bool[B, N+1], three heads each (its best two
    and ROOT), against every arc's label scores in torch (``LabelScorer.all``)."""
    dep, head = scores["label_dep"], scores["label_head"]
    arcs = scores["arc_scores"]
    rows, dependents = mask.nonzero(as_tuple=True)
    heads = arcs[rows, dependents].topk(2, -1).indices
    heads = torch.cat([heads, torch.zeros_like(heads[:, :1])], -1)  # [W, 3]
    with torch.inference_mode():
        every = model.labels.all(LabelVectors(dep, head))
    expected = every[rows.unsqueeze(1), dependents.unsqueeze(1), heads]
    feed = {
        "label_dep": dep[rows, dependents].numpy(),
        "label_head": head[rows.unsqueeze(1), heads].numpy(),
    }
    (found,) = session(folder, "head_labels").run(None, feed)
    assert found.shape == expected.shape
    torch.testing.assert_close(torch.from_numpy(found).to(expected.dtype), expected, **TOLERANCE)


def gold_heads(batch: Batch) -> torch.Tensor:
    return batch.heads.masked_fill(~batch.mask, -1)


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> tuple[torch.nn.Module, Vocabs, Path]:
    """The shipped EWT graph parser, its vocabularies, and its export."""
    exporter()
    loaded = checkpoint.load(SHIPPED)
    model = checkpoint.build_model(loaded)
    folder = tmp_path_factory.mktemp("export") / "en_ewt_small"
    export(model, folder, about={})
    return model, loaded.vocabs, folder


@pytest.mark.ud
@pytest.mark.slow
def test_the_graph_parser_exports_its_eager_scores(
    shipped: tuple[torch.nn.Module, Vocabs, Path], ewt_test: list[Sentence]
) -> None:
    runtime()
    model, vocabs, folder = shipped
    assert model.tagged_columns == ("upos", "xpos", "feats", "lemma")  # every tagger checked
    for batch in mixed_batches(ewt_test, vocabs):
        scores = check_scores(model, folder, batch)
        best = scores["arc_scores"].argmax(-1).masked_fill(~batch.mask, -1)
        for heads in (best, gold_heads(batch)):
            check_labels(model, folder, scores, heads)
        check_head_labels(model, folder, scores, batch.mask)


@pytest.mark.ud
def test_pretrained_vectors_kept_in_the_checkpoint_export_with_the_graph(
    ewt_test: list[Sentence], tmp_path: Path
) -> None:
    # The shipped GloVe model: its 50,000 vectors become a constant of scores.onnx, which reads
    # each word's row (vector_rows); before, any pretrained input was refused.
    exporter()
    runtime()
    loaded = checkpoint.load(SHIPPED_GLOVE)
    model = checkpoint.build_model(loaded)
    assert model.encoder.pretrained is not None
    assert model.encoder.pretrained.kept
    export(model, tmp_path / "glove", about={})
    unknown = 0
    for batch in mixed_batches(ewt_test, loaded.vocabs):
        scores = check_scores(model, tmp_path / "glove", batch)
        check_labels(model, tmp_path / "glove", scores, gold_heads(batch))
        rows = inputs(batch, model.encoder)["vector_rows"]
        unknown += int(((rows == 0) & batch.mask.numpy()).sum())
    assert 0 < unknown < sum(len(s) for s in ewt_test) // 10  # rows looked up, some unknown


@pytest.mark.ud
@pytest.mark.parametrize(
    "tagging", [{}, {"tag_reads_top": True}, {"tag_hidden": 7}], ids=["level", "top", "own"]
)
def test_a_graph_parser_with_a_tag_layer_exports_its_eager_scores(
    ewt_test: list[Sentence], tmp_path: Path, tagging: dict
) -> None:
    """Taggers on level 1, on level 1 and the top (``tag_reads_top``), or on a level of their
    own above level 1 (``tag_hidden``)."""
    exporter()
    runtime()
    vocabs = compose.training_vocabs(ewt_test, ewt_test, min_word_count=1)
    torch.manual_seed(0)
    layers = {"lstm_layers": 2, "tag_layer": 1, **tagging}
    encoder = Encoder(vocabs, **{**ENCODER, **layers})
    options = {"tag_loss_weight": 1.0, "feats_loss_weight": 1.0}
    model = randomized(BiaffineParser(vocabs, encoder, **HEADS, **options), scale=0.2).eval()
    export(model, tmp_path / "layered", about={})
    for batch in mixed_batches(ewt_test, vocabs):
        scores = check_scores(model, tmp_path / "layered", batch)
        assert scores["states"].shape[-1] == exported_width(encoder) == 2 * encoder.n_out
        check_labels(model, tmp_path / "layered", scores, gold_heads(batch))


@pytest.mark.ud
def test_the_dense_character_path_gives_the_packed_vectors(
    shipped: tuple[torch.nn.Module, Vocabs, Path], ewt_test: list[Sentence]
) -> None:
    model, vocabs, _ = shipped
    chars = model.encoder.char_encoder
    for batch in mixed_batches(ewt_test, vocabs):
        with torch.inference_mode():
            dense, packed = chars.dense(batch.chars), chars(batch.chars)
        # 1e-5, the bound for exported scores: the two paths sum in different orders
        # (an Intel Xeon with AMX differed by 1.4e-6 at a value of 2.4, about 5 float32 ulps).
        torch.testing.assert_close(dense, packed, rtol=0, atol=1e-5)
        assert not dense[batch.chars[..., 0] == 0].any()  # padding words: zeros


# (system, extra options): every transition system, one embedding the input UPOS, the
# combined model (a graph head beside the transition scorer), and taggers on a lower level.
TRANSITION_MODELS = {
    "arc_standard": ("arc_standard", {"encoder": {"use_tags": True}, "xpos_loss_weight": 1.0}),
    "arc_eager": ("arc_eager", {"tag_loss_weight": 1.0}),
    "arc_eager_unshift": ("arc_eager_unshift", {}),
    "arc_hybrid": ("arc_hybrid", {"feats_loss_weight": 1.0}),
    "swap": ("swap", {"lemma_loss_weight": 1.0}),
    "combined": ("arc_hybrid", {"graph_loss_weight": 1.0, "tag_loss_weight": 1.0}),
    # taggers on the lower of two BiLSTM levels: states.onnx carries both levels to tags.onnx
    "tag_layer": (
        "arc_hybrid",
        {"encoder": {"lstm_layers": 2, "tag_layer": 1}, "tag_loss_weight": 1.0},
    ),
}


def transition_model(sentences: list[Sentence], name: str) -> tuple[TransitionParser, Vocabs]:
    """A random transition parser (untied weights, so labels and tags are not all equal).

    The weights are moved by 0.2 (times a normal draw), not the builders' 0.5: at 0.5 some
    label scores cancel from terms so large that the eager float32 scores themselves are 2.6e-5
    from float64.
    """
    system, options = TRANSITION_MODELS[name]
    options = dict(options)
    _, vocabs = training_vocabs(sentences, system)
    torch.manual_seed(0)
    encoder = Encoder(vocabs, **{**ENCODER, **options.pop("encoder", {})})
    model = TransitionParser(vocabs, encoder, system=system, **HEADS, **options)
    return randomized(model, scale=0.2).eval(), vocabs


@pytest.mark.ud
@pytest.mark.parametrize("name", sorted(TRANSITION_MODELS))
def test_a_transition_parser_exports_its_eager_scores(
    name: str, ewt_test: list[Sentence], tmp_path: Path
) -> None:
    exporter()
    runtime()
    model, vocabs = transition_model(ewt_test, name)
    manifest = export(model, tmp_path / "export", about={})
    layers = json.loads((tmp_path / "export" / MANIFEST).read_text())["transition_mlp"]
    assert layers == manifest["transition_mlp"]
    options = {"n_stack": model.n_stack, "n_buffer": model.n_buffer}
    configurations = 0
    for batch in mixed_batches(ewt_test, vocabs):
        scores = check_scores(model, tmp_path / "export", batch)
        slots = scores["slots"]
        exported = transitions.SlotScorer.of(slots.numpy(), **layers)

        def score(
            rows: np.ndarray,
            positions: np.ndarray,
            slots: torch.Tensor = slots,
            exported: transitions.SlotScorer = exported,
        ) -> np.ndarray:
            # The export's slots and layers score what the eager module scores.
            nonlocal configurations
            configurations += len(rows)
            found = exported(rows, positions)
            with torch.inference_mode():
                rows_t, positions_t = torch.from_numpy(rows), torch.from_numpy(positions)
                expected = model.score_slots(slots, rows_t, positions_t)
            torch.testing.assert_close(torch.from_numpy(found), expected, **TOLERANCE)
            return found

        # The configurations the greedy search visits; the compiled search on the export's
        # arrays finds the trees of the eager module's scores.
        lengths = batch.lengths.numpy()
        stepped = transitions.greedy_search(model.system, lengths, score, **options)
        found = transitions.greedy_search(model.system, lengths, exported, **options)
        eager = transitions.greedy_search(model.system, lengths, eager_scorer(model, slots))
        np.testing.assert_array_equal(stepped.heads, eager.heads)
        np.testing.assert_array_equal(found.heads, eager.heads)
        check_labels(model, tmp_path / "export", scores, torch.from_numpy(found.heads))
        check_labels(model, tmp_path / "export", scores, gold_heads(batch))
    assert configurations >= sum(len(s) for s in ewt_test)  # a shift per word at least


def eager_scorer(model: TransitionParser, slots: torch.Tensor):
    def score(rows: np.ndarray, positions: np.ndarray) -> np.ndarray:
        with torch.inference_mode():
            rows_t, positions_t = torch.from_numpy(rows), torch.from_numpy(positions)
            return model.score_slots(slots, rows_t, positions_t).numpy()

    return score


def test_the_graphs_hold_no_packed_sequence_and_no_loop(
    shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path
) -> None:
    onnx = pytest.importorskip("onnx", reason=NO_ONNX)
    _, vocabs, folder = shipped
    model, _ = transition_model_tiny(vocabs)
    export(model, tmp_path / "transition", about={})
    for graph in [*folder.glob("*.onnx"), *(tmp_path / "transition").glob("*.onnx")]:
        loaded = onnx.load(str(graph))
        onnx.checker.check_model(loaded, full_check=True)  # types and shapes inferred throughout
        operators = {node.op_type for node in loaded.graph.node}
        assert not operators & {"Loop", "Scan", "SequenceConstruct", "SplitToSequence"}
        assert loaded.opset_import[0].version == OPSET
        # The sequence length of every LSTM is the padded one: nothing packs.
        lstms = [node for node in loaded.graph.node if node.op_type == "LSTM"]
        assert all(len(node.input) < 5 or node.input[4] == "" for node in lstms)


def transition_model_tiny(vocabs: Vocabs) -> tuple[TransitionParser, Vocabs]:
    torch.manual_seed(0)
    return TransitionParser(vocabs, Encoder(vocabs, **ENCODER), **HEADS).eval(), vocabs


def test_export_leaves_the_model_in_its_mode(
    shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path
) -> None:
    # The exporter restores the mode of the module it is given: a wrapper built in training
    # mode put the model back into training (dropout on) after an export.
    _, vocabs, _ = shipped
    model, _ = transition_model_tiny(vocabs)
    export(model, tmp_path / "a", about={})
    assert not model.training
    export(model.train(), tmp_path / "b", about={})
    assert model.training


def test_an_export_replaces_an_earlier_one_and_refuses_other_folders(
    shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path
) -> None:
    _, vocabs, _ = shipped
    model, _ = transition_model_tiny(vocabs)
    folder = tmp_path / "export"
    export(model, folder, about={"run": 1})
    manifest = export(model, folder, about={"run": 2})
    assert manifest["run"] == 2
    assert (folder / MANIFEST).read_text().count('"run": 2') == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # nothing left beside it
    assert sorted(manifest["graphs"]) == ["chars", "labels", "scores"]  # no tagger
    (tmp_path / "other").mkdir()
    with pytest.raises(ValueError, match="not an export folder"):
        export(model, tmp_path / "other", about={})


def test_export_without_the_onnx_package_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnx", None)  # a None entry: "import onnx" fails
    with pytest.raises(
        ValueError, match=r"needs the onnx package: pip install 'rootparse\[export\]'"
    ):
        export(torch.nn.Linear(1, 1), tmp_path / "export", about={})
    assert not (tmp_path / "export").exists()


TAGGERS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}


def tiny_ensemble(vocabs: Vocabs) -> EnsembleParser:
    """Two random members that differ in their character vectors' and their states' widths."""
    torch.manual_seed(0)
    first = biaffine_parser(vocabs, **(TINY_PARSER | TAGGERS))
    second = biaffine_parser(
        vocabs, **(TINY_PARSER | TAGGERS | {"char_out": 9, "lstm_layers": 2, "tag_layer": 1})
    )
    return EnsembleParser([randomized(first), randomized(second)]).eval()


@pytest.mark.ud
def test_an_ensemble_exports_as_one_parser_scoring_its_members_mean(
    shipped: tuple[torch.nn.Module, Vocabs, Path], ewt_test: list[Sentence], tmp_path: Path
) -> None:
    runtime()
    _, vocabs, single = shipped
    model = tiny_ensemble(vocabs)
    folder = tmp_path / "ensemble"
    graphs = export(model, folder, about={})["graphs"]
    one = json.loads((single / MANIFEST).read_text())["graphs"]
    for name in ("chars", "scores", "labels", "head_labels"):  # a runtime reads it as one parser
        assert graphs[name].keys() == one[name].keys()
        assert {**graphs[name], "sha256": ""} == {**one[name], "sha256": ""}  # other weights
    assert graphs["tags"]["outputs"] == ["upos_scores", "xpos_scores", "feats_scores"]
    members = model.members
    for batch in mixed_batches(ewt_test, vocabs):
        with torch.inference_mode():
            expected = model(batch)
            char_vectors = torch.cat([m.encoder.char_encoder(batch.chars) for m in members], -1)
            states = torch.cat([exported_states(m.encoder, batch) for m in members], -1)
        rows = torch.unique(batch.chars.reshape(-1, batch.chars.shape[-1]), dim=0)
        found = run_graph(folder, "chars", {"chars": rows.numpy()})["char_vectors"]
        with torch.inference_mode():
            each = [m.encoder.char_encoder(rows.unsqueeze(0))[0] for m in members]
        torch.testing.assert_close(found, torch.cat(each, -1), **TOLERANCE)
        feed = {"words": batch.words, "char_vectors": char_vectors, "lengths": batch.lengths}
        found = run_graph(folder, "scores", {k: v.numpy() for k, v in feed.items()})
        arcs, finite = found["arc_scores"], expected.arc_scores.isfinite()
        assert arcs.dtype == torch.float64
        assert torch.equal(arcs.isfinite(), finite)
        torch.testing.assert_close(arcs[finite], expected.arc_scores[finite], **TOLERANCE)
        torch.testing.assert_close(found["label_dep"], expected.labels.dep, **TOLERANCE)
        torch.testing.assert_close(found["label_head"], expected.labels.head, **TOLERANCE)
        torch.testing.assert_close(found["states"], states, **TOLERANCE)
        feed = {"states": states.numpy(), "lengths": batch.lengths.numpy()}
        tags = run_graph(folder, "tags", feed)
        for column, scores in expected.tag_scores.items():
            torch.testing.assert_close(tags[f"{column}_scores"], scores, **TOLERANCE)
        heads = gold_heads(batch)
        rows, dependents = (heads >= 0).nonzero(as_tuple=True)
        dep, head = expected.labels.dep, expected.labels.head
        feed = {
            "label_dep": dep[rows, dependents].numpy(),
            "label_head": head[rows, heads[rows, dependents]].numpy(),
        }
        with torch.inference_mode():
            wanted = model.labels.at_words(expected.labels, heads)
        labels = run_graph(folder, "labels", feed)["label_scores"]
        torch.testing.assert_close(labels, wanted, **TOLERANCE)
        named = {"label_dep": dep, "label_head": head, "arc_scores": expected.arc_scores}
        check_head_labels(model, folder, named, batch.mask)


def test_an_ensemble_of_members_that_read_other_vectors_is_refused_in_one_line(
    shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path
) -> None:
    small, _, _ = shipped
    glove = checkpoint.build_model(checkpoint.load(SHIPPED_GLOVE))
    with pytest.raises(ValueError, match="members read pretrained vectors of different words"):
        export(EnsembleParser([glove, small]), tmp_path / "export", about={})
    assert not (tmp_path / "export").exists()


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("transformer", "reads word forms as text"),
        ("pretrained", "pretrained vectors kept out of the checkpoint"),
    ],
)
def test_an_encoder_that_reads_text_is_refused(
    module: str, message: str, shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path
) -> None:
    _, vocabs, _ = shipped
    model, _ = transition_model_tiny(vocabs)
    if module == "transformer":  # stands for the module that tokenizes the text
        model.encoder.transformer = torch.nn.Identity()
    else:  # vectors recorded by path only: the checkpoint has no word list to look them up
        model.encoder.pretrained = SimpleNamespace(kept=False)
    with pytest.raises(ValueError, match=message):
        export(model, tmp_path / "export", about={})
    assert not (tmp_path / "export").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "neither of checkpoint= and model= given"),
        (["checkpoint=a.pt", "model=en_ewt", "output=x"], "both of checkpoint= and model="),
        (["checkpoint=a.pt"], "missing setting output"),
        (["checkpoint=a.pt", "output=x", "int8=yes"], "int8=yes: give true or false"),
        (["checkpoint=a.pt", "output=x", "threads=2"], "unknown setting 'threads'"),
        (["checkpoint=a.pt", "checkpoint=b.pt"], "checkpoint= is given twice"),
        (["checkpoint", "output=x"], "'checkpoint' is not key=value"),
        (["checkpoint=", "output=x"], "checkpoint= has no value"),
    ],
)
def test_settings_are_strict(argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_settings(argv)


def test_the_command_exports_a_checkpoint_and_refuses_bad_input(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "biaffine.export"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *argv], cwd=tmp_path, capture_output=True, text=True, env=env, check=False
        )

    bad = run("checkpoint=missing.pt", "output=out")
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("error: ")
    assert "missing.pt" in bad.stderr
    assert run("output=out").stderr.startswith("error: neither of checkpoint= and model= given")
    exporter()
    done = run(f"checkpoint={SHIPPED}", "output=out")
    assert done.returncode == 0, done.stderr
    files = ["chars.onnx", "export.json", "head_labels.onnx", "labels.onnx", "scores.onnx"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [*files, "tags.onnx"]


def _earlier_export(folder: Path) -> dict[str, bytes]:
    """A folder laid out as an export (its graphs' bytes are not read), and its files' bytes."""
    folder.mkdir()
    graphs = {name: {"file": f"{name}.onnx"} for name in ("chars", "scores")}
    manifest = {"format": FORMAT, "opset": OPSET, "family": "graph", "graphs": graphs}
    (folder / MANIFEST).write_text(json.dumps(manifest))
    for graph in graphs.values():
        (folder / graph["file"]).write_bytes(b"graph")
    return _contents(folder)


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _with_user_files(folder: Path) -> None:
    _earlier_export(folder)
    (folder / "notes.txt").write_text("mine\n")
    (folder / "data").mkdir()
    (folder / "data" / "d.csv").write_text("a,b\n")


@pytest.mark.parametrize(
    ("layout", "reason"),
    [
        (_with_user_files, "it holds data, which no export writes"),
        (lambda f: (f.mkdir(), (f / MANIFEST).write_text("{not json")), "not an export's"),
        (lambda f: (f.mkdir(), (f / MANIFEST).write_text('{"a": 1}')), "not an export's"),
        (lambda f: (f.mkdir(), (f / MANIFEST).write_bytes(b"\xff\xfe")), "not an export's"),
        (lambda f: (f.mkdir(), (f / MANIFEST).mkdir()), f"no {MANIFEST}"),
    ],
)
def test_export_refuses_a_folder_that_is_not_only_an_earlier_export_and_keeps_its_files(
    tmp_path: Path, layout: object, reason: str
) -> None:
    # A folder holding any export.json was taken for an export and replaced, the user's
    # other files (notes.txt, data/d.csv) with it.
    folder = tmp_path / "proj"
    layout(folder)  # type: ignore[operator]
    before = _contents(folder)
    with pytest.raises(ValueError, match=f"not an export folder.*{reason}"):
        export(torch.nn.Linear(1, 1), folder, about={})
    assert _contents(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]


def test_an_earlier_export_that_cannot_be_moved_aside_is_named_and_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An immutable earlier export: "error: FOLDER: Operation not permitted", naming no
    # setting, and a .FOLDER.old.XXXX/ folder left beside it.
    folder = tmp_path / "old"
    before = _earlier_export(folder)
    staging = tmp_path / ".new"
    staging.mkdir()
    renamed = Path.rename

    def refused(self: Path, target: Path) -> Path:
        if self == folder:
            raise PermissionError(errno.EPERM, "Operation not permitted", str(self))
        return renamed(self, target)

    monkeypatch.setattr(Path, "rename", refused)
    with pytest.raises(PermissionError) as caught:
        _replace(staging, folder)
    assert describe(caught.value) == (
        f"output={folder}: the earlier export there cannot be replaced (Operation not permitted)"
    )
    assert _contents(folder) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".new", "old"]


def test_an_earlier_export_alone_is_taken_for_one(tmp_path: Path) -> None:
    _earlier_export(tmp_path / "old")
    assert _not_an_export(tmp_path / "old") is None


def test_the_command_refuses_a_users_folder_in_one_line_and_keeps_it(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    _with_user_files(folder)
    before = _contents(folder)
    done = subprocess.run(
        [sys.executable, "-m", "biaffine.export", f"checkpoint={SHIPPED}", f"output={folder}"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"error: output={folder}: exists and is not an export folder")
    assert _contents(folder) == before


def test_files_that_come_into_the_destination_while_the_graphs_are_written_are_kept(
    shipped: tuple[torch.nn.Module, Vocabs, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The destination was checked before the tracing only: a folder made there meanwhile (or a
    # file added to an earlier export) was moved aside and removed with its files.
    from biaffine import export as module

    _, vocabs, _ = shipped
    model, _ = transition_model_tiny(vocabs)
    folder = tmp_path / "export"
    traced = module._export_graph

    def meanwhile(graph, path: Path) -> None:
        folder.mkdir(exist_ok=True)
        (folder / "thesis.txt").write_text("draft")
        traced(graph, path)

    monkeypatch.setattr(module, "_export_graph", meanwhile)
    refused = r"came to be no export folder while the graphs were written \(no export\.json\)"
    with pytest.raises(ValueError, match=refused):
        export(model, folder, about={})
    assert (folder / "thesis.txt").read_text() == "draft"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export"]  # no staging, nothing aside


def test_a_destination_that_takes_no_folder_is_refused_before_the_tracing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It failed once every graph was traced, naming the hidden staging folder.
    from biaffine import export as module

    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc, where no folder can be made")

    def traced(model: torch.nn.Module) -> list:
        raise AssertionError("traced before the destination was tried")

    monkeypatch.setattr(module, "graphs", traced)
    with pytest.raises(ValueError, match=r"^output=/proc/rootparse-export: cannot write there"):
        export(torch.nn.Linear(1, 1), Path("/proc/rootparse-export"), about={})
