"""What the Python API reads from its caller, checked: sentences, columns, yes/no options, heads.

Torch-free: :class:`biaffine.api.Parser` and the ONNX runtime's
:class:`biaffine.onnxrun.OnnxParser` read the same inputs, and refuse the same mistakes, with
these functions.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set

from biaffine.data.conllu import Sentence, read_conllu, refuse_surrogates

__all__ = ["Inputs", "asked_columns", "check_flags", "head_lists", "input_sentences"]

Inputs = Sequence[Sequence[str]] | Sequence[Sentence] | str
"""Lists of word forms, :class:`Sentence` objects, or CoNLL-U text (one string)."""


def input_sentences(inputs: Inputs, hint: str = "") -> Iterator[Sentence]:
    """The sentences of ``inputs``: CoNLL-U text read, lists of words made sentences.

    Args:
        inputs: lists of word forms, :class:`Sentence` objects, or CoNLL-U text (one string;
            an empty or blank one holds no sentence).
        hint: added to the refusal of a string without word lines (``", or plain text as
            parse(text=...)"`` where the caller reads plain text too).

    Raises:
        ValueError: a string of no CoNLL-U word line, or a string given as one sentence (read
            as one word per character, it would parse silently).
        TypeError: ``inputs`` or a sentence that is no ordered sequence (a dict, a set, bytes,
            one :class:`Sentence`, None).
        biaffine.data.conllu.ConlluError: malformed CoNLL-U (named ``<input>:LINE``) or words
            (``<input>:k`` for the k-th list).
    """
    if isinstance(inputs, str):
        if not inputs.strip():  # no sentence, as [] and parse(text="") have none
            return
        if "\t" not in inputs:
            raise ValueError(
                "a string is read as CoNLL-U text, and this one has no tab-separated word "
                "lines: pass pre-tokenized sentences as lists of words, e.g. "
                f"[['The', 'cat', 'sat', '.']]{hint}"
            )
        try:
            inputs.encode("utf-8")
        except UnicodeEncodeError as error:  # a lone surrogate: named by its line
            line = inputs.count("\n", 0, error.start) + 1
            refuse_surrogates(inputs.split("\n")[line - 1], "<input>", line, "the line")
        text = io.StringIO(inputs)
        text.name = "<input>"  # what errors name, as for lists of words (not "<stdin>")
        yield from read_conllu(text)
        return
    if not _is_sequence_like(inputs):
        raise TypeError(
            f"inputs is a {type(inputs).__name__}: pass a list of sentences (lists of words or "
            "Sentence objects) or CoNLL-U text (a str)"
        )
    for k, item in enumerate(inputs):
        if isinstance(item, Sentence):
            yield item
        elif isinstance(item, str):
            raise ValueError(f"input {k} is a string: pass a list of words per sentence")
        elif not _is_sequence_like(item):
            raise TypeError(f"input {k} is a {type(item).__name__}: pass a list of words")
        else:
            yield Sentence.from_forms(list(item), source="<input>", line=k + 1)


def _is_sequence_like(value: object) -> bool:
    """An iterable whose items come in a meaningful order, and that is not one str or bytes.

    A dict would give its keys and a set its items in any order; bytes would give integers.
    """
    unordered = (Mapping, Set, str, bytes, bytearray)
    return isinstance(value, Iterable) and not isinstance(value, (Sentence, *unordered))


def head_lists(fixed_heads: Iterable[Sequence[int | None]]) -> list[list[int | None]]:
    """A copy of the fixed heads, one list per sentence.

    Raises:
        TypeError: ``fixed_heads``, or a sentence's heads, that is not an ordered iterable
            (None, a str, an int).
    """
    if not _is_sequence_like(fixed_heads):
        raise TypeError(f"fixed_heads is a {type(fixed_heads).__name__}: pass a list per sentence")
    lists = []
    for k, heads in enumerate(fixed_heads):
        if not _is_sequence_like(heads):
            raise TypeError(
                f"fixed_heads[{k}] is a {type(heads).__name__}: pass one list per sentence, "
                "an int (0 = ROOT) or None per word"
            )
        lists.append(list(heads))
    return lists


def asked_columns(
    columns: Sequence[str] | None, default: tuple[str, ...] = (), *, overwrite: bool = False
) -> tuple[str, ...]:
    """The ``columns=`` of a call as a tuple; ``default`` for None.

    Raises:
        TypeError: one str: ``tuple("upos")`` would ask for columns u, p, o and s.
        ValueError: ``overwrite`` with no column asked for: it did nothing, and the input's
            gold tags scored against themselves looked like a perfect tagger.
    """
    if overwrite and not columns:
        raise ValueError(
            "overwrite=True writes over the cells of the columns asked for, and none is: "
            "give columns= too (['all']: every column the model tags)"
        )
    if columns is None:
        return default
    if isinstance(columns, str):
        raise TypeError(f"columns={columns!r} is a str: pass a list, e.g. [{columns!r}]")
    return tuple(columns)


def check_flags(**flags: object) -> None:
    """Refuse a yes/no option that is not a bool: ``overwrite="no"`` would be true.

    Raises:
        TypeError: naming the option and its value.
    """
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name}={value!r} must be True or False")
