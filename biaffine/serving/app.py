"""The HTTP face: UDPipe 2's REST API (``GET /models``, ``GET|POST /process``) and ``/health``.

The app receives loaded models (name -> :class:`biaffine.serving.served.Served`); a request
only ever names one of them, so nothing a client sends reaches a file path. Request bodies are
read into memory up to :attr:`Limits.max_body_bytes` and parsed there, on a thread rather than
the event loop (form-encoded ones by the standard library; multipart ones cut into parts here,
each part's headers bounded, then read by the standard library), so no temporary file is ever
written either. Errors are JSON ``{"error": "one line"}`` with a 4xx status (503 when
overloaded or out of time).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import email.errors
import email.parser
import email.policy
import logging
import re
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from biaffine.serving.batcher import Batcher
from biaffine.serving.jobs import FIELDS, Limits, RequestError, Worker, components, task_of
from biaffine.serving.served import Served

__all__ = ["create_app"]

log = logging.getLogger(__name__)

MAX_HEADER_BYTES = 2000
"""Longest Content-Type, and longest headers of one multipart part (400 above)."""
MAX_PARENTHESES = 16
"""Most ``(`` in those: the standard library's header parser recurses once per nested comment."""
# Where a part's headers end: a blank line, or the part's start if it has no headers.
_BLANK_LINE = re.compile(rb"\A\r?\n|\r?\n\r?\n")


def create_app(
    models: Mapping[str, Served],
    *,
    default_model: str | None = None,
    acknowledgements: Mapping[str, Sequence[str]] | None = None,
    limits: Limits = Limits(),  # noqa: B008  (frozen)
    batch_wait_s: float = 0.005,
    max_batch_requests: int = 64,
    max_tokens: int = 1000,
) -> Starlette:
    """The ASGI app serving ``models`` (run it with uvicorn: ``uvicorn.run(app, ...)``).

    Args:
        models: name -> loaded model (:mod:`biaffine.serving.served`: torch's or ONNX
            Runtime's), with a segmenter for raw text.
        default_model: the model of requests that name none (default: the first).
        acknowledgements: name -> what ``/process`` answers credit (the treebank, its licence).
        limits: what one request may ask.
        batch_wait_s: how long a request waits for others to share its batch.
        max_batch_requests: requests per batch.
        max_tokens: words per batch of the network (padding included; ``conf/serve.yaml``
            says why less than ``predict.py``'s 5000).

    Raises:
        ValueError: no models, or a default model that is not one of them.
    """
    if not models:
        raise ValueError("give at least one model")
    default = default_model if default_model is not None else next(iter(models))
    if default not in models:
        raise ValueError(f"default_model={default!r} is not one of {', '.join(models)}")
    worker = Worker(models, limits, max_tokens)
    batcher = Batcher(
        worker.run, wait_s=batch_wait_s, max_tasks=max_batch_requests, max_queued=limits.max_queued
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        batcher.start()
        await batcher.call(worker.warm_up)
        yield
        await batcher.stop()  # uvicorn has let the requests in flight finish by now

    async def list_models(request: Request) -> JSONResponse:
        named = {name: components(served) for name, served in models.items()}
        return JSONResponse({"models": named, "default_model": default})

    async def process(request: Request) -> JSONResponse:
        try:
            fields = await _fields(request, limits)
            task = task_of(fields, models, default, limits)
            await run_in_threadpool(worker.check, task)  # refused before it waits
        except RequestError as error:
            return _error(error.status, str(error))
        try:
            answer = await batcher.submit(task, limits.timeout_s)
        except asyncio.CancelledError:  # uvicorn's graceful_shutdown_s ran out: its answer was
            # a text/plain 500 and a traceback logged per request
            return _error(503, "the server is stopping: try again")
        if answer.status != 200:
            return _error(answer.status, answer.text)
        credits = list((acknowledgements or {}).get(task.model, []))
        return JSONResponse(
            {"model": task.model, "acknowledgements": credits, "result": answer.text}
        )

    async def health(request: Request) -> JSONResponse:
        state = {"queued": batcher.queued, "in_flight": batcher.in_flight}
        state |= {"batches": batcher.batches, "batched_requests": batcher.batched}
        return JSONResponse({"status": "ok", "models": list(models), **state})

    parse = Route("/process", process, methods=["GET", "POST"])
    # Starlette adds HEAD to a GET route: a HEAD ran the whole parse and dropped the answer.
    # Its checks of the input are the parse's own, so it is not allowed, as UDPipe 2 has none.
    parse.methods.discard("HEAD")
    routes = [
        Route("/models", list_models, methods=["GET", "POST"]),  # UDPipe 2 answers both
        parse,
        Route("/health", health, methods=["GET"]),
    ]
    handlers = {HTTPException: _http_error, Exception: _internal_error}
    # As UDPipe 2: a page on another site may call the API (its script reads the answers).
    cors = Middleware(CORSMiddleware, allow_origins=["*"], allow_methods=["GET", "POST"])
    app = Starlette(
        routes=routes, middleware=[cors], lifespan=lifespan, exception_handlers=handlers
    )
    # Starlette answers /process/ with a redirect to the Host header's site: a 404 instead.
    app.router.redirect_slashes = False
    app.state.batcher = batcher  # serve.py asks it whether a batch is left running at the end
    return app


MAX_FIELDS = 64
"""Fields of a query string or form-encoded body at most (a request has 16 to give)."""

MAX_ERROR = 500
"""Characters of an error's message at most: a client's 900 KB model name is not echoed."""


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    message = " ".join(message.split())
    if len(message) > MAX_ERROR:
        message = message[: MAX_ERROR - 1] + "\u2026"
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)  # the key it is registered under
    message = f"{request.method} {request.url.path}: {error.detail}"
    return _error(error.status_code, message, error.headers)  # a 405's Allow


async def _internal_error(request: Request, error: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path, exc_info=error)
    return _error(500, "internal error")


async def _fields(request: Request, limits: Limits) -> dict[str, str]:
    """The query's fields, then the body's (form-encoded or multipart), later ones winning.

    Raises:
        RequestError: 413 for a body over ``limits.max_body_bytes``, 408 for one that takes
            longer than ``limits.body_timeout_s`` to arrive, 415 for another content type,
            400 for a body or query that does not parse or is not UTF-8.
    """
    max_bytes = limits.max_body_bytes
    query = request.scope["query_string"]
    if len(query) > max_bytes:
        raise RequestError(414, f"a query of {len(query)} bytes: at most {max_bytes}; POST it")
    fields = _pairs(query, "query string")
    if request.method != "POST":
        return fields
    body = await _body(request, max_bytes, limits.body_timeout_s)
    # On a thread: a large body takes a while to parse, and other requests (GET /health
    # too) must not wait for it.
    fields.update(await run_in_threadpool(_form, request.headers.get("content-type", ""), body))
    return fields


def _form(content_type: str, body: bytes) -> dict[str, str]:
    """The fields of a body, by its media type (case-insensitive, as RFC 9110 8.3.1 says)."""
    media_type = content_type.partition(";")[0].strip().lower()
    if media_type == "multipart/form-data":
        return _multipart(content_type, body)
    if media_type == "application/x-www-form-urlencoded":
        return _pairs(body, "form-encoded body")
    if body:
        raise RequestError(415, f"content type {content_type or 'none'!r}: send form fields")
    return {}


async def _body(request: Request, max_bytes: int, timeout_s: float) -> bytes:
    """The request body, refused as soon as it passes ``max_bytes`` (before it is all read).

    Raises:
        RequestError: 413 over ``max_bytes``; 408 where it has not all arrived within
            ``timeout_s`` (a client that declared 100 bytes and sent 5 held its connection,
            and the server's memory for it, for good); 400 for a client gone before it has.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise RequestError(413, f"a body of {declared} bytes: at most {max_bytes}")
    try:
        return await asyncio.wait_for(_read_body(request, max_bytes), timeout_s)
    except TimeoutError:
        raise RequestError(408, f"the body did not arrive within {timeout_s:g} s") from None


async def _read_body(request: Request, max_bytes: int) -> bytes:
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, f"a body of more than {max_bytes} bytes")
            chunks.append(chunk)
    except ClientDisconnect:  # nobody to answer, and nothing wrong with the server
        raise RequestError(400, "the client went away before its body arrived") from None
    return b"".join(chunks)


def _pairs(raw: bytes, where: str) -> dict[str, str]:
    fields = raw.count(b"&") + 1
    if fields > MAX_FIELDS:  # 140,000 pairs took the event loop 1.3 s to parse
        raise RequestError(400, f"the {where} holds {fields} fields: at most {MAX_FIELDS}")
    try:
        text = raw.decode("utf-8")  # percent-encoded, or UTF-8 sent as is
        pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise RequestError(400, f"the {where} is not UTF-8") from None
    return dict(pairs)


def _multipart(content_type: str, body: bytes) -> dict[str, str]:
    """The fields of a multipart/form-data body (RFC 7578; a file is read as a text field too).

    The body is cut at its boundary here and the standard library reads each part's headers
    only, so a part that is itself multipart is refused rather than parsed, and no part costs
    more than its bytes: the parser takes a while over thousands of parts or parameters, and
    recurses once per nested comment ``(``.
    """
    fields = {}
    for raw in _parts(body, _boundary(content_type)):
        name, kind, payload = _read_part(raw)
        if not name:
            continue
        if kind.startswith("multipart/"):
            raise RequestError(400, f"the field {name!r} is {kind}: send it as one text")
        try:
            fields[name] = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise RequestError(400, f"the field {name!r} is not UTF-8") from None
    return fields


# What the standard library's header parser raises on a malformed header besides its own
# errors: an RFC 2231 parameter cut short ("x*1*") was an IndexError, answered with a 500.
_HEADER_ERRORS = (email.errors.MessageError, IndexError, KeyError, TypeError, ValueError)


def _read_part(raw: bytes) -> tuple[str | None, str, bytes]:
    """A part's field name (None for none), content type and decoded content.

    Its headers are checked (:func:`_check_header`, :func:`_check_header_lines`), then
    parsed; its content is undone from its Content-Transfer-Encoding, wholly or not at all.

    Raises:
        RequestError: 400 for headers the standard library cannot read, an unknown transfer
            encoding, or content that does not decode in it.
    """
    blank = _BLANK_LINE.search(raw)
    header, content = (raw[: blank.start()], raw[blank.end() :]) if blank else (raw, b"")
    _check_header(header, "a part's headers")
    _check_header_lines(header)
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    try:
        part = parser.parsebytes(raw, headersonly=True)
        name = part.get_param("name", header="content-disposition")
        encoding = str(part.get("content-transfer-encoding", "7bit")).strip().lower()
        content_type = part.get_content_type()
    except _HEADER_ERRORS:
        raise RequestError(400, "a part's headers do not parse") from None
    if encoding not in _TRANSFER_ENCODINGS:
        known = ", ".join(sorted(_TRANSFER_ENCODINGS))
        raise RequestError(400, f"a part's Content-Transfer-Encoding {encoding!r}; known: {known}")
    # The standard library decodes leniently: broken base64 gave no text, base64 padded in
    # its middle ("...Lgo=\r\nSXQ...") gave its first half or wrong bytes, and a broken
    # quoted-printable escape ("=ZZ") stayed in the text, each with a 200.
    decode = _DECODERS.get(encoding)
    payload = content if decode is None else decode(content)
    if payload is None:
        raise RequestError(400, f"a part's {encoding} content does not decode as {encoding}")
    return None if not name else str(name), content_type, payload


_HEADER_LINE = re.compile(rb"[!-9;-~]+:|[ \t]")
"""A header field's first line (a name of visible characters but ':', then ':'), or a folded
line's continuation (RFC 5322 2.2, 3.2.2)."""


def _check_header_lines(header: bytes) -> None:
    """Refuse a part's header block with a line that is no header field.

    The standard library starts the content at such a line, so "X-Broken header line" was
    parsed as the first sentence of the text.
    """
    lines = re.split(rb"\r?\n", header) if header else []
    if lines and lines[0][:1] in (b" ", b"\t"):
        raise RequestError(400, "a part's headers begin with a folded line")
    if any(not _HEADER_LINE.match(line) for line in lines):
        raise RequestError(400, "a part's headers hold a line that is no header field")


_TRANSFER_ENCODINGS = {"7bit", "8bit", "binary", "base64", "quoted-printable"}
"""The Content-Transfer-Encodings MIME defines, which a part may have (RFC 7578 deprecates them)."""
_BASE64 = re.compile(rb"[A-Za-z0-9+/]*(={1,2})?")
_SOFT_BREAK = re.compile(rb"=[ \t]*(?:\r?\n|\Z)")
_BAD_ESCAPE = re.compile(rb"=(?![0-9A-Fa-f]{2})")


def _base64(content: bytes) -> bytes | None:
    """base64 ``content`` decoded, or None where some of it would be lost (RFC 2045 6.8).

    Whitespace (its lines) is skipped, and missing padding restored; any other character
    outside the alphabet, padding before the end, or a length no padding mends (5 letters)
    is refused.
    """
    compact = re.sub(rb"\s", b"", content)
    found = _BASE64.fullmatch(compact)
    if found is None:
        return None
    letters = len(compact) - len(found.group(1) or b"")
    if letters % 4 == 1 or (found.group(1) and len(compact) % 4):
        return None
    return base64.b64decode(compact[:letters] + b"=" * (-letters % 4))


def _quoted_printable(content: bytes) -> bytes | None:
    """Quoted-printable ``content`` decoded, or None where an ``=`` starts no escape or break.

    RFC 2045 6.7: ``=`` is followed by two hexadecimal digits or ends the line (a soft break).
    """
    joined = _SOFT_BREAK.sub(b"", content)  # with the whitespace transport may add before it
    return None if _BAD_ESCAPE.search(joined) else binascii.a2b_qp(joined)


_DECODERS = {"base64": _base64, "quoted-printable": _quoted_printable}


def _boundary(content_type: str) -> bytes:
    """The boundary that a multipart/form-data Content-Type names."""
    _check_header(content_type.encode("latin-1"), "the Content-Type header")  # Starlette's decoding
    try:
        header = email.policy.HTTP.header_factory("content-type", content_type)
        boundary = str(header.params.get("boundary", ""))
    except _HEADER_ERRORS:
        raise RequestError(400, "the Content-Type header does not parse") from None
    if not boundary or not boundary.isascii():
        raise RequestError(400, "multipart/form-data needs a boundary= of ASCII characters")
    return boundary.encode("ascii")


def _parts(body: bytes, boundary: bytes) -> list[bytes]:
    """The parts between the first delimiter line and the closing one (RFC 2046 5.1.1).

    Raises:
        RequestError: 400 for more parts than there are fields (:data:`FIELDS`), or no
            closing delimiter.
    """
    # The line break before a delimiter belongs to it, not to the part that it ends.
    delimiter = re.compile(rb"(?:\A|\r?\n)--" + re.escape(boundary) + rb"(--)?[ \t]*(?:\r?\n|\Z)")
    parts: list[bytes] = []
    start = None
    for found in delimiter.finditer(body):
        if start is not None:
            parts.append(body[start : found.start()])
        if found.group(1):
            return parts
        if len(parts) == len(FIELDS):
            raise RequestError(
                400,
                f"a multipart body of more than {len(FIELDS)} parts: "
                f"this server reads {len(FIELDS)} fields",
            )
        start = found.end()
    raise RequestError(400, "the multipart/form-data body does not parse (no closing boundary)")


def _check_header(header: bytes, what: str) -> None:
    """Refuse a header that the standard library would take long or recurse deep to read."""
    if len(header) > MAX_HEADER_BYTES:
        raise RequestError(400, f"{what} of {len(header)} bytes: at most {MAX_HEADER_BYTES}")
    opened = header.count(b"(")
    if opened > MAX_PARENTHESES:
        raise RequestError(400, f"{opened} comments '(' in {what}: at most {MAX_PARENTHESES}")
