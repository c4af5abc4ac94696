r"""CoNLL-U lines for a segmented :class:`Document`: only ID, FORM and MISC filled, ``_`` elsewhere.

``# text`` holds exactly the input characters from the sentence's first token's start to its
last token's end, except that each TAB and each line-breaking character (``\n``, ``\r``,
``\v``, ``\f``, U+001C..U+001E, U+0085, U+2028, U+2029: what ends a line for
:meth:`str.splitlines`) becomes one space: a CoNLL-U line cannot hold them. A token that
:func:`rawtext.segment` found holds none (it ends a token at one); in a FORM or word built
otherwise, each becomes a space too. ``SpaceAfter=No`` is written where the character after a
token is not whitespace.
"""

from __future__ import annotations

from collections.abc import Iterator

from .chars import writable
from .document import Document, Token

_EMPTY = "\t".join(["_"] * 7)
"""LEMMA, UPOS, XPOS, FEATS, HEAD, DEPREL, DEPS: unknown before tagging and parsing."""


def to_conllu(
    document: Document, *, doc_id: str | None = None, sent_id_prefix: str = "", first: int = 1
) -> Iterator[str]:
    """The document as CoNLL-U, one line at a time, each ending with a line break.

    A document without sentences gives no line at all (valid, empty CoNLL-U).

    Args:
        document: the segmented document.
        doc_id: written as ``# newdoc id = ...`` before the first sentence (``# newdoc``
            alone when None).
        sent_id_prefix: sentence *k* (from 1, counted over the document) gets
            ``# sent_id = {sent_id_prefix}{k}``.
        first: the number of the document's first sentence: a later piece of a text
            (:func:`rawtext.stream.paragraph_pieces`) numbers on from the pieces before it,
            and only sentence 1 opens the document with ``# newdoc``.

    Returns:
        A lazy iterator of lines; sentences are each followed by a blank line.

    Raises:
        ValueError: ``first`` is no whole number of at least 1 (``# sent_id = 0`` and no
            ``# newdoc`` were written), or ``doc_id`` is empty (``# newdoc id =`` with no id).
    """
    if isinstance(first, bool) or not isinstance(first, int) or first < 1:
        raise ValueError(f"first={first!r} must be a whole number >= 1")
    if doc_id is not None and not doc_id.strip():
        raise ValueError(f"doc_id={doc_id!r} is empty: give None for '# newdoc' alone")
    return _lines(document, doc_id, sent_id_prefix, first)


def _lines(
    document: Document, doc_id: str | None, sent_id_prefix: str, first: int
) -> Iterator[str]:
    """:func:`to_conllu`'s lines, its arguments checked."""
    text = document.text
    number = first - 1
    for paragraph in document.paragraphs:
        for k, sentence in enumerate(paragraph.sentences):
            number += 1
            if number == 1:
                yield "# newdoc\n" if doc_id is None else f"# newdoc id = {writable(doc_id)}\n"
            if k == 0:
                yield "# newpar\n"
            yield f"# sent_id = {writable(sent_id_prefix)}{number}\n"
            yield f"# text = {writable(text[sentence.start : sentence.end])}\n"
            yield from _token_lines(text, sentence.tokens)
            yield "\n"


def _token_lines(text: str, tokens: tuple[Token, ...]) -> Iterator[str]:
    word_id = 0
    for token in tokens:
        glued = token.end < len(text) and not text[token.end].isspace()
        misc = "SpaceAfter=No" if glued else "_"
        if token.is_mwt:
            span = f"{word_id + 1}-{word_id + len(token.words)}"
            yield f"{span}\t{writable(token.form)}\t{_EMPTY}\t{misc}\n"
            for word in token.words:
                word_id += 1
                yield f"{word_id}\t{writable(word)}\t{_EMPTY}\t_\n"
        else:
            word_id += 1
            yield f"{word_id}\t{writable(token.form)}\t{_EMPTY}\t{misc}\n"
