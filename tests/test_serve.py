"""The HTTP server of serve.py, started for real on 127.0.0.1 and called by real HTTP clients.

Its answers are compared byte for byte with predict.py's output for the same model and input
(predict.py runs as a subprocess, started beside the server so that both load at once).
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import email.mime.multipart
import email.mime.nonmultipart
import email.policy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("starlette", reason="the server needs the serve extra (starlette)")
pytest.importorskip("uvicorn", reason="the server needs the serve extra (uvicorn)")

import rawtext
import tiered
from biaffine import models
from biaffine.serving.app import create_app
from biaffine.serving.batcher import Batcher
from biaffine.serving.jobs import ABANDONED, Answer, Limits, Worker, task_of
from biaffine.serving.served import TorchServed
from decoding.trees import is_projective

ROOT = Path(__file__).resolve().parents[1]
MODEL = "en_ewt_small"

RAW = (
    "The cat sat on the mat. It didn't move, naïve as it was.\n\n"
    "A second paragraph: Dr. Smith arrived at 5 p.m. and left.\n"
)
HORIZONTAL = "The cat sat on the mat .\nIt did n't move , naïve as it was .\n"
CONLLU = (
    "# sent_id = a\n"
    "# text = The cat didn't sleep.\n"
    "1\tThe\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "2\tcat\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3-4\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tdid\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "4\tn't\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "5\tsleep\t_\t_\t_\t_\t_\t_\t_\tSpaceAfter=No\n"
    "6\t.\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "\n"
    "# sent_id = b\n"
    "1\tDogs\tdog\tNOUN\tNNS\t_\t_\t_\t_\t_\n"
    "2\tbark\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "\n"
)
UDPIPE = {"tokenizer": "", "tagger": "", "parser": ""}  # what a UDPipe client sends
WITHOUT_TORCH = """
import json, runpy, sys
sys.modules["torch"] = None  # any import of torch now fails
sys.argv = ["serve.py", *json.loads(sys.argv[1])]
try:
    runpy.run_path("serve.py", run_name="__main__")
finally:
    torch = [m for m, module in sys.modules.items() if m.split(".")[0] == "torch" and module]
    numba = [m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite")]
    print(json.dumps({"torch": sorted(torch), "numba": sorted(numba)}), flush=True)
"""
"""serve.py's main with the arguments given as JSON where torch cannot be imported; prints the
modules of torch (none may) and of numba imported when it stops."""

# name -> (the request's fields, predict.py's arguments for the same answer)
SAME_AS_PREDICT = {
    "raw": ({"data": RAW, **UDPIPE}, ["format=raw"]),
    "horizontal": ({"data": HORIZONTAL, "input": "horizontal", "parser": ""}, ["format=text"]),
    "conllu": ({"data": CONLLU, "parser": ""}, []),
    "probabilities": (
        {"data": CONLLU, "parser": "", "probabilities": "true"},
        ["probabilities=true"],
    ),
    "kbest": ({"data": CONLLU, "parser": "", "kbest": "3"}, ["kbest=3"]),
}
LIMITS = ["limits.max_body_bytes=20000", "limits.max_words=300", "limits.max_sentence_words=60"]
LIMITS += ["limits.max_kbest_cells=2000"]  # kbest=4 on 20 words with eisner, not 5
LIMITS += ["limits.max_cubic_work=100000"]  # eisner kbest=4 on two sentences of 20 words, not 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(
    base: str,
    fields: dict[str, str] | None = None,
    *,
    path: str = "/process",
    method: str = "POST",
    body: bytes | None = None,
    content_type: str = "application/x-www-form-urlencoded",
) -> tuple[int, dict]:
    """One HTTP call; the status and the JSON answer (errors included)."""
    if fields is not None:
        body = urllib.parse.urlencode(fields).encode()
    headers = {"Content-Type": content_type} if body is not None else {}
    request = urllib.request.Request(base + path, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def multipart(fields: dict[str, str], *, file: str | None = None) -> tuple[bytes, str]:
    """A multipart/form-data body as curl -F sends it (``file``: that field as an upload)."""
    boundary = "----rootparse-test-boundary"
    parts = []
    for name, value in fields.items():
        upload = '; filename="doc.txt"\r\nContent-Type: text/plain' if name == file else ""
        disposition = f'Content-Disposition: form-data; name="{name}"{upload}'
        parts.append(f"--{boundary}\r\n{disposition}\r\n\r\n{value}\r\n")
    body = "".join(parts) + f"--{boundary}--\r\n"
    return body.encode(), f"multipart/form-data; boundary={boundary}"


def udpipe_client_body(fields: dict[str, str]) -> tuple[bytes, str]:
    """The multipart body that UDPipe 2's udpipe2_client.py sends (email.policy.HTTP: CRLF)."""
    message = email.mime.multipart.MIMEMultipart("form-data", policy=email.policy.HTTP)
    for name, value in fields.items():
        part = email.mime.nonmultipart.MIMENonMultipart("text", "plain")
        part.add_header("Content-Disposition", f'form-data; name="{name}"')
        part.add_header("Content-Transfer-Encoding", "8bit")
        part.set_payload(value, charset="utf-8")
        message.attach(part)
    body = message.as_bytes().split(b"\r\n\r\n", maxsplit=1)[1]  # after the boundary is made
    return body, message["Content-Type"]


@contextlib.contextmanager
def serving(
    log: Path, *overrides: str, without_torch: bool = False
) -> Iterator[tuple[str, subprocess.Popen]]:
    """``python serve.py models=en_ewt_small ...`` on a free port, until the block ends.

    ``without_torch``: where torch cannot be imported (:data:`WITHOUT_TORCH`).
    """
    port = free_port()
    settings = [f"models={MODEL}", f"port={port}", *overrides]
    command = [sys.executable, "serve.py", *settings]
    if without_torch:
        command = [sys.executable, "-c", WITHOUT_TORCH, json.dumps(settings)]
    with open(log, "wb") as stderr:
        process = subprocess.Popen(command, cwd=ROOT, stdout=stderr, stderr=stderr)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process, log)
        yield base, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)


