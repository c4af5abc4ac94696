"""Tests for conllu: byte-exact round trips, with_tree, FILE:LINE errors, streaming."""

from __future__ import annotations

import io
import itertools
import pickle
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from biaffine.data.conllu import (
    MAX_LINE,
    ConlluError,
    Sentence,
    read_conllu,
    read_text,
    write_conllu,
)

TINY = Path(__file__).parents[2] / "data" / "tiny.conllu"
WORD = "\t".join(["{i}", "w{i}", "_", "X", "_", "_", "{h}", "dep", "_", "_"])


def word_line(i: int, head: int | str = 0) -> str:
    return WORD.format(i=i, h=head)


def to_text(sentences: list[Sentence]) -> str:
    out = io.StringIO(newline="")
    write_conllu(out, sentences)
    return out.getvalue()


def write_bytes(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


# --- the hand-written fixture -----------------------------------------------------------------


def test_tiny_round_trip_is_byte_identical(tmp_path: Path) -> None:
    sentences = list(read_conllu(TINY, require_trees=True))
    out = tmp_path / "out.conllu"
    write_conllu(out, sentences)
    assert out.read_bytes() == TINY.read_bytes()
    assert to_text(sentences).encode("utf-8") == TINY.read_bytes()


def test_tiny_words_skip_ranges_and_empty_nodes_but_lines_keep_them() -> None:
    sentences = list(read_conllu(TINY))
    assert [len(s) for s in sentences] == [4, 9, 5, 7, 5, 4, 1]
    mwt, empty, spaced, gonna = sentences[2], sentences[3], sentences[4], sentences[5]
    assert mwt.forms == ["You", "ca", "n't", "go", "."]
    assert any(line.startswith("2-3\tcan't\t") for line in mwt.lines)
    assert "like" not in empty.forms[2:]
    assert any(line.startswith("5.1\tlike\t") for line in empty.lines)
    assert empty.heads == [2, 0, 2, 5, 2, 5, 2]
    assert spaced.forms[2] == "10 000"
    assert spaced.lemmas[2] == "10 000"
    assert gonna.forms == ["Gon", "na", "go", "!"]
    assert sentences[1].heads == [2, 4, 4, 0, 7, 7, 2, 4, 4]  # the non-projective tree
    assert sentences[1].deprels[1] == "nsubj:pass"


def test_tiny_metadata_comments_and_line_numbers() -> None:
    sentences = list(read_conllu(TINY))
    first = sentences[0]
    assert first.comments[:3] == ["# newdoc id = tiny-doc-1", "# sent_id = tiny-1", "# newpar"]
    assert first.metadata["text"] == "The cat sat."
    assert sentences[5].metadata["text"] == "Gonna go!"  # '# text =X' without a space
    assert [s.line for s in sentences] == [1, 10, 23, 32, 43, 52, 60]
    assert all(s.source == str(TINY) for s in sentences)
    assert TINY.read_text(encoding="utf-8").splitlines()[22] == "# sent_id = tiny-3-multiword"


def test_reading_an_open_text_file_uses_its_name_or_stdin() -> None:
    with open(TINY, encoding="utf-8", newline="") as file:
        sentences = list(read_conllu(file))
    assert sentences[0].source == str(TINY)
    streamed = list(read_conllu(io.StringIO(TINY.read_text(encoding="utf-8"))))
    assert streamed[0].source == "<stdin>"
    assert to_text(streamed) == TINY.read_text(encoding="utf-8")


# --- with_tree ------------------------------------------------------------------------------


def changed_tree(sentence: Sentence) -> tuple[list[int], list[str]]:
    n = len(sentence)
    heads = [(i + 1) % (n + 1) for i in range(1, n + 1)]  # word i -> i+1, word n -> ROOT
    return heads, [f"rel{i}" for i in range(1, n + 1)]


@pytest.mark.parametrize("index", range(7))
def test_with_tree_changes_only_head_and_deprel_columns(index: int) -> None:
    sentence = list(read_conllu(TINY))[index]
    before = list(sentence.lines)
    heads, rels = changed_tree(sentence)
    new = sentence.with_tree(heads, rels)
    assert sentence.lines == before, "the original sentence must not change"
    assert len(new.lines) == len(before)
    words = dict(zip(new.word_lines, range(len(new)), strict=True))
    for k, (old_line, new_line) in enumerate(zip(before, new.lines, strict=True)):
        if k not in words:
            assert new_line == old_line
            continue
        old_cols, new_cols = old_line[:-1].split("\t"), new_line[:-1].split("\t")
        assert new_line.endswith("\n")
        assert new_cols[:6] == old_cols[:6]
        assert new_cols[8:] == old_cols[8:]  # DEPS and MISC untouched
        assert new_cols[6:8] == [str(heads[words[k]]), rels[words[k]]]
    assert new.heads == heads
    assert new.deprels == rels
    assert new.forms == sentence.forms
    assert new.source == sentence.source


def test_with_tree_output_reads_back_with_the_new_tree(tmp_path: Path) -> None:
    sentences = list(read_conllu(TINY))
    trees = [changed_tree(s) for s in sentences]
    write_conllu(
        tmp_path / "p.conllu", (s.with_tree(*t) for s, t in zip(sentences, trees, strict=True))
    )
    again = list(read_conllu(tmp_path / "p.conllu", require_trees=True))
    assert [(s.heads, s.deprels) for s in again] == [(h, r) for h, r in trees]


def test_with_tree_accepts_root_prefixed_arrays() -> None:
    np = pytest.importorskip("numpy")
    sentence = next(iter(read_conllu(TINY)))
    heads = np.array([-1, 2, 3, 0, 3], dtype=np.int64)
    new = sentence.with_tree(heads, ["<root>", "det", "nsubj", "root", "punct"])
    assert new.lines == sentence.lines
    assert new.heads == [2, 3, 0, 3]


def test_with_tree_of_identical_tree_keeps_bytes() -> None:
    sentences = list(read_conllu(TINY))
    same = [s.with_tree(s.heads, s.deprels) for s in sentences]
    assert to_text(same) == TINY.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("heads", "rels", "problem"),
    [
        ([2, 3, 0], ["a", "b", "c"], "heads has 3 entries for 4 words"),
        ([2, 3, 0, 5], ["a", "b", "c", "d"], "head 5 of word 4 not in 0..4"),
        ([2, 3, 0, -1], ["a", "b", "c", "d"], "head -1"),
        ([2, 3, 0, 3], ["a", "b", "", "d"], "invalid label ''"),
        ([2, 3, 0, 3], ["a", "b\tc", "c", "d"], "invalid label"),
    ],
)
def test_with_tree_rejects_bad_trees(heads: list[int], rels: list[str], problem: str) -> None:
    sentence = next(iter(read_conllu(TINY)))
    with pytest.raises(ConlluError, match=f"^{TINY}:1: .*{problem}"):
        sentence.with_tree(heads, rels)


