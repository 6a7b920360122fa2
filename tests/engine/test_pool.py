"""WorkerPool: the cap, the bounded backlog, thread reuse, retirement and bounded shutdown."""

from __future__ import annotations

import threading

import pytest

from mcpsync.threads.pool import PoolFullError, WorkerPool
from tests.helpers import WAIT, wait_until


def test_cap_backlog_and_busy():
    pool = WorkerPool(2, name="t-cap", max_backlog=1)
    release = threading.Event()
    started = threading.Semaphore(0)
    ran: list[str] = []

    def blocking() -> None:
        started.release()
        release.wait(WAIT)
        ran.append(threading.current_thread().name)

    pool.submit(blocking)
    pool.submit(blocking)
    assert started.acquire(timeout=WAIT) and started.acquire(timeout=WAIT)
    assert pool.size == 2
    pool.submit(blocking)  # queued: the backlog holds one
    with pytest.raises(PoolFullError):
        pool.submit(blocking)
    release.set()
    assert started.acquire(timeout=WAIT)  # the queued job ran on a freed thread
    assert pool.shutdown(WAIT)
    assert len(ran) == 3 and all(name.startswith("t-cap-") for name in ran)


def test_an_idle_thread_is_reused_then_retires():
    # Long enough that a loaded host's pause between two jobs does not retire the thread
    # (the reuse below would then see a second one), short enough to wait for below.
    pool = WorkerPool(4, name="t-reuse", idle_timeout=1.0)
    names: list[str] = []
    done = threading.Event()

    def job() -> None:
        names.append(threading.current_thread().name)
        done.set()

    for _ in range(5):
        done.clear()
        pool.submit(job)
        assert done.wait(WAIT)
    assert set(names) == {"t-reuse-1"}  # one warm thread served them all, one after another
    # The idle thread exits after 1 s without work.
    wait_until(lambda: pool.size == 0, timeout=WAIT, message=lambda: pool.size)
    done.clear()
    pool.submit(job)  # a fresh thread after retirement
    assert done.wait(WAIT)
    assert pool.shutdown(WAIT)


def test_shutdown_is_bounded_and_refuses_new_work():
    pool = WorkerPool(1, name="t-stop")
    stuck = threading.Event()
    entered = threading.Event()

    def ignores_cancellation() -> None:
        entered.set()
        stuck.wait(WAIT)

    pool.submit(ignores_cancellation)
    assert entered.wait(WAIT)
    pool.submit(lambda: None)  # queued, then dropped by shutdown
    assert pool.shutdown(0.1) is False  # the busy thread did not finish within the bound
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    stuck.set()


def test_a_failing_job_does_not_kill_its_thread():
    pool = WorkerPool(1, name="t-fail")
    done = threading.Event()

    def boom() -> None:
        raise ValueError("boom")

    pool.submit(boom)
    pool.submit(done.set)
    assert done.wait(WAIT)
    assert pool.shutdown(WAIT)
