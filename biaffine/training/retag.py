"""Taggers trained again on a graph parser's frozen encoder, reading states it computes anyway.

A parser whose taggers read a BiLSTM level of their own (``model.encoder.tag_hidden``) runs that
level for the columns alone: for ``en_ewt``'s two members, 9% of a tree's time. This gives each
network new tagger heads that read the level below it (``tag_layer``) and the top level side by
side (``tag_reads_top``), which the tree computes in any case, and drops the taggers' own level.
Nothing else changes: the encoder and the tree's heads keep their weights, so the trees are the
same; only the taggers' MLPs learn, on the encoder's states of the training file (computed once,
without dropout, and held in memory: about 4 KB a word for ``en_ewt``'s networks; dropout is
drawn on them as the encoder draws it on its levels). The epoch whose taggers get most dev words
right, over every tagged column, is kept.

Usage::

    python -m biaffine.training.retag CHECKPOINT TRAIN_CONLLU DEV_CONLLU OUT \
        [--epochs 80] [--patience 10] [--seed 1] [--threads 2] [--stored-as int8]

``CHECKPOINT``: a biaffine graph parser with a taggers' level, or an ensemble of them (each
member in turn). ``OUT`` is written atomically with the lexicon, vocabularies and metadata of
the input, ``retagged`` added: the command, its minutes, and per member the epochs trained, the
best and its dev accuracies (a model card's ``training.parser.retag``). The taggers' shares of
doubt were chosen for the old taggers: choose them again (:mod:`biaffine.training.doubt`).
``python -m biaffine.models.build --parser OUT`` reads a single run's facts in the folder of the
file it is given: write ``OUT`` of one parser in its run's folder (an ensemble's facts are its
members', recorded in the file).
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from biaffine import checkpoint, cli
from biaffine.cli import check_seed, check_threads, exit_on_termination, report_user_errors
from biaffine.data.batching import Batch, batches_by_tokens
from biaffine.data.conllu import read_conllu
from biaffine.data.encoding import encode
from biaffine.data.vocab import Vocabs
from biaffine.files import check_file_output
from biaffine.parsers import BiaffineParser, build_parser
from biaffine.parsers.ensemble import EnsembleParser
from biaffine.runtime import set_threads

__all__ = ["Retagged", "main", "retag_member", "retagged_config", "write_retagged"]

MAX_TOKENS = 5000
"""Words (padding included) of a batch of frozen states, as training's batches."""
LEARNING_RATE = 2e-3
BETAS = (0.9, 0.9)


@dataclasses.dataclass(frozen=True)
class Retagged:
    """A member's new taggers and how they were chosen.

    Attributes:
        model: the member, its taggers reading the frozen states, in eval mode.
        epochs: the epochs trained.
        best_epoch: the epoch kept (1-based).
        dev: per epoch, the percent of dev words each column's tagger gets right.
    """

    model: nn.Module
    epochs: int
    best_epoch: int
    dev: list[dict[str, float]]