def test_with_tree_rejects_float_heads() -> None:
    sentence = next(iter(read_conllu(TINY)))
    with pytest.raises(TypeError):
        sentence.with_tree([2.0, 3, 0, 3], ["a", "b", "c", "d"])


# --- layout edge cases: every byte comes back ----------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"{word_line(1)}\n", id="no-final-blank-line"),
        pytest.param(f"{word_line(1)}", id="no-final-newline"),
        pytest.param(f"\n\n{word_line(1)}\n\n", id="leading-blank-lines"),
        pytest.param(f"{word_line(1)}\n\n\n\n{word_line(1)}\n\n\n", id="several-blank-lines"),
        pytest.param(f"{word_line(1)}\r\n\r\n{word_line(1)}\r\n\r\n", id="crlf"),
        pytest.param(f"{word_line(1)}\n \t\n{word_line(1)}\n\n", id="whitespace-only-separator"),
        pytest.param(f"# a\n#b=c\n# c = d = e\n{word_line(1)}\n\n", id="odd-comments"),
        pytest.param(f"{word_line(1)}\n# late comment\n\n", id="comment-after-words"),
        pytest.param(f"0.1\t_\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(1)}\n\n", id="empty-node-0.1"),
    ],
)
def test_unusual_layouts_round_trip_byte_for_byte(tmp_path: Path, text: str) -> None:
    path = write_bytes(tmp_path / "in.conllu", text)
    sentences = list(read_conllu(path))
    write_conllu(tmp_path / "out.conllu", sentences)
    assert (tmp_path / "out.conllu").read_bytes() == path.read_bytes()


def test_crlf_with_tree_keeps_crlf(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "in.conllu", f"{word_line(1)}\r\n{word_line(2, 1)}\r\n\r\n")
    sentence = next(read_conllu(path))
    new = sentence.with_tree([2, 0], ["x", "root"])
    assert new.lines[0] == word_line(1, 2).replace("dep", "x") + "\r\n"


def test_writer_separates_a_sentence_read_without_closing_blank_line(tmp_path: Path) -> None:
    last = next(read_conllu(write_bytes(tmp_path / "a.conllu", word_line(1))))
    text = to_text([last, last])
    assert text == f"{word_line(1)}\n\n{word_line(1)}"
    assert len(list(read_conllu(io.StringIO(text)))) == 2


