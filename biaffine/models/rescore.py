r"""Score shipped models again after a change in what the library predicts from the same weights.

Usage::

    python -m biaffine.models.rescore en_ewt tr_imst [--float32 tr_imst=RUN/best.pt]
        [--drop-float32] [--speed] [--dry-run]

For each model named, the card's ``scores`` (gold tokenization and raw text) are measured again
on its test set as :mod:`biaffine.models.build` measures them, and so are its
``float32_scores`` where ``--float32`` names the checkpoint before its weights were halved;
``--drop-float32`` removes the ``float32_scores`` of the others, for a change that makes them
stale (another decoding) when their checkpoint is gone. The card's ``size_bytes`` and
``package_version`` are brought up to date, and so is its ``speed`` with ``--speed`` (after a
change in how fast the library parses: on an idle machine); everything else on it (training,
limits) is kept, since the weights are the same (a lexicon added with
``experiments/add_lexicon.py --stored-as`` changes the files, not the weights). ``docs/models.md``
is rewritten from the shipped models' cards where one of them is rescored. Each changed figure
is printed as ``NAME: SET METRIC OLD -> NEW``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Any

import biaffine
from biaffine import cli, installed, models
from biaffine.api import Parser
from biaffine.cli import exit_on_termination, report_user_errors
from biaffine.files import atomic_open, check_output
from biaffine.models.build import DOCS, card_speed, size_bytes, write_docs
from biaffine.models.card import write_json
from biaffine.models.scoring import GOLD, THREADS, card_scores, ud_test_file

__all__ = ["changes", "main", "rescore"]


def rescore(
    name: str,
    root: Path,
    float32: str | None,
    *,
    drop_float32: bool = False,
    speed_threads: int | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The card of model ``name`` as it was, and with its scores measured again.

    Args:
        name: an installed model.
        root: the folder of the UD treebanks.
        float32: the checkpoint before its weights were halved, or None to keep
            ``float32_scores`` as they are (or drop them, with ``drop_float32``).
        drop_float32: without ``float32``, remove ``float32_scores`` from the card.
        speed_threads: measure the card's ``speed`` again on so many threads, or None to keep it.
    """
    model = installed.find(name)
    treebank = model.card.get("treebank")
    if not isinstance(treebank, dict) or not isinstance(treebank.get("name"), str):
        raise ValueError(f"{model.folder / installed.CARD}: names no treebank.name to score on")
    gold = ud_test_file(root / treebank["name"])
    card = dict(model.card)
    parser = models.load(name, threads=THREADS)
    card["scores"] = card_scores(parser, gold)
    if speed_threads is not None:
        card["speed"] = card_speed(parser, gold, speed_threads)
    if float32 is not None:
        scores = card_scores(Parser.load(float32, threads=THREADS), gold)
        card["float32_scores"] = {GOLD: scores[GOLD]}
    elif drop_float32:
        card.pop("float32_scores", None)
    parts = (card["files"].get(part) for part in ("parser", "segmenter"))  # not a note's file
    card["size_bytes"] = size_bytes(model.folder, parts)
    card["package_version"] = biaffine.__version__
    return model.card, card


def changes(name: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per figure of ``scores``, ``float32_scores`` or ``speed`` that differs.

    Float32 scores dropped from the new card make one line too.
    """
    lines = []
    if "float32_scores" in old and "float32_scores" not in new:
        lines.append(f"{name}: float32_scores dropped")
    for part in ("scores", "float32_scores"):
        for kind, figures in new.get(part, {}).items():
            before = old.get(part, {}).get(kind, {})
            for metric, value in figures.items():
                if before.get(metric) != value:
                    lines.append(f"{name}: {part} {kind} {metric} {before.get(metric)} -> {value}")
    for figure, value in new.get("speed", {}).items():
        if old.get("speed", {}).get(figure) != value:
            lines.append(f"{name}: speed {figure} {old.get('speed', {}).get(figure)} -> {value}")
    return lines


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module's docstring)."""
    options = cli.ArgumentParser(prog="python -m biaffine.models.rescore", description=__doc__)
    options.add_argument("names", nargs="+", help="installed models, e.g. en_ewt")
    options.add_argument("--root", default=os.environ.get("UD_ROOT"), help="default $UD_ROOT")
    options.add_argument(
        "--float32", action="append", default=[], help="NAME=PATH: the model before halving"
    )
    options.add_argument(
        "--drop-float32",
        action="store_true",
        help="remove the float32 scores of the models without --float32 (stale, checkpoint gone)",
    )
    options.add_argument(
        "--speed",
        type=int,
        metavar="THREADS",
        default=None,
        help="measure the cards' speed again on so many threads (default: keep it)",
    )
    options.add_argument("--dry-run", action="store_true", help="print the changes only")
    options.add_argument(
        "--docs", default=str(DOCS), help="the page rewritten from the shipped models' cards"
    )
    args = options.parse_args(argv)
    if args.root is None:
        options.error("set UD_ROOT or pass --root")
    for item in args.float32:
        if "=" not in item:  # dict() of it was a traceback
            options.error(f"--float32 {item}: give NAME=PATH")
    float32 = dict(item.split("=", 1) for item in args.float32)
    if set(float32) - set(args.names):
        options.error(
            f"--float32 names a model not rescored: {sorted(set(float32) - set(args.names))}"
        )
    # Refused here, not after the models before it were scored (minutes each) and written.
    for name, path in float32.items():
        if not Path(path).is_file():
            options.error(f"--float32 {name}={path}: no such checkpoint file")
    if args.speed is not None and args.speed < 1:
        options.error(f"--speed {args.speed}: give a positive number of threads")
    report_user_errors(lambda: _rescore_all(args, float32))


def _rescore_all(args: argparse.Namespace, float32: dict[str, str]) -> None:
    """Each named model's card scored again and written (unless ``--dry-run``), then the page."""
    # An unknown name stops the run before any model is scored. The page lists the shipped
    # models: one outside them (ROOTPARSE_MODELS) rewrote it, or was refused for it where
    # the package has no docs/ (installed from a wheel).
    folders = [installed.find(name).folder for name in args.names]
    shipped = any(
        f.resolve().parent == installed.SHIPPED for f in folders
    )  # ROOTPARSE_MODELS=models
    page = Path(args.docs) if shipped else None
    if page is not None and not args.dry_run:
        check_output(page)  # refused once the cards were written, before
    cards = {}  # every model scored before any card is written: a failure leaves them all
    for name in args.names:
        old, cards[name] = rescore(
            name,
            Path(args.root),
            float32.get(name),
            drop_float32=args.drop_float32,
            speed_threads=args.speed,
        )
        print("\n".join(changes(name, old, cards[name])) or f"{name}: no score changed")
    if args.dry_run:
        return
    # Every card is written and flushed to its temporary file before any takes its place, so a
    # card that cannot be written (a full disk) leaves the others as they were too.
    with contextlib.ExitStack() as stack:
        for name, card in cards.items():
            path = installed.find(name).folder / installed.CARD
            out = stack.enter_context(atomic_open(path, "w", encoding="utf-8"))
            out.write(write_json(card))
            out.flush()
    if page is not None:
        write_docs(installed.SHIPPED, page)


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
