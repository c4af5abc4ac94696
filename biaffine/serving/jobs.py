"""What one request asks (validated, never a path), and parsing many requests in one batch.

Nothing here knows HTTP: :func:`task_of` turns the fields of a UDPipe-style request into a
:class:`Task` or a :class:`RequestError`, and :class:`Worker` answers a list of tasks in one
call on one thread, as ``predict.py`` answers a file (:func:`biaffine.pipeline.sentences_in`,
the model's parse: :mod:`biaffine.serving.served`, :func:`biaffine.data.conllu.write_conllu`),
so a request alone gets the bytes ``predict.py`` writes for the same input.
"""

from __future__ import annotations

import functools
import io
import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from biaffine.data.conllu import Sentence, write_conllu
from biaffine.inference.request import Abandoned
from biaffine.inference.settings import DecoderSettings
from biaffine.pipeline import sentences_in
from biaffine.predict_options import PredictOptions, check_options
from biaffine.serving.served import Served

__all__ = [
    "FIELDS",
    "Answer",
    "Limits",
    "RequestError",
    "Task",
    "Worker",
    "components",
    "task_of",
]

UDPIPE_FIELDS = ("data", "model", "tokenizer", "tagger", "parser", "input", "output")
EXTRA_FIELDS = (
    "probabilities",
    "kbest",
    "keep_given_heads",
    "decoder",
    "root_constraint",
    "joint_labels",
    "search",
    "beam_size",
    "graph_weight",
)
FIELDS = UDPIPE_FIELDS + EXTRA_FIELDS
"""Every field ``/process`` reads: UDPipe 2's, then the toolkit's own (any other is refused)."""

# UDPipe's input names -> predict.py's formats; UDPipe's "vertical" and "generic_tokenizer"
# have no reader here.
_INPUTS = {"conllu": "conllu", "horizontal": "text"}
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
# CRLF (HTML forms, UDPipe 2's client) and a lone CR are line ends: read as LF, as UDPipe does.
_LINE_END = re.compile(r"\r\n?")
# predict.py's words in the messages of the readers and checks it shares with the server ->
# the fields of a request that mean the same.
_AS_FIELDS = (
    ("algorithm=", "decoder="),
    ("decoder=mst, mst_multiroot or eisner", "decoder=mst or eisner"),  # root_constraint here
    ("pass format=text", "send input=horizontal"),
    ("pass format=conllu", "send input=conllu"),
    ("format=text lacks", "input=horizontal lacks"),
    ("format=raw lacks", "raw text (tokenizer) lacks"),
    (  # onnxrun.SUPPORTED's end: predict.py's options, not this server's fields
        "format=conllu, text or raw (an export with a segmenter), columns= and overwrite_columns=",
        "input=conllu or horizontal, tokenizer (an export with a segmenter) and tagger",
    ),
)


MAX_CHARACTERS_PER_WORD = 16
"""Characters besides whitespace that raw text may have per word a request may hold: the words
of the UD test sets under ``$UD_ROOT`` average 3.4 to 6.3 (EWT 4.1, Tamil TTB 6.3), so a text
at the limit of words is far under it, and segmenting stays within a few times its work."""


class RequestError(ValueError):
    """A request this server refuses: the HTTP status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        """Keep the status beside the message."""
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask.

    Attributes:
        max_body_bytes: request body (413 above); the default stays under the 1 MiB at which
            multipart parsers spill to temporary files (this server never writes one).
        body_timeout_s: seconds a request's body may take to arrive (408 after).
        max_words: words of one request, all sentences together (413 above); raw text is
            refused before it is segmented when it has more pieces between whitespace than
            that many words hold (:meth:`Worker._check_pieces`).
        max_sentence_words: words of one sentence (413 above; UDPipe 2 refuses above 1000).
        max_kbest: largest ``kbest``.
        max_kbest_cells: ``kbest=K`` with ``decoder=eisner`` keeps K items per span of a
            sentence of n words: refused where ``(n + 1) ** 2 * K`` is above this (about 128
            bytes each: 2 ** 21 cells, 256 MiB; kbest=32 on 1000 words took 4.1 GB and held
            the server for minutes).
        max_cubic_work: k-best and ``decoder=eisner`` take time cubic in a sentence's
            length: refused where their work, summed over the request's sentences of n words,
            is above this: ``K * (n + 1) ** 3`` for Eisner's k-best (K = 1 for its best tree
            and its probabilities), ``(K - 1) * (n + 1) ** 3`` for Lawler's over ``mst``
            (kbest=1 is the best tree). One sentence of 1,000 words held the worker for 42 s
            with kbest=2 decoder=eisner, 33 s with Eisner's probabilities, 12 s with its best
            tree (20 such sentences are within ``max_words``); 512 words of "word" for 49 s
            with kbest=32. 2 ** 27 allows kbest=2 decoder=eisner on 405 words (6.3 s), Eisner's
            probabilities or best tree on 511 (7.5 s), kbest=32 on 161 on a 2-core AMD EPYC.
        max_beam_size: largest ``beam_size``.
        timeout_s: seconds a request may wait and be parsed (503 after).
        max_queued: requests waiting for the parser (503 above: the server is overloaded).
    """

    max_body_bytes: int = 1_000_000
    body_timeout_s: float = 30.0
    max_words: int = 20_000
    max_sentence_words: int = 1000
    max_kbest: int = 32
    max_kbest_cells: int = 2**21
    max_cubic_work: int = 2**27
    max_beam_size: int = 64
    timeout_s: float = 60.0
    max_queued: int = 256