def wait_until_up(base: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 300  # loading and warming up on a busy machine
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"serve.py exited with {process.returncode}: {log.read_text()[-2000:]}")
        with contextlib.suppress(OSError):
            if call(base, path="/health", method="GET")[0] == 200:
                return
        time.sleep(0.2)
    pytest.fail(f"serve.py did not answer within 300 s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def model_installed() -> None:
    if MODEL not in models.names():
        pytest.skip(f"the shipped model {MODEL} is not installed (models/{MODEL}/ missing)")


@pytest.fixture(scope="module")
def predicted(
    model_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, subprocess.Popen]:
    """predict.py started on every case of SAME_AS_PREDICT at once (read with ``finished``)."""
    folder = tmp_path_factory.mktemp("predict")
    running = {}
    for name, (fields, arguments) in SAME_AS_PREDICT.items():
        source = folder / f"{name}.txt"
        source.write_bytes(fields["data"].encode())
        command = [sys.executable, "predict.py", f"model={MODEL}", f"input={source}", *arguments]
        running[name] = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    return running


def finished(process: subprocess.Popen) -> str:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err.decode()[-2000:]
    return out.decode()


@pytest.fixture(scope="module")
def server(
    predicted: dict[str, subprocess.Popen], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serving(log, *LIMITS) as (base, _):
        yield base


# --- UDPipe's API, byte for byte with predict.py ------------------------------------------


@pytest.mark.parametrize("case", list(SAME_AS_PREDICT))
def test_process_answers_the_bytes_predict_py_writes(
    server: str, predicted: dict[str, subprocess.Popen], case: str
) -> None:
    fields, _ = SAME_AS_PREDICT[case]
    status, answer = call(server, fields)
    assert status == 200, answer
    assert answer["model"] == MODEL
    assert answer["acknowledgements"] == [
        "UD_English-EWT (CC BY-SA 4.0), https://github.com/UniversalDependencies/UD_English-EWT"
    ]
    assert answer["result"] == finished(predicted[case])


def test_models_lists_what_each_model_does_as_udpipe_does(server: str) -> None:
    status, answer = call(server, path="/models", method="GET")
    assert status == 200
    assert answer == {"models": {MODEL: ["tokenizer", "tagger", "parser"]}, "default_model": MODEL}


def test_health(server: str) -> None:
    status, answer = call(server, path="/health", method="GET")
    assert status == 200
    assert (
        answer.items() >= {"status": "ok", "models": [MODEL], "queued": 0, "in_flight": 0}.items()
    )
    assert 0 <= answer["batches"] <= answer["batched_requests"]


def test_multipart_a_file_upload_and_a_query_string_ask_the_same(server: str) -> None:
    fields = {"data": RAW, **UDPIPE}
    expected = call(server, fields)
    body, kind = multipart(fields)
    assert call(server, body=body, content_type=kind) == expected
    body, kind = multipart(fields, file="data")  # curl -F data=@doc.txt
    assert call(server, body=body, content_type=kind) == expected
    query = urllib.parse.urlencode(fields)
    assert call(server, path=f"/process?{query}", method="GET") == expected


def test_media_types_are_read_whatever_their_case(server: str) -> None:
    fields = {"data": HORIZONTAL, "input": "horizontal", "parser": ""}
    expected = call(server, fields)
    assert expected[0] == 200
    form = urllib.parse.urlencode(fields).encode()
    assert call(server, body=form, content_type="Application/X-WWW-Form-Urlencoded") == expected
    body, kind = multipart(fields)
    kind = kind.replace("multipart/form-data", "Multipart/Form-Data")
    assert call(server, body=body, content_type=kind) == expected


def test_crlf_and_cr_line_ends_are_read_as_lf(server: str) -> None:
    # UDPipe 2's own client and HTML forms send CRLF; UDPipe 2 answers LF whatever it read.
    conllu = {"data": CONLLU, "parser": ""}
    expected = call(server, conllu)
    body, kind = udpipe_client_body(conllu)
    assert b"\r\n1\tThe" in body
    assert call(server, body=body, content_type=kind) == expected
    horizontal = {"data": HORIZONTAL, "input": "horizontal", "parser": ""}
    expected = call(server, horizontal)
    for line_end in ("\r\n", "\r"):
        sent = {**horizontal, "data": HORIZONTAL.replace("\n", line_end)}
        assert call(server, sent) == expected


@pytest.mark.parametrize("data", ["", " \n\t\n", "\ufeff", "\ufeff\n "])
@pytest.mark.parametrize("steps", [{"tokenizer": ""}, {"input": "conllu"}, {"input": "horizontal"}])
def test_empty_data_gets_an_empty_result_in_every_input_format(
    server: str, data: str, steps: dict[str, str]
) -> None:
    status, answer = call(server, {"data": data, **steps, "parser": ""})
    assert (status, answer["result"]) == (200, "")


def test_tokenizer_alone_segments_without_parsing(server: str) -> None:
    status, answer = call(server, {"data": RAW, "tokenizer": ""})
    assert status == 200
    words = [line.split("\t") for line in answer["result"].splitlines() if line[:1].isdigit()]
    assert words
    assert {(w[6], w[7]) for w in words} == {("_", "_")}  # no tree
    assert words[0][1] == "The"


def test_given_heads_are_kept_and_the_decoder_is_the_one_asked(server: str) -> None:
    given = CONLLU.replace("1\tThe\t_\t_\t_\t_\t_", "1\tThe\t_\t_\t_\t_\t5")  # The <- sleep
    fields = {"data": given, "parser": "", "keep_given_heads": "true"}
    status, answer = call(server, fields)
    assert status == 200, answer
    assert answer["result"].splitlines()[2].split("\t")[6] == "5"
    for decoder in ("eisner", "greedy", "mst"):
        fields = {"data": HORIZONTAL, "input": "horizontal", "parser": "", "decoder": decoder}
        status, answer = call(server, fields)
        assert status == 200, answer
        for block in answer["result"].strip().split("\n\n"):
            heads = [int(line.split("\t")[6]) for line in block.splitlines() if line[0].isdigit()]
            assert len(heads) > 3
            if decoder == "eisner":
                assert is_projective([-1, *heads])


# --- concurrency -----------------------------------------------------------------------------


def test_concurrent_clients_each_get_their_own_answer(server: str) -> None:
    # Different inputs and steps, so that a batch mixes them: each answer must be the one the
    # request gets alone.
    words = HORIZONTAL.split()
    requests = []
    for k in range(24):
        text = " ".join(words[k:] + words[:k]) + "\n"
        steps = [
            {"input": "horizontal", "parser": ""},
            {"tokenizer": "", "parser": ""},
            {"tokenizer": "", "tagger": "", "parser": ""},
        ][k % 3]
        requests.append({"data": text, **steps})
    alone = [call(server, fields) for fields in requests]
    assert {status for status, _ in alone} == {200}
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(requests)) as pool:
        together = list(pool.map(lambda fields: call(server, fields), requests))
    assert together == alone


def test_raw_text_without_tagger_gets_a_tree_and_no_tags(server: str) -> None:
    status, answer = call(server, {"data": RAW, "tokenizer": "", "parser": ""})
    assert status == 200
    words = [line.split("\t") for line in answer["result"].splitlines() if line[:1].isdigit()]
    assert {w[3] for w in words} == {"_"}
    assert "root" in {w[7] for w in words}


# --- errors ----------------------------------------------------------------------------------

TOO_MANY_WORDS = ("word " * 40 + "\n") * 10
TOO_LONG = "word " * 61 + "\n"
ERRORS = {
    "no data": ({"parser": ""}, 400, "'data' is required"),
    "unknown model": ({"data": "x", "model": "../../etc/passwd"}, 400, "unknown model"),
    "unknown field": ({"data": "x", "checkpoint": "/tmp/x.pt"}, 400, "unknown field"),
    "unknown input": ({"data": "x", "input": "vertical"}, 400, "input='vertical'"),
    "unknown output": ({"data": "x", "output": "horizontal"}, 400, "only conllu"),
    "bad boolean": ({"data": "x", "probabilities": "maybe"}, 400, "true or false"),
    "bad number": ({"data": "x", "kbest": "two"}, 400, "must be an integer"),
    "kbest too large": ({"data": "x", "kbest": "1000"}, 400, "kbest=1000"),
    "unknown decoder": ({"data": "x", "decoder": "cky"}, 400, "decoder='cky'"),
    "options that clash": (
        {"data": CONLLU, "parser": "", "kbest": "2", "probabilities": "true"},
        400,
        "do not combine",
    ),
    "given heads of text": (
        {"data": "a b\n", "input": "horizontal", "keep_given_heads": "true"},
        400,
        "which input=horizontal lacks",
    ),
    "given heads of raw text": (
        {"data": "a b\n", "tokenizer": "", "keep_given_heads": "true"},
        400,
        "which raw text (tokenizer) lacks",
    ),
    "malformed conllu": ({"data": "1\tThe\n\n", "parser": ""}, 400, "data:1"),
    "text given as conllu": ({"data": "The cat\n", "parser": ""}, 400, "send input=horizontal"),
    "conllu given as text": ({"data": CONLLU, "input": "horizontal"}, 400, "send input=conllu"),
    "words per request": ({"data": TOO_MANY_WORDS, "input": "horizontal"}, 413, "400 words"),
    "sentence length": ({"data": TOO_LONG, "input": "horizontal"}, 413, "61 words"),
    # 4.1 GB and minutes of the worker for kbest=32 on 1000 words.
    "k-best eisner chart": (
        {"data": "w " * 20, "input": "horizontal", "parser": "", "kbest": "5", "decoder": "eisner"},
        413,
        "kbest=5 with decoder=eisner on a sentence of 20 words: a chart of 2205 cells, at most "
        "2000; give kbest=4 or fewer",
    ),
    # kbest=2 decoder=eisner on 1000 words held the worker for 42 s (its chart within
    # max_kbest_cells), eisner's probabilities for 33 s.
    "k-best work": (
        {
            "data": ("w " * 20 + "\n") * 3,
            "input": "horizontal",
            "parser": "",
            "kbest": "4",
            "decoder": "eisner",
        },
        413,
        "kbest=4 with decoder=eisner on 3 sentences: 111132 units of work, at most 100000 "
        "(docs/serving.md); send fewer or shorter sentences, or a smaller kbest",
    ),
    # kbest=32 on 512 words of "word" held the worker for 49 s.
    "k-best work, mst": (
        {"data": ("w " * 20 + "\n") * 2, "input": "horizontal", "parser": "", "kbest": "7"},
        413,
        "kbest=7 with decoder=mst on 2 sentences: 111132 units of work, at most 100000",
    ),
    "eisner probabilities work": (
        {
            "data": ("w " * 59 + "\n") * 5,
            "input": "horizontal",
            "parser": "",
            "probabilities": "true",
            "decoder": "eisner",
        },
        413,
        "probabilities with decoder=eisner on 5 sentences: 1080000 units of work",
    ),
    # Eisner's best tree was not counted: 20 sentences of 1000 words, four minutes of work.
    "eisner work": (
        {"data": ("w " * 45 + "\n") * 2, "input": "horizontal", "parser": "", "decoder": "eisner"},
        413,
        "decoder=eisner on 2 sentences: 194672 units of work, at most 100000 (docs/serving.md); "
        "send fewer or shorter sentences",
    ),
    "raw words per request": (
        {"data": TOO_MANY_WORDS, "tokenizer": ""},
        413,
        "400 whitespace-separated pieces",
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_bad_requests_get_a_one_line_json_error(server: str, case: str) -> None:
    fields, status, words = ERRORS[case]
    got, answer = call(server, fields)
    assert (got, list(answer)) == (status, ["error"])
    assert words in answer["error"]
    assert "\n" not in answer["error"]


MULTIPART = "multipart/form-data; boundary=x"
PART = b'--x\r\nContent-Disposition: form-data; name="data"\r\n\r\nx\r\n--x--\r\n'
NESTED = PART.replace(
    b"\r\n\r\nx", b"\r\nContent-Type: multipart/mixed; boundary=y\r\n\r\n--y\r\n\r\nx\r\n--y--"
)


@pytest.mark.parametrize(
    ("body", "kind", "status", "words"),
    [
        (b"data=" + b"x" * 20001, "application/x-www-form-urlencoded", 413, "at most 20000"),
        (b"data=\xff\xfe", "application/x-www-form-urlencoded", 400, "not UTF-8"),
        (b'{"data": "x"}', "application/json", 415, "application/json"),
        (b"--x\r\nnot a part", "multipart/form-data; boundary=x", 400, "multipart"),
        # The standard library's header parser recurses once per nested comment "(".
        pytest.param(
            PART.replace(b'"data"', b'"data" ' + b"(" * 1000),
            MULTIPART,
            400,
            "1000 comments '(' in a part's headers",
            id="comments in a part's disposition",
        ),
        pytest.param(
            PART.replace(b"\r\n\r\n", b"\r\nContent-Type: " + b"(" * 1000 + b"\r\n\r\n", 1),
            MULTIPART,
            400,
            "1000 comments '(' in a part's headers",
            id="comments in a part's type",
        ),
        pytest.param(
            PART,
            MULTIPART + "; " + "(" * 1000,
            400,
            "1000 comments '(' in the Content-Type header",
            id="comments in the body's type",
        ),
        # Thousands of parts or parameters take seconds to parse: refused before.
        pytest.param(
            PART.replace(b"--x--", PART[:-7] * 16 + b"--x--"),
            MULTIPART,
            400,
            "more than 16 parts",
            id="17 parts",
        ),
        pytest.param(
            PART.replace(b'"data"', b'"data"' + b"; a=b" * 500),
            MULTIPART,
            400,
            "a part's headers of 2543 bytes: at most 2000",
            id="long part headers",
        ),
        # An RFC 2231 parameter cut short: an IndexError in the standard library, a 500.
        pytest.param(PART, MULTIPART + "; a*1*", 400, "Content-Type header does not", id="2231"),
        pytest.param(
            PART.replace(b'"data"', b"data; x*1*"),
            MULTIPART,
            400,
            "a part's headers do not parse",
            id="2231 in a part",
        ),
        pytest.param(
            PART.replace(b"\r\n\r\n", b"\r\nContent-Type: text/plain; x*1*\r\n\r\n", 1),
            MULTIPART,
            400,
            "a part's headers do not parse",
            id="2231 in a part's type",
        ),
        pytest.param(
            NESTED, MULTIPART, 400, "the field 'data' is multipart/mixed", id="nested multipart"
        ),
        # Broken base64 was decoded to nothing: a 200 with an empty result, the text lost.
        pytest.param(
            PART.replace(b"\r\n\r\nx", b"\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!"),
            MULTIPART,
            400,
            "a part's base64 content does not decode as base64",
            id="broken base64",
        ),
        pytest.param(  # 9 letters: no padding mends that, and the last was dropped
            PART.replace(b"\r\n\r\nx", b"\r\nContent-Transfer-Encoding: base64\r\n\r\naGVsbG8gd"),
            MULTIPART,
            400,
            "a part's base64 content does not decode as base64",
            id="base64 cut short",
        ),
        # Padding in the middle (two chunks encoded apart): the first chunk alone, a 200.
        pytest.param(
            PART.replace(
                b"\r\n\r\nx",
                b"\r\nContent-Transfer-Encoding: base64\r\n\r\n"
                b"VGhlIGNhdCBzYXQgLgo=\r\nSXQgc2xlcHQgLgo=",
            ),
            MULTIPART,
            400,
            "a part's base64 content does not decode as base64",
            id="base64 padded in its middle",
        ),
        pytest.param(  # "QQ=QUJD" was decoded to four wrong bytes
            PART.replace(b"\r\n\r\nx", b"\r\nContent-Transfer-Encoding: base64\r\n\r\nQQ=QUJD"),
            MULTIPART,
            400,
            "a part's base64 content does not decode as base64",
            id="base64 with a lone pad",
        ),
        pytest.param(  # "=ZZ" stayed in the text as written
            PART.replace(
                b"\r\n\r\nx", b"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\ncaf=ZZ"
            ),
            MULTIPART,
            400,
            "a part's quoted-printable content does not decode as quoted-printable",
            id="broken quoted-printable",
        ),
        # The standard library started the content at a line that is no header field, so it
        # was parsed as the text's first sentence.
        pytest.param(
            PART.replace(b"\r\n\r\n", b"\r\nX-Broken header line\r\n\r\n", 1),
            MULTIPART,
            400,
            "a part's headers hold a line that is no header field",
            id="a part's header line without a colon",
        ),
        # A failed uudecode gave the encoded text as the field's value.
        pytest.param(
            PART.replace(b"\r\n\r\nx", b"\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nx"),
            MULTIPART,
            400,
            "a part's Content-Transfer-Encoding 'x-uuencode'; known: 7bit, 8bit, base64",
            id="uuencode",
        ),
    ],
)
def test_bad_bodies_get_a_one_line_json_error(
    server: str, body: bytes, kind: str, status: int, words: str
) -> None:
    got, answer = call(server, body=body, content_type=kind)
    assert (got, list(answer)) == (status, ["error"])
    assert words in answer["error"]


def test_a_part_in_base64_or_quoted_printable_is_read_decoded(server: str) -> None:
    # Missing padding and whitespace lose nothing (RFC 2045): read as the standard library
    # decodes them (base64 in lines ending " \r\n" was refused for its spaces).
    expected = call(server, {"data": HORIZONTAL, "input": "horizontal", "parser": ""})
    unpadded = base64.b64encode(HORIZONTAL.encode()).rstrip(b"=")
    spaced = base64.encodebytes(HORIZONTAL.encode()).replace(b"\n", b" \r\n")
    # Soft line breaks, one with the whitespace transport may add, and escapes in either case.
    quoted = HORIZONTAL.encode().replace(b"cat", b"c=\r\na=  \r\nt").replace(b"sat", b"=73a=74")
    sent = [
        ("base64", unpadded),
        ("base64", spaced),
        ("quoted-printable", HORIZONTAL.encode()),
        ("quoted-printable", quoted),
    ]
    for encoding, content in sent:
        part = (
            b'--x\r\nContent-Disposition: form-data; name="data"\r\n'
            b"Content-Transfer-Encoding: " + encoding.encode() + b"\r\n\r\n" + content + b"\r\n"
        )
        fields = b'--x\r\nContent-Disposition: form-data; name="input"\r\n\r\nhorizontal\r\n'
        fields += b'--x\r\nContent-Disposition: form-data; name="parser"\r\n\r\n\r\n--x--\r\n'
        assert call(server, body=part + fields, content_type=MULTIPART) == expected


def test_head_on_process_is_not_allowed_and_parses_nothing(server: str) -> None:
    # Starlette's HEAD for a GET route ran the whole parse and threw the answer away.
    before = call(server, path="/health", method="GET")[1]["batches"]
    query = "/process?" + urllib.parse.urlencode({"data": "The cat sat .", "parser": ""})
    request = urllib.request.Request(server + query, method="HEAD")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=120)
    assert refused.value.code == 405
    assert sorted(refused.value.headers["Allow"].split(", ")) == ["GET", "POST"]
    assert call(server, path="/health", method="GET")[1]["batches"] == before


def test_unknown_paths_and_methods_get_json_errors(server: str) -> None:
    assert call(server, path="/parse", method="GET")[0] == 404
    status, answer = call(server, path="/process", method="DELETE")
    assert (status, list(answer)) == (405, ["error"])
    # RFC 9110 15.5.6: a 405 names the methods allowed (the JSON answer dropped the header).
    request = urllib.request.Request(server + "/process", method="PUT")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=120)
    assert sorted(refused.value.headers["Allow"].split(", ")) == ["GET", "POST"]
    # Not a 307 to /process on the site the Host header names.
    request = urllib.request.Request(server + "/process/", headers={"Host": "elsewhere.example"})
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(request, timeout=120)
    assert (missing.value.code, list(json.loads(missing.value.read()))) == (404, ["error"])


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"data": "x", "kbest": "2"}, "kbest= is about trees: give parser= (or tagger=) too"),
        ({"data": "x", "decoder": "eisner"}, "decoder= is about trees"),
        ({"data": "x", "parser": "", "kbest": "\u0662"}, "kbest='\u0662' must be an integer"),
        ({"data": "x", "parser": "", "kbest": "1_0"}, "kbest='1_0' must be an integer"),
        # Beyond the digits Python converts to an int: a 500 "internal error".
        ({"data": "x", "parser": "", "kbest": "0" * 4300 + "1"}, "kbest= has 4301 digits"),
        # int() and float() read these: the docs say ASCII digits.
        ({"data": "x", "parser": "", "kbest": " 2"}, "kbest=' 2' must be an integer"),
        ({"data": "x", "parser": "", "kbest": "+1"}, "kbest='+1' must be an integer"),
        ({"data": "x", "parser": "", "graph_weight": "1 "}, "graph_weight='1 ' must be a"),
        # The server has no decoder=mst_multiroot, which the message offered.
        (
            {"data": "x", "parser": "", "kbest": "2", "decoder": "greedy"},
            "kbest=2 needs decoder=mst or eisner, not greedy",
        ),
        # UDPipe's tokenizer options, read by none here: presegmented gave other sentences.
        (
            {"data": "x", "tokenizer": "presegmented"},
            "tokenizer='presegmented': this tokenizer takes no options",
        ),
    ],
    ids=[
        "kbest-without-parser",
        "decoder-without-parser",
        "arabic-indic-digit",
        "underscore",
        "too-many-digits",
        "space",
        "sign",
        "float-space",
        "no-multiroot",
        "tokenizer-options",
    ],
)
def test_options_that_would_be_ignored_or_misread_are_refused(
    server: str, fields: dict[str, str], words: str
) -> None:
    status, answer = call(server, fields)
    assert (status, list(answer)) == (400, ["error"])
    assert words in answer["error"]