@pytest.mark.parametrize("ending", ["", "\r\n"])
def test_a_crlf_sentence_without_its_blank_line_is_separated_in_crlf(
    tmp_path: Path, ending: str
) -> None:
    """A bare LF was written between k-best copies of the last sentence of a CRLF file."""
    line = word_line(1) + "\r\n" + word_line(2)
    last = next(read_conllu(write_bytes(tmp_path / "a.conllu", line + ending)))
    text = to_text([last, last])
    assert text == f"{line}\r\n\r\n{line}{ending}"
    assert "\n" not in text.replace("\r\n", "")
    assert len(list(read_conllu(io.StringIO(text, newline="")))) == 2


def test_each_sentence_is_written_before_the_next_is_asked_for() -> None:
    """One was held back until the next came: a pipe's client waited a sentence for each."""
    out = io.StringIO()
    sentences = list(read_conllu(io.StringIO(f"{word_line(1)}\n\n{word_line(1)}\n\n")))
    written = []

    def given() -> Iterator[Sentence]:
        for sentence in sentences:
            yield sentence
            written.append(out.getvalue())

    write_conllu(out, given())
    assert written == [f"{word_line(1)}\n\n", f"{word_line(1)}\n\n" * 2]


def test_leading_bom_is_dropped_the_one_byte_sequence_not_written_back(tmp_path: Path) -> None:
    text = "# x = y\n" + word_line(1) + "\n\n"
    path = write_bytes(tmp_path / "bom.conllu", "\ufeff" + text)
    sentence = next(read_conllu(path))
    assert sentence.metadata == {"x": "y"}
    assert len(sentence) == 1
    assert to_text([sentence]) == text  # the README names this exception to "every byte"


def test_a_leading_bom_on_a_stream_is_dropped_as_in_a_file() -> None:
    # stdin used to keep it, and then refused the first line ("found 1 column").
    text = "# x = y\n" + word_line(1) + "\n\n"
    sentence = next(read_conllu(io.StringIO("\ufeff" + text)))
    assert sentence.metadata == {"x": "y"}
    assert to_text([sentence]) == text
    assert next(read_text(io.StringIO("\ufeffa b\n"))).forms == ["a", "b"]


def test_heads_none_when_some_head_is_underscore(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "p.conllu", f"{word_line(1, '_')}\n{word_line(2)}\n\n")
    sentence = next(read_conllu(path))
    assert sentence.heads is None
    assert to_text([sentence]).encode() == path.read_bytes()

    assert sentence.given_heads() == [None, 0]


def test_given_heads_of_full_and_bare_sentences() -> None:
    sentences = list(read_conllu(TINY))
    assert all(s.given_heads() == s.heads for s in sentences)
    assert Sentence.from_forms(["a", "b"]).given_heads() == [None, None]


def test_with_misc_appends_after_kept_items_and_replaces_its_own_keys() -> None:
    spaced = list(read_conllu(TINY))[4]  # MISC: '_', 'Gloss=ten=thousand|Flag|...', 'SpaceAfter=No'
    pairs = [[("P", "0.5"), ("Q", "1")]] * len(spaced)
    once = spaced.with_misc(pairs)
    misc = [once.lines[k].rstrip("\n").split("\t")[9] for k in once.word_lines]
    assert misc[0] == "P=0.5|Q=1"
    assert misc[2] == "Gloss=ten=thousand|Flag|Translit=10 000|P=0.5|Q=1"
    assert misc[3] == "SpaceAfter=No|P=0.5|Q=1"
    assert once.with_misc(pairs).lines == once.lines  # no repeated keys
    for ours, theirs in zip(once.lines, spaced.lines, strict=True):
        assert ours.split("\t")[:9] == theirs.split("\t")[:9]


def test_with_comments_go_after_the_comments_and_replace_their_own_keys() -> None:
    mwt = list(read_conllu(TINY))[2]
    once = mwt.with_comments([("k", "1"), ("j", "x y")])
    assert once.lines[: len(mwt.comments) + 2] == [
        *(c + "\n" for c in mwt.comments),
        "# k = 1\n",
        "# j = x y\n",
    ]
    assert [once.lines[k] for k in once.word_lines] == [mwt.lines[k] for k in mwt.word_lines]
    assert once.with_comments([("k", "1"), ("j", "x y")]).lines == once.lines
    assert next(read_conllu(io.StringIO(to_text([once])))).metadata["j"] == "x y"


def test_crlf_comments_keep_crlf() -> None:
    sentence = next(read_conllu(io.StringIO(f"{word_line(1)}\r\n\r\n", newline="")))
    assert sentence.with_comments([("k", "v")]).lines[0] == "# k = v\r\n"