@dataclass(frozen=True, slots=True)
class Task:
    """One request, validated: its text and how to read and parse it.

    Attributes:
        model: a name of the server's models.
        data: the input text, its line ends LF.
        input_format: ``conllu``, ``text`` (UDPipe's ``horizontal``) or ``raw`` (tokenizer).
        parse: run the parser (UDPipe's ``tagger`` or ``parser``); False: only read (and
            tokenize) the input.
        decoder: how trees are found.
        options: what to write besides the tree, final (columns: UDPipe's ``tagger``; unlike
            ``predict.py format=raw``, raw text without ``tagger`` gets no columns).
    """

    model: str
    data: str
    input_format: str
    parse: bool
    decoder: DecoderSettings
    options: PredictOptions

    def setup(self) -> tuple[str, bool, DecoderSettings, PredictOptions]:
        """What tasks share to be parsed in one call."""
        return self.model, self.parse, self.decoder, self.options


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of one task: the CoNLL-U text (status 200), or an error and its status."""

    status: int
    text: str


ABANDONED = Answer(503, "the request was given up: its client had its 503 already")
"""The answer to a task no client waits for any more, which no one reads."""


def components(served: Served) -> list[str]:
    """What a model does, as UDPipe's ``GET /models`` names it."""
    tokenizer = ["tokenizer"] if served.segmenter is not None else []
    tagger = ["tagger"] if served.tagged_columns else []
    return [*tokenizer, *tagger, "parser"]


def task_of(
    fields: Mapping[str, str], models: Mapping[str, Served], default_model: str, limits: Limits
) -> Task:
    """The task a request's fields ask for, checked against the model it names.

    UDPipe 2's semantics: ``tokenizer``, ``tagger`` and ``parser`` turn a step on by being
    present (``tagger`` and ``parser`` whatever their value; ``tokenizer`` refuses UDPipe's
    options, which it does not read); ``tokenizer`` reads ``data`` as raw text (``input`` is
    then ignored); ``input`` defaults to ``conllu``; ``output`` is ``conllu``; CRLF and CR in
    ``data`` are line ends, read as LF.

    Raises:
        RequestError: 400 for a missing ``data``, an unknown field, model, format or value,
            or options that the model or decoder cannot serve (one line each).
    """
    unknown = sorted(set(fields) - set(FIELDS))
    if unknown:
        raise RequestError(400, f"unknown field {unknown[0]!r}; known: {', '.join(FIELDS)}")
    if "data" not in fields:
        raise RequestError(400, "the field 'data' is required")
    name = fields.get("model", default_model)
    served = models.get(name)
    if served is None:
        raise RequestError(400, f"unknown model {name!r}; available: {', '.join(models)}")
    if fields.get("output", "conllu") != "conllu":
        raise RequestError(400, f"output={fields['output']!r}: only conllu is written")
    input_format = _input_format(fields, name, served)
    decoder, options = _settings(fields, limits)
    parse = "tagger" in fields or "parser" in fields
    try:
        check_options(options, decoder, input_format)
        if parse:
            served.check(decoder, options)
    except ValueError as error:
        raise RequestError(400, _as_fields(error)) from None
    asked = [field for field in EXTRA_FIELDS if field in fields]  # each about the trees
    if asked and not parse:
        raise RequestError(400, f"{asked[0]}= is about trees: give parser= (or tagger=) too")
    data = _LINE_END.sub("\n", fields["data"])
    return Task(name, data, input_format, parse, decoder, options)


