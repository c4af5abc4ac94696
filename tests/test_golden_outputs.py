"""predict.py's output bytes on frozen checkpoints of every parser family, for every option.

The checkpoints, inputs and expected outputs under ``tests/data/golden/`` were made before the
redesign of issue 33 (see the README there). This test runs ``predict.py`` as a user would, by
its command line only, so any later change that alters a byte of what a saved model writes
fails here, with one allowance: a printed decimal (a probability, a k-best score) may differ
by one unit in its last digit, since CPUs sum the same float32 products in different orders
(an Intel Xeon with AMX printed ``DeprelProb=0.1759`` where the AMD EPYC that made the files
printed ``0.1758``). It never regenerates anything: ``tests/data/golden/make.py`` does, on
purpose.

Two kinds of input:

* frozen fixtures committed under ``tests/data/golden/`` (a copy of ``tiny.conllu``: a
  non-projective tree, multiword tokens, an empty node); their expected outputs are committed
  whole, byte for byte;
* the first sentences of a real UD test file read from ``UD_ROOT`` at test time. UD text must
  not be copied into the repository, so their expected file holds the SHA-256 of the output
  bytes (the comparison) and a skeleton of it without the treebank's text (for the diff).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DATA = ROOT / "tests" / "data"
GOLDEN = DATA / "golden"
EXPECTED = GOLDEN / "expected"
UD_TREEBANK = "UD_Lithuanian-HSE"  # the treebank the golden checkpoints were trained on
UD_TEST_FILE = "lt_hse-ud-test.conllu"
UD_SENTENCES = 40  # sentences read from the start of UD_TEST_FILE
# SHA-256 of those sentences as the expected outputs saw them (another UD release skips)
UD_SLICE_SHA256 = "f3f02a59c395844bafc55a76f8470dff153f7bcbc08c2e3928b701d92eeb1878"
DIFF_LINES = 30  # lines of unified diff shown on a mismatch

# Inputs: committed fixtures (under GOLDEN) and inputs built from UD_ROOT at test time.
FIXTURE_INPUTS = {
    "tiny": "input.conllu",
    "tiny-partial": "input-partial-heads.conllu",
    "text": "input.txt",
}
UD_INPUTS = ("ud", "ud-partial")
PARTIAL_INPUTS = ("tiny-partial", "ud-partial")  # every second HEAD given (keep_given_heads)

# option label -> predict.py overrides; each family runs every option it accepts.
GRAPH_OPTIONS = {
    "mst": (),
    "eisner": ("decoder=eisner",),
    "mst_multiroot": ("decoder=mst_multiroot",),
    "greedy": ("decoder=greedy",),
    "probabilities": ("probabilities=true",),
    "kbest3": ("kbest=3",),
    # Heads first, then labels: what every graph option wrote before joint_labels (expected
    # files copied from the mst and kbest3 ones made at 2fbd8c8).
    "heads_first": ("decoder.joint_labels=false",),
    "kbest3-heads_first": ("kbest=3", "decoder.joint_labels=false"),
}
TRANSITION_OPTIONS = {
    "greedy": (),
    "beam4": ("search=beam", "search.beam_size=4"),
    "probabilities": ("probabilities=true",),
    "beam4-probabilities": ("search=beam", "search.beam_size=4", "probabilities=true"),
}
COMBINED_OPTIONS = {
    "greedy": (),
    "probabilities": ("probabilities=true",),
    "beam4-graph0.5": ("search=beam", "search.beam_size=4", "search.graph_weight=0.5"),
    "graph": ("search=graph",),
    "graph-eisner": ("search=graph", "decoder=eisner"),
}


@dataclass(frozen=True)
class Case:
    """One predict.py run: a checkpoint (relative to tests/data), an input and overrides."""

    checkpoint: str
    label: str
    options: tuple[str, ...]
    source: str  # a key of FIXTURE_INPUTS, or one of UD_INPUTS

    @property
    def name(self) -> str:
        """File stem of the expected output, e.g. ``graph-eisner-tiny``."""
        return f"{Path(self.checkpoint).stem}-{self.label}-{self.source}"

    @property
    def expected(self) -> Path:
        """The committed expected output: whole bytes, or a hash and skeleton for UD inputs."""
        suffix = ".skeleton" if self.source in UD_INPUTS else ".conllu"
        return EXPECTED / f"{self.name}{suffix}"


def _cases() -> list[Case]:
    cases = []
    families = {
        "golden/graph.pt": GRAPH_OPTIONS,
        "golden/arc_hybrid.pt": TRANSITION_OPTIONS,
        "golden/swap.pt": TRANSITION_OPTIONS,
        "golden/combined.pt": COMBINED_OPTIONS,
    }
    for checkpoint, options in families.items():
        for source in ("tiny", "ud"):
            cases += [Case(checkpoint, label, opts, source) for label, opts in options.items()]
    keep = ("keep_given_heads=true",)
    cases += [Case("golden/graph.pt", "keep_given_heads", keep, s) for s in PARTIAL_INPUTS]
    cases += [Case(c, "text", ("format=text",), "text") for c in families]
    cases.append(Case("format2-smoke.pt", "default", (), "tiny"))
    return cases


CASES = _cases()


def blank_every_second_head(text: str) -> str:
    """CoNLL-U with HEAD and DEPREL of every even-numbered word set to '_' (keep_given_heads)."""
    lines = []
    for line in text.splitlines(keepends=True):
        cols = line.rstrip("\n").split("\t")
        if len(cols) == 10 and cols[0].isdigit() and int(cols[0]) % 2 == 0:
            cols[6] = cols[7] = "_"
            line = "\t".join(cols) + "\n"
        lines.append(line)
    return "".join(lines)


def ud_slice(ud_root: Path) -> str:
    """The first UD_SENTENCES sentences of the UD test file, as written there."""
    text = (ud_root / UD_TREEBANK / UD_TEST_FILE).read_text(encoding="utf-8")
    blocks = text.split("\n\n")[:UD_SENTENCES]
    return "\n\n".join(blocks) + "\n\n"


def write_inputs(cases: list[Case], folder: Path, ud_root: Path | None) -> dict[str, Path]:
    """Each source's input file: the committed fixture, or the UD input built under ``folder``."""
    paths = {}
    for source in sorted({case.source for case in cases}):
        if source in FIXTURE_INPUTS:
            paths[source] = GOLDEN / FIXTURE_INPUTS[source]
            continue
        assert ud_root is not None, f"the {source} input reads UD_ROOT"
        text = ud_slice(ud_root)
        paths[source] = folder / f"{source}.conllu"
        text = blank_every_second_head(text) if source == "ud-partial" else text
        paths[source].write_text(text, encoding="utf-8")
    return paths


