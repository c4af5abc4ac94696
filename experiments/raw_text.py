r"""Raw text to full CoNLL-U on a UD test set, scored end to end as the CoNLL 2018 shared task did.

The test file's raw text is rebuilt as UD's conllu_to_text does (``rawtext.labelled_documents``:
documents and paragraphs separated by blank lines), given to the pipeline (segmenter, then the
parser with every column it tags), and the output is scored against the gold file with words
aligned by characters (``biaffine.alignment``). With ``--spacy LANG`` a rule-based front end
replaces the segmenter for a second row: spaCy's ``blank(LANG)`` tokenizer with its
``sentencizer`` (no statistical model, no multi-word tokens), on each paragraph, followed by
the same parser. With ``--gold-sentence-ends`` a row more keeps the segmenter's tokens but
ends sentences where the gold file does (and nowhere else): what perfect sentence splitting
would be worth. Also timed (best of ``--rounds``): the pipeline on the raw text against the
parser alone on the gold tokenization (the gold file's words, same columns).

Usage::

    python experiments/raw_text.py --treebank UD_English-EWT --segmenter seg/best.pt \\
        [--parser run/best.pt] [--spacy en] [--gold-sentence-ends] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from biaffine.alignment import EndToEndScores, evaluate_end_to_end
from biaffine.api import Parser
from biaffine.cli import report_user_errors
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.pipeline import segmented
from biaffine.runtime import best_seconds, set_threads
from biaffine.segmenting import Segmenter
from rawtext import Document, LabelledText, Paragraph, Token, labelled_corpus, to_conllu
from rawtext import Sentence as TextSentence
from rawtext.chars import paragraph_spans
from rawtext.labels import MWT_END, MWT_SENTENCE_END, SENTENCE_END, TOKEN_END
from rawtext.mwt import segment_with

COLUMNS = ("Tokens", "Sentences", "Words", "UPOS", "XPOS", "UFeats", "AllTags", "Lemmas")
COLUMNS += ("UAS", "LAS", "CLAS", "MLAS", "BLEX")


def test_file(root: Path, treebank: str) -> Path:
    """The treebank's test file, the one ``*-ud-test.conllu`` of its folder."""
    return next((root / treebank).glob("*-ud-test.conllu"))


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


def with_sentence_ends(found: npt.NDArray[np.uint8], gold: npt.NDArray[np.uint8]) -> np.ndarray:
    """The segmenter's classes ``found`` with the sentence ends of the ``gold`` classes.

    Tokens and multi-word tokens stay as found; a sentence ends exactly where a gold sentence
    does (a token end is added there if the segmenter had none).
    """
    ends = np.isin(gold, (SENTENCE_END, MWT_SENTENCE_END))
    mwt = np.isin(found, (MWT_END, MWT_SENTENCE_END))
    classes = np.where(found > 0, np.where(mwt, MWT_END, TOKEN_END), found)
    classes[ends] = np.where(mwt[ends], MWT_SENTENCE_END, SENTENCE_END)
    return classes.astype(np.uint8)


class GoldSentenceEnds:
    """A segmenter's tokens with the sentence ends of a gold file's corpus text."""

    def __init__(self, segmenter: Segmenter, gold: LabelledText) -> None:
        """Tokens come from ``segmenter``, sentence ends from ``gold`` (``labelled_corpus``)."""
        self.segmenter, self.labels, self.mwt = segmenter, gold.labels, segmenter.mwt

    def segment(self, text: str) -> Document:
        """As ``Segmenter.segment``; ``text`` must be the gold file's corpus text."""
        if len(text) != len(self.labels):
            raise ValueError("GoldSentenceEnds segments its gold file's corpus text only")
        classes = with_sentence_ends(self.segmenter.classes(text), self.labels)
        return segment_with(text, classes, self.mwt)

    def segment_stream(
        self, chunks: Iterable[str], *, interactive: bool = False
    ) -> Iterator[Document]:
        """:meth:`segment` of the whole text (the gold file's): one document."""
        yield self.segment("".join(chunks))


def _token(offset: int, token: object) -> Token:
    start = offset + token.idx
    return Token(start, start + len(token.text), token.text, (token.text,))


