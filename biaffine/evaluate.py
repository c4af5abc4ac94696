"""Command line scorer: attachment scores of a predicted CoNLL-U file against the gold file.

Example: ``python -m biaffine.evaluate gold.conllu pred.conllu [--exclude-punct] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from biaffine.data.conllu import ConlluError, read_conllu
from biaffine.metrics import AttachmentScores, EvaluationError, score_corpus

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


def evaluate_files(gold: str, pred: str, *, exclude_punct: bool = False) -> AttachmentScores:
    """Scores of the predicted file ``pred`` against the gold file ``gold``.

    Args:
        gold: path of the gold CoNLL-U file; every HEAD and DEPREL must be valid.
        pred: path of the predicted CoNLL-U file, or ``-`` for standard input.
        exclude_punct: leave gold ``PUNCT`` words out of UAS/LAS (see ``score_sentence``).

    Returns:
        Corpus totals.

    Raises:
        OSError: if a file cannot be read.
        ConlluError: if a file is not valid CoNLL-U.
        EvaluationError: if the files are misaligned or the prediction has no trees.
    """
    gold_sentences = read_conllu(gold, require_trees=True)
    pred_sentences = read_conllu(sys.stdin if pred == "-" else pred)
    return score_corpus(gold_sentences, pred_sentences, exclude_punct=exclude_punct)


def format_table(scores: AttachmentScores, *, gold: str, pred: str, exclude_punct: bool) -> str:
    """A readable two-column table (metric, value) with the sentence and word counts."""
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
    return "\n".join([*lines, "", *_NOTES])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scorer; returns the exit status (0 ok, 2 on unreadable or misaligned input)."""
    args = build_parser().parse_args(argv)
    try:
        scores = evaluate_files(args.gold, args.pred, exclude_punct=args.exclude_punct)
    except (OSError, ConlluError, EvaluationError, UnicodeDecodeError) as error:
        print(f"error: {_describe(error)}", file=sys.stderr)
        return 2
    if args.json:
        result = {"gold": args.gold, "pred": args.pred, "exclude_punct": args.exclude_punct}
        print(json.dumps(result | scores.to_dict(), indent=2))
    else:
        print(
            format_table(scores, gold=args.gold, pred=args.pred, exclude_punct=args.exclude_punct)
        )
    return 0


def _describe(error: Exception) -> str:
    if isinstance(error, OSError) and error.filename is not None:
        return f"{error.filename}: {error.strerror or error}"
    return str(error)


if __name__ == "__main__":
    sys.exit(main())
