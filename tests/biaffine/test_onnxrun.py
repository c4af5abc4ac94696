"""``runtime=onnx``: the shipped EWT model's export parses without torch, byte for byte as torch.

The ONNX runs are subprocesses where ``import torch`` fails (``sys.modules['torch'] = None``),
which also report every module of torch that got imported (none may). The torch runs are
``biaffine.predicting.predict`` and ``biaffine.api.Parser`` in this process, on the same input:
the first sentences of UD English-EWT test (CoNLL-U, and their forms as ``format=text``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from builders import run_script

import rawtext
from biaffine.api import Parser
from biaffine.data.conllu import read_conllu, write_conllu
from biaffine.export import FORMAT
from biaffine.metrics import score_corpus
from biaffine.predict_options import PredictOptions
from biaffine.predicting import predict

ROOT = Path(__file__).parents[2]
SHIPPED = ROOT / "models" / "en_ewt_small" / "parser.pt"
ENSEMBLE = ROOT / "models" / "en_ewt" / "parser.pt"
N_SENTENCES = 500
RAW_CHARACTERS = 20000  # of EWT test's raw text: its first documents
NO_RUNTIME = "onnxruntime is not installed (the export extra: pip install 'rootparse[export]')"
NO_ONNX = "onnx is not installed, which torch writes ONNX files with (the export extra)"

WITHOUT_TORCH = """
import json, runpy, sys
for name in ["torch", *sys.argv[3:]]:
    sys.modules[name] = None  # any import of it now fails
script = sys.argv[1]
sys.argv = [script, *json.loads(sys.argv[2])]
try:
    runpy.run_path(script, run_name="__main__")
except SystemExit as exit:
    print(json.dumps({"exit": exit.code}))