def retagged_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A graph parser's config whose taggers read level ``tag_layer`` and the top, no own level.

    Raises:
        ValueError: a config whose taggers have no BiLSTM level of their own.
    """
    encoder = dict(config["encoder"])
    if encoder.get("tag_hidden") is None:
        raise ValueError("the taggers have no BiLSTM level of their own (encoder tag_hidden)")
    del encoder["tag_hidden"]
    encoder["tag_reads_top"] = True
    return {**config, "encoder": encoder}


def retag_member(
    member: nn.Module,
    vocabs: Vocabs,
    train: Sequence[Batch],
    dev: Sequence[Batch],
    *,
    epochs: int,
    patience: int,
    seed: int,
    report: Callable[[str], None] = print,
) -> Retagged:
    """``member`` with new taggers on its frozen encoder (see the module's docstring).

    Args:
        member: a trained biaffine graph parser whose taggers read a level of their own.
        vocabs: its vocabularies.
        train: batches of the training file, with their gold columns.
        dev: batches of the dev file, likewise.
        epochs: the most epochs.
        patience: epochs without a better dev score before stopping.
        seed: the taggers' initial weights and the order of the batches.
        report: takes a line per epoch.

    Raises:
        ValueError: a member whose taggers have no level of their own, or whose weights do
            not fit its config.
    """
    torch.manual_seed(seed)
    new = build_parser(member.kind, vocabs, retagged_config(member.config()))
    kept = {k: v for k, v in member.state_dict().items() if not k.startswith(_RETRAINED)}
    missing, unexpected = new.load_state_dict(kept, strict=False)
    if unexpected or any(not k.startswith("taggers.") for k in missing):
        raise ValueError(f"weights that do not fit the retagged parser: {unexpected or missing}")
    new.eval()
    train_states, dev_states = _states(new, train), _states(new, dev)
    optimizer = torch.optim.Adam(new.taggers.parameters(), LEARNING_RATE, betas=BETAS)
    generator = torch.Generator().manual_seed(seed)
    history: list[dict[str, float]] = []
    best, best_state = -1.0, copy.deepcopy(new.taggers.state_dict())
    for epoch in range(1, epochs + 1):
        started = time.perf_counter()
        loss = _train_epoch(new, train_states, train, optimizer, generator)
        history.append(_dev_accuracy(new, dev_states, dev))
        score = sum(history[-1].values())
        report(
            f"epoch {epoch}: loss {loss:.4f}, dev "
            + ", ".join(f"{c} {a:.2f}" for c, a in history[-1].items())
            + f" ({time.perf_counter() - started:.0f} s)"
        )
        if score > best:
            best, best_state, best_epoch = score, copy.deepcopy(new.taggers.state_dict()), epoch
        elif epoch - best_epoch >= patience:
            break
    new.taggers.load_state_dict(best_state)
    return Retagged(new.eval(), len(history), best_epoch, history)


_RETRAINED = ("taggers.", "encoder.tag_lstm.")


def _states(model: nn.Module, batches: Sequence[Batch]) -> list[torch.Tensor]:
    """The taggers' input of each batch, float[B, N+1, T]: the frozen encoder's, no dropout."""
    with torch.no_grad():
        return [model.split_states(model.encoder(batch))[1] for batch in batches]


def _train_epoch(
    model: nn.Module,
    states: Sequence[torch.Tensor],
    batches: Sequence[Batch],
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
) -> float:
    """One pass over the batches in a random order; the mean of their losses."""
    taggers, dropout = model.taggers.train(), model.encoder.lstm_dropout.train()
    total = 0.0
    for i in torch.randperm(len(batches), generator=generator).tolist():
        batch = batches[i]
        scores = taggers(dropout(states[i]), batch.mask)
        loss = taggers.add_losses(states[i].new_zeros(()), scores, batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    taggers.eval()
    dropout.eval()
    return total / len(batches)


def _dev_accuracy(
    model: nn.Module, states: Sequence[torch.Tensor], batches: Sequence[Batch]
) -> dict[str, float]:
    """Percent of the dev words with a gold class that each column's tagger gets right."""
    right: dict[str, int] = {}
    total: dict[str, int] = {}
    with torch.no_grad():
        for batch_states, batch in zip(states, batches, strict=True):
            for column, scores in model.taggers(batch_states, batch.mask).items():
                gold = batch.columns[column][batch.mask]
                known = gold >= 0
                right[column] = right.get(column, 0) + int((scores.argmax(-1) == gold)[known].sum())
                total[column] = total.get(column, 0) + int(known.sum())
    return {column: 100 * right[column] / max(total[column], 1) for column in right}


def _check_members(members: Sequence[nn.Module], source: str | Path, kind: str) -> None:
    """Refuse, before any data is read, a parser or member this cannot train taggers for."""
    for i, member in enumerate(members, 1):
        where = f"{source}: member {i}" if len(members) > 1 else str(source)
        if member.kind != BiaffineParser.kind:
            raise ValueError(f"{source}: a {kind} parser; graph parsers and their ensembles only")
        if not member.tagged_columns:
            raise ValueError(f"{where}: the parser has no taggers to train again")
        try:
            retagged_config(member.config())
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None


def _refuse_missing_gold(
    path: str | Path, batches: Sequence[Batch], columns: Sequence[str]
) -> None:
    """Refuse a file that gives a tagged column no gold class at all.

    The old tagger cannot be kept (the new one reads other states), and a new one with nothing
    to learn from would be written with its random weights.
    """
    for column in columns:
        if not any((batch.columns[column][batch.mask] >= 0).any() for batch in batches):
            raise ValueError(
                f"{path}: no gold {column.upper()} for the parser's {column} tagger to learn "
                "from or be chosen by"
            )


def _rounded(accuracies: Mapping[str, float]) -> dict[str, float]:
    """Percentages to two decimals, as the model cards show them."""
    return {column: round(value, 2) for column, value in accuracies.items()}


def _batches(path: str | Path, vocabs: Vocabs) -> list[Batch]:
    encoded = encode(list(read_conllu(path)), vocabs)
    return list(batches_by_tokens(encoded, MAX_TOKENS, shuffle=False))


def write_retagged(
    source: str | Path,
    train_file: str | Path,
    dev_file: str | Path,
    out: str | Path,
    *,
    epochs: int = 80,
    patience: int = 10,
    seed: int = 1,
    stored_as: str | None = None,
    threads: int | None = None,
    report: Callable[[str], None] = print,
) -> list[Retagged]:
    """Write to ``out`` the checkpoint ``source`` with every member's taggers trained again.

    ``threads``: torch's threads (None: as they are).

    Raises:
        ValueError: ``epochs`` or ``patience`` below 1, a thread count torch refuses, ``out``
            one of the inputs, a parser that is no graph parser or ensemble of them, one
            without taggers or whose taggers have no level of their own, or a file that gives
            a tagged column no gold class.
        OSError: ``out`` cannot be written (its folder is missing, it is a folder).
        biaffine.checkpoint.CheckpointError: an input that is no readable checkpoint.
    """
    for name, value in (("--epochs", epochs), ("--patience", patience)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} {value!r} must be a whole number >= 1")
    check_seed(seed)
    check_threads(threads, "--threads")
    check_file_output(out, [source, train_file, dev_file])  # before the minutes of training
    set_threads(threads)
    started = time.monotonic()
    loaded = checkpoint.load(source)
    model = checkpoint.build_model(loaded)
    members = list(model.members) if isinstance(model, EnsembleParser) else [model]
    _check_members(members, source, loaded.parser)
    train, dev = _batches(train_file, loaded.vocabs), _batches(dev_file, loaded.vocabs)
    for path, batches in ((train_file, train), (dev_file, dev)):
        _refuse_missing_gold(path, batches, members[0].tagged_columns)
    done = []
    for i, member in enumerate(members, 1):
        report(f"member {i} of {len(members)}")
        done.append(
            retag_member(
                member,
                loaded.vocabs,
                train,
                dev,
                epochs=epochs,
                patience=patience,
                seed=seed + i - 1,
                report=report,
            )
        )
    new = EnsembleParser([d.model for d in done]) if len(done) > 1 else done[0].model
    options = f"--epochs {epochs} --patience {patience} --seed {seed}"
    options += "" if threads is None else f" --threads {threads}"
    options += "" if stored_as is None else f" --stored-as {stored_as}"
    record = {
        "command": f"python -m biaffine.training.retag parser.pt TRAIN DEV OUT {options}",
        "minutes": round((time.monotonic() - started) / 60, 1),
        "members": [
            {
                "epochs": d.epochs,
                "best_epoch": d.best_epoch,
                "dev": _rounded(d.dev[d.best_epoch - 1]),
            }
            for d in done
        ],
    }
    checkpoint.save(
        out,
        parser=new.kind,
        model_config=new.config(),
        vocabs=loaded.vocabs,
        state_dict=new.state_dict(),
        metadata={**loaded.metadata, "retagged": record},
        stored_as=stored_as,
    )
    return done


def main() -> None:
    """The command line: CHECKPOINT TRAIN_CONLLU DEV_CONLLU OUT; prints each epoch's dev scores."""
    options = cli.ArgumentParser(
        prog="python -m biaffine.training.retag", description=__doc__.splitlines()[0]
    )
    options.add_argument("checkpoint", type=Path)
    options.add_argument("train", type=Path, help="the file the parser was trained on (CoNLL-U)")
    options.add_argument("dev", type=Path, help="the dev file the epochs are chosen on")
    options.add_argument("out", type=Path)
    options.add_argument("--epochs", type=int, default=80)
    options.add_argument("--patience", type=int, default=10)
    options.add_argument("--seed", type=int, default=1)
    options.add_argument(
        "--stored-as", choices=checkpoint.STORAGES, help="store the weights so (shipped models)"
    )
    options.add_argument("--threads", type=int, default=1)
    args = options.parse_args()
    report_user_errors(
        lambda: write_retagged(
            args.checkpoint,
            args.train,
            args.dev,
            args.out,
            epochs=args.epochs,
            patience=args.patience,
            seed=args.seed,
            stored_as=args.stored_as,
            threads=args.threads,
            report=lambda line: print(line, flush=True),
        )
    )


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