@pytest.mark.parametrize(("key", "value"), [("a=b", "1"), ("a", "x|y"), ("a b", "1"), ("a", "")])
def test_misc_items_that_do_not_fit_are_refused(key: str, value: str) -> None:
    sentence = Sentence.from_forms(["w"])
    with pytest.raises(ConlluError, match="cannot write"):
        sentence.with_misc([[(key, value)]])


# --- malformed input: ConlluError naming file and line -----------------------------------------

GOOD = f"# sent_id = 1\n{word_line(1)}\n{word_line(2, 1)}\n\n"
MALFORMED = {
    "too-few-columns": (f"{word_line(1)}\n1\tw\t_\t_\n\n", 2, "expected 10 tab-separated columns"),
    "too-many-columns": (f"{word_line(1)}\textra\n\n", 1, "found 11"),
    "spaces-not-tabs": (word_line(1).replace("\t", "  ") + "\n\n", 1, "found 1"),
    "empty-column": (word_line(1).replace("\tX\t", "\t\t") + "\n\n", 1, "empty UPOS column"),
    # Read, a cell of spaces was written back refused: "invalid LEMMA ' '" at the sentence's
    # first line, once the model's lemma of a FORM ' ' or a kept LEMMA ' ' was written.
    "space-form": (
        f"{word_line(1)}\n" + word_line(2).replace("\tw2\t", "\t \t", 1) + "\n\n",
        2,
        "FORM ' ' is only whitespace: a field must not be empty",
    ),
    "no-break-space-lemma": (
        word_line(1).replace("\t_\t", "\t\u00a0\t", 1) + "\n\n",
        1,
        "LEMMA '\\\\xa0' is only whitespace",
    ),
    "head-not-integer": (f"{word_line(1, 'x')}\n\n", 1, "HEAD 'x' is not an integer"),
    "head-leading-zero": (f"{word_line(1)}\n{word_line(2, '01')}\n\n", 2, "not an integer"),
    "head-out-of-range": (f"{word_line(1)}\n{word_line(2, 3)}\n\n", 2, "HEAD 3 of word 2 not in"),
    "head-negative": (f"{word_line(1, -1)}\n\n", 1, "HEAD -1 of word 1 not in 0..1"),
    "ids-skip": (f"{word_line(1)}\n{word_line(3)}\n\n", 2, "word ID 3 out of order: expected 2"),
    "ids-start-at-2": (f"{word_line(2)}\n\n", 1, "word ID 2 out of order: expected 1"),
    "ids-repeat": (f"{word_line(1)}\n{word_line(1)}\n\n", 2, "word ID 1 out of order"),
    "id-zero": (f"{word_line(0)}\n\n", 1, "word ID 0 out of order"),
    "id-not-a-number": (word_line(1).replace("1", "a", 1) + "\n\n", 1, "invalid ID 'a'"),
    "id-underscore": ("_" + word_line(1)[1:] + "\n\n", 1, "invalid ID '_'"),
    "range-misplaced": (
        f"{word_line(1)}\n1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(2)}\n\n",
        2,
        "multiword range 1-2 must start at the next word ID 2",
    ),
    # Read as a sentence's end: the sentence was cut there, and refused for its heads.
    "form-feed-line": (f"{word_line(1)}\n\f\n{word_line(2, 1)}\n\n", 2, "U\\+000C"),
    "no-break-space-line": (
        f"{word_line(1)}\n\u00a0\n{word_line(2, 1)}\n\n",
        2,
        "a line of whitespace only, with U\\+00A0 \\(NO-BREAK SPACE\\): a blank line ends",
    ),
    "range-backwards": (f"2-1\tab\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(1)}\n\n", 1, "invalid ID"),
    # Both were read; only Sentence.tokens (the evaluator) refused them, predict.py never.
    "range-past-the-end": (
        f"1-5\tab\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(1)}\n{word_line(2)}\n\n",
        1,
        "multiword range 1-5 ends past the last word, 2",
    ),
    "range-inside-a-range": (
        f"1-3\tabc\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(1)}\n"
        f"2-3\tbc\t_\t_\t_\t_\t_\t_\t_\t_\n{word_line(2)}\n{word_line(3)}\n\n",
        3,
        "multiword range 2-3 starts inside the range 1-3",
    ),
    "empty-node-misplaced": (
        f"{word_line(1)}\n2.1\tx\t_\t_\t_\t_\t_\t_\t_\t_\n\n",
        2,
        "empty node 2.1 must follow word 1",
    ),
    "comments-only": ("# sent_id = 1\n# text = nothing\n\n", 1, "sentence has no words"),
    "ranges-only": ("1-2\tab\t_\t_\t_\t_\t_\t_\t_\t_\n\n", 1, "sentence has no words"),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_input_raises_with_file_and_line(tmp_path: Path, kind: str) -> None:
    text, line, problem = MALFORMED[kind]
    # A valid sentence first, so the line number must be counted across sentences.
    path = write_bytes(tmp_path / f"{kind}.conllu", GOOD + text)
    offset = GOOD.count("\n")
    with pytest.raises(ConlluError, match=problem) as info:
        list(read_conllu(path))
    assert str(info.value).startswith(f"{path}:{line + offset}: ")
    assert isinstance(info.value, ValueError)
    assert (info.value.source, info.value.line) == (str(path), line + offset)


def test_malformed_stream_names_stdin() -> None:
    with pytest.raises(ConlluError, match=r"^<stdin>:2: .*found 4"):
        list(read_conllu(io.StringIO(f"{word_line(1)}\n1\tw\t_\t_\n\n")))


@pytest.mark.parametrize(
    ("head", "rel"), [("_", "dep"), (0, "_")], ids=["head-underscore", "deprel-underscore"]
)
def test_require_trees_refuses_unannotated_words(tmp_path: Path, head: object, rel: str) -> None:
    bad = word_line(2, head).replace("\tdep\t", f"\t{rel}\t")
    path = write_bytes(tmp_path / "u.conllu", f"{word_line(1)}\n{bad}\n\n")
    assert len(list(read_conllu(path))) == 1  # fine for prediction input
    pattern = (
        rf"^{path}:2: word 2 has no HEAD or DEPREL \('_'\): this file's trees are read as gold$"
    )
    with pytest.raises(ConlluError, match=pattern):
        list(read_conllu(path, require_trees=True))


def test_missing_file_raises_at_call_time(tmp_path: Path) -> None:
    missing = tmp_path / "nope.conllu"
    with pytest.raises(ConlluError, match=rf"^{missing}:0: no such file"):
        read_conllu(missing)
    with pytest.raises(ConlluError, match=rf"^{missing}:0: no such file"):
        read_text(missing)
    with pytest.raises(ConlluError, match=rf"^{tmp_path}:0: is a directory"):
        read_conllu(tmp_path)


@pytest.mark.parametrize(
    "text", ["", "\n\n  \n", "\ufeff"], ids=["empty", "blank-lines", "byte-order-mark"]
)
def test_file_without_sentences_raises(tmp_path: Path, text: str) -> None:
    # A byte order mark alone left an empty line, which the reader took for a sentence's
    # first and indexed (IndexError, a traceback).
    path = write_bytes(tmp_path / "empty.conllu", text)
    with pytest.raises(ConlluError, match=rf"^{path}:0: no sentences found"):
        list(read_conllu(path))
    with pytest.raises(ConlluError, match=rf"^{path}:0: no sentences found"):
        list(read_text(path))
    with pytest.raises(ConlluError, match=r"^<stdin>:0: no sentences found"):
        list(read_conllu(io.StringIO(text)))


def test_invalid_utf8_names_line_and_byte_offset(tmp_path: Path) -> None:
    data = (GOOD + word_line(1)).encode() + b"\xff\n\n"
    path = write_bytes(tmp_path / "latin.conllu", data)
    with pytest.raises(ConlluError, match=r"not valid UTF-8: byte 0xff at byte offset") as info:
        list(read_conllu(path))
    assert str(info.value).startswith(f"{path}:5: ")
    assert str(data.index(b"\xff")) in str(info.value)


def test_invalid_utf8_in_a_text_stream_names_a_line() -> None:
    stream = io.TextIOWrapper(io.BytesIO((GOOD + "1\t\xe9").encode("latin-1")), encoding="utf-8")
    with pytest.raises(ConlluError, match=r":\d+: not valid UTF-8"):
        list(read_conllu(stream))


def test_a_binary_stream_is_decoded_as_strictly_as_a_file() -> None:
    # predict.py reads stdin's bytes: under C.UTF-8, sys.stdin's text would hide a bad byte.
    assert [s.lines for s in read_conllu(io.BytesIO(TINY.read_bytes()))] == [
        s.lines for s in read_conllu(TINY)
    ]
    data = (GOOD + word_line(1)).encode() + b"\xff\n\n"
    with pytest.raises(ConlluError) as info:
        list(read_conllu(io.BufferedReader(io.BytesIO(data))))
    offset = data.index(b"\xff")
    assert str(info.value) == f"<stdin>:5: not valid UTF-8: byte 0xff at byte offset {offset}"
    with pytest.raises(ConlluError, match=r"^<stdin>:2: not valid UTF-8: byte 0xff"):
        list(read_text(io.BytesIO(b"The cat sat .\nIt \xff slept .\n")))


def test_conllu_error_pickles() -> None:
    error = pickle.loads(pickle.dumps(ConlluError("f.conllu", 3, "bad")))
    assert str(error) == "f.conllu:3: bad"
    assert error.line == 3


# --- streaming --------------------------------------------------------------------------------


class CountingLines(io.TextIOBase):
    """An endless text stream of one-word sentences that counts the lines handed out."""

    name = "<endless>"

    def __init__(self, n_sentences: int) -> None:
        self.served = 0
        self.lines = self.generate(n_sentences)

    def generate(self, n_sentences: int) -> Iterator[str]:
        for _ in range(n_sentences):
            for line in (f"{word_line(1)}\n", "\n"):
                self.served += 1
                yield line

    def readline(self, size: int = -1) -> str:  # the reader's bounded readline(MAX_LINE + 1)
        return next(self.lines, "")


def test_reading_streams_without_loading_the_whole_input() -> None:
    stream = CountingLines(100_000)
    first = list(itertools.islice(read_conllu(stream), 3))
    assert len(first) == 3
    assert stream.served <= 10


# --- plain text -------------------------------------------------------------------------------


def test_read_text_builds_valid_conllu(tmp_path: Path) -> None:
    path = write_bytes(tmp_path / "in.txt", "The  cat sat .\n\n  Hello\tworld !  \n")
    sentences = list(read_text(path))
    assert [s.forms for s in sentences] == [["The", "cat", "sat", "."], ["Hello", "world", "!"]]
    assert [s.line for s in sentences] == [1, 3]
    assert all(s.heads is None for s in sentences)
    out = tmp_path / "out.conllu"
    write_conllu(out, sentences)
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[:2] == ["# text = The cat sat .", "1\tThe\t_\t_\t_\t_\t_\t_\t_\t_"]
    assert all(len(line.split("\t")) == 10 for line in lines if line and line[0] != "#")
    again = list(read_conllu(out))
    assert [s.forms for s in again] == [s.forms for s in sentences]
    assert again[1].metadata["text"] == "Hello world !"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_read_text_ends_a_line_at_lf_crlf_and_a_lone_cr(tmp_path: Path, newline: str) -> None:
    # As format=raw does (rawtext.chars): a file saved with classic Mac line ends is many lines.
    text = newline.join(["The cat sat .", "", "It slept ."]) + newline
    for source in (write_bytes(tmp_path / "in.txt", text), io.BytesIO(text.encode())):
        sentences = list(read_text(source))
        assert [s.forms for s in sentences] == [["The", "cat", "sat", "."], ["It", "slept", "."]]
        assert [s.line for s in sentences] == [1, 3]


def test_read_text_from_stream_and_with_tree() -> None:
    sentence = next(read_text(io.StringIO("a b\n")))
    assert sentence.source == "<stdin>"
    parsed = sentence.with_tree([0, 1], ["root", "dep"])
    assert (
        to_text([parsed])
        == "# text = a b\n1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n2\tb\t_\t_\t_\t_\t1\tdep\t_\t_\n\n"
    )


@pytest.mark.parametrize("forms", [[], ["a", ""], ["a\tb"], ["a\nb"]])
def test_from_forms_rejects_bad_forms(forms: list[str]) -> None:
    with pytest.raises(ConlluError, match=r"^x:4: "):
        Sentence.from_forms(forms, source="x", line=4)


def test_hand_built_sentence_writes_valid_conllu() -> None:
    sentence = Sentence(
        ["Dogs", "bark"], upos=["NOUN", "VERB"], heads=[2, 0], deprels=["nsubj", "root"]
    )
    assert sentence.lemmas == ["_", "_"]
    again = next(read_conllu(io.StringIO(to_text([sentence])), require_trees=True))
    assert (again.forms, again.upos, again.heads, again.deprels) == (
        sentence.forms, sentence.upos, sentence.heads, sentence.deprels,
    )  # fmt: skip
    assert again.lines == sentence.lines
    assert again.metadata == {"text": "Dogs bark"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"heads": [2, 3]},
        {"heads": [0]},
        {"upos": ["NOUN"]},
        {"deprels": ["root", "a b\tc"]},
    ],
)
def test_hand_built_sentence_rejects_inconsistent_columns(kwargs: dict) -> None:
    with pytest.raises(ConlluError, match=r"^<unknown>:1: "):
        Sentence(["Dogs", "bark"], **kwargs)


