"""Command line scorer: a predicted CoNLL-U file against the gold file (gold tokenization).

Attachment scores, then the CoNLL 2018 shared task's UPOS, XPOS, UFeats, AllTags, Lemmas, CLAS,
MLAS and BLEX (``biaffine.metrics.METRICS``).

Example: ``python -m biaffine.evaluate gold.conllu pred.conllu [--exclude-punct] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from biaffine.data.conllu import ConlluError, read_conllu
from biaffine.metrics import (
    GOLD_COLUMNS,
    Conll18Scores,
    Evaluation,
    EvaluationError,
    evaluate_corpus,
)

_ROWS = (
    ("UAS", "uas"),
    ("LAS (full DEPREL)", "las"),
    ("LAS (universal DEPREL)", "las_universal"),
    ("UEM", "uem"),
    ("LEM (full DEPREL)", "lem"),
    ("DA (non-root words)", "dependency_accuracy"),
    ("root accuracy", "root_accuracy"),
    ("malformed rate", "malformed_rate"),
)
_NOTES = (
    "LAS (full DEPREL) counts nmod:poss != nmod; the CoNLL 2018 scorer's LAS strips subtypes,",
    "  so compare its LAS with LAS (universal DEPREL).",
    "malformed: not a single-rooted tree, or the word on ROOT not labelled root, or another",
    "  word labelled root (UD's rule; checked where the gold file uses the root relation).",
    "CoNLL 2018 scores count punctuation always; CLAS, MLAS and BLEX count content words only:",
    "  predicted ones (by predicted DEPREL) for precision, gold ones for recall.",
)


def build_parser() -> argparse.ArgumentParser:
    """The command line interface of ``python -m biaffine.evaluate``."""
    parser = argparse.ArgumentParser(
        prog="python -m biaffine.evaluate",
        description="Score a predicted CoNLL-U file against a gold one (gold tokenization). "
        "Punctuation is included unless --exclude-punct is given, as in the CoNLL 2018 scorer.",
    )
    parser.add_argument("gold", help="gold CoNLL-U file")
    parser.add_argument("pred", help="predicted CoNLL-U file ('-' reads standard input)")
    parser.add_argument(
        "--exclude-punct",
        action="store_true",
        help="leave words with gold UPOS PUNCT out of UAS/LAS and exact match",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def evaluate_files(gold: str, pred: str, *, exclude_punct: bool = False) -> Evaluation:
    """Scores of the predicted file ``pred`` against the gold file ``gold``.

    Args:
        gold: path of the gold CoNLL-U file; every HEAD and DEPREL must be valid.
        pred: path of the predicted CoNLL-U file, or ``-`` for standard input.
        exclude_punct: leave gold ``PUNCT`` words out of UAS/LAS (see ``score_sentence``); the
            CoNLL 2018 scores ignore it.

    Returns:
        Corpus totals: attachment scores and CoNLL 2018 scores.

    Raises:
        OSError: if a file cannot be read.
        ConlluError: if a file is not valid CoNLL-U.
        EvaluationError: if the files are misaligned or the prediction has no trees.
    """
    gold_sentences = read_conllu(gold, require_trees=True)
    pred_sentences = read_conllu(sys.stdin if pred == "-" else pred)
    return evaluate_corpus(gold_sentences, pred_sentences, exclude_punct=exclude_punct)


def format_table(evaluation: Evaluation, *, gold: str, pred: str, exclude_punct: bool) -> str:
    """Readable tables: attachment scores, then CoNLL 2018 precision, recall and F1."""
    scores = evaluation.attachment
    punct = "excluded" if exclude_punct else "included"
    lines = [
        f"gold:       {gold}",
        f"prediction: {pred}",
        f"sentences:  {scores.n_sentences}",
        f"words:      {scores.n_words} (punctuation {punct})",
        "",
        f"{'metric':<24}{'value':>8}",
        f"{'-' * 24}{'-' * 8}",
    ]
    lines += [f"{label:<24}{getattr(scores, name):>8.2f}" for label, name in _ROWS]
    return "\n".join([*lines, "", *_conll18_table(evaluation.words), "", *_NOTES])


def _conll18_table(words: Conll18Scores) -> list[str]:
    lines = [
        f"{'CoNLL 2018 metric':<24}{'P':>8}{'R':>8}{'F1':>8}",
        f"{'-' * 24}{'-' * 24}",
    ]
    for name, score in words.scores.items():
        lines.append(f"{name:<24}{score.precision:>8.2f}{score.recall:>8.2f}{score.f1:>8.2f}")
    missing = [name for name in GOLD_COLUMNS if name not in words.annotated]
    if missing:
        names = ", ".join(name.upper() for name in missing)
        lines.append(f"the gold file leaves {names} empty ('_'): scores reading them mean little")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scorer; returns the exit status (0 ok, 2 on unreadable or misaligned input)."""
    args = build_parser().parse_args(argv)
    try:
        evaluation = evaluate_files(args.gold, args.pred, exclude_punct=args.exclude_punct)
    except (OSError, ConlluError, EvaluationError, UnicodeDecodeError) as error:
        print(f"error: {_describe(error)}", file=sys.stderr)
        return 2
    if args.json:
        result = {"gold": args.gold, "pred": args.pred, "exclude_punct": args.exclude_punct}
        result |= evaluation.attachment.to_dict() | {"conll18": evaluation.words.to_dict()}
        print(json.dumps(result, indent=2))
    else:
        table = format_table(
            evaluation, gold=args.gold, pred=args.pred, exclude_punct=args.exclude_punct
        )
        print(table)
    return 0


def _describe(error: Exception) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
