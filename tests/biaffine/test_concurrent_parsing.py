# ruff: noqa: RUF001  (Turkish text: its dotless i is meant)
"""One loaded model parsed from several threads at once, as a server shares it.

Every output must be byte for byte the one its input gets parsed alone, whatever else runs at
the same time (other inputs, other options), and the process's settings (torch's thread count
of each thread, OpenBLAS's) must be as they were once the threads end. Threads run with a
timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from threadpoolctl import threadpool_info, threadpool_limits

from biaffine.api import Parser
from biaffine.runtime import one_thread

TIMEOUT_S = 60

EN_TEXTS = [
    "The cat sat on the mat. It slept all day.",
    "I went home yesterday. Then it rained a lot, didn't it?",
    "Where is the station? Over there, sir.",
    "He didn't know what to do with the letters she'd sent.",
]
TR_TEXTS = [
    "Ali okula gitti. Kitapları masanın üstüne bıraktı.",
    "Yarın İstanbul'a gideceğiz. Hava çok güzel olacak.",
    "Evdekiler bu haberi duyunca şaşırdılar.",
    "Öğretmenler öğrencilerine yeni kitaplar dağıttılar.",
]

Job = Callable[[], object]


def _blas_threads() -> list[int]:
    return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]


def _on_threads(jobs: list[Job], threads: int, rounds: int) -> dict[int, object]:
    """Job k's outputs from ``threads`` daemon threads, each running its share ``rounds`` times.

    Fails on a thread still running after :data:`TIMEOUT_S` (a deadlock), a thread whose torch
    thread count differs when it ends from when it began, or two outputs of one job that differ.
    """
    found: dict[int, list[object]] = {k: [] for k in range(len(jobs))}
    failures: list[str] = []
    start = threading.Barrier(threads)

    def work(first: int) -> None:
        try:
            count = torch.get_num_threads()
            start.wait(TIMEOUT_S)
            for _ in range(rounds):
                for k in range(first, len(jobs), threads):
                    found[k].append(jobs[k]())
            if torch.get_num_threads() != count:
                failures.append(
                    f"thread {first}: {count} torch threads, then {torch.get_num_threads()}"
                )
        except Exception as error:  # reported below, with the others
            failures.append(f"thread {first}: {error!r}")

    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(TIMEOUT_S)
    assert not any(worker.is_alive() for worker in workers), "deadlock: threads still running"
    assert failures == []
    for k, outputs in found.items():
        assert all(output == outputs[0] for output in outputs), f"job {k}: outputs differ"
    return {k: outputs[0] for k, outputs in found.items()}


def _check_concurrent(jobs: list[Job], threads: int, rounds: int = 2) -> None:
    """Each job's output on threads is its output alone; the settings are left as they were."""
    alone = {k: job() for k, job in enumerate(jobs)}
    torch_before, blas_before = torch.get_num_threads(), _blas_threads()
    assert _on_threads(jobs, threads, rounds) == alone
    assert torch.get_num_threads() == torch_before
    assert _on_threads([torch.get_num_threads], 1, 1)[0] == torch_before  # a new thread's
    assert _blas_threads() == blas_before


