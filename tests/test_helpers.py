"""The shared test harnesses fail the way a test needs them to: a thread's exception names
its thread, a hung thread fails within the bound, a condition that never holds says so."""

from __future__ import annotations

import sys
import threading

import pytest

from tests.helpers import run_threads, wait_until


def test_run_threads_returns_results_in_order_from_named_threads_released_together():
    names: list[str] = []
    arrived = threading.Barrier(5, timeout=5)

    def work(i: int) -> int:
        names.append(threading.current_thread().name)
        arrived.wait()  # breaks unless all five run at the same time
        return i * 2

    assert run_threads(work, 5, name="t-x", timeout=10) == [0, 2, 4, 6, 8]
    assert sorted(names) == [f"t-x-{i}" for i in range(5)]


def test_run_threads_reraises_a_threads_exception_naming_the_thread():
    def work(i: int) -> int:
        if i == 3:
            raise ValueError("boom")
        return i

    expected = ValueError if sys.version_info >= (3, 11) else AssertionError
    with pytest.raises(expected) as info:
        run_threads(work, 4, name="t-y", timeout=10)
    said = str(info.value) + " ".join(getattr(info.value, "__notes__", []))
    assert "boom" in said and "t-y-3" in said


def test_run_threads_fails_when_a_thread_does_not_finish_in_time():
    release = threading.Event()
    try:
        with pytest.raises(AssertionError, match=r"1 of 3 threads did not finish.*t-z-0"):
            run_threads(lambda i: release.wait(10) if i == 0 else True, 3, name="t-z",
                        timeout=0.5)
    finally:
        release.set()


def test_wait_until_returns_once_the_condition_holds():
    flag = threading.Event()
    setter = threading.Timer(0.05, flag.set)
    setter.name = "t-setter"
    setter.start()
    wait_until(flag.is_set, timeout=10)
    setter.join(10)
    assert flag.is_set()


def test_wait_until_fails_with_its_message_after_the_timeout():
    box = [0]
    with pytest.raises(AssertionError, match=r"after 0\.1 s: still 0"):
        wait_until(lambda: box[0], timeout=0.1, message=lambda: f"still {box[0]}")