def test_lines_ended_by_cr_alone_are_named_as_such(tmp_path) -> None:
    # The whole file read as one comment line: "sentence has no words (no line with an ID)".
    path = tmp_path / "mac.conllu"
    text = "# text = A b\r1\tA\ta\tX\t_\t_\t0\troot\t_\t_\r2\tb\tb\tX\t_\t_\t1\tdep\t_\t_\r\r"
    path.write_bytes(text.encode())
    with pytest.raises(ConlluError, match=r":1: a carriage return \(CR\) inside the line"):
        list(read_conllu(path))
    path.write_bytes(text.replace("\r", "\r\n").encode())  # CRLF reads as ever
    assert [s.forms for s in read_conllu(path)] == [["A", "b"]]


@pytest.mark.parametrize(
    "last", ["1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\r", "1\tHi\t_\t_\t_\t_\t_\t_\t_\t_\rx"]
)
def test_a_cr_on_a_last_line_without_its_lf_is_refused_as_anywhere_else(
    tmp_path, last: str
) -> None:
    # A CRLF file cut before its last LF was read, and its probabilities=true or kbest output
    # (a comment or separator taking that CR as the line's end) then refused by this reader.
    path = tmp_path / "cut.conllu"
    path.write_bytes(("# sent_id = 1\r\n" + last).encode())
    with pytest.raises(ConlluError, match=r":2: a carriage return \(CR\) inside the line"):
        list(read_conllu(path))
    path.write_bytes(("# sent_id = 1\r\n" + last.split("\r")[0] + "\r\n").encode())
    assert [s.forms for s in read_conllu(path)] == [["Hi"]]


