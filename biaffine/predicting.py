"""Parsing files with a trained checkpoint, streamed in chunks; optional scoring against gold.

Typed functions only; ``predict.py`` turns its Hydra config into these arguments.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

import tiered
from biaffine import checkpoint, distributed
from biaffine.api import Parser
from biaffine.cli import freeze_loaded, stop_if_terminated
from biaffine.data.conllu import Sentence
from biaffine.data.vocab import Vocabs
from biaffine.inference import DecoderSettings, family_of, warm_up
from biaffine.inference import predict as predict_trees
from biaffine.metrics import COLUMNS_OF, AttachmentScores, Conll18Scores, evaluate_corpus
from biaffine.pipeline import INPUT_FORMATS, read_raw
from biaffine.predict_options import (
    STDIO,
    ChunkParser,
    InputSentences,
    PredictOptions,
    check_arguments,
    next_chunk,
    read_sentences,
    request_of,
    write_sentences,
)
from biaffine.results import with_result
from biaffine.runtime import select_device, set_threads
from biaffine.segmenting import Segmenter

__all__ = [
    "FORMATS",
    "MAX_TOKENS",
    "PredictOptions",
    "PredictResult",
    "check_model",
    "chunk_parser",
    "predict",
    "quantized",
]

log = logging.getLogger(__name__)

FORMATS = INPUT_FORMATS  # those pipeline.sentences_in reads in memory, for the server
MAX_TOKENS = 5000  # words per batch by default (torch: larger batches parse faster on a CPU)


@dataclass(slots=True)
class PredictResult:
    """What :func:`predict` did: counts, time, and the scores when gold trees were available."""

    n_sentences: int = 0
    n_words: int = 0
    seconds: float = 0.0
    scores: AttachmentScores | None = None
    conll18: Conll18Scores | None = None
    _gold_missing: bool = field(default=False, repr=False)

    @property
    def sentences_per_second(self) -> float:
        """Parsing speed over the whole run (reading and writing included)."""
        return self.n_sentences / self.seconds if self.seconds > 0 else 0.0


def predict(
    checkpoint_path: str | os.PathLike[str],
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str] = STDIO,
    *,
    input_format: str = "conllu",
    decoder: DecoderSettings | None = None,
    evaluate: bool = False,
    exclude_punct: bool = False,
    max_tokens: int = MAX_TOKENS,
    chunk_sentences: int = 10000,
    device: str = "cpu",
    threads: int | None = None,
    int8: bool = False,
    bf16: bool = False,
    options: PredictOptions | None = None,
    segmenter: str | os.PathLike[str] | None = None,
    partner: str | os.PathLike[str] | None = None,
    freeze: bool = False,
    protected: Sequence[str | os.PathLike[str]] = (),
) -> PredictResult:
    """Parse ``source`` with the model in ``checkpoint_path`` and write CoNLL-U to ``dest``.

    Only HEAD and DEPREL of word lines change; every other byte of a CoNLL-U input comes back
    but a leading UTF-8 byte order mark (``options`` may add MISC items and comment lines, and
    write a sentence several times).
    Under ``torchrun`` (an open process group, see :mod:`biaffine.distributed`), every rank
    reads the input, rank ``r`` parses chunks ``k * size + r`` (ranges of ``chunk_sentences``
    sentences), and rank 0 writes them all in input order: the same bytes as one process.
    A file ``dest`` is written atomically (:func:`biaffine.files.atomic_open`): it keeps its old
    content until the whole input is parsed, so a failed run leaves it untouched and two runs
    writing the same path never mix; its mode follows the umask. Standard output and special
    files (pipes, devices, ``/dev/stdout``: :func:`biaffine.files.open_output`) stream, in place.

    Args:
        checkpoint_path: a ``best.pt`` or ``last.pt`` written by training.
        source: input path, or ``-`` for stdin.
        dest: output path, or ``-`` for stdout.
        input_format: ``conllu``, ``text`` (one pre-tokenized sentence per line), or ``raw``
            (plain text, paragraphs separated by blank lines: ``segmenter`` finds the tokens,
            multi-word tokens and sentences, and every column the model tags is predicted
            unless ``options`` names the columns).
        decoder: tree decoder (default: MST with one word on ROOT).
        evaluate: score the output against the input's gold trees (logged; skipped with a
            warning when the input has none).
        exclude_punct: with ``evaluate``, leave PUNCT out of UAS/LAS.
        max_tokens: words per batch.
        chunk_sentences: sentences read, parsed and written at a time (bounds memory).
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
        threads: torch CPU threads (None = torch's default).
        int8: run the LSTMs and linear layers with int8 weights (dynamic quantization, CPU
            only): on UD English EWT test 1.5x faster on 2 cores, UAS/LAS within 0.01.
        bf16: run the network in bfloat16 (``torch.autocast``): on CPUs with native
            bfloat16 (AVX512-BF16, AMX) and GPUs; not with ``int8``.
        options: probabilities, k-best trees or given heads kept
            (:class:`biaffine.predict_options.PredictOptions`; default: one tree per sentence).
            With k-best, ``evaluate`` scores the best tree of each sentence.
        segmenter: with ``input_format="raw"``, a ``best.pt`` of ``train_segmenter.py``.
        partner: transition parsers: a graph parser's checkpoint whose arc scores the search
            adds with ``decoder.graph_weight`` (:meth:`biaffine.api.Parser.pair`).
        freeze: once the models are loaded, put them out of the garbage collector's reach
            (:func:`biaffine.cli.freeze_loaded`): for a process that ends with the parse.
        protected: more files ``dest`` must not be, as the models' (an installed model's
            files, whatever the parse reads of them: ``output=.../card.json`` wrote over it).

    Returns:
        Counts, time, and the scores if ``evaluate`` found gold trees.

    Raises:
        ValueError: unknown format, ``dest`` is the same file as ``source`` (a hard or
            symbolic link included), ``int8`` on a GPU, ``int8`` with ``bf16``, ``bf16`` on a
            CPU without native bfloat16, stdin on several processes, options
            that do not combine or that the decoder or parser family cannot serve, or given
            heads that admit no tree (``FILE:LINE`` of the sentence).
        FileNotFoundError: the folder of ``dest`` does not exist.
        biaffine.checkpoint.CheckpointError: unreadable checkpoint.
        biaffine.data.conllu.ConlluError: malformed input.
    """
    here = distributed.world()
    decoder = decoder if decoder is not None else DecoderSettings()
    options = options if options is not None else PredictOptions()
    models = [path for path in (checkpoint_path, segmenter, partner) if path is not None]
    models += protected
    check_arguments(source, dest, input_format, chunk_sentences, decoder, options, FORMATS, models)
    if here.size > 1 and str(source) == STDIO:
        raise ValueError(f"input '-' (stdin) with {here.size} processes: give the input file")
    set_threads(threads)
    segments = _load_segmenter(input_format, segmenter)
    parser = _load_model(checkpoint_path, device, int8=int8, bf16=bf16)
    if partner is not None:
        parser.pair(partner)
    if segments is not None and options.columns is None:  # raw text: every column the model tags
        # (none for a tree-only model, which "all" asked of explicitly refuses)
        options = dataclasses.replace(options, columns=tuple(parser.model.tagged_columns))
    check_model(parser.model, parser.vocabs, decoder, options)
    encoder = getattr(parser.model, "encoder", None)  # none on an ensemble: members have theirs
    if input_format == "text" and getattr(encoder, "use_tags", False):
        log.warning("the model embeds UPOS tags, which plain text input lacks: expect lower scores")
    how = {"max_tokens": max_tokens, "bf16": parser.bf16}
    parse_chunk = chunk_parser(parser.model, parser.vocabs, decoder, options, **how)
    # Part of start-up, like loading the model, where machine code is loaded at once (the
    # foreground mode): the timed rate is what a long input gets. Otherwise small calls run
    # interpreted first, and a one-sentence command never loads it (tiered).
    warm_up(parser.model, {"": decoder})
    if options != PredictOptions() and not tiered.interpreting():
        parse_chunk([Sentence.from_forms(["warm", "up"])])  # the option's own kernels too
    if freeze:
        freeze_loaded()
    result, started = PredictResult(), time.perf_counter()
    sentences = _read(source, input_format, segments, early=options.kbest is None)
    scoring = {"evaluate": evaluate, "exclude_punct": exclude_punct}
    parsed = _parse_chunks(parse_chunk, sentences, chunk_sentences, result, **scoring)
    if not here.is_main:
        collections.deque(parsed, maxlen=0)  # this rank's share goes to rank 0, which writes
    else:
        write_sentences(dest, parsed, sentences.trailer)
    result.seconds = time.perf_counter() - started
    result = distributed.broadcast(result, here)
    if here.is_main:
        _log_result(result, evaluate, exclude_punct, _scored_columns(options, parser.model))
    return result


def _scored_columns(options: PredictOptions, model: nn.Module) -> tuple[str, ...]:
    """The tagged columns whose every value the output predicts (asked for, and overwritten).

    Elsewhere a cell the input fills keeps its value: scored against the input's gold
    columns, UPOS and Lemmas came out 100.00.
    """
    if not options.overwrite_columns:
        return ()
    return request_of(options, []).for_model(model.tagged_columns).columns


def _load_model(
    path: str | os.PathLike[str], device: str, *, int8: bool = False, bf16: bool = False
) -> Parser:
    if int8 and bf16:
        raise ValueError("int8=true and bf16=true do not combine: choose one")
    # int8 is refused by name first: on a machine without the GPU, that is the clearer error.
    if int8 and device not in ("cpu", "auto"):
        raise ValueError(f"int8=true runs on the CPU only, not on device={device!r}")
    device = distributed.local_device(select_device(device), distributed.world())
    if int8 and device.type != "cpu":
        raise ValueError(f"int8=true runs on the CPU only, not on device={device!r} (auto)")
    saved = checkpoint.load(path, map_location=device)
    model = checkpoint.build_model(saved).to(device)
    log.info("loaded %s (trained on %s)", path, saved.metadata.get("treebank", "unknown data"))
    return Parser(quantized(model) if int8 else model, saved.vocabs, device=device, bf16=bf16)


def quantized(model: nn.Module) -> nn.Module:
    """A copy of ``model`` for CPU inference with int8 LSTM and linear weights.

    Dynamic quantization: weights are stored in int8, activations quantized on the fly. The
    biaffine scorers keep their float weights. PyTorch 2.13 marks this API deprecated (its
    successor is torchao) but still supports it; the warning is not the user's to act on.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*deprecated.*", category=UserWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        return torch.ao.quantization.quantize_dynamic(
            model.eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8
        )


