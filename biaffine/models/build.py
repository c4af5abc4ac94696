r"""Package a trained parser and segmenter as a shipped model: compact files, card, docs page.

Usage (the runs of the model's recipe, ``conf/experiment/NAME.yaml``)::

    python -m biaffine.models.build en_ewt --parser RUN/best.pt --segmenter SEG/best.pt \
        --treebank UD_English-EWT --limit "..." [--note "..."]

writes ``models/en_ewt/`` (``parser.pt`` with float16 weights and no training state, a copy of
the segmenter, ``card.json``) and rewrites ``docs/models.md`` from every card there. The card's
scores come from :func:`biaffine.models.scoring.card_scores`; its speed is the best of three
rounds on the test set. ``--keep-segmenter`` in place of ``--segmenter``, when the parser alone
was retrained, keeps the model's segmenter and its card's segmenter facts; ``--keep-parser`` in
place of ``--parser``, when the segmenter alone was retrained, keeps the model's parser, its
card's parser facts and float32 scores (the run checkpoint may be gone). ``--sentences
RUN/best.pt`` with ``--keep-segmenter`` ships the run of ``train_sentences.py`` on the model's
own segmenter (the same character network with a word-level sentence model added) and adds the
run's facts to the segmenter's. A parser averaged
from branches of one run (:mod:`biaffine.training.average`) gets the facts of the run it
branched from, of each branch and of the averaging (:func:`~biaffine.models.card.averaged_facts`);
an ensemble (:mod:`biaffine.training.ensemble`), each member's and the joining command's
(:func:`~biaffine.models.card.ensemble_facts`). ``--stored-as int8`` stores the parser's
matrices as int8 (:func:`biaffine.checkpoint.save`) instead of float16. ``--lemma-generator
FILE`` with ``--keep-parser`` ships the model's parser with the lemma generator that
``python -m biaffine.training.lemma_generator`` added to its lexicon (the same network, checked),
and with the FEATS and UPOS guessers that ``python -m biaffine.training.feats_guesser`` and
``python -m biaffine.training.upos_guesser`` may have added on top, and adds those runs' facts
to the parser's; the card's float32 scores, which were of the parser without them, are dropped.
A parser run resumed with ``trainer.resume=true`` needs ``--command "python train.py ..."``, the
one command its legs amount to (Hydra keeps only the last start's overrides); its minutes are
its legs', without the time between them. An ensemble with such a member takes one
``--member-command`` per member, in order, empty for a member never resumed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

import biaffine
from biaffine import checkpoint, cli
from biaffine.api import Parser
from biaffine.cli import exit_on_termination, report_user_errors
from biaffine.data.conllu import read_conllu
from biaffine.data.lexicon import CHARACTER_MODELS
from biaffine.files import atomic_open, check_output, fsync_dir
from biaffine.installed import CARD, SHIPPED, is_name, models_in
from biaffine.models.card import (
    averaged_facts,
    ensemble_facts,
    render_page,
    resumed_command,
    run_facts,
    treebank_facts,
    write_json,
)
from biaffine.models.scoring import GOLD, THREADS, card_scores, ud_test_file
from biaffine.runtime import best_seconds, cpu_description, set_threads
from biaffine.segmenting import checkpoint as segmenter_checkpoints
from rawtext import corpus_text

__all__ = ["build", "card_speed", "main", "size_bytes"]

DOCS = SHIPPED.parent / "docs" / "models.md"
PARSER, SEGMENTER = "parser.pt", "segmenter.pt"


def build(args: argparse.Namespace) -> dict[str, Any]:
    """Write the model's folder and card; returns the card.

    The parts are put together and scored in a folder of their own beside the model's, which
    replaces the model's files only once all is done: a refused build (a segmenter given as the
    parser, a parser without taggers) leaves the model as it was, where it used to have
    replaced its files already.
    """
    if not is_name(args.name):  # "Tiny" was built, then neither listed nor loaded by name
        raise ValueError(
            f"{args.name!r} is no model name: a language code, '_' and lower-case letters or "
            "digits (en_ewt), as the models listing and model= read them"
        )
    if args.docs is not None:  # a folder given was refused once the model was replaced
        check_output(Path(args.docs))
    treebank = Path(args.root) / args.treebank
    gold = ud_test_file(treebank)
    folder = Path(args.out) / args.name
    kept = _kept_card(args, folder)  # before it is replaced
    training = _training(args, folder, kept)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{args.name}.", dir=folder.parent))
    try:
        card = _packaged(args, folder, staging, gold, treebank, training, kept)
        folder.mkdir(exist_ok=True)
        for name in (PARSER, SEGMENTER, CARD):
            os.replace(staging / name, folder / name)
        fsync_dir(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return card


def _packaged(
    args: argparse.Namespace,
    folder: Path,
    staging: Path,
    gold: Path,
    treebank: Path,
    training: dict[str, Any],
    kept: dict[str, Any] | None,
) -> dict[str, Any]:
    """The model's files in ``staging`` from ``args`` and the parts kept in ``folder``; the card."""
    for name in (PARSER, SEGMENTER):  # a part kept, or the one a new part must match
        if (folder / name).is_file():
            shutil.copyfile(folder / name, staging / name)
    if not args.keep_parser:
        checkpoint.compact(args.parser, staging / PARSER, stored_as=args.stored_as)
    if args.lemma_generator:
        _check_same_parser(staging / PARSER, args.lemma_generator)
        shutil.copyfile(args.lemma_generator, staging / PARSER)
    if args.sentences:
        _check_same_segmenter(staging / SEGMENTER, args.sentences)
    source_segmenter = args.sentences or (None if args.keep_segmenter else args.segmenter)
    if source_segmenter:
        segmenter_checkpoints.load(source_segmenter)  # refused by its own name: not a segmenter
        shutil.copyfile(source_segmenter, staging / SEGMENTER)
    folder = staging  # the model as it will be
    _check_trained_on(folder, args.treebank)
    parser = Parser.load(folder / PARSER, threads=THREADS, segmenter=folder / SEGMENTER)
    if args.keep_parser:  # its float32 run checkpoint may be gone: the scores it had stay,
        # but for a generator's: they were the lemmas of the parser without it
        float32_scores = None if args.lemma_generator else kept.get("float32_scores")
    else:
        float32_scores = {GOLD: card_scores(Parser.load(args.parser, threads=THREADS), gold)[GOLD]}
    card = {
        "card_format": 1,
        "name": args.name,
        "language": args.treebank.removeprefix("UD_").split("-")[0].replace("_", " "),
        "treebank": treebank_facts(treebank),
        "files": {"parser": PARSER, "segmenter": SEGMENTER},
        "size_bytes": size_bytes(folder, (PARSER, SEGMENTER)),
        "weights": _weights(args, kept, models=_lexicon_models(folder / PARSER)),
        "requires": args.requires,
        "training": training,
        "evaluation": {"test_file": gold.name, "threads": THREADS, "metric": "CoNLL 2018 F1"},
        "scores": card_scores(parser, gold),
        "float32_scores": float32_scores,
        "speed": card_speed(parser, gold, args.speed_threads),
        "limits": _limits(args, kept),
        "package_version": biaffine.__version__,
    }
    if float32_scores is None:
        del card["float32_scores"]
    with atomic_open(folder / CARD, "w", encoding="utf-8") as out:
        out.write(write_json(card))
    return card