def test_a_query_or_body_of_many_fields_is_refused_before_it_is_parsed(server: str) -> None:
    # 140,000 pairs in a query under the size limit held the event loop (/health too) 1.3 s.
    status, answer = call(server, body=b"data=x" + b"&input=conllu" * 100)
    assert (status, answer) == (
        400,
        {"error": "the form-encoded body holds 101 fields: at most 64"},
    )
    status, answer = call(server, path="/process?" + "&".join(["data=x"] * 65), method="GET")
    assert (status, answer) == (400, {"error": "the query string holds 65 fields: at most 64"})


def test_a_page_on_another_site_may_call_the_api_as_udpipes(server: str) -> None:
    # UDPipe 2 sends Access-Control-Allow-Origin: * and answers POST /models; the preflight
    # OPTIONS got a 405.
    origin = {"Origin": "https://elsewhere.example"}
    preflight = {**origin, "Access-Control-Request-Method": "POST"}
    request = urllib.request.Request(server + "/process", method="OPTIONS", headers=preflight)
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.headers["Access-Control-Allow-Origin"] == "*"
    request = urllib.request.Request(server + "/models", method="POST", headers=origin)
    with urllib.request.urlopen(request, timeout=120) as answer:
        assert answer.headers["Access-Control-Allow-Origin"] == "*"
        assert json.loads(answer.read())["default_model"] == MODEL


