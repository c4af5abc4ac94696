"""Decoding per-character classes (a segmenter's predictions) into a :class:`Document`.

The rules, in order:

1. A paragraph break (:mod:`rawtext.chars`) ends the paragraph, and so the sentence.
2. A TAB or line-breaking character (:data:`rawtext.chars.UNWRITABLE`) ends a token, so that
   no FORM holds one. A class on a whitespace character moves to the paragraph's last
   non-whitespace character before it (a model may put the sentence end on the CR of a CRLF
   rather than on the full stop): that character ends a sentence if either class says so, and
   a multi-word token if its own class says so (if it has none, if the moved class does). A
   class on whitespace before a paragraph's first non-whitespace character is ignored. A class
   inside a character of several code points (a combining mark after its letter, an emoji
   joined by U+200D) moves to the character's last code point (:func:`rawtext.chars.joins`),
   merged in the same way.
3. A token starts at the first non-whitespace character after the previous token's end (or
   the paragraph's start) and ends at the next character whose class is not NONE. Whitespace
   never starts or ends a token, but a token may hold spaces: the model, not the spaces,
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

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from .chars import (
    FIRST_EXTENDER,
    codes,
    flag_openers,
    joins,
    paragraph_spans,
    space_mask,
    unwritable_mask,
)
from .document import Document, Paragraph, Sentence, Token
from .labels import (
    MWT_END,
    MWT_SENTENCE_END,
    N_CLASSES,
    NONE,
    SENTENCE_END,
    TOKEN_END,
    is_mwt_class,
    is_sentence_end_class,
)

Expand = Callable[[str], list[str]]
"""Splits a multi-word token's form into its syntactic words."""

_SENTENCE_ENDS = (SENTENCE_END, MWT_SENTENCE_END)


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
    spaces = space_mask(text)
    nonspace = np.flatnonzero(~spaces)  # [n_nonspace]
    bounds = paragraph_spans(text)
    classes = _normalized(text, labels, spaces, bounds)
    ends = np.flatnonzero(classes != NONE)  # [n_labelled], inclusive ends
    paragraphs = []
    for start, end in bounds:
        spans = _token_spans(classes, ends, nonspace, start, end)
        if spans is not None:
            paragraphs.append(Paragraph(_sentences(text, *spans, expand, always)))
    return Document(text, tuple(paragraphs))


def normalized(text: str, labels: npt.ArrayLike) -> npt.NDArray[np.uint8]:
    """The classes :func:`segment` reads ``labels`` as: rule 2 applied, none on whitespace.

    Every class on whitespace has moved to the character before it (or been dropped before a
    paragraph's first one), and every class inside a character of several code points to its
    last one; a TAB or line break has ended a token. ``segment(text, normalized(text, labels))``
    is ``segment(text, labels)``: a caller that changes classes (a sentence model choosing the
    sentence ends again) changes these, and none is left where it was moved from.

    Raises:
        ValueError: as :func:`segment`, for labels that are not one class per character.
    """
    return _normalized(text, labels, space_mask(text), paragraph_spans(text))


def _normalized(
    text: str,
    labels: npt.ArrayLike,
    spaces: npt.NDArray[np.bool_],
    bounds: list[tuple[int, int]],
) -> npt.NDArray[np.uint8]:
    starts = np.array([start for start, _ in bounds])  # [n_paragraphs]
    classes = _off_whitespace(_checked(text, labels), spaces, unwritable_mask(text), starts)
    return _whole_characters(text, classes)


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


def _off_whitespace(
    classes: npt.NDArray[np.uint8],
    spaces: npt.NDArray[np.bool_],
    unwritable: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.intp],
) -> npt.NDArray[np.uint8]:
    """Rule 2: the classes with those on whitespace merged into the character before them.

    None is left on whitespace: one left there was moved forward again by
    :func:`_whole_characters` onto a combining mark after a line break.
    """
    classes = np.where(unwritable & (classes == NONE), TOKEN_END, classes).astype(np.uint8)
    nonspace = np.flatnonzero(~spaces)  # [n_nonspace]
    moved = np.flatnonzero(spaces & (classes != NONE))  # [n_moved]
    before = np.searchsorted(nonspace, moved) - 1  # [n_moved], -1: none before
    paragraph = starts[np.searchsorted(starts, moved, side="right") - 1]  # [n_moved]
    target = nonspace[np.maximum(before, 0)] if nonspace.size else before  # [n_moved]
    inside = (before >= 0) & (target >= paragraph)
    moved_classes, target = classes[moved[inside]], target[inside]
    classes[moved] = NONE
    if not target.size:
        return classes
    sentence_end = np.zeros(classes.size, dtype=bool)
    np.logical_or.at(sentence_end, target, np.isin(moved_classes, _SENTENCE_ENDS))
    mwt = np.zeros(classes.size, dtype=bool)
    np.logical_or.at(mwt, target, moved_classes >= MWT_END)
    target = np.unique(target)
    own = classes[target]  # [n_targets]
    is_mwt = np.where(own != NONE, own >= MWT_END, mwt[target])
    ends_sentence = np.isin(own, _SENTENCE_ENDS) | sentence_end[target]
    classes[target] = np.where(is_mwt, MWT_END, TOKEN_END) + ends_sentence
    return classes