def test_a_hand_built_sentence_leaves_the_callers_lists_as_they_were() -> None:
    # The empty columns were filled in place: the caller's list of UPOS became ["_", "_"].
    forms, upos, heads = ["Dogs", "bark"], [], [2, 0]
    sentence = Sentence(forms, upos=upos, heads=heads)
    assert (forms, upos, heads) == (["Dogs", "bark"], [], [2, 0])
    assert sentence.upos == ["_", "_"]
    sentence.forms.append("loudly")  # and the sentence's lists are its own
    assert forms == ["Dogs", "bark"]


# --- every real UD file -----------------------------------------------------------------------


@pytest.mark.ud
def test_every_ud_file_round_trips_byte_for_byte(ud_root: Path) -> None:
    paths = sorted(ud_root.rglob("*.conllu"))
    assert paths, f"no .conllu files under {ud_root}"
    for path in paths:
        sentences = list(read_conllu(path, require_trees=True))
        data = path.read_bytes()
        assert to_text(sentences).encode("utf-8") == data, f"{path} changed in a round trip"
        sample = [s.with_tree(s.heads, s.deprels) for s in sentences[::25]]  # type: ignore[arg-type]
        assert sample[0].lines == sentences[0].lines, path
        assert to_text(sample) == to_text(sentences[::25]), path


