"""Choose, on dev, when a model's taggers give way to its lexicon, and how it checks lemmas.

Where its tagger is unsure of a word the training lexicon holds, the UPOS, XPOS or FEATS written
is the lexicon's (:data:`biaffine.inference.choices.TAGGER_DOUBT`, 0.9, chosen when every model
was one network). How unsure is unsure depends on the model: an ensemble's probabilities are the
mean of its members', lower where they disagree, so more of its words fall below 0.9, and on EWT
its taggers are right on more of them than the lexicon is (docs/tags.md). This scores the dev
file once, then chooses each column's share in turn (UPOS first: the lexicon keys XPOS and FEATS
by it) by that column's own accuracy. Then, with those shares and by dev Lemmas, how a lemma
made for a word the lexicon lacks is checked against the training lemmas: how likely a
runner-up script must be to be tried (:attr:`biaffine.data.lexicon.Lexicon.runner_up`), and
whether a lemma counts as a training lemma only in the casing training wrote it
(:attr:`biaffine.data.lexicon.Lexicon.exact_case`: Turkish, Hungarian and French lemmas are
lower-case where their words start a sentence, English names keep their capitals). It writes a
copy of the checkpoint with all three in its lexicon (:attr:`biaffine.data.lexicon.Lexicon.doubt`
too); weights, config and metadata are copied as they are, atomically.

Usage::

    python -m biaffine.training.doubt CHECKPOINT DEV_CONLLU OUT [--stored-as int8] [--threads 2]

``--stored-as`` stores the weights as a shipped model's ``parser.pt`` stores them (the same bits,
:func:`biaffine.checkpoint.rewrite`). Graph parsers and their ensembles only. Give the dev file,
never the test file: the shares are fitted to the file given.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from biaffine import checkpoint, cli
from biaffine.api import Parser
from biaffine.cli import exit_on_termination, report_user_errors
from biaffine.data.batching import plan_batches
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lexicon import DOUBTED, Lexicon
from biaffine.data.vocab import Vocabs
from biaffine.files import check_file_output
from biaffine.inference import choices
from biaffine.metrics import evaluate_corpus
from biaffine.runtime import set_threads
from biaffine.training.distill import scored_by_each

__all__ = [
    "METRICS",
    "MIN_GAIN",
    "RUNNER_UP_SHARES",
    "SHARES",
    "DevChoices",
    "DevScores",
    "best_share",
    "choose_doubt",
    "choose_lemmas",
    "dev_scores",
    "main",
    "write_doubt",
]

SHARES = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
"""The shares tried for each column (0: the tagger always; 0.99: the lexicon nearly always)."""

MIN_GAIN = 0.05
"""The least gain in dev F1 for which a column's share (or the lemmas' checks) leaves the
default. Dev gains below it did not hold on test (``en_ewt_small`` and ``en_ewt_glove``, EWT dev
+0.01 to +0.04, test -0.04 to -0.06 on UPOS and XPOS: docs/tags.md); 0.05 is 13 of EWT dev's
25,148 words."""

METRICS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats", "lemma": "Lemmas"}
"""The CoNLL 2018 score each column's choice is made by."""

