"""Raw text and per-character classes rebuilt from CoNLL-U (rawtext.labels)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest

from rawtext import labels as lab
from rawtext.labels import labelled_documents, sentence_surface
from rawtext.treebank import TreebankError, read_sentences

SMALL = """\
# newdoc id = d1
# newpar
# text = Du vin, dit-il.
1-2\tDu\t_\t_\t_\t_\t_\t_\t_\t_
1\tDe\tde\tADP\t_\t_\t3\tcase\t_\t_
2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_
3\tvin\tvin\tNOUN\t_\t_\t0\troot\t_\tSpaceAfter=No
4\t,\t,\tPUNCT\t_\t_\t3\tpunct\t_\t_
5\tdit-il\tdire\tVERB\t_\t_\t3\tparataxis\t_\tSpaceAfter=No
5.1\tvu\tvoir\tVERB\t_\t_\t_\t_\t_\t_
6\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

# text = Oui.
1\tOui\toui\tINTJ\t_\t_\t0\troot\t_\tSpaceAfter=No
2\t.\t.\tPUNCT\t_\t_\t1\tpunct\t_\tSpaceAfter=No

# newpar
# text = Au revoir
1-2\tAu\t_\t_\t_\t_\t_\t_\t_\t_
1\tÀ\tà\tADP\t_\t_\t3\tcase\t_\t_
2\tle\tle\tDET\t_\t_\t3\tdet\t_\t_
3\trevoir\trevoir\tNOUN\t_\t_\t0\troot\t_\t_

# newdoc id = d2
# text = Tiếp theo
1\tTiếp theo\ttiếp theo\tADV\t_\t_\t0\troot\t_\t_

