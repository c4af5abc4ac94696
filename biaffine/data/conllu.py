"""Streaming CoNLL-U reading and writing that keeps every byte of a sentence for writing it back.

The only module that imports :mod:`conllu` (its ID, HEAD and comment field parsers). Errors are
:class:`ConlluError` with ``FILE:LINE: problem`` messages; line 0 marks a problem with the file
as a whole (missing, empty). The one byte sequence not kept is a UTF-8 byte order mark at the
start of the input, which is dropped. A line may hold at most :data:`MAX_LINE` (1 MiB) so that
an endless line (``/dev/zero``, a binary file) is an error instead of filling memory.
"""

from __future__ import annotations

import functools
import io
import operator
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from sys import intern
from typing import AnyStr, BinaryIO, NoReturn, TextIO, cast

from conllu.exceptions import ParseException
from conllu.parser import parse_comment_line, parse_id_value, parse_int_value

from biaffine.data.pipes import PipeReader

COLUMNS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")
_HEAD, _DEPREL, _MISC = 6, 7, 9
_WRITABLE = {"lemma": 2, "upos": 3, "xpos": 4, "feats": 5, "head": _HEAD, "deprel": _DEPREL}
"""Columns :meth:`Sentence.with_columns` writes, by name, and their index in a word line."""
_ATTRIBUTES = {"lemma": "lemmas", "deprel": "deprels"}
"""Sentence attributes whose name is not the column's."""
_BOM = "\ufeff"
MAX_LINE = 1 << 20
"""The longest line read, its line break included: bytes in a file, characters on a stream."""
MAX_SHOWN = 60
"""Characters of a refused cell an error message shows, at most."""
# What only CoNLL-U starts with: a sentence's metadata comment, or a word line's ID and 9 TABs.
_CONLLU_COMMENT = re.compile(r"#\s*(?:(?:sent_id|text)\s*=|new(?:doc|par)\b)")
_CONLLU_ID = re.compile(r"\d+(?:[-.]\d+)?")
_AFTER_LONE_CR = re.compile(r"(?<=\r)(?!\n)")

# conllu's ID and HEAD parsers, memoised: the same few hundred values fill nearly every line, and
# re-running their regular expressions was a third of the reading time. Errors are not cached.
_id_value = functools.lru_cache(maxsize=1 << 14)(parse_id_value)
_head_value = functools.lru_cache(maxsize=1 << 14)(parse_int_value)


class ConlluError(ValueError):
    """A malformed or unreadable CoNLL-U (or plain text) input, located as ``FILE:LINE``."""

    def __init__(self, source: str, line: int, problem: str) -> None:
        """Message ``f"{source}:{line}: {problem}"``; the three parts are kept as attributes."""
        super().__init__(f"{source}:{line}: {problem}")
        self.source, self.line, self.problem = source, line, problem

    def __reduce__(self) -> tuple[type, tuple[str, int, str]]:
        """Pickles with the constructor's three arguments (the default would pass the message)."""
        return (type(self), (self.source, self.line, self.problem))


@dataclass(frozen=True, slots=True)
class Token:
    """One surface token of a sentence: a word, or a multiword token and the words it spans.

    Attributes:
        form: FORM of the token (of the range line, for a multiword token).
        first: ID of its first word.
        last: ID of its last word (``first`` for a one-word token).
        multiword: whether it is written as a range line (``3-4``).
        line: its line in the sentence's source (the range line, or the word line).
    """

    form: str
    first: int
    last: int
    multiword: bool
    line: int


