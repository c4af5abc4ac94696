"""Process set-up: torch's CPU thread count under :func:`biaffine.runtime.one_thread`."""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from biaffine.runtime import one_thread


def _in_new_thread(task: Callable[[], int]) -> int:
    """What ``task`` returns when run on a fresh thread, as a server's worker would be."""
    out: list[int] = []
    thread = threading.Thread(target=lambda: out.append(task()))
    thread.start()
    thread.join()
    return out[0]


def test_overlapping_one_thread_blocks_restore_the_count_when_the_last_leaves() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def first() -> None:
        with one_thread() as threads:
            seen["first"] = threads
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with one_thread() as threads:
            seen["second"] = threads
            second_in.set()
            first_out.wait(10)
            seen["inside after first left"] = torch.get_num_threads()

    try:
        workers = [threading.Thread(target=first), threading.Thread(target=second)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(20)
        assert seen == {"first": 2, "second": 2, "inside after first left": 1}
        assert torch.get_num_threads() == 2
        assert _in_new_thread(torch.get_num_threads) == 2
    finally:
        torch.set_num_threads(before)


def test_nested_one_thread_blocks_yield_the_outer_count() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with one_thread() as outer:
            with one_thread() as inner:
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1
        assert (outer, inner) == (2, 2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