"""


def recovered(text: str, labels: np.ndarray) -> tuple[list[str], list[int]]:
    """Tokens and sentence-final token indices read back from the classes, independently of
    rawtext.segment: a token runs from the first non-space after the previous one to its label."""
    tokens, sentence_ends, start = [], [], 0
    for end in np.flatnonzero(labels):
        while text[start].isspace():
            start += 1
        tokens.append(text[start : end + 1])
        if labels[end] in (lab.SENTENCE_END, lab.MWT_SENTENCE_END):
            sentence_ends.append(len(tokens) - 1)
        start = end + 1
    return tokens, sentence_ends


def test_small_file_rebuilds_text_and_classes_exactly() -> None:
    first, second = labelled_documents(io.StringIO(SMALL))
    assert first.text == "Du vin, dit-il. Oui.\n\nAu revoir\n"
    assert second.text == "Tiếp theo\n"
    expected = np.zeros(len(first.text), np.uint8)
    expected[[1, 5, 6, 13, 14, 18, 19, 23, 30]] = [3, 1, 1, 1, 2, 1, 2, 3, 2]
    assert first.labels.tolist() == expected.tolist()
    assert second.labels.tolist() == [0] * 8 + [2, 0]
    assert first.labels.dtype == np.uint8


def test_the_labelled_corpus_joins_the_documents_with_a_line_of_class_none(
    tmp_path: Path,
) -> None:
    path = tmp_path / "small.conllu"
    path.write_text(SMALL, encoding="utf-8")
    first, second = labelled_documents(path)
    corpus = lab.labelled_corpus(path)
    assert corpus.text == first.text + "\n" + second.text == lab.corpus_text(path)
    assert corpus.labels.tolist() == [*first.labels.tolist(), 0, *second.labels.tolist()]
    assert corpus.labels.dtype == np.uint8
    empty = tmp_path / "empty.conllu"
    empty.write_text("# a comment only\n\n", encoding="utf-8")
    assert lab.labelled_corpus(empty).text == ""
    assert len(lab.labelled_corpus(empty).labels) == 0


def test_empty_nodes_are_not_tokens_and_mwt_words_are_kept() -> None:
    sentence = next(read_sentences(io.StringIO(SMALL)))
    assert [t.form for t in sentence.tokens] == ["Du", "vin", ",", "dit-il", "."]
    assert sentence.tokens[0].words == ("De", "le")
    assert sentence.tokens[0].is_mwt
    assert not sentence.tokens[1].is_mwt
    assert sentence_surface(sentence) == sentence.text


def test_newpar_in_misc_breaks_the_paragraph_inside_a_sentence() -> None:
    conllu = (
        "1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n"
        "2\tB\t_\t_\t_\t_\t_\t_\t_\tNewPar=Yes|SpaceAfter=No\n"
        "3\t.\t_\t_\t_\t_\t_\t_\t_\t_\n\n"
    )
    (document,) = labelled_documents(io.StringIO(conllu))
    assert document.text == "A\n\nB.\n"
    assert document.labels.tolist() == [1, 0, 0, 1, 2, 0]


def test_a_file_without_tokens_has_no_documents() -> None:
    assert labelled_documents(io.StringIO("")) == []
    assert labelled_documents(io.StringIO("# newdoc\n\n")) == []


def test_a_line_without_ten_columns_names_file_and_line() -> None:
    stream = io.StringIO("# text = a\n1\ta\t_\n\n")
    stream.name = "bad.conllu"
    with pytest.raises(TreebankError, match=r"^bad\.conllu:2: expected 10 tab-separated"):
        labelled_documents(stream)


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (["1-2\tab"], r"multi-word token 1-2 covers 2 words, but 0 follow it"),
        (["1-2\tab", "1\ta", "3\tc"], r"multi-word token 1-2 covers 2 words, but 1 follow it"),
        (["2-1\tab", "1\ta"], r"multi-word token 2-1 ends before it starts"),
        # Read as words before, the parser's reader refusing the same files:
        (["3-4\tab", "1\ta", "2\tb"], r"multi-word token 3-4 must start at the next word ID 1"),
        (["\u00b2\ta"], r"invalid ID '\u00b2'"),
        (["\u0661\ta"], r"invalid ID '\u0661'"),
        (["\u0661-\u0662\tab", "1\ta", "2\tb"], r"invalid ID '\u0661-\u0662'"),
        (["0\ta"], r"invalid ID '0'"),
        (["1.0\ta"], r"invalid ID '1.0'"),
    ],
)
def test_a_bad_range_or_id_names_its_line(lines, problem) -> None:
    # It was read as a token of no (or too few) words: a multi-word token to learn.
    rows = [line + "\t_" * 8 for line in lines]
    stream = io.StringIO("# text = ab\n" + "\n".join(rows) + "\n\n")
    stream.name = "bad.conllu"
    with pytest.raises(TreebankError, match=rf"^bad\.conllu:2: {problem}$"):
        labelled_documents(stream)


@pytest.mark.parametrize(
    ("ids", "line", "problem"),
    [
        (["1", "1"], 3, "word ID 1 where 2 comes next"),
        (["1", "3"], 3, "word ID 3 where 2 comes next"),
        (["2", "1"], 2, "word ID 2 where 1 comes next"),
        (["1-2", "1", "3"], 2, "multi-word token 1-2 covers 2 words, but 1 follow it"),
        (["1-2", "1", "1"], 4, "word ID 1 where 2 comes next"),
    ],
)
def test_words_must_be_numbered_one_two_three(ids, line: int, problem: str) -> None:
    """Duplicate, skipped and reversed IDs were read as they came, into training's tokens."""
    rows = [f"{word_id}\tw{i}" + "\t_" * 8 for i, word_id in enumerate(ids)]
    stream = io.StringIO("# text = w\n" + "\n".join(rows) + "\n\n")
    stream.name = "bad.conllu"
    with pytest.raises(TreebankError, match=rf"^bad\.conllu:{line}: {problem}$"):
        labelled_documents(stream)


