"""What the character models share: reading each distinct word once, in batches, on threads."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import OpenBLASController, threadpool_info, threadpool_limits

from biaffine.data import character_model
from biaffine.data.character_model import LEAST_SHARED, read_distinct

WORDS = st.lists(
    st.tuples(st.text(alphabet="abc", max_size=4), st.sampled_from(("NOUN", "VERB"))),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(words=WORDS, batch=st.integers(1, 7), workers=st.integers(1, 4), least=st.integers(1, 5))
def test_each_distinct_word_is_read_once_in_batches_of_like_length(
    words, batch, workers, least
) -> None:
    batches: list[list[tuple[str, str]]] = []
    threads: set[int] = set()
    lock = threading.Lock()

    def read(chosen: list[tuple[str, str]]) -> list[str]:
        with lock:
            batches.append(chosen)
            threads.add(threading.get_ident())
        return [f"{form}/{upos}" for form, upos in chosen]

    found = read_distinct(words, read, batch, workers, least)
    assert found == [f"{form}/{upos}" for form, upos in words]
    read_words = [word for chosen in batches for word in chosen]
    assert sorted(read_words) == sorted(set(words))  # each distinct word once
    assert all(len(chosen) <= batch for chosen in batches)
    distinct = len(set(words))
    if distinct:  # a batch for every thread that would get enough words
        assert len(batches) >= min(workers, max(distinct // least, 1))
    assert len(threads) <= workers
    for chosen in batches:  # words of like length together: the batches' lengths do not overlap
        others = [len(form) for other in batches if other is not chosen for form, _ in other]
        lengths = [len(form) for form, _ in chosen]
        inside = [n for n in others if min(lengths) < n < max(lengths)]
        assert not inside


def test_words_are_shared_out_over_threads_only_in_batches_worth_a_thread() -> None:
    words = [(f"w{k}", "NOUN") for k in range(2 * LEAST_SHARED - 1)]
    sizes: list[int] = []

    def read(chosen: list[tuple[str, str]]) -> list[int]:
        sizes.append(len(chosen))
        return [0] * len(chosen)

    read_distinct(words, read, batch=1024, workers=2)
    assert sizes == [len(words)]  # too few for two batches of LEAST_SHARED
    sizes.clear()
    read_distinct([*words, ("w-last", "NOUN")], read, batch=1024, workers=2)
    assert sizes == [LEAST_SHARED, LEAST_SHARED]


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_overlapping_reads_from_two_threads_give_blas_its_thread_count_back() -> None:
    # A parser called from several threads left numpy's BLAS on one thread for good: the second
    # read found the first's limit of 1 and, ending last, restored that.
    before = blas_threads()
    if not before or min(before) < 2:
        pytest.skip(f"numpy's BLAS runs on {before or 'no'} threads here: nothing to give back")
    first_inside, second_inside, first_done = (threading.Event() for _ in range(3))

    def first(chosen: list[tuple[str, str]]) -> list[int]:
        first_inside.set()
        assert second_inside.wait(10)
        return [0] * len(chosen)

    def second(chosen: list[tuple[str, str]]) -> list[int]:
        second_inside.set()
        assert first_done.wait(10)
        return [0] * len(chosen)

    def read_second() -> None:
        assert first_inside.wait(10)
        read_distinct([("b", "X")], second, batch=8)

    later = threading.Thread(target=read_second)
    later.start()
    try:
        read_distinct([("a", "X")], first, batch=8)  # in, then out while the second is in
    finally:
        first_done.set()
        later.join(10)
    assert not later.is_alive()
    left = blas_threads()
    if left != before:  # given back for the tests that follow
        OpenBLASController.clear_controlling_thread(force=True)
        threadpool_limits(limits=min(before), user_api="blas")
        OpenBLASController.clear_controlling_thread(force=True)
    assert left == before


class PerThreadLimits:
    """What threadpool_limits does with an OpenBLAS on OpenMP: it sets the calling thread's."""

    count = threading.local()

    def __init__(self, limits: int, user_api: str) -> None:
        self.original = PerThreadLimits.threads()
        PerThreadLimits.count.n = limits

    @staticmethod
    def threads() -> int:
        return getattr(PerThreadLimits.count, "n", 2)

    def restore_original_limits(self) -> None:
        PerThreadLimits.count.n = self.original

    def __enter__(self) -> PerThreadLimits:
        return self

    def __exit__(self, *error: object) -> None:
        self.restore_original_limits()


def test_where_blas_counts_threads_per_thread_each_block_limits_its_own(monkeypatch) -> None:
    # One limit shared by overlapping blocks left the later block unlimited and the first
    # thread at 1 for good where each thread has its own count.
    monkeypatch.setattr(character_model, "threadpool_limits", PerThreadLimits)
    monkeypatch.setattr(character_model, "_per_thread_blas", lambda: True)
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def first() -> None:
        with character_model.one_blas_thread():
            a_in.set()
            assert b_in.wait(10)
            seen["first inside"] = PerThreadLimits.threads()
        a_out.set()
        seen["first after"] = PerThreadLimits.threads()

    def second() -> None:
        assert a_in.wait(10)
        with character_model.one_blas_thread():
            b_in.set()
            seen["second inside"] = PerThreadLimits.threads()
            assert a_out.wait(10)
        seen["second after"] = PerThreadLimits.threads()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert seen == {"first inside": 1, "second inside": 1, "first after": 2, "second after": 2}
