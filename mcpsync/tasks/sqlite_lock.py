"""The waits of a SQLite task store, each within a time bound: :class:`StoreLock`.

In WAL mode readers never wait for the file, but a write waits for the file's one write
lock, which another process may hold: a worker stopped (SIGSTOP, a debugger) in the middle
of a write holds it for as long as it is stopped. SQLite's busy handler waits
``busy_timeout`` per statement, whatever the request around it has left.

Before that wait comes another: the store's one connection is used under a thread lock,
and the thread holding it may be the one waiting for the file. So a second request, read
or write, waits for the first one's file wait, then a third for both: queued behind each
other, uncharged, four requests with 1 s budgets took 1, 2, 3 and 4 s. Both waits are
therefore charged to the same bound: inside a request (an ambient
:class:`~mcpsync.protocol.budget.Budget`, the WSGI app's ``store_budget``) what is left of
it, outside one ``busy_timeout`` for the call in all. Running out is
:class:`~mcpsync.errors.StoreUnavailableError` (the HTTP app's 503 with ``Retry-After``),
never SQLite's own ``OperationalError``, which would be an internal error.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import StoreUnavailableError
from ..protocol.budget import Budget, current_budget

__all__ = ["StoreLock", "switch_to_wal"]


class StoreLock:
    """The thread lock of the store at ``path`` (for its one connection) and, for writes,
    the file's write lock (``BEGIN IMMEDIATE``), waited for within one bound: what is left
    of the request's budget, else ``busy_timeout`` seconds for both. Thread-safe."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._thread = threading.Lock()

    def locked(self) -> bool:
        """Whether a thread holds the thread lock now (for tests and diagnostics)."""
        return self._thread.locked()

    def _budget(self) -> Budget:
        found = current_budget()
        if found is not None:
            return found
        return Budget(self.busy_timeout, f"a call on the task store {self.path}")

    def _acquire(self, budget: Budget) -> None:
        with budget.spend(self.busy_timeout) as deadline:
            left = min(deadline.remaining(), threading.TIMEOUT_MAX)
            if not self._thread.acquire(timeout=left):
                raise StoreUnavailableError(
                    f"the task store {self.path} is busy in this process (its other calls "
                    f"wait for the file's write lock) past its time budget "
                    f"({budget.describe()})")

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """The thread lock, for a read (which never waits for the file in WAL mode)."""
        self._acquire(self._budget())
        try:
            yield
        finally:
            self._thread.release()

    @contextlib.contextmanager
    def unbounded(self) -> Iterator[None]:
        """The thread lock however long it takes: for ``close()``, which must not close
        the connection under a call, and waits only for the calls in progress (each one
        bounded as above)."""
        with self._thread:
            yield

    @contextlib.contextmanager
    def writing(self, db: Callable[[], sqlite3.Connection]) -> Iterator[sqlite3.Connection]:
        """A write transaction on the connection ``db()`` returns (called under the thread
        lock), holding the file's write lock from its first read; committed when the block
        ends, rolled back when it raises."""
        budget = self._budget()
        with budget.applied():
            self._acquire(budget)
            try:
                conn = db()
                self._begin_within(conn, budget)
            except BaseException:
                self._thread.release()
                raise
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        finally:
            self._thread.release()

    def _begin_within(self, conn: sqlite3.Connection, budget: Budget) -> None:
        """``BEGIN IMMEDIATE`` on ``conn`` (whose busy timeout is ``busy_timeout``), waiting
        for the file at most what is left of ``budget``."""
        if budget.left >= self.busy_timeout:
            self._begin(conn)
            return
        with budget.spend(self.busy_timeout) as deadline:
            conn.execute(f"PRAGMA busy_timeout={int(deadline.remaining() * 1000)}")
            try:
                self._begin(conn)
            finally:
                conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")

    def _begin(self, conn: sqlite3.Connection) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise StoreUnavailableError(
                f"the task store {self.path} is locked by another process past its time "
                "budget") from exc


def switch_to_wal(conn: sqlite3.Connection, path: str, busy_timeout: float) -> None:
    """Put the file in WAL mode. Several processes opening a new file at once (gunicorn
    workers starting together) race to switch it; SQLite answers the loser "database is
    locked" at once, without its busy handler (two readers upgrading would deadlock). So the
    switch is tried again, backing off, for as long as any write would wait."""
    deadline = time.monotonic() + busy_timeout
    delay = 0.002
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.DatabaseError as exc:
            locked = isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)
            if not locked or time.monotonic() + delay > deadline:
                raise sqlite3.DatabaseError(
                    f"{path} is not a usable task store: {exc}") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
