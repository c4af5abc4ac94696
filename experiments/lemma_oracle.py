"""How much of a model's lemma error its taggers cause: Lemmas with its tags and with gold ones.

A word's lemma comes from the training lexicon, looked up by its UPOS and FEATS, or from its
edit script, whose casing the lexicon's key does not decide
(:func:`biaffine.inference.choices.predicted_columns`). Here the one prediction path reads the
model's own scores for LEMMA and, for UPOS and FEATS, either the model's scores or an oracle's:
scores that put all the probability on the gold class (the model's own scores where the gold
class is one the model does not know). What the gold tags win is the lemma error the taggers
cause; what is left is the lemmatizer's own, broken down by where the lemma came from (the
lexicon or an edit script) and whether it is wrong only in its casing.

Usage::

    PYTHONPATH=. python experiments/lemma_oracle.py --gold TEST.conllu MODEL_OR_CHECKPOINT
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch

from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.batching import plan_batches
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.data.vocab import Vocab
from biaffine.inference.choices import predicted_columns
from biaffine.metrics import evaluate_corpus
from biaffine.training.distill import scored_by_each

COLUMNS = ("upos", "feats", "lemma")
ORACLES = {"the model's": (), "gold UPOS": ("upos",), "gold UPOS and FEATS": ("upos", "feats")}
MAX_TOKENS = 5000


def oracle(scores: np.ndarray, gold: Sequence[str], vocab: Vocab) -> np.ndarray:
    """Scores float[W, C] that choose each word's gold class: 0 there, -inf elsewhere.

    A word whose gold class the vocabulary lacks keeps the model's scores.
    """
    chosen = np.full_like(scores, -np.inf)
    for word, value in enumerate(gold):
        class_id = vocab.stoi.get(value)
        if class_id is None:
            chosen[word] = scores[word]
        else:
            chosen[word, class_id] = 0.0
    return chosen


@torch.inference_mode()
def tagged(parser: Parser, sentences: Sequence[Sentence], gold_columns: Sequence[str]):
    """Every sentence with UPOS, FEATS and LEMMA predicted, ``gold_columns`` by the oracle.

    The UPOS is weighed with the relations of the trees the model finds, as in parsing
    (:func:`biaffine.inference.choices.related_upos`).
    """
    relations = [tree.deprels for tree in parser.parse(sentences)]
    members = [(parser.model, parser.vocabs)]
    found: list[Sentence | None] = [None] * len(sentences)
    for rows in plan_batches([len(s) for s in sentences], MAX_TOKENS, shuffle=False):
        [(_, scores)] = scored_by_each(members, sentences, rows, tag=True)
        chosen = [sentences[i] for i in rows]
        tag_scores = {name: s.float().numpy() for name, s in scores.tag_scores.items()}
        for column in gold_columns:
            gold = [value for sentence in chosen for value in getattr(sentence, column)]
            vocab = parser.vocabs.columns[column]
            tag_scores[column] = oracle(tag_scores[column], gold, vocab)
        related = [relations[i] for i in rows]
        columns = predicted_columns(tag_scores, COLUMNS, parser.vocabs, chosen, 1, related)
        for i, sentence, values in zip(rows, chosen, columns, strict=True):
            found[i] = sentence.with_columns(values)
    return found


def breakdown(parser: Parser, gold: Sequence[Sentence], predicted: Sequence[Sentence]) -> Counter:
    """Wrong lemmas by (source, kind): the lexicon's or an edit script's; casing only or not."""
    lexicon = parser.vocabs.lexicon
    counts: Counter = Counter()
    for truth, guess in zip(gold, predicted, strict=True):
        words = zip(truth.forms, truth.lemmas, guess.lemmas, guess.upos, guess.feats, strict=True)
        for form, lemma, found, upos, feats in words:
            if lemma == found:
                continue
            source = "lexicon" if lexicon.lemma(form, upos, feats) is not None else "edit script"
            kind = "casing only" if lemma.lower() == found.lower() else "other"
            counts[source, kind] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    """Score ``--gold`` with each oracle; print a table and the breakdown of the last."""
    args = build_parser().parse_args(argv)
    torch.set_num_threads(args.threads)
    gold = list(read_conllu(args.gold))
    parser = Parser.load(args.model, threads=args.threads)
    missing = sorted(set(COLUMNS) - set(parser.model.tagged_columns))
    if missing:  # a KeyError or TypeError traceback before
        raise ValueError(f"{args.model}: no tagger for {', '.join(missing)}; this needs all three")
    print("| UPOS and FEATS | UPOS | UFeats | Lemmas | wrong lemmas |")
    print("|---|--:|--:|--:|--:|")
    for name, columns in ORACLES.items():
        predicted = tagged(parser, gold, columns)
        words = evaluate_corpus(gold, predicted).words.scores
        counts = breakdown(parser, gold, predicted)
        cells = [f"{words[m].f1:.2f}" for m in ("UPOS", "UFeats", "Lemmas")]
        print(f"| {name} | " + " | ".join(cells) + f" | {counts.total()} |", flush=True)
    print()
    print("| wrong lemmas with gold UPOS and FEATS | casing only | other |")
    print("|---|--:|--:|")
    for source in ("lexicon", "edit script"):
        cells = f"{counts[source, 'casing only']} | {counts[source, 'other']}"
        print(f"| from the {source} | {cells} |")


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gold", required=True, help="a CoNLL-U file with gold columns")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("model", help="an installed model's name or a checkpoint (best.pt)")
    return parser


if __name__ == "__main__":
    report_user_errors(main)
