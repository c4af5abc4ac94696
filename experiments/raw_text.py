r"""Raw text to full CoNLL-U on a UD test set, scored end to end as the CoNLL 2018 shared task did.

The test file's raw text is rebuilt as UD's conllu_to_text does (``rawtext.labelled_documents``:
documents and paragraphs separated by blank lines), given to the pipeline (segmenter, then the
parser with every column it tags), and the output is scored against the gold file with words
aligned by characters (``biaffine.alignment``). With ``--spacy LANG`` a rule-based front end
replaces the segmenter for a second row: spaCy's ``blank(LANG)`` tokenizer with its
``sentencizer`` (no statistical model, no multi-word tokens), on each paragraph, followed by
the same parser. Also timed (best of ``--rounds``): the pipeline on the raw text against the
parser alone on the gold tokenization (the gold file's words, same columns).

Usage::

    python experiments/raw_text.py --treebank UD_English-EWT --segmenter seg/best.pt \\
        --parser run/best.pt [--spacy en] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from biaffine.alignment import EndToEndScores, evaluate_end_to_end
from biaffine.api import Parser
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.pipeline import segmented
from rawtext import Document, Paragraph, Token, labelled_documents, to_conllu
from rawtext import Sentence as TextSentence
from rawtext.chars import paragraph_spans

COLUMNS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")
COLUMNS += ("UAS", "LAS", "CLAS", "MLAS", "BLEX")


def test_file(root: Path, treebank: str) -> Path:
    """The treebank's test file (named as conf/data names it, or the one ``*-ud-test``)."""
    return next((root / treebank).glob("*-ud-test.conllu"))


def raw_text(gold: Path) -> str:
    """The gold file's text: its documents, each ending in a line break, one blank line apart."""
    return "\n".join(document.text for document in labelled_documents(gold))


def spacy_sentences(text: str, language: str) -> list[Sentence]:
    """The text split by spaCy's blank tokenizer and rule-based sentencizer, as CoNLL-U.

    Paragraph by paragraph (a blank line always ends a sentence, as for the segmenter).
    """
    import spacy  # the baseline's own dependency (the bench extra), imported only here

    nlp = spacy.blank(language)
    nlp.add_pipe("sentencizer")
    paragraphs = []
    for start, end in paragraph_spans(text):
        sentences = [
            TextSentence(tuple(_token(start, t) for t in sentence if not t.is_space))
            for sentence in nlp(text[start:end]).sents
        ]
        sentences = [s for s in sentences if s.tokens]
        if sentences:
            paragraphs.append(Paragraph(tuple(sentences)))
    lines = "".join(to_conllu(Document(text, tuple(paragraphs))))
    return list(read_conllu(io.StringIO(lines))) if lines else []


def _token(offset: int, token: object) -> Token:
    start = offset + token.idx
    return Token(start, start + len(token.text), token.text, (token.text,))


def scored(parser: Parser, sentences: list[Sentence], gold: Path) -> EndToEndScores:
    """Tag and parse the sentences; score them against the gold file end to end."""
    trees = parser.parse(sentences, columns=["all"], overwrite=True)
    return evaluate_end_to_end(read_conllu(gold), [tree.sentence for tree in trees])


def row(name: str, scores: EndToEndScores) -> dict[str, float | str]:
    """The F1 of every reported score (a dash where the gold file does not annotate it)."""
    reported = scores.reported()
    return {"system": name} | {
        column: round(reported[column].f1, 2) if column in reported else "-" for column in COLUMNS
    }


def best_seconds(run: Callable[[], object], rounds: int) -> float:
    """The shortest of ``rounds`` runs of ``run()``."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    """Score the pipeline (and the spaCy front end), time it, print Markdown rows."""
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--treebank", required=True)
    options.add_argument("--segmenter", type=Path, required=True)
    options.add_argument("--parser", type=Path, required=True)
    options.add_argument("--spacy", default=None, help="a spaCy language code, e.g. en")
    options.add_argument("--threads", type=int, default=2)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--root", type=Path, default=os.environ.get("UD_ROOT"))
    options.add_argument("--json", type=Path, default=None)
    args = options.parse_args()
    gold = test_file(args.root, args.treebank)
    text = raw_text(gold)
    parser = Parser.load(args.parser, threads=args.threads, segmenter=args.segmenter)
    found = segmented(parser.segmenter, text)
    rows = [row(f"{args.treebank}: ours", scored(parser, found, gold))]
    if args.spacy:
        baseline = spacy_sentences(text, args.spacy)
        rows.append(
            row(f"{args.treebank}: spaCy blank + sentencizer", scored(parser, baseline, gold))
        )
    gold_words = list(read_conllu(gold))
    raw_seconds = best_seconds(lambda: parser.parse(text=text), args.rounds)
    segment_seconds = best_seconds(lambda: parser.segmenter.segment(text), args.rounds)
    gold_seconds = best_seconds(lambda: parser.parse(gold_words, columns=["all"]), args.rounds)
    timing = {
        "characters": len(text),
        "segmenter_chars_per_s": round(len(text) / segment_seconds),
        "raw_pipeline_s": round(raw_seconds, 3),
        "gold_tokenization_s": round(gold_seconds, 3),
        "raw_speed_vs_gold": round(gold_seconds / raw_seconds, 3),
        "threads": args.threads,
    }
    print("| " + " | ".join(["system", *COLUMNS]) + " |")
    for found_row in rows:
        print("| " + " | ".join(str(v) for v in found_row.values()) + " |")
    print(json.dumps(timing))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "timing": timing}, indent=1) + "\n")


if __name__ == "__main__":
    main()