def _load_segmenter(fmt: str, path: str | os.PathLike[str] | None) -> Segmenter | None:
    """The segmenter that ``format=raw`` needs, and only it."""
    if fmt != "raw":
        if path is not None:
            raise ValueError(f"segmenter= reads raw text, and format={fmt}: use format=raw")
        return None
    if path is None:
        raise ValueError("format=raw needs segmenter=PATH (a best.pt of train_segmenter.py)")
    return Segmenter.load(path)


def _read(
    source: str | os.PathLike[str], fmt: str, segmenter: Segmenter | None, *, early: bool
) -> InputSentences:
    if segmenter is not None:
        raw = read_raw(source, segmenter)
        return InputSentences(raw, raw)
    return read_sentences(source, fmt, early=early)


def _parse_chunks(
    parse_chunk: ChunkParser,
    sentences: InputSentences,
    chunk_sentences: int,
    result: PredictResult,
    *,
    evaluate: bool,
    exclude_punct: bool,
) -> Iterator[Sentence]:
    """Parsed sentences in input order on rank 0 (none elsewhere); updates ``result``.

    Each round reads ``size`` chunks; rank ``r`` parses chunk ``r`` and rank 0 gathers them.
    ``parse_chunk`` gives one list per input sentence; its first sentence is the one scored.
    """
    here = distributed.world()
    while chunks := _next_round(sentences, chunk_sentences, here.size):
        mine = chunks[here.rank] if here.rank < len(chunks) else []
        parsed = parse_chunk(mine) if mine else []
        gathered = distributed.gather(parsed, here)
        if gathered is None:
            continue
        for chunk, chunk_parsed in zip(chunks, gathered, strict=False):
            result.n_sentences += len(chunk)
            result.n_words += sum(len(s) for s in chunk)
            if evaluate:
                _score_chunk(chunk, [first for first, *_ in chunk_parsed], result, exclude_punct)
            for written in chunk_parsed:
                yield from written


