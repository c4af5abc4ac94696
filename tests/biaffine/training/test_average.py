"""The mean of branches' weights: exact means, one loadable parser, refusals of unlike inputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from biaffine import checkpoint
from biaffine.training.average import _mean, average_checkpoints
from tests.biaffine.builders import (
    TINY_PARSER,
    biaffine_parser,
    randomized,
    save_model,
    sized_vocabs,
)

VOCABS = sized_vocabs(words=12, chars=9, upos=6, rels=4)


def tiny(path: Path, seed: int, **options) -> Path:
    """A tiny parser with random weights drawn from ``seed``, saved at ``path``."""
    torch.manual_seed(seed)
    return save_model(path, randomized(biaffine_parser(VOCABS, **(TINY_PARSER | options))), VOCABS)


def test_every_floating_weight_is_the_mean_of_the_inputs(tmp_path: Path) -> None:
    paths = [tiny(tmp_path / f"{seed}.pt", seed) for seed in (1, 2, 3)]
    averaged = average_checkpoints(paths, tmp_path / "mean.pt")
    inputs = [checkpoint.load(p).state_dict for p in paths]
    assert averaged.state_dict.keys() == inputs[0].keys()
    for name, weight in averaged.state_dict.items():
        expected = (inputs[0][name] + inputs[1][name] + inputs[2][name]) / 3
        torch.testing.assert_close(weight, expected, rtol=0, atol=1e-6)
    assert sum(not torch.equal(inputs[0][k], inputs[1][k]) for k in inputs[0]) > 10  # seeds differ
    sources = averaged.metadata["averaged_from"]
    assert [s["path"] for s in sources] == [str(p) for p in paths]
    assert sources[0]["weights_sha256"] == checkpoint.weights_sha256(inputs[0])
    assert averaged.training_state is None
    checkpoint.build_model(averaged)  # one parser, as the inputs were


def test_a_checkpoint_averaged_with_itself_keeps_its_weights_exactly(tmp_path: Path) -> None:
    path = tiny(tmp_path / "a.pt", 4)
    averaged = average_checkpoints([path, path], tmp_path / "mean.pt")
    original = checkpoint.load(path).state_dict
    assert all(torch.equal(averaged.state_dict[k], w) for k, w in original.items())


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    # The average was written over the input, and the command exited 0.
    first, second = tiny(tmp_path / "a.pt", 4), tiny(tmp_path / "b.pt", 5)
    before = first.read_bytes()
    with pytest.raises(ValueError, match=r"^output .*a\.pt is the input file"):
        average_checkpoints([first, second], first)
    assert first.read_bytes() == before


@pytest.mark.parametrize(
    ("options", "vocabs", "problem"),
    [
        ({"lstm_hidden": 12}, VOCABS, "the model configs differ"),
        ({}, sized_vocabs(words=12, chars=9, upos=6, rels=5), "the vocabularies differ"),
    ],
)
def test_unlike_checkpoints_are_refused(tmp_path: Path, options, vocabs, problem: str) -> None:
    first = tiny(tmp_path / "a.pt", 1)
    torch.manual_seed(2)
    model = biaffine_parser(vocabs, **(TINY_PARSER | options))
    other = save_model(tmp_path / "b.pt", model, vocabs)
    with pytest.raises(ValueError, match=problem):
        average_checkpoints([first, other], tmp_path / "mean.pt")
    assert not (tmp_path / "mean.pt").exists()


def test_one_checkpoint_is_not_an_average(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least two"):
        average_checkpoints([tiny(tmp_path / "a.pt", 1)], tmp_path / "mean.pt")


def test_integer_buffers_must_agree() -> None:
    assert torch.equal(_mean("n", [torch.tensor([3]), torch.tensor([3])]), torch.tensor([3]))
    with pytest.raises(ValueError, match="not floating point and differs"):
        _mean("n", [torch.tensor([3]), torch.tensor([4])])


def test_the_command_line_names_a_bad_input_in_one_line(tmp_path: Path) -> None:
    first = tiny(tmp_path / "a.pt", 1)
    missing = tmp_path / "missing.pt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "biaffine.training.average",
            str(tmp_path / "o.pt"),
            str(first),
            str(missing),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {missing}: no such checkpoint file"]
    assert not (tmp_path / "o.pt").exists()


@pytest.mark.parametrize("module", ["biaffine.training.average", "biaffine.training.ensemble"])
def test_a_kill_while_the_output_is_written_leaves_no_temporary_file(
    module: str, tmp_path: Path
) -> None:
    # SIGTERM ended the process at once: the atomic output's temporary file was left behind.
    # A signal during the write now waits for the file to be whole (cli.signals_held).
    inputs = [str(tiny(tmp_path / f"{seed}.pt", seed)) for seed in (1, 2)]
    out = tmp_path / "out" / "mean.pt"
    out.parent.mkdir()
    code = (
        "import os, runpy, signal, sys, torch\n"
        "save = torch.save\n"
        "def killed(*args, **kwargs):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    save(*args, **kwargs)\n"
        "torch.save = killed\n"
        f"sys.argv = ['{module}', *sys.argv[1:]]\n"
        f"runpy.run_module('{module}', run_name='__main__')\n"
    )
    command = [sys.executable, "-c", code, str(out), *inputs]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 143, done.stderr
    assert list(out.parent.iterdir()) == [out]  # the output whole, no temporary file beside it
    assert checkpoint.load(out).parser == (
        "ensemble" if module.endswith("ensemble") else "biaffine"
    )