def _check_trained_on(folder: Path, treebank: str) -> None:
    """Refuse a part trained on another treebank than ``--treebank``, which the card names.

    A Wolof parser and segmenter built with ``--treebank UD_English-EWT`` made a card of an
    English model, scored on EWT. A checkpoint that does not say its treebank passes.

    Raises:
        ValueError: naming the part, its treebank and ``--treebank``.
    """
    trained = {PARSER: checkpoint.load(folder / PARSER).metadata.get("treebank")}
    if (folder / SEGMENTER).is_file():
        trained[SEGMENTER] = segmenter_checkpoints.load(folder / SEGMENTER).treebank
    for name, found in trained.items():  # by folder name: --treebank UD_English-EWT/ is one
        if found is not None and Path(found).name != Path(treebank).name:
            raise ValueError(f"the {name} was trained on {found}, not on --treebank {treebank}")


def _limits(args: argparse.Namespace, kept: dict[str, Any] | None) -> list[str]:
    """The card's ``limits``: those given (``--limit``), else the kept card's, where a part is.

    A partial build dropped them: the model's known limits do not change with one part.
    """
    return args.limit or (kept or {}).get("limits", [])


def _weights(args: argparse.Namespace, kept: dict[str, Any] | None, *, models: list[str]) -> str:
    """The card's ``weights``: the parser's storage, the sentence model, the lexicon's models.

    Args:
        args: the build's options.
        kept: the card of the model kept, where a part is.
        models: the character models in the parser's lexicon, by name (:func:`_lexicon_models`).
    """
    kept_weights = kept["weights"].split(_LEXICON_WEIGHTS)[0] if kept else ""
    weights = kept_weights if args.keep_parser else _WEIGHTS[args.stored_as]
    # a segmenter kept keeps its sentence model, whatever parser comes with it
    sentences = args.sentences or (args.keep_segmenter and kept_weights.endswith(_SENTENCE_WEIGHTS))
    weights = weights.removesuffix(_SENTENCE_WEIGHTS)
    weights += _SENTENCE_WEIGHTS if sentences else ""
    if models:
        named = " and ".join([", ".join(models[:-1]), models[-1]] if len(models) > 1 else models)
        weights += f"{_LEXICON_WEIGHTS}{named} float16 (computed in float32)"
    return weights