def test_plain_text_given_as_conllu_hints_at_format_text(tmp_path: Path) -> None:
    path = tmp_path / "in.conllu"
    path.write_text("The dog barks .\n", encoding="utf-8")
    with pytest.raises(ConlluError, match=r"in\.conllu:1: .*found 1; .* pass format=text"):
        list(read_conllu(path))


def test_conllu_given_as_plain_text_hints_at_format_conllu(tmp_path: Path) -> None:
    with pytest.raises(ConlluError, match=r"tiny.conllu:1: a CoNLL-U sentence comment in plain "):
        list(read_text(TINY))
    words = write_bytes(tmp_path / "words.txt", "\n" + word_line(1) + "\n\n")
    with pytest.raises(ConlluError, match=r"words.txt:2: a CoNLL-U word line .* format=conllu$"):
        list(read_text(words))
    with pytest.raises(ConlluError, match=r"<stdin>:1: a CoNLL-U sentence comment"):
        list(read_text(io.StringIO("# sent_id = 1\nThe dog barks .\n")))
    # A file's own comment first: every line after it was parsed as a sentence of text.
    for first in ("# generator = UDPipe 2\n", "# global.columns = ID FORM LEMMA\n"):
        with pytest.raises(ConlluError, match=r"<stdin>:3: a CoNLL-U sentence comment"):
            list(read_text(io.StringIO(first + "\n# sent_id = 1\n" + word_line(1) + "\n")))
        with pytest.raises(ConlluError, match=r"<stdin>:2: a CoNLL-U word line"):
            list(read_text(io.StringIO(first + word_line(1) + "\n")))
    # Comments of text's own are sentences, after the first line or before it.
    assert len(list(read_text(io.StringIO("# my notes\nThe cat .\n# sent_id = 1\n")))) == 3