def run_predict(case: Case, source: Path, output: Path) -> bytes:
    """predict.py's output bytes for ``case`` on ``source``, one thread, from the repo root."""
    args = [f"checkpoint={DATA / case.checkpoint}", f"input={source}", f"output={output}"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "predict.py"), *args, "threads=1", *case.options],
        cwd=ROOT,
        env={**os.environ, "HYDRA_FULL_ERROR": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{case.name}: predict.py failed\n{done.stderr[-3000:]}"
    return output.read_bytes()


def run_cases(cases: list[Case], folder: Path, ud_root: Path | None) -> dict[str, Future[bytes]]:
    """Start predict.py for every case, a few processes at a time (each is mostly start-up)."""
    inputs = write_inputs(cases, folder, ud_root)
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return {
            case.name: pool.submit(run_predict, case, inputs[case.source], folder / case.name)
            for case in cases
        }


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def skeleton(output: bytes) -> str:
    """The output without the treebank's text, for diffs: what the parser decided, and layout.

    Word lines keep ID, HEAD, DEPREL and the numeric MISC items (HeadProb, DeprelProb);
    comment lines keep their key, and their value when it is a number (scores the options add).
    """
    lines = []
    for line in output.decode("utf-8").splitlines():
        if line.startswith("#"):
            key, _, value = line.partition(" = ")
            lines.append(line if _is_number(value) else key)
        elif line:
            cols = line.split("\t")
            misc = [item for item in cols[9].split("|") if _is_number(item.partition("=")[2])]
            lines.append("\t".join([cols[0], cols[6], cols[7], "|".join(misc) or "_"]))
        else:
            lines.append("")
    return "".join(line + "\n" for line in lines)


def _numeric_fields(line: str) -> list[tuple[int, int]]:
    """(start, end) of each numeric value in a line: a comment's value, a MISC item's value.

    MISC is the last tab-separated column, of a whole output's word lines and of a skeleton's.
    """
    if line.startswith("#"):
        key, sep, value = line.partition(" = ")
        return [(len(key) + len(sep), len(line))] if sep and _is_number(value) else []
    if "\t" not in line:
        return []
    fields, start = [], line.rindex("\t") + 1
    for item in line[start:].split("|"):
        name, sep, value = item.partition("=")
        if sep and _is_number(value):
            fields.append((start + len(name) + 1, start + len(item)))
        start += len(item) + 1
    return fields


def masked(text: str) -> tuple[str, list[str]]:
    """``text`` with every decimal of a numeric field replaced by ``~``, and those decimals.

    Integers stay (a ``# sent_id = 3``, a ``# kbest_rank = 2`` must match exactly).
    """
    lines, decimals = [], []
    for line in text.splitlines(keepends=True):
        for start, end in reversed(_numeric_fields(line.rstrip("\n"))):
            if "." in line[start:end]:
                decimals.append(line[start:end])
                line = f"{line[:start]}~{line[end:]}"
        lines.append(line)
    return "".join(lines), decimals


def _within_last_digit(expected: str, actual: str) -> bool:
    """Two printed decimals with as many places, at most one unit of the last place apart."""
    places = len(expected.partition(".")[2])
    if len(actual.partition(".")[2]) != places:
        return False
    return abs(float(expected) - float(actual)) <= 1.5 * 10.0**-places


def agrees(expected: str, actual: str) -> bool:
    """Byte for byte, but each decimal within one unit of its last printed digit."""
    (text, decimals), (actual_text, actual_decimals) = masked(expected), masked(actual)
    return text == actual_text and all(
        _within_last_digit(e, a) for e, a in zip(decimals, actual_decimals, strict=True)
    )


def expected_bytes(case: Case, output: bytes) -> bytes:
    """What ``case.expected`` holds for this output (make.py writes it, the test compares it)."""
    if case.source not in UD_INPUTS:
        return output
    digest = hashlib.sha256(masked(output.decode("utf-8"))[0].encode()).hexdigest()
    return f"# sha256 = {digest}\n{skeleton(output)}".encode()


def first_differences(expected: str, actual: str) -> str:
    """The first DIFF_LINES lines of a unified diff, expected first."""
    diff = difflib.unified_diff(
        expected.splitlines(keepends=True),
        actual.splitlines(keepends=True),
        "expected",
        "actual",
        n=1,
    )
    return "".join(list(diff)[:DIFF_LINES])


def _params() -> list:
    marks = {s: [pytest.mark.ud] for s in UD_INPUTS}
    return [pytest.param(c, id=c.name, marks=marks.get(c.source, [])) for c in CASES]


def _ud_root_or_none() -> Path | None:
    value = os.environ.get("UD_ROOT")
    return Path(value) if value and (Path(value) / UD_TREEBANK).is_dir() else None


@pytest.fixture(scope="session")
def golden_outputs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Future[bytes]]:
    """predict.py's output for every selected case that can run here, run side by side."""
    ud_root = _ud_root_or_none()
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_predict_py_writes_the_golden_bytes"
    ]
    runnable = [c for c in selected if ud_root is not None or c.source not in UD_INPUTS]
    return run_cases(runnable, tmp_path_factory.mktemp("golden"), ud_root)