RUNNER_UP_SHARES = (0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
"""The runner-up shares tried for the lemmas (1: ties alone), the default among them."""

MAX_TOKENS = 5000
"""Words per batch when scoring the dev file."""

_CASING = {False: "any case", True: "as written"}
"""How the command line names each lemma casing (:attr:`DevChoices.exact_case`)."""

Rules = tuple[float, bool]
"""A runner-up share and a casing (:attr:`Lexicon.exact_case`) for the lemmas."""


@dataclasses.dataclass(frozen=True, slots=True)
class DevScores:
    """A dev file as the column choices read it: the taggers' scores and the trees' relations.

    Attributes:
        sentences: the dev sentences, gold columns and all.
        batches: (the rows of ``sentences`` it holds, tagger scores by column
            float32[W, n_classes] for their W words, row by row) per batch.
        relations: each sentence's relations in the tree the model finds.
    """

    sentences: list[Sentence]
    batches: list[tuple[list[int], dict[str, np.ndarray]]]
    relations: list[list[str]]

    @property
    def doubted(self) -> list[str]:
        """The columns of :data:`METRICS` the model tags and dev annotates, as :data:`DOUBTED`.

        A column dev leaves ``_`` everywhere would score 0 at every share: it keeps the default.
        """
        tagged = self.batches[0][1]
        return [c for c in DOUBTED if c in tagged and annotated(self.sentences, c)]

    @property
    def lemmatized(self) -> bool:
        """Whether the model tags LEMMA and dev annotates it (else its checks keep the defaults)."""
        return "lemma" in self.batches[0][1] and annotated(self.sentences, "lemma")


def annotated(sentences: Sequence[Sentence], column: str) -> bool:
    """Whether some word of ``sentences`` has a ``column`` value other than ``_``."""
    return any(value != "_" for sentence in sentences for value in sentence.column(column))


@torch.inference_mode()
def dev_scores(
    parser: Parser,
    sentences: Sequence[Sentence],
    source: str = "the dev file",
    model: str = "the model",
) -> DevScores:
    """Run ``parser``'s networks over ``sentences`` once: its trees, and its taggers' scores.

    ``source`` and ``model`` name the dev file and the checkpoint in the errors.

    Raises:
        ValueError: the parser is not a graph parser (nor an ensemble of them), or tags none
            of :data:`METRICS`'s columns, or has no lexicon; or ``sentences`` annotate none of
            the columns it tags (no sentence, or ``_`` in every cell).
    """
    if parser.model.family != "graph":
        raise ValueError(f"{model}: tagger doubt is chosen for graph parsers and ensembles only")
    tagged = set(METRICS) & set(parser.model.tagged_columns)
    if parser.vocabs.lexicon is None or not tagged:
        raise ValueError(f"{model}: no lexicon, or tags none of UPOS, XPOS, FEATS and LEMMA")
    if not any(annotated(sentences, column) for column in tagged):
        names = ", ".join(METRICS[column] for column in METRICS if column in tagged)
        raise ValueError(f"{source} gives no gold {names} to choose the shares by")
    relations = [tree.deprels for tree in parser.parse(sentences)]
    members = [(parser.model, parser.vocabs)]
    batches = []
    for rows in plan_batches([len(s) for s in sentences], MAX_TOKENS, shuffle=False):
        [(_, scores)] = scored_by_each(members, sentences, rows, tag=True)
        tag_scores = {name: s.float().numpy() for name, s in scores.tag_scores.items()}
        batches.append((list(rows), tag_scores))
    return DevScores(list(sentences), batches, relations)


def accuracy(scored: DevScores, vocabs: Vocabs, column: str) -> float:
    """``column``'s CoNLL 2018 F1 (:data:`METRICS`, in percent) on dev with ``vocabs``'s lexicon.

    The columns are chosen as in parsing (:func:`biaffine.inference.choices.predicted_columns`),
    from the scores and relations already found: the doubted ones, and LEMMA where it is the
    ``column`` scored.
    """
    wanted = [*scored.doubted, *(["lemma"] if column == "lemma" else [])]
    found: list[Sentence] = list(scored.sentences)
    workers = torch.get_num_threads()
    for rows, tag_scores in scored.batches:
        chosen = [scored.sentences[i] for i in rows]
        relations = [scored.relations[i] for i in rows]
        values = choices.predicted_columns(tag_scores, wanted, vocabs, chosen, workers, relations)
        for i, sentence, columns in zip(rows, chosen, values, strict=True):
            found[i] = sentence.with_columns(columns)
    return evaluate_corpus(scored.sentences, found).words.scores[METRICS[column]].f1


def choose_doubt(
    scored: DevScores, vocabs: Vocabs, shares: Sequence[float] = SHARES
) -> tuple[dict[str, float], dict[str, dict[float, float]]]:
    """Each tagged column's share, in the order of :data:`DOUBTED`, by its dev accuracy.

    A column's share is chosen with those of the columns before it fixed (UPOS keys the
    lexicon's XPOS and FEATS): the default, :data:`~biaffine.inference.choices.TAGGER_DOUBT`,
    unless another share gains at least :data:`MIN_GAIN` over it; among equal scores, the
    share nearest the default. ``shares`` must hold the default. A column dev leaves blank
    is not scored and keeps the share the model has (it was reset to the default: Sequoia's
    FEATS share 0.95 was lost to a dev file without FEATS).

    Returns:
        The shares by column (those kept too), and every share's dev F1 by scored column.
    """
    own = vocabs.lexicon.doubt if vocabs.lexicon is not None else {}
    chosen = {column: share for column, share in own.items() if column not in scored.doubted}
    tried: dict[str, dict[float, float]] = {}
    for column in scored.doubted:
        tried[column] = {
            share: accuracy(scored, _with_lexicon(vocabs, doubt={**chosen, column: share}), column)
            for share in shares
        }
        chosen[column] = best_share(tried[column])
    return chosen, tried


def best_share(scores: Mapping[float, float]) -> float:
    """The share of :func:`choose_doubt` among ``scores`` (share -> dev F1)."""
    default = choices.TAGGER_DOUBT
    best = max(scores, key=lambda share: (scores[share], -abs(share - default)))
    return best if scores[best] >= scores[default] + MIN_GAIN else default


def choose_lemmas(scored: DevScores, vocabs: Vocabs) -> tuple[Rules, dict[Rules, float]]:
    """The runner-up share and casing of ``vocabs``'s lexicon's lemma checks, by dev Lemmas.

    Every pair of :data:`RUNNER_UP_SHARES` and casing is tried; the default
    (:data:`~biaffine.inference.choices.LEMMA_RUNNER_UP`, casing aside) stays unless another
    pair gains at least :data:`MIN_GAIN` over it; among equal scores casing aside goes first,
    then the share nearest the default (by ratio).

    Returns:
        The pair chosen, and every pair's dev Lemmas F1 (empty, and the lexicon's own pair,
        where the model has no lemmatizer or dev no lemmas: it was reset to the default).
    """
    default = (choices.LEMMA_RUNNER_UP, False)
    if not scored.lemmatized:
        own = vocabs.lexicon
        if own is None:
            return default, {}
        return (own.runner_up or choices.LEMMA_RUNNER_UP, own.exact_case), {}
    tried = {
        (share, case): accuracy(
            scored, _with_lexicon(vocabs, runner_up=share, exact_case=case), "lemma"
        )
        for share in RUNNER_UP_SHARES
        for case in (False, True)
    }

    def rank(pair: Rules) -> tuple[float, bool, float]:
        return tried[pair], not pair[1], -abs(math.log(pair[0] / default[0]))

    best = max(tried, key=rank)
    return (best if tried[best] >= tried[default] + MIN_GAIN else default), tried


@dataclasses.dataclass(frozen=True, slots=True)
class DevChoices:
    """What :func:`write_doubt` chose, with the dev scores it chose by.

    Attributes:
        doubt: the share by column (:func:`choose_doubt`).
        tried: every share's dev F1 by column.
        runner_up: the lemmas' runner-up share (:func:`choose_lemmas`).
        exact_case: the lemmas' casing (:func:`choose_lemmas`).
        lemmas: the dev Lemmas F1 of each (share, casing) pair (empty where none was chosen).
    """

    doubt: dict[str, float]
    tried: dict[str, dict[float, float]]
    runner_up: float
    exact_case: bool
    lemmas: dict[Rules, float]


def _with_lexicon(vocabs: Vocabs, **changes: object) -> Vocabs:
    """``vocabs`` with its lexicon's ``doubt``, ``runner_up`` or ``exact_case`` replaced."""
    lexicon: Lexicon | None = vocabs.lexicon
    assert lexicon is not None
    return dataclasses.replace(vocabs, lexicon=dataclasses.replace(lexicon, **changes))


def write_doubt(
    source: Path, dev: Path, out: Path, *, stored_as: str | None = None, threads: int = 1
) -> DevChoices:
    """Choose the shares and lemma checks of ``source`` on ``dev``; write the checkpoint so.

    Returns:
        What was chosen, and by what.

    Raises:
        CheckpointError: ``source`` is no readable checkpoint.
        ConlluError: ``dev`` is malformed.
        ValueError: a model :func:`dev_scores` refuses, or ``out`` is ``source`` or ``dev``.
        OSError: a file cannot be read or written.
    """
    check_file_output(out, (source, dev))  # before the minutes of scoring dev
    set_threads(threads)
    loaded = checkpoint.load(source)  # read once: parsed with, then written again
    parser = Parser(checkpoint.build_model(loaded), loaded.vocabs, device=torch.device("cpu"))
    scored = dev_scores(parser, list(read_conllu(dev)), str(dev), str(source))
    chosen, tried = choose_doubt(scored, parser.vocabs)
    (share, case), lemmas = choose_lemmas(scored, _with_lexicon(parser.vocabs, doubt=chosen))
    own = None if share == choices.LEMMA_RUNNER_UP else share  # the default: none of its own
    vocabs = _with_lexicon(loaded.vocabs, doubt=chosen, runner_up=own, exact_case=case)
    checkpoint.rewrite(loaded, out, vocabs=vocabs, stored_as=stored_as)
    return DevChoices(chosen, tried, share, case, lemmas)


def main() -> None:
    """The command line: CHECKPOINT DEV_CONLLU OUT; prints every choice's dev F1."""
    options = cli.ArgumentParser(
        prog="python -m biaffine.training.doubt", description=__doc__.splitlines()[0]
    )
    options.add_argument("checkpoint", type=Path)
    options.add_argument("dev", type=Path, help="the model's dev file (CoNLL-U, gold columns)")
    options.add_argument("out", type=Path)
    options.add_argument(
        "--stored-as",
        choices=checkpoint.STORAGES,
        help="store the weights so (default: as the input stores them)",
    )
    options.add_argument("--threads", type=int, default=1)
    args = options.parse_args()
    chosen = report_user_errors(
        lambda: write_doubt(
            args.checkpoint, args.dev, args.out, stored_as=args.stored_as, threads=args.threads
        )
    )
    for column, scores in chosen.tried.items():
        cells = "  ".join(f"{share:g}: {f1:.2f}" for share, f1 in scores.items())
        print(f"{METRICS[column]:>6} by share  {cells}  -> {chosen.doubt[column]:g}")
    for case in (False, True) if chosen.lemmas else ():
        scores = {share: f1 for (share, c), f1 in chosen.lemmas.items() if c == case}
        cells = "  ".join(f"{share:g}: {f1:.2f}" for share, f1 in scores.items())
        print(f"Lemmas by runner-up share, {_CASING[case]}  {cells}")
    lemmas = f"runner-up {chosen.runner_up:g}, {_CASING[chosen.exact_case]}"
    print(f"{args.out}: tagger doubt {chosen.doubt}; lemmas: {lemmas}")


if __name__ == "__main__":
    exit_on_termination()  # a kill ends as Ctrl-C does: no temporary file left
    main()