def test_an_error_does_not_echo_a_huge_value_whole(server: str) -> None:
    status, answer = call(server, {"data": "x", "model": "m" * 19_000})  # a body under 20000
    assert status == 400
    assert answer["error"].startswith("unknown model 'mmm")
    assert len(answer["error"]) == 500


def test_a_query_over_the_body_limit_is_a_json_414_not_a_reset_connection(server: str) -> None:
    # 24 KB: above h11's 16 KiB, which reset the connection, and the limit of 20000 here.
    query = urllib.parse.urlencode({"data": "a " * 12_000, "input": "horizontal"})
    status, answer = call(server, path="/process?" + query, method="GET")
    assert (status, list(answer)) == (414, ["error"])
    assert "at most 20000; POST it" in answer["error"]


def test_a_client_gone_before_its_body_is_a_request_error_not_an_internal_one() -> None:
    # Logged as an internal error with two tracebacks, which any client could fill a log with.
    from starlette.requests import ClientDisconnect

    from biaffine.serving import app
    from biaffine.serving.jobs import RequestError

    async def stream():
        yield b"data=The"
        raise ClientDisconnect

    request = SimpleNamespace(headers={"content-length": "100"}, stream=stream)
    with pytest.raises(RequestError) as refused:
        asyncio.run(app._body(request, 1000, 10))
    assert refused.value.status == 400


