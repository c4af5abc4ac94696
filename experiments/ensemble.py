"""What an ensemble of graph parsers scores against each of its members, on one CoNLL-U file.

Every model scores every batch; the ensemble then decides as one model would, from the mean of
the members' probabilities:

- heads: the MST (one root) of the log of the mean head probabilities of each word (each
  model's row-wise softmax over heads);
- labels: at each chosen arc, the best of the mean label probabilities, with UD's ``root`` rule
  (:func:`biaffine.inference.choices.label_ids`);
- UPOS, XPOS, FEATS and LEMMA: the log of the mean tagger probabilities, read by the one
  prediction path (:func:`biaffine.inference.choices.predicted_columns`) with the first model's
  vocabularies and training lexicon.

It measures what issue 40's "ensembling or distillation of several models into one" can win before
anything is trained for it: the members must be graph parsers trained on the same treebank (their
relation and tag vocabularies are compared). Scores are the CoNLL 2018 shared task's (gold
tokenization).

Usage::

    PYTHONPATH=. python experiments/ensemble.py --gold DEV.conllu RUN1/best.pt RUN2/best.pt
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import numpy as np
import torch

from biaffine.api import Parser
from biaffine.data.batching import plan_batches
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocabs
from biaffine.inference.base import predicted_columns
from biaffine.inference.choices import MST, decode_arc_scores, label_ids, root_label_id
from biaffine.metrics import evaluate_corpus
from biaffine.training.distill import mean_softmax, scored_by_each

COLUMNS = ("upos", "xpos", "feats", "lemma")
MAX_TOKENS = 5000


def check_compatible(parsers: Sequence[Parser]) -> None:
    """Members must share the relation and tag vocabularies (the classes are averaged by id)."""
    first = parsers[0].vocabs
    for parser in parsers[1:]:
        for name in ("rels", *COLUMNS):
            ours, theirs = getattr(first, name, None), getattr(parser.vocabs, name, None)
            if (ours and ours.itos) != (theirs and theirs.itos):
                raise SystemExit(f"the members' {name} vocabularies differ")


def mean_log(scores: Sequence[torch.Tensor]) -> torch.Tensor:
    """The log of the mean of the members' softmax over the last axis (float64)."""
    return mean_softmax(scores).log()


def ensemble_batch(
    parsers: Sequence[Parser], sentences: Sequence[Sentence], rows: Sequence[int]
) -> list[Sentence]:
    """The ensemble's trees and columns for ``sentences[rows]``, in the order of ``rows``."""
    batch_sentences = [sentences[i] for i in rows]
    members = [(parser.model, parser.vocabs) for parser in parsers]
    scores = [found for _, found in scored_by_each(members, sentences, rows, tag=True)]
    arc = mean_log([s.arc_scores for s in scores]).numpy()  # float64[B, N+1, N+1]; -inf: none
    lengths = np.array([len(s) for s in batch_sentences])
    heads = decode_arc_scores(arc, lengths, MST)
    head_index = torch.from_numpy(heads)
    label_scores = [
        parser.model.labels.at_words(s.labels, head_index)
        for parser, s in zip(parsers, scores, strict=True)
    ]
    words = heads >= 0
    rels = np.full(heads.shape, -1, dtype=np.int64)
    vocabs: Vocabs = parsers[0].vocabs
    root = root_label_id(vocabs.rels)
    rels[words] = label_ids(mean_log(label_scores).numpy(), heads[words], root_label=root)
    tag_scores = {
        name: mean_log([s.tag_scores[name] for s in scores])
        for name in scores[0].tag_scores
        if name in COLUMNS
    }
    columns = list(tag_scores)
    predicted = predicted_columns(tag_scores, columns, vocabs, batch_sentences)
    return [
        _written(sentence, heads[b], rels[b], vocabs, predicted[b])
        for b, sentence in enumerate(batch_sentences)
    ]


def _written(
    sentence: Sentence, heads: np.ndarray, rels: np.ndarray, vocabs: Vocabs, columns: dict
) -> Sentence:
    n = len(sentence)
    tree = sentence.with_tree(
        heads[1 : n + 1].tolist(), [vocabs.rels.itos[r] for r in rels[1 : n + 1]]
    )
    return tree.with_columns(columns)


@torch.inference_mode()
def parse_ensemble(parsers: Sequence[Parser], sentences: Sequence[Sentence]) -> list[Sentence]:
    """Every sentence parsed by the ensemble, in input order."""
    found: list[Sentence | None] = [None] * len(sentences)
    plan = plan_batches([len(s) for s in sentences], MAX_TOKENS, shuffle=False)
    for rows in plan:
        for index, sentence in zip(rows, ensemble_batch(parsers, sentences, rows), strict=True):
            found[index] = sentence
    return found  # type: ignore[return-value]  (every index filled once)


def report(name: str, gold: Sequence[Sentence], predicted: Sequence[Sentence], seconds: float):
    """One Markdown row: the CoNLL 2018 scores and the seconds taken."""
    evaluation = evaluate_corpus(gold, predicted)
    attachment, words = evaluation.attachment, evaluation.words.scores
    cells = [f"{attachment.uas:.2f}", f"{attachment.las_universal:.2f}"]
    cells += [f"{words[m].f1:.2f}" for m in ("UPOS", "UFeats", "Lemmas", "MLAS")]
    print(f"| {name} | " + " | ".join(cells) + f" | {seconds:.1f} |", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse ``--gold`` with each member, then with the ensemble; print one table."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    gold = list(read_conllu(args.gold))
    parsers = [Parser.load(path, threads=args.threads) for path in args.checkpoints]
    check_compatible(parsers)
    print("| model | UAS | LAS | UPOS | UFeats | Lemmas | MLAS | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for path, parser in zip(args.checkpoints, parsers, strict=True):
        started = time.perf_counter()
        alone = [t.sentence for t in parser.parse(gold, columns=["all"], overwrite=True)]
        report(path, gold, alone, time.perf_counter() - started)
    started = time.perf_counter()
    together = parse_ensemble(parsers, gold)
    report(f"ensemble of {len(parsers)}", gold, together, time.perf_counter() - started)


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="a CoNLL-U file with gold trees")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("checkpoints", nargs="+", help="graph parsers' checkpoints (best.pt)")
    return parser


if __name__ == "__main__":
    main()