def _next_round(iterator: InputSentences, size: int, n: int) -> list[list[Sentence]]:
    """Up to ``n`` non-empty chunks of up to ``size`` sentences (:func:`next_chunk`).

    Fewer where the next sentence has yet to come from a pipe.
    """
    stop_if_terminated()  # before a read that may wait on a pipe for good
    chunks: list[list[Sentence]] = []
    while len(chunks) < n and (chunk := next_chunk(iterator, size)):
        chunks.append(chunk)
        if len(chunks) < n and iterator.waiting():
            break
    return chunks


def _score_chunk(
    gold: list[Sentence], parsed: list[Sentence], result: PredictResult, exclude_punct: bool
) -> None:
    if result._gold_missing or any(s.heads is None for s in gold):
        result._gold_missing, result.scores, result.conll18 = True, None, None
        return
    scores = evaluate_corpus(gold, parsed, exclude_punct=exclude_punct)
    result.scores = scores.attachment + (result.scores or AttachmentScores())
    result.conll18 = scores.words + (result.conll18 or Conll18Scores())


def _log_result(
    result: PredictResult, evaluate: bool, exclude_punct: bool, predicted: Sequence[str]
) -> None:
    """Log the counts and, with ``evaluate``, the scores of the trees and ``predicted`` columns."""
    counts = (result.n_sentences, result.n_words, result.seconds, result.sentences_per_second)
    log.info("parsed %d sentences (%d words) in %.2fs: %.1f sentences/s", *counts)
    if evaluate and result.scores is None:
        log.warning(
            "eval=true, but not every sentence of the input has a gold tree (a HEAD '_', or "
            "text, which has none): nothing scored"
        )
    elif result.scores is not None:
        s = result.scores
        figures = (s.uas, s.las, s.las_universal, s.uem, s.lem, s.dependency_accuracy)
        # the CoNLL 2018 scorer's LAS is the universal one, always counting punctuation
        universal = "punctuation excluded" if exclude_punct else "as the CoNLL 2018 scorer"
        log.info(
            "UAS %.2f, LAS %.2f (full DEPREL), LAS %.2f (universal DEPREL, %s), UEM %.2f, "
            "LEM %.2f, dependency accuracy %.2f, root accuracy %.2f, malformed %.2f (tree or "
            "root label)",
            *figures[:3],
            universal,
            *figures[3:],
            s.root_accuracy,
            s.malformed_rate,
        )
        reported = result.conll18.reported() if result.conll18 else {}
        scored = {name: f1 for name, f1 in reported.items() if _predicts(name, predicted)}
        log.info("CoNLL 2018 F1: %s", ", ".join(f"{k} {v.f1:.2f}" for k, v in scored.items()))
        if len(scored) < len(reported):
            log.info(
                "not scored: %s (the output keeps the input's; columns=... with "
                "overwrite_columns=true predicts them)",
                ", ".join(name for name in reported if name not in scored),
            )


