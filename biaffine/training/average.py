"""One parser from several: the mean of the weights of runs that branched from one run.

Runs started from the same trained weights (``trainer.init_from``) with different seeds see the
data in different orders and drop out different units, yet stay in one basin of the loss: the
mean of their weights is a single network, as fast as each of them, that generalizes like a
small ensemble (Izmailov et al., 2018, "Averaging weights leads to wider optima"; Wortsman et
al., 2022, "Model soups"). Runs trained from different random weights do not average: their
units are permuted against each other, which this module cannot see, so it is for branches.

Usage::

    python -m biaffine.training.average OUT.pt RUN_A/best.pt RUN_B/best.pt [...]

``OUT.pt`` is written atomically, without training state; its metadata is the first input's
with ``averaged_from`` added (each input's path and :func:`~biaffine.checkpoint.weights_sha256`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from biaffine import checkpoint, cli
from biaffine.cli import report_user_errors
from biaffine.files import check_file_output

__all__ = ["average_checkpoints", "main"]


def average_checkpoints(paths: Sequence[str | Path], out: str | Path) -> checkpoint.Checkpoint:
    """Write to ``out`` the checkpoint whose floating weights are the inputs' mean.

    Args:
        paths: two or more checkpoints of one parser kind, model config and vocabularies.
        out: the file to write (atomically).

    Returns:
        The checkpoint written, as :func:`biaffine.checkpoint.load` reads it back.

    Raises:
        ValueError: fewer than two inputs, or inputs that differ in kind, config, vocabularies,
            weight names, shapes or dtypes, or in a weight that is not floating point.
        biaffine.checkpoint.CheckpointError: an input that is no readable checkpoint.
    """
    if len(paths) < 2:
        raise ValueError("averaging needs at least two checkpoints")
    check_file_output(out, paths)  # the average was written over the input
    loaded = [checkpoint.load(path) for path in paths]
    first = loaded[0]
    for other in loaded[1:]:
        _check_same_network(first, other)
    weights = {name: _mean(name, [c.state_dict[name] for c in loaded]) for name in first.state_dict}
    sources = [
        {"path": str(c.path), "weights_sha256": checkpoint.weights_sha256(c.state_dict)}
        for c in loaded
    ]
    checkpoint.save(
        out,
        parser=first.parser,
        model_config=first.model_config,
        vocabs=first.vocabs,
        state_dict=weights,
        metadata={**first.metadata, "averaged_from": sources},
    )
    return checkpoint.load(out)


def _check_same_network(first: checkpoint.Checkpoint, other: checkpoint.Checkpoint) -> None:
    """Refuse to average checkpoints whose weights do not mean the same thing."""
    where = f"{other.path} against {first.path}"
    if other.parser != first.parser:
        raise ValueError(f"{where}: parser kind {other.parser!r} is not {first.parser!r}")
    if other.model_config != first.model_config:
        raise ValueError(f"{where}: the model configs differ")
    if (differ := first.vocabs.difference(other.vocabs)) is not None:
        raise ValueError(f"{where}: the vocabularies differ in {differ} (not branches of one run)")
    if other.state_dict.keys() != first.state_dict.keys():
        raise ValueError(f"{where}: the weight names differ")
    for name, tensor in first.state_dict.items():
        theirs = other.state_dict[name]
        if (theirs.shape, theirs.dtype) != (tensor.shape, tensor.dtype):
            raise ValueError(f"{where}: weight {name} is {theirs.dtype}{list(theirs.shape)}")


def _mean(name: str, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The mean of one weight over the inputs (float64 sums); integer buffers must agree."""
    if tensors[0].is_floating_point():
        total = torch.stack([t.double() for t in tensors]).sum(0)
        return (total / len(tensors)).to(tensors[0].dtype)
    if any(not torch.equal(t, tensors[0]) for t in tensors[1:]):
        raise ValueError(f"weight {name} is not floating point and differs between the inputs")
    return tensors[0]


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: exit status 2 with one line naming the problem on bad input."""
    options = cli.ArgumentParser(prog="python -m biaffine.training.average", description=__doc__)
    options.add_argument("out", help="the averaged checkpoint to write")
    options.add_argument("inputs", nargs="+", help="two or more checkpoints (branches of one run)")
    args = options.parse_args(argv)
    report_user_errors(lambda: average_checkpoints(args.inputs, args.out))
    print(f"wrote {args.out}: the mean of {len(args.inputs)} checkpoints")


if __name__ == "__main__":
    cli.exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
