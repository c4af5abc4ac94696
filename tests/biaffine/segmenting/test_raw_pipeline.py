"""Raw text in: segmenter -> CoNLL-U -> parser, through predict.py format=raw and the API.

The segmenter here has random weights, so its tokens and sentences are arbitrary: the tests
check what must hold for any segmentation (every character of the input comes back, in order,
in FORMs and ``# text``; every word gets a tree and its columns), and what the user sees when
something is missing or wrong.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from builders import TINY_PARSER, biaffine_parser, randomized, save_model
from segmenter_builders import random_model, small_vocab

import rawtext
from biaffine import pipeline
from biaffine.api import Parser
from biaffine.data.conllu import MAX_LINE, conllu_of_lines, read_conllu
from biaffine.pipeline import segmented
from biaffine.segmenting import Segmenter, checkpoint
from rawtext import SENTENCE_END, TOKEN_END
from rawtext.mwt import MwtExpander

REPO = Path(__file__).parents[3]
TEXT = (
    "Dr. Smith arrived at 9:30.  Nobody knew why!\r\n"
    "He left du village.\n\n"  # a paragraph break; "du" is a multi-word token for the expander
    "\u00a0Second paragraph, with \u00e4\u00f6\u00fc and an emoji \U0001f600.\n"
)
TAGGERS = {"tag_loss_weight": 1.0, "xpos_loss_weight": 1.0, "feats_loss_weight": 1.0}
SHIPPED_SEGMENTER = REPO / "models" / "en_ewt_small" / "segmenter.pt"


@pytest.fixture(scope="module")
def segmenter_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    vocab = small_vocab()
    path = tmp_path_factory.mktemp("segmenter") / "best.pt"
    mwt = MwtExpander(dictionary={"du": ("de", "le")}, rules={})
    checkpoint.save(path, random_model(vocab, rnn_hidden=6), vocab, treebank="UD_X", mwt=mwt)
    return path


@pytest.fixture(scope="module")
def tagged_parser(tmp_path_factory: pytest.TempPathFactory, vocabs) -> Path:
    torch.manual_seed(4)
    model = randomized(biaffine_parser(vocabs, **TINY_PARSER, **TAGGERS))
    return save_model(tmp_path_factory.mktemp("tagged") / "best.pt", model, vocabs)


def visible(text: str) -> str:
    return "".join(text.split())


def token_forms(sentence) -> list[str]:
    """FORM of each token: a multi-word token's range line, else the word line."""
    return [token.form for token in sentence.tokens]


def test_every_character_comes_back_in_the_forms_and_the_text_comments(segmenter_path) -> None:
    sentences = segmented(Segmenter.load(segmenter_path), TEXT)
    assert sentences, "a random segmenter still finds at least one sentence in this text"
    # A token may hold spaces (as Vietnamese words do): compare what is not whitespace.
    forms = "".join(form for s in sentences for form in token_forms(s))
    assert visible(forms) == visible(TEXT)
    assert "".join(visible(s.metadata["text"]) for s in sentences) == visible(TEXT)
    assert [s.metadata["sent_id"] for s in sentences] == [
        str(k) for k in range(1, len(sentences) + 1)
    ]
    assert "newdoc" in sentences[0].metadata
    # A blank line is a paragraph break, so a sentence never spans it.
    assert sum("newpar" in s.metadata for s in sentences) == 2


def test_whitespace_only_text_gives_no_sentences(segmenter_path) -> None:
    assert segmented(Segmenter.load(segmenter_path), " \n\n\t\r\n") == []


def test_the_api_parses_text_with_every_column(segmenter_path, tagged_parser) -> None:
    parser = Parser.load(tagged_parser, threads=1, segmenter=segmenter_path)
    trees = parser.parse(text=TEXT)
    words = segmented(parser.segmenter, TEXT)
    expected = parser.parse(words, columns=["all"])
    assert [t.sentence.lines for t in trees] == [t.sentence.lines for t in expected]
    for tree in trees:
        n = len(tree.sentence)
        assert len(tree.heads) == n
        assert all(0 <= h <= n for h in tree.heads)
        assert "_" not in tree.sentence.upos
        assert "_" not in tree.sentence.xpos
        assert set(tree.sentence.lemmas) == {"_"}  # no lemmatizer in this model
    only_trees = parser.parse(text=TEXT, columns=[])
    assert all(set(t.sentence.upos) == {"_"} for t in only_trees)