torch = [m for m, module in sys.modules.items() if m.split(".")[0] == "torch" and module]
numba = [m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")]
print(json.dumps({"torch": sorted(torch), "numba": sorted(numba)}))
"""
"""A script's main (predict.py, serve.py) with the arguments given as JSON, torch and any
modules named after them blocked; prints the exit code and the modules of torch (the None that
blocks it is no module) and of numba imported."""

API_WITHOUT_TORCH = """
import io, json, sys
sys.modules["torch"] = None
from biaffine.data.conllu import write_conllu
from biaffine.onnxrun import OnnxParser
parser = OnnxParser.load(sys.argv[1], threads=1)
trees = parser.parse(json.loads(sys.argv[2]), columns=["all"])
out = io.StringIO()
write_conllu(out, [tree.sentence for tree in trees])
print(json.dumps({"conllu": out.getvalue()}))
torch = [m for m, module in sys.modules.items() if m.split(".")[0] == "torch" and module]
print(json.dumps({"torch": sorted(torch)}))
"""


def export_model(name: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed model and its segmenter exported (python -m biaffine.export model=NAME)."""
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    pytest.importorskip("onnx", reason=NO_ONNX)
    from biaffine.export import run

    folder = tmp_path_factory.mktemp("onnxrun") / name
    run({"model": name, "output": str(folder)})
    return folder


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped EWT model exported, and the decoders compiled ahead of time as it does."""
    from biaffine.export import compile_decoders

    compile_decoders()
    return export_model("en_ewt_small", tmp_path_factory)


@pytest.fixture(scope="module")
def exported_glove(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped GloVe model exported: its vectors a constant of ``scores.onnx``."""
    return export_model("en_ewt_glove", tmp_path_factory)


@pytest.fixture(scope="module")
def exported_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped ensemble exported: two int8 networks read back as float32, one export."""
    return export_model("en_ewt", tmp_path_factory)


@pytest.fixture(scope="module")
def ewt_head(ewt_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first N_SENTENCES sentences of EWT test, as a CoNLL-U file."""
    sentences = read_conllu(ewt_dir / "en_ewt-ud-test.conllu")
    path = tmp_path_factory.mktemp("ewt") / "head.conllu"
    with path.open("w", encoding="utf-8", newline="") as out:
        write_conllu(out, [s for _, s in zip(range(N_SENTENCES), sentences, strict=False)])
    return path


def without_torch(script: str, *arguments: str) -> dict:
    """Run ``script`` where torch cannot be imported; its JSON lines merged, and stderr."""
    done = subprocess.run(
        [sys.executable, "-c", script, *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = {"stderr": done.stderr}
    for line in done.stdout.splitlines():
        found |= json.loads(line)
    return found


def predict_without_torch(*arguments: str) -> dict:
    return without_torch(WITHOUT_TORCH, "predict.py", json.dumps(arguments))


@pytest.mark.parametrize(("fmt", "columns"), [("conllu", None), ("conllu", "all"), ("text", "all")])
def test_onnx_runtime_writes_the_torch_paths_bytes_without_torch(
    exported: Path, ewt_head: Path, tmp_path: Path, fmt: str, columns: str | None
) -> None:
    source = ewt_head
    if fmt == "text":
        source = tmp_path / "head.txt"
        lines = (" ".join(s.forms) for s in read_conllu(ewt_head))
        source.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    wanted = tmp_path / "torch.conllu"
    options = PredictOptions(columns=() if columns is None else (columns,))
    predict(SHIPPED, source, wanted, input_format=fmt, threads=1, options=options)
    got = tmp_path / "onnx.conllu"
    settings = [f"onnx={exported}", f"input={source}", f"output={got}", f"format={fmt}"]
    if columns is not None:
        settings.append(f"columns={columns}")
    found = predict_without_torch("runtime=onnx", "threads=1", *settings)
    assert found["torch"] == []
    assert found["numba"] == []  # the decoders compiled ahead of time (decoding.aot)
    assert "exit" not in found, found["stderr"]
    # The same bytes although each runtime batches by its own default (5000 and 500 words).
    assert got.read_bytes() == wanted.read_bytes()


def test_the_shipped_ensemble_writes_the_torch_paths_bytes_without_torch(
    exported_ensemble: Path, ewt_head: Path, tmp_path: Path
) -> None:
    wanted = tmp_path / "torch.conllu"
    options = PredictOptions(columns=("all",))
    predict(ENSEMBLE, ewt_head, wanted, input_format="conllu", threads=1, options=options)
    got = tmp_path / "onnx.conllu"
    settings = [f"onnx={exported_ensemble}", f"input={ewt_head}", f"output={got}", "columns=all"]
    found = predict_without_torch("runtime=onnx", "threads=1", *settings)
    assert found["torch"] == []
    assert "exit" not in found, found["stderr"]
    assert got.read_bytes() == wanted.read_bytes()


@pytest.fixture(scope="module")
def exported_turkish(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped Turkish ensemble exported: its lexicon holds a lemma generator."""
    return export_model("tr_imst", tmp_path_factory)


def test_the_lemma_generator_writes_the_torch_paths_bytes_without_torch(
    exported_turkish: Path, ud_root: Path, tmp_path: Path
) -> None:
    # The generator and the FEATS and UPOS guessers run in numpy in both runtimes, from the
    # lexicon in export.json.
    manifest = json.loads((exported_turkish / "export.json").read_text(encoding="utf-8"))
    lexicon = set(manifest["vocabs"]["lemma_lexicon"])
    assert {"generator", "feats_guesser", "upos_guesser"} <= lexicon
    test = ud_root / "UD_Turkish-IMST" / "tr_imst-ud-test.conllu"
    if not test.is_file():
        pytest.skip(f"{test} not found")
    head = tmp_path / "head.conllu"
    with head.open("w", encoding="utf-8", newline="") as out:
        write_conllu(out, [s for _, s in zip(range(200), read_conllu(test), strict=False)])
    wanted = tmp_path / "torch.conllu"
    options = PredictOptions(columns=("all",), overwrite_columns=True)
    turkish = ROOT / "models" / "tr_imst" / "parser.pt"
    predict(turkish, head, wanted, input_format="conllu", threads=1, options=options)
    got = tmp_path / "onnx.conllu"
    settings = [f"onnx={exported_turkish}", f"input={head}", f"output={got}", "columns=all"]
    found = predict_without_torch("runtime=onnx", "threads=1", "overwrite_columns=true", *settings)
    assert found["torch"] == []
    assert "exit" not in found, found["stderr"]
    assert got.read_bytes() == wanted.read_bytes()


def test_the_python_entry_parses_as_the_torch_api_without_torch(exported: Path) -> None:
    words = [["The", "cat", "sat", "on", "the", "mat", "."], ["Dogs", "barked", "loudly", "!"]]
    found = without_torch(API_WITHOUT_TORCH, str(exported), json.dumps(words))
    assert found["torch"] == []
    parser = Parser.load(SHIPPED)
    assert found["conllu"] == parser.to_conllu(parser.parse(words, columns=["all"]))


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (["probabilities=true"], "probabilities=true: runtime=onnx supports"),
        (["decoder=eisner"], "decoder=eisner: runtime=onnx supports"),
        (["kbest=2"], "kbest=2: runtime=onnx supports"),
        (["decoder=mst_multiroot"], "decoder.root_constraint=false: runtime=onnx supports"),
        (["int8=true", "eval=true"], "eval=true, int8=true with runtime=onnx: runtime=onnx"),
        ([f"checkpoint={SHIPPED}"], "checkpoint= with runtime=onnx: runtime=onnx supports"),
        (["segmenter=seg.pt"], "segmenter= with runtime=onnx: runtime=onnx supports"),
    ],
)
def test_what_the_onnx_runtime_does_not_answer_is_one_line_and_status_2(
    exported: Path, ewt_head: Path, settings: list[str], named: str
) -> None:
    given = ("runtime=onnx", f"onnx={exported}", f"input={ewt_head}", *settings)
    found = predict_without_torch(*given)
    assert found["exit"] == 2
    assert found["torch"] == []
    lines = found["stderr"].strip().splitlines()
    assert len(lines) == 1
    assert named in lines[0]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        (["runtime=onnx"], "runtime=onnx needs onnx=FOLDER"),
        (["runtime=jax"], "runtime=jax; expected one of torch, onnx"),
        ([f"onnx={ROOT}"], "onnx= is read with runtime=onnx"),
        (["runtime=onnx", f"onnx={ROOT}"], "no export.json there"),
    ],
)
def test_the_runtime_settings_are_checked_before_anything_loads(
    settings: list[str], named: str, tmp_path: Path
) -> None:
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    source = tmp_path / "in.txt"
    source.write_text("The cat sat .\n", encoding="utf-8")
    found = predict_without_torch(f"input={source}", *settings)
    assert found["exit"] == 2
    assert found["torch"] == []
    assert named in found["stderr"]


@pytest.mark.parametrize("script", ["predict.py", "serve.py"])
def test_runtime_onnx_without_onnxruntime_is_one_line_and_status_2(
    script: str, tmp_path: Path
) -> None:
    # It was Hydra's traceback of the ModuleNotFoundError, and status 1.
    source = tmp_path / "in.txt"
    source.write_text("The cat sat .\n", encoding="utf-8")
    arguments = {
        "predict.py": ["runtime=onnx", f"onnx={tmp_path}", f"input={source}", "format=text"],
        "serve.py": ["models=en_ewt_small", "runtime=onnx", f"onnx_dir={tmp_path}", "port=0"],
    }[script]
    found = without_torch(WITHOUT_TORCH, script, json.dumps(arguments), "onnxruntime")
    assert found["exit"] == 2
    assert (
        found["stderr"]
        == "error: runtime=onnx needs onnxruntime: pip install 'rootparse[export]'\n"
    )


def test_an_export_of_another_family_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    from biaffine.onnxrun import OnnxParser

    (tmp_path / "export.json").write_text(json.dumps({"format": FORMAT, "family": "segmenter"}))
    with pytest.raises(ValueError, match="an export of a segmenter parser; runtime=onnx"):
        OnnxParser.load(tmp_path)


def test_the_runtime_reads_the_format_the_export_writes() -> None:
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    from biaffine.onnxrun import FORMAT as READ

    assert READ == FORMAT


@pytest.mark.parametrize("earlier", [1, 2, 3, 4])
def test_an_export_of_an_earlier_format_is_refused_with_what_to_do(
    tmp_path: Path, earlier: int
) -> None:
    """Format 1 held the character model inside scores.onnx, format 2 a transition parser's
    per-step scorer in a graph, format 3 no arc_labels.onnx, format 4 arc_labels.onnx where
    head_labels.onnx is read and the taggers' own level in scores.onnx: their folders must be
    exported again."""
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    from biaffine.onnxrun import OnnxParser

    (tmp_path / "export.json").write_text(json.dumps({"format": earlier, "family": "graph"}))
    expected = rf"export format {earlier}, expected {FORMAT}: export the checkpoint"
    with pytest.raises(ValueError, match=expected):
        OnnxParser.load(tmp_path)


def test_the_onnx_segmenter_classifies_every_character_as_torchs(
    exported: Path, ewt_dir: Path
) -> None:
    from biaffine.onnxrun import OnnxParser
    from biaffine.segmenting import Segmenter

    text = rawtext.corpus_text(ewt_dir / "en_ewt-ud-test.conllu")
    torchs = Segmenter.load(ROOT / "models" / "en_ewt_small" / "segmenter.pt").classes(text)
    onnx = OnnxParser.load(exported, threads=1).segmenter
    np.testing.assert_array_equal(onnx.classes(text), torchs)


@pytest.mark.parametrize("model", ["en_ewt_small", "en_ewt_glove"])
def test_raw_text_is_segmented_and_parsed_as_torchs_without_torch(
    model: str, request: pytest.FixtureRequest, ewt_dir: Path, tmp_path: Path
) -> None:
    # en_ewt_glove: the runtime looks each word's row of the GloVe vectors up from the word
    # list of the checkpoint's config and feeds it to scores.onnx (vector_rows).
    exported = request.getfixturevalue("exported" if model == "en_ewt_small" else "exported_glove")
    source = tmp_path / "ewt.txt"
    text = rawtext.corpus_text(ewt_dir / "en_ewt-ud-test.conllu")
    source.write_text(text[:RAW_CHARACTERS], encoding="utf-8")
    wanted, got = tmp_path / "torch.conllu", tmp_path / "onnx.conllu"
    common = [f"input={source}", "format=raw", "threads=1"]
    run_script(["predict.py", f"model={model}", *common, f"output={wanted}"], ROOT)
    found = predict_without_torch("runtime=onnx", f"onnx={exported}", *common, f"output={got}")
    assert found["torch"] == []
    assert "exit" not in found, found["stderr"]
    assert got.read_bytes() == wanted.read_bytes()
    assert "# newpar" in got.read_text(encoding="utf-8")  # whole documents, as UD rebuilds them


def test_int8_weights_keep_the_attachment_scores(
    exported: Path, ewt_head: Path, tmp_path: Path
) -> None:
    """``int8=true``: a quarter of ``scores.onnx``, and LAS within half a point on 500 sentences
    (on the whole of EWT test: 86.33 against 86.32, docs/onnx.md)."""
    from biaffine.export import run
    from biaffine.onnxrun import predict_file

    quantized = tmp_path / "int8"
    manifest = run({"model": "en_ewt_small", "output": str(quantized), "int8": "true"})
    assert manifest["int8"] == ["chars", "scores", "labels", "head_labels"]
    size = (quantized / "scores.onnx").stat().st_size
    assert size < 0.3 * (exported / "scores.onnx").stat().st_size
    gold = list(read_conllu(ewt_head))
    las = {}
    for name, folder in (("fp32", exported), ("int8", quantized)):
        out = tmp_path / f"{name}.conllu"
        predict_file(folder, ewt_head, out, threads=1)
        las[name] = score_corpus(gold, read_conllu(out)).las
    assert abs(las["int8"] - las["fp32"]) < 0.5, las


GOLDEN = ROOT / "tests" / "data" / "golden"
# Transition checkpoints trained on UD_Lithuanian-HSE (tests/data/golden/make.py), and searches.
TRANSITION_CASES = [
    ("arc_hybrid", ["columns=all"]),
    ("arc_hybrid", ["search=beam", "search.beam_size=4"]),
    ("swap", ["search=beam", "search.beam_size=8"]),
    ("combined", ["search=beam", "search.beam_size=4", "search.graph_weight=0.5"]),
]


@pytest.fixture(scope="module")
def exported_transitions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The golden transition checkpoints exported."""
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    pytest.importorskip("onnx", reason=NO_ONNX)
    from biaffine.export import run

    folder = tmp_path_factory.mktemp("transitions")
    names = sorted({name for name, _ in TRANSITION_CASES})
    for name in names:
        run({"checkpoint": str(GOLDEN / f"{name}.pt"), "output": str(folder / name)})
    return {name: folder / name for name in names}


@pytest.mark.parametrize(("name", "settings"), TRANSITION_CASES)
def test_transition_parsers_search_in_onnx_runtime_as_in_torch(
    exported_transitions: dict[str, Path],
    ud_root: Path,
    tmp_path: Path,
    name: str,
    settings: list[str],
) -> None:
    """Greedy and beam search, a combined model's graph weight, pseudo-projective labels."""
    source = ud_root / "UD_Lithuanian-HSE" / "lt_hse-ud-test.conllu"
    if not source.is_file():
        pytest.skip(f"{source} is absent")
    wanted, got = tmp_path / "torch.conllu", tmp_path / "onnx.conllu"
    common = [f"input={source}", "threads=1", *settings]
    checkpoint = f"checkpoint={GOLDEN / f'{name}.pt'}"
    run_script(["predict.py", checkpoint, *common, f"output={wanted}"], ROOT)
    onnx = f"onnx={exported_transitions[name]}"
    found = predict_without_torch("runtime=onnx", onnx, *common, f"output={got}")
    assert found["torch"] == []
    assert "exit" not in found, found["stderr"]
    assert got.read_bytes() == wanted.read_bytes()


@pytest.mark.parametrize(
    ("name", "settings", "named"),
    [
        ("arc_hybrid", ["search=graph"], "search=graph: runtime=onnx supports"),
        # Parsed by the greedy search, decoder= ignored without a word.
        ("arc_hybrid", ["decoder=eisner"], "decoder=eisner: runtime=onnx supports"),
        ("arc_hybrid", ["decoder=mst_multiroot"], "root_constraint=false: runtime=onnx"),
        ("arc_hybrid", ["search=beam", "search.graph_weight=1.0"], "needs a combined model"),
        ("arc_hybrid", ["probabilities=true"], "probabilities=true: runtime=onnx supports"),
        ("arc_hybrid", ["format=raw"], "format=raw needs a segmenter in the export"),
    ],
)
def test_what_a_transition_export_does_not_answer_is_one_line_and_status_2(
    exported_transitions: dict[str, Path], tmp_path: Path, name: str, settings: list, named: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("The cat sat .\n", encoding="utf-8")
    onnx = f"onnx={exported_transitions[name]}"
    given = [f"input={source}", *settings]  # refused before the input is read
    found = predict_without_torch("runtime=onnx", onnx, *given)
    assert found["exit"] == 2
    assert found["torch"] == []
    lines = found["stderr"].strip().splitlines()
    assert len(lines) == 1
    assert named in lines[0]


def _damaged_export(folder: Path, damage: str) -> Path:
    """A fake export folder (no real graphs needed) with one thing broken; the file it names."""
    graph = {"inputs": ["x"], "outputs": ["y"]}
    names = ("chars", "scores", "tags", "labels", "head_labels")
    graphs = {name: {"file": f"{name}.onnx", **graph} for name in names}
    manifest = {"format": FORMAT, "family": "graph", "graphs": graphs}
    manifest |= {"vocabs": {}, "model_config": {}}
    for name in ("chars", "scores"):
        (folder / f"{name}.onnx").write_bytes(b"\x08\x07\x12\x04onnx")  # a truncated protobuf
    broken = folder / "export.json"
    if damage == "not json":
        broken.write_text("{format: 4")
    elif damage == "not utf-8":
        broken.write_bytes(b'{"format": %d, "family": "\xff"}' % FORMAT)
    elif damage == "missing key":
        del manifest["vocabs"]
    elif damage == "missing graph":
        broken = folder / "chars.onnx"
        broken.unlink()
    elif damage == "truncated graph":
        broken = folder / "chars.onnx"
    if damage not in ("not json", "not utf-8"):
        (folder / "export.json").write_text(json.dumps(manifest))
    return broken


DAMAGES = ["not json", "not utf-8", "missing key", "missing graph", "truncated graph"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_export_is_a_value_error_naming_the_file(tmp_path: Path, damage: str) -> None:
    # onnxruntime's own exceptions, a KeyError or a JSON error naming no file, each a traceback.
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    from biaffine.onnxrun import OnnxParser

    broken = _damaged_export(tmp_path, damage)
    with pytest.raises(ValueError, match=rf"^{re.escape(str(broken))}: .*export the checkpoint"):
        OnnxParser.load(tmp_path)


@pytest.mark.parametrize("damage", ["missing key", "truncated graph"])
def test_predict_reports_a_damaged_export_in_one_line_and_status_2(
    tmp_path: Path, damage: str
) -> None:
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    folder = tmp_path / "export"
    folder.mkdir()
    broken = _damaged_export(folder, damage)
    source = tmp_path / "in.txt"
    source.write_text("The cat sat .\n", encoding="utf-8")
    found = predict_without_torch(
        "runtime=onnx", f"onnx={folder}", f"input={source}", "format=text"
    )
    assert found["exit"] == 2
    errors = [line for line in found["stderr"].splitlines() if not line.startswith("[")]
    assert len(errors) == 1  # the rest is the log's (INFO: the decoders, not compiled here)
    assert errors[0].startswith(f"error: {broken}: ")