def test_a_body_slower_than_its_timeout_is_refused_with_408() -> None:
    # A client that declared 100 bytes and sent 5 held its connection for good.
    from biaffine.serving import app
    from biaffine.serving.jobs import RequestError

    async def stream():
        yield b"data="
        await asyncio.sleep(60)
        yield b"late"

    request = SimpleNamespace(headers={"content-length": "100"}, stream=stream)
    with pytest.raises(RequestError) as refused:
        asyncio.run(app._body(request, 1000, 0.2))
    assert (refused.value.status, str(refused.value)) == (
        408,
        "the body did not arrive within 0.2 s",
    )


def test_the_server_still_answers_after_the_errors(server: str) -> None:
    status, answer = call(server, {"data": HORIZONTAL, "input": "horizontal", "parser": ""})
    assert status == 200
    assert answer["result"].count("\n\n") == 2


# --- shutdown --------------------------------------------------------------------------------


def test_sigterm_lets_the_request_in_flight_finish(model_installed: None, tmp_path: Path) -> None:
    # A long batch wait holds the request in the server until the signal has arrived.
    with serving(tmp_path / "serve.log", "batch_wait_ms=3000") as (base, process):
        fields = {"data": RAW, **UDPIPE}
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(call, base, fields)
            while call(base, path="/health", method="GET")[1]["in_flight"] == 0:
                time.sleep(0.05)
            process.send_signal(signal.SIGTERM)
            status, answer = pending.result(timeout=120)
        # uvicorn ends by raising the signal again once done, as a supervisor expects.
        assert process.wait(timeout=120) == -signal.SIGTERM
    assert "Finished server process" in (tmp_path / "serve.log").read_text()
    assert status == 200
    assert "# text = The cat sat on the mat." in answer["result"]


