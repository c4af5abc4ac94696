"""Command line scorer: a predicted CoNLL-U file against the gold file.

The CoNLL 2018 shared task's table, whatever the prediction's tokenization: Tokens, Sentences,
Words, UPOS, XPOS, UFeats, AllTags, Lemmas, UAS, LAS, CLAS, MLAS and BLEX, as precision, recall
and F1 over words aligned by characters (``biaffine.alignment``). Where the prediction has the
gold words (gold tokenization), the attachment scores come first.

Example: ``python -m biaffine.evaluate gold.conllu pred.conllu [--exclude-punct] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from biaffine import cli
from biaffine.alignment import EndToEndScores, evaluate_end_to_end
from biaffine.cli import silence_closed_stdout
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.files import standard_input, standard_output
from biaffine.metrics import (
    GOLD_COLUMNS,
    AttachmentScores,
    Conll18Scores,
    Score,
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
_PUNCT_EXCLUDED_NOTES = (
    "LAS (full DEPREL) counts nmod:poss != nmod; the CoNLL 2018 scorer's LAS strips subtypes and",
    "  counts punctuation: its UAS and LAS are those of the CoNLL 2018 table here.",
    *_NOTES[2:],
)
_ALIGNED_NOTES = (
    "The prediction's tokenization is not the gold one: words are aligned by characters",
    "  (whitespace removed), as the CoNLL 2018 scorer aligns them; a HEAD is right when it",
    "  aligns to the gold HEAD. Attachment scores and exact match need gold tokenization.",
    _NOTES[-2],
    _NOTES[-1],
)


@dataclass(frozen=True, slots=True)
class FileEvaluation:
    """What :func:`evaluate_files` counts.

    Attributes:
        end_to_end: the CoNLL 2018 scorer's table over words aligned by characters.
        attachment: attachment scores, where the prediction has the gold words (else None).
        words: the CoNLL 2018 scores of the gold-tokenization path (``metrics.score_words``),
            equal to those of ``end_to_end``, where the prediction has the gold words.
    """

    end_to_end: EndToEndScores
    attachment: AttachmentScores | None = None
    words: Conll18Scores | None = None


def build_parser() -> argparse.ArgumentParser:
    """The command line interface of ``python -m biaffine.evaluate``."""
    parser = cli.ArgumentParser(
        prog="python -m biaffine.evaluate",
        description="Score a predicted CoNLL-U file against a gold one, as the CoNLL 2018 "
        "scorer does: words aligned by characters where the tokenization differs. Attachment "
        "scores (gold tokenization only) include punctuation unless --exclude-punct is given.",
    )
    parser.add_argument("gold", help="gold CoNLL-U file")
    parser.add_argument("pred", help="predicted CoNLL-U file ('-' reads standard input)")
    parser.add_argument(
        "--exclude-punct",
        action="store_true",
        help="leave words with gold UPOS PUNCT out of the attachment scores and exact match "
        "(gold tokenization only; the CoNLL 2018 scores always count punctuation)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def evaluate_files(gold: str, pred: str, *, exclude_punct: bool = False) -> FileEvaluation:
    """Scores of the predicted file ``pred`` against the gold file ``gold``.

    Args:
        gold: path of the gold CoNLL-U file; every HEAD and DEPREL must be valid.
        pred: path of the predicted CoNLL-U file, or ``-`` for standard input; its text
            without whitespace must be the gold file's, its tokenization may differ.
        exclude_punct: leave gold ``PUNCT`` words out of the attachment scores (see
            ``score_sentence``); the CoNLL 2018 scores ignore it.

    Returns:
        The CoNLL 2018 table, and the attachment scores where the prediction has the gold
        words (the same sentences, each with the same FORMs).

    Raises:
        OSError: if a file cannot be read.
        ConlluError: if a file is not valid CoNLL-U.
        EvaluationError: if the texts differ or the prediction has no trees.
    """
    gold_sentences = list(read_conllu(gold, require_trees=True))
    # Bytes: read_conllu decodes a binary stream strictly (a text one would take any bytes).
    closed = "the predicted file -: standard input is closed; give the file's path"
    pred_sentences = list(read_conllu(standard_input(closed) if pred == "-" else pred))
    end_to_end = evaluate_end_to_end(gold_sentences, pred_sentences)
    if not _same_words(gold_sentences, pred_sentences) or not _each_word_aligned(end_to_end):
        return FileEvaluation(end_to_end)
    evaluation = evaluate_corpus(gold_sentences, pred_sentences, exclude_punct=exclude_punct)
    return FileEvaluation(end_to_end, evaluation.attachment, evaluation.words)


def _same_words(gold: Sequence[Sentence], pred: Sequence[Sentence]) -> bool:
    return len(gold) == len(pred) and all(
        g.forms == p.forms for g, p in zip(gold, pred, strict=True)
    )


def _each_word_aligned(end_to_end: EndToEndScores) -> bool:
    """Whether the alignment paired every word, so each one with itself where the FORMs agree.

    The same FORMs do not always align: inside a multiword token a word keeps its spaces, but a
    plain word loses them (``giật mình`` -> ``giậtmình``), as the CoNLL 2018 scorer compares
    them. Gold ``giật mình`` as a plain word and the same word in a predicted multiword token
    align to nothing, and the gold-token path, pairing words by position, would count them.
    """
    words = end_to_end.words
    return words.correct == words.gold == words.system


def format_table(evaluation: FileEvaluation, *, gold: str, pred: str, exclude_punct: bool) -> str:
    """Readable tables: attachment scores (gold tokenization), then the CoNLL 2018 table."""
    scores, end_to_end = evaluation.attachment, evaluation.end_to_end
    if scores is None:
        table = _conll18_table(end_to_end.scores, end_to_end.aligned.annotated)
        return _aligned_table(end_to_end, table, gold, pred, exclude_punct)
    # UAS and LAS are in the attachment table already (the scorer's LAS is the universal one),
    # unless it leaves punctuation out, which the scorer's never do.
    kept = end_to_end.scores.items()
    rows = {name: s for name, s in kept if exclude_punct or name not in ("UAS", "LAS")}
    table = _conll18_table(rows, end_to_end.aligned.annotated)
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
    notes = _PUNCT_EXCLUDED_NOTES if exclude_punct else _NOTES
    return "\n".join([*lines, "", *table, "", *notes])


def _aligned_table(
    end_to_end: EndToEndScores, table: list[str], gold: str, pred: str, exclude_punct: bool
) -> str:
    sentences, words = end_to_end.sentences, end_to_end.words
    lines = [
        f"gold:       {gold}",
        f"prediction: {pred}",
        f"sentences:  {sentences.gold} gold, {sentences.system} predicted",
        f"words:      {words.gold} gold, {words.system} predicted, {words.correct} aligned",
        "",
        *table,
        "",
        *_ALIGNED_NOTES,
    ]
    if exclude_punct:
        lines.append("--exclude-punct changes nothing here: it applies to attachment scores only.")
    return "\n".join(lines)


def _conll18_table(scores: Mapping[str, Score], annotated: frozenset[str]) -> list[str]:
    lines = [
        f"{'CoNLL 2018 metric':<24}{'P':>8}{'R':>8}{'F1':>8}",
        f"{'-' * 24}{'-' * 24}",
    ]
    for name, score in scores.items():
        lines.append(f"{name:<24}{score.precision:>8.2f}{score.recall:>8.2f}{score.f1:>8.2f}")
    missing = [name for name in GOLD_COLUMNS if name not in annotated]
    if missing:
        names = ", ".join(name.upper() for name in missing)
        lines.append(f"the gold file leaves {names} empty ('_'): scores reading them mean little")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scorer; returns the exit status (0 ok, 2 on unreadable or misaligned input).

    141 (128 + SIGPIPE), quietly, when the reader of standard output closed it early
    (``| head``).
    """
    args = build_parser().parse_args(argv)
    try:
        # Before the work: >&- gave a traceback after it; >> PRED appended the scores to it.
        standard_output(_NO_OUTPUT, inputs=[args.gold, args.pred])
        evaluation = evaluate_files(args.gold, args.pred, exclude_punct=args.exclude_punct)
    except (OSError, ValueError) as error:  # ConlluError, EvaluationError, UnicodeDecodeError
        cli.print_error(f"error: {cli.describe(error)}")
        return 2
    if args.json:
        report = json.dumps(_json(evaluation, args), indent=2)
    else:
        report = format_table(
            evaluation, gold=args.gold, pred=args.pred, exclude_punct=args.exclude_punct
        )
    return _print_report(report)