@dataclass(slots=True)
class Sentence:
    """One CoNLL-U sentence: the columns of its words (integer IDs 1..n) plus its raw lines.

    Column lists hold the raw column text, one entry per word; ``forms[i - 1]`` is word ``i``.
    ``lines`` are the raw input lines with their line terminators: comments, multiword ranges,
    empty nodes, word lines and the blank line(s) that end the sentence (blank lines opening a
    file belong to its first sentence). Writing a sentence writes ``"".join(lines)``, so change
    a read sentence through :meth:`with_tree`, not by editing its lists.

    Built by hand (``lines`` left empty), only ``forms`` is required: missing columns become
    ``_`` and ``lines`` are generated, with a ``# text`` comment (forms joined by spaces).

    Attributes:
        forms, lemmas, upos, xpos, feats, deprels: list[str] of length n.
        heads: list[int] of length n (0 = ROOT), or None when any HEAD is ``_``.
        lines: raw lines, each with its terminator.
        word_lines: int list of length n; ``lines[word_lines[i - 1]]`` is the line of word ``i``.
        source: the file path or ``'<stdin>'``.
        line: 1-based line number of the sentence's first non-blank line in ``source``.
    """

    forms: list[str]
    lemmas: list[str] = field(default_factory=list)
    upos: list[str] = field(default_factory=list)
    xpos: list[str] = field(default_factory=list)
    feats: list[str] = field(default_factory=list)
    heads: list[int] | None = None
    deprels: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    word_lines: list[int] = field(default_factory=list)
    source: str = "<unknown>"
    line: int = 1

    def __post_init__(self) -> None:
        """Fills in the columns and lines of a hand-built sentence (read ones come complete)."""
        if not self.lines:
            self._build_lines()

    def __len__(self) -> int:
        """Number of words n (multiword ranges and empty nodes excluded)."""
        return len(self.forms)

    @property
    def comments(self) -> list[str]:
        """The comment lines, without line terminators."""
        return [text.rstrip("\r\n") for text in self.lines if text.startswith("#")]

    @property
    def tokens(self) -> list[Token]:
        """The surface tokens in order: multiword range lines, and the words outside them.

        Empty nodes are not tokens. The reader has checked each range: it starts at the next
        word, inside no other range, and ends at a word of the sentence.
        """
        first = _first_filled(self.lines)
        tokens: list[Token] = []
        covered = 0  # the last word ID inside a range read so far
        for k, text in enumerate(self.lines[first:], start=first):
            if _is_blank_or_comment(text) or (cols := _columns(text))[0].count(".") == 1:
                continue
            line = self.line + k - first
            low, dash, high = cols[0].partition("-")
            if dash:
                tokens.append(Token(cols[1], int(low), int(high), True, line))
                covered = int(high)
            elif int(low) > covered:
                tokens.append(Token(cols[1], int(low), int(low), False, line))
        return tokens

    def word_line(self, i: int) -> int:
        """The line of word ``i`` (1..n) in :attr:`source`, for an error message about it."""
        return self.line + self.word_lines[i - 1] - _first_filled(self.lines)

    @property
    def metadata(self) -> dict[str, str | None]:
        """Comment ``key = value`` pairs read by the conllu package (``text``, ``sent_id``)."""
        pairs = (pair for text in self.comments for pair in parse_comment_line(text))
        return dict(pairs)

    @classmethod
    def from_forms(
        cls, forms: Sequence[str], *, source: str = "<unknown>", line: int = 1
    ) -> Sentence:
        """A bare sentence (only FORM filled, ``_`` elsewhere) that writes out as valid CoNLL-U.

        Args:
            forms: n >= 1 word forms; no tabs, line breaks or empty strings.
            source: where the words came from, for error messages.
            line: the line of ``source`` they came from.

        Returns:
            A sentence with a ``# text = ...`` comment (forms joined by spaces) and ``heads=None``.

        Raises:
            TypeError: ``forms`` is one string, which would be split into one word per character.
            ConlluError: no words, or a form that CoNLL-U cannot hold.
        """
        if isinstance(forms, str):
            raise TypeError(
                f"forms is a string ({_shown(forms)}): pass a list of words, e.g. ['The', 'cat']"
            )
        forms = list(forms)
        for k, form in enumerate(forms, start=1):
            if isinstance(form, str):
                refuse_surrogates(form, source, line, f"word {k}")
        return cls(forms, source=source, line=line)

    def _build_lines(self) -> None:
        n = len(self.forms)
        if not n:
            raise ConlluError(self.source, self.line, "sentence has no words")
        attributes = ("forms", "lemmas", "upos", "xpos", "feats", "deprels")
        columns = []
        for name, attribute in zip((*COLUMNS[1:6], "DEPREL"), attributes, strict=True):
            # A copy: the caller's lists are theirs (filling them in place changed them).
            values = list(getattr(self, attribute)) or ["_"] * n
            if len(values) != n:  # the cells themselves are not echoed: a sentence may be long
                problem = f"bad {name} column: {len(values)} values for {n} words"
                raise ConlluError(self.source, self.line, problem)
            if not all(_is_field(v) for v in values):
                self._refuse_cells(name.lower(), values)
            setattr(self, attribute, values)
            columns.append(values)
        heads = ["_"] * n
        if self.heads is not None:
            self.heads = [operator.index(h) for h in self.heads]
            if len(self.heads) != n:
                problem = f"bad HEAD column: {len(self.heads)} heads for {n} words"
                raise ConlluError(self.source, self.line, problem)
            for i, head in enumerate(self.heads, 1):
                if not 0 <= head <= n:
                    problem = f"head {head} of word {i} not in 0..{n}"
                    raise ConlluError(self.source, self.line, problem)
            heads = [str(h) for h in self.heads]
        rows = zip(*columns[:5], heads, self.deprels, strict=True)
        words = ["\t".join((str(i), *row, "_", "_")) + "\n" for i, row in enumerate(rows, 1)]
        self.lines = [f"# text = {' '.join(self.forms)}\n", *words, "\n"]
        self.word_lines = list(range(1, n + 1))

    def with_tree(
        self,
        heads: Sequence[int],
        deprels: Sequence[str],
        columns: Mapping[str, Sequence[str]] | None = None,
    ) -> Sentence:
        """A copy whose word lines carry new HEAD and DEPREL columns; every other byte is unchanged.

        The tree case of :meth:`with_columns`, with heads checked as heads.

        Args:
            heads: int[n] (head of word i at index i - 1, 0 = ROOT), or int[n+1] laid out as the
                decoders return it (position i = word i; position 0 ignored).
            deprels: str[n], or str[n+1] with position 0 ignored.
            columns: other columns to write in the same pass, as :meth:`with_columns` takes them.

        Returns:
            A new Sentence; ``self`` is not modified. DEPS and all other columns are left as read.

        Raises:
            ConlluError: wrong lengths, a head outside 0..n, or an empty or tab-containing label.
            TypeError: a head that is not an integer (a float, say).
        """
        n = len(self)
        new_heads = [operator.index(h) for h in self._words_only(heads, "heads")]
        for i, head in enumerate(new_heads, 1):
            if not 0 <= head <= n:
                raise ConlluError(self.source, self.line, f"head {head} of word {i} not in 0..{n}")
        tree = self.with_columns(
            {**(columns or {}), "head": [str(h) for h in new_heads], "deprel": deprels}
        )
        tree.heads = new_heads
        return tree

    def column(self, name: str) -> list:
        """The values of one column, one per word.

        ``name`` as :meth:`with_columns` names it: ``lemma``, ``upos``, ``xpos``, ``feats``,
        ``deprel``.
        """
        return getattr(self, _ATTRIBUTES.get(name, name))

    def with_columns(self, columns: Mapping[str, Sequence[str]]) -> Sentence:
        """A copy with whole columns replaced in every word line; every other byte is unchanged.

        Args:
            columns: new values by lower-case column name (``lemma``, ``upos``, ``xpos``,
                ``feats``, ``head``, ``deprel``): str[n], or str[n+1] with position 0 ignored.
                Columns not named keep their bytes.

        Returns:
            A new Sentence; ``self`` is not modified.

        Raises:
            ConlluError: an unknown column, wrong lengths, or a value one column cannot hold.
        """
        values = {}
        for name, given in columns.items():
            if name not in _WRITABLE:
                known = ", ".join(_WRITABLE)
                raise ConlluError(self.source, self.line, f"cannot write column {name!r} ({known})")
            cells = [str(v) if name == "head" else v for v in self._words_only(given, name)]
            if not _all_fields(cells):
                self._refuse_cells(name, cells)
            values[name] = cells
        lines = list(self.lines)
        if values:
            indices = [_WRITABLE[name] for name in values]
            rows = zip(*values.values(), strict=True)  # each word's new cells
            for k, row in zip(self.word_lines, rows, strict=True):
                lines[k] = _replace_cells(lines[k], indices, row)
        copy = self._with_lines(lines, list(self.word_lines))
        for name, cells in values.items():
            if name != "head":
                setattr(copy, _ATTRIBUTES.get(name, name), cells)
        return copy

    def _refuse_cells(self, name: str, cells: Sequence[object]) -> NoReturn:
        """Raise for the first of ``cells`` that column ``name`` cannot hold."""
        i, cell = next((i, c) for i, c in enumerate(cells, 1) if not _is_field(c))
        what = "label" if name == "deprel" else name.upper()
        raise ConlluError(self.source, self.line, f"invalid {what} {_shown(cell)} for word {i}")

    def given_heads(self) -> list[int | None]:
        """The HEAD column as given: the head of word i at index i - 1, None where it is ``_``.

        Unlike :attr:`heads`, which is None as a whole when any HEAD is ``_`` (so scoring and
        training never see a partial tree), this keeps a partial annotation for decoding around
        it (``predict.py keep_given_heads=true``). Values were checked (0..n) when read.
        """
        return [_head_value(_columns(self.lines[k])[_HEAD]) for k in self.word_lines]

    def with_misc(self, entries: Sequence[Sequence[tuple[str, str]]]) -> Sentence:
        """A copy with ``key=value`` items set in each word's MISC column; every other byte kept.

        The items already there keep their order and the new ones follow them (``_`` stands for
        none); an item with one of the new keys is dropped first, so annotating an annotated
        file does not repeat keys.

        Args:
            entries: per word (n lists), the (key, value) pairs to set.

        Raises:
            ConlluError: n lists expected, or a key or value that MISC cannot hold.
        """
        if len(entries) != len(self):
            problem = f"MISC entries for {len(entries)} words, the sentence has {len(self)}"
            raise ConlluError(self.source, self.line, problem)
        lines = list(self.lines)
        for k, pairs in zip(self.word_lines, entries, strict=True):
            for key, value in pairs:
                self._check_item(key, value, "|")
            lines[k] = _replace_misc(lines[k], pairs)
        return self._with_lines(lines, list(self.word_lines))

    def with_comments(
        self, pairs: Sequence[tuple[str, str]], *, drop: Collection[str] = ()
    ) -> Sentence:
        """A copy with ``# key = value`` comment lines after the sentence's other comments.

        A comment with one of the new keys is dropped first (no repeated keys); every other byte
        is kept. New lines end as the sentence's first word or range line does.

        Args:
            pairs: (key, value) of each new comment line, in order.
            drop: first words of comments to remove as well (``newdoc`` removes ``# newdoc``
                and ``# newdoc id = ...``).

        Raises:
            ConlluError: a key or value that a comment line cannot hold.
        """
        for key, value in pairs:
            self._check_item(key, value, "")
        keys = {key for key, _ in pairs}
        first = next(k for k, text in enumerate(self.lines) if not _is_blank_or_comment(text))
        end = self.lines[first][len(self.lines[first].rstrip("\r\n")) :] or "\n"
        head = [
            text
            for text in self.lines[:first]
            if _comment_key(text) not in keys and _first_word(text) not in drop
        ]
        added = [f"# {key} = {value}{end}" for key, value in pairs]
        lines = [*head, *added, *self.lines[first:]]
        shift = len(lines) - len(self.lines)
        return self._with_lines(lines, [k + shift for k in self.word_lines])

    def _check_item(self, key: str, value: str, banned: str) -> None:
        bad_key = not _is_field(key) or any(c in key for c in "=| ")
        if bad_key or not _is_field(value) or (banned and banned in value):
            problem = f"cannot write {key}={_shown(value)} in CoNLL-U"
            raise ConlluError(self.source, self.line, problem)

    def _with_lines(self, lines: list[str], word_lines: list[int]) -> Sentence:
        return Sentence(
            list(self.forms), list(self.lemmas), list(self.upos), list(self.xpos),
            list(self.feats), None if self.heads is None else list(self.heads),
            list(self.deprels), lines, word_lines, self.source, self.line,
        )  # fmt: skip

    def _words_only(self, values: Sequence, name: str) -> Sequence:
        n = len(self)
        if len(values) == n:
            return values
        if len(values) == n + 1:
            return values[1:]
        raise ConlluError(self.source, self.line, f"{name} has {len(values)} entries for {n} words")


