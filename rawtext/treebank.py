"""Reading the surface of a CoNLL-U treebank: tokens, their words, spacing and document marks.

Only what raw text needs (no trees, no tags), streamed one sentence at a time. Errors are
:class:`TreebankError` with ``FILE:LINE: problem`` messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

_NEWDOC = re.compile(r"#\s*newdoc(\s|$)", re.IGNORECASE)
_NEWPAR = re.compile(r"#\s*newpar(\s|$)", re.IGNORECASE)
_TEXT = re.compile(r"#\s*text\s*=\s*(.*)")
_RANGE = re.compile(r"([0-9]+)-([0-9]+)")  # ASCII: "\d" also takes "²" and Arabic-Indic digits
_WORD = re.compile(r"[1-9][0-9]*")
_EMPTY = re.compile(r"[0-9]+\.[1-9][0-9]*")
_BOM = "\ufeff"


class TreebankError(ValueError):
    """A malformed CoNLL-U line, located as ``FILE:LINE``."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        """Message ``f"{source}:{line}: {problem}"``."""
        super().__init__(f"{source}:{line}: {problem}")
        self.source, self.line, self.problem = source, line, problem


@dataclass(frozen=True, slots=True)
class TreebankToken:
    """One surface token: a word line, or a multi-word token's range line with its words.

    Attributes:
        form: the token's FORM (may hold spaces, as in Vietnamese VTB).
        words: the FORMs of its syntactic words; ``(form,)`` for a single-word token.
        space_after: False where MISC says ``SpaceAfter=No`` (the range line's, for an MWT).
        new_par: MISC says ``NewPar=Yes``: a paragraph starts at this token, inside a sentence.
    """

    form: str
    words: tuple[str, ...]
    space_after: bool
    new_par: bool

    @property
    def is_mwt(self) -> bool:
        """True for a multi-word token (a range line ``a-b``)."""
        return len(self.words) > 1


@dataclass(frozen=True, slots=True)
class TreebankSentence:
    """One sentence's surface: its tokens and the comments that place it in the text.

    Attributes:
        tokens: the tokens in order.
        new_doc: a ``# newdoc`` comment precedes it.
        new_par: a ``# newpar`` comment precedes it.
        text: its ``# text`` value, or None without one.
        line: the line number of its first line in the file.
    """

    tokens: tuple[TreebankToken, ...]
    new_doc: bool
    new_par: bool
    text: str | None
    line: int


def read_sentences(source: str | Path | TextIO) -> Iterator[TreebankSentence]:
    """Streams the sentences of a CoNLL-U file as surface tokens.

    Empty nodes (``ID`` like ``3.1``) are skipped; a multi-word token's words are the word lines
    its range covers.

    Args:
        source: a path, or an open text file (read from its position, not closed).

    Returns:
        A lazy iterator of sentences in file order.

    Raises:
        TreebankError: a missing file, invalid UTF-8, a word line without 10 tab-separated
            columns, or a bad ID (raised while iterating).
    """
    if isinstance(source, str | Path):
        return _read_path(Path(source))
    return _read_lines(str(getattr(source, "name", "<stream>")), source)


def _read_path(path: Path) -> Iterator[TreebankSentence]:
    if not path.exists():
        raise TreebankError(str(path), 0, "no such file")
    if path.is_dir():
        raise TreebankError(str(path), 0, "is a directory, not a file")
    with open(path, "rb") as file:
        yield from _read_lines(str(path), _decoded(str(path), file))


def _decoded(name: str, file: Iterable[bytes]) -> Iterator[str]:
    # Decoding line by line pins an encoding error to its line.
    for lineno, raw in enumerate(file, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise TreebankError(name, lineno, f"not valid UTF-8 at byte {err.start}") from None


def _read_lines(name: str, lines: Iterable[str]) -> Iterator[TreebankSentence]:
    block: list[tuple[int, str]] = []
    for lineno, raw in enumerate(lines, 1):
        text = raw.rstrip("\r\n")
        if lineno == 1:
            text = text.removeprefix(_BOM)
        if text.strip(" \t"):
            if text.isspace():  # a sentence's end for str.strip(); the parser refuses it too
                raise TreebankError(name, lineno, _odd_whitespace(text))
            block.append((lineno, text))
        elif block:
            yield _parse_block(name, block)
            block = []
    if block:
        yield _parse_block(name, block)


def _odd_whitespace(text: str) -> str:
    odd = next(c for c in text if c not in " \t")
    return (
        f"a line of whitespace only, with U+{ord(odd):04X}: a blank line ends a sentence, "
        "and may hold spaces and tabs at most"
    )


def _parse_block(name: str, block: list[tuple[int, str]]) -> TreebankSentence:
    new_doc = new_par = False
    text = None
    tokens: list[TreebankToken] = []
    open_range: _Range | None = None
    next_id = 1  # the words are numbered 1, 2, ... as the parser's reader requires
    for lineno, line in block:
        if line.startswith("#"):
            new_doc = new_doc or bool(_NEWDOC.match(line))
            new_par = new_par or bool(_NEWPAR.match(line))
            if found := _TEXT.match(line):
                text = found.group(1)
            continue
        cells = line.split("\t")
        if len(cells) != 10:
            problem = f"expected 10 tab-separated columns, found {len(cells)}"
            raise TreebankError(name, lineno, problem)
        word_id = cells[0]
        if found := _RANGE.fullmatch(word_id):
            _close(name, open_range, tokens)
            open_range = _Range(int(found.group(1)), int(found.group(2)), cells, [], lineno)
            _check_start(name, open_range, next_id)
        elif _WORD.fullmatch(word_id):
            if open_range is None or int(word_id) > open_range.last:
                _close(name, open_range, tokens)  # a range short of its words is named first
                open_range = None
            if int(word_id) != next_id:
                raise TreebankError(name, lineno, f"word ID {word_id} where {next_id} comes next")
            next_id += 1
            if open_range is not None:
                open_range.words.append(cells[1])
            else:
                tokens.append(_token(cells, (cells[1],)))
        elif not _EMPTY.fullmatch(word_id):
            raise TreebankError(name, lineno, f"invalid ID {word_id!r}")
    _close(name, open_range, tokens)
    return TreebankSentence(tuple(tokens), new_doc, new_par, text, block[0][0])


@dataclass
class _Range:
    """A multi-word token being read: its range line's IDs and cells, and its words so far."""

    first: int
    last: int
    cells: list[str]
    words: list[str]
    lineno: int


def _check_start(name: str, found: _Range, next_id: int) -> None:
    """Refuses a range that runs backwards or does not start at the next word's ID."""
    span = f"multi-word token {found.first}-{found.last}"
    if found.last < found.first:
        raise TreebankError(name, found.lineno, f"{span} ends before it starts")
    if found.first != next_id:
        raise TreebankError(name, found.lineno, f"{span} must start at the next word ID {next_id}")


def _close(name: str, open_range: _Range | None, tokens: list[TreebankToken]) -> None:
    """Appends the multi-word token being read, if any.

    Raises:
        TreebankError: its range is not followed by the words it covers (a token of no words,
            or of fewer, would be learned as a multi-word token; the parser's reader refuses
            the same file).
    """
    if open_range is None:
        return
    span = f"multi-word token {open_range.first}-{open_range.last}"
    expected = open_range.last - open_range.first + 1
    if len(open_range.words) != expected:
        problem = f"{span} covers {expected} words, but {len(open_range.words)} follow it"
        raise TreebankError(name, open_range.lineno, problem)
    tokens.append(_token(open_range.cells, tuple(open_range.words)))


def _token(cells: list[str], words: tuple[str, ...]) -> TreebankToken:
    misc = cells[9].split("|")
    return TreebankToken(cells[1], words, "SpaceAfter=No" not in misc, "NewPar=Yes" in misc)
