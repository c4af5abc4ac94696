"""``runtime=onnx`` on odd inputs and odd arguments: the torch path's bytes, or its refusals.

One small export made once (the golden graph parser of ``tests/data/golden``, with the shipped
EWT segmenter for raw text), compared with the torch path on the same input in this process.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from biaffine.api import Parser
from biaffine.data.conllu import ConlluError, Sentence, write_conllu
from biaffine.predict_options import PredictOptions
from biaffine.predicting import predict

ROOT = Path(__file__).parents[2]
GRAPH = ROOT / "tests" / "data" / "golden" / "graph.pt"
SEGMENTER = ROOT / "models" / "en_ewt_small" / "segmenter.pt"
NO_RUNTIME = "onnxruntime is not installed (the export extra: pip install 'rootparse[export]')"
NO_ONNX = "onnx is not installed, which torch writes ONNX files with (the export extra)"

WORD = "1\t{form}\t{lemma}\t{upos}\t_\t_\t{head}\t{rel}\t_\t_"
ODD_CONLLU = "\n".join(
    [
        "# sent_id = mwt-and-empty-node",
        "1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_",
        "1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_",
        "2\tel\tel\tDET\t_\t_\t3\tdet\t_\t_",
        "3\tcasa\tcasa\tNOUN\t_\t_\t0\troot\t_\t_",
        "3.1\tvive\tvivir\tVERB\t_\t_\t_\t_\t3:conj\t_",
        "4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_",
        "",
        "# sent_id = one-word",
        WORD.format(form="Labas", lemma="_", upos="_", head="_", rel="_"),
        "",
        "# sent_id = given-columns",
        WORD.format(form="Namas", lemma="NAMAS", upos="X", head="0", rel="root"),
        "2\tgražus\t_\t_\t_\t_\t1\tamod\t_\t_",
        "",
        "# sent_id = long",
        *(f"{i}\tžodis{i % 17}\t_\t_\t_\t_\t_\t_\t_\t_" for i in range(1, 321)),
        "",
        "",
    ]
)
RAW = (
    "Vienas.\r\nDu\ttrys\u00a0keturi.\r\n\r\nZero\u200bwidth 😀 👍🏽!\n\n"
    "مرحبا بالعالم. שלום עולם.\n \t \n"
)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden graph parser exported with the shipped EWT segmenter."""
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    pytest.importorskip("onnx", reason=NO_ONNX)
    from biaffine.export import run

    folder = tmp_path_factory.mktemp("onnx_edges") / "graph"
    run({"checkpoint": str(GRAPH), "segmenter": str(SEGMENTER), "output": str(folder)})
    return folder


@pytest.fixture(scope="module")
def onnx_parser(exported: Path):
    from biaffine.onnxrun import OnnxParser

    return OnnxParser.load(exported, threads=1)


def conllu_of(trees: list) -> str:
    out = io.StringIO()
    write_conllu(out, [tree.sentence for tree in trees])
    return out.getvalue()


def both_paths(exported: Path, tmp_path: Path, text: str, fmt: str, options: PredictOptions):
    """The bytes ``predict`` and ``predict_file`` write for ``text``, torch's first."""
    from biaffine.onnxrun import predict_file

    source = tmp_path / "in.txt"
    source.write_bytes(text.encode("utf-8"))
    segmenter = SEGMENTER if fmt == "raw" else None
    how = {"input_format": fmt, "threads": 1, "options": options}
    predict(GRAPH, source, tmp_path / "torch", segmenter=segmenter, **how)
    predict_file(exported, source, tmp_path / "onnx", **how)
    return (tmp_path / "torch").read_bytes(), (tmp_path / "onnx").read_bytes()


@pytest.mark.parametrize(
    "options",
    [
        PredictOptions(),
        PredictOptions(columns=("all",)),
        PredictOptions(columns=("all",), overwrite_columns=True),
    ],
    ids=["trees", "columns-kept", "columns-overwritten"],
)
def test_odd_conllu_parses_to_the_torch_paths_bytes(
    exported: Path, tmp_path: Path, options: PredictOptions
) -> None:
    torch_bytes, onnx_bytes = both_paths(exported, tmp_path, ODD_CONLLU, "conllu", options)
    assert onnx_bytes == torch_bytes
    assert b"\n1-2\tdel\t" in onnx_bytes
    assert b"\n3.1\tvive\t" in onnx_bytes


def test_odd_raw_text_parses_to_the_torch_paths_bytes(exported: Path, tmp_path: Path) -> None:
    torch_bytes, onnx_bytes = both_paths(exported, tmp_path, RAW, "raw", PredictOptions())
    assert onnx_bytes == torch_bytes
    assert "😀".encode() in onnx_bytes


