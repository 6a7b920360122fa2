"""The durable task store: one SQLite file, shared by threads and by processes.

``SqliteTaskStore(path)`` is what ``mcpsync serve --task-store PATH`` uses, and what several
WSGI workers (gunicorn ``-w N``) on one machine share so that ``tasks/get`` reaches a task
whichever worker created it.

Choices, and why:

* **One connection per store, guarded by a lock**, not one per thread. A server runs a
  thread per request, so per-thread connections would come and go with request threads
  (file descriptors and page caches nobody bounds, and ``close()`` could not reach them).
  Every operation here is one short statement or transaction, so serializing them within
  a process costs little; concurrency between processes is SQLite's job. The wait for
  that lock is charged like the wait for the file's (:mod:`mcpsync.tasks.sqlite_lock`).
* **WAL** so readers never wait for a writer, **busy_timeout** so a writer waits its turn
  instead of failing with ``database is locked``, and every read-modify-write in
  ``BEGIN IMMEDIATE`` (the write lock taken *before* the read), so "terminal is final" and
  "no answer is lost" hold across processes, not only across threads.
* ``synchronous=NORMAL`` by default: a committed task survives the process dying (what
  recovery is about); a power cut may lose the last moments. ``durable=True`` makes every
  commit reach the disk (``synchronous=FULL``) at the price of an fsync per write.
* :meth:`SqliteTaskStore.wait` **polls** (20 ms doubling to 250 ms) because another process
  may write; a write by this process wakes its waiters at once.
* **Recovery** on open: the live tasks of a runner on this host that is no longer alive
  (see :mod:`mcpsync.tasks.runners`) become ``failed``; tasks of other hosts are left
  alone (a store shared by hosts needs a networked store: issue #17).
* Times come from ``time.time()`` in Python, never from SQLite's clock, so the expiry
  rules are the record's own (and tests can freeze them).

The file must be on a local disk: WAL does not work over a network file system.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any, Final

from ..stores.tasks import TaskRecord, TaskStoreCapabilities, TaskStoreFullError, runner_id
from .bounds import (
    MAX_LIVE_TASKS_PER_OWNER,
    MAX_RECORD_BYTES,
    MAX_TASKS,
    MAX_TTL_MS,
    PAYLOAD_FIELDS,
    TaskResultTooLargeError,
    clamp_record_ttl,
    encode,
    encode_payload,
    page_size,
    parse_cursor,
    record_size,
)
from .changes import StoredTask, TaskChange, TaskChanges
from .runners import registration, runner_alive
from .sqlite_lock import StoreLock, switch_to_wal

__all__ = ["MAX_SQLITE_BYTES", "RUNNER_EXITED", "SqliteTaskStore"]

#: All records' payloads together in one SQLite file (1 GiB on disk).
MAX_SQLITE_BYTES: Final = 1024 * 1024 * 1024
#: The error a task gets when the process running it is found dead.
RUNNER_EXITED: Final = {"code": -32603,
                        "message": "the server process running this task exited before it "
                                   "finished"}
#: Seconds a writer waits for another process's write lock before giving up.
BUSY_TIMEOUT: Final = 15.0
#: ``wait`` polls the file this often: from the first to the last, doubling.
POLL_FIRST: Final = 0.020
POLL_MAX: Final = 0.250
#: Sweep every expired record at most this often (seconds), when a task is created.
SWEEP_INTERVAL: Final = 60.0

_SCHEMA_VERSION: Final = 1
_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS tasks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        surface TEXT NOT NULL,
        tool TEXT NOT NULL,
        status TEXT NOT NULL,
        status_message TEXT,
        created_at REAL NOT NULL,
        last_updated_at REAL NOT NULL,
        ttl_ms INTEGER,
        expires_at REAL,
        poll_interval_ms INTEGER,
        result TEXT,
        error TEXT,
        input_requests TEXT,
        input_responses TEXT,
        runner TEXT NOT NULL,
        version INTEGER NOT NULL,
        size INTEGER NOT NULL,
        finished INTEGER
    )""",
    "CREATE INDEX IF NOT EXISTS tasks_owner ON tasks (owner, seq)",
    "CREATE INDEX IF NOT EXISTS tasks_expiry ON tasks (expires_at) WHERE expires_at IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS tasks_finished ON tasks (finished) WHERE finished IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS tasks_live ON tasks (runner) WHERE finished IS NULL",
    "CREATE TABLE IF NOT EXISTS runners (runner TEXT PRIMARY KEY, identity TEXT)",
    # Running totals, kept by triggers in the writing transaction: the byte bound is
    # checked on every create, and summing a column scans the whole table.
    """CREATE TABLE IF NOT EXISTS totals (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        bytes INTEGER NOT NULL,
        finished INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO totals (id, bytes, finished) VALUES (1, 0, 0)",
    """CREATE TRIGGER IF NOT EXISTS tasks_added AFTER INSERT ON tasks BEGIN
        UPDATE totals SET bytes = bytes + NEW.size WHERE id = 1; END""",
    """CREATE TRIGGER IF NOT EXISTS tasks_removed AFTER DELETE ON tasks BEGIN
        UPDATE totals SET bytes = bytes - OLD.size WHERE id = 1; END""",
    """CREATE TRIGGER IF NOT EXISTS tasks_resized AFTER UPDATE OF size ON tasks BEGIN
        UPDATE totals SET bytes = bytes - OLD.size + NEW.size WHERE id = 1; END""",
)
# ``finished``: the order in which tasks became terminal (NULL while live), so eviction
# takes the one that finished first; ``size``: what the record costs against the bounds.

_PLAIN: Final = ("task_id", "owner", "surface", "tool", "status", "status_message",
                 "created_at", "last_updated_at", "ttl_ms", "poll_interval_ms", "runner",
                 "version")
_COLUMNS: Final = ", ".join((*_PLAIN, *PAYLOAD_FIELDS, "seq", "size"))
_LIVE: Final = "finished IS NULL"
_NOT_EXPIRED: Final = "(expires_at IS NULL OR expires_at > ?)"


class _Row(StoredTask):
    """A row read: the record without its payload, the payload texts, position and size."""

    __slots__ = ("record", "seq", "size", "texts")

    def __init__(self, row: tuple[Any, ...]) -> None:
        plain = dict(zip(_PLAIN, row[:len(_PLAIN)], strict=True))
        payload = row[len(_PLAIN):len(_PLAIN) + len(PAYLOAD_FIELDS)]
        self.texts: dict[str, str] = {f: t for f, t in zip(PAYLOAD_FIELDS, payload,
                                                          strict=True) if t is not None}
        self.record = TaskRecord(**plain)
        self.seq: int = row[-2]
        self.size: int = row[-1]


def _expires_at(record: TaskRecord) -> float | None:
    return None if record.ttl_ms is None else record.created_at + record.ttl_ms / 1000


class SqliteTaskStore(TaskChanges):
    """Tasks in a SQLite file at ``path``, shared by threads and by processes on one host.

    Bounds as :class:`~mcpsync.tasks.memory.MemoryTaskStore` (live tasks per owner, records
    in all, bytes per record, ttl cap), with ``max_bytes`` on disk defaulting to 1 GiB.
    ``recover=False`` skips marking a dead runner's tasks failed on open (for tools that
    only read the file); :meth:`recover` runs it again at any time.
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 max_live_per_owner: int = MAX_LIVE_TASKS_PER_OWNER,
                 max_tasks: int = MAX_TASKS, max_bytes: int = MAX_SQLITE_BYTES,
                 max_record_bytes: int = MAX_RECORD_BYTES, max_ttl_ms: int = MAX_TTL_MS,
                 busy_timeout: float = BUSY_TIMEOUT, durable: bool = False,
                 recover: bool = True) -> None:
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        if self.path != ":memory:" and not os.path.isdir(folder):  # sqlite: "unable to open"
            raise FileNotFoundError(errno.ENOENT, "no such directory for the task store", folder)
        self.max_live_per_owner = max_live_per_owner
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.max_record_bytes = max_record_bytes
        self.max_ttl_ms = max_ttl_ms
        self._lock = StoreLock(self.path, busy_timeout)
        # Wakes this process's waiters after a write: its own lock, held for no wait, and a
        # count of writes so a waiter cannot miss one made between its read and its wait.
        self._changed = threading.Condition(threading.Lock())
        self._writes = 0
        self._closed = False
        self._last_sweep = time.time()
        self._busy_timeout = busy_timeout
        self._durable = durable
        self._pid = os.getpid()
        self._conn = self._connect()
        try:
            self._open(durable)
        except BaseException:
            self._conn.close()
            raise
        if recover:
            self.recover()

    @property
    def capabilities(self) -> TaskStoreCapabilities:
        """It fails a dead runner's tasks on demand (:meth:`recover`)."""
        return TaskStoreCapabilities(recovers=self)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=self._busy_timeout, isolation_level=None,
                               check_same_thread=False)

    def _db(self) -> sqlite3.Connection:
        """The connection, under the lock. A store opened before a fork (a server module
        imported by gunicorn's master with ``--preload``) must not use the parent's
        connection in the child (SQLite forbids it): the child opens its own, and leaves
        the inherited one alone (closing it could release the parent's locks)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._conn = self._connect()
            self._conn.execute(f"PRAGMA synchronous={'FULL' if self._durable else 'NORMAL'}")
        if self._closed:
            raise sqlite3.ProgrammingError(f"the task store {self.path} is closed")
        return self._conn

    def _open(self, durable: bool) -> None:
        conn = self._conn
        switch_to_wal(conn, self.path, self._busy_timeout)
        conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        with self._write():
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > _SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"{self.path} was written by a newer mcpsync (task store schema "
                    f"{version}; this one reads {_SCHEMA_VERSION})")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={_SCHEMA_VERSION}")

    # -- plumbing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding the file's write lock from its first read, under this
        store's lock (both waited for within the budget); waiters in this process are woken
        after it commits."""
        with self._lock.writing(self._db) as conn:
            yield conn
        with self._changed:
            self._writes += 1
            self._changed.notify_all()

    def _row(self, conn: sqlite3.Connection, task_id: str) -> _Row | None:
        found = conn.execute(f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ?",
                             (task_id,)).fetchone()
        return None if found is None else _Row(found)

    def _sweep(self, conn: sqlite3.Connection, now: float) -> int:
        self._last_sweep = now
        return conn.execute("DELETE FROM tasks WHERE expires_at <= ?", (now,)).rowcount

    def _evict_terminal(self, conn: sqlite3.Connection, keep: str | None) -> bool:
        """Delete the task that finished first (not ``keep``); whether there was one."""
        found = conn.execute("SELECT seq FROM tasks WHERE finished IS NOT NULL AND "
                             "task_id IS NOT ? ORDER BY finished LIMIT 1", (keep,)).fetchone()
        if found is None:
            return False
        conn.execute("DELETE FROM tasks WHERE seq = ?", found)
        return True

    def _make_room(self, conn: sqlite3.Connection, extra: int, keep: str | None) -> bool:
        """Evict terminal tasks (then expired ones) until ``extra`` more bytes fit."""
        swept = False
        while True:
            total = conn.execute("SELECT bytes FROM totals WHERE id = 1").fetchone()[0]
            if total + extra <= self.max_bytes:
                return True
            if self._evict_terminal(conn, keep):
                continue
            if swept or not self._sweep(conn, time.time()):
                return False
            swept = True

    def _register_runner(self, conn: sqlite3.Connection, runner: str) -> None:
        """Remember who this process is, so a later open can tell it from a recycled pid.
        On every write naming it (one small statement): another process's :meth:`recover`
        forgets runners that have no live task left."""
        if runner == runner_id():
            conn.execute("INSERT OR IGNORE INTO runners (runner, identity) VALUES (?, ?)",
                         (runner, registration()))

    @staticmethod
    def _next_finished(conn: sqlite3.Connection) -> int:
        """The next place in the order tasks became terminal (in the write transaction)."""
        conn.execute("UPDATE totals SET finished = finished + 1 WHERE id = 1")
        return int(conn.execute("SELECT finished FROM totals WHERE id = 1").fetchone()[0])

    def _store(self, conn: sqlite3.Connection, old: _Row, new: TaskRecord,
               texts: Mapping[str, str], size: int) -> None:
        finished = self._next_finished(conn) if new.terminal else None
        conn.execute(
            "UPDATE tasks SET tool = ?, status = ?, status_message = ?, last_updated_at = ?, "
            "ttl_ms = ?, expires_at = ?, poll_interval_ms = ?, result = ?, error = ?, "
            "input_requests = ?, input_responses = ?, runner = ?, version = ?, size = ?, "
            "finished = ? WHERE seq = ?",
            (new.tool, new.status, new.status_message, new.last_updated_at, new.ttl_ms,
             _expires_at(new), new.poll_interval_ms, *(texts.get(f) for f in PAYLOAD_FIELDS),
             new.runner, new.version, size, finished, old.seq))
        self._register_runner(conn, new.runner)

    # -- the TaskStore protocol -------------------------------------------------------------

    def create(self, record: TaskRecord) -> None:
        record = clamp_record_ttl(record, self.max_ttl_ms)
        texts = {f: t for f, t in encode_payload(vars(record)).items() if t is not None}
        size = record_size(record, texts)
        if size > self.max_record_bytes:
            raise TaskResultTooLargeError(f"the task's payload is {size} bytes; a task may "
                                          f"hold {self.max_record_bytes}")
        now = time.time()
        with self._write() as conn:
            found = conn.execute("SELECT expires_at FROM tasks WHERE task_id = ?",
                                 (record.task_id,)).fetchone()
            if found is not None:
                if found[0] is None or found[0] > now:
                    raise KeyError(record.task_id)
                conn.execute("DELETE FROM tasks WHERE task_id = ?", (record.task_id,))
            if now - self._last_sweep >= SWEEP_INTERVAL:
                self._sweep(conn, now)
            if not record.terminal:
                live = conn.execute(f"SELECT COUNT(*) FROM tasks WHERE owner = ? AND {_LIVE} "
                                    f"AND {_NOT_EXPIRED}", (record.owner, now)).fetchone()[0]
                if live >= self.max_live_per_owner:
                    raise TaskStoreFullError(
                        f"this client has {self.max_live_per_owner} tasks running; wait for "
                        f"one to finish or cancel one")
            while conn.execute("SELECT COUNT(*) FROM tasks").fetchone()[0] >= self.max_tasks:
                if not self._sweep(conn, now) and not self._evict_terminal(conn, None):
                    raise TaskStoreFullError(
                        f"the server is running {self.max_tasks} tasks; try again later")
            if not self._make_room(conn, size, None):
                raise TaskStoreFullError("the server's task store is full; try again later")
            finished = self._next_finished(conn) if record.terminal else None
            conn.execute(
                f"INSERT INTO tasks ({', '.join(_PLAIN)}, {', '.join(PAYLOAD_FIELDS)}, "
                f"expires_at, size, finished) VALUES ({', '.join('?' * (len(_PLAIN) + 7))})",
                (*(getattr(record, f) for f in _PLAIN), *(texts.get(f) for f in PAYLOAD_FIELDS),
                 _expires_at(record), size, finished))
            self._register_runner(conn, record.runner)

    def get(self, task_id: str, owner: str | None = None) -> TaskRecord | None:
        with self._lock.reading():
            row = self._row(self._db(), task_id)
        if row is None or row.record.expired() or (owner is not None
                                                   and row.record.owner != owner):
            return None
        return row.decode()

    def _change(self, key: str, change: TaskChange) -> TaskRecord | None:
        """The one read-modify-write, in one transaction holding the write lock."""
        with self._write() as conn:
            row = self._row(conn, key)
            if row is None or row.record.expired() or (change.owner is not None
                                                       and row.record.owner != change.owner):
                return None
            if row.record.terminal:
                return row.decode()
            texts = change.texts(row.texts)
            new = row.record.evolve(**change.plain)
            size = record_size(new, texts)
            if size > row.size:
                if size > self.max_record_bytes:
                    raise TaskResultTooLargeError(
                        f"the task's payload would be {size} bytes; a task may hold "
                        f"{self.max_record_bytes}")
                if not self._make_room(conn, size - row.size, key):
                    raise TaskResultTooLargeError(
                        "the server's task store is full of running tasks")
            self._store(conn, row, new, texts, size)
            row.record, row.texts = new, texts
        return row.decode()

    def take_responses(self, task_id: str, keys: builtins.list[str]) -> dict[str, Any]:
        with self._write() as conn:
            row = self._row(conn, task_id)
            if row is None or row.record.expired():
                return {}
            taken, texts = row.take_responses(keys)
            if taken:
                new = row.record.evolve()
                self._store(conn, row, new, texts, record_size(new, texts))
        return taken

    def _version(self, task_id: str) -> tuple[int, float | None] | None:
        """The task's version and expiry (a cheap read, for polling); ``None`` if absent."""
        with self._lock.reading():
            found = self._db().execute("SELECT version, expires_at FROM tasks "
                                       "WHERE task_id = ?", (task_id,)).fetchone()
        return None if found is None else (found[0], found[1])

    def wait(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        deadline = time.monotonic() + max(0.0, timeout)
        delay = POLL_FIRST
        slept = 0.0  # also counted, so a frozen clock (in tests) cannot make this endless
        while True:
            with self._changed:
                writes = self._writes
            seen = self._version(task_id)  # the store's lock is not held while it sleeps
            if seen is None or seen[0] > after_version or (
                    seen[1] is not None and seen[1] <= time.time()):
                break
            remaining = min(deadline - time.monotonic(), timeout - slept)
            if remaining <= 0:
                break
            step = min(delay, remaining)
            with self._changed:
                if writes == self._writes and not self._changed.wait(step):
                    slept += step
            delay = min(delay * 2, POLL_MAX)
        return self.get(task_id)

    def expire(self, now: float | None = None) -> int:
        with self._write() as conn:
            return self._sweep(conn, time.time() if now is None else now)

    def recover(self) -> int:
        """Mark ``failed`` the live tasks whose runner (on this host) is no longer alive;
        how many. Runs on open; call it again to recover tasks of a worker that died
        while this process was running (a gunicorn worker restarted, say)."""
        with self._lock.reading():
            runners = self._db().execute(
                f"SELECT DISTINCT t.runner, r.identity FROM tasks t LEFT JOIN runners r "
                f"ON r.runner = t.runner WHERE t.{_LIVE}").fetchall()
        dead = [runner for runner, identity in runners
                if runner_alive(runner, identity) is False]
        failed = 0
        now = time.time()
        for runner in dead:
            with self._write() as conn:
                rows = [_Row(r) for r in conn.execute(
                    f"SELECT {_COLUMNS} FROM tasks WHERE runner = ? AND {_LIVE}", (runner,))]
                for row in rows:
                    if row.record.expired(now):
                        continue
                    texts = {f: t for f, t in row.texts.items() if f != "input_requests"}
                    texts["error"] = encode(RUNNER_EXITED)
                    new = row.record.evolve(status="failed",
                                            status_message=RUNNER_EXITED["message"])
                    self._store(conn, row, new, texts, record_size(new, texts))
                    failed += 1
                conn.execute("DELETE FROM runners WHERE runner = ?", (runner,))
        with self._write() as conn:  # forget runners with nothing left to recover
            conn.execute(f"DELETE FROM runners WHERE runner != ? AND runner NOT IN "
                         f"(SELECT runner FROM tasks WHERE {_LIVE})", (runner_id(),))
        return failed

    def close(self) -> None:
        """Close the connection once the calls in progress end (later ones fail at once)."""
        self._closed = True
        with self._lock.unbounded():
            if self._pid == os.getpid():
                self._conn.close()  # a second close does nothing

    def __enter__(self) -> SqliteTaskStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list(self, owner: str, cursor: str | None = None,
             limit: int = 50) -> tuple[builtins.list[TaskRecord], str | None]:
        after = parse_cursor(cursor)
        size = page_size(limit)
        with self._lock.reading():
            db = self._db()
            last = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'tasks'"
                                      ).fetchone()
            if after > (last[0] if last else 0):
                raise ValueError("unknown cursor")
            rows = [_Row(r) for r in db.execute(
                f"SELECT {_COLUMNS} FROM tasks WHERE owner = ? AND seq > ? AND {_NOT_EXPIRED} "
                f"ORDER BY seq LIMIT ?", (owner, after, time.time(), size + 1))]
        more = len(rows) > size
        rows = rows[:size]
        return [r.decode() for r in rows], (str(rows[-1].seq) if more else None)

