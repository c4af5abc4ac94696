"""A text segmented piece by piece as it arrives, with the classes of one pass over the whole.

The network reads windows of ``window`` characters, each with ``context`` more on either side,
in batches of ``batch_size`` windows (:mod:`biaffine.segmenting.windows`). Those windows and
batches are fixed by their place in the whole text, so a text given in pieces is scored batch
by batch as soon as the characters a batch reads are known, with the very windows, batches,
and so scores, of the whole text. The characters' features are line-local (a spaced word never
crosses a line break, a cased word is one chunk between spaces), so they are computed on runs
of whole lines that hold what a batch reads. :func:`segment_pieces` then decodes each piece of
whole paragraphs (:class:`rawtext.stream.ParagraphCutter`) once its scores are known: memory
holds a piece or two, however long the text. No torch here: the network's scoring is the
caller's (:class:`ScoreWindows`).
"""

from __future__ import annotations

import abc
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol

import numpy as np
import numpy.typing as npt

from biaffine.segmenting.features import CharVocab, code_points, window_bounds
from rawtext.chars import classes_of_line_feeds, line_feed_text
from rawtext.document import Document
from rawtext.labels import N_CLASSES
from rawtext.mwt import MwtExpander, segment_with
from rawtext.stream import PIECE_CHARACTERS, LineFeeds, ParagraphCutter

__all__ = ["Bounds", "ScoreStream", "ScoreWindows", "StreamSegmenting", "segment_pieces"]

Bounds = tuple[int, int, int, int]
"""A window's ``(read_start, keep_start, keep_end, read_end)`` character offsets."""


class ScoreWindows(Protocol):
    """The network's scoring of batches of windows (torch's, or ONNX Runtime's)."""

    def __call__(
        self,
        ids: npt.NDArray[np.int64],
        features: npt.NDArray[np.float32],
        batches: list[list[Bounds]],
        out: npt.NDArray[np.float32],
        first: int,
    ) -> None:
        """Write the log-probabilities of batches of windows into ``out``.

        Args:
            ids: int64[T] character ids of a run of the text.
            features: float32[T, F] their features.
            batches: windows, as offsets into ``ids``, in the batches the network reads.
            out: float32[K, N_CLASSES]: row ``r`` is character ``first + r`` of ``ids``;
                each window's kept characters are written.
            first: the offset of ``out``'s first row.
        """
        ...


