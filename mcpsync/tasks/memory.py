"""The default task store: a dict in this process, one lock, one condition.

Good for one process (``mcpsync run``, ``mcpsync serve``, a single WSGI worker). Tasks do
not survive a restart and are not shared with other workers: for that use
:class:`~mcpsync.tasks.sqlite.SqliteTaskStore`.

Payloads are kept as compact JSON text and decoded on each read. That is what makes the
byte bounds exact, and it means every reader gets its own copy: a caller that edits the
``result`` dict it was handed cannot change what the next reader sees (the same as the
SQLite store, where a read always decodes).

Expiry is lazy (a read of an expired task deletes it) plus a sweep at most once a minute
when tasks are created, plus :meth:`MemoryTaskStore.expire` for a server that wants to
sweep on its own schedule; the bounds hold whether or not anyone sweeps.
"""

from __future__ import annotations

import builtins
import threading
import time
from dataclasses import dataclass, replace
from typing import Any

from ..stores.tasks import TaskRecord, TaskStoreCapabilities, TaskStoreFullError
from .bounds import (
    MAX_LIVE_TASKS_PER_OWNER,
    MAX_RECORD_BYTES,
    MAX_STORE_BYTES,
    MAX_TASKS,
    MAX_TTL_MS,
    PAYLOAD_FIELDS,
    TaskResultTooLargeError,
    clamp_record_ttl,
    encode_payload,
    page_size,
    parse_cursor,
    record_size,
)
from .changes import StoredTask, TaskChange, TaskChanges

__all__ = ["MemoryTaskStore"]

#: Sweep every expired record at most this often (seconds), when a task is created.
SWEEP_INTERVAL = 60.0

_EMPTY_PAYLOAD: dict[str, Any] = {**{f: None for f in PAYLOAD_FIELDS}, "input_responses": {}}


@dataclass(frozen=True)
class _Entry(StoredTask):
    """A stored task: the record without its payload, the payload as JSON text, its cost.
    Replaced, never changed, so a reader may decode it after letting go of the lock."""

    seq: int
    record: TaskRecord
    texts: dict[str, str]
    size: int


def _entry(seq: int, record: TaskRecord, texts: dict[str, str]) -> _Entry:
    return _Entry(seq, replace(record, **_EMPTY_PAYLOAD), texts, record_size(record, texts))