def _shown(value: object) -> str:
    """``value``'s repr for an error message, cut to :data:`MAX_SHOWN` characters.

    A cell of 100,000 characters was echoed whole, on one line of 100 KB.
    """
    text = repr(value)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


def refuse_surrogates(text: str, source: str, line: int, what: str) -> None:
    r"""Refuse a str from Python holding a lone surrogate, which no UTF-8 file can hold.

    A file is decoded strictly; a str built in Python (``"caf\udc80"``, ``surrogateescape``)
    was parsed, and writing its CoNLL-U failed with a ``UnicodeEncodeError``.

    Raises:
        ConlluError: naming ``what`` (``word 2``) and the code point.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        found = f"U+{ord(text[error.start]):04X}"
        raise ConlluError(source, line, f"{what} holds a lone surrogate ({found})") from None


def _is_field(value: object) -> bool:
    """A non-empty string without tabs or line breaks: something one CoNLL-U column can hold."""
    # Three `in` tests: this runs once per written cell, and a generator costs 3x as much.
    return (
        isinstance(value, str)
        and bool(value.strip())
        and "\t" not in value
        and "\n" not in value
        and "\r" not in value
    )


def _all_fields(cells: Sequence[object]) -> bool:
    """Whether every cell is something one CoNLL-U column can hold (:func:`_is_field`).

    One pass over the joined column: this runs for every column written, and a test per cell
    was a fifth of the time a parse spent writing its results.
    """
    if not all(type(cell) is str for cell in cells):
        return all(_is_field(cell) for cell in cells)
    joined = "\x00".join(cells)  # type: ignore[arg-type]  (all str, checked above)
    return (
        "\t" not in joined
        and "\n" not in joined
        and "\r" not in joined
        and all(map(str.strip, cells))  # type: ignore[arg-type]
    )


def _columns(text: str) -> list[str]:
    return text.rstrip("\r\n").split("\t")


def _is_blank(text: str) -> bool:
    """Whether a line is blank: a sentence's end. Spaces and tabs are tolerated on it."""
    return not text.strip(" \t\r\n")