# --- the batcher alone (no model, no HTTP) ---------------------------------------------------


def test_requests_that_arrive_together_share_one_call() -> None:
    calls = []

    def run(tasks: list, wanted: Callable[[int], bool]) -> list[Answer]:
        calls.append(list(tasks))
        return [Answer(200, str(task)) for task in tasks]

    async def main() -> list[Answer]:
        batcher = Batcher(run, wait_s=0.0, max_tasks=64, max_queued=100)
        batcher.start()
        answers = await asyncio.gather(*(batcher.submit(k, 10) for k in range(5)))
        await batcher.stop()
        return answers

    answers = asyncio.run(main())
    assert answers == [Answer(200, str(k)) for k in range(5)]
    assert calls == [[0, 1, 2, 3, 4]]


def test_a_request_out_of_time_or_beyond_the_queue_gets_503() -> None:
    release = threading.Event()

    def run(tasks: list, wanted: Callable[[int], bool]) -> list[Answer]:
        release.wait(timeout=60)
        return [Answer(200, "late") for _ in tasks]

    async def main() -> tuple[Answer, Answer]:
        batcher = Batcher(run, wait_s=0.0, max_tasks=1, max_queued=1)
        batcher.start()
        timed_out = await batcher.submit("slow", 0.2)  # the worker holds it
        waiting = asyncio.ensure_future(batcher.submit("queued", 10))
        await asyncio.sleep(0)  # it is in the queue now, which holds one
        overflow = await batcher.submit("one too many", 10)
        release.set()
        await waiting
        await batcher.stop()
        return timed_out, overflow

    timed_out, overflow = asyncio.run(main())
    assert (timed_out.status, overflow.status) == (503, 503)
    assert "no answer within 0.2 s" in timed_out.text
    assert "requests are waiting" in overflow.text


def test_stopping_does_not_wait_for_the_batch_being_parsed() -> None:
    # uvicorn stops the app once graceful_shutdown_s has run out (and has answered the requests
    # still in flight); the executor's shutdown then waited for the batch being parsed: SIGTERM
    # to exit took 72 s for kbest=32 on 1,000 words. serve.py leaves it (busy).
    release, started = threading.Event(), threading.Event()

    def run(tasks: list, wanted: Callable[[int], bool]) -> list[Answer]:
        started.set()
        release.wait(timeout=60)
        return [Answer(200, "late") for _ in tasks]

    async def main() -> tuple[bool, bool]:
        batcher = Batcher(run, wait_s=0.0, max_tasks=1, max_queued=4)
        batcher.start()
        held = asyncio.ensure_future(batcher.submit("held", 60))
        await asyncio.get_running_loop().run_in_executor(None, started.wait, 30)
        before = batcher.busy
        await asyncio.wait_for(batcher.stop(), 10)  # TimeoutError where it waits for the batch
        after = batcher.busy
        held.cancel()
        release.set()
        return before, after

    assert asyncio.run(main()) == (True, True)


def test_requests_that_ran_out_of_time_while_waiting_no_longer_count_as_queued() -> None:
    """They stay in the queue until the worker skips them; /health and max_queued must not
    count them (both did: a burst of timeouts refused every request after it for as long)."""
    release = threading.Event()

    def run(tasks: list, wanted: Callable[[int], bool]) -> list[Answer]:
        release.wait(timeout=60)
        return [Answer(200, str(task)) for task in tasks]

    async def main() -> tuple[list[int], Answer, Answer]:
        batcher = Batcher(run, wait_s=0.0, max_tasks=1, max_queued=2)
        batcher.start()
        holding = asyncio.ensure_future(batcher.submit("held", 10))
        await asyncio.sleep(0.05)  # the worker holds it
        counts = [batcher.queued]
        timed_out = await asyncio.gather(*(batcher.submit(k, 0.1) for k in range(2)))
        counts.append(batcher.queued)
        waiting = asyncio.ensure_future(batcher.submit("after", 10))
        await asyncio.sleep(0.05)
        counts.append(batcher.queued)
        release.set()
        answers = await asyncio.gather(holding, waiting)
        counts.append(batcher.queued)
        await batcher.stop()
        assert [answer.status for answer in timed_out] == [503, 503]
        return counts, *answers

    counts, held, after = asyncio.run(main())
    assert counts == [0, 0, 1, 0]
    assert (held, after) == (Answer(200, "held"), Answer(200, "after"))


def test_a_batch_whose_client_has_had_its_503_can_be_given_up() -> None:
    # The worker parsed on after the timeout's 503: every request behind it waited, and got its
    # own 503, for as long as the parse took.
    given_up = threading.Event()

    def run(tasks: list, wanted: Callable[[int], bool]) -> list[Answer]:
        if tasks == ["slow"]:
            while wanted(0):  # as the worker asks between the network's batches
                time.sleep(0.01)
            given_up.set()
        return [Answer(200, str(task)) for task in tasks]

    async def main() -> tuple[Answer, Answer]:
        batcher = Batcher(run, wait_s=0.0, max_tasks=1, max_queued=4)
        batcher.start()
        slow = await batcher.submit("slow", 0.2)
        after = await batcher.submit("after", 5)
        await batcher.stop()
        return slow, after

    slow, after = asyncio.run(main())
    assert (slow.status, after) == (503, Answer(200, "after"))
    assert given_up.is_set()


def test_the_worker_stops_between_batches_once_no_client_waits(model_installed: None) -> None:
    loaded = {MODEL: TorchServed(models.load(MODEL, threads=1))}
    worker = Worker(loaded, Limits(), max_tokens=40)
    data = "".join(f"The cat number {k} sat on the mat .\n" for k in range(20))
    fields = {"data": data, "input": "horizontal", "parser": ""}
    task = task_of(fields, loaded, MODEL, Limits())
    asked = []

    def wanted(index: int) -> bool:
        asked.append(index)
        return len(asked) <= 2  # the client's 503 comes during the second batch

    assert worker.run([task], wanted) == [ABANDONED]
    assert len(asked) == 3  # 20 sentences of 9 words in batches of 40: five batches
    assert worker.run([task], lambda index: False) == [ABANDONED]  # not even read
    assert worker.run([task])[0].status == 200