@pytest.mark.parametrize(
    "text",
    [
        "# Hashtags start tweets .\n",
        "#text me later\n",
        "1 2 3 4 5 6 7 8 9 10\n",  # ten tokens, spaces not TABs
        "a\tb\tc\n",
        "x\t" * 9 + "x\n",  # ten columns, but no ID first
    ],
)
def test_plain_text_that_merely_resembles_conllu_is_read(text: str) -> None:
    assert len(list(read_text(io.StringIO(text)))) == 1


def test_a_line_of_max_line_bytes_is_read_and_one_more_is_refused(tmp_path: Path) -> None:
    fits = write_bytes(tmp_path / "fits.txt", "a\n" + "x" * (MAX_LINE - 1) + "\n")
    assert [len(s.forms[0]) for s in read_text(fits)] == [1, MAX_LINE - 1]
    long = write_bytes(tmp_path / "long.txt", "a\n" + "x" * MAX_LINE + "\n")
    with pytest.raises(ConlluError, match=r"long.txt:2: line longer than 1048576 bytes \(1 MiB"):
        list(read_text(long))
    with pytest.raises(ConlluError, match=r"long.conllu:1: line longer than 1048576 bytes"):
        list(read_conllu(write_bytes(tmp_path / "long.conllu", "y" * (2 * MAX_LINE))))


class EndlessZeros(io.RawIOBase):
    """An endless stream of NUL bytes, like /dev/zero, that fails a test reading 16 MiB of it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        self.served += len(buffer)
        assert self.served < 16 * MAX_LINE, "read far past the line limit"
        buffer[:] = bytes(len(buffer))
        return len(buffer)


def test_an_endless_line_on_a_stream_stops_at_the_limit() -> None:
    stream = io.TextIOWrapper(io.BufferedReader(EndlessZeros()), encoding="utf-8")
    with pytest.raises(ConlluError, match=r":1: line longer than 1048576 characters"):
        list(read_conllu(stream))


def test_dev_zero_is_refused_without_filling_memory() -> None:
    # In a child process with 1 GiB of address space: a reader without a limit dies there.
    script = "from biaffine.data.conllu import read_text\nlist(read_text('/dev/zero'))\n"
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
    done = subprocess.run(
        [sys.executable, "-c", limit + script], capture_output=True, text=True, timeout=120,
        cwd=Path(__file__).parents[3], check=False,
    )  # fmt: skip
    assert "ConlluError: /dev/zero:1: line longer than 1048576 bytes" in done.stderr
    assert "MemoryError" not in done.stderr


def test_from_forms_refuses_one_string_for_a_list_of_words() -> None:
    # list("abc") would be the three words a, b, c.
    with pytest.raises(TypeError, match=r"^forms is a string \('abc'\): pass a list of words"):
        Sentence.from_forms("abc")
    assert Sentence.from_forms(("a", "bc")).forms == ["a", "bc"]


@pytest.mark.parametrize(
    ("ids", "line", "problem"),
    [
        (["1", "1.1", "1.1"], 3, "empty node 1.1 out of order: expected 1.2"),
        (["1", "1.2", "1.1"], 2, "empty node 1.2 out of order: expected 1.1"),
        (["1", "1.2"], 2, "empty node 1.2 out of order: expected 1.1"),
    ],
)
def test_empty_nodes_out_of_order_are_refused(
    tmp_path: Path, ids: list[str], line: int, problem: str
) -> None:
    # Each was read without a word, and written back as given.
    rows = [word_line(1) if i == "1" else i + "\tx" + "\t_" * 8 for i in ids]
    path = write_bytes(tmp_path / "odd.conllu", "\n".join(rows) + "\n\n")
    with pytest.raises(ConlluError, match=rf"^{re.escape(f'{path}:{line}: {problem}')}$"):
        list(read_conllu(path))


@pytest.mark.parametrize(
    "line",
    [
        "x" * 100_000 + "\tw\t_\t_\t_\t_\t0\troot\t_\t_\n\n",  # the ID
        "1\tw\t_\t_\t_\t_\t" + "x" * 100_000 + "\troot\t_\t_\n\n",  # the HEAD
    ],
    ids=["id", "head"],
)
def test_a_refused_cell_is_shown_cut_short(tmp_path: Path, line: str) -> None:
    # Echoed whole: an error line of 100 KB.
    path = tmp_path / "long.conllu"
    path.write_text(line, encoding="utf-8")
    with pytest.raises(ConlluError, match=r"'xxx+\.\.\.") as refused:
        list(read_conllu(path))
    assert len(str(refused.value)) < 200
