"""Raw text to the sentences a parser reads: the segmenter's tokens and sentences as CoNLL-U.

The segmenter (:class:`biaffine.segmenting.Segmenter`, or the ONNX one of ``runtime=onnx``:
:class:`biaffine.segmenting.onnxrun.OnnxSegmenter`) classifies every character, the
torch-free front end (``rawtext``) turns the classes into documents, paragraphs, sentences,
tokens and words and writes them as CoNLL-U (``# newdoc``, ``# newpar``, ``# sent_id``, ``# text``,
``SpaceAfter=No``, multi-word token ranges), and the parser reads that CoNLL-U as it reads any
other: one path into the parser, whatever the input was.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Protocol

import rawtext
from biaffine.data.conllu import Sentence, conllu_of_lines, read_conllu, read_text
from biaffine.files import standard_input

__all__ = [
    "INPUT_FORMATS",
    "MAX_SENTENCE_WORDS",
    "TextSegmenter",
    "read_raw",
    "segmented",
    "sentences_in",
]

INPUT_FORMATS = ("conllu", "text", "raw")
"""What :func:`sentences_in` reads: CoNLL-U, one pre-tokenized sentence per line, raw text."""

MAX_SENTENCE_WORDS = 1000
"""The most words of one sentence that ``predict.py`` parses, as UDPipe 2 and ``serve.py``.

A sentence's scores grow with the square of its length (arc scores n², label scores n² times
the labels): at 1000 words they take about 0.2 GB, at 40,000 words the arc scores alone 6.4 GB.
Raw text's longer sentences are cut into pieces (:func:`segmented`); a longer sentence of
CoNLL-U or ``text`` input is refused (:func:`biaffine.predict_options.read_sentences`).
"""


class TextSegmenter(Protocol):
    """What this module reads of a segmenter (torch's or ONNX Runtime's): no torch here."""

    def segment(self, text: str) -> rawtext.Document:
        """``text`` as documents of paragraphs, sentences, tokens and words."""
        ...


def segmented(segmenter: TextSegmenter, text: str, *, doc_id: str | None = None) -> list[Sentence]:
    """The sentences of ``text`` as the segmenter finds them, words only (no tags, no tree).

    Args:
        segmenter: a trained segmenter.
        text: the raw text (any length; paragraphs are separated by blank lines).
        doc_id: written as ``# newdoc id = ...`` (``# newdoc`` alone when None).

    Returns:
        One sentence per sentence found, numbered from 1 in ``# sent_id``, a sentence of more
        than :data:`MAX_SENTENCE_WORDS` words cut into pieces
        (:func:`rawtext.split_long`); none for a text with no characters other than whitespace.
    """
    found = segmenter.segment(text.removeprefix("\ufeff"))  # a byte order mark is no text
    document = rawtext.split_long(found, MAX_SENTENCE_WORDS)
    lines = list(rawtext.to_conllu(document, doc_id=doc_id))
    # The CoNLL-U reader refuses a file without sentences, which here is a valid empty text.
    return list(conllu_of_lines(lines, "<segmented text>")) if lines else []


def read_raw(source: str | os.PathLike[str], segmenter: TextSegmenter) -> list[Sentence]:
    """The sentences of a UTF-8 text file (``-``: standard input), segmented.

    Raises:
        ValueError: the file is not UTF-8 (one line naming the file, the line and the byte).
    """
    name = "<stdin>" if str(source) == "-" else str(source)
    data = standard_input().read() if name == "<stdin>" else Path(source).read_bytes()
    try:
        # Not utf-8-sig: segmented() drops the one byte order mark, and a second one is text.
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[: error.start]
        # Lines end at CRLF, CR or LF, as the segmenter reads them (rawtext.chars.as_line_feeds).
        line = before.count(b"\n") + before.count(b"\r") - before.count(b"\r\n") + 1
        problem = f"not UTF-8 text (byte {error.start}: {error.reason})"
        raise ValueError(f"{name}:{line}: {problem}") from None
    return segmented(segmenter, text)


def sentences_in(
    text: str, input_format: str, segmenter: TextSegmenter | None, *, name: str = "<input>"
) -> list[Sentence]:
    """The sentences of a text held in memory, read as ``predict.py format=...`` reads a file.

    Args:
        text: the whole input.
        input_format: one of :data:`INPUT_FORMATS`.
        segmenter: the segmenter that ``raw`` needs (unused otherwise).
        name: the input's name in error messages (``NAME:LINE: problem``).

    Raises:
        ValueError: an unknown format, or ``raw`` without a segmenter.
        biaffine.data.conllu.ConlluError: malformed CoNLL-U, or no sentence in ``text`` format.
    """
    if input_format == "raw":
        if segmenter is None:
            raise ValueError("raw text needs a segmenter")
        return segmented(segmenter, text)
    if input_format not in INPUT_FORMATS:
        raise ValueError(f"format={input_format!r}; expected one of {', '.join(INPUT_FORMATS)}")
    stream = io.StringIO(text, newline="\n")  # no newline translation: bytes come back as read
    stream.name = name
    return list(read_text(stream) if input_format == "text" else read_conllu(stream))