def test_predict_py_reads_an_empty_column_list_as_the_api_does(
    segmenter_path, tagged_parser, tmp_path
) -> None:
    # predict.py format=raw 'columns=[]' tagged every column, as columns=null does; the API's
    # columns=[] tags none.
    from biaffine.predict_options import PredictOptions, parse_columns
    from biaffine.predicting import predict

    assert (parse_columns(None), parse_columns(""), parse_columns([])) == (None, None, ())
    source = tmp_path / "in.txt"
    source.write_text(TEXT, encoding="utf-8")
    how = {"input_format": "raw", "segmenter": segmenter_path, "threads": 1}
    for columns, out in ((None, "default"), ((), "none")):
        options = PredictOptions(columns=columns)
        predict(tagged_parser, source, tmp_path / out, options=options, **how)
    parser = Parser.load(tagged_parser, threads=1, segmenter=segmenter_path)
    for columns, out in ((None, "default"), ([], "none")):
        written = parser.to_conllu(parser.parse(text=TEXT, columns=columns))
        assert (tmp_path / out).read_text(encoding="utf-8") == written


def test_the_api_refuses_text_without_a_segmenter_and_two_inputs(
    segmenter_path, tagged_parser
) -> None:
    with pytest.raises(ValueError, match="segmenter"):
        Parser.load(tagged_parser, threads=1).parse(text=TEXT)
    parser = Parser.load(tagged_parser, threads=1, segmenter=segmenter_path)
    with pytest.raises(ValueError, match="not both"):
        parser.parse([["a", "b"]], text=TEXT)
    with pytest.raises(ValueError, match=r"^nothing to parse: give inputs"):  # was "not both"
        parser.parse()


def run_predict(*overrides: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, str(REPO / "predict.py"), "threads=1", *overrides]
    return subprocess.run(command, cwd=REPO, capture_output=True, input=stdin, check=False)


def test_predict_py_format_raw_writes_parsed_conllu(
    segmenter_path, tagged_parser, tmp_path
) -> None:
    source = tmp_path / "doc.txt"
    source.write_text(TEXT, encoding="utf-8", newline="")
    out = tmp_path / "out.conllu"
    done = run_predict(
        f"checkpoint={tagged_parser}",
        f"segmenter={segmenter_path}",
        f"input={source}",
        "format=raw",
        f"output={out}",
    )
    assert done.returncode == 0, done.stderr.decode()
    sentences = list(read_conllu(out, require_trees=True))
    assert all("_" not in s.upos for s in sentences)
    forms = "".join(form for s in sentences for form in token_forms(s))
    assert visible(forms) == visible(TEXT)
    api = Parser.load(tagged_parser, threads=1, segmenter=segmenter_path)
    assert out.read_text(encoding="utf-8") == api.to_conllu(api.parse(text=TEXT))
    from_stdin = run_predict(
        f"checkpoint={tagged_parser}", f"segmenter={segmenter_path}", "input=-", "format=raw",
        stdin=TEXT.encode(),
    )  # fmt: skip
    assert from_stdin.stdout == out.read_bytes()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["format=raw"], "format=raw needs segmenter=PATH"),
        (["format=conllu", "segmenter=SEG"], "use format=raw"),
    ],
)
def test_predict_py_refuses_a_missing_or_stray_segmenter(
    overrides, message, segmenter_path, tagged_parser, tmp_path
) -> None:
    source = tmp_path / "doc.txt"
    source.write_text(TEXT, encoding="utf-8")
    overrides = [o.replace("SEG", str(segmenter_path)) for o in overrides]
    done = run_predict(f"checkpoint={tagged_parser}", f"input={source}", *overrides)
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert message in lines[0]


