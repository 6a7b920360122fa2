"""A SQLite task store whose write lock another process holds (a worker stopped in the
middle of a write): a write inside a request waits what is left of the request's store
budget, not SQLite's 15 s busy timeout, and fails as StoreUnavailableError (503), not as
SQLite's OperationalError. The same holds for the wait *before* that one, for the store's
thread lock, which a thread waiting on the file holds: a request queued behind it, write
or read, waits its own budget, not its place in the queue times the holder's.

Every timing assertion sits half-way between the pass and the bug, and those are seconds
apart (the bug's wait is several budgets, or the 15 s busy timeout), so neither a loaded
machine nor a fast one moves a test to the wrong side."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mcpsync.errors import StoreUnavailableError
from mcpsync.protocol.budget import Budget
from mcpsync.tasks import SqliteTaskStore
from tests.helpers import run_threads, wait_until
from tests.stores.backends import make_record

HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()  # hold the write lock until the test closes our stdin
"""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTaskStore]:
    opened = SqliteTaskStore(str(tmp_path / "tasks.db"), busy_timeout=15.0)
    yield opened
    opened.close()


@contextlib.contextmanager
def holding(path: str) -> Iterator[None]:
    """Another process holds the file's write lock for the block."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)


@pytest.fixture
def held(store: SqliteTaskStore) -> Iterator[None]:
    with holding(store.path):
        yield


def test_a_write_in_a_request_waits_only_its_budget(store: SqliteTaskStore,
                                                    held: None) -> None:
    started = time.monotonic()
    with Budget(0.5, "the store work of this request").scope(), \
            pytest.raises(StoreUnavailableError, match="locked by another process"):
        store.create(make_record())
    assert time.monotonic() - started < 7.5  # the budget 0.5 s; the bug: 15 s


def test_reads_do_not_wait_for_the_lock(store: SqliteTaskStore) -> None:
    record = make_record()
    store.create(record)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, store.path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with Budget(0.5, "the store work of this request").scope():
            found = store.get(record.task_id)
        assert found is not None and found.task_id == record.task_id
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)


def test_the_busy_timeout_is_restored_after_a_budgeted_write(store: SqliteTaskStore) -> None:
    with Budget(0.5, "the store work of this request").scope():
        store.create(make_record())
    # A write outside any request waits SQLite's whole busy timeout again.
    assert store._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 15_000


def _timed(call: Callable[[], object]) -> tuple[float, BaseException | None]:
    """How long ``call`` took, and what it raised."""
    started = time.monotonic()
    try:
        call()
    except Exception as exc:
        return time.monotonic() - started, exc
    return time.monotonic() - started, None


def test_concurrent_requests_each_wait_only_their_own_budget(store: SqliteTaskStore,
                                                             held: None) -> None:
    # Ten requests at once, 1 s each: queued one behind the other on the store's thread
    # lock, uncharged, the last would take 10 s.
    def request(_: int) -> tuple[float, BaseException | None]:
        with Budget(1.0, "the store work of this request").scope():
            return _timed(lambda: store.create(make_record()))

    outcomes = run_threads(request, 10, name="t-request")
    for took, error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        assert took < 5.0, [round(t, 2) for t, _ in outcomes]


def test_calls_outside_a_request_share_the_busy_timeout(tmp_path: Path) -> None:
    # Outside a request the store's own bound, busy_timeout, is each call's wait in all:
    # the thread lock and then the file's. Ten calls of 4 s: queued, the last would take
    # 40 s; charged twice (lock, then file), each would take 8 s.
    with SqliteTaskStore(str(tmp_path / "tasks.db"), busy_timeout=4.0) as store, \
            holding(store.path):
        outcomes = run_threads(lambda _: _timed(lambda: store.create(make_record())), 10,
                               name="t-call")
    for took, error in outcomes:
        assert isinstance(error, StoreUnavailableError), error
        assert took < 6.0, [round(t, 2) for t, _ in outcomes]


READS: dict[str, Callable[[SqliteTaskStore, str], object]] = {
    "get": lambda store, task_id: store.get(task_id),
    "list": lambda store, _: store.list("alice"),
    "wait": lambda store, task_id: store.wait(task_id, 0, 30.0),
}


@pytest.mark.parametrize("read", list(READS))
def test_a_read_behind_a_waiting_write_waits_only_its_budget(store: SqliteTaskStore,
                                                             read: str) -> None:
    record = make_record()
    store.create(record)
    with holding(store.path):
        # A write of a request with a long budget: it holds the store's thread lock while
        # it waits for the file's write lock.
        def write() -> None:
            with Budget(30.0, "the store work of a slow request").scope():
                store.create(make_record())

        writer = threading.Thread(target=write, name="t-writer", daemon=True)
        writer.start()
        wait_until(store._lock.locked, timeout=5, message="the write never took the lock")
        # The write's budget is 30 s; the bug would wait it out behind the write.
        with Budget(0.4, "the store work of this request").scope():
            took, error = _timed(lambda: READS[read](store, record.task_id))
        assert isinstance(error, StoreUnavailableError), error
        assert "busy" in str(error) and "0.4 s" in str(error)
        assert took < 10
    writer.join(10)  # the holder is gone: the write goes through
    assert not writer.is_alive()
    assert store.get(record.task_id) is not None