def _odd_whitespace(text: str) -> str:
    """The problem with a line of whitespace that is not :func:`_is_blank`."""
    odd = next(c for c in text if c not in " \t\r\n")
    name = unicodedata.name(odd, "a control character")
    return (
        f"a line of whitespace only, with U+{ord(odd):04X} ({name}): a blank line ends a "
        "sentence, and may hold spaces and tabs at most"
    )


def _is_blank_or_comment(text: str) -> bool:
    return text.isspace() or text.startswith("#")


def _comment_key(text: str) -> str | None:
    """``key`` of a ``# key = value`` line, else None."""
    if not text.startswith("#") or "=" not in text:
        return None
    return text[1:].split("=", 1)[0].strip()


def _first_word(text: str) -> str | None:
    """The first word of a comment line (``newdoc`` of ``# newdoc id = d1``), else None."""
    words = text[1:].replace("=", " ").split() if text.startswith("#") else []
    return words[0] if words else None


def _replace_misc(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    content = text.rstrip("\r\n")
    cols = content.split("\t")
    keys = {key for key, _ in pairs}
    old = [] if cols[_MISC] == "_" else cols[_MISC].split("|")
    items = [item for item in old if item.split("=", 1)[0] not in keys]
    cols[_MISC] = "|".join([*items, *(f"{key}={value}" for key, value in pairs)]) or "_"
    return "\t".join(cols) + text[len(content) :]


def _replace_cells(text: str, indices: Sequence[int], values: Sequence[str]) -> str:
    """A word line with the cells at ``indices`` set to ``values``; its terminator kept."""
    content = text.rstrip("\r\n")
    cols = content.split("\t")
    for index, value in zip(indices, values, strict=True):
        cols[index] = value
    return "\t".join(cols) + text[len(content) :]


def universal_relation(deprel: str) -> str:
    """The universal part of a dependency relation: ``"nmod:poss"`` -> ``"nmod"``."""
    return deprel.split(":", 1)[0]


def read_conllu(
    source: str | Path | TextIO | BinaryIO,
    *,
    require_trees: bool = False,
    trailer: list[str] | None = None,
    early: bool = True,
) -> Iterator[Sentence]:
    """Streams the sentences of a CoNLL-U file, one at a time (memory bounded by one sentence).

    A sentence's blank lines belong to it, so a sentence is given when the next one begins;
    from a :class:`~biaffine.data.pipes.PipeReader` where ``early``, as soon as its closing
    blank line has come where nothing more has (a writer may be waiting for its answer), and
    the blank lines that come after it then open the next sentence, or go to ``trailer`` after
    the last. (Not for k-best output, which repeats a sentence's every line in each copy: its
    bytes would depend on the writer's pauses.)

    Args:
        source: a path, or an open text or binary file (read from its current position, not
            closed; a binary one, such as ``sys.stdin.buffer``, is decoded as a path is).
        require_trees: training mode: every HEAD must be an integer in 0..n and every DEPREL
            set. Otherwise HEAD may be ``_`` (the sentence then has ``heads=None``).
        trailer: gets the blank lines after the last sentence that no sentence holds (only
            from a pipe, as above), for a writer to write after it.
        early: from a pipe, give a sentence at its closing blank line (above).

    Returns:
        A lazy iterator of Sentences in file order.

    Raises:
        ConlluError: missing or empty file, invalid UTF-8, a line longer than
            :data:`MAX_LINE`, a line without exactly 10 tab-separated non-empty columns, IDs
            not running 1..n, or a bad HEAD. A missing file is reported at call time, the rest
            while iterating.
    """
    name, lines = _open_lines(source)
    waiting = source.waiting if early and isinstance(source, PipeReader) else None
    return _read_sentences(name, lines, require_trees, waiting, trailer)


def conllu_of_lines(lines: Iterable[str], name: str) -> Iterator[Sentence]:
    """The sentences of CoNLL-U lines a program made in memory (``rawtext.to_conllu``'s).

    As :func:`read_conllu` reads a file, without its bound on a line's length, which guards a
    reader against a file that is no text: a token of the segmenter's may hold more than a
    MiB of characters (a long run without spaces), and was refused as line 4 of ``<stdin>``.

    Args:
        lines: the lines, each ending in a line feed.
        name: where they came from, for error messages.
    """
    return _read_sentences(name, iter(lines), False)


def read_text(source: str | Path | TextIO | BinaryIO) -> Iterator[Sentence]:
    r"""Streams pre-tokenized plain text: one sentence per line, tokens separated by whitespace.

    Lines end at ``\r\n``, ``\r`` or ``\n``, as raw text's do (:mod:`rawtext.chars`). Blank
    lines are skipped. Each sentence writes out as CoNLL-U with only FORM filled.

    Args:
        source: a path, or an open text or binary file.

    Returns:
        A lazy iterator of Sentences, ``heads=None``, ``line`` = their line in ``source``.

    Raises:
        ConlluError: missing file, invalid UTF-8, a line longer than :data:`MAX_LINE`, no
            sentence at all, or a first line that is CoNLL-U (a ``# sent_id =`` or
            ``# text =`` comment, or 10 tab-separated columns starting with an ID).
    """
    name, lines = _open_lines(source)
    return _read_text_sentences(name, lines)


def write_conllu(dest: str | Path | TextIO, sentences: Iterable[Sentence]) -> None:
    """Writes sentences as CoNLL-U, reproducing each sentence's raw lines byte for byte.

    A sentence that was read without a closing blank line (the last one of a file lacking it)
    gets one when another sentence follows, so the output stays valid CoNLL-U.

    Args:
        dest: a path (written as UTF-8 with line terminators untranslated) or an open text file
            (left open; pass ``sys.stdout`` for ``-``).
        sentences: the sentences to write, streamed.
    """
    if isinstance(dest, str | Path):
        with open(dest, "w", encoding="utf-8", newline="") as file:
            _write_sentences(file, sentences)
    else:
        _write_sentences(dest, sentences)


def _write_sentences(file: TextIO, sentences: Iterable[Sentence]) -> None:
    # Each sentence is written as soon as it comes (holding one back until the next came
    # delayed a pipe's answers by a sentence); one read without its closing blank line owes
    # the sentence after it the line ends it lacks, in its own terminator.
    owed = ""
    for sentence in sentences:
        file.write(owed + "".join(sentence.lines))
        owed = _separator_owed(sentence)


def _separator_owed(sentence: Sentence) -> str:
    r"""What must come between ``sentence`` and a next one.

    Nothing where it ends in a blank line, else the terminators that end its last line and
    add a blank one, in the sentence's own (``\r\n`` in a file of them: a bare ``\n`` was
    written between k-best copies of a CRLF sentence).
    """
    final = sentence.lines[-1]
    if final.endswith("\n") and final.isspace():
        return ""
    ended = next((line for line in sentence.lines if line.endswith("\n")), "\n")
    newline = "\r\n" if ended.endswith("\r\n") else "\n"
    owed = "" if final.endswith("\n") else newline
    return owed if final.isspace() else owed + newline


def _open_lines(source: str | Path | TextIO | BinaryIO) -> tuple[str, Iterator[str]]:
    """The display name of ``source`` and a lazy iterator over its lines (with terminators)."""
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.exists():
            raise ConlluError(str(source), 0, "no such file")
        if path.is_dir():
            raise ConlluError(str(source), 0, "is a directory, not a file")
        return str(source), _path_lines(path, str(source))
    name = str(getattr(source, "name", "<stdin>"))
    if isinstance(source, io.RawIOBase | io.BufferedIOBase):
        return name, utf8_lines(cast("BinaryIO", source), name)
    return name, _stream_lines(cast("TextIO", source), name)


def _path_lines(path: Path, name: str) -> Iterator[str]:
    with open(path, "rb") as file:
        yield from utf8_lines(file, name)


def utf8_lines(file: BinaryIO, name: str) -> Iterator[str]:
    """The lines of a file opened in binary, decoded one by one, a leading BOM dropped.

    Raises:
        ConlluError: ``NAME:LINE:`` bytes that are not UTF-8 (with their byte offset in the
            file), or a line longer than :data:`MAX_LINE`.
    """
    # Binary reading and per-line decoding pins an encoding error to its line and byte offset.
    offset = 0
    for lineno, raw in _bounded_lines(file.readline, name):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            bad = raw[err.start : err.start + 1].hex()
            where = f"byte 0x{bad} at byte offset {offset + err.start}"
            raise ConlluError(name, lineno, f"not valid UTF-8: {where}") from None
        offset += len(raw)
        yield _without_bom(text, lineno)


def _stream_lines(file: TextIO, name: str) -> Iterator[str]:
    lines = _bounded_lines(file.readline, name)
    lineno = 0
    while True:
        try:
            lineno, text = next(lines)
        except StopIteration:
            return
        except UnicodeDecodeError as err:
            problem = f"not valid UTF-8 (at or after this line): {err}"
            raise ConlluError(name, lineno + 1, problem) from None
        yield _without_bom(text, lineno)


def _bounded_lines(readline: Callable[[int], AnyStr], name: str) -> Iterator[tuple[int, AnyStr]]:
    """(line number, line) pairs, each line read with at most :data:`MAX_LINE` in memory."""
    lineno = 0
    while line := readline(MAX_LINE + 1):
        lineno += 1
        if len(line) > MAX_LINE:
            unit = "bytes" if isinstance(line, bytes) else "characters"
            problem = f"line longer than {MAX_LINE} {unit} (1 MiB; is this a text file?)"
            raise ConlluError(name, lineno, problem)
        yield lineno, line


def _without_bom(text: str, lineno: int) -> str:
    return text[1:] if lineno == 1 and text.startswith(_BOM) else text


_CR_INSIDE = (
    "a carriage return (CR) inside the line: CoNLL-U lines end in LF or CRLF "
    "(a file whose lines end in CR alone needs converting)"
)
"""Read whole, such a file was one comment line and said "sentence has no words"."""


def _cr_inside(text: str) -> bool:
    """Whether a line holds a CR other than its CRLF ending.

    The last line of a file may lack its LF: a CR there ends nothing (a CRLF file cut before
    its last LF was read, and its output then refused by this reader).
    """
    cr = text.find("\r")
    return cr != -1 and not (cr == len(text) - 2 and text.endswith("\n"))


def _read_sentences(
    name: str,
    lines: Iterator[str],
    require_trees: bool,
    waiting: Callable[[], bool] | None = None,
    trailer: list[str] | None = None,
) -> Iterator[Sentence]:
    """:func:`read_conllu`'s sentences of ``lines``.

    ``waiting``: whether the next line has yet to come (None: it never has to).
    """
    raw: list[str] = []
    start = 0  # line number of the current sentence's first non-blank line; 0 before it
    closed = False  # a blank line followed the current sentence
    given = False  # a sentence was given at its closing blank line (see read_conllu)
    lineno = 0
    for lineno, text in enumerate(lines, 1):
        if not text:  # a byte order mark alone, without a line end: nothing is left of it
            continue
        if text.isspace():
            if not _is_blank(text):
                raise ConlluError(name, lineno, _odd_whitespace(text))
            raw.append(text)
            closed = start > 0
            if closed and waiting is not None and waiting():
                yield _parse_block(raw, start, name, require_trees)
                raw, start, closed, given = [], 0, False, True
            continue
        if _cr_inside(text):
            raise ConlluError(name, lineno, _CR_INSIDE)
        if closed:
            yield _parse_block(raw, start, name, require_trees)
            raw, start, closed = [], 0, False
        start = start or lineno
        raw.append(text)
    if start:
        yield _parse_block(raw, start, name, require_trees)
    elif not given:
        raise ConlluError(name, 0, f"no sentences found ({lineno} lines, all blank)")
    elif trailer is not None:
        trailer.extend(raw)


def _first_filled(lines: Sequence[str]) -> int:
    """The index of the first line that is not blank, where :attr:`Sentence.line` counts from.

    Blank lines opening a file belong to its first sentence.
    """
    return next(k for k, text in enumerate(lines) if not text.isspace())


def _parse_block(raw: list[str], start: int, name: str, require_trees: bool) -> Sentence:
    """Parses one sentence's raw lines; ``start`` is the line number of its first non-blank one."""
    first = _first_filled(raw)
    words: list[list[str]] = []
    word_lines: list[int] = []
    last_range: tuple[int, int, int] | None = None  # (low, high, line) of the last range read
    last_empty = (0, 0)  # (word, k) of the last empty node read, k.1 for none
    for k in range(first, len(raw)):
        text = raw[k]
        if text[0] == "#":
            continue
        if text.isspace():
            break
        cols = _split_columns(text, name, start + k - first)
        if _is_word(cols[0], len(words), name, start + k - first):
            words.append(cols)
            word_lines.append(k)
        elif "-" in cols[0]:
            last_range = _check_range(cols[0], last_range, name, start + k - first)
        else:
            last_empty = _check_empty(cols[0], last_empty, len(words), name, start + k - first)
    if not words:
        raise ConlluError(name, start, "sentence has no words (no line with an integer ID)")
    if last_range is not None and last_range[1] > len(words):
        low, high, line = last_range
        problem = f"multiword range {low}-{high} ends past the last word, {len(words)}"
        raise ConlluError(name, line, problem)
    line_of = [start + k - first for k in word_lines]
    heads = _parse_heads(words, line_of, name, require_trees)
    # Interning shares the many repeated tag, label and form strings: about 2/5 less memory.
    return Sentence(
        [intern(c[1]) for c in words], [intern(c[2]) for c in words],
        [intern(c[3]) for c in words], [intern(c[4]) for c in words],
        [intern(c[5]) for c in words], heads, [intern(c[7]) for c in words],
        raw, word_lines, name, start,
    )  # fmt: skip


def _split_columns(text: str, name: str, lineno: int) -> list[str]:
    cols = text.rstrip("\r\n").split("\t")
    if len(cols) != len(COLUMNS):
        problem = f"expected {len(COLUMNS)} tab-separated columns, found {len(cols)}"
        if len(cols) == 1:  # no TAB at all: most likely plain text given as CoNLL-U
            problem += "; for plain text (one tokenized sentence per line) pass format=text"
        raise ConlluError(name, lineno, problem)
    if "" in cols:
        raise ConlluError(name, lineno, f"empty {COLUMNS[cols.index('')]} column (use '_')")
    if any(map(str.isspace, cols)):  # read, it was written back refused ("invalid LEMMA ' '")
        k = next(k for k, cell in enumerate(cols) if cell.isspace())
        problem = f"{COLUMNS[k]} {_shown(cols[k])} is only whitespace: a field must not be empty"
        raise ConlluError(name, lineno, problem)
    return cols


def _is_word(field: str, n_before: int, name: str, lineno: int) -> bool:
    """True for a word ID (which must be n_before + 1); checks ranges and empty nodes in place."""
    try:
        value = _id_value(field)
    except ParseException:
        value = None
    if value is None:
        raise ConlluError(name, lineno, f"invalid ID {_shown(field)}")
    if isinstance(value, int):
        if value != n_before + 1:
            problem = f"word ID {value} out of order: expected {n_before + 1} (IDs must run 1..n)"
            raise ConlluError(name, lineno, problem)
        return True
    low, kind, _ = value
    if kind == "-" and low != n_before + 1:
        problem = f"multiword range {field} must start at the next word ID {n_before + 1}"
        raise ConlluError(name, lineno, problem)
    if kind == "." and low != n_before:
        raise ConlluError(name, lineno, f"empty node {field} must follow word {n_before}")
    return False


def _check_range(
    field: str, previous: tuple[int, int, int] | None, name: str, lineno: int
) -> tuple[int, int, int]:
    """(low, high, line) of the multiword range ``field``, refused inside the ``previous`` one.

    :func:`_is_word` has checked that it starts at the next word; its end is checked against
    the sentence's last word once that is read.
    """
    low, high = (int(bound) for bound in field.split("-"))
    if previous is not None and low <= previous[1]:
        problem = f"multiword range {field} starts inside the range {previous[0]}-{previous[1]}"
        raise ConlluError(name, lineno, problem)
    return low, high, lineno


def _check_empty(
    field: str, previous: tuple[int, int], n_before: int, name: str, lineno: int
) -> tuple[int, int]:
    """(word, k) of the empty node ``field``, refused unless it is the next after word n_before.

    :func:`_is_word` has checked that it follows word ``n_before``; the nodes after one word
    are numbered 1, 2, ... in order (a second 1.1, or 1.2 before 1.1, was read silently).
    """
    number = int(field.partition(".")[2])
    expected = previous[1] + 1 if previous[0] == n_before else 1
    if number != expected:
        problem = f"empty node {field} out of order: expected {n_before}.{expected}"
        raise ConlluError(name, lineno, problem)
    return n_before, number


def _parse_heads(
    words: list[list[str]], line_of: list[int], name: str, require_trees: bool
) -> list[int] | None:
    """Integer heads in 0..n, or None if any HEAD is ``_`` (an error when ``require_trees``)."""
    n = len(words)
    heads: list[int | None] = []
    for i, cols in enumerate(words, 1):
        try:
            head = _head_value(cols[_HEAD])
        except ParseException:
            problem = f"HEAD {_shown(cols[_HEAD])} is not an integer"
            raise ConlluError(name, line_of[i - 1], problem) from None
        if head is not None and not 0 <= head <= n:
            raise ConlluError(name, line_of[i - 1], f"HEAD {head} of word {i} not in 0..{n}")
        if require_trees and (head is None or cols[_DEPREL] == "_"):
            # Training and the evaluator's gold file read their trees as gold.
            problem = f"word {i} has no HEAD or DEPREL ('_'): this file's trees are read as gold"
            raise ConlluError(name, line_of[i - 1], problem)
        heads.append(head)
    return None if None in heads else cast("list[int]", heads)


def _read_text_sentences(name: str, lines: Iterator[str]) -> Iterator[Sentence]:
    count = 0
    leading = True  # in the lines that start with '#' before the first other one
    for lineno, text in enumerate(_broken_at_cr(lines), 1):
        forms = text.split()
        if forms:
            if leading:  # "# generator = UDPipe 2" first: the CoNLL-U was parsed as text
                _refuse_conllu(text, name, lineno)
                leading = text.startswith("#")
            count += 1
            yield Sentence.from_forms(forms, source=name, line=lineno)
    if not count:
        raise ConlluError(name, 0, "no sentences found (empty or blank input)")


def _broken_at_cr(lines: Iterator[str]) -> Iterator[str]:
    """The lines with a lone CR (classic Mac OS) also ending one, as ``rawtext`` reads text."""
    for line in lines:
        yield from filter(None, _AFTER_LONE_CR.split(line))


def _refuse_conllu(text: str, name: str, lineno: int) -> None:
    """Raises if a first line of a plain text input is CoNLL-U (the format was mistaken).

    The first lines are those starting with ``#`` up to the first other one, which is checked
    too: a file's own comments (``# generator = ...``, ``# global.columns = ...``) may come
    before the sentences' ``# sent_id``.
    """
    cols = text.rstrip("\r\n").split("\t")
    if _CONLLU_COMMENT.match(text):
        found = "a CoNLL-U sentence comment"
    elif len(cols) == len(COLUMNS) and _CONLLU_ID.fullmatch(cols[0]):
        found = f"a CoNLL-U word line ({len(COLUMNS)} tab-separated columns)"
    else:
        return
    raise ConlluError(name, lineno, f"{found} in plain text input: for CoNLL-U pass format=conllu")
