"""Raw text segmented as it arrives, a piece of whole paragraphs at a time, as the whole text is.

Bit for bit: the windows and batches of a text given in parts are those of the whole text
(:mod:`biaffine.segmenting.streaming`), with the features of spaced and cased words (which
read whole lines) and with a sentence model; then through ``read_raw`` and ``predict.py``.
"""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from segmenter_builders import exported_segmenter, random_model

import rawtext
from biaffine import pipeline
from biaffine.segmenting import Segmenter, checkpoint
from biaffine.segmenting.features import CasedWords, CharVocab
from biaffine.segmenting.windows import log_probs, score_stream
from rawtext import corpus_text
from rawtext.mwt import MwtExpander

REPO = Path(__file__).parents[3]
WORDS = ["New York", "ice cream", "Hà Nội"]
LINES = [
    "I ate ice cream in New York.",
    "New\nYork and ice  cream!",
    "Hà Nội, HÀ NỘI; new york.",
    "",
    "  \u00a0",
    "Dr. Smith arrived du village at 9:30. \U0001f600",
]
EWT_TEST = Path(os.environ.get("UD_ROOT", "/nonexistent")) / "UD_English-EWT/en_ewt-ud-test.conllu"


def vocab() -> CharVocab:
    """Characters, spaced words and cased words: every feature the segmenter reads."""
    cased = CasedWords(lower=["ice", "cream", "new"], upper=["New", "York", "Smith"])
    text = "\n".join(LINES)
    return CharVocab.build([text[:100]], min_count=1, spaced_words=WORDS, cased_words=cased)


@pytest.fixture(scope="module")
def segmenter_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    words = vocab()
    path = tmp_path_factory.mktemp("segmenter") / "best.pt"
    model = random_model(words, rnn_hidden=6, n_features=words.n_features)
    mwt = MwtExpander(dictionary={"du": ("de", "le")}, rules={})
    checkpoint.save(path, model, words, treebank="UD_X", mwt=mwt)
    return path


