"""Write a copy of a checkpoint with the lexicon of a training file added.

Checkpoints trained before the lexicon (:mod:`biaffine.data.lexicon`) lemmatize with the edit
scripts alone, and those trained before it held FEATS tag with the tagger alone; this gives
them the lexicon that training now builds, from the training file they were trained on.
Everything else is copied as it is: weights (and their checksum), config, metadata, training
state; the output is written atomically (read in the current format: older versions are
migrated, as on load). Give the same training file as in training, or the lexicon holds lemmas
the model never saw.

Usage::

    PYTHONPATH=. python experiments/add_lexicon.py CHECKPOINT TRAIN_CONLLU OUT \
        [--stored-as float16|int8] [--only TABLE ...]

``--stored-as`` stores the weights as a shipped model's ``parser.pt`` stores them, float16 or
int8 with a scale per row (:func:`biaffine.checkpoint.save`): widening them and compacting
them again gives the same bits, which the file's weights checksum shows.
``--only tag_sets`` keeps the checkpoint's lexicon and adds (or replaces) only the tables named
(fields of :class:`~biaffine.data.lexicon.Lexicon`): a shipped model keeps the tables that were
measured for it and gets the one added since.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from biaffine import checkpoint, cli
from biaffine.cli import report_user_errors
from biaffine.data.conllu import read_conllu
from biaffine.data.lexicon import Lexicon, build_lexicon
from biaffine.files import check_file_output

_KEPT = ("generator", "feats_guesser", "upos_guesser", "doubt", "exact_case", "runner_up")
TABLES = tuple(f.name for f in dataclasses.fields(Lexicon) if f.init and f.name not in _KEPT)
"""The lexicon's tables, by field name (``--only``); its character models are trained, not
counted (:mod:`biaffine.training.lemma_generator`, :mod:`biaffine.training.feats_guesser`,
:mod:`biaffine.training.upos_guesser`), and its doubt shares and lemma checks chosen on dev
(:mod:`biaffine.training.doubt`): ``--only`` keeps them (``upos_guesser`` was offered, and
replaced a trained guesser with none), a whole new lexicon has none (they were chosen for the
old one)."""


def add_lexicon(
    source: Path,
    train: Path,
    out: Path,
    *,
    stored_as: str | None = None,
    only: Sequence[str] = (),
) -> int:
    """Copy ``source`` to ``out`` with the lexicon of ``train``; returns its number of entries.

    ``stored_as``: how to store the weights (see the module's docstring). ``only``: the tables
    of ``train``'s lexicon to put into ``source``'s (empty: all of it, replacing the old).

    Raises:
        CheckpointError: ``source`` is no readable checkpoint.
        ConlluError: ``train`` is malformed.
        ValueError: ``out`` is ``source`` or ``train``.
        OSError: a file cannot be read or written.
    """
    check_file_output(out, (source, train))  # before reading the training file
    loaded = checkpoint.load(source)
    lexicon = build_lexicon(read_conllu(train))
    if only:  # a checkpoint from before lexicons gets the tables named alone
        kept = loaded.vocabs.lexicon if loaded.vocabs.lexicon is not None else Lexicon()
        lexicon = dataclasses.replace(kept, **{table: getattr(lexicon, table) for table in only})
    vocabs = dataclasses.replace(loaded.vocabs, lexicon=lexicon)
    checkpoint.rewrite(loaded, out, vocabs=vocabs, stored_as=stored_as)
    return len(lexicon)


def main() -> None:
    """The command line: CHECKPOINT TRAIN_CONLLU OUT."""
    parser = cli.ArgumentParser(  # a usage error in one line, as every command's
        prog="experiments/add_lexicon.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("train", type=Path, help="the training file of the model (CoNLL-U)")
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--stored-as",
        choices=checkpoint.STORAGES,
        help="store the weights so (default: as the input stores them)",
    )
    parser.add_argument(
        "--only", action="append", choices=TABLES, default=[], help="add only this table"
    )
    args = parser.parse_args()
    entries = report_user_errors(
        lambda: add_lexicon(
            args.checkpoint, args.train, args.out, stored_as=args.stored_as, only=args.only
        )
    )
    print(f"{args.out}: lexicon of {entries:,} entries from {args.train}")


if __name__ == "__main__":
    main()
