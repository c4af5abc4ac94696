"""One model from several trained graph parsers: an ensemble (:mod:`biaffine.parsers.ensemble`).

Parsers trained apart (different seeds, or recipes that differ where the taggers read) make
different mistakes; the ensemble parses with the mean of their probabilities, at the cost of
running each network. The members must share the vocabularies (runs on the same training file
with the same vocabulary options build the same ones) and predict the same columns.

Usage::

    python -m biaffine.training.ensemble OUT.pt RUN_A/best.pt RUN_B/best.pt [...] [--stored-as int8]

``OUT.pt`` is one checkpoint (parser kind ``ensemble``), written atomically without training
state, its weights under ``members.0.``, ``members.1.`` and so on; ``--stored-as`` keeps them
as float16 or int8 (:func:`biaffine.checkpoint.save`), as shipped models are. Its metadata is
the first input's, with ``ensemble_of`` added: each input's path,
:func:`~biaffine.checkpoint.weights_sha256` and metadata.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from biaffine import checkpoint, cli
from biaffine.cli import report_user_errors
from biaffine.files import check_file_output
from biaffine.parsers.ensemble import EnsembleParser

__all__ = ["ensemble_checkpoints", "main"]


def ensemble_checkpoints(
    paths: Sequence[str | Path], out: str | Path, *, stored_as: str | None = None
) -> checkpoint.Checkpoint:
    """Write to ``out`` the ensemble of the parsers in ``paths``.

    Args:
        paths: two or more checkpoints of biaffine graph parsers with one set of vocabularies.
        out: the file to write (atomically).
        stored_as: a compact storage of the weights (:data:`biaffine.checkpoint.STORAGES`), or
            None for float32.

    Returns:
        The checkpoint written, as :func:`biaffine.checkpoint.load` reads it back.

    Raises:
        ValueError: fewer than two inputs, ``out`` one of them, inputs whose vocabularies
            differ, or members the ensemble refuses (:class:`EnsembleParser`).
        biaffine.checkpoint.CheckpointError: an input that is no readable checkpoint.
    """
    if len(paths) < 2:
        raise ValueError("an ensemble needs at least two checkpoints")
    check_file_output(out, paths)
    loaded = [checkpoint.load(path) for path in paths]
    first = loaded[0]
    for other in loaded[1:]:
        if (differ := first.vocabs.difference(other.vocabs)) is not None:
            raise ValueError(
                f"{other.path} against {first.path}: the vocabularies differ in {differ} "
                "(members must be trained on one training file with the same vocabulary "
                "options, and their lexicons given the same settings)"
            )
    model = EnsembleParser([checkpoint.build_model(c) for c in loaded])
    members = [
        {
            "path": str(c.path),
            "weights_sha256": checkpoint.weights_sha256(c.state_dict),
            "metadata": c.metadata,
        }
        for c in loaded
    ]
    checkpoint.save(
        out,
        parser=model.kind,
        model_config=model.config(),
        vocabs=first.vocabs,
        state_dict=model.state_dict(),
        metadata={**first.metadata, "ensemble_of": members},
        stored_as=stored_as,
    )
    return checkpoint.load(out)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: exit status 2 with one line naming the problem on bad input."""
    options = cli.ArgumentParser(prog="python -m biaffine.training.ensemble", description=__doc__)
    options.add_argument("out", help="the ensemble checkpoint to write")
    options.add_argument("inputs", nargs="+", help="two or more graph parsers' checkpoints")
    options.add_argument(
        "--stored-as", choices=checkpoint.STORAGES, help="a compact storage (default: float32)"
    )
    args = options.parse_args(argv)
    report_user_errors(
        lambda: ensemble_checkpoints(args.inputs, args.out, stored_as=args.stored_as)
    )
    print(f"wrote {args.out}: an ensemble of {len(args.inputs)} parsers")


if __name__ == "__main__":
    cli.exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
