"""benchmarks/peers.py: its order, table and targets by hand, and runs on the tiny treebank.

The runs: the project's parser alone (the peers skipped, as on a machine without the bench
extra), and each peer on models trained here in seconds (skipped with the reason without
spaCy or ufal.udpipe). Nothing here checks a timing.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import peer_children, peer_models, peers
from biaffine.data.conllu import read_conllu

ROOT = Path(__file__).parent.parent
TINY = ROOT / "tests" / "data" / "tiny.conllu"


def row(key: str, rate: float, las: float | None, *, wall: float = 2.0, memory: float = 150.0):
    label = peers.BY_KEY[key].label
    return peers.Summary(key, label, "1", rate, wall, wall - 0.5, wall + 0.5, 1.5, memory, las)


def test_runs_interleave_every_system_in_turn_round_after_round() -> None:
    assert peers.interleaved(["a", "b", "c"], 2) == [
        (0, "a"), (0, "b"), (0, "c"), (1, "a"), (1, "b"), (1, "c"),
    ]  # fmt: skip
    assert peers.interleaved(["a"], 0) == []


def test_summary_takes_medians_the_range_and_the_largest_memory() -> None:
    commands = [
        {"wall": 3.0, "cpu": 2.0, "memory": 100.0},
        {"wall": 1.0, "cpu": 4.0, "memory": 300.0},
        {"wall": 2.0, "cpu": 3.0, "memory": 200.0},
    ]
    summary = peers.summarize(peers.BY_KEY["udpipe"], [10.0, 30.0, 20.0], commands, 80.0)
    assert (summary.rate, summary.wall, summary.wall_low, summary.wall_high) == (20, 2, 1, 3)
    assert (summary.cpu, summary.memory, summary.las) == (3.0, 300.0, 80.0)


def test_table_divides_by_udpipe_and_marks_what_is_missing() -> None:
    lines = peers.table([row("fp32", 1500.0, 87.456), row("udpipe", 1000.0, None)]).splitlines()
    assert lines[0].startswith("| parser | threads | parse only, sentences/s (median) |")
    assert lines[1] == "|---|---|---:|---:|---:|---:|---:|---:|"
    assert (
        lines[2] == "| rootparse, fp32 | 1 | 1,500 | 1.50 | 2.00 (1.50-2.50) | 1.50 | 150 | 87.46 |"
    )
    assert lines[3].endswith("| 1,000 | 1.00 | 2.00 (1.50-2.50) | 1.50 | 150 | - |")
    alone = peers.table([row("fp32", 1500.0, 87.0)]).splitlines()
    assert "| 1,500 | - |" in alone[2]


def test_targets_take_the_fastest_precision_within_a_tenth_of_las() -> None:
    rows = [
        row("fp32", 900.0, 87.80),
        row("int8", 1400.0, 87.75),
        row("bf16", 2000.0, 87.60),  # faster, but 0.2 LAS off: not eligible
        row("onnx", 800.0, 87.80, wall=2.5, memory=210.0),
        row("udpipe", 1000.0, 60.0, wall=2.4),
    ]
    lines = peers.targets(rows)
    assert lines[0] == (
        "FAIL parse only, best precision within 0.1 LAS (rootparse, `int8=true`): "
        "1.40 x UDPipe 1 (target >= 1.5)"
    )
    assert lines[1] == "PASS parse only, fp32 (rootparse, fp32): 0.90 x UDPipe 1 (target >= 0.85)"
    assert lines[2].startswith("FAIL runtime=onnx command wall: 1.04 x UDPipe 1's")
    assert lines[3] == "FAIL runtime=onnx command peak memory: 210.00 MiB (target <= 200)"
    rows[2] = row("bf16", 2000.0, 87.70)
    assert peers.targets(rows)[0].startswith("PASS parse only, best precision within 0.1 LAS")
    # The int8 export: judged when its command is shorter and its LAS within 0.1 of fp32's.
    off = row("onnx_int8", 2400.0, 87.60, wall=2.0, memory=190.0)
    assert peers.targets([*rows, off])[0].startswith("PASS parse only, best precision within")
    assert "(rootparse, `bf16=true`)" in peers.targets([*rows, off])[0]
    assert peers.targets([*rows, off])[2].startswith("FAIL runtime=onnx command wall")
    near = row("onnx_int8", 2400.0, 87.75, wall=2.0, memory=190.0)
    assert "`int8=true` export): 2.40 x UDPipe 1" in peers.targets([*rows, near])[0]
    assert peers.targets([*rows, near])[2:] == [
        "PASS runtime=onnx (int8 export) command wall: 0.83 x UDPipe 1's (target <= 1.0)",
        "PASS runtime=onnx (int8 export) command peak memory: 190.00 MiB (target <= 200)",
    ]
    # float32 in either runtime: the faster of torch and the float32 export.
    slow = [row("fp32", 800.0, 87.80), *rows[1:3], row("onnx", 900.0, 87.80), rows[4]]
    assert peers.targets(slow)[1] == (
        "PASS parse only, fp32 (rootparse, `runtime=onnx`): 0.90 x UDPipe 1 (target >= 0.85)"
    )
    slow[3] = row("onnx", 900.0, 87.60)  # an export whose LAS moved is not the same model
    assert peers.targets(slow)[1].startswith("FAIL parse only, fp32 (rootparse, fp32): 0.80")
    # An unscored fp32 row (no LAS) is still judged, on its own rate.
    unscored = [row("fp32", 900.0, None), rows[4]]
    assert peers.targets(unscored)[1] == (
        "PASS parse only, fp32 (rootparse, fp32): 0.90 x UDPipe 1 (target >= 0.85)"
    )
    assert peers.targets(rows[:1]) == [
        "targets: not judged (UDPipe 1 or the fp32 parser did not run)"
    ]


def test_skip_reasons_name_the_cpu_flag_and_the_missing_models(tmp_path: Path) -> None:
    reasons = peers.skip_reasons(["avx2", "avx512f"], tmp_path, onnx_export=False)
    assert "avx512_bf16" in reasons["bf16"]
    assert ".[export]" in reasons["onnx"]
    for key in ("spacy", "udpipe"):  # not installed, or installed without a model here
        assert "bench" in reasons[key] or "benchmarks.peer_models" in reasons[key]
    assert set(peers.skip_reasons(["amx_bf16"], tmp_path, onnx_export=True)) <= {"spacy", "udpipe"}


def test_blanking_keeps_the_tokens_and_drops_tags_trees_and_empty_nodes() -> None:
    text = TINY.read_text(encoding="utf-8")
    assert "\n5.1\t" in text  # an empty node
    assert "\n2-3\t" in text  # a multi-word token
    original = list(read_conllu(TINY))
    for keep_tree in (False, True):
        blanked = peer_models.blank_columns(text, keep_tree=keep_tree)
        assert "\n5.1\t" not in blanked
        assert "\n2-3\tcan't\t" in blanked
        sentences = list(read_conllu(io.StringIO(blanked)))
        assert [s.forms for s in sentences] == [s.forms for s in original]
        for new, old in zip(sentences, original, strict=True):
            assert set(new.upos + new.lemmas + new.feats + new.xpos) == {"_"}
            assert new.heads == (old.heads if keep_tree else None)
            assert new.deprels == (old.deprels if keep_tree else ["_"] * len(old))
            assert [misc(line) for line in new.lines] == [
                misc(line) for line in old.lines if not is_empty_node(line)
            ]


def is_empty_node(line: str) -> bool:
    return "\t" in line and "." in line.split("\t")[0]


def misc(line: str) -> str:
    cells = line.rstrip("\n").split("\t")
    return cells[9] if len(cells) == 10 else line


def test_spacy_roots_go_on_root_each_one() -> None:
    # spaCy marks a root as its own head, labelled ROOT; it may find two in one sentence.
    tokens = [SimpleNamespace(i=i, dep_=dep) for i, dep in enumerate(["nsubj", "ROOT", "ROOT"])]
    for token, head in zip(tokens, [1, 1, 2], strict=True):
        token.head = tokens[head]
    assert peer_children.spacy_tree(tokens) == ([2, 0, 0], ["nsubj", "root", "root"])


@pytest.mark.slow
def test_ours_alone_on_the_tiny_treebank_with_the_peers_skipped(tmp_path: Path) -> None:
    report = tmp_path / "peers.json"
    argv = ["--input", str(TINY), "--peers", str(tmp_path), "--rounds", "2", "--threads", "1",
            "--systems", "fp32", "int8", "spacy", "udpipe", "--json", str(report)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.peers", *argv], cwd=ROOT, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    order = [line.split(":")[0] for line in done.stderr.splitlines() if line.startswith("round")]
    assert order == ["round 1 fp32", "round 1 int8", "round 2 fp32", "round 2 int8"]
    result = json.loads(report.read_text())
    assert set(result["skipped"]) == {"spacy", "udpipe"}
    assert [r["key"] for r in result["rows"]] == ["fp32", "int8"]
    assert all(r["rate"] > 0 and r["memory"] > 0 and r["cpu"] > 0 for r in result["rows"])
    # predict.py on the blanked input scores as predict.py on the gold file scores itself.
    fp32 = result["rows"][0]["las"]
    assert 0 < fp32 <= 100
    assert f"| {fp32:.2f} |" in done.stdout
    assert "- skipped spaCy 3.8 parser" in done.stdout
    assert result["targets"] == ["targets: not judged (UDPipe 1 or the fp32 parser did not run)"]


@pytest.fixture(scope="module")
def peer_folder(tmp_path_factory: pytest.TempPathFactory, ewt_dir: Path) -> Path:
    """Both peers trained in seconds on the first 60 sentences of EWT train.

    Not on the tiny treebank: spaCy's arc-eager oracle finds no gold transition for one of its
    sentences (E1031).
    """
    for module in ("spacy", "ufal.udpipe"):
        if not peers.importable(module):
            pytest.skip(f'{module} is not installed (pip install -e ".[bench]")')
    folder = tmp_path_factory.mktemp("peers")
    blocks = (ewt_dir / "en_ewt-ud-train.conllu").read_text(encoding="utf-8").split("\n\n")
    train = folder / "train.conllu"
    train.write_text("\n\n".join(blocks[:60]) + "\n\n", encoding="utf-8")
    peer_models.train_udpipe(train, train, folder / peer_models.UDPIPE_MODEL, iterations=1)
    peer_models.train_spacy(train, train, folder / peer_models.SPACY_MODEL, steps=2)
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("key", ["spacy", "udpipe"])
def test_each_peer_parses_the_blanked_words_into_trees(
    peer_folder: Path, key: str, tmp_path: Path
) -> None:
    source = tmp_path / "input.conllu"
    source.write_text(peer_models.blank_columns(TINY.read_text(encoding="utf-8")))
    setup = peers.Setup(
        TINY, tmp_path / "no-onnx", tmp_path / "no-onnx-int8", peer_folder, source, 1
    )
    dest = tmp_path / "out.conllu"
    environment = peers.child_environment(1)
    usage = peers.measure_command(peers.command_argv(key, setup, dest), environment)
    assert usage["memory"] > 0
    parsed, given = list(read_conllu(dest)), list(read_conllu(source))
    assert [s.forms for s in parsed] == [s.forms for s in given]
    for sentence in parsed:
        assert sentence.heads is not None
        assert all(0 <= h <= len(sentence) for h in sentence.heads)
        assert "_" not in sentence.deprels
    assert 0 <= peers.score(TINY, dest) <= 100
    assert peers.measure_parse(key, setup, environment) > 0