def test_predict_py_names_the_line_of_text_that_is_not_utf8(
    segmenter_path, tagged_parser, tmp_path
) -> None:
    source = tmp_path / "doc.txt"
    source.write_bytes(b"Fine line.\nSecond \xff line.\n")
    done = run_predict(
        f"checkpoint={tagged_parser}", f"segmenter={segmenter_path}", f"input={source}",
        "format=raw",
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{source}:2: not UTF-8" in done.stderr.decode()


def test_predict_py_writes_nothing_for_an_empty_text(segmenter_path, tagged_parser, tmp_path):
    source = tmp_path / "empty.txt"
    source.write_text("\n \n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    done = run_predict(
        f"checkpoint={tagged_parser}", f"segmenter={segmenter_path}", f"input={source}",
        "format=raw", f"output={out}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_bytes() == b""


@pytest.mark.parametrize(
    ("data", "line", "byte"),
    [
        (b"\xef\xbb\xbfab\ncd\nef\xff\n", 3, 11),  # byte 8 of line 2: counted after the mark
        (b"one\rtwo\rthree \xff end\r", 3, 14),  # line 1: lone CRs were not line ends
        (b"one\r\ntwo\r\n\xff\r\n", 3, 10),
    ],
    ids=["byte-order-mark", "lone-cr", "crlf"],
)
def test_text_that_is_not_utf8_is_named_by_its_line_and_byte(
    segmenter_path: Path, tmp_path: Path, data: bytes, line: int, byte: int
) -> None:
    source = tmp_path / "doc.txt"
    source.write_bytes(data)
    with pytest.raises(ValueError, match=rf"^{source}:{line}: not UTF-8 text \(byte {byte}: "):
        list(pipeline.read_raw(source, Segmenter.load(segmenter_path)))


def test_a_byte_order_mark_is_no_text(segmenter_path: Path, tmp_path: Path) -> None:
    # The API and the server get text with the mark; a file's is read the same way.
    segmenter = Segmenter.load(segmenter_path)
    with_mark = segmented(segmenter, "\ufeff" + TEXT)
    assert [s.lines for s in with_mark] == [s.lines for s in segmented(segmenter, TEXT)]
    source = tmp_path / "marked.txt"
    source.write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    read = pipeline.read_raw(source, segmenter)
    assert [s.lines for s in read] == [s.lines for s in with_mark]
    # A second mark is text (U+FEFF, a zero-width no-break space): it was dropped too.
    source.write_bytes(b"\xef\xbb\xbf" * 2 + TEXT.encode())
    first = next(pipeline.read_raw(source, segmenter))
    assert first.metadata["text"].startswith("\ufeff")
    assert first.forms[0].startswith("\ufeff")


def test_a_token_longer_than_a_line_of_a_file_is_read_back_whole() -> None:
    # Refused as "<stdin>:4: line longer than 1048576 characters": the reader's bound on a
    # file's lines was applied to the CoNLL-U made in memory.
    text = "b" * (MAX_LINE + 10) + "."
    labels = np.zeros(len(text), dtype=np.uint8)
    labels[-2], labels[-1] = TOKEN_END, SENTENCE_END
    lines = list(rawtext.to_conllu(rawtext.segment(text, labels)))
    (sentence,) = conllu_of_lines(lines, "<segmented text>")
    assert sentence.forms == [text[:-1], "."]


# --- the shipped en_ewt_small segmenter ------------------------------------------------------


@pytest.fixture(scope="module")
def shipped_segmenter() -> Segmenter:
    return Segmenter.load(SHIPPED_SEGMENTER)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_the_shipped_segmenter_ends_sentences_at_every_kind_of_line_break(
    shipped_segmenter: Segmenter, newline: str
) -> None:
    # On CRLF it puts the sentence end on the CR, not on the full stop: the end moves back onto
    # the full stop instead of being lost (which merged the sentences into a token ".  It").
    lines = ["The cat sat on the mat.", "It slept all day.", "", "New paragraph here.", ""]
    sentences = segmented(shipped_segmenter, newline.join(lines))
    assert [s.metadata["text"] for s in sentences] == [line for line in lines if line]
    assert [s.forms[-2:] for s in sentences] == [["mat", "."], ["day", "."], ["here", "."]]


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_the_shipped_segmenter_splits_text_alike_whatever_its_line_breaks(
    shipped_segmenter: Segmenter, ewt_dir: Path, newline: str
) -> None:
    # EWT test's first 100 sentences, a line each: a CR was a character the segmenter never
    # saw in training and a CRLF two line breaks, which split them into 95 (CRLF) and 90 (CR)
    # sentences where LF gave 100.
    with open(ewt_dir / "en_ewt-ud-test.conllu", encoding="utf-8") as file:
        lines = [
            line[len("# text = ") :].rstrip("\n") for line in file if line.startswith("# text = ")
        ]
    text = "\n".join(lines[:100]) + "\n"
    by_lf = segmented(shipped_segmenter, text)
    by_other = segmented(shipped_segmenter, text.replace("\n", newline))
    assert len(by_lf) == 100
    assert [s.forms for s in by_other] == [s.forms for s in by_lf]


@pytest.mark.parametrize("separator", [*"\t\v\f\x1c\x1d\x1e\x85\u2028\u2029"])
def test_a_form_never_holds_a_tab_or_a_line_break(
    shipped_segmenter: Segmenter, separator: str
) -> None:
    text = f"The cat{separator}sat on the mat."
    (sentence,) = segmented(shipped_segmenter, text)
    assert sentence.forms == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert sentence.metadata["text"] == "The cat sat on the mat."


def test_a_long_sentence_of_raw_text_is_cut_into_pieces(
    shipped_segmenter: Segmenter, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit (1000 words) made small: 40,000 words without a full stop took 6.4 GB to parse.
    monkeypatch.setattr(pipeline, "MAX_SENTENCE_WORDS", 4)
    text = "we walked along the river and talked about the weather and the trains"
    sentences = segmented(shipped_segmenter, text)
    assert [len(s) for s in sentences] == [3, 3, 3, 4]  # 13 words, one sentence when whole
    assert " ".join(s.metadata["text"] for s in sentences) == text
    assert [s.metadata["sent_id"] for s in sentences] == [str(k) for k in range(1, 5)]


def test_a_lone_surrogate_is_refused_in_words(segmenter_path: Path) -> None:
    with pytest.raises(ValueError, match=r"lone surrogate \(U\+D800 at character 8\)"):
        segmented(Segmenter.load(segmenter_path), "The cat \ud800 sat.")
