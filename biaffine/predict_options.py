"""What ``predict.py`` asks of each chunk of sentences, checked, and its files read and written.

One tree, probabilities, k-best, given heads, predicted columns.

The options become a :class:`~biaffine.inference.Request` (:func:`request_of`), answered by
:func:`biaffine.predicting.chunk_parser` (torch) or :mod:`biaffine.onnxrun`; what is written per
sentence is :func:`biaffine.results.with_result`. Torch-free, for both.
"""

from __future__ import annotations

import errno
import itertools
import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from biaffine.data.columns import CONLLU_NAMES, TAGGED
from biaffine.data.conllu import ConlluError, Sentence, read_conllu, read_text, write_conllu
from biaffine.data.pipes import PipeReader, Waits, open_pipe
from biaffine.files import (
    check_output,
    named_when_full,
    open_output,
    refuse_input_as_output,
    standard_input,
    standard_output,
)
from biaffine.inference.request import ALL_COLUMNS, Request
from biaffine.inference.settings import DecoderSettings
from biaffine.pipeline import MAX_SENTENCE_WORDS

__all__ = [
    "LIST_OPTIONS",
    "STDIO",
    "ChunkParser",
    "InputSentences",
    "PredictOptions",
    "bracketed_lists",
    "check_arguments",
    "check_options",
    "check_source",
    "next_chunk",
    "parse_columns",
    "read_sentences",
    "request_of",
    "write_sentences",
]

STDIO = "-"
"""The input or output path that means standard input or output."""


ChunkParser = Callable[[list[Sentence]], list[list[Sentence]]]
"""Sentences -> per sentence, the sentences to write (the first one is the tree scored by eval)."""


@dataclass(frozen=True, slots=True)
class PredictOptions:
    """What to write besides the best tree (all off: one tree per sentence, as always).

    Attributes:
        probabilities: head and label probabilities in MISC, the tree's log-probability in a
            comment (graph parsers).
        kbest: write the k best trees of each sentence, best first (None: one tree).
        keep_given_heads: keep the HEAD cells that the input fills, predict those that are ``_``.
        columns: tagged columns to predict and write (``upos``, ``xpos``, ``feats``, ``lemma``);
            None: what the input asks by default (raw text: every column the model tags; other
            input: none), ``()``: none.
        overwrite_columns: write them over the input's values (default: fill ``_`` cells only).
    """

    probabilities: bool = False
    kbest: int | None = None
    keep_given_heads: bool = False
    columns: tuple[str, ...] | None = None
    overwrite_columns: bool = False

    def names(self) -> list[str]:
        """The tree options that are on, as ``predict.py`` spells them."""
        on = {
            "probabilities=true": self.probabilities,
            f"kbest={self.kbest}": self.kbest is not None,
            "keep_given_heads=true": self.keep_given_heads,
        }
        return [name for name, value in on.items() if value]


_WHY_NOT_BOTH = {
    ("probabilities", "kbest"): "the k best trees carry their own scores (# kbest_score)",
    ("probabilities", "keep_given_heads"): "the probabilities would ignore the given heads",
    ("kbest", "keep_given_heads"): "there is no constrained k-best",
}


LIST_OPTIONS = ("columns",)
"""``predict.py`` options whose value is a list (:func:`bracketed_lists`)."""


def bracketed_lists(arguments: Sequence[str]) -> list[str]:
    """The command line with ``columns=upos,lemma`` written ``columns=[upos,lemma]``.

    Hydra reads an unbracketed comma list as a sweep, and without ``-m`` stops at it with a
    five-line "Ambiguous value" message (exit 1), yet that is how a user writes a list of
    columns. ``predict.py`` sweeps nothing, so a comma list of :data:`LIST_OPTIONS` is read as
    the list it means; a value in brackets or quotes, or with an interpolation, is left as
    written.
    """
    found = []
    for argument in arguments:
        key, equals, value = argument.partition("=")
        plain = value and value[0] not in "[('\"" and "${" not in value
        if equals and key in LIST_OPTIONS and plain and "," in value:
            # An empty item (upos, or "upos, ") in brackets was Hydra's grammar error; as a string,
            # the option's own check names it.
            empty = any(not item.strip() for item in value.split(",")) and "'" not in value
            argument = f"{key}='{value}'" if empty else f"{key}=[{value}]"
        found.append(argument)
    return found


