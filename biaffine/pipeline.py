"""Raw text to the sentences a parser reads: the segmenter's tokens and sentences as CoNLL-U.

The segmenter (:class:`biaffine.segmenting.Segmenter`) classifies every character, the
torch-free front end (``rawtext``) turns the classes into documents, paragraphs, sentences,
tokens and words and writes them as CoNLL-U (``# newdoc``, ``# newpar``, ``# sent_id``, ``# text``,
``SpaceAfter=No``, multi-word token ranges), and the parser reads that CoNLL-U as it reads any
other: one path into the parser, whatever the input was.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import rawtext
from biaffine.data.conllu import Sentence, read_conllu
from biaffine.segmenting import Segmenter

__all__ = ["read_raw", "segmented"]


def segmented(segmenter: Segmenter, text: str, *, doc_id: str | None = None) -> list[Sentence]:
    """The sentences of ``text`` as the segmenter finds them, words only (no tags, no tree).

    Args:
        segmenter: a trained segmenter.
        text: the raw text (any length; paragraphs are separated by blank lines).
        doc_id: written as ``# newdoc id = ...`` (``# newdoc`` alone when None).

    Returns:
        One sentence per sentence found, numbered from 1 in ``# sent_id``; none for a text with
        no characters other than whitespace.
    """
    document = segmenter.segment(text)
    lines = "".join(rawtext.to_conllu(document, doc_id=doc_id))
    # The CoNLL-U reader refuses a file without sentences, which here is a valid empty text.
    return list(read_conllu(io.StringIO(lines))) if lines else []


def read_raw(source: str | os.PathLike[str], segmenter: Segmenter) -> list[Sentence]:
    """The sentences of a UTF-8 text file (``-``: standard input), segmented.

    Raises:
        ValueError: the file is not UTF-8 (one line naming the file, the line and the byte).
    """
    name = "<stdin>" if str(source) == "-" else str(source)
    data = sys.stdin.buffer.read() if name == "<stdin>" else Path(source).read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        problem = f"not UTF-8 text (byte {error.start}: {error.reason})"
        raise ValueError(f"{name}:{line}: {problem}") from None
    return segmented(segmenter, text)