@pytest.fixture
def needs_ud_root(request: pytest.FixtureRequest) -> None:
    """Skips the cases that read UD_ROOT when it is unset or holds another treebank release."""
    if request.node.callspec.params["case"].source in UD_INPUTS:
        ud_root = request.getfixturevalue("ud_root")
        if not (ud_root / UD_TREEBANK).is_dir():
            pytest.skip(f"{ud_root / UD_TREEBANK} not found")
        if hashlib.sha256(ud_slice(ud_root).encode()).hexdigest() != UD_SLICE_SHA256:
            pytest.skip(f"{UD_TEST_FILE} under UD_ROOT is not the release the outputs saw")


@pytest.mark.slow  # one predict.py process (torch + hydra start-up) per case
@pytest.mark.usefixtures("needs_ud_root")
@pytest.mark.parametrize("case", _params())
def test_predict_py_writes_the_golden_bytes(
    case: Case, golden_outputs: dict[str, Future[bytes]]
) -> None:
    output = golden_outputs[case.name].result()
    actual = expected_bytes(case, output).decode("utf-8")
    expected = case.expected.read_bytes().decode("utf-8")
    if not agrees(expected, actual):
        diff = first_differences(expected, actual)
        pytest.fail(f"{case.name}: predict.py output differs from {case.expected.name}\n{diff}")


WORD = "9\tfixed\tfix\tX\t_\t_\t4\tfixed\t_\tHeadProb=0.0930|DeprelProb=0.1758\n"


@pytest.mark.parametrize(
    ("actual", "same"),
    [
        (WORD, True),
        (WORD.replace("0.1758", "0.1759"), True),  # the last digit, one unit up
        (WORD.replace("0.0930", "0.0929"), True),  # one unit down
        (WORD.replace("0.1758", "0.1760"), False),  # two units
        (WORD.replace("0.1758", "0.17580"), False),  # another number of places
        (WORD.replace("fixed\tfix", "fixes\tfix"), False),  # any other byte
        (WORD.replace("\t4\t", "\t5\t"), False),
        (WORD.replace("HeadProb", "HeadProbability"), False),
    ],
)
def test_outputs_agree_but_for_the_last_digit_of_a_decimal(actual: str, same: bool) -> None:
    comments = "# sent_id = 3\n# kbest_score = -39.6078\n"
    assert agrees(comments + WORD, comments + actual) is same
    assert agrees(comments + WORD, comments.replace("-39.6078", "-39.6077") + actual) is same
    assert not agrees(comments + WORD, comments.replace("= 3", "= 4") + actual)  # integers exact
    assert not agrees(comments + WORD + WORD, comments + actual)  # a line fewer


def test_every_expected_file_belongs_to_a_case() -> None:
    """A stale or misnamed expected file would otherwise go unnoticed."""
    assert sorted(p.name for p in EXPECTED.iterdir()) == sorted(c.expected.name for c in CASES)