@pytest.fixture(autouse=True)
def _two_threads() -> Iterator[None]:
    """Two torch and BLAS threads before each test, so a leaked 1 shows."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    with threadpool_limits(limits=2, user_api="blas"):
        yield
    torch.set_num_threads(before)


def _parser_jobs(parser: Parser, texts: list[str], *, kbest: bool = True) -> list[Job]:
    """Raw text, words, CoNLL-U, columns, probabilities, k-best and constraints, mixed."""
    words = [[list(tree.sentence.forms) for tree in parser.parse(text=text)] for text in texts]
    conllu = [parser.to_conllu(parser.parse(sentences)) for sentences in words]
    jobs: list[Job] = []
    for text, sentences, conll in zip(texts, words, conllu, strict=True):
        free = [[None] * len(s) for s in sentences]
        fixed = [[None] * (len(s) - 1) + [0] if len(s) > 1 else [0] for s in sentences]
        jobs += [
            lambda text=text: parser.to_conllu(parser.parse(text=text)),
            lambda s=sentences: parser.to_conllu(parser.parse(s)),
            lambda s=sentences: parser.to_conllu(parser.parse(s, columns=["all"])),
            lambda c=conll: parser.to_conllu(parser.parse(c, columns=["all"], overwrite=True)),
            lambda s=sentences: repr(parser.parse(s, probabilities=True)),
            lambda s=sentences, f=fixed: repr(parser.parse_constrained(s, f)),
            lambda s=sentences, f=free: repr(parser.parse_constrained(s, f, columns=["all"])),
        ]
        if kbest:
            jobs.append(lambda s=sentences: repr(parser.kbest(s, 3, columns=["all"])))
    return jobs


@pytest.fixture(scope="module")
def ewt_small() -> Parser:
    return Parser.load("en_ewt_small", threads=2)


@pytest.mark.parametrize("threads", [2, 4, 8])
def test_one_parser_on_many_threads_parses_each_input_as_alone(
    ewt_small: Parser, threads: int
) -> None:
    _check_concurrent(_parser_jobs(ewt_small, EN_TEXTS), threads)


def test_an_ensemble_on_many_threads_parses_each_input_as_alone() -> None:
    ensemble = Parser.load("en_ewt", threads=2)
    _check_concurrent(_parser_jobs(ensemble, EN_TEXTS[:2], kbest=False), 4, rounds=1)


def test_character_models_on_many_threads_parse_each_input_as_alone() -> None:
    """The lemma generator and the FEATS and UPOS guessers, each on its own threads too."""
    imst = Parser.load("tr_imst", threads=2)
    _check_concurrent(_parser_jobs(imst, TR_TEXTS, kbest=False), 4)


def test_the_segmenter_on_many_threads_finds_the_same_classes(ewt_small: Parser) -> None:
    segmenter = ewt_small.segmenter
    assert segmenter is not None
    jobs: list[Job] = [lambda text=text: segmenter.classes(text).tobytes() for text in EN_TEXTS]
    jobs += [lambda text=text: repr(segmenter.segment(text)) for text in EN_TEXTS]
    _check_concurrent(jobs, 8, rounds=3)


def test_an_onnx_export_on_many_threads_parses_each_input_as_alone(
    ewt_small: Parser, tmp_path: Path
) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from biaffine.export import run
    from biaffine.onnxrun import OnnxParser
    from biaffine.pipeline import segmented

    run({"model": "en_ewt_small", "output": str(tmp_path / "export")})
    onnx = OnnxParser.load(tmp_path / "export", threads=1)
    assert onnx.segmenter is not None
    words = [[list(tree.sentence.forms) for tree in ewt_small.parse(text=t)] for t in EN_TEXTS]
    jobs: list[Job] = []
    for text, sentences in zip(EN_TEXTS, words, strict=True):
        jobs += [
            lambda s=sentences: repr(onnx.parse(s)),
            lambda s=sentences: repr(onnx.parse(s, columns=["all"])),
            lambda text=text: repr(segmented(onnx.segmenter, text)),
        ]
    _check_concurrent(jobs, 4, rounds=3)


def _overlapped(
    first: Callable[[Callable[[], None]], object],
    second: Callable[[threading.Event, threading.Event], None],
) -> None:
    """``first(inner)`` on this thread and ``second`` on another, overlapping so that the
    first ends first: ``inner`` (run inside ``first``'s block) starts ``second`` and waits
    until its block has begun; ``second`` then waits until ``first`` has ended."""
    entered, left = threading.Event(), threading.Event()

    def inner() -> None:
        other.start()
        assert entered.wait(TIMEOUT_S)

    def run_second() -> None:
        second(entered, left)

    other = threading.Thread(target=run_second, daemon=True)
    first(inner)
    left.set()
    other.join(TIMEOUT_S)
    assert not other.is_alive()


def test_a_thread_whose_one_thread_block_ends_first_gets_its_count_back() -> None:
    """A server's thread that segments while another does must not stay on 1 torch thread."""

    def first(inner: Callable[[], None]) -> None:
        with one_thread() as threads:
            assert threads == 2
            inner()

    def second(entered: threading.Event, left: threading.Event) -> None:
        with one_thread():
            entered.set()
            assert left.wait(TIMEOUT_S)

    _overlapped(first, second)
    assert torch.get_num_threads() == 2