_NO_OUTPUT = "standard output is closed: nowhere to print the scores"


def _print_report(report: str) -> int:
    """Print ``report``; 0, 128 + SIGPIPE when the reader closed the pipe, or 2 on a full disk.

    ``evaluate ... | head -3`` closes the pipe early: Unix tools end then without a word, and
    so does this one, not with a BrokenPipeError traceback.
    """
    try:
        print(report)
        sys.stdout.flush()
    except BrokenPipeError:
        return silence_closed_stdout()
    except OSError as error:  # > /dev/full, a full disk: the scores did not reach the output
        cli.print_error(f"error: standard output: {error.strerror}")
        return 2
    return 0


def _json(evaluation: FileEvaluation, args: argparse.Namespace) -> dict[str, object]:
    """The files, the tokenization, the end-to-end table and, with gold tokenization, the rest.

    The attachment scores and the ``conll18`` scores keep the keys they had before the
    end-to-end table came (``end_to_end``).
    """
    gold_tokenization = evaluation.attachment is not None and evaluation.words is not None
    result: dict[str, object] = {
        "gold": args.gold,
        "pred": args.pred,
        "exclude_punct": args.exclude_punct,
        "tokenization": "gold" if gold_tokenization else "aligned",
    }
    if evaluation.attachment is not None and evaluation.words is not None:
        result |= evaluation.attachment.to_dict() | {"conll18": evaluation.words.to_dict()}
    return result | {"end_to_end": evaluation.end_to_end.to_dict()}


if __name__ == "__main__":
    sys.exit(main())
