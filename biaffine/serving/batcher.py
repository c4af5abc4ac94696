"""Requests that arrive together, answered in one call on one worker thread.

The event loop only queues tasks and hands batches to a single worker thread, so parsing never
blocks it and the model's CPU threads (set once, ``torch.set_num_threads``) are never shared
between two parses at a time. A batch is the first waiting task and those that arrive within
``wait_s`` after it (or are already waiting), up to ``max_tasks``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from biaffine.serving.jobs import Answer, Task

__all__ = ["Batcher"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Batcher:
    """A queue of tasks in front of ``run``, which answers a list of tasks on the worker thread."""

    def __init__(
        self,
        run: Callable[[Sequence[Task], Callable[[int], bool]], list[Answer]],
        *,
        wait_s: float,
        max_tasks: int,
        max_queued: int,
    ) -> None:
        """Set up; :meth:`start` begins serving (inside the event loop).

        Args:
            run: answers tasks, one answer each, in order; its second argument says, from the
                worker thread, whether task i of them still has a client waiting (one that
                timed out has had its 503, and ``run`` may give it up).
            wait_s: how long the first task of a batch waits for others.
            max_tasks: tasks per batch.
            max_queued: tasks waiting at most (:meth:`submit` answers 503 above).
        """
        self._run = run
        self._wait_s = wait_s
        self._max_tasks = max_tasks
        self._max_queued = max_queued
        self._queue: asyncio.Queue[tuple[Task, asyncio.Future[Answer]]] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._serving: asyncio.Task[None] | None = None
        self._waiting: set[asyncio.Future[Answer]] = set()
        """The futures of the tasks in the queue that still wait for an answer: one that timed
        out stays in the queue until the worker skips it, but no longer counts as waiting."""
        self.in_flight = 0
        """Tasks submitted and not yet answered (waiting or being parsed)."""
        self.batches = 0
        """Batches handed to ``run`` so far."""
        self.batched = 0
        """Tasks in them (``batched / batches``: the mean batch)."""
        self._running = 0  # batches the worker thread is in (0 or 1)

    def start(self) -> None:
        """Start the worker thread and the loop that feeds it."""
        self._queue = asyncio.Queue()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parser")
        self._serving = asyncio.get_running_loop().create_task(self._serve())

    async def stop(self) -> None:
        """Stop taking batches; the worker thread ends after its current batch, not waited for.

        uvicorn calls this once ``graceful_shutdown_s`` has run out: a batch still being parsed
        then has no one to answer (its requests got a 503), and waiting for it held the
        process for as long as the parse took (72 s after SIGTERM for kbest=32 on 1,000
        words). ``serve.py`` exits without it (:attr:`busy`).
        """
        if self._serving is not None:
            self._serving.cancel()
            await asyncio.gather(self._serving, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    @property
    def busy(self) -> bool:
        """Whether the worker thread is parsing a batch."""
        return self._running > 0

    @property
    def queued(self) -> int:
        """Tasks waiting for the worker (not those that ran out of time while waiting)."""
        return len(self._waiting)

    async def call(self, function: Callable[[], T]) -> T:
        """Run ``function`` on the worker thread (between batches) and return its result."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, function)

    async def submit(self, task: Task, timeout_s: float) -> Answer:
        """The answer to ``task``, or a 503 answer when the queue is full or time runs out."""
        if self._queue is None:
            return Answer(503, "the server is starting or stopping: try again")
        if len(self._waiting) >= self._max_queued:
            return Answer(503, f"{self._max_queued} requests are waiting: try again later")
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self.in_flight += 1
        self._waiting.add(future)
        try:
            self._queue.put_nowait((task, future))
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return Answer(503, f"no answer within {timeout_s:g} s: the server is busy, try again")
        finally:
            self._waiting.discard(future)
            self.in_flight -= 1

    async def _serve(self) -> None:
        assert self._queue is not None  # start() set it
        while True:
            batch = await self._batch(self._queue)
            self._waiting.difference_update(future for _, future in batch)
            live = [(task, future) for task, future in batch if not future.done()]
            if not live:
                continue  # every one timed out while waiting
            self.batches += 1
            self.batched += len(live)
            try:
                tasks = [task for task, _ in live]
                wanted = functools.partial(_wanted, [future for _, future in live])
                answers = await self.call(functools.partial(self._run_batch, tasks, wanted))
            except Exception:  # a bug: every task of the batch gets a 500, the server lives on
                log.exception("parsing a batch of %d requests failed", len(live))
                answers = [Answer(500, "internal error while parsing")] * len(live)
            for (_, future), answer in zip(live, answers, strict=True):
                if not future.done():
                    future.set_result(answer)

    def _run_batch(self, tasks: list[Task], wanted: Callable[[int], bool]) -> list[Answer]:
        """``run`` on the worker thread, counted in :attr:`busy` while it runs."""
        self._running += 1
        try:
            return self._run(tasks, wanted)
        finally:
            self._running -= 1

    async def _batch(
        self, queue: asyncio.Queue[tuple[Task, asyncio.Future[Answer]]]
    ) -> list[tuple[Task, asyncio.Future[Answer]]]:
        """The next task, and those that come within ``wait_s`` (at most ``max_tasks``)."""
        batch = [await queue.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait_s
        while len(batch) < self._max_tasks:
            if not queue.empty():
                batch.append(queue.get_nowait())
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                batch.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                break
        return batch


def _wanted(futures: Sequence[asyncio.Future[Answer]], index: int) -> bool:
    """Whether task ``index`` still waits for its answer; read from the worker thread.

    A future is only set on the event loop (its answer, or the 503 of its timeout); reading
    whether it is done from another thread at worst sees it a moment late.
    """
    return not futures[index].done()