_SENTENCE_WEIGHTS = ", its sentence model float16 (computed in float32)"
_LEXICON_WEIGHTS = "; the lexicon's "


def _lexicon_models(parser: Path) -> list[str]:
    """The character models the lexicon of the checkpoint ``parser`` holds, by name."""
    lexicon = checkpoint.load(parser).vocabs.lexicon
    if lexicon is None:
        return []
    return [name for kind, (_, name) in CHARACTER_MODELS.items() if getattr(lexicon, kind)]


def _check_same_parser(kept: Path, given: str) -> None:
    """Refuse a lemma generator's checkpoint whose network is not the kept parser's.

    Raises:
        ValueError: other weights or config, or no lemma generator in ``given``.
    """
    old, new = checkpoint.load(kept), checkpoint.load(given)
    if new.vocabs.lexicon is None or new.vocabs.lexicon.generator is None:
        raise ValueError(
            f"--lemma-generator: {given} holds no lemma generator "
            "(python -m biaffine.training.lemma_generator writes one)"
        )
    same = old.state_dict.keys() == new.state_dict.keys() and all(
        torch.equal(old.state_dict[k], new.state_dict[k]) for k in old.state_dict
    )
    if not same or old.model_config != new.model_config or old.parser != new.parser:
        raise ValueError(f"--lemma-generator: {given} holds another network than {kept}")


def size_bytes(folder: Path, files: Iterable[str | None]) -> int:
    """The bytes of a model's ``files`` in ``folder`` (its card's ``size_bytes``).

    None stands for a part the model lacks (a card's ``"segmenter": null``).
    """
    return sum((folder / name).stat().st_size for name in files if name is not None)


_WEIGHTS = {
    "float16": "parser weights stored as float16 (computed in float32), segmenter float32",
    "int8": (
        "parser matrices stored as int8 with a float32 scale per row, its other weights as "
        "float16 (computed in float32), segmenter float32"
    ),
}
"""The card's ``weights`` by the parser's storage (``--stored-as``)."""