class ScoreStream:
    """Log-probabilities of the characters of a text given in parts, those of the whole text.

    Args:
        vocab: the character vocabulary (ids and features).
        score: the network's scoring of batches of windows.
        window: characters whose classes one window gives.
        context: characters read on each side of a window besides its own.
        batch_size: windows per batch.
    """

    def __init__(
        self, vocab: CharVocab, score: ScoreWindows, *, window: int, context: int, batch_size: int
    ) -> None:
        """Start at the text's first character."""
        if window < 1 or context < 0 or batch_size < 1:
            raise ValueError(
                f"window={window} and batch_size={batch_size} must be positive,"
                f" context={context} not negative"
            )
        self.vocab, self.score = vocab, score
        self.window, self.context, self.batch_size = window, context, batch_size
        self.text = ""  # the text from self.base on
        self.pending: list[str] = []  # the text after it, given since its last LF
        self.base = 0  # a line's start, at most max(0, self.done - context)
        self.done = 0  # the characters before it are scored
        self.given = 0  # the characters before it have rows given (past done: by peek)

    def push(self, text: str, *, final: bool) -> npt.NDArray[np.float32]:
        """float32[k, N_CLASSES]: the scores of the next ``k`` characters, now known.

        Args:
            text: the text's next part (line breaks as LFs: a CR would end no line here).
            final: whether the text ends with it: every character left is scored.
        """
        if not final and "\n" not in text:  # no line is whole yet: nothing to score
            self.pending.append(text)
            return np.zeros((0, N_CLASSES), dtype=np.float32)
        self.text += "".join(self.pending) + text  # one copy for a long line, not one a push
        self.pending = []
        end = self.base + len(self.text)
        if final:
            known = stop = end
        else:
            newline = self.text.rfind("\n")
            known = self.base + newline + 1  # whole lines only: the features are line-local
            span = self.window * self.batch_size
            stop = max(self.done, (known - self.context) // span * span)
        if stop == self.done:
            return np.zeros((0, N_CLASSES), dtype=np.float32)
        if not final:  # the lines the windows read: to the end of the one they read last
            last = stop + self.context - 1 - self.base
            known = self.base + self.text.find("\n", last) + 1
        out = self._scores(self.text[: known - self.base], stop, known)
        out = out[max(0, self.given - self.done) :]  # rows peeked at are not given again
        self._forget(stop)
        self.given = max(self.given, stop)
        return out

    def peek(self, count: int) -> npt.NDArray[np.float32]:
        """float32[count, N_CLASSES]: the next ``count`` characters' scores, as if the text ended.

        For a writer that paused (:func:`segment_pieces`): the windows read the text up to
        the last of these characters, which must end a line, and no further, as a final push
        of the text to there would; a window whose context reaches past it may score otherwise
        than the whole text's. Later pushes do not give these characters' rows again.
        """
        stop = self.given + count
        if (
            count < 1
            or stop - self.base > len(self.text)
            or self.text[stop - self.base - 1] != "\n"
        ):
            raise ValueError(f"count={count}: the characters peeked at must end a line")
        out = self._scores(self.text[: stop - self.base], stop, stop)
        start, self.given = self.given, stop
        return out[start - self.done :]

    def _scores(self, lines: str, stop: int, known: int) -> npt.NDArray[np.float32]:
        """float32[stop - done, N_CLASSES]: the scores of the batches that keep them.

        ``lines`` is the text from ``base`` to ``known``, which every window of those batches
        reads within: a window reads to ``known`` at most (the whole text's end, or at least
        ``context`` characters after ``stop``).
        """
        base = self.base
        bounds = [
            (read_start - base, keep_start - base, keep_end - base, read_end - base)
            for read_start, keep_start, keep_end, read_end in window_bounds(
                known, self.window, self.context, first=self.done, stop=stop
            )
        ]
        batches = [
            bounds[first : first + self.batch_size]
            for first in range(0, len(bounds), self.batch_size)
        ]
        out = np.zeros((stop - self.done, N_CLASSES), dtype=np.float32)
        try:
            ids, features = self.vocab.ids(lines), self.vocab.features(lines)
        except ValueError:
            code_points(lines, offset=base)  # the lone surrogate, counted from the text's start
            raise
        self.score(ids, features, batches, out, self.done - base)
        return out

    def _forget(self, stop: int) -> None:
        """Keep the text from the start of the line that the next batch reads from."""
        reads_from = max(0, stop - self.context) - self.base
        line_start = self.text.rfind("\n", 0, reads_from) + 1
        self.text = self.text[line_start:]
        self.base += line_start
        self.done = stop


class StreamSegmenting(abc.ABC):
    """``segment_stream`` for a segmenter (torch's or ONNX Runtime's) that has the parts."""

    mwt: MwtExpander | None

    @abc.abstractmethod
    def _stream(self) -> ScoreStream:
        """A new stream of the network's log-probabilities."""

    @abc.abstractmethod
    def _decide(self, text: str, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
        """uint8[len(text)]: the classes of whole paragraphs (LF line breaks) from their scores."""

    def segment_stream(
        self,
        chunks: Iterable[str],
        piece_characters: int = PIECE_CHARACTERS,
        *,
        interactive: bool = False,
    ) -> Iterator[Document]:
        """The text of ``chunks`` (concatenated), segmented a piece of whole paragraphs at a time.

        Each document is a piece of :func:`rawtext.stream.paragraph_pieces` (its own text), and
        is as ``segment`` of the whole text finds those paragraphs: the same windows and
        batches, so the same scores; a sentence model reads each piece's paragraphs in batches
        of their own. A text shorter than ``piece_characters`` is one piece. ``interactive``:
        the chunks come from a pipe (:func:`segment_pieces`).
        """
        stream, least = self._stream(), piece_characters
        return segment_pieces(
            chunks, stream, self._decide, self.mwt, least, interactive=interactive
        )


Decide = Callable[[str, npt.NDArray[np.float32]], npt.NDArray[np.uint8]]
"""The classes of a text of whole paragraphs (line breaks as LFs) from its characters' scores."""


def segment_pieces(
    chunks: Iterable[str],
    stream: ScoreStream,
    decide: Decide,
    expander: MwtExpander | None,
    min_characters: int = PIECE_CHARACTERS,
    *,
    interactive: bool = False,
) -> Iterator[Document]:
    """The text of ``chunks``, one document of whole paragraphs per piece, as its whole text.

    The text goes to ``stream`` as it comes, and is cut into pieces of whole paragraphs
    (:class:`rawtext.stream.ParagraphCutter`); a piece is decoded once the stream has scored
    it, which needs the text to go on a batch of windows (and its context) past its end.

    Args:
        chunks: the text in consecutive parts of any size.
        stream: a new :class:`ScoreStream`.
        decide: the classes of a piece (read with its line breaks as LFs) from its scores.
        expander: the treebank's multi-word token expander (None: one word a token).
        min_characters: the fewest characters of a piece but the last.
        interactive: whether a chunk may be long in coming (a pipe): the text is then pushed
            as soon as 4,096 characters of it have come, and an empty chunk says that the
            writer paused: the paragraphs that have ended by then are segmented at once,
            their last characters scored as if the text ended after them
            (:meth:`ScoreStream.peek`), so that a writer that waits for their answer gets it.
            Otherwise one part is read ahead, so that the last goes to the stream as the
            text's end: a text of one part (up to :data:`PART_CHARACTERS`) is scored in one
            pass, all its batches side by side, as it was before the stream.

    Returns:
        Each piece's document (``document.text`` is the piece as given; a piece of only
        whitespace has no paragraphs).
    """
    cutter, feeds = ParagraphCutter(min_characters), LineFeeds()
    waiting: deque[tuple[str, str]] = deque()  # pieces as given, and with LFs, not yet scored
    scores = _Rows()
    for part, last in _parts(chunks, ahead=not interactive):
        if not part and not last:  # the writer paused
            flushed = cutter.flush()
            # A piece that ends with the text's last CR ends its line with it (an LF after the
            # pause is a line break of the next piece); a CR the cutter holds waits for its LF.
            if flushed and not cutter.length and (read := feeds.end()):
                scores.add(stream.push(read, final=False))
            waiting.extend((piece, line_feed_text(piece)) for piece in flushed)
            if (short := sum(len(read) for _, read in waiting) - len(scores)) > 0:
                scores.add(stream.peek(short))
            while waiting:
                yield _document(*waiting.popleft(), scores, decide, expander)
            continue
        read = feeds.add(part) + (feeds.end() if last else "")
        scores.add(stream.push(read, final=last))
        waiting.extend((piece, line_feed_text(piece)) for piece in cutter.add(part))
        if last:
            break
        while waiting and len(scores) >= len(waiting[0][1]):
            yield _document(*waiting.popleft(), scores, decide, expander)
    else:
        scores.add(stream.push(feeds.end(), final=True))
    waiting.extend((piece, line_feed_text(piece)) for piece in cutter.end())
    while waiting:
        yield _document(*waiting.popleft(), scores, decide, expander)


PART_CHARACTERS = PIECE_CHARACTERS
"""The most characters pushed to the stream at a time: its features and scores (about 70 bytes
a character) are held for no more and the lines they read, however large the chunks a reader
gives (a line is read whole)."""
LEAST_PART_CHARACTERS = 1 << 12
"""The fewest characters pushed at a time but the last: a pipe that delivers a byte at a time
would otherwise have the stream copy the lines it holds for each."""


def _parts(chunks: Iterable[str], *, ahead: bool) -> Iterator[tuple[str, bool]]:
    """``chunks`` as parts of :data:`LEAST_PART_CHARACTERS` to :data:`PART_CHARACTERS`.

    Each with whether it is known to be the text's last: with ``ahead``, one part is held
    until the next is known (or the text ends); without, no part is known to be the last,
    and an empty chunk (a pause) gives the characters held, if any, then itself.
    """
    held: str | None = None
    for part in _sized(chunks, pauses=not ahead):
        if held is not None:
            yield held, False
        if ahead:
            held = part
        else:
            yield part, False
    if held is not None:
        yield held, True


def _sized(chunks: Iterable[str], *, pauses: bool) -> Iterator[str]:
    held: list[str] = []
    size = 0
    for chunk in chunks:
        if pauses and not chunk:
            if size:
                yield "".join(held)
                held, size = [], 0
            yield chunk
            continue
        held.append(chunk)
        size += len(chunk)
        if size >= LEAST_PART_CHARACTERS:
            text = "".join(held)
            held, size = [], 0
            for start in range(0, len(text), PART_CHARACTERS):
                yield text[start : start + PART_CHARACTERS]
    if size:
        yield "".join(held)


def _document(
    piece: str, read: str, scores: _Rows, decide: Decide, expander: MwtExpander | None
) -> Document:
    classes = classes_of_line_feeds(piece, decide(read, scores.take(len(read))))
    return segment_with(piece, classes, expander)


class _Rows:
    """Rows of scores in text order: added at the end, taken from the front."""

    def __init__(self) -> None:
        self.parts: deque[npt.NDArray[np.float32]] = deque()
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def add(self, rows: npt.NDArray[np.float32]) -> None:
        if len(rows):
            self.parts.append(rows)
            self.count += len(rows)

    def take(self, count: int) -> npt.NDArray[np.float32]:
        """float32[count, N_CLASSES]: the first ``count`` rows, removed."""
        taken: list[npt.NDArray[np.float32]] = []
        needed = count
        while needed:
            part = self.parts.popleft()
            taken.append(part[:needed])
            if len(part) > needed:
                self.parts.appendleft(part[needed:])
            needed -= len(taken[-1])
        self.count -= count
        if len(taken) == 1:
            return taken[0]
        return np.concatenate(taken) if taken else np.zeros((0, N_CLASSES), dtype=np.float32)
