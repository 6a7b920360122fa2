"""release_current_slot: a long-lived pool job gives its slot back to the pool's cap."""

from __future__ import annotations

import threading

from mcpsync.engine.pool import WorkerPool, release_current_slot
from tests.helpers import WAIT, wait_until


def test_a_released_job_no_longer_counts_against_the_cap():
    pool = WorkerPool(1, name="t-release")
    released = threading.Event()
    end_long = threading.Event()
    ran = threading.Event()
    answers: list[bool] = []

    def long_lived() -> None:
        answers.append(release_current_slot())
        answers.append(release_current_slot())  # a second call does nothing
        released.set()
        end_long.wait(WAIT)

    pool.submit(long_lived)
    assert released.wait(WAIT)
    assert answers == [True, False]
    assert pool.size == 0 and pool.released == 1
    pool.submit(ran.set)  # the one slot is free again: runs now, beside the long job
    assert ran.wait(WAIT)
    end_long.set()
    assert pool.shutdown(WAIT)
    assert pool.released == 0


def test_queued_work_starts_when_a_slot_is_given_back():
    pool = WorkerPool(1, name="t-release-queue")
    go = threading.Event()
    end_long = threading.Event()
    ran = threading.Event()

    def long_lived() -> None:
        go.wait(WAIT)
        release_current_slot()
        end_long.wait(WAIT)

    pool.submit(long_lived)
    pool.submit(ran.set)  # queued behind the long job: the cap is one
    assert not ran.is_set()
    go.set()
    assert ran.wait(WAIT)  # released: a new worker took the queued job
    end_long.set()
    assert pool.shutdown(WAIT)


def test_a_released_thread_exits_when_its_job_ends():
    pool = WorkerPool(2, name="t-release-exit", idle_timeout=60.0)
    holder: list[threading.Thread] = []

    def job() -> None:
        holder.append(threading.current_thread())
        release_current_slot()

    pool.submit(job)
    wait_until(lambda: holder and not holder[0].is_alive(), timeout=WAIT,
               message="a released thread must not go back to the idle list")
    assert pool.size == 0 and pool.released == 0
    assert pool.shutdown(WAIT)


def test_shutdown_waits_for_released_jobs_too():
    pool = WorkerPool(1, name="t-release-shutdown")
    started = threading.Event()
    end_long = threading.Event()
    finished = threading.Event()

    def long_lived() -> None:
        release_current_slot()
        started.set()
        end_long.wait(WAIT)
        finished.set()

    pool.submit(long_lived)
    assert started.wait(WAIT)
    assert pool.shutdown(0.05) is False  # still running: reported, not forgotten
    end_long.set()
    assert finished.wait(WAIT)
    assert pool.shutdown(WAIT)


def test_outside_a_pool_job_nothing_happens():
    assert release_current_slot() is False
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(release_current_slot()),
                              name="t-not-a-worker")
    thread.start()
    thread.join(WAIT)
    assert result == [False]


def test_many_jobs_some_released_all_run_and_the_cap_holds():
    pool = WorkerPool(3, name="t-release-many", max_backlog=1000)
    lock = threading.Lock()
    capped_peak = [0]
    done = threading.Semaphore(0)
    gate = threading.Event()
    parked = threading.Semaphore(0)

    def job(n: int) -> None:
        if n % 4 == 0:
            release_current_slot()
            parked.release()
            gate.wait(WAIT)  # parked, like a listen
        with lock:
            capped_peak[0] = max(capped_peak[0], pool.size)
        done.release()

    for n in range(200):
        pool.submit(lambda n=n: job(n))
    # Every job that did not park finishes while the parked ones still hold their threads.
    for _ in range(150):
        assert done.acquire(timeout=WAIT)
    for _ in range(50):
        assert parked.acquire(timeout=WAIT)
    assert pool.released == 50
    gate.set()
    for _ in range(50):
        assert done.acquire(timeout=WAIT)
    assert capped_peak[0] <= 3
    assert pool.shutdown(WAIT)
    assert pool.size == 0 and pool.released == 0