def parse_columns(value: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``predict.py columns=upos,xpos`` (a list, one name, ``all``, or null) as column names.

    A comma list is one (:func:`bracketed_lists`), in brackets or not; a comma-separated string
    (quoted on the command line) is read too. Null, and an empty ``columns=``, are None (the
    input's default: every column for raw text); ``[]`` is no column (it was read as null: raw
    text got every column, where the Python API's ``columns=[]`` gives none).

    Raises:
        ValueError: an unknown column (one line naming the known ones), or ``all`` beside
            others.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None  # columns=$COLUMNS with nothing in it keeps the default, as it always did
    if not isinstance(value, (str, Sequence)) or any(not isinstance(v, str) for v in value):
        raise ValueError(f"columns={value!r}: give column names, [upos,lemma], or all")
    given = value.split(",") if isinstance(value, str) else list(value)
    spelled = ",".join(given) if isinstance(value, str) else f"[{','.join(given)}]"
    if not all(name.strip() for name in given):  # upos, (a trailing comma) was Hydra's message
        raise ValueError(f"columns={spelled}: an empty column name")
    names = list(dict.fromkeys(name.strip().lower() for name in given))
    if names == ["all"]:  # all,all too, as upos,upos is upos
        return ALL_COLUMNS
    if "all" in names:
        raise ValueError(f"columns={spelled}: all stands alone (every column), or name each")
    unknown = [name for name in names if name not in TAGGED]
    if unknown:
        known = ", ".join(CONLLU_NAMES[name].lower() for name in TAGGED)
        raise ValueError(f"columns={spelled}: unknown {', '.join(unknown)}; known: {known}, all")
    return tuple(names)


def check_options(options: PredictOptions, decoder: DecoderSettings, input_format: str) -> None:
    """Refuse options that are malformed, meaningless together, or impossible with the decoder.

    Raises:
        ValueError: one line naming the setting and what to do instead.
    """
    k = options.kbest
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ValueError(f"kbest={k!r} must be an integer >= 1 (or null for one tree)")
    switches = {
        "probabilities": options.probabilities,
        "keep_given_heads": options.keep_given_heads,
        "overwrite_columns": options.overwrite_columns,
    }
    for name, value in switches.items():
        if not isinstance(value, bool):
            raise ValueError(f"{name}={value!r} must be true or false")
    if options.overwrite_columns and not options.columns:  # the gold tags scored themselves
        raise ValueError(
            "overwrite_columns=true writes over the cells of the columns= asked for, and none "
            "is: give columns= too (columns=all for every column the model tags)"
        )
    names = options.names()
    if len(names) > 1:
        pair = tuple(name.split("=")[0] for name in names[:2])
        raise ValueError(f"{names[0]} and {names[1]} do not combine: {_WHY_NOT_BOTH[pair]}")
    if names and not options.probabilities and decoder.algorithm == "greedy":
        raise ValueError(
            f"{names[0]} needs decoder=mst, mst_multiroot or eisner, not greedy "
            "(greedy output need not be a tree)"
        )
    if options.keep_given_heads and input_format != "conllu":
        raise ValueError(
            f"keep_given_heads=true reads the HEAD column of CoNLL-U, which format={input_format} "
            "lacks"
        )


def request_of(options: PredictOptions, chunk: list[Sentence]) -> Request:
    """The request ``options`` make of ``chunk`` (its given heads, with ``keep_given_heads``)."""
    fixed = [s.given_heads() for s in chunk] if options.keep_given_heads else None
    columns = options.columns or ()
    return Request(options.probabilities, options.kbest, fixed, columns, options.overwrite_columns)


def check_arguments(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    fmt: str,
    chunk: int,
    decoder: DecoderSettings,
    options: PredictOptions,
    formats: Collection[str],
    model_files: Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Refuse the arguments of a parse of ``source`` into ``dest`` that cannot work.

    A format not in ``formats``, a chunk size below 1, options that do not combine
    (:func:`check_options`), an input that is not there or is a folder, an output folder that
    does not exist, an output that is a folder, the input or one of ``model_files`` (the
    checkpoint, the segmenter, an export's files: ``output=parser.pt`` wrote the parse over
    the model). Called before a model loads (seconds), so a mistyped path costs none of them.

    Raises:
        ValueError: one line naming the setting.
        FileNotFoundError: ``source`` or the folder of ``dest`` does not exist.
        IsADirectoryError: ``source`` or ``dest`` is a folder.
    """
    if fmt not in formats:
        raise ValueError(f"format={fmt!r}; expected one of {', '.join(formats)}")
    if chunk < 1:
        raise ValueError(f"chunk_sentences={chunk} must be >= 1")
    check_options(options, decoder, fmt)
    if str(source) != STDIO:
        check_source(source)
    else:
        standard_input()
    if str(dest) == STDIO:
        standard_output(inputs=[source, *model_files])
        return
    check_output(dest)
    refuse_input_as_output(dest, [source, *model_files])


def check_source(source: str | os.PathLike[str]) -> None:
    """Refuse an input path that is not there or is a folder, as opening it would.

    Pipes, devices and ``/dev/stdin`` pass: only reading them tells more.
    """
    path = Path(source)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(source))
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), str(source))


class InputSentences(Iterator[Sentence]):
    """The sentences of ``predict.py``'s input, lazily, and what its writer needs of the input.

    Attributes:
        trailer: blank lines after the last sentence that no sentence holds, to be written
            after it (:func:`biaffine.data.conllu.read_conllu`, from a pipe).
    """

    def __init__(
        self,
        sentences: Iterator[Sentence],
        pipe: Waits | None = None,
        trailer: list[str] | None = None,
    ) -> None:
        """``sentences`` as they are read from ``pipe``, where the input is a pipe.

        ``pipe``: what tells whether the next sentence has yet to come (a :class:`PipeReader`,
        or raw text's :class:`biaffine.pipeline.RawSentences`).
        """
        self._sentences = sentences
        self._pipe = pipe
        self.trailer = trailer if trailer is not None else []

    def __next__(self) -> Sentence:
        """The next sentence (ConlluError where the input is malformed)."""
        return next(self._sentences)

    def waiting(self) -> bool:
        """Whether the next sentence has yet to come: never from a file, which is all there."""
        return self._pipe is not None and self._pipe.waiting()


def read_sentences(
    source: str | os.PathLike[str], fmt: str, *, early: bool = True
) -> InputSentences:
    """The sentences of ``source`` (``-``: stdin), CoNLL-U or ``text`` (one per line), lazily.

    Standard input is read as bytes and decoded as a file is, so that invalid UTF-8 is an
    error naming ``<stdin>`` and the line, whatever the locale's encoding. A pipe or a
    terminal (standard input, a named pipe, ``/dev/stdin``) is read as it comes
    (:mod:`biaffine.data.pipes`): each sentence is given as soon as it has come (a CoNLL-U
    one at its closing blank line where ``early``: not for k-best output, see
    :func:`~biaffine.data.conllu.read_conllu`).

    Raises:
        biaffine.data.conllu.ConlluError: while iterating, malformed input or a sentence of
            more than :data:`~biaffine.pipeline.MAX_SENTENCE_WORDS` words.
    """
    pipe = open_pipe(source, _has_words if fmt == "text" else None)
    stream = pipe if pipe is not None else standard_input() if str(source) == STDIO else source
    trailer: list[str] = []
    if fmt == "text":
        sentences = read_text(stream)
    else:
        sentences = read_conllu(stream, trailer=trailer, early=early)
    return InputSentences(_refuse_long(_closing(sentences, pipe)), pipe, trailer)


def next_chunk(sentences: InputSentences, size: int) -> list[Sentence]:
    """Up to ``size`` sentences, read for one parse; none at the input's end.

    From a pipe, no more than have come (but at least one): a writer that waits for its
    answers gets them rather than wait on the parser for good.
    """
    chunk = list(itertools.islice(sentences, 1))
    while chunk and len(chunk) < size and not sentences.waiting():
        following = next(sentences, None)
        if following is None:
            break
        chunk.append(following)
    return chunk


def _has_words(line: bytes) -> bool:
    """Whether a line of plain text is a sentence: its blank lines are skipped."""
    return bool(line.decode("utf-8", "replace").split())


def _closing(sentences: Iterator[Sentence], pipe: PipeReader | None) -> Iterator[Sentence]:
    try:
        yield from sentences
    finally:
        if pipe is not None:
            pipe.close()


def _refuse_long(sentences: Iterator[Sentence]) -> Iterator[Sentence]:
    for sentence in sentences:
        if len(sentence) > MAX_SENTENCE_WORDS:
            problem = (
                f"a sentence of {len(sentence)} words; at most {MAX_SENTENCE_WORDS} are parsed: "
                "split it into shorter sentences"
            )
            raise ConlluError(sentence.source, sentence.line, problem)
        yield sentence


def write_sentences(
    dest: str | os.PathLike[str], sentences: Iterable[Sentence], trailer: Sequence[str] = ()
) -> None:
    """Write CoNLL-U to ``dest`` (``-``: stdout), then the lines of ``trailer``.

    A file is written atomically, special files (pipes, devices) in place
    (:func:`biaffine.files.open_output`). ``trailer`` is read once every sentence is written
    (:attr:`InputSentences.trailer`, filled at the input's end).

    Raises:
        OSError: a write failed for want of space, naming ``dest`` (Python's does not).
    """

    def write(out: TextIO) -> None:
        write_conllu(out, sentences)
        out.write("".join(trailer))

    if str(dest) != STDIO:
        with open_output(dest, "w", encoding="utf-8", newline="") as out:
            write(out)
        return
    with named_when_full("<stdout>"):
        write(standard_output())