_KEEPS = (
    ("--keep-parser", "keep_parser", PARSER),
    ("--keep-segmenter", "keep_segmenter", SEGMENTER),
)
"""Each part a model can keep: (its option, the attribute of the parsed arguments, its file)."""


def _kept_card(args: argparse.Namespace, folder: Path) -> dict[str, Any] | None:
    """The card in ``folder`` where a part of the model is kept, else None.

    Raises:
        ValueError: a part kept where ``folder`` holds no such file and card, or both kept
            (nothing new to package: ``python -m biaffine.models.rescore`` rescores a model).
    """
    kept = [(option, name) for option, attribute, name in _KEEPS if getattr(args, attribute)]
    if args.sentences and not args.keep_segmenter:
        raise ValueError(
            "--sentences adds a sentence model to the model's segmenter: give --keep-segmenter"
        )
    if args.lemma_generator and not args.keep_parser:
        raise ValueError("--lemma-generator adds to the model's parser: give --keep-parser")
    if len(kept) == len(_KEEPS) and not (args.sentences or args.lemma_generator):
        raise ValueError("--keep-parser with --keep-segmenter packages nothing new")
    for option, name in kept:
        if not (folder / CARD).is_file() or not (folder / name).is_file():
            part = name.removesuffix(".pt")
            raise ValueError(f"{option}: {folder} holds no {part} and card to keep")
    return json.loads((folder / CARD).read_text(encoding="utf-8")) if kept else None