def test_a_served_torch_model_has_its_machine_code_loaded_at_warm_up(
    model_installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short-lived process runs small decoder calls interpreted first (tiered); a server
    must not make one of its requests wait for the loading instead."""
    monkeypatch.delenv("ROOTPARSE_COMPILE", raising=False)
    monkeypatch.setattr(tiered, "_BUDGET", tiered._Budget())
    assert tiered.interpreting()
    TorchServed.load(MODEL, threads=1)
    assert not tiered.interpreting()


def test_a_request_that_fails_in_a_shared_batch_fails_alone(model_installed: None) -> None:
    loaded = {MODEL: TorchServed(models.load(MODEL, threads=1))}
    two_roots = CONLLU.replace("1\tThe\t_\t_\t_\t_\t_", "1\tThe\t_\t_\t_\t_\t0").replace(
        "2\tcat\t_\t_\t_\t_\t_", "2\tcat\t_\t_\t_\t_\t0"
    )
    asked = [
        {"data": data, "parser": "", "keep_given_heads": "true"} for data in (two_roots, CONLLU)
    ]
    bad, good = (task_of(fields, loaded, MODEL, Limits()) for fields in asked)
    assert bad.setup() == good.setup()  # so one call parses both
    worker = Worker(loaded, Limits(), max_tokens=1000)
    answers = worker.run([bad, good])
    assert [answer.status for answer in answers] == [400, 200]
    assert "data:1" in answers[0].text
    assert answers[1] == worker.run([good])[0]


def test_probabilities_in_a_shared_batch_are_those_of_the_request_alone(
    model_installed: None, ud_test: list[str]
) -> None:
    # Another request's sentences in the network's batches changed a printed digit:
    # "# tree_log_prob = -2.5061" alone, -2.5062 beside EWT test's first sentence.
    loaded = {MODEL: TorchServed(models.load(MODEL, threads=1))}
    worker = Worker(loaded, Limits(), max_tokens=1000)
    for fields in ({"probabilities": "true"}, {"kbest": "2"}):
        asked = [{"data": ud_test[k], "parser": "", **fields} for k in (3, 0)]
        tasks = [task_of(f, loaded, MODEL, Limits()) for f in asked]
        assert worker.run(tasks)[0] == worker.run(tasks[:1])[0]


def test_probabilities_and_kbest_come_in_the_batches_predict_py_forms(
    model_installed: None, ud_test: list[str], tmp_path: Path
) -> None:
    # The server cut them at its max_tokens (1,000), predict.py at 5,000: "HeadProb=0.6169" in
    # predict.py's output was 0.6168 in the server's answer.
    from biaffine import installed
    from biaffine.predict_options import PredictOptions
    from biaffine.predicting import predict

    loaded = {MODEL: TorchServed(models.load(MODEL, threads=1))}
    worker = Worker(loaded, Limits(), max_tokens=40)
    data = "".join(ud_test[:6])
    source, wanted = tmp_path / "in.conllu", tmp_path / "out.conllu"
    source.write_text(data, encoding="utf-8")
    for fields, options in (
        ({"probabilities": "true"}, PredictOptions(probabilities=True)),
        ({"kbest": "3"}, PredictOptions(kbest=3)),
    ):
        predict(installed.require(MODEL).parser, source, wanted, threads=1, options=options)
        task = task_of({"data": data, "parser": "", **fields}, loaded, MODEL, Limits())
        assert worker.run([task])[0].text == wanted.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def ud_test() -> list[str]:
    """The sentences of EWT test, as CoNLL-U blocks; skips without UD_ROOT."""
    root = os.environ.get("UD_ROOT")
    path = Path(root or "") / "UD_English-EWT" / "en_ewt-ud-test.conllu"
    if not root or not path.is_file():
        pytest.skip("UD_ROOT does not hold UD_English-EWT")
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    return [block + "\n\n" for block in blocks if block.strip()]


def posted(app: object, body: bytes) -> list[dict]:
    """The ASGI messages ``app`` sends for a form-encoded POST of ``body`` to /process."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    headers = [(b"content-type", b"application/x-www-form-urlencoded")]
    scope = {"type": "http", "method": "POST", "path": "/process", "raw_path": b"/process"}
    scope |= {"query_string": b"", "headers": headers, "root_path": "", "scheme": "http"}
    scope |= {"http_version": "1.1", "server": ("test", 80), "client": ("client", 1)}
    asyncio.run(app(scope, receive, send))
    return sent


def test_a_request_cut_short_by_the_shutdown_gets_a_json_503(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # uvicorn cancels the requests still in flight when graceful_shutdown_s runs out: each got
    # its text/plain 500, and a traceback in the log.
    async def cancelled(self: Batcher, task: object, timeout_s: float) -> Answer:
        raise asyncio.CancelledError

    monkeypatch.setattr(Batcher, "submit", cancelled)
    served = {"m": SimpleNamespace(segmenter=None, tagged_columns=(), pieces_per_word=1)}
    sent = posted(create_app(served), b"data=x&input=horizontal")
    assert sent[0]["status"] == 503
    assert json.loads(sent[1]["body"]) == {"error": "the server is stopping: try again"}


def test_a_request_over_a_limit_is_refused_before_it_waits_for_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The checks ran on the worker thread: behind a long batch such a request waited, and got
    # a 503 (try again later) where its answer is a 413 (never).
    waited = []

    async def busy(self: Batcher, task: object, timeout_s: float) -> Answer:
        waited.append(task)
        return Answer(503, "no answer within the time")

    monkeypatch.setattr(Batcher, "submit", busy)
    served = {"m": SimpleNamespace(segmenter=None, tagged_columns=(), pieces_per_word=1)}
    app = create_app(served, limits=Limits(max_words=3, max_sentence_words=2))
    statuses = {}
    for body in (
        b"data=a+b%0Ac+d&input=horizontal",  # 4 words
        b"data=a+b+c&input=horizontal",  # a sentence of 3
        b"data=1%09a&input=conllu",  # malformed
        b"data=a+b%0Ac&input=horizontal",  # fits: waits
    ):
        sent = posted(app, body)
        statuses[body] = (sent[0]["status"], json.loads(sent[1]["body"])["error"])
    assert list(statuses.values())[:3] == [
        (413, "4 words: at most 3 per request"),
        (413, "a sentence of 3 words: at most 2 per sentence"),
        (400, statuses[b"data=1%09a&input=conllu"][1]),
    ]
    assert "data:1:" in statuses[b"data=1%09a&input=conllu"][1]
    assert [task.data for task in waited] == ["a b\nc"]  # the one that fits


def test_raw_text_over_the_word_limit_is_refused_before_it_is_segmented() -> None:
    segmented = []

    class Segmenter:
        def segment_stream(
            self, chunks: list[str], *, interactive: bool = False
        ) -> Iterator[rawtext.Document]:
            text = "".join(chunks)
            segmented.append(text)
            yield rawtext.Document(text, ())

    limits = Limits(max_words=10)
    fields = {"data": "w " * 11, "tokenizer": ""}
    answers = {}
    for pieces_per_word in (1, 2):  # 2: a model whose words may hold a space
        served = {"m": SimpleNamespace(segmenter=Segmenter(), pieces_per_word=pieces_per_word)}
        task = task_of(fields, served, "m", limits)
        [answers[pieces_per_word]] = Worker(served, limits, max_tokens=1000).run([task])
    assert answers[1].status == 413
    assert "11 whitespace-separated pieces" in answers[1].text
    assert answers[2] == Answer(200, "")
    assert segmented == [fields["data"]]  # by the second model only
    # Few pieces, many words: "(a)" 330,000 times took 27 s to segment into 990,000 words.
    served = {"m": SimpleNamespace(segmenter=Segmenter(), pieces_per_word=1)}
    found = []
    for text in ("(a)" * 54, "(a)" * 53):  # 162 and 159 characters: 160 for 10 words
        task = task_of({"data": text, "tokenizer": ""}, served, "m", limits)
        found += Worker(served, limits, max_tokens=1000).run([task])
    assert found[0].status == 413
    assert "raw text of 162 characters besides spaces: at most 160" in found[0].text
    assert found[1] == Answer(200, "")
    assert segmented == [fields["data"], "(a)" * 53]


def test_serve_py_refuses_an_unknown_model_in_one_line(model_installed: None) -> None:
    done = subprocess.run(
        [sys.executable, "serve.py", "models=/etc/passwd,en_ewt_small", f"port={free_port()}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "ROOTPARSE_DEBUG": ""},
    )
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert "/etc/passwd" in line


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        # A traceback and status 1 after the models had loaded.
        ("port=99999", "port=99999: give a port in 0..65535"),
        # uvicorn's own error, status 3, after the loading.
        ("port=abc", "port='abc': expected an integer"),
        # A traceback at startup (an int compared with a str), status 3.
        ("limits.max_words=abc", "limits.max_words='abc': expected an integer"),
        # A server that answered every request 400 or 503, blaming the client.
        ("max_tokens=0", "max_tokens=0: give 1 or more"),
        ("limits.timeout_s=-1", "limits.timeout_s=-1 must be above 0"),
        ("port=TAKEN", "cannot listen there ([Errno 98] Address already in use)"),
    ],
)
def test_serve_py_refuses_a_bad_setting_in_one_line_before_loading(
    setting: str, message: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        setting = setting.replace("TAKEN", str(taken.getsockname()[1]))
        done = subprocess.run(
            [sys.executable, "serve.py", f"models={MODEL}", setting],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "ROOTPARSE_DEBUG": ""},
            timeout=120,  # max_tokens=0 served for good: TimeoutExpired rather than a hang
        )
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    assert message in line


# --- runtime=onnx: the same answers without torch --------------------------------------------

ONNX_CASES = ("raw", "horizontal", "conllu")  # SAME_AS_PREDICT's cases this runtime answers


@pytest.fixture(scope="module")
def onnx_server(
    predicted: dict[str, subprocess.Popen], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, subprocess.Popen, Path]]:
    """serve.py runtime=onnx on the shipped model's export, torch blocked: its URL, process, log."""
    pytest.importorskip("onnxruntime", reason="runtime=onnx needs the export extra")
    pytest.importorskip("onnx", reason="the export needs the export extra (onnx)")
    from biaffine.export import compile_decoders, run

    exports = tmp_path_factory.mktemp("exports")
    run({"model": MODEL, "output": str(exports / MODEL)})
    compile_decoders()  # as python -m biaffine.export does
    log = exports.parent / "serve_onnx.log"
    onnx = ["runtime=onnx", f"onnx_dir={exports}", *LIMITS]
    with serving(log, *onnx, without_torch=True) as (base, process):
        yield base, process, log


