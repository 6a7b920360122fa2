"""The task store on Redis: tasks shared by every worker on every machine.

``RedisTaskStore(client)`` keeps the :class:`~mcpsync.stores.tasks.TaskStore` contract that
:class:`~mcpsync.tasks.memory.MemoryTaskStore` and :class:`~mcpsync.tasks.sqlite.SqliteTaskStore`
keep (the same bounds, under the same names and defaults), for workers that do not share
a disk. Choices, and why:

* **One hash per task** (``<prefix>:tasks:task:<id>``) holding the record's plain fields as
  JSON and each payload field as its own JSON text, so sizes are measured exactly as the
  other stores measure them, and a read decodes a fresh copy.
* **Optimistic transactions** (``WATCH`` / ``MULTI``): every read-modify-write reads the
  task under ``WATCH`` and computes the change in Python (the very rules of the other
  stores), then writes it in one ``MULTI``; a conflicting write by anyone (another thread,
  another machine) makes ``EXEC`` fail and the change is recomputed from what is there now.
  A retry only happens because another writer succeeded, so progress is guaranteed; the
  attempts are still bounded (:data:`MAX_ATTEMPTS`). "Terminal is final" and "no answer is
  lost" hold across machines.
* **Indexes** beside the records: per owner (a sorted set by position, for ``list``), the
  owner's live tasks (a set, for ``max_live_per_owner``), all tasks, terminal tasks in the
  order they finished (eviction), expiry times (sweeps), and running totals (bytes). All
  keys share one hash tag (``{prefix}``), so a transaction never spans cluster slots.
* **Expiry**: each task key carries a Redis TTL (the task's remaining ttl plus
  :data:`EXPIRY_GRACE_MS`), so Redis frees a forgotten task's payload by itself; the
  record's own clock (``time.time()`` in Python, which tests can freeze) decides when it
  is gone, checked on every read, and the indexes are swept at most once a minute when
  tasks are created, or by :meth:`RedisTaskStore.expire`.
* **wait** listens on one pub/sub channel (``<prefix>:tasks:changed``; every write
  publishes the task id) with one named listener thread per store, started by the first
  ``wait``; a waiter re-reads the task's plain fields (never its payload, which it reads
  once, when the wait ends) when its id is published, and at least once a second
  (:data:`WAIT_POLL`) in case a message was lost (pub/sub is at most once, and a reconnect
  loses what was sent meanwhile).
* **Budgets**: every call's Redis work shares one deadline (``call_timeout``, 10 s; a
  request's sooner one wins), passed to the client as the ambient deadline; a ``wait``'s
  work shares its ``timeout`` (plus :data:`WAIT_GRACE`).
* **Dead runners** across machines: a process that runs live tasks keeps a heartbeat key
  (``<prefix>:tasks:runner:<runner id>``) with a TTL (:data:`HEARTBEAT_TTL`), refreshed by
  one named daemon thread per store every third of it while the process has live tasks
  it created through this store. A live task whose runner's heartbeat is gone is marked
  ``failed`` with :data:`~mcpsync.tasks.sqlite.RUNNER_EXITED` when it is read, changed,
  listed, waited on, or by :meth:`RedisTaskStore.recover` (run when the store is made).

Redis that cannot be reached makes every method raise
:class:`~mcpsync.errors.StoreUnavailableError` (the HTTP app answers ``503``); the next
call tries again, so the store recovers by itself when Redis returns.

The parts: the key layout and a task's hash in :mod:`mcpsync.redis.task_records`; the
transactions and index upkeep in :mod:`mcpsync.redis.task_writes`; the heartbeat and
dead-runner recovery in :mod:`mcpsync.redis.task_runners`; ``wait`` and its listener in
:mod:`mcpsync.redis.task_waits`; here, the store's own methods.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import threading
import time
from dataclasses import replace
from typing import Any, Final, cast

import redis
from redis.client import Pipeline

from ..errors import StoreUnavailableError
from ..protocol.deadline import Deadline
from ..protocol.decoding import utf8_encodable
from ..stores.tasks import TaskRecord, TaskStoreCapabilities, TaskStoreFullError
from ..tasks.bounds import (
    MAX_LIVE_TASKS_PER_OWNER,
    MAX_RECORD_BYTES,
    MAX_STORE_BYTES,
    MAX_TASKS,
    MAX_TTL_MS,
    TaskResultTooLargeError,
    clamp_record_ttl,
    encode_payload,
    page_size,
    parse_cursor,
    record_size,
)
from ..tasks.changes import TaskChange, TaskChanges
from .client import connect
from .task_records import (
    _NO_PAYLOAD,
    _Entry,
    _Keys,
    _NeedRoom,
    _parse,
    _text,
)
from .task_runners import HEARTBEAT_TTL
from .task_waits import WAIT_GRACE, WAIT_POLL, TaskWaits
from .task_writes import CALL_TIMEOUT, EXPIRY_GRACE_MS, MAX_ATTEMPTS

__all__ = ["CALL_TIMEOUT", "EXPIRY_GRACE_MS", "HEARTBEAT_TTL", "MAX_ATTEMPTS", "WAIT_GRACE",
           "WAIT_POLL", "RedisTaskStore"]

log = logging.getLogger("mcpsync.redis.tasks")

#: Sweep every expired record at most this often (seconds), when a task is created.
SWEEP_INTERVAL: Final = 60.0
#: Seconds ``close()`` waits for the store's threads, all of them together.
JOIN_TIMEOUT: Final = 10.0


class RedisTaskStore(TaskWaits, TaskChanges):
    """Tasks in Redis, shared by threads, processes and machines.

    ``client`` is a :class:`redis.Redis` (give it socket timeouts: a Redis that stops
    answering must not hang a request) or a URL (the store then makes and owns a client
    with a 2 s connect and 5 s reply timeout). ``prefix`` names the deployment: stores with
    the same prefix on the same Redis share their tasks.

    Bounds as :class:`~mcpsync.tasks.memory.MemoryTaskStore`, same names and defaults
    (``max_bytes`` 256 MiB of payload, counted across every process sharing the prefix).
    ``heartbeat_ttl``: seconds after which a silent runner's live tasks are failed.
    ``call_timeout``: seconds one call may spend on Redis in all (every command and retry;
    a request's own deadline, when sooner, wins); then ``StoreUnavailableError``.
    ``recover=False`` skips :meth:`recover` when the store is made.
    """

    def __init__(self, client: redis.Redis | str, *, prefix: str = "mcpsync",
                 max_live_per_owner: int = MAX_LIVE_TASKS_PER_OWNER,
                 max_tasks: int = MAX_TASKS, max_bytes: int = MAX_STORE_BYTES,
                 max_record_bytes: int = MAX_RECORD_BYTES, max_ttl_ms: int = MAX_TTL_MS,
                 heartbeat_ttl: float = HEARTBEAT_TTL, call_timeout: float = CALL_TIMEOUT,
                 recover: bool = True) -> None:
        self._redis, self._owns_client = connect(client), not isinstance(client, redis.Redis)
        self.prefix = prefix
        self.max_live_per_owner = max_live_per_owner
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.max_record_bytes = max_record_bytes
        self.max_ttl_ms = max_ttl_ms
        if heartbeat_ttl <= 0:
            raise ValueError("heartbeat_ttl must be positive")
        self.heartbeat_ttl = heartbeat_ttl
        if call_timeout <= 0:
            raise ValueError("call_timeout must be positive")
        self.call_timeout = call_timeout
        self._keys = _Keys(prefix)
        self._lock = threading.Lock()
        self._closed = False
        self._stop = threading.Event()
        self._pid = os.getpid()
        self._last_sweep = time.time()
        #: waiters of this process: task id -> their events (one per waiting thread)
        self._watchers: dict[str, set[threading.Event]] = {}
        self._listener: threading.Thread | None = None
        self._listening = threading.Event()
        self._listener_down = False  # its last attempt failed: nobody waits for it then
        #: live tasks this process runs, created through this store (for the heartbeat)
        self._mine: set[str] = set()
        self._heart: threading.Thread | None = None
        self._alive: dict[str, float] = {}  # runner -> believed alive until (monotonic)
        try:
            self._warn_if_evicting()
            if recover:
                self.recover()
        except StoreUnavailableError as exc:  # a server may start while Redis is away
            log.warning("task store: recovery skipped: %s", exc)

    # -- the TaskStore protocol -------------------------------------------------------------

    @property
    def capabilities(self) -> TaskStoreCapabilities:
        """It fails a dead runner's tasks on demand (:meth:`recover`)."""
        return TaskStoreCapabilities(recovers=self)

    def create(self, record: TaskRecord) -> None:
        self._check()
        if not (utf8_encodable(record.task_id) and utf8_encodable(record.owner)):
            raise ValueError("a task's id and owner must be valid Unicode (no lone "
                             "surrogates): Redis keys are UTF-8")
        record = clamp_record_ttl(record, self.max_ttl_ms)
        texts = {f: t for f, t in encode_payload(vars(record)).items() if t is not None}
        size = record_size(record, texts)
        if size > self.max_record_bytes:
            raise TaskResultTooLargeError(f"the task's payload is {size} bytes; a task may "
                                          f"hold {self.max_record_bytes}")
        k, task_id = self._keys, record.task_id
        with self._call("creating a task") as deadline:
            seq = int(self._redis.incr(k.seq))
            finished = int(self._redis.incr(k.finished)) if record.terminal else None
            entry = _Entry(replace(record, **_NO_PAYLOAD), texts, seq, size)
            now = time.time()
            if now - self._last_sweep >= SWEEP_INTERVAL:
                self._sweep(now, deadline.within(deadline.remaining() / 2))

            def create(pipe: Pipeline) -> None:
                now = time.time()
                old = _parse(pipe.hgetall(k.task(task_id)))
                meta = pipe.hget(k.index, task_id)
                if old is not None and not old.record.expired(now):
                    raise KeyError(task_id)
                stale: tuple[str, int] | None = None
                if old is not None:
                    stale = (old.record.owner, old.size)
                elif meta is not None:
                    owner, old_size = json.loads(_text(meta))
                    stale = (owner, old_size)
                if not record.terminal and \
                        pipe.scard(k.live(record.owner)) >= self.max_live_per_owner:
                    raise _NeedRoom("owner")
                if int(pipe.zcard(k.all)) - (stale is not None) >= self.max_tasks:
                    raise _NeedRoom("count")
                total = int(pipe.get(k.bytes) or 0) - (stale[1] if stale else 0)
                if total + size > self.max_bytes:
                    raise _NeedRoom("bytes")
                pipe.multi()
                if stale is not None:
                    self._forget_queued(pipe, task_id, stale[0], stale[1])
                self._write(pipe, entry, None, finished)

            for _ in range(self.max_tasks + 3):
                deadline.check()
                try:
                    self._tx(create, k.task(task_id), k.live(record.owner), k.all, k.bytes,
                             k.index)
                    break
                except _NeedRoom as need:
                    if not self._free(need.bound, record.owner, None, deadline):
                        raise TaskStoreFullError(self._full_message(need.bound)) from None
            else:
                raise TaskStoreFullError(self._full_message("bytes"))
        self._wake(task_id)
        self._track(record)

    def get(self, task_id: str, owner: str | None = None) -> TaskRecord | None:
        self._check()
        if not (utf8_encodable(task_id) and (owner is None or utf8_encodable(owner))):
            return None  # no such task can exist (see create)
        with self._call("reading a task"):
            entry = self._load(task_id)
        if entry is None or (owner is not None and entry.record.owner != owner):
            return None
        return entry.decode()

    def _change(self, key: str, change: TaskChange) -> TaskRecord | None:
        """The one read-modify-write, as one optimistic transaction on the task's key."""
        self._check()
        task_id, owner = key, change.owner
        if not (utf8_encodable(task_id) and (owner is None or utf8_encodable(owner))):
            return None  # no such task can exist (see create)
        k = self._keys

        def apply(pipe: Pipeline) -> _Entry | None:
            entry = _parse(pipe.hgetall(k.task(task_id)))
            if entry is None or entry.record.expired() or (
                    owner is not None and entry.record.owner != owner):
                return None
            if entry.record.terminal:
                return entry
            if self._runner_dead(pipe, entry.record.runner):
                new = self._failed(entry)
                pipe.multi()
                self._write(pipe, new, entry, int(self._redis.incr(k.finished)))
                return new
            texts = change.texts(entry.texts)
            record = entry.record.evolve(**change.plain)
            new = _Entry(record, texts, entry.seq, record_size(record, texts))
            if new.size > entry.size:
                if new.size > self.max_record_bytes:
                    raise TaskResultTooLargeError(
                        f"the task's payload would be {new.size} bytes; a task may hold "
                        f"{self.max_record_bytes}")
                pipe.watch(k.bytes)  # type: ignore[no-untyped-call, unused-ignore]
                if int(pipe.get(k.bytes) or 0) + new.size - entry.size > self.max_bytes:
                    raise _NeedRoom("bytes")
            finished = int(self._redis.incr(k.finished)) if record.terminal else None
            pipe.multi()
            self._write(pipe, new, entry, finished)
            return new

        with self._call("changing a task") as deadline:
            for _ in range(self.max_tasks + 3):
                deadline.check()
                try:
                    entry = self._tx(apply, k.task(task_id))
                    break
                except _NeedRoom:
                    if not self._free("bytes", "", task_id, deadline):
                        raise TaskResultTooLargeError(
                            "the server's task store is full of running tasks") from None
            else:
                raise TaskResultTooLargeError("the server's task store is full of running "
                                              "tasks")
        if entry is None:
            return None
        self._wake(task_id)
        self._track(entry.record)
        return entry.decode()

    def take_responses(self, task_id: str, keys: builtins.list[str]) -> dict[str, Any]:
        self._check()
        if not utf8_encodable(task_id):
            return {}  # no such task can exist (see create)
        k = self._keys

        def take(pipe: Pipeline) -> dict[str, Any]:
            entry = _parse(pipe.hgetall(k.task(task_id)))
            if entry is None or entry.record.expired():
                return {}
            taken, texts = entry.take_responses(keys)
            if taken:
                record = entry.record.evolve()
                pipe.multi()
                self._write(pipe, _Entry(record, texts, entry.seq, record_size(record, texts)),
                            entry)
            return taken

        with self._call("taking a task's answers"):
            taken = self._tx(take, k.task(task_id))
        if taken:
            self._wake(task_id)
        return taken

    def expire(self, now: float | None = None) -> int:
        """Forget every task expired at ``now``: how many. Each batch has a budget of its
        own (half of ``call_timeout``), so no number of tasks makes it fail on a Redis
        that answers, and a Redis that does not fails it within one ``call_timeout``."""
        self._check()
        at = time.time() if now is None else now
        total = 0
        while True:
            with self._call("expiring tasks") as deadline:
                count, done = self._sweep(at, deadline.within(self.call_timeout / 2))
            total += count
            if done or not count:
                return total

    def close(self) -> None:
        """Stop the store's threads (joined, bounded) and close a client it made."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = [t for t in (self._listener, self._heart) if t is not None]
            self._stop.set()
            self._listening.set()
        joined = Deadline(JOIN_TIMEOUT, "closing the task store")  # all threads together
        for thread in threads:
            if thread.ident != threading.get_ident():
                thread.join(joined.remaining())
        if self._owns_client:
            self._redis.close()

    def __enter__(self) -> RedisTaskStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list(self, owner: str, cursor: str | None = None,
             limit: int = 50) -> tuple[builtins.list[TaskRecord], str | None]:
        self._check()
        after = parse_cursor(cursor)
        size = page_size(limit)
        now = time.time()
        with self._call("listing tasks"):
            if after > int(self._redis.get(self._keys.seq) or 0):
                raise ValueError("unknown cursor")
            if not utf8_encodable(owner):
                return [], None  # no such owner's task can exist (see create)
            page: builtins.list[_Entry] = []
            more = False
            start = after
            while not more:
                ids = cast("list[tuple[bytes, float]]", self._redis.zrangebyscore(
                    self._keys.owner(owner), f"({start}", "+inf", start=0, num=size + 1,
                    withscores=True))
                if not ids:
                    break
                with self._redis.pipeline(transaction=False) as pipe:
                    for raw, _ in ids:
                        pipe.hgetall(self._keys.task(_text(raw)))
                    rows = pipe.execute()
                for (raw, score), row in zip(ids, rows, strict=True):
                    start = int(score)
                    entry = _parse(row)
                    if entry is None or entry.record.expired(now):
                        continue
                    if len(page) == size:
                        more = True
                        break
                    if not entry.record.terminal and self._runner_dead(self._redis,
                                                                       entry.record.runner):
                        entry = self._load(_text(raw), now)  # a dead runner's task fails
                        if entry is None:
                            continue
                    page.append(entry)
                if len(ids) < size + 1:
                    break
        next_cursor = str(page[-1].seq) if more else None
        return [e.decode() for e in page], next_cursor