def _input_format(fields: Mapping[str, str], name: str, served: Served) -> str:
    if "tokenizer" in fields:
        if fields["tokenizer"].strip():  # presegmented gave other sentences, silently
            raise RequestError(
                400,
                f"tokenizer={fields['tokenizer']!r}: this tokenizer takes no options "
                "(UDPipe's presegmented, ranges, normalized_spaces); send tokenizer= empty, or "
                "pre-tokenized sentences as input=horizontal",
            )
        if served.segmenter is None:
            raise RequestError(400, f"model {name!r} has no tokenizer: give conllu or horizontal")
        return "raw"
    given = fields.get("input", "conllu")
    if given not in _INPUTS:
        raise RequestError(400, f"input={given!r}; expected one of {', '.join(_INPUTS)}")
    return _INPUTS[given]


def _settings(fields: Mapping[str, str], limits: Limits) -> tuple[DecoderSettings, PredictOptions]:
    """The decoder settings and output options of the toolkit's own fields."""
    kbest = _number(fields, "kbest", int, None)
    if kbest is not None and not 1 <= kbest <= limits.max_kbest:
        raise RequestError(400, f"kbest={kbest}: give 1 to {limits.max_kbest}")
    beam_size = _number(fields, "beam_size", int, 1)
    if beam_size > limits.max_beam_size:
        raise RequestError(400, f"beam_size={beam_size}: at most {limits.max_beam_size}")
    try:
        decoder = DecoderSettings(
            fields.get("decoder", "mst"),
            _boolean(fields, "root_constraint", True),
            fields.get("search", "greedy"),
            beam_size,
            _number(fields, "graph_weight", float, 0.0),
            _boolean(fields, "joint_labels", True),
        )
    except ValueError as error:
        raise RequestError(400, _as_fields(error)) from None
    options = PredictOptions(
        probabilities=_boolean(fields, "probabilities", False),
        kbest=kbest,
        keep_given_heads=_boolean(fields, "keep_given_heads", False),
        columns=("all",) if "tagger" in fields else (),
    )
    return decoder, options


def _as_fields(error: ValueError) -> str:
    """The message of ``error`` with predict.py's options named as this server's fields."""
    message = str(error)
    for option, field in _AS_FIELDS:
        message = message.replace(option, field)
    return message


def _boolean(fields: Mapping[str, str], name: str, default: bool) -> bool:
    if name not in fields:
        return default
    value = _BOOLEANS.get(fields[name].strip().lower())
    if value is None:
        raise RequestError(400, f"{name}={fields[name]!r} must be true or false (yes/no, 1/0)")
    return value


def _number(fields: Mapping[str, str], name: str, kind: type, default: object) -> object:
    """Field ``name`` as an int or a float, written in ASCII digits; ``default`` without it.

    ``int()`` reads ``"\u0662"``, ``"1_0"``, ``" 2"`` and ``"+1"``; none is a number here.
    """
    if name not in fields:
        return default
    value = fields[name]
    if not (_INTEGER if kind is int else _DECIMAL).fullmatch(value):
        what = "an integer" if kind is int else "a number"
        raise RequestError(400, f"{name}={value!r} must be {what} (ASCII digits)")
    try:
        return kind(value)
    except ValueError:  # more digits than Python converts (4,300): a 500 before
        raise RequestError(400, f"{name}= has {len(value)} digits: far over its limit") from None


_INTEGER = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