def chunked(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts`` (any offsets, sorted here)."""
    cuts = sorted(cuts)
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@given(
    st.lists(st.sampled_from(LINES), min_size=1, max_size=40),
    st.lists(st.integers(0, 2000), max_size=8),
    st.sampled_from([(5, 2, 1), (7, 0, 3), (16, 9, 2)]),
)
@settings(max_examples=60, deadline=None)
def test_scores_of_a_text_in_parts_are_those_of_the_whole_bit_for_bit(
    lines: list[str], cuts: list[int], sizes: tuple[int, int, int]
) -> None:
    window, context, batch_size = sizes
    words = vocab()
    model = random_model(words, rnn_hidden=4, n_features=words.n_features)
    text = "\n".join(lines)
    how = {"window": window, "context": context, "batch_size": batch_size}
    whole = log_probs(model, words, text, **how).numpy()
    stream = score_stream(model, words, **how)
    parts = [stream.push(part, final=False) for part in chunked(text, cuts)]
    parts.append(stream.push("", final=True))
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    assert stream.push("", final=True).shape == (0, whole.shape[1])


def test_a_stream_whose_features_were_not_of_whole_lines_would_differ() -> None:
    # The check above can fail: the spaced words' flag of "ice cream" needs "ice" and "cream"
    # in one read. Scored from a run starting inside the line, the flag is lost.
    words = vocab()
    text = "x ice cream\n" * 20
    assert words.features(text)[5, -3] == 1.0  # the space inside "ice cream"
    assert words.features(text[4:])[1, -3] == 0.0  # "ce cream": no known word


def test_scores_are_given_as_soon_as_the_lines_they_read_are_known() -> None:
    words = vocab()
    model = random_model(words, rnn_hidden=4, n_features=words.n_features)
    stream = score_stream(model, words, window=4, context=2, batch_size=2)
    assert len(stream.push("ice cream in New York", final=False)) == 0  # no line ends yet
    assert len(stream.push(" and more.\n", final=False)) == 24  # 32 characters: 3 batches
    assert len(stream.push("a", final=True)) == 33 - 24
    assert stream.text == "ice cream in New York and more.\na"  # its line start kept


@pytest.mark.parametrize("interactive", [False, True])
@pytest.mark.parametrize("crlf", [False, True])
def test_the_segmenter_segments_a_text_in_pieces_as_the_whole(
    segmenter_path: Path, crlf: bool, interactive: bool
) -> None:
    segmenter = Segmenter.load(segmenter_path, window=16, context=4)
    text = "\n\n".join(" ".join(random.Random(k).sample(LINES, 4)) for k in range(60))
    text = text.replace("\n", "\r\n") if crlf else text
    whole = list(rawtext.to_conllu(segmenter.segment(text)))
    for least in (1, 50, 333, len(text)):
        pieces, found, written = [], [], 0
        cuts = random.Random(least).sample(range(len(text)), 30)
        chunks = chunked(text, cuts)
        for document in segmenter.segment_stream(chunks, least, interactive=interactive):
            pieces.append(document.text)
            lines = list(rawtext.to_conllu(document, first=written + 1))
            written += sum(line.startswith("# sent_id") for line in lines)
            found += lines
        assert found == whole
        assert "".join(pieces) == text
        assert len(pieces) > 1 or least == len(text)


def test_the_onnx_segmenter_segments_a_text_in_pieces_as_the_whole(
    segmenter_path: Path, tmp_path: Path
) -> None:
    onnx = exported_segmenter(segmenter_path, tmp_path / "export")
    text = "\n\n".join(" ".join(random.Random(k).sample(LINES, 4)) for k in range(80))
    whole = [token for token in onnx.segment(text).tokens()]
    found, offset = [], 0
    for document in onnx.segment_stream(chunked(text, [10, 900, 901, 5000]), 400):
        found += [(t.start + offset, t.end + offset, t.form, t.words) for t in document.tokens()]
        offset += len(document.text)
    assert found == [(t.start, t.end, t.form, t.words) for t in whole]
    assert offset == len(text)


@pytest.mark.parametrize("model", ["en_ewt", "en_ewt_minilm"])
def test_the_shipped_segmenters_find_the_whole_texts_sentences_in_pieces(model: str) -> None:
    # en_ewt_minilm's sentence model reads each piece's paragraphs in batches of their own.
    path = REPO / "models" / model / "segmenter.pt"
    if not EWT_TEST.exists():
        pytest.skip(f"{EWT_TEST} is not there (UD_ROOT names the UD treebanks)")
    with EWT_TEST.open(encoding="utf-8") as lines:
        text = corpus_text(lines)
    segmenter = Segmenter.load(path)
    whole = list(rawtext.to_conllu(segmenter.segment(text)))
    chunks = chunked(text, random.Random(0).sample(range(len(text)), 40))
    found, written = [], 0
    for document in segmenter.segment_stream(chunks, 20_000):
        lines = list(rawtext.to_conllu(document, first=written + 1))
        written += sum(line.startswith("# sent_id") for line in lines)
        found += lines
    assert found == whole


def test_read_raw_names_a_byte_that_is_not_utf8_past_its_first_blocks(
    segmenter_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "READ_BYTES", 7)
    segmenter = Segmenter.load(segmenter_path)
    source = tmp_path / "doc.txt"
    # Blocks of 7 bytes: "é" (bytes 6 and 7) split across two reads as one character, a CRLF
    # (20 and 21) split across two is one line break: the bad byte is on line 5, byte 25.
    data = "ab cdeé\r\ne.\n\nfghijk\r\nxy ".encode() + b"\xff z\n"
    assert (data.index("é".encode()), data.index(b"\r\nxy"), data.index(b"\xff")) == (6, 20, 25)
    source.write_bytes(data)
    with pytest.raises(ValueError, match=rf"^{source}:5: not UTF-8 text \(byte 25: "):
        list(pipeline.read_raw(source, segmenter))
    good = data.replace(b"\xff", b"!")
    source.write_bytes(good)
    read = [s.lines for s in pipeline.read_raw(source, segmenter)]
    assert read == [s.lines for s in pipeline.segmented(segmenter, good.decode())]


def test_predict_py_writes_raw_texts_sentences_before_the_input_ends(
    segmenter_path: Path, graph_checkpoint: Path
) -> None:
    # The input's first 300,000 characters, then nothing more until the first sentences have
    # come out.
    command = [
        sys.executable, str(REPO / "predict.py"), f"checkpoint={graph_checkpoint}",
        f"segmenter={segmenter_path}", "format=raw", "input=-", "output=-", "threads=1",
    ]  # fmt: skip
    paragraph = "I ate ice cream in New York. Dr. Smith left.\n\n"
    copies = 300_000 // len(paragraph) + 1
    with subprocess.Popen(
        command, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as running:
        # Written by a thread: predict.py writes while it reads, and both pipes are bounded.
        writer = threading.Thread(target=running.stdin.write, args=(paragraph.encode() * copies,))
        writer.start()
        # A reader of the whole input would wait for its end, and this test for its output:
        # the process is killed after 5 minutes, and the test fails instead of hanging.
        deadline = threading.Timer(300, running.kill)
        deadline.start()
        first = running.stdout.readline()  # blocks until predict.py writes (or exits)
        deadline.cancel()
        writer.join()
        running.stdin.close()
        rest = running.stdout.read()
        assert running.wait(timeout=600) == 0, running.stderr.read().decode()
    assert first == b"# newdoc\n"
    assert rest.count(b"# newpar\n") == copies


def test_a_lone_surrogate_is_named_by_its_place_in_the_whole_text(segmenter_path: Path) -> None:
    # Past the stream's first lines its features are read from a later line on: the place
    # was counted from there ("at character 6309" for 39,004).
    segmenter = Segmenter.load(segmenter_path)
    text = "Hello there.\n" * 3000 + "bad \ud800 here."
    message = r"lone surrogate \(U\+D800 at character 39004\)"
    with pytest.raises(ValueError, match=message):
        segmenter.segment(text)
    with pytest.raises(ValueError, match=message):
        pipeline.segmented(segmenter, text)


def test_peeked_rows_are_those_of_the_text_ending_there_and_are_not_given_again() -> None:
    words = vocab()
    model = random_model(words, rnn_hidden=4, n_features=words.n_features)
    how = {"window": 5, "context": 2, "batch_size": 16}  # nothing scored before the peek
    head, tail = "I ate ice cream.\n\n", "New York and ice cream!\nHà Nội.\n"
    whole = log_probs(model, words, head + tail, **how).numpy()
    stream = score_stream(model, words, **how)
    # The next paragraph's first line has come too: the windows must not read it (they did).
    line = tail.index("\n") + 1
    given = [stream.push(head[:3], final=False), stream.push(head[3:] + tail[:line], final=False)]
    given.append(stream.peek(len(head) - sum(map(len, given))))
    np.testing.assert_array_equal(np.concatenate(given), log_probs(model, words, head, **how))
    rest = [stream.push(tail[line:], final=False), stream.push("", final=True)]
    assert sum(map(len, rest)) == len(tail)  # each character's row given once
    np.testing.assert_array_equal(np.concatenate(rest), whole[len(head) :])
    with pytest.raises(ValueError, match="must end a line"):
        stream.peek(1)


def _pieces_as_they_come(segmenter: Segmenter, chunks: list[str]) -> list[tuple[int, str]]:
    """Each piece's text, with how many chunks the segmenter had taken when it was given."""
    taken = 0

    def chunks_taken():
        nonlocal taken
        for chunk in chunks:
            taken += 1
            yield chunk

    return [
        (taken, document.text)
        for document in segmenter.segment_stream(chunks_taken(), interactive=True)
    ]


def test_paragraphs_that_have_ended_are_segmented_when_the_writer_pauses(
    segmenter_path: Path,
) -> None:
    # From a pipe, a piece waited for 262,144 characters (or the input's end): a program that
    # sent a paragraph and waited for its parse waited for good. An empty chunk is a pause.
    segmenter = Segmenter.load(segmenter_path, window=16, context=4)
    first, second = "I ate ice cream. In New York.\r\n\r\nDr. Smith", " arrived du village.\n"
    third = "\nHà Nội, HÀ NỘI; new york.\n\n"
    chunks = [first, "", second, "", third, ""]
    found = _pieces_as_they_come(segmenter, chunks)
    # The ended paragraph given at the first pause, before the next chunk is taken; at the
    # second, "Dr. Smith arrived du village.\n" has no paragraph break after it, and waits.
    ended = first.index("Dr.")
    assert found == [(2, first[:ended]), (6, first[ended:] + second + third)]
    # The first piece is scored as a text ending with it: as that text alone. The later
    # pieces read the scores of the whole text, the first piece's context included.
    alone = list(rawtext.to_conllu(segmenter.segment(first[:ended])))
    paused = next(segmenter.segment_stream([first[:ended], ""], interactive=True))
    assert list(rawtext.to_conllu(paused)) == alone
    # Lone CRs: a paragraph and its blank line, then the LF of what might have been a CRLF.
    crs = ["Hello there.\r\r", "", "\nDr. Smith.\r", ""]
    assert _pieces_as_they_come(segmenter, crs) == [(2, crs[0]), (4, crs[2])]
    # A pause between the CR and the LF of a line break that ends no paragraph: the stream
    # took the CR for a line break of its own and the cutter for a CRLF, and every later
    # row slipped by one (two such pauses: "the characters peeked at must end a line").
    split = ["Hello there.\r", "", "\nSecond line of it.\r", "", "\nDr. Smith came.\r\n\r\n", ""]
    text = "".join(split)
    found = list(segmenter.segment_stream(split, interactive=True))
    assert [document.text for document in found] == [text]
    assert _sentences(found[0], 0) == _sentences(segmenter.segment(text), 0)
    whole = segmenter.segment(first + second + third)
    later = list(segmenter.segment_stream(chunks, interactive=True))[1]
    assert _sentences(later, ended) == [s for s in _sentences(whole, 0) if s[0] >= ended]


def _sentences(document: rawtext.Document, offset: int) -> list[tuple]:
    """Each sentence's span and tokens (span, form, words), ``offset`` added to the spans."""
    return [
        (
            sentence.start + offset,
            sentence.end + offset,
            [(t.start + offset, t.end + offset, t.form, t.words) for t in sentence.tokens],
        )
        for paragraph in document.paragraphs
        for sentence in paragraph.sentences
    ]


def test_predict_py_answers_each_paragraph_while_its_writer_waits(
    segmenter_path: Path, graph_checkpoint: Path, tmp_path: Path
) -> None:
    # A paragraph from a pipe waited for 262,144 characters, or the input's end.
    first, second = "I ate ice cream in New York.\n\n", "Dr. Smith left du village.\n"
    command = [sys.executable, str(REPO / "predict.py"), f"checkpoint={graph_checkpoint}"]
    command += [f"segmenter={segmenter_path}", "format=raw", "threads=1", "output=-"]
    from_files = []
    for k, text in enumerate([first, first + second]):
        (tmp_path / f"{k}.txt").write_text(text, encoding="utf-8")
        run = subprocess.run([*command, f"input={tmp_path / f'{k}.txt'}"], capture_output=True)
        from_files.append(run.stdout.decode())
    process = subprocess.Popen([*command, "input=-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        process.stdin.write(first.encode())
        process.stdin.flush()
        answer = _output_until_quiet(process.stdout, 120)
        process.stdin.write(second.encode())
        process.stdin.close()
        rest = process.stdout.read().decode()
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
    # The first paragraph as a text of its own (scored as a text ending with it), and the
    # second as from the whole file.
    assert answer == from_files[0]
    assert answer.startswith("# newdoc\n")
    assert _second_paragraph(answer + rest) == _second_paragraph(from_files[1])


def _output_until_quiet(stdout, seconds: float) -> str:
    """What ``stdout`` gives up to a blank line and a second with nothing more, or fails."""
    found, deadline = b"", time.monotonic() + seconds
    while time.monotonic() < deadline:
        waited = 1.0 if found.endswith(b"\n\n") else deadline - time.monotonic()
        if not select.select([stdout], [], [], max(waited, 0))[0]:
            if found.endswith(b"\n\n"):
                return found.decode()
            break
        data = os.read(stdout.fileno(), 1 << 16)
        assert data, "the output ended"
        found += data
    raise AssertionError(f"no whole answer after {seconds} s: {found!r}")


def _second_paragraph(conllu: str) -> list[str]:
    """The lines from the second ``# newpar`` on, but the sentence numbers."""
    lines = conllu.splitlines()
    start = [k for k, line in enumerate(lines) if line == "# newpar"][1]
    return [line for line in lines[start:] if not line.startswith("# sent_id")]
