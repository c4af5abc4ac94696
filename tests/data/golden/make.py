"""Regenerate the golden checkpoints and expected predict.py outputs (see README.md here).

    UD_ROOT=/path/to/ud python tests/data/golden/make.py [--outputs-only]

Trains the four checkpoints with train.py (a few seconds each, one thread), writes the frozen
inputs, then runs predict.py twice for every case of tests/test_golden_outputs.py and writes
its expected file, refusing outputs that differ between the two runs. --outputs-only keeps the
committed checkpoints and rewrites the expected outputs only. The test never calls this: a
regeneration is a deliberate, reviewed change of what saved models write.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
ROOT = GOLDEN.parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from test_golden_outputs import (  # noqa: E402  (tests/ is not a package)
    CASES,
    EXPECTED,
    FIXTURE_INPUTS,
    UD_TREEBANK,
    blank_every_second_head,
    expected_bytes,
    run_cases,
)

# Small sizes: each checkpoint stays far below 1 MB and trains in seconds.
SIZES = [
    *("model.encoder.word_dim=16", "model.encoder.char_dim=8", "model.encoder.char_hidden=8"),
    *("model.encoder.char_out=16", "model.encoder.lstm_hidden=24", "model.encoder.lstm_layers=1"),
    *("model.arc_mlp=24", "model.rel_mlp=16", "model.tag_mlp=8"),
]
# A high learning rate and small batches, so that 25 epochs learn diverse heads and labels.
TRAINING = [
    *("data=ud_lithuanian_hse", "optimizer.lr=0.01", "trainer.max_epochs=25"),
    *("trainer.max_tokens=200", "trainer.patience=null", "trainer.progress_bar=false"),
    *("trainer.threads=1", "trainer.seed=1"),
]
TAGGERS = ["model.tag_loss_weight=0.5", "model.xpos_loss_weight=0.5", "model.feats_loss_weight=0.5"]
MODELS = {
    "graph": ["model=biaffine", *TAGGERS],
    "arc_hybrid": ["model=arc_hybrid", *TAGGERS],
    "swap": ["model=swap"],
    "combined": ["model=combined", "model.graph_mlp=24", "model.tag_loss_weight=0.5"],
}


def train(name: str, overrides: list[str], runs: Path) -> None:
    """Train one model with train.py and keep its best.pt as ``<name>.pt`` here."""
    run_dir = runs / name
    args = [*TRAINING, *overrides, *SIZES]
    args.append(f"hydra.run.dir={run_dir}")
    print("python train.py", " ".join(args[:-1]), file=sys.stderr)
    subprocess.run([sys.executable, str(ROOT / "train.py"), *args], cwd=ROOT, check=True)
    shutil.copyfile(run_dir / "best.pt", GOLDEN / f"{name}.pt")


def write_fixtures() -> None:
    """Freeze the inputs: tiny.conllu as it is today, its partial-heads and plain-text forms."""
    tiny = (ROOT / "tests" / "data" / "tiny.conllu").read_text(encoding="utf-8")
    (GOLDEN / FIXTURE_INPUTS["tiny"]).write_text(tiny, encoding="utf-8")
    partial = blank_every_second_head(tiny)
    (GOLDEN / FIXTURE_INPUTS["tiny-partial"]).write_text(partial, encoding="utf-8")
    sentences, words = [], []
    for line in tiny.splitlines():
        cols = line.split("\t")
        if len(cols) == 10 and cols[0].isdigit():
            words.append(cols[1].replace(" ", ""))  # text input splits tokens on whitespace
        elif not line and words:
            sentences.append(" ".join(words))
            words = []
    (GOLDEN / FIXTURE_INPUTS["text"]).write_text("\n".join(sentences) + "\n", encoding="utf-8")


def write_expected(ud_root: Path, scratch: Path) -> None:
    """Run every case twice and write its expected file (identical runs only)."""
    first = run_cases(CASES, scratch / "first", ud_root)
    second = run_cases(CASES, scratch / "second", ud_root)
    shutil.rmtree(EXPECTED, ignore_errors=True)
    EXPECTED.mkdir()
    for case in CASES:
        output = first[case.name].result()
        if output != second[case.name].result():
            raise SystemExit(f"{case.name}: two runs of predict.py differ")
        case.expected.write_bytes(expected_bytes(case, output))
        print(f"{case.expected.name}: {len(output)} bytes", file=sys.stderr)


def main() -> None:
    """Parse the command line, then train (unless --outputs-only) and write the outputs."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs-only", action="store_true", help="keep the checkpoints")
    args = parser.parse_args()
    ud_root = Path(os.environ.get("UD_ROOT", ""))
    if not (ud_root / UD_TREEBANK).is_dir():
        raise SystemExit(f"UD_ROOT must hold {UD_TREEBANK}")
    with tempfile.TemporaryDirectory() as scratch:
        if not args.outputs_only:
            for name, overrides in MODELS.items():
                train(name, overrides, Path(scratch))
        write_fixtures()
        for run in ("first", "second"):
            (Path(scratch) / run).mkdir()
        write_expected(ud_root, Path(scratch))


if __name__ == "__main__":
    main()