def test_empty_nodes_are_skipped_wherever_they_stand() -> None:
    rows = [f"{word_id}\t{form}" + "\t_" * 8 for word_id, form in
            [("0.1", "e"), ("1", "a"), ("1.1", "e"), ("1.2", "e"), ("2", "b")]]  # fmt: skip
    stream = io.StringIO("# text = a b\n" + "\n".join(rows) + "\n\n")
    (sentence,) = read_sentences(stream)
    assert [token.form for token in sentence.tokens] == ["a", "b"]


@pytest.mark.parametrize("odd", ["\f", "\u00a0", "\v"])
def test_a_line_of_other_whitespace_is_refused_as_the_parser_refuses_it(odd: str) -> None:
    # It ended the sentence here, where predict.py and train.py refuse the file at that line.
    row = "\t".join(["1", "a", *"_" * 8])
    stream = io.StringIO(f"# text = a\n{row}\n{odd}\n\n")
    stream.name = "bad.conllu"
    with pytest.raises(
        TreebankError, match=rf"^bad\.conllu:3: a line of whitespace only, with U\+{ord(odd):04X}"
    ):
        labelled_documents(stream)


def test_invalid_utf8_and_a_missing_file_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.conllu"
    path.write_bytes(b"# text = a\n1\ta\t_\t_\t_\t_\t_\t_\t_\t_\n\n1\t\xff" + b"\t_" * 8 + b"\n")
    with pytest.raises(TreebankError, match=r"bad\.conllu:4: not valid UTF-8 at byte 2$"):
        labelled_documents(path)
    with pytest.raises(TreebankError, match=r"missing\.conllu:0: no such file$"):
        labelled_documents(tmp_path / "missing.conllu")
    with pytest.raises(TreebankError, match=r":0: is a directory, not a file$"):
        labelled_documents(tmp_path)
    # A device or pipe is read as a file is ("/dev/null:0: no such file" was said of it).
    assert list(labelled_documents(Path(os.devnull))) == []


def test_crlf_files_read_like_lf_files() -> None:
    crlf = labelled_documents(io.StringIO(SMALL.replace("\n", "\r\n"), newline=""))
    assert [d.text for d in crlf] == [d.text for d in labelled_documents(io.StringIO(SMALL))]


def test_the_class_helpers_agree_with_the_constants() -> None:
    assert lab.end_class(mwt=False, sentence_end=False) == lab.TOKEN_END
    assert lab.end_class(mwt=True, sentence_end=True) == lab.MWT_SENTENCE_END
    assert [lab.is_mwt_class(k) for k in range(lab.N_CLASSES)] == [0, 0, 0, 1, 1]
    assert [lab.is_sentence_end_class(k) for k in range(lab.N_CLASSES)] == [0, 0, 1, 0, 1]
    assert len(lab.CLASS_NAMES) == lab.N_CLASSES


@pytest.mark.ud
@pytest.mark.slow
def test_every_treebank_round_trips_tokens_and_sentences(ud_root: Path) -> None:
    files = sorted(ud_root.glob("*/*.conllu"))
    assert files, f"no *.conllu under {ud_root}"
    disagreements = {}
    for path in files:
        sentences = list(read_sentences(path))
        gold_tokens = [t.form for s in sentences for t in s.tokens]
        gold_ends = list(np.cumsum([len(s.tokens) for s in sentences if s.tokens]) - 1)
        tokens, ends, offset = [], [], 0
        for document in labelled_documents(path):
            assert len(document.labels) == len(document.text)
            more_tokens, more_ends = recovered(document.text, document.labels)
            ends += [offset + k for k in more_ends]
            tokens += more_tokens
            offset += len(more_tokens)
        assert tokens == gold_tokens, path.name
        assert ends == gold_ends, path.name
        differ = sum(s.text is not None and s.text != sentence_surface(s) for s in sentences)
        disagreements[path.name] = (differ, len(sentences))
    # `# text` that disagrees with the tokens and SpaceAfter is the treebank's, not a failure.
    print({name: counts for name, counts in disagreements.items() if counts[0]})
