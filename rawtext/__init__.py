"""Raw text in: per-character classes, the structure they decode to, and CoNLL-U out (no torch).

A segmenter (the torch model lives in ``biaffine``) gives each character of a text one class of
:mod:`rawtext.labels`: the last character of each token says that a token ends there, whether a
sentence ends with it and whether it is a multi-word token. :func:`labelled_documents` builds
those classes from a treebank for training; :func:`segment` decodes predicted classes into a
:class:`Document` (paragraphs, sentences, tokens with their character spans, words), which
:func:`to_conllu` writes out. :class:`MwtExpander` splits multi-word tokens into words.

Example::

    import rawtext

    document = rawtext.segment(text, labels, expand=None)  # labels: int[len(text)]
    lines = rawtext.to_conllu(document, doc_id="doc1", sent_id_prefix="doc1-")
"""

from .conllu_out import to_conllu
from .document import Document, Paragraph, Sentence, Token
from .labels import (
    CLASS_NAMES,
    MWT_END,
    MWT_SENTENCE_END,
    N_CLASSES,
    NONE,
    SENTENCE_END,
    TOKEN_END,
    LabelledText,
    corpus_text,
    labelled_corpus,
    labelled_documents,
)
from .mwt import MwtExpander
from .segment import Expand, segment, split_long
from .treebank import TreebankError, TreebankSentence, TreebankToken, read_sentences

__all__ = [
    "CLASS_NAMES",
    "MWT_END",
    "MWT_SENTENCE_END",
    "NONE",
    "N_CLASSES",
    "SENTENCE_END",
    "TOKEN_END",
    "Document",
    "Expand",
    "LabelledText",
    "MwtExpander",
    "Paragraph",
    "Sentence",
    "Token",
    "TreebankError",
    "TreebankSentence",
    "TreebankToken",
    "corpus_text",
    "labelled_corpus",
    "labelled_documents",
    "read_sentences",
    "segment",
    "split_long",
    "to_conllu",
]