def _predicts(metric: str, predicted: Sequence[str]) -> bool:
    """Whether the output predicts every tagged column CoNLL 2018's ``metric`` reads."""
    wanted = {"lemma" if column == "lemmas" else column for column in COLUMNS_OF.get(metric, ())}
    return wanted <= set(predicted)


def check_model(
    model: nn.Module, vocabs: Vocabs, decoder: DecoderSettings, options: PredictOptions
) -> None:
    """Refuse, in one line, what the checkpoint's parser family or heads cannot answer.

    Raises:
        ValueError: e.g. k-best trees or given heads asked of a transition parser, or a
            column the model has no tagger for.
    """
    request = request_of(options, []).for_model(model.tagged_columns)
    reason = family_of(model, vocabs).refusal(request, decoder)
    if reason is not None:
        raise ValueError(reason)


def chunk_parser(
    model: nn.Module,
    vocabs: Vocabs,
    decoder: DecoderSettings,
    options: PredictOptions,
    *,
    max_tokens: int,
    bf16: bool,
    abandoned: Callable[[], bool] | None = None,
) -> ChunkParser:
    """The function that parses one chunk of sentences as ``options`` ask.

    Args:
        model: the loaded parser.
        vocabs: its vocabularies.
        decoder: how trees are found (k-best and given heads: mst or eisner).
        options: checked with :func:`check_options` and :func:`check_model`.
        max_tokens: words per batch.
        bf16: run the network in bfloat16.
        abandoned: asked before each batch whether the answer is still wanted (a server's);
            :class:`~biaffine.inference.request.Abandoned` where it is not.
    """

    def parse_chunk(chunk: list[Sentence]) -> list[list[Sentence]]:
        request = request_of(options, chunk)
        how = {"max_tokens": max_tokens, "bf16": bf16, "abandoned": abandoned}
        found = predict_trees(model, vocabs, chunk, request, {"": decoder}, **how)[""].results
        return [with_result(s, r, request) for s, r in zip(chunk, found, strict=True)]

    return parse_chunk