def _whole_characters(text: str, classes: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """Rule 2b: a class inside a character of several code points moves to its last one.

    A segmenter reads code points: it may end a token on the ``e`` of an NFD ``e`` + U+0301,
    or inside an emoji joined by U+200D (the family emoji came out as two tokens). Such a
    class moves forward to the character's last code point (:func:`rawtext.chars.joins`),
    merged with any class there as rule 2 merges.
    """
    if len(text) < 2:
        return classes
    points = codes(text)
    labelled = np.flatnonzero(classes[:-1] != NONE)  # [n_labelled]
    # Only a code point from U+0300 up extends another, and a joiner joins what follows it.
    maybe = (points[labelled + 1] >= FIRST_EXTENDER) | (points[labelled] == 0x200D)
    candidates = labelled[maybe]
    if not candidates.size:
        return classes
    classes = classes.copy()
    opens = flag_openers(points)  # [len(text)]
    last = -1  # the end of the joined run the previous candidate walked
    for i in candidates.tolist():
        # A candidate inside that run ends where it ends: each run is walked once (walking it
        # from every labelled code point of a chain of joiners took time quadratic in it).
        if i > last:
            last = i
            while last + 1 < len(text) and joins(
                text[last], text[last + 1], opens_flag=bool(opens[last])
            ):
                last += 1
        if last != i and classes[i] != NONE:
            classes[last] = _merged(int(classes[last]), int(classes[i]))
            classes[i] = NONE
    return classes


def _merged(own: int, moved: int) -> int:
    """The class of a character that has its own (perhaps NONE) and one moved onto it."""
    mwt = is_mwt_class(own) if own != NONE else is_mwt_class(moved)
    ends_sentence = is_sentence_end_class(own) or is_sentence_end_class(moved)
    return (MWT_END if mwt else TOKEN_END) + int(ends_sentence)


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


def split_long(document: Document, max_words: int) -> Document:
    """``document`` with each sentence of more than ``max_words`` words cut into pieces.

    Raw text without full stops (a transcript, a list, a text in a script the segmenter never
    saw) can make one sentence of thousands of words, which no parser can afford: its scores
    grow with the square of its length. Such a sentence becomes pieces of at most ``max_words``
    words (as few as the tokens allow), of about equal length, cut between tokens, in order (a
    token is never cut, so a multi-word token of more words stays one piece).

    Raises:
        ValueError: ``max_words`` is no whole number of at least 1 (1.5 was read as 1, "2" was
            a TypeError of comparison).
    """
    if isinstance(max_words, bool) or not isinstance(max_words, int) or max_words < 1:
        raise ValueError(f"max_words={max_words!r} must be a whole number >= 1")
    paragraphs = (
        Paragraph(tuple(piece for s in p.sentences for piece in _pieces(s, max_words)))
        for p in document.paragraphs
    )
    return Document(document.text, tuple(paragraphs))


def _pieces(sentence: Sentence, max_words: int) -> Iterator[Sentence]:
    """The sentence in the fewest pieces of at most ``max_words`` words, each near an equal share.

    A piece ends before a token where the rest still fits in the pieces left (``needed``), and
    adding the token would take the piece further from an equal share of the words left than
    it is; or where the token would not fit.
    """
    sizes = [len(token.words) for token in sentence.tokens]
    needed = _pieces_needed(sizes, max_words)  # [n_tokens + 1]
    left, words_left = needed[0], sum(sizes)  # pieces and words from the current piece on
    piece: list[Token] = []
    count = 0  # words in the piece
    for j, (token, size) in enumerate(zip(sentence.tokens, sizes, strict=True)):
        nearer_without = 2 * count * left + size * left >= 2 * words_left  # share: words / left
        if piece and (count + size > max_words or (needed[j] < left and nearer_without)):
            yield Sentence(tuple(piece))
            piece, words_left, left = [], words_left - count, left - 1
            count = 0
        piece.append(token)
        count += size
    yield Sentence(tuple(piece))


def _pieces_needed(sizes: list[int], max_words: int) -> list[int]:
    """int[n + 1]: the fewest pieces of at most ``max_words`` words the tokens from j on need.

    Filled from the last token back: packing each piece as full as it goes from the end needs
    the fewest pieces, and the pieces it packs for the tokens from j on are those it packs for
    the whole sentence, cut at j. A token over the limit is a piece of its own.
    """
    needed = [0] * (len(sizes) + 1)
    pieces = fill = 0
    for j in range(len(sizes) - 1, -1, -1):
        if pieces == 0 or fill + sizes[j] > max_words:
            pieces, fill = pieces + 1, 0
        fill += sizes[j]
        needed[j] = pieces
    return needed