def _training(
    args: argparse.Namespace, folder: Path, kept: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The card's ``training``: each run's command, minutes and best epoch.

    A part kept (``args.keep_parser``, ``args.keep_segmenter``) keeps the facts of ``kept``,
    the card in ``folder`` (:func:`_kept_card`).

    Raises:
        ValueError: ``args.member_recipe`` or ``args.member_command`` given for a parser that
            is no ensemble, or kept; a resumed member without its command;
            ``args.command`` given for a parser whose run was never resumed, or not given for
            one that was.
    """
    if args.command and args.keep_parser:
        raise ValueError("--command: for the parser of a resumed run, given with --parser")
    if args.keep_parser:
        _refuse_member_options(args, "--keep-parser keeps its recipes")
        parser = dict(kept["training"]["parser"])
        if args.lemma_generator:
            parser |= _lexicon_model_facts(args)
    else:
        metadata = checkpoint.load(args.parser).metadata
        if args.command and ("ensemble_of" in metadata or "averaged_from" in metadata):
            raise ValueError("--command: for one resumed run's parser, not a joining of runs")
        if "ensemble_of" not in metadata:
            _refuse_member_options(args, f"{args.parser} is no ensemble")
        parser = {"recipe": f"python train.py experiment={args.name}"}
        if "ensemble_of" in metadata:
            members = metadata["ensemble_of"]
            recipes = args.member_recipe or [parser["recipe"]] * len(members)
            commands = args.member_command or None
            parser = ensemble_facts(members, args.stored_as, recipes, commands)
        elif "averaged_from" in metadata:
            sources = [Path(s["path"]) for s in metadata["averaged_from"]]
            parser |= averaged_facts(sources, args.parser)
        else:
            run = Path(args.parser).parent
            parser |= resumed_command(run_facts(run, "train.py"), args.command, run, "--command")
            parser["epochs"] = metadata.get("progress", {}).get("best_epoch")
        if "retagged" in metadata:  # python -m biaffine.training.retag's record
            parser["retag"] = metadata["retagged"]
    if args.keep_segmenter:
        segmenter = dict(kept["training"]["segmenter"])
        if args.sentences:
            run = Path(args.sentences).parent
            facts = run_facts(run, "train_sentences.py")
            facts["epochs"] = _last_json(run / "metrics.jsonl").get("best_epoch")
            segmenter["sentences"] = {"recipe": facts["command"]} | facts
    else:
        segmenter_run = Path(args.segmenter).parent
        segmenter = run_facts(segmenter_run, "train_segmenter.py")
        segmenter = {"recipe": segmenter["command"]} | segmenter
        segmenter["epochs"] = _last_json(segmenter_run / "metrics.jsonl").get("best_epoch")
    training = {"parser": parser, "segmenter": segmenter, "machine": args.machine}
    note = args.note or (kept or {}).get("training", {}).get("note")  # a part kept keeps it
    return training | ({"note": note} if note else {})


def _lexicon_model_facts(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Each character model run's recipe and facts, from the checkpoint's metadata.

    ``lemma_generator`` and, where they were trained on top of it, ``feats_guesser`` and
    ``upos_guesser`` (:data:`biaffine.data.lexicon.CHARACTER_MODELS`), each by its metadata
    key. Each recipe reads the checkpoint the one before it wrote (the first reads
    ``parser.pt``) and writes ``KEY.pt``: the commands refuse an output that is their input.
    """
    loaded = checkpoint.load(args.lemma_generator)
    lexicon = loaded.vocabs.lexicon
    test = ud_test_file(Path(args.root) / args.treebank).name
    folder = f"$UD_ROOT/{args.treebank}"
    files = [f"{folder}/{test.replace('-test.', f'-{part}.')}" for part in ("train", "dev")]
    found = {}
    trained = [key for kind, (key, _) in CHARACTER_MODELS.items() if getattr(lexicon, kind)]
    read = "parser.pt"
    for key in trained:
        facts = dict(loaded.metadata.get(key, {}))
        options = facts.pop("options", {})
        recipe = [f"python -m biaffine.training.{key} {read}", *files, f"{key}.pt"]
        read = f"{key}.pt"
        for option in ("minutes", "seed", "max_epochs", "dim", "hidden", "stored_as"):
            if options.get(option) is not None:
                recipe.append(f"--{option.replace('_', '-')} {options[option]}")
        found[key] = {"recipe": " ".join(recipe)} | facts
    return found


def _check_same_segmenter(kept: Path, given: str) -> None:
    """Refuse a sentence model's checkpoint whose character network is not the model's.

    Raises:
        ValueError: other character weights, or no sentence model in ``given``.
    """
    old, new = segmenter_checkpoints.load(kept), segmenter_checkpoints.load(given)
    if new.sentences is None:
        raise ValueError(
            f"--sentences: {given} holds no sentence model (train_sentences.py writes one)"
        )
    old_weights, new_weights = old.model.state_dict(), new.model.state_dict()
    same = old_weights.keys() == new_weights.keys() and all(
        torch.equal(old_weights[k], new_weights[k]) for k in old_weights
    )
    if not same or old.model.config() != new.model.config():
        raise ValueError(f"--sentences: {given} was trained on another segmenter than {kept}")


def _refuse_member_options(args: argparse.Namespace, why: str) -> None:
    """Refuse ``--member-recipe`` and ``--member-command`` where they would be ignored."""
    for option, given in (("recipe", args.member_recipe), ("command", args.member_command)):
        if given:
            raise ValueError(f"--member-{option}: {why}")


def _last_json(path: Path) -> dict[str, Any]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return json.loads(lines[-1]) if lines else {}


def card_speed(parser: Parser, gold: Path, threads: int) -> dict[str, Any]:
    """A card's ``speed``: sentences per second on the test set, from gold tokens and raw text.

    Each the best of 3, beside the CPU, the threads and the load average it was measured at.
    """
    set_threads(threads)
    words, text = list(read_conllu(gold)), corpus_text(gold)
    gold_seconds = best_seconds(lambda: parser.parse(words, columns=["all"], overwrite=True))
    found = len(parser.parse(text=text))
    raw_seconds = best_seconds(lambda: parser.parse(text=text))
    set_threads(THREADS)
    return {
        "cpu": cpu_description(),
        "threads": threads,
        "load": round(os.getloadavg()[0], 1),
        "gold_sentences_per_second": round(len(words) / gold_seconds),
        "raw_sentences_per_second": round(found / raw_seconds),
        "raw_characters_per_second": round(len(text) / raw_seconds),
    }


def write_docs(folder: Path, page: Path) -> None:
    """Rewrite ``page`` from the cards of the models under ``folder``, every one of them.

    Not those :func:`~biaffine.installed.installed` finds there: a model of ``ROOTPARSE_MODELS``
    shadows the shipped one of its name, which the page then lacked.
    """
    cards = [model.card for model in models_in(folder).values()]
    with atomic_open(page, "w", encoding="utf-8") as out:
        out.write(render_page(cards))


def main(argv: list[str] | None = None) -> None:
    """The command line (see the module's docstring)."""
    options = cli.ArgumentParser(prog="python -m biaffine.models.build", description=__doc__)
    options.add_argument("name", help="the model's name, e.g. en_ewt (its recipe's name too)")
    for part, other in (("parser", "segmenter"), ("segmenter", "parser")):
        given = options.add_mutually_exclusive_group(required=True)
        given.add_argument(f"--{part}", help=f"the {part} run's best.pt")
        given.add_argument(
            f"--keep-{part}",
            action="store_true",
            help=f"keep the model's {part} and its card's facts (the {other} alone retrained)",
        )
    options.add_argument(
        "--sentences",
        default=None,
        help="with --keep-segmenter: a train_sentences.py run's best.pt on that segmenter",
    )
    options.add_argument(
        "--lemma-generator",
        default=None,
        help="with --keep-parser: the model's parser.pt with a lemma generator added "
        "(python -m biaffine.training.lemma_generator), and maybe FEATS and UPOS guessers on "
        "top (python -m biaffine.training.feats_guesser, python -m biaffine.training.upos_guesser)",
    )
    options.add_argument("--treebank", required=True, help="e.g. UD_English-EWT")
    options.add_argument("--root", default=os.environ.get("UD_ROOT"), help="default $UD_ROOT")
    options.add_argument("--out", default=str(SHIPPED), help="default: the repository's models/")
    options.add_argument(
        "--limit",
        action="append",
        default=[],
        help="a known limit, in words (a part kept: the card's, unless given)",
    )
    options.add_argument(
        "--note", default=None, help="a note on how the runs were made (a part kept: the card's)"
    )
    options.add_argument(
        "--member-recipe",
        action="append",
        default=[],
        help="an ensemble's: each member's recipe, in order (default: the model's for each)",
    )
    options.add_argument(
        "--member-command",
        action="append",
        default=[],
        help="an ensemble's, where a member's run was resumed: each member's command, in order, "
        "as --command gives a resumed run's ('' for a member never resumed)",
    )
    options.add_argument(
        "--command",
        default=None,
        help="for a parser run resumed (trainer.resume=true): the one train.py command its "
        "legs amount to, recorded as the command it ran",
    )
    options.add_argument(
        "--requires",
        action="append",
        default=[],
        help="what to install beyond the base install, e.g. 'rootparse[transformer]'",
    )
    options.add_argument(
        "--stored-as",
        choices=checkpoint.STORAGES,
        default="float16",
        help="the parser's weights in models/ (int8: a quarter of float32; default float16)",
    )
    options.add_argument("--machine", default=f"{cpu_description()}, one thread per run")
    options.add_argument("--speed-threads", type=int, default=2)
    options.add_argument(
        "--docs",
        default=None,
        help="the page rewritten from the cards of --out's models (default: docs/models.md "
        "for the repository's models/, none for another folder)",
    )
    args = options.parse_args(argv)
    shipped = Path(args.out).resolve() == SHIPPED.resolve()
    docs = args.docs if args.docs is not None else (str(DOCS) if shipped else None)
    card = report_user_errors(lambda: build(args))
    if docs is not None:  # another folder's models are not the repository's page
        report_user_errors(lambda: write_docs(Path(args.out), Path(docs)))
    print(write_json(card), end="")


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
