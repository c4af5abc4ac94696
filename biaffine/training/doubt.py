"""Choose, on dev, below which probability each of a model's taggers gives way to its lexicon.

Where its tagger is unsure of a word the training lexicon holds, the UPOS, XPOS or FEATS written
is the lexicon's (:data:`biaffine.inference.choices.TAGGER_DOUBT`, 0.9, chosen when every model
was one network). How unsure is unsure depends on the model: an ensemble's probabilities are the
mean of its members', lower where they disagree, so more of its words fall below 0.9, and on EWT
its taggers are right on more of them than the lexicon is (docs/tags.md). This scores the dev
file once, then chooses each column's share in turn (UPOS first: the lexicon keys XPOS and FEATS
by it) by that column's own accuracy, and writes a copy of the checkpoint with the shares in its
lexicon (:attr:`biaffine.data.lexicon.Lexicon.doubt`); weights, config and metadata are copied
as they are, atomically.

Usage::

    python -m biaffine.training.doubt CHECKPOINT DEV_CONLLU OUT [--stored-as int8] [--threads 2]

``--stored-as`` stores the weights as a shipped model's ``parser.pt`` stores them (the same bits,
:func:`biaffine.checkpoint.rewrite`). Graph parsers and their ensembles only. Give the dev file,
never the test file: the shares are fitted to the file given.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch

from biaffine import checkpoint
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.batching import plan_batches
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.lexicon import DOUBTED, Lexicon
from biaffine.data.vocab import Vocabs
from biaffine.files import refuse_input_as_output
from biaffine.inference import choices
from biaffine.metrics import evaluate_corpus
from biaffine.runtime import set_threads
from biaffine.training.distill import scored_by_each

__all__ = [
    "METRICS",
    "MIN_GAIN",
    "SHARES",
    "DevScores",
    "best_share",
    "choose_doubt",
    "dev_scores",
    "main",
    "write_doubt",
]

SHARES = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
"""The shares tried for each column (0: the tagger always; 0.99: the lexicon nearly always)."""

MIN_GAIN = 0.05
"""The least gain in dev F1 for which a column's share leaves the default. Dev gains below it
did not hold on test (``en_ewt_small`` and ``en_ewt_glove``, EWT dev +0.01 to +0.04, test -0.04
to -0.06 on UPOS and XPOS: docs/tags.md); 0.05 is 13 of EWT dev's 25,148 words."""

METRICS = {"upos": "UPOS", "xpos": "XPOS", "feats": "UFeats"}
"""The CoNLL 2018 score each column's share is chosen by."""

MAX_TOKENS = 5000
"""Words per batch when scoring the dev file."""


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


def annotated(sentences: Sequence[Sentence], column: str) -> bool:
    """Whether some word of ``sentences`` has a ``column`` value other than ``_``."""
    return any(value != "_" for sentence in sentences for value in getattr(sentence, column))


@torch.inference_mode()
def dev_scores(
    parser: Parser, sentences: Sequence[Sentence], source: str = "the dev file"
) -> DevScores:
    """Run ``parser``'s networks over ``sentences`` once: its trees, and its taggers' scores.

    Raises:
        ValueError: the parser is not a graph parser (nor an ensemble of them), or tags none
            of :data:`METRICS`'s columns, or has no lexicon; or ``sentences`` annotate none of
            the columns it tags (no sentence, or ``_`` in every cell).
    """
    if parser.model.family != "graph":
        raise ValueError("tagger doubt is chosen for graph parsers and their ensembles only")
    tagged = set(METRICS) & set(parser.model.tagged_columns)
    if parser.vocabs.lexicon is None or not tagged:
        raise ValueError("the model has no lexicon or tags none of UPOS, XPOS and FEATS")
    if not any(annotated(sentences, column) for column in tagged):
        names = ", ".join(METRICS[column] for column in DOUBTED if column in tagged)
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
    from the scores and relations already found.
    """
    found: list[Sentence] = list(scored.sentences)
    workers = torch.get_num_threads()
    for rows, tag_scores in scored.batches:
        chosen = [scored.sentences[i] for i in rows]
        relations = [scored.relations[i] for i in rows]
        values = choices.predicted_columns(
            tag_scores, scored.doubted, vocabs, chosen, workers, relations
        )
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
    share nearest the default. ``shares`` must hold the default.

    Returns:
        The shares by column, and every share's dev F1 by column.
    """
    chosen: dict[str, float] = {}
    tried: dict[str, dict[float, float]] = {}
    for column in scored.doubted:
        tried[column] = {
            share: accuracy(scored, _with_doubt(vocabs, {**chosen, column: share}), column)
            for share in shares
        }
        chosen[column] = best_share(tried[column])
    return chosen, tried


def best_share(scores: Mapping[float, float]) -> float:
    """The share of :func:`choose_doubt` among ``scores`` (share -> dev F1)."""
    default = choices.TAGGER_DOUBT
    best = max(scores, key=lambda share: (scores[share], -abs(share - default)))
    return best if scores[best] >= scores[default] + MIN_GAIN else default


def _with_doubt(vocabs: Vocabs, doubt: Mapping[str, float]) -> Vocabs:
    """``vocabs`` with its lexicon's shares replaced by ``doubt``."""
    lexicon: Lexicon | None = vocabs.lexicon
    assert lexicon is not None
    return dataclasses.replace(vocabs, lexicon=dataclasses.replace(lexicon, doubt=dict(doubt)))


def write_doubt(
    source: Path, dev: Path, out: Path, *, stored_as: str | None = None, threads: int = 1
) -> tuple[dict[str, float], dict[str, dict[float, float]]]:
    """Choose the shares of ``source`` on ``dev`` and write the checkpoint with them to ``out``.

    Returns:
        What :func:`choose_doubt` returns.

    Raises:
        CheckpointError: ``source`` is no readable checkpoint.
        ConlluError: ``dev`` is malformed.
        ValueError: a model :func:`dev_scores` refuses, or ``out`` is ``source`` or ``dev``.
        OSError: a file cannot be read or written.
    """
    refuse_input_as_output(out, (source, dev))
    set_threads(threads)
    loaded = checkpoint.load(source)  # read once: parsed with, then written again
    parser = Parser(checkpoint.build_model(loaded), loaded.vocabs, device=torch.device("cpu"))
    scored = dev_scores(parser, list(read_conllu(dev)), str(dev))
    chosen, tried = choose_doubt(scored, parser.vocabs)
    checkpoint.rewrite(loaded, out, vocabs=_with_doubt(loaded.vocabs, chosen), stored_as=stored_as)
    return chosen, tried


def main() -> None:
    """The command line: CHECKPOINT DEV_CONLLU OUT; prints every share's dev F1."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("checkpoint", type=Path)
    options.add_argument("dev", type=Path, help="the model's dev file (CoNLL-U, gold columns)")
    options.add_argument("out", type=Path)
    options.add_argument(
        "--stored-as", choices=checkpoint.STORAGES, help="store the weights so (shipped models)"
    )
    options.add_argument("--threads", type=int, default=1)
    args = options.parse_args()
    chosen, tried = report_user_errors(
        lambda: write_doubt(
            args.checkpoint, args.dev, args.out, stored_as=args.stored_as, threads=args.threads
        )
    )
    for column, scores in tried.items():
        cells = "  ".join(f"{share:g}: {f1:.2f}" for share, f1 in scores.items())
        print(f"{METRICS[column]:>6} by share  {cells}  -> {chosen[column]:g}")
    print(f"{args.out}: tagger doubt {chosen}")


if __name__ == "__main__":
    main()
