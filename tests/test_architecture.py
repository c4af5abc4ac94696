"""The layout's rules, checked: who may import whom (docs/architecture.md)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
COMPOSITION_ROOT = ROOT / "biaffine" / "training" / "compose.py"


TORCH_FREE = {
    "tiered": set(),
    "decoding": {"tiered"},
    "transitions": {"tiered", "decoding"},
    "rawtext": set(),
}
"""The packages without torch, and the project packages each may import."""

TORCH_FREE_MODULES = (
    "biaffine.data.encoding",
    "biaffine.inference.request",
    "biaffine.inference.settings",
    "biaffine.inference.choices",
    "biaffine.results",
    "biaffine.inputs",
    "biaffine.predict_options",
    "biaffine.onnx_chars",
)
"""Modules of ``biaffine`` without torch: what the ONNX runtime (``biaffine.onnxrun``, tested in
tests/biaffine/test_onnxrun.py where onnxruntime is installed) shares with the torch path."""

# biaffine's parts, bottom up (docs/architecture.md): the modules of each, and the parts and
# project packages each may import besides itself.
PARTS = {
    "leaves": ["__init__", "openmp", "files", "runtime", "cli", "distributed", "installed"],
    "data": ["data"],
    "nn": ["nn"],
    "parsers": ["parsers"],
    "inference": ["inference"],
    "segmenting": ["segmenting"],
    "services": ["checkpoint", "metrics", "alignment", "evaluate", "plot", "results", "inputs"],
    "api": ["api", "render", "pipeline"],
    "predicting": ["predicting", "predict_options"],
    "onnxrun": ["onnxrun", "onnx_chars"],
    "export": ["export"],
    "models": ["models"],
    "serving": ["serving"],
    "training": ["training"],
}
ALLOWED = {
    "leaves": set(),
    "data": {"leaves", "decoding"},
    "nn": {"leaves", "data", "tiered"},
    "parsers": {"leaves", "data", "nn", "transitions"},
    "inference": {"leaves", "data", "nn", "parsers", "decoding", "transitions", "tiered"},
    # The segmenter stands beside the parser: the leaves, data and nn, and the text front end.
    "segmenting": {"leaves", "data", "nn", "rawtext"},
}
# The parts from services up may import every part below them and what those may import.
for _upper in list(PARTS)[len(ALLOWED) :]:
    ALLOWED[_upper] = set().union(*(ALLOWED[part] | {part} for part in ALLOWED))


def imported_modules(path: Path) -> set[str]:
    """Every absolute module a file imports: ``import a.b``, and ``from a import b`` as ``a.b``.

    ``from a import b`` counts as ``a.b`` when ``b`` is a module or package of this repository,
    else as ``a``.
    """
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                module = f"{node.module}.{alias.name}"
                where = ROOT.joinpath(*module.split("."))
                is_module = where.is_dir() or where.with_suffix(".py").is_file()
                names.add(module if is_module else node.module)
    return names


def part_of(module: str) -> str | None:
    """The part of ``biaffine`` a module ``biaffine.x...`` belongs to (None: not in PARTS)."""
    first = module.split(".")[1] if "." in module else "__init__"
    return next((part for part, names in PARTS.items() if first in names), None)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("package", sorted(TORCH_FREE))
def test_torch_free_packages_import_without_torch(package: str) -> None:
    # A None entry in sys.modules makes any later "import torch" raise ImportError.
    done = run_python(f"import sys; sys.modules['torch'] = None; import {package}; print('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("module", TORCH_FREE_MODULES)
def test_what_the_onnx_runtime_shares_imports_without_torch(module: str) -> None:
    done = run_python(f"import sys; sys.modules['torch'] = None; import {module}")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["predict.py", "model=en_ewt_small", "input=-"],
        ["serve.py", "models=en_ewt_small", "port=0"],
    ],
)
def test_a_torch_path_without_torch_says_what_to_install_in_one_line(argv: list[str]) -> None:
    # torch is an extra; a torch path without it ended in a traceback.
    run = f"import runpy, sys; sys.modules['torch'] = None; sys.argv = {argv!r}; "
    done = run_python(run + f"runpy.run_path({argv[0]!r}, run_name='__main__')")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: this needs torch, which is not installed: pip install")
    assert "download.pytorch.org/whl/cpu" in done.stderr  # the CPU build, not CUDA's gigabytes
    debug = {**os.environ, "ROOTPARSE_DEBUG": "1"}  # the traceback, as for any user error
    code = run + f"runpy.run_path({argv[0]!r}, run_name='__main__')"
    traced = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=debug
    )
    assert "Traceback" in traced.stderr


def test_the_installed_models_are_listed_without_torch() -> None:
    # python -m biaffine.models read the cards through the torch API: runtime=onnx users, who
    # need the names, got a traceback.
    done = run_python(
        "import runpy, sys; sys.modules['torch'] = None; sys.argv = ['biaffine.models']; "
        "runpy.run_module('biaffine.models', run_name='__main__')"
    )
    assert done.returncode == 0, done.stderr
    assert "en_ewt_small" in done.stdout


def test_the_base_install_leaves_torch_to_an_extra() -> None:
    # Whoever imports only the decoders or the ONNX runtime was given torch, and on Linux a
    # plain pip install of it is gigabytes of CUDA wheels.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not any(d.startswith("torch") for d in project["dependencies"])
    assert project["optional-dependencies"]["torch"] == ["torch>=2.13,<2.14"]
    # MiniLM's wheel pulls an unpinned torch (sentence-transformers): held to the same pin.
    assert "torch>=2.13,<2.14" in project["optional-dependencies"]["transformer"]
    assert "torch" in project["optional-dependencies"]["all"][0]


def test_the_lemma_edit_scripts_import_without_torch() -> None:
    # biaffine.data is a torch package, but its edit scripts serve torch-free tools too (the
    # coverage report of docs/lemmas.md).
    done = run_python("import sys; sys.modules['torch'] = None; import biaffine.data.lemmas")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("package", sorted(TORCH_FREE))
def test_torch_free_packages_import_only_the_packages_below(package: str) -> None:
    forbidden = {"biaffine", "torch", *TORCH_FREE} - TORCH_FREE[package]
    for path in (ROOT / package).rglob("*.py"):
        modules = imported_modules(path)
        assert not {m for m in modules if m.split(".")[0] in forbidden - {package}}, path


LAZY_PACKAGES = ("biaffine/inference", "biaffine/segmenting", "decoding")
"""Packages whose names load on first use (PEP 562 ``__getattr__``)."""


def test_each_module_of_a_lazy_package_imports_as_the_first_import() -> None:
    """``import biaffine.inference.graph`` first in a process raised a circular ImportError:
    the package's ``__getattr__`` loaded every family while ``base`` imported ``choices``.
    Each module is imported with none of the project loaded (torch stays, to save time)."""
    modules = [
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for package in LAZY_PACKAGES
        for path in sorted((ROOT / package).glob("[!_]*.py"))
    ]
    code = (
        "import importlib, sys, torch\n"
        f"for module in {modules!r}:\n"
        "    for loaded in [m for m in sys.modules if m.split('.')[0] in "
        "('biaffine', 'decoding', 'transitions', 'tiered', 'rawtext')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(module)\n"
        "    except ImportError as error:\n"
        "        print(module, error)\n"
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def test_every_module_of_biaffine_is_in_a_part() -> None:
    paths = (ROOT / "biaffine").rglob("*.py")
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in paths]
    assert [m for m in modules if part_of(m.removesuffix(".__init__")) is None] == []


def test_each_part_of_biaffine_imports_only_the_parts_below() -> None:
    wrong = []
    for path in (ROOT / "biaffine").rglob("*.py"):
        own = part_of(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for module in imported_modules(path):
            root = module.split(".")[0]
            other = part_of(module) if root == "biaffine" else root
            if root in ("biaffine", *TORCH_FREE) and other not in ALLOWED[own] | {own}:
                wrong.append(f"{path.relative_to(ROOT)} ({own}) imports {module} ({other})")
    assert wrong == []


def test_only_the_composition_root_and_the_command_line_check_read_hydra() -> None:
    # cli.py checks an entry point's command line against its config files with Hydra's own
    # grammar before Hydra composes them (refuse_unknown_settings); nothing else reads Hydra.
    readers = []
    for path in (ROOT / "biaffine").rglob("*.py"):
        roots = {module.split(".")[0] for module in imported_modules(path)}
        if roots & {"hydra", "omegaconf"}:
            readers.append(path.relative_to(ROOT).as_posix())
    expected = [COMPOSITION_ROOT, ROOT / "biaffine" / "cli.py"]
    assert sorted(readers) == sorted(path.relative_to(ROOT).as_posix() for path in expected)


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


def test_a_plain_pytest_finds_the_package_and_not_the_tests_folder_of_its_name() -> None:
    # `pytest` (not `python -m pytest`) puts no checkout on sys.path; tests/biaffine, a folder
    # without __init__.py, was then imported as the package biaffine and every test failed.
    console = "import sys, pytest; sys.path.remove(''); sys.exit(pytest.main(sys.argv[1:]))"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            console,
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/biaffine/test_files.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:]
