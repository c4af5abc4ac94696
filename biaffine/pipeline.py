"""Raw text to the sentences a parser reads: the segmenter's tokens and sentences as CoNLL-U.

The segmenter (:class:`biaffine.segmenting.Segmenter`, or the ONNX one of ``runtime=onnx``:
:class:`biaffine.segmenting.onnxrun.OnnxSegmenter`) classifies every character, the
torch-free front end (``rawtext``) turns the classes into documents, paragraphs, sentences,
tokens and words and writes them as CoNLL-U (``# newdoc``, ``# newpar``, ``# sent_id``, ``# text``,
``SpaceAfter=No``, multi-word token ranges), and the parser reads that CoNLL-U as it reads any
other: one path into the parser, whatever the input was.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import stat
from collections import deque
from collections.abc import Iterable, Iterator
from typing import IO, Protocol

import rawtext
from biaffine.data.conllu import Sentence, conllu_of_lines, read_conllu, read_text
from biaffine.data.pipes import PipeReader, open_pipe
from biaffine.files import standard_input

__all__ = [
    "INPUT_FORMATS",
    "MAX_SENTENCE_WORDS",
    "RawSentences",
    "TextSegmenter",
    "read_raw",
    "segmented",
    "segmented_stream",
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

    def segment_stream(
        self, chunks: Iterable[str], *, interactive: bool = False
    ) -> Iterator[rawtext.Document]:
        """The text of ``chunks`` as documents of whole paragraphs, a piece at a time."""
        ...


def segmented(segmenter: TextSegmenter, text: str, *, doc_id: str | None = None) -> list[Sentence]:
    """The sentences of ``text`` as the segmenter finds them, words only (no tags, no tree).

    Args:
        segmenter: a trained segmenter.
        text: the raw text (any length; paragraphs are separated by blank lines).
        doc_id: written as ``# newdoc id = ...`` (``# newdoc`` alone when None).

    Returns:
        As :func:`segmented_stream`, in a list.
    """
    return list(segmented_stream(segmenter, [text], doc_id=doc_id))


def segmented_stream(
    segmenter: TextSegmenter,
    chunks: Iterable[str],
    *,
    doc_id: str | None = None,
    name: str = "<segmented text>",
    interactive: bool = False,
) -> Iterator[Sentence]:
    """The sentences of a text given in chunks, as the segmenter finds them, as they are found.

    The text is segmented in pieces of whole paragraphs (:func:`rawtext.stream.paragraph_pieces`:
    whole up to 262,144 characters), so memory holds a piece or two however long it is.

    Args:
        segmenter: a trained segmenter.
        chunks: the raw text in consecutive parts of any size; a byte order mark at its start
            is dropped (it is no text).
        doc_id: written as ``# newdoc id = ...`` (``# newdoc`` alone when None).
        name: the text's name in an error's message.
        interactive: the chunks come as a pipe delivers them, each to be segmented at once,
            and an empty one says that the writer paused: the paragraphs that have ended are
            segmented then (otherwise one is read ahead: :meth:`Segmenter.segment_stream`).

    Returns:
        One sentence per sentence found, numbered from 1 in ``# sent_id``, a sentence of more
        than :data:`MAX_SENTENCE_WORDS` words cut into pieces
        (:func:`rawtext.split_long`); none for a text with no characters other than whitespace.
    """
    for sentences in _segmented_pieces(segmenter, chunks, doc_id, name, interactive):
        yield from sentences


def _segmented_pieces(
    segmenter: TextSegmenter,
    chunks: Iterable[str],
    doc_id: str | None,
    name: str,
    interactive: bool,
) -> Iterator[list[Sentence]]:
    """:func:`segmented_stream`'s sentences, a list for each piece the segmenter gives."""
    written = 0
    for found in segmenter.segment_stream(_without_bom(chunks), interactive=interactive):
        document = rawtext.split_long(found, MAX_SENTENCE_WORDS)
        lines = list(rawtext.to_conllu(document, doc_id=doc_id, first=written + 1))
        # The CoNLL-U reader refuses a text without sentences, which here is a valid piece.
        if lines:
            sentences = list(conllu_of_lines(lines, name))
            written += len(sentences)
            yield sentences


def _without_bom(chunks: Iterable[str]) -> Iterator[str]:
    """``chunks`` without the byte order mark at their start, if any (a second one is text)."""
    started = False
    for chunk in chunks:
        if not started and chunk:
            chunk, started = chunk.removeprefix("\ufeff"), True
        yield chunk


