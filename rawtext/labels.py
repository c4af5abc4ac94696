"""Raw text rebuilt from a treebank, with one class per character: the segmenter's training data.

The text is rebuilt as UD's own ``tools/conllu_to_text.pl`` does, from the tokens rather than
from ``# text``: one text per document (``# newdoc``; a file without it is one document),
paragraphs (``# newpar``, or ``NewPar=Yes`` in a token's MISC) separated by a blank line, each
token followed by one space unless its MISC (the range line's, for a multi-word token) says
``SpaceAfter=No``, so sentences follow each other the same way. Unlike the script, lines are
never wrapped at 80 characters, no space is left before a line break, and a non-empty document
ends with one line break.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from .treebank import TreebankSentence, TreebankToken, read_sentences

NONE = 0
"""Not the last character of a token (or whitespace)."""
TOKEN_END = 1
"""The last character of a single-word token inside a sentence."""
SENTENCE_END = 2
"""The last character of a single-word token that ends its sentence."""
MWT_END = 3
"""The last character of a multi-word token inside a sentence."""
MWT_SENTENCE_END = 4
"""The last character of a multi-word token that ends its sentence."""
N_CLASSES = 5
CLASS_NAMES = ("NONE", "TOKEN_END", "SENTENCE_END", "MWT_END", "MWT_SENTENCE_END")

PARAGRAPH_BREAK = "\n\n"


def end_class(*, mwt: bool, sentence_end: bool) -> int:
    """The class of a token's last character."""
    return (MWT_END if mwt else TOKEN_END) + int(sentence_end)


def is_mwt_class(label: int) -> bool:
    """True for MWT_END and MWT_SENTENCE_END."""
    return label >= MWT_END


def is_sentence_end_class(label: int) -> bool:
    """True for SENTENCE_END and MWT_SENTENCE_END."""
    return label in (SENTENCE_END, MWT_SENTENCE_END)


@dataclass(frozen=True)
class LabelledText:
    """One document's raw text and the class of each of its characters.

    Attributes:
        text: the document's characters.
        labels: uint8[len(text)], one of the classes above per character (NONE except at the
            last character of each token).
    """

    text: str
    labels: npt.NDArray[np.uint8]


def labelled_documents(source: str | Path | TextIO) -> list[LabelledText]:
    """The documents of a CoNLL-U file as raw text with per-character classes.

    Args:
        source: a path, or an open text file.

    Returns:
        One LabelledText per document, in file order (none for a file without tokens).

    Raises:
        TreebankError: a malformed line.
    """
    documents: list[LabelledText] = []
    builder = _Builder()
    for sentence in read_sentences(source):
        if sentence.new_doc and builder.pieces:
            documents.append(builder.finish())
            builder = _Builder()
        elif sentence.new_par:
            builder.paragraph_break()
        builder.add_sentence(sentence.tokens)
    if builder.pieces:
        documents.append(builder.finish())
    return documents


def labelled_corpus(source: str | Path) -> LabelledText:
    """A treebank file's whole raw text, its documents one blank line apart, with its classes.

    The text is what a user would give the segmenter and what end-to-end scores are measured
    on (the documents' texts as :func:`labelled_documents` rebuilds them); the line between two
    documents is class NONE.
    """
    documents = labelled_documents(source)
    text = "\n".join(document.text for document in documents)
    parts = [part for d in documents for part in (d.labels, np.zeros(1, np.uint8))][:-1]
    return LabelledText(text, np.concatenate(parts) if parts else np.zeros(0, np.uint8))


def corpus_text(source: str | Path) -> str:
    """The text of :func:`labelled_corpus`: a treebank file's whole raw text."""
    return labelled_corpus(source).text


def sentence_surface(sentence: TreebankSentence) -> str:
    """A sentence's text rebuilt from its tokens and ``SpaceAfter`` (what ``# text`` should say).

    A ``NewPar=Yes`` inside the sentence is ignored here (the token is joined as usual).
    """
    parts = []
    for token in sentence.tokens:
        parts += [token.form, " " if token.space_after else ""]
    return "".join(parts[:-1])


@dataclass
class _Builder:
    """One document's text built piece by piece, with the end position and class of each token."""

    pieces: list[str] = field(default_factory=list)
    size: int = 0
    ends: list[tuple[int, int]] = field(default_factory=list)
    separator: str = ""  # what goes before the next token

    def paragraph_break(self) -> None:
        if self.pieces:
            self.separator = PARAGRAPH_BREAK

    def add_sentence(self, tokens: Iterable[TreebankToken]) -> None:
        tokens = list(tokens)
        for k, token in enumerate(tokens):
            if token.new_par:
                self.paragraph_break()
            self._append(self.separator)
            self._append(token.form)
            last = k == len(tokens) - 1
            self.ends.append((self.size - 1, end_class(mwt=token.is_mwt, sentence_end=last)))
            self.separator = " " if token.space_after else ""

    def _append(self, piece: str) -> None:
        if piece:
            self.pieces.append(piece)
            self.size += len(piece)

    def finish(self) -> LabelledText:
        text = "".join(self.pieces) + "\n"
        labels = np.zeros(len(text), dtype=np.uint8)
        for position, label in self.ends:
            labels[position] = label
        return LabelledText(text, labels)