class MemoryTaskStore(TaskChanges):
    """Tasks in a dict, for one process. Safe for any number of threads.

    Bounds (each a keyword; see :mod:`mcpsync.tasks.bounds` for the defaults):
    ``max_live_per_owner`` live tasks per owner (``create`` raises
    :class:`~mcpsync.stores.tasks.TaskStoreFullError`), ``max_tasks`` records in all and
    ``max_bytes`` of payload in all (the oldest terminal tasks are evicted to make room,
    never a live one; when only live ones are left ``create`` raises ``TaskStoreFullError``
    and a growing write raises :class:`~mcpsync.tasks.bounds.TaskResultTooLargeError`),
    ``max_record_bytes`` per record (``TaskResultTooLargeError``), ``max_ttl_ms`` (a longer
    ttl is clamped when the task is created).
    """

    def __init__(self, *, max_live_per_owner: int = MAX_LIVE_TASKS_PER_OWNER,
                 max_tasks: int = MAX_TASKS, max_bytes: int = MAX_STORE_BYTES,
                 max_record_bytes: int = MAX_RECORD_BYTES,
                 max_ttl_ms: int = MAX_TTL_MS) -> None:
        self.max_live_per_owner = max_live_per_owner
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.max_record_bytes = max_record_bytes
        self.max_ttl_ms = max_ttl_ms
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._entries: dict[str, _Entry] = {}
        self._by_owner: dict[str, dict[str, None]] = {}  # owner -> ids, oldest first
        self._live: dict[str, set[str]] = {}  # owner -> ids not yet terminal
        self._terminal: dict[str, None] = {}  # ids, in the order they became terminal
        self._bytes = 0
        self._seq = 0
        self._last_sweep = time.time()

    @property
    def capabilities(self) -> TaskStoreCapabilities:
        """Nothing optional: its tasks die with its process, so none needs recovering."""
        return TaskStoreCapabilities()

    # -- bookkeeping (all under the lock) --------------------------------------------------

    def _put(self, entry: _Entry, old: _Entry | None) -> None:
        record = entry.record
        task_id, owner = record.task_id, record.owner
        self._entries[task_id] = entry
        self._bytes += entry.size - (old.size if old is not None else 0)
        if old is None:
            self._by_owner.setdefault(owner, {})[task_id] = None
            if not record.terminal:
                self._live.setdefault(owner, set()).add(task_id)
        if record.terminal and (old is None or not old.record.terminal):
            self._terminal[task_id] = None
            self._not_live(owner, task_id)
        self._changed.notify_all()

    def _delete(self, task_id: str) -> None:
        entry = self._entries.pop(task_id)
        owner = entry.record.owner
        self._bytes -= entry.size
        ids = self._by_owner[owner]
        del ids[task_id]
        if not ids:
            del self._by_owner[owner]
        self._terminal.pop(task_id, None)
        self._not_live(owner, task_id)
        self._changed.notify_all()

    def _not_live(self, owner: str, task_id: str) -> None:
        """``task_id`` no longer counts against ``owner``'s live tasks."""
        live = self._live.get(owner)
        if live is not None:
            live.discard(task_id)
            if not live:
                del self._live[owner]

    def _find(self, task_id: str, now: float | None = None) -> _Entry | None:
        """The entry, deleting it (and answering ``None``) if it has expired."""
        entry = self._entries.get(task_id)
        if entry is not None and entry.record.expired(now):
            self._delete(task_id)
            return None
        return entry

    def _sweep(self, now: float) -> int:
        expired = [i for i, e in self._entries.items() if e.record.expired(now)]
        for task_id in expired:
            self._delete(task_id)
        self._last_sweep = now
        return len(expired)

    def _owner_full(self, owner: str) -> bool:
        return len(self._live.get(owner, ())) >= self.max_live_per_owner

    def _evict_terminal(self, keep: str | None = None) -> bool:
        """Drop the task that became terminal first (not ``keep``); whether there was one."""
        for task_id in self._terminal:
            if task_id != keep:
                self._delete(task_id)
                return True
        return False

    def _make_room(self, extra: int, keep: str | None) -> bool:
        """Evict terminal tasks until ``extra`` more bytes fit; whether they do."""
        swept = False
        while self._bytes + extra > self.max_bytes:
            if self._evict_terminal(keep):
                continue
            if swept or not self._sweep(time.time()):
                return False
            swept = True
        return True

    # -- the TaskStore protocol ------------------------------------------------------------

    def create(self, record: TaskRecord) -> None:
        record = clamp_record_ttl(record, self.max_ttl_ms)
        texts = {f: t for f, t in encode_payload(vars(record)).items() if t is not None}
        now = time.time()
        with self._lock:
            entry = _entry(self._seq + 1, record, texts)
            if entry.size > self.max_record_bytes:
                raise TaskResultTooLargeError(
                    f"the task's payload is {entry.size} bytes; a task may hold "
                    f"{self.max_record_bytes}")
            if self._find(record.task_id, now) is not None:
                raise KeyError(record.task_id)
            if now - self._last_sweep >= SWEEP_INTERVAL:
                self._sweep(now)
            if not record.terminal and self._owner_full(record.owner):
                for task_id in list(self._live.get(record.owner, ())):
                    self._find(task_id, now)  # drops the owner's expired tasks
                if self._owner_full(record.owner):
                    raise TaskStoreFullError(
                        f"this client has {self.max_live_per_owner} tasks running; "
                        f"wait for one to finish or cancel one")
            while len(self._entries) >= self.max_tasks:
                # A full store evicts a terminal task per create; a sweep (a scan of all
                # records) goes first at most once a second, or when nothing else frees one.
                if now - self._last_sweep >= 1.0 and self._sweep(now):
                    continue
                if not self._evict_terminal() and not self._sweep(now):
                    raise TaskStoreFullError(
                        f"the server is running {self.max_tasks} tasks; try again later")
            if not self._make_room(entry.size, None):
                raise TaskStoreFullError("the server's task store is full; try again later")
            self._seq += 1
            self._put(entry, None)

    def get(self, task_id: str, owner: str | None = None) -> TaskRecord | None:
        with self._lock:
            entry = self._find(task_id)
        if entry is None or (owner is not None and entry.record.owner != owner):
            return None
        return entry.decode()

    def _change(self, key: str, change: TaskChange) -> TaskRecord | None:
        """The one read-modify-write: apply ``change`` unless the task is terminal; the
        record after (or as it was)."""
        with self._lock:
            entry = self._find(key)
            if entry is None or (change.owner is not None and entry.record.owner != change.owner):
                return None
            if not entry.record.terminal:
                new = _entry(entry.seq, entry.record.evolve(**change.plain),
                             change.texts(entry.texts))
                if new.size > entry.size:
                    if new.size > self.max_record_bytes:
                        raise TaskResultTooLargeError(
                            f"the task's payload would be {new.size} bytes; a task may hold "
                            f"{self.max_record_bytes}")
                    if not self._make_room(new.size - entry.size, key):
                        raise TaskResultTooLargeError(
                            "the server's task store is full of running tasks")
                self._put(new, entry)
                entry = new
        return entry.decode()

    def take_responses(self, task_id: str, keys: builtins.list[str]) -> dict[str, Any]:
        with self._lock:
            entry = self._find(task_id)
            if entry is None:
                return {}
            taken, texts = entry.take_responses(keys)
            if taken:
                new = _entry(entry.seq, entry.record.evolve(), texts)
                self._put(new, entry)
        return taken

    def wait(self, task_id: str, after_version: int, timeout: float) -> TaskRecord | None:
        deadline = time.monotonic() + max(0.0, timeout)
        with self._lock:
            while True:
                entry = self._find(task_id)
                if entry is None or entry.record.version > after_version:
                    break
                remaining = deadline - time.monotonic()
                if entry.record.ttl_ms is not None:  # wake when it expires, too
                    until_expiry = (entry.record.created_at + entry.record.ttl_ms / 1000
                                    - time.time())
                    remaining = min(remaining, max(until_expiry, 0.001))
                # A wait that ran its full time ends the loop even if the clock it was
                # measured with did not move (a frozen clock in tests), so it stays bounded.
                remaining = min(remaining, threading.TIMEOUT_MAX)
                if remaining <= 0 or not self._changed.wait(remaining):
                    entry = self._find(task_id)
                    break
        return None if entry is None else entry.decode()

    def expire(self, now: float | None = None) -> int:
        with self._lock:
            return self._sweep(time.time() if now is None else now)

    def close(self) -> None:
        """Nothing to release: the records go with the object."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def stored_bytes(self) -> int:
        """What the records cost now, as the ``max_bytes`` bound counts it."""
        with self._lock:
            return self._bytes

    def list(self, owner: str, cursor: str | None = None,
             limit: int = 50) -> tuple[builtins.list[TaskRecord], str | None]:
        after = parse_cursor(cursor)
        size = page_size(limit)
        now = time.time()
        with self._lock:
            if after > self._seq:
                raise ValueError("unknown cursor")
            page: builtins.list[_Entry] = []
            more = False
            for task_id in builtins.list(self._by_owner.get(owner, ())):
                entry = self._find(task_id, now)
                if entry is None or entry.seq <= after:
                    continue
                if len(page) == size:
                    more = True
                    break
                page.append(entry)
        next_cursor = str(page[-1].seq) if more else None
        return [e.decode() for e in page], next_cursor