READ_BYTES = 1 << 20
"""Bytes of raw text read at a time (standard input gives what it has, up to this)."""


class RawSentences(Iterator[Sentence]):
    """The sentences of a UTF-8 text file (``-``: standard input), segmented as they are read.

    A pipe, a named pipe or a terminal is read as it comes: where its writer pauses after a
    paragraph break, the paragraphs before it are segmented at once (a program that sends a
    paragraph and waits for its parse gets it), and :meth:`waiting` says whether the next
    sentence has yet to come. Iterating raises ValueError where the file is not UTF-8 (one
    line naming the file, the line and the byte), when the reading reaches it; the sentences
    before it have been given.
    """

    def __init__(self, source: str | os.PathLike[str], segmenter: TextSegmenter) -> None:
        """Nothing is opened before the first sentence is asked for."""
        self._source, self._segmenter = source, segmenter
        self._interactive = False  # read as it comes (a pipe)
        self._held: deque[Sentence] = deque()  # the rest of the piece segmented last
        self._pieces = self._read()

    def __next__(self) -> Sentence:
        """The next sentence."""
        while not self._held:
            self._held.extend(next(self._pieces))
        return self._held.popleft()

    def waiting(self) -> bool:
        """Whether the next sentence has yet to come: never from a file, which is all there.

        From a pipe, once the sentences of the piece segmented last are given: the next piece
        ends where the writer pauses after a paragraph break, or a piece's length later.
        """
        return not self._held and self._interactive

    def _read(self) -> Iterator[list[Sentence]]:
        source = self._source
        name = "<stdin>" if str(source) == "-" else str(source)
        with contextlib.ExitStack() as stack:
            pipe = open_pipe(source)
            file: IO[bytes]
            if pipe is not None:
                file = stack.enter_context(pipe)  # closes the descriptor it opened
            elif name == "<stdin>":
                file = standard_input()
            else:
                file = stack.enter_context(open(source, "rb"))
            chunks = _decoded(file, name, pipe)
            self._interactive = _is_pipe(file)  # a PipeReader's descriptor is no regular file
            yield from _segmented_pieces(self._segmenter, chunks, None, name, self._interactive)


def read_raw(source: str | os.PathLike[str], segmenter: TextSegmenter) -> RawSentences:
    """The sentences of a UTF-8 text file (``-``: standard input), as :class:`RawSentences`."""
    return RawSentences(source, segmenter)


def _is_pipe(file: IO[bytes]) -> bool:
    """Whether ``file`` may keep its reader waiting (a pipe, a terminal): not a regular file."""
    try:
        return not stat.S_ISREG(os.fstat(file.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return True  # no file descriptor: read as it comes


def _decoded(file: IO[bytes], name: str, pipe: PipeReader | None = None) -> Iterator[str]:
    """The text of a UTF-8 file, a block at a time; from ``pipe``, ``""`` where it paused.

    Not utf-8-sig: :func:`segmented_stream` drops the one byte order mark, and a second one is
    text.

    Raises:
        ValueError: ``NAME:LINE: not UTF-8 text (byte N: reason)``.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    read = getattr(file, "read1", file.read)  # a pipe's bytes as they come
    seen, lines, after_cr = 0, 0, False  # bytes decoded; line breaks in them; ends in a CR
    while True:
        block = read(READ_BYTES)
        held = len(decoder.getstate()[0])  # the end of the block before: part of a character
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError as error:
            # error.start counts from the held bytes, which hold no line break (all >= 0x80).
            before = block[: max(0, error.start - held)]
            line = lines + _line_breaks(before, after_cr) + 1
            problem = f"not UTF-8 text (byte {seen - held + error.start}: {error.reason})"
            raise ValueError(f"{name}:{line}: {problem}") from None
        if text:  # an empty chunk is a pause
            yield text
        if not block:
            return
        lines += _line_breaks(block, after_cr)
        seen, after_cr = seen + len(block), block.endswith(b"\r")
        if pipe is not None and pipe.paused():
            yield ""


def _line_breaks(data: bytes, after_cr: bool) -> int:
    """Line breaks that end in ``data``: CRLF, CR or LF, as the segmenter reads them.

    ``after_cr``: the bytes before ``data`` end in a CR, whose LF (if ``data`` starts with
    one) ends no line of its own.
    """
    count = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    return count - (after_cr and data.startswith(b"\n"))


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