@pytest.mark.parametrize("case", ONNX_CASES)
def test_the_onnx_runtime_answers_the_bytes_predict_py_writes(
    onnx_server: tuple[str, subprocess.Popen, Path],
    predicted: dict[str, subprocess.Popen],
    case: str,
) -> None:
    fields, _ = SAME_AS_PREDICT[case]
    status, answer = call(onnx_server[0], fields)
    assert status == 200, answer
    assert answer["result"] == finished(predicted[case])


def test_the_onnx_runtime_refuses_what_it_cannot_do_and_never_imports_torch_or_numba(
    onnx_server: tuple[str, subprocess.Popen, Path],
) -> None:
    base, process, log = onnx_server
    status, answer = call(base, path="/models", method="GET")
    assert answer["models"] == {MODEL: ["tokenizer", "tagger", "parser"]}
    status, answer = call(base, {"data": CONLLU, "parser": "", "kbest": "3"})
    assert status == 400
    assert answer["error"].startswith("kbest=3: runtime=onnx supports")
    # In this server's fields: format= and columns= are predict.py's options.
    assert answer["error"].endswith(
        "input=conllu or horizontal, tokenizer (an export with a segmenter) and tagger"
    )
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    imported = json.loads(log.read_text().strip().splitlines()[-1])
    assert imported == {"torch": [], "numba": []}  # decoders compiled ahead of time


@pytest.mark.parametrize(
    ("fields", "refusal"),
    [
        ({"kbest": "32"}, None),
        ({"kbest": "33"}, "kbest=33: give 1 to 32"),
        ({"kbest": "0"}, "kbest=0: give 1 to 32"),
        ({"search": "beam", "beam_size": "64"}, None),
        ({"search": "beam", "beam_size": "65"}, "beam_size=65: at most 64"),
    ],
)
def test_kbest_and_beam_size_are_bounded_by_the_limits(fields, refusal) -> None:
    # Nothing tested max_beam_size: an unbounded beam on a transition model was one mutation away.
    from biaffine.serving import jobs

    limits = Limits(max_kbest=32, max_beam_size=64)
    if refusal is None:
        decoder, _ = jobs._settings(fields, limits)
        assert decoder.beam_size == int(fields.get("beam_size", 1))
        return
    with pytest.raises(jobs.RequestError, match=f"^{refusal}$") as refused:
        jobs._settings(fields, limits)
    assert refused.value.status == 400