@pytest.mark.parametrize("threads", [0, -1, True, 1.5])
def test_onnx_threads_below_one_are_refused_as_torchs(exported: Path, threads: object) -> None:
    from biaffine.onnxrun import OnnxParser, predict_file

    with pytest.raises(ValueError, match=rf"^threads={threads!r}: give a positive number"):
        OnnxParser.load(exported, threads=threads)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=rf"^threads={threads!r}: "):
        predict_file(exported, ROOT / "README.md", threads=threads)  # type: ignore[arg-type]


def test_predict_py_refuses_threads_0_with_runtime_onnx_in_one_line(
    exported: Path, tmp_path: Path
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("Labas\n")
    arguments = ["runtime=onnx", f"onnx={exported}", f"input={source}", "format=text", "threads=0"]
    done = subprocess.run(
        [sys.executable, "predict.py", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: threads=0: give a positive number of CPU threads, or null for onnxruntime's default"
    ]


@pytest.mark.parametrize(
    ("inputs", "error", "message"),
    [
        ("Labas", ValueError, "a string is read as CoNLL-U text"),
        (["Labas"], ValueError, "^input 0 is a string: pass a list of words per sentence$"),
        ({"Labas": 1}, TypeError, "^inputs is a dict: pass a list of sentences"),
        ([None], TypeError, "^input 0 is a NoneType: pass a list of words$"),
        ([["Labas"], 1], TypeError, "^input 1 is a int: pass a list of words$"),
        ([["Labas"], []], ConlluError, "^<input>:2: sentence has no words$"),
    ],
)
def test_bad_inputs_are_refused_as_the_torch_api_refuses_them(
    onnx_parser, inputs: object, error: type[Exception], message: str
) -> None:
    parser = Parser.load(GRAPH, threads=1)
    with pytest.raises(error, match=message):
        parser.parse(inputs)
    with pytest.raises(error, match=message):
        onnx_parser.parse(inputs)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"joint_labels": "no"}, r"^joint_labels='no' must be True or False$"),
        ({"overwrite": "yes", "columns": ["upos"]}, r"^overwrite='yes' must be True or False$"),
        ({"columns": "upos"}, r"^columns='upos' is a str: pass a list, e\.g\. \['upos'\]$"),
    ],
)
def test_bad_options_are_refused_as_the_torch_api_refuses_them(
    onnx_parser, options: dict, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Parser.load(GRAPH, threads=1).parse([["Labas"]], **options)
    with pytest.raises(TypeError, match=message):
        onnx_parser.parse([["Labas"]], **options)


def test_columns_none_asks_for_no_column_as_the_torch_api(onnx_parser) -> None:
    words = [["Namas", "gražus"]]
    expected = Parser.load(GRAPH, threads=1).parse(words, columns=None)
    found = onnx_parser.parse(words, columns=None)
    assert [t.sentence.upos for t in found] == [t.sentence.upos for t in expected] == [["_"] * 2]
    assert [t.heads for t in found] == [t.heads for t in expected]


def test_an_output_inside_a_file_is_refused_before_any_work(tmp_path: Path) -> None:
    pytest.importorskip("onnx", reason=NO_ONNX)
    from biaffine.export import run

    (tmp_path / "file").write_text("mine")
    with pytest.raises(ValueError, match=r"^output=.*file/export: .*file is not a folder"):
        run({"checkpoint": "no/such/checkpoint.pt", "output": str(tmp_path / "file" / "export")})
    assert (tmp_path / "file").read_text() == "mine"


def test_an_output_that_is_a_file_of_the_export_is_refused(exported: Path, tmp_path: Path) -> None:
    # output=FOLDER/export.json wrote the parse over the manifest, and exited 0.
    from biaffine.onnxrun import predict_file

    manifest = exported / "export.json"
    before = manifest.read_bytes()
    source = tmp_path / "in.conllu"
    source.write_text(ODD_CONLLU, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^output {manifest} is the input file {manifest}"):
        predict_file(exported, source, manifest)
    assert manifest.read_bytes() == before


def _set(manifest: dict, path: str, value: object) -> dict:
    *parents, last = path.split(".")
    node = manifest
    for key in parents:
        node = node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return manifest


DAMAGED = {  # what a manifest edit or a file copy does -> the file named, the problem
    "inputs not a list": (
        lambda f, m: _set(m, "graphs.scores.inputs", 5),
        "export.json",
        "damaged (TypeError",
    ),
    "vocabularies empty": (lambda f, m: _set(m, "vocabs", {}), "export.json", "damaged"),
    "segmenter without its graph": (
        lambda f, m: _set(m, "graphs.segmenter", None),
        "export.json",
        "no graphs.segmenter",
    ),
    # Each was a KeyError traceback, or (tags) trees without a column, asked for or not.
    "tags without their graph": (
        lambda f, m: _set(m, "graphs.tags", None),
        "export.json",
        "no graphs.tags in the manifest",
    ),
    "labels without their graph": (
        lambda f, m: _set(m, "graphs.labels", None),
        "export.json",
        "no graphs.labels in the manifest",
    ),
    "head labels without their graph": (
        lambda f, m: _set(m, "graphs.head_labels", None),
        "export.json",
        "no graphs.head_labels in the manifest",
    ),
    "a loss weight not a number": (
        lambda f, m: _set(m, "model_config.tag_loss_weight", "x"),
        "export.json",
        "damaged model_config (ValueError",
    ),
    "segmenter not an object": (lambda f, m: _set(m, "segmenter", "x"), "export.json", "damaged"),
    "graph outside the folder": (
        lambda f, m: _set(m, "graphs.scores.file", "../scores.onnx"),
        "export.json",
        "graphs.scores.file='../scores.onnx' is not a graph file's name in its folder",
    ),
    "nested too deeply": (lambda f, m: "[" * 5000 + "]" * 5000, "export.json", "too deeply"),
    "graph copied over another": (
        lambda f, m: _copied(f / "labels.onnx", f / "scores.onnx", m),
        "scores.onnx",
        "not the graph export.json was written with (its SHA-256 differs)",
    ),
    # An export.json copied from another model's export parsed into that model's tags and
    # trees without a word: its digests are not these graphs'.
    "another export's manifest": (
        lambda f, m: _set(m, "graphs.tags.sha256", "0" * 64),
        "tags.onnx",
        "not the graph export.json was written with",
    ),
    # Exports written before the digests: the graphs' names are still checked, both sides.
    "graph copied over another, no digests": (
        lambda f, m: _copied(f / "labels.onnx", f / "scores.onnx", _without_digests(m)),
        "scores.onnx",
        "not the graph the manifest names (inputs",
    ),
    "outputs renamed, no digests": (
        lambda f, m: _set(_without_digests(m), "graphs.tags.outputs", ["upos_scores"]),
        "tags.onnx",
        "(outputs ['upos_scores', 'xpos_scores', 'feats_scores'], expected ['upos_scores'])",
    ),
}


def _without_digests(manifest: dict) -> dict:
    for graph in manifest["graphs"].values():
        del graph["sha256"]
    return manifest


def _copied(source: Path, target: Path, manifest: dict) -> dict:
    target.write_bytes(source.read_bytes())
    return manifest


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_a_damaged_manifest_or_graph_is_one_error_naming_the_file(
    exported: Path, tmp_path: Path, damage: str
) -> None:
    # Each was a KeyError, TypeError, AttributeError or RecursionError traceback (exit 1),
    # a graph read from outside the folder, or onnxruntime's error naming no file.
    import json
    import shutil

    from biaffine.onnxrun import OnnxParser

    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    edit, named, problem = DAMAGED[damage]
    manifest = edit(folder, json.loads((folder / "export.json").read_text(encoding="utf-8")))
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (folder / "export.json").write_text(text, encoding="utf-8")
    expected = rf"^{re.escape(str(folder / named))}: .*{re.escape(problem)}"
    with pytest.raises(ValueError, match=expected):
        OnnxParser.load(folder)


def test_conllu_text_parses_as_the_torch_api_parses_it(onnx_parser) -> None:
    # The torch API reads one string as CoNLL-U; this one read it as a sentence per character.
    expected = Parser.load(GRAPH, threads=1).parse(ODD_CONLLU, columns=["all"])
    found = onnx_parser.parse(ODD_CONLLU, columns=["all"])
    assert conllu_of(found) == conllu_of(expected)
    assert [t.sentence.forms[:2] for t in found[:2]] == [["de", "el"], ["Labas"]]


def test_raw_text_through_a_tree_only_export_gives_the_torch_paths_trees(
    graph_checkpoint: Path, tmp_path: Path
) -> None:
    # Raw text asked the export for every column, and one without taggers refused columns=all.
    pytest.importorskip("onnxruntime", reason=NO_RUNTIME)
    pytest.importorskip("onnx", reason=NO_ONNX)
    from biaffine.export import run
    from biaffine.onnxrun import predict_file

    folder = tmp_path / "trees"
    run({"checkpoint": str(graph_checkpoint), "segmenter": str(SEGMENTER), "output": str(folder)})
    source = tmp_path / "in.txt"
    source.write_text("The cat sat. It slept.\n", encoding="utf-8")
    how = {"input_format": "raw", "threads": 1}
    predict(graph_checkpoint, source, tmp_path / "torch", segmenter=SEGMENTER, **how)
    predict_file(folder, source, tmp_path / "onnx", **how)
    assert (tmp_path / "onnx").read_bytes() == (tmp_path / "torch").read_bytes()


def test_an_export_without_digests_still_loads(exported: Path, tmp_path: Path) -> None:
    import json
    import shutil

    from biaffine.onnxrun import OnnxParser

    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    manifest = json.loads((folder / "export.json").read_text(encoding="utf-8"))
    (folder / "export.json").write_text(json.dumps(_without_digests(manifest)), encoding="utf-8")
    OnnxParser.load(folder)


def test_an_export_into_the_folder_it_runs_in_is_refused(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # output=. was exported in full, then failed to rename ".", leaving ..old.XXXX inside.
    from biaffine.export import run

    before = sorted(path.name for path in exported.iterdir())
    monkeypatch.chdir(exported)
    with pytest.raises(ValueError, match=r"^output=\.: it holds this command's working folder"):
        run({"checkpoint": str(GRAPH), "output": "."})
    assert sorted(path.name for path in exported.iterdir()) == before


def test_a_graph_weight_is_refused_by_its_own_name(onnx_parser) -> None:
    # Refused as "search=greedy", which the message itself says is supported.
    from biaffine.inference import Refused

    with pytest.raises(Refused, match=r"^search\.graph_weight=0\.5: runtime=onnx supports"):
        onnx_parser.parse([["The", "cat"]], graph_weight=0.5)


def test_a_server_that_gives_up_a_request_stops_the_export_between_batches(onnx_parser) -> None:
    # serve.py runtime=onnx parsed on after the client's 503, holding every request behind it.
    from biaffine.inference.request import Abandoned, Request

    sentences = [Sentence.from_forms(["The", "cat", "sat", str(k), "."]) for k in range(20)]
    asked = []

    def abandoned() -> bool:
        asked.append(True)
        return len(asked) > 2

    with pytest.raises(Abandoned):
        onnx_parser.results(sentences, Request(), max_tokens=12, abandoned=abandoned)
    assert len(asked) == 3  # two batches of two sentences parsed, of ten
    assert len(onnx_parser.results(sentences, Request(), max_tokens=12)) == 20


def test_an_export_names_the_checkpoints_it_was_made_from(exported: Path, tmp_path: Path) -> None:
    # serve.py runtime=onnx served another model's export under a model's name and licence.
    import json
    import shutil

    from biaffine.onnxrun import check_exported_from

    check_exported_from(exported, GRAPH, SEGMENTER, "golden")
    other = ROOT / "tests" / "data" / "golden" / "arc_hybrid.pt"
    with pytest.raises(ValueError, match=r"not an export of model golden's parser: export it"):
        check_exported_from(exported, other, SEGMENTER, "golden")
    with pytest.raises(ValueError, match=r"not an export of model golden's segmenter"):
        check_exported_from(exported, GRAPH, None, "golden")
    old = tmp_path / "old"
    shutil.copytree(exported, old)
    manifest = json.loads((old / "export.json").read_text())
    del manifest["source"]  # as exports were made before they recorded it
    (old / "export.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match=r"records no checkpoint to check: export it again"):
        check_exported_from(old, GRAPH, SEGMENTER, "golden")
    # The server's setting named, not predict.py's onnx= (serve.py onnx_dir=DIR with no DIR/NAME)
    none = f"onnx_dir={tmp_path}: no export of model golden .*: write it with python -m"
    with pytest.raises(ValueError, match=none):
        check_exported_from(tmp_path / "golden", GRAPH, SEGMENTER, "golden")


def test_a_graph_that_refuses_its_inputs_names_its_file(exported: Path) -> None:
    # A graph that did not fit the others (copied over another's in an export without digests)
    # failed in onnxruntime's traceback: "InvalidArgument ... idx=4359 must be within ...".
    import json

    import numpy as np

    from biaffine.onnxrun import _session

    graph = json.loads((exported / "export.json").read_text())["graphs"]["chars"]
    loaded = _session(exported, graph, 1)
    with pytest.raises(ValueError, match=r"chars\.onnx: the export's graphs do not fit together"):
        loaded.run(None, {"chars": np.zeros((2, 3), dtype=np.float32)})


@pytest.mark.parametrize(("key", "value"), [("window", "x"), ("window", 0), ("context", -1)])
def test_a_damaged_segmenter_entry_is_refused_naming_the_manifest(
    exported: Path, tmp_path: Path, key: str, value: object
) -> None:
    # window="x" was a TypeError traceback from inside the first raw text's windows.
    import json
    import shutil

    from biaffine.onnxrun import OnnxParser

    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    manifest = json.loads((folder / "export.json").read_text(encoding="utf-8"))
    manifest["segmenter"][key] = value
    (folder / "export.json").write_text(json.dumps(_without_digests(manifest)), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"export\.json: damaged .*segmenter\.{key} is"):
        OnnxParser.load(folder)