class Worker:
    """Answers tasks with the server's models, many in one call (run on one thread)."""

    def __init__(self, models: Mapping[str, Served], limits: Limits, max_tokens: int) -> None:
        """Keep the models.

        Args:
            models: name -> loaded model (torch's or ONNX Runtime's).
            limits: words per request and per sentence.
            max_tokens: words per batch of the network (``predict.py max_tokens=``).
        """
        self.models = models
        self.limits = limits
        self.max_tokens = max_tokens

    def warm_up(self) -> None:
        """Parse two words with every model, so no request pays for loading kernels."""
        decoder, options = DecoderSettings(), PredictOptions()
        for name, served in self.models.items():
            formats = ["text", "raw"] if served.segmenter is not None else ["text"]
            self.run([Task(name, "Warm up.\n", fmt, True, decoder, options) for fmt in formats])

    def run(
        self, tasks: Sequence[Task], wanted: Callable[[int], bool] | None = None
    ) -> list[Answer]:
        """Read every task, parse those that share a setup in one call, write each.

        A task whose input is malformed or too large fails alone; a call that fails for one
        of its tasks (given heads that admit no tree) is retried task by task, so only that
        task fails. ``wanted(i)`` (None: always) says whether task i still has a client
        waiting: a task no one waits for is not read, and a call stops between its network's
        batches once none of its tasks is wanted (:data:`ABANDONED` answers them).
        """
        wanted = wanted or (lambda i: True)
        answers: list[Answer | None] = [None] * len(tasks)
        read: dict[int, list[Sentence]] = {}
        for i, task in enumerate(tasks):
            if not wanted(i):  # segmenting raw text takes as long as parsing it
                answers[i] = ABANDONED
                continue
            try:
                read[i] = self._read(task)
            except RequestError as error:
                answers[i] = Answer(error.status, str(error))
            except ValueError as error:
                answers[i] = Answer(400, _as_fields(error))
        setups: dict[tuple, list[int]] = {}
        for i in read:
            options = tasks[i].options
            alone = (i,) if _parsed_alone(options) else ()
            setups.setdefault((*tasks[i].setup(), *alone), []).append(i)
        for members in setups.values():
            group = [tasks[i] for i in members]
            abandoned = functools.partial(_none_wanted, wanted, members)
            try:
                self._parse(group, [read[i] for i in members], members, answers, abandoned)
            except Abandoned:
                for i in members:
                    answers[i] = answers[i] or ABANDONED
        missing = [i for i, answer in enumerate(answers) if answer is None]
        if missing:
            raise RuntimeError(f"tasks {missing} got no answer")  # a bug here, not the client's
        return answers  # type: ignore[return-value]  (none is None, checked above)

    def check(self, task: Task) -> None:
        """Refuse ``task`` where its input is over a limit or malformed; on any thread.

        Run before a task waits for the worker thread, so that a request over a limit gets its
        413, or malformed input its 400, at once rather than a 503 behind a long batch. Raw
        text is only counted in pieces here (segmenting it needs the model's threads); other
        input is read, checked and dropped, and read again on the worker thread: the sentences
        of a request take about four times its text, too much to keep for every waiting one.

        Raises:
            RequestError: 413 over a limit, 400 for input that cannot be read.
        """
        if task.input_format == "raw":
            if not _blank(task.data):
                self._check_pieces(task.data, self.models[task.model].pieces_per_word)
            return
        try:
            self._read(task)
        except RequestError:
            raise
        except ValueError as error:
            raise RequestError(400, _as_fields(error)) from None

    def _read(self, task: Task) -> list[Sentence]:
        if _blank(task.data):
            return []  # UDPipe 2 answers an empty text with an empty result, in every format
        served = self.models[task.model]
        if task.input_format == "raw":
            self._check_pieces(task.data, served.pieces_per_word)
        sentences = sentences_in(task.data, task.input_format, served.segmenter, name="data")
        longest = max((len(s) for s in sentences), default=0)
        if longest > self.limits.max_sentence_words:
            limit = self.limits.max_sentence_words
            raise RequestError(413, f"a sentence of {longest} words: at most {limit} per sentence")
        words = sum(len(s) for s in sentences)
        if words > self.limits.max_words:
            raise RequestError(413, f"{words} words: at most {self.limits.max_words} per request")
        self._check_kbest_chart(task, longest)
        self._check_cubic_work(task, sentences)
        return sentences

    def _check_kbest_chart(self, task: Task, longest: int) -> None:
        """Refuse k-best Eisner charts over ``max_kbest_cells`` (:class:`Limits`)."""
        k = task.options.kbest
        if k is None or task.decoder.algorithm != "eisner":
            return
        cells = (longest + 1) ** 2 * k
        if cells > self.limits.max_kbest_cells:
            most = self.limits.max_kbest_cells // (longest + 1) ** 2
            fits = f"kbest={most} or fewer" if most else "decoder=mst"
            raise RequestError(
                413,
                f"kbest={k} with decoder=eisner on a sentence of {longest} words: a chart of "
                f"{cells} cells, at most {self.limits.max_kbest_cells}; give {fits}",
            )

    def _check_cubic_work(self, task: Task, sentences: list[Sentence]) -> None:
        """Refuse k-best, or any Eisner, over ``max_cubic_work`` (:class:`Limits`)."""
        k, eisner = task.options.kbest, task.decoder.algorithm == "eisner"
        if k is None and not eisner:  # Eisner's best tree is cubic too: 12 s for 1000 words
            return
        cubes = sum((len(sentence) + 1) ** 3 for sentence in sentences)
        work = (k or 1) * cubes if eisner else (k - 1) * cubes
        if work > self.limits.max_cubic_work:
            asked = f"kbest={k} with " if k is not None else ""
            asked += "probabilities with " if k is None and task.options.probabilities else ""
            asked += f"decoder={task.decoder.algorithm}"
            fewer = f"fewer or shorter sentences{', or a smaller kbest' if k and k > 1 else ''}"
            raise RequestError(
                413,
                f"{asked} on {len(sentences)} sentences: {work} units of work, at most "
                f"{self.limits.max_cubic_work} (docs/serving.md); send {fewer}",
            )

    def _check_pieces(self, text: str, pieces_per_word: int) -> None:
        """Refuse, before segmenting, raw text that ``max_words`` words cannot hold.

        Segmenting a body of 1 MB held the worker, and every request behind it, for 25 s on
        the shared 2-core machine before its words could be counted. So the pieces between
        whitespace are counted instead, a word taken to hold at most ``pieces_per_word`` of
        them (:attr:`biaffine.serving.served.Served.pieces_per_word`), and the characters
        besides whitespace, at most :data:`MAX_CHARACTERS_PER_WORD` a word.
        """
        pieces = text.split()
        most = self.limits.max_words * pieces_per_word
        words = self.limits.max_words
        if len(pieces) > most:
            why = f"at most {most}, as {words} words per request hold"
            raise RequestError(413, f"raw text of {len(pieces)} whitespace-separated pieces: {why}")
        # A piece may hold many words ("(a)(a)(a)...": 990,000 words in 330,000 bytes took 27 s).
        characters = sum(map(len, pieces))
        most = words * MAX_CHARACTERS_PER_WORD
        if characters > most:
            why = f"at most {most}, as {words} words per request hold"
            raise RequestError(413, f"raw text of {characters} characters besides spaces: {why}")

    def _parse(
        self,
        tasks: list[Task],
        inputs: list[list[Sentence]],
        where: list[int],
        answers: list[Answer | None],
        abandoned: Callable[[], bool],
    ) -> None:
        """Fill ``answers[where[j]]`` for ``tasks[j]`` (one setup) read as ``inputs[j]``.

        Raises:
            Abandoned: ``abandoned()`` said so between two of the network's batches.
        """
        sentences = list(itertools.chain.from_iterable(inputs))
        try:  # Abandoned is no ValueError: it leaves for run() to answer the whole call
            written = self._written(tasks[0], sentences, abandoned)
        except ValueError as error:
            if len(tasks) == 1:
                answers[where[0]] = Answer(400, _as_fields(error))
                return
            for j in range(len(tasks)):
                one = (tasks[j : j + 1], inputs[j : j + 1], where[j : j + 1])
                self._parse(*one, answers, abandoned)
            return
        ends = itertools.accumulate(len(sentences) for sentences in inputs)
        for i, end, sentences in zip(where, ends, inputs, strict=True):
            answers[i] = Answer(200, _conllu(written[end - len(sentences) : end]))

    def _written(
        self, task: Task, sentences: list[Sentence], abandoned: Callable[[], bool]
    ) -> list[list[Sentence]]:
        """Per input sentence, the sentences to write (several with k-best)."""
        if not task.parse or not sentences:
            return [[sentence] for sentence in sentences]
        served = self.models[task.model]
        max_tokens = None if _parsed_alone(task.options) else self.max_tokens
        return served.parse(sentences, task.decoder, task.options, max_tokens, abandoned)


def _none_wanted(wanted: Callable[[int], bool], tasks: Sequence[int]) -> bool:
    """Whether no task of ``tasks`` is ``wanted`` any longer."""
    return not any(wanted(i) for i in tasks)


def _blank(data: str) -> bool:
    """Whether ``data`` holds nothing but whitespace, after a byte order mark.

    A text of only a BOM was "data:0: no sentences found" as CoNLL-U or tokenized text, and an
    empty result as raw text.
    """
    return not data.removeprefix("\ufeff").strip()


def _parsed_alone(options: PredictOptions) -> bool:
    """Whether a request is parsed in batches of its own, those ``predict.py`` would form.

    Printed probabilities and k-best scores carry the float sums of the network batches their
    sentences are computed in: another request's sentences beside them changed a last digit
    (HeadProb=0.8638 alone, 0.8639 in a shared batch), and so did the server's batches of
    ``max_tokens`` words against predict.py's of 5,000 (HeadProb=0.6168 against 0.6169).
    """
    return options.probabilities or options.kbest is not None


def _conllu(written: list[list[Sentence]]) -> str:
    out = io.StringIO(newline="\n")
    write_conllu(out, itertools.chain.from_iterable(written))
    return out.getvalue()
