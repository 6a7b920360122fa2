"""The transactions of the Redis task store: how a change is written, and what is forgotten.

:class:`TaskWrites` is the base of :class:`~mcpsync.redis.tasks.RedisTaskStore`: one
optimistic transaction (``WATCH`` / ``MULTI``, retried at most :data:`MAX_ATTEMPTS` times),
the writes that store a task with its indexes, and the deletes that forget it (expiry
sweeps, eviction of terminal tasks). Kept apart from the store's public methods so that
each reads on its own; the store's ``__init__`` sets every attribute declared here.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Final, TypeVar, cast

import redis
from redis.client import Pipeline

from ..errors import StoreUnavailableError
from ..protocol.deadline import Deadline, current
from ..stores.tasks import runner_id
from ..tasks.bounds import encode
from .client import unavailable
from .task_records import _Entry, _expires_at, _Keys, _plain, _text

log = logging.getLogger("mcpsync.redis.tasks")

#: A task key outlives the task's ttl by this much in Redis (milliseconds): the record's
#: own clock decides expiry, Redis only frees what nobody swept.
EXPIRY_GRACE_MS: Final = 60_000
#: Tries of one optimistic transaction before giving up with ``StoreUnavailableError``
#: (each retry follows a reply: another writer got in first; the call's budget bounds them
#: in time too).
MAX_ATTEMPTS: Final = 1000
#: Seconds one store call may spend on Redis in all, every command and retry included
#: (``RedisTaskStore(call_timeout=)``); a request's own deadline, when sooner, wins.
CALL_TIMEOUT: Final = 10.0
#: Expired tasks read from the expiry index at once by a sweep.
SWEEP_BATCH: Final = 500

T = TypeVar("T")


class TaskWrites:
    """Transactions and index upkeep over one prefix's keys (see the module)."""

    heartbeat_ttl: float
    call_timeout: float
    max_live_per_owner: int
    max_tasks: int
    _redis: redis.Redis
    _keys: _Keys
    _lock: threading.Lock
    _closed: bool
    _stop: threading.Event
    _pid: int
    _last_sweep: float
    #: waiters of this process: task id -> their events (one per waiting thread)
    _watchers: dict[str, set[threading.Event]]
    _listener: threading.Thread | None
    _listening: threading.Event
    _listener_down: bool
    #: live tasks this process runs, created through this store (for the heartbeat)
    _mine: set[str]
    _heart: threading.Thread | None
    _alive: dict[str, float]  # runner -> believed alive until (monotonic)

    def _check(self) -> None:
        if self._closed:
            raise RuntimeError("the Redis task store is closed")
        if self._pid != os.getpid():
            # Forked (gunicorn --preload): the threads did not follow, and a lock another
            # thread held at the fork would stay held forever; start afresh.
            self._lock = threading.Lock()
            self._pid = os.getpid()
            self._listener = self._heart = None
            self._listening = threading.Event()
            self._listener_down = False
            self._stop = threading.Event()
            self._mine = set()
            self._watchers = {}
            self._alive = {}

    @contextlib.contextmanager
    def _call(self, what: str, seconds: float | None = None) -> Iterator[Deadline]:
        """The budget of one store call: every Redis command in the block shares it
        (``seconds``, else :attr:`call_timeout`), as the ambient deadline the client
        honours, so a Redis that stops answering ends the call on time however many
        commands and retries it makes; running out, like Redis being away, is
        :class:`~mcpsync.errors.StoreUnavailableError`. A caller's deadline that ends
        sooner (a request's) stays in force."""
        budget = Deadline(self.call_timeout if seconds is None else seconds,
                          f"the task store ({what})")
        with unavailable(self._redis, what), budget.applied() as deadline:
            yield deadline

    def _warn_if_evicting(self) -> None:
        """Log a warning when Redis may evict keys: under ``allkeys-*`` the indexes (the
        byte total, the sequence: bounds and cursors would lie), under ``volatile-*`` the
        tasks themselves before their ttl. Silent where ``CONFIG GET`` is not allowed."""
        with self._call("reading Redis's eviction policy"):
            try:
                reply = cast("dict[bytes | str, bytes | str]",
                             self._redis.config_get("maxmemory-policy"))
            except redis.exceptions.ResponseError:  # renamed or refused (managed Redis, ACL)
                return
        policy = next((_text(v) for k, v in reply.items() if _text(k) == "maxmemory-policy"),
                      "noeviction")
        if policy != "noeviction":
            log.warning("task store: Redis has maxmemory-policy %s: it may evict the "
                        "store's keys when full (tasks lost before their ttl, bounds and "
                        "cursors wrong); use noeviction for the task store's Redis", policy)

    def _tx(self, fn: Callable[[Pipeline], T], *watch: str) -> T:
        """Run ``fn`` as an optimistic transaction over ``watch``: it reads through the
        pipeline (immediate while watching), calls ``multi()`` and queues its writes; they
        are executed here. Recomputed when another writer got in first, until the
        ambient budget (:meth:`_call`) runs out."""
        deadline = current()
        for _ in range(MAX_ATTEMPTS):
            if deadline is not None:
                deadline.check()
            with self._redis.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(*watch)  # type: ignore[no-untyped-call, unused-ignore]
                    result = fn(pipe)
                    if pipe.explicit_transaction:
                        pipe.execute()
                    return result
                except redis.WatchError:
                    continue
        raise StoreUnavailableError(f"the task store stayed too busy for {MAX_ATTEMPTS} "
                                    f"attempts of one change")

    def _write(self, pipe: Pipeline, entry: _Entry, old: _Entry | None,
               finished: int | None = None) -> None:
        """Queue the writes that store ``entry`` (replacing ``old``) and keep the indexes."""
        k, record = self._keys, entry.record
        task_id, owner = record.task_id, record.owner
        key = k.task(task_id)
        pipe.delete(key)
        pipe.hset(key, mapping=entry.fields())  # type: ignore[arg-type]
        expires = _expires_at(record)
        if expires is not None:
            remaining = max(0, int((expires - time.time()) * 1000))
            pipe.pexpire(key, remaining + EXPIRY_GRACE_MS)
            pipe.zadd(k.expiry, {task_id: expires})
        else:
            pipe.zrem(k.expiry, task_id)
        pipe.hset(k.index, task_id, encode([owner, entry.size]))
        pipe.incrby(k.bytes, entry.size - (old.size if old is not None else 0))
        if old is None:
            pipe.zadd(k.all, {task_id: entry.seq})
            pipe.zadd(k.owner(owner), {task_id: entry.seq})
        if record.terminal:
            if old is None or not old.record.terminal:
                pipe.zadd(k.terminal, {task_id: finished or 0})
            pipe.srem(k.live(owner), task_id)
            pipe.hdel(k.running, task_id)
        else:
            pipe.sadd(k.live(owner), task_id)
            if record.runner:
                pipe.hset(k.running, task_id, record.runner)
            if record.runner == runner_id():
                pipe.set(k.runner(record.runner), b"1", px=self._heartbeat_ms())
        pipe.publish(k.channel, task_id)

    def _forget_queued(self, pipe: Pipeline, task_id: str, owner: str | None,
                       size: int) -> None:
        k = self._keys
        pipe.delete(k.task(task_id))
        for index in (k.all, k.terminal, k.expiry):
            pipe.zrem(index, task_id)
        if owner is not None:
            pipe.zrem(k.owner(owner), task_id)
            pipe.srem(k.live(owner), task_id)
        pipe.hdel(k.running, task_id)
        pipe.hdel(k.index, task_id)
        pipe.incrby(k.bytes, -size)
        pipe.publish(k.channel, task_id)

    def _forget(self, task_id: str, now: float | None = None, *,
                only_terminal: bool = False) -> bool:
        """Delete a task and its index entries if it is expired at ``now`` (or, with
        ``only_terminal``, if it is terminal; with neither, whatever it is); whether it
        was deleted. Works for a task whose key Redis already dropped (its TTL). Reads the
        plain fields and the size, never the payload: deleting costs what the task is."""
        k = self._keys

        def forget(pipe: Pipeline) -> bool:
            raw, raw_size = pipe.hmget(k.task(task_id), ["r", "size"])
            record = None if raw_size is None else _plain(raw)
            meta = pipe.hget(k.index, task_id)
            if record is None and meta is None:
                pipe.multi()  # a stray id left in an index: clear it
                for index in (k.all, k.terminal, k.expiry):
                    pipe.zrem(index, task_id)
                pipe.hdel(k.running, task_id)
                return False
            if record is not None and raw_size is not None:
                if now is not None and not record.expired(now):
                    return False
                if only_terminal and not record.terminal:
                    return False
                owner, size = record.owner, int(raw_size)
            else:
                owner, size = json.loads(_text(meta))  # type: ignore[arg-type]
            pipe.multi()
            self._forget_queued(pipe, task_id, owner, size)
            return True

        done = self._tx(forget, k.task(task_id), k.index)
        if done:
            self._wake(task_id)
        return done

    def _sweep(self, now: float, until: Deadline) -> tuple[int, bool]:
        """Forget the tasks expired at ``now``, a batch at a time, until none is left or
        ``until`` has passed (the rest is the next sweep's: a call that sweeps on the way
        gives it only a share of its budget): how many, and whether it got to the end."""
        self._last_sweep = now
        count = 0
        while not until.expired():
            ids = cast("list[bytes]", self._redis.zrangebyscore(
                self._keys.expiry, "-inf", now, start=0, num=SWEEP_BATCH))
            if not ids:
                return count, True
            progressed = False
            for raw in ids:
                if until.expired():
                    return count, False
                if self._forget(_text(raw), now):
                    count += 1
                    progressed = True
            if not progressed:  # every one was renewed or a stray: stop, bounded
                return count, True
        return count, False

    def _evict_terminal(self, keep: str | None) -> bool:
        """Delete the task that became terminal first (not ``keep``); whether one was."""
        for raw in cast("list[bytes]", self._redis.zrange(self._keys.terminal, 0, 9)):
            task_id = _text(raw)
            if task_id != keep and self._forget(task_id, only_terminal=True):
                return True
        return False

    def _heartbeat_ms(self) -> int:
        return max(1, int(self.heartbeat_ttl * 1000))

    def _wake(self, task_id: str) -> None:
        """Wake this process's waiters on ``task_id`` (a write here, or one published)."""
        with self._lock:
            events = builtins.list(self._watchers.get(task_id, ()))
        for event in events:
            event.set()
