"""Decoding per-character classes (a segmenter's predictions) into a :class:`Document`.

The rules, in order:

1. A paragraph break (:mod:`rawtext.chars`) ends the paragraph, and so the sentence.
2. A class on a whitespace character is ignored.
3. A token starts at the first non-whitespace character after the previous token's end (or
   the paragraph's start) and ends at the next character whose class is not NONE. Whitespace
   never starts or ends a token, but a token may hold whitespace: the model, not the spaces,
   says where it ends, which is how Vietnamese tokens such as ``Tiếp theo`` come out whole.
4. A sentence ends at a SENTENCE_END or MWT_SENTENCE_END character, and at a paragraph's end.
5. Non-whitespace text after a paragraph's last labelled character is one more token (its
   trailing whitespace excluded), which ends the sentence.
6. A token ending at MWT_END or MWT_SENTENCE_END, or whose form ``always`` names (the tokens
   training always split, :meth:`rawtext.mwt.MwtExpander.is_always`), is split into words by
   ``expand``; a result of fewer than two words leaves a single-word token.

So every non-whitespace character lands in exactly one token, in order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .chars import paragraph_spans, space_mask
from .document import Document, Paragraph, Sentence, Token
from .labels import N_CLASSES, NONE, SENTENCE_END, is_mwt_class, is_sentence_end_class

Expand = Callable[[str], list[str]]
"""Splits a multi-word token's form into its syntactic words."""


def segment(
    text: str,
    labels: npt.ArrayLike,
    expand: Expand | None = None,
    *,
    always: Callable[[str], bool] | None = None,
) -> Document:
    """The document that per-character classes describe.

    Args:
        text: the input, exactly as given (spans index it; nothing is normalized).
        labels: int[len(text)], one class of :mod:`rawtext.labels` per character.
        expand: splits a multi-word token's form into words; None keeps it one word.
        always: whether a token is a multi-word token whatever its class says (rule 6).

    Returns:
        The Document; without paragraphs for a text that is empty or all whitespace.

    Raises:
        ValueError: labels not one integer per character, a class outside 0..N_CLASSES-1,
            or ``expand`` returning an empty or all-whitespace word.
    """
    classes = _checked(text, labels)
    spaces = space_mask(text)
    nonspace = np.flatnonzero(~spaces)  # [n_nonspace]
    ends = np.flatnonzero((classes != NONE) & ~spaces)  # [n_labelled], inclusive ends
    paragraphs = []
    for start, end in paragraph_spans(text):
        spans = _token_spans(classes, ends, nonspace, start, end)
        if spans is not None:
            paragraphs.append(Paragraph(_sentences(text, *spans, expand, always)))
    return Document(text, tuple(paragraphs))


def _checked(text: str, labels: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    array = np.asarray(labels)
    if array.shape != (len(text),):
        raise ValueError(f"labels have shape {array.shape}, expected ({len(text)},): one a char")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= N_CLASSES):
        bad = int(np.flatnonzero((array < 0) | (array >= N_CLASSES))[0])
        raise ValueError(f"labels[{bad}]={array[bad]} is not a class in 0..{N_CLASSES - 1}")
    return array.astype(np.uint8, copy=False)


def _token_spans(
    classes: npt.NDArray[np.uint8],
    ends: npt.NDArray[np.intp],
    nonspace: npt.NDArray[np.intp],
    start: int,
    end: int,
) -> tuple[list[int], list[int], list[int]] | None:
    """Starts, exclusive ends and classes of one paragraph's tokens; None if it is blank."""
    first, stop = np.searchsorted(ends, [start, end])
    token_ends = ends[first:stop] + 1  # [n_tokens]
    token_classes = classes[ends[first:stop]]
    last = np.searchsorted(nonspace, end) - 1
    if last < 0 or nonspace[last] < start:
        return None
    if not token_ends.size or nonspace[last] >= token_ends[-1]:
        token_ends = np.append(token_ends, nonspace[last] + 1)
        token_classes = np.append(token_classes, SENTENCE_END)
    previous = np.concatenate([[start], token_ends[:-1]])  # [n_tokens]
    token_starts = nonspace[np.searchsorted(nonspace, previous)]
    return token_starts.tolist(), token_ends.tolist(), token_classes.tolist()


def _sentences(
    text: str,
    starts: list[int],
    ends: list[int],
    classes: list[int],
    expand: Expand | None,
    always: Callable[[str], bool] | None,
) -> tuple[Sentence, ...]:
    sentences, tokens = [], []
    for start, end, label in zip(starts, ends, classes, strict=True):
        form = text[start:end]
        split = is_mwt_class(label) or (always is not None and always(form))
        words = _words(form, expand) if split else (form,)
        tokens.append(Token(start, end, form, words))
        if is_sentence_end_class(label):
            sentences.append(Sentence(tuple(tokens)))
            tokens = []
    if tokens:  # the paragraph's end ends the sentence
        sentences.append(Sentence(tuple(tokens)))
    return tuple(sentences)


def _words(form: str, expand: Expand | None) -> tuple[str, ...]:
    words = tuple(expand(form)) if expand is not None else ()
    if any(not word or word.isspace() for word in words):
        raise ValueError(f"expanding the token {form!r} gave a blank word: {list(words)}")
    return words if len(words) > 1 else (form,)