def scored(parser: Parser | None, sentences: list[Sentence], gold: Path) -> EndToEndScores:
    """Tag and parse the sentences; score them against the gold file end to end.

    Without a parser only the segmentation is scored: the scorer reads trees, so each sentence
    gets a placeholder one (every word on the first), and only Tokens, Sentences and Words
    mean anything (:func:`row` reports only those).
    """
    if parser is None:
        system = [s.with_tree([0] + [1] * (len(s) - 1), ["dep"] * len(s)) for s in sentences]
    else:
        trees = parser.parse(sentences, columns=["all"], overwrite=True)
        system = [tree.sentence for tree in trees]
    return evaluate_end_to_end(read_conllu(gold), system)


def row(name: str, scores: EndToEndScores, *, parsed: bool) -> dict[str, float | str]:
    """The F1 of every reported score by column name.

    A dash where the gold file does not annotate the column, and for everything but the
    segmentation when nothing was parsed.
    """
    reported = scores.reported()
    shown = COLUMNS if parsed else COLUMNS[:3]
    return {"system": name} | {
        column: round(reported[column].f1, 2) if column in reported and column in shown else "-"
        for column in COLUMNS
    }


def pipeline_timing(
    parser: Parser, text: str, gold_words: list[Sentence], rounds: int
) -> dict[str, float]:
    """Seconds of the whole pipeline on the raw text against the parser on the gold words."""
    raw_seconds = best_seconds(lambda: parser.parse(text=text), rounds)
    gold_seconds = best_seconds(lambda: parser.parse(gold_words, columns=["all"]), rounds)
    return {
        "raw_pipeline_s": round(raw_seconds, 3),
        "gold_tokenization_s": round(gold_seconds, 3),
        "raw_speed_vs_gold": round(gold_seconds / raw_seconds, 3),
    }


def main() -> None:
    """Score the pipeline (and the spaCy front end), time it, print Markdown rows."""
    os.environ.setdefault("ROOTPARSE_COMPILE", "foreground")
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--treebank", required=True)
    options.add_argument("--segmenter", type=Path, required=True)
    options.add_argument("--parser", type=Path, default=None, help="none: segmentation only")
    options.add_argument("--spacy", default=None, help="a spaCy language code, e.g. en")
    options.add_argument("--gold-sentence-ends", action="store_true", help="a row with them")
    options.add_argument("--threads", type=int, default=2)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--root", type=Path, default=os.environ.get("UD_ROOT"))
    options.add_argument("--json", type=Path, default=None)
    args = options.parse_args()
    gold = test_file(args.root, args.treebank)
    corpus = labelled_corpus(gold)
    text = corpus.text
    parser = None
    if args.parser is not None:
        parser = Parser.load(args.parser, threads=args.threads, segmenter=args.segmenter)
        segmenter = parser.segmenter  # loaded once, the one the pipeline uses
    else:
        set_threads(args.threads)
        segmenter = Segmenter.load(args.segmenter)
    systems = {"ours": segmented(segmenter, text)}
    if args.gold_sentence_ends:
        oracle = GoldSentenceEnds(segmenter, corpus)
        systems["ours, gold sentence ends"] = segmented(oracle, text)
    if args.spacy:
        systems["spaCy blank + sentencizer"] = spacy_sentences(text, args.spacy)
    rows = [
        row(f"{args.treebank}: {name}", scored(parser, found, gold), parsed=parser is not None)
        for name, found in systems.items()
    ]
    segment_seconds = best_seconds(lambda: segmenter.segment(text), args.rounds)
    timing = {
        "characters": len(text),
        "segmenter_chars_per_s": round(len(text) / segment_seconds),
        "threads": args.threads,
    }
    if parser is not None:
        timing |= pipeline_timing(parser, text, list(read_conllu(gold)), args.rounds)
    print("| " + " | ".join(["system", *COLUMNS]) + " |")
    for found_row in rows:
        print("| " + " | ".join(str(v) for v in found_row.values()) + " |")
    print(json.dumps(timing))
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "timing": timing}, indent=1) + "\n")


if __name__ == "__main__":
    report_user_errors(main)
