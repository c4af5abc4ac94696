"""The layout's rules, checked: who may import whom (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
COMPOSITION_ROOT = ROOT / "biaffine" / "training" / "compose.py"


def imported_modules(path: Path) -> set[str]:
    """Top-level names of every module a file imports (``import a.b`` and ``from a.b import c``)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("package", ["decoding", "transitions"])
def test_torch_free_packages_import_without_torch(package: str) -> None:
    # A None entry in sys.modules makes any later "import torch" raise ImportError.
    done = run_python(f"import sys; sys.modules['torch'] = None; import {package}; print('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("package", ["decoding", "transitions"])
def test_torch_free_packages_import_nothing_of_biaffine(package: str) -> None:
    for path in (ROOT / package).rglob("*.py"):
        modules = imported_modules(path)
        assert not {m for m in modules if m.split(".")[0] in ("biaffine", "torch")}, path


def test_only_the_composition_root_reads_a_hydra_config() -> None:
    readers = []
    for path in (ROOT / "biaffine").rglob("*.py"):
        roots = {module.split(".")[0] for module in imported_modules(path)}
        if roots & {"hydra", "omegaconf"}:
            readers.append(path.relative_to(ROOT).as_posix())
    assert readers == [COMPOSITION_ROOT.relative_to(ROOT).as_posix()]


def test_parsing_a_file_loads_no_training_code_and_no_hydra() -> None:
    code = (
        "import sys, biaffine.predicting, biaffine.inference, biaffine.checkpoint\n"
        "loaded = [m for m in sys.modules if m.startswith(('biaffine.training', 'hydra'))]\n"
        "print(loaded)"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_model_never_decodes() -> None:
    for path in (ROOT / "biaffine" / "parsers").rglob("*.py"):
        modules = imported_modules(path)
        # A transition parser reads its training targets (oracle sequences) from transitions;
        # trees are found in biaffine.inference only.
        assert not {m for m in modules if m.split(".")[0] == "decoding"}, path
