"""Runners across machines for the Redis task store: the heartbeat, and dead-runner recovery.

A process that runs live tasks keeps a heartbeat key (``<prefix>:tasks:runner:<runner
id>``) with a TTL (:data:`HEARTBEAT_TTL`), refreshed by one named daemon thread per store
(:meth:`RunnerTracking._beat`) every third of it while the process has live tasks it
created through the store. A live task whose runner's heartbeat is gone is marked
``failed`` with :data:`~mcpsync.tasks.sqlite.RUNNER_EXITED` when it is read
(:meth:`RunnerTracking._load`) or by :meth:`RunnerTracking.recover`; and making room when
a bound is reached (:meth:`RunnerTracking._free`), which needs that judgement too (a dead
runner's task no longer counts as live). A layer between the transactions
(:mod:`mcpsync.redis.task_writes`) and the store (:mod:`mcpsync.redis.tasks`), which
inherits it.
"""

from __future__ import annotations

import builtins
import logging
import threading
import time
from typing import Final

import redis
from redis.client import Pipeline

from ..protocol.deadline import Deadline
from ..stores.tasks import TaskRecord, runner_id
from ..tasks.bounds import encode, record_size
from ..tasks.sqlite import RUNNER_EXITED
from .client import UNAVAILABLE
from .task_records import _Entry, _parse, _plain, _text
from .task_writes import TaskWrites

log = logging.getLogger("mcpsync.redis.tasks")

#: Seconds a runner's heartbeat lives without a refresh; refreshed every third of it. A
#: live task whose runner has not refreshed it for this long is marked ``failed``.
HEARTBEAT_TTL: Final = 30.0
#: Seconds a runner found alive is believed alive without asking Redis again.
ALIVE_CACHE_SECONDS: Final = 1.0
#: Runners remembered as alive at once (the cache above).
ALIVE_CACHE_SIZE: Final = 1024


class RunnerTracking(TaskWrites):
    """The heartbeat of this process's runner and the failing of dead runners' tasks."""

    def _runner_dead(self, reader: redis.Redis | Pipeline, runner: str) -> bool:
        if not runner or runner == runner_id():
            return False
        now = time.monotonic()
        with self._lock:
            if self._alive.get(runner, 0.0) > now:
                return False
        if reader.exists(self._keys.runner(runner)):
            with self._lock:
                if len(self._alive) >= ALIVE_CACHE_SIZE:
                    self._alive.clear()
                self._alive[runner] = now + ALIVE_CACHE_SECONDS
            return False
        return True

    @staticmethod
    def _failed(entry: _Entry) -> _Entry:
        texts = {f: t for f, t in entry.texts.items() if f != "input_requests"}
        texts["error"] = encode(RUNNER_EXITED)
        # The status names the process that was lost (host and pid), for the operator.
        host, _, rest = entry.record.runner.partition(":")
        where = f" (pid {rest.partition(':')[0]} on {host})" if rest else ""
        new = entry.record.evolve(status="failed",
                                  status_message=f"{RUNNER_EXITED['message']}{where}")
        return _Entry(new, texts, entry.seq, record_size(new, texts))

    def _fail_dead(self, task_id: str) -> _Entry | None:
        """Mark the task failed if it is live and its runner's heartbeat is gone; the
        entry after (or as it is)."""
        k = self._keys

        def fail(pipe: Pipeline) -> _Entry | None:
            entry = _parse(pipe.hgetall(k.task(task_id)))
            if entry is None or entry.record.terminal \
                    or not self._runner_dead(pipe, entry.record.runner):
                return entry
            new = self._failed(entry)
            pipe.multi()
            self._write(pipe, new, entry, int(self._redis.incr(k.finished)))
            return new

        entry = self._tx(fail, k.task(task_id))
        self._wake(task_id)
        return entry

    def _load(self, task_id: str, now: float | None = None) -> _Entry | None:
        """The task as it is (``None`` if absent or expired, which is then forgotten); a
        live task whose runner is gone is marked failed first."""
        entry = _parse(self._redis.hgetall(self._keys.task(task_id)))
        if entry is None:
            return None
        if entry.record.expired(now):
            self._forget(task_id, time.time() if now is None else now)
            return None
        if not entry.record.terminal and self._runner_dead(self._redis, entry.record.runner):
            return self._fail_dead(task_id)
        return entry

    def _glance(self, task_id: str) -> TaskRecord | None:
        """The task's plain fields as they are, without its payload (``None`` if absent or
        expired, which is then forgotten; a dead runner's live task is failed first): what
        a waiter re-checks, so that watching a big task costs little."""
        record = _plain(self._redis.hget(self._keys.task(task_id), "r"))
        if record is None:
            return None
        if record.expired():
            self._forget(task_id, time.time())
            return None
        if not record.terminal and self._runner_dead(self._redis, record.runner):
            entry = self._fail_dead(task_id)
            return None if entry is None else entry.record
        return record

    def recover(self) -> int:
        """Mark ``failed`` the live tasks whose runner's heartbeat has expired (on any
        machine); how many. Runs when the store is made; also done for each task when it
        is read."""
        self._check()
        failed = 0
        with self._call("recovering tasks"):
            running = self._redis.hgetall(self._keys.running)
        by_runner: dict[str, builtins.list[str]] = {}
        for raw_id, raw_runner in running.items():
            by_runner.setdefault(_text(raw_runner), []).append(_text(raw_id))
        for runner, ids in by_runner.items():  # each step a call of its own: any number fit
            with self._call("recovering tasks"):
                if not self._runner_dead(self._redis, runner):
                    continue
            for task_id in ids:
                with self._call("recovering tasks"):
                    before = _parse(self._redis.hgetall(self._keys.task(task_id)))
                    after = self._fail_dead(task_id)
                    if before is None or after is None:
                        self._redis.hdel(self._keys.running, task_id)
                    elif not before.record.terminal and after.record.terminal:
                        failed += 1
        return failed

    def _track(self, record: TaskRecord) -> None:
        """Keep this process's heartbeat while it runs ``record`` (live, run here)."""
        if record.runner != runner_id():
            return
        with self._lock:
            if record.terminal:
                self._mine.discard(record.task_id)
                return
            self._mine.add(record.task_id)
            if self._heart is None and not self._closed:
                self._heart = threading.Thread(target=self._beat, daemon=True,
                                               name="mcpsync-redis-task-heartbeat")
                self._heart.start()

    def _beat(self) -> None:
        """Refresh the heartbeat every third of its ttl while this process has live tasks
        (forgetting those that ended); a Redis outage is logged once, not per beat."""
        stop, interval = self._stop, self.heartbeat_ttl / 3
        down = False
        while not stop.wait(interval):
            with self._lock:
                mine = builtins.list(self._mine)
            if not mine:
                continue
            try:  # a beat never outlives its interval, even on a Redis that stopped answering
                with Deadline(interval, "the task store's heartbeat").applied(), \
                        self._redis.pipeline(transaction=False) as pipe:
                    pipe.set(self._keys.runner(runner_id()), b"1", px=self._heartbeat_ms())
                    pipe.hmget(self._keys.running, mine)
                    _, running = pipe.execute()
            except UNAVAILABLE as exc:
                if not down:
                    log.warning("task store heartbeat: Redis is unavailable (%s); retrying",
                                type(exc).__name__)
                down = True
                continue
            if down:
                log.warning("task store heartbeat: Redis is back")
                down = False
            with self._lock:
                for task_id, runner in zip(mine, running, strict=True):
                    if runner is None:
                        self._mine.discard(task_id)

    # -- making room: what is no longer live gives its place up --------------------------

    def _free(self, bound: str, owner: str, keep: str | None, deadline: Deadline) -> bool:
        """Make room for ``bound`` (``owner``, ``count`` or ``bytes``); whether any was.
        A sweep on the way takes at most half of what is left of the call's ``deadline``."""
        now = time.time()
        sweep = deadline.within(deadline.remaining() / 2)
        if bound == "owner":
            return self._free_owner(owner, now)
        if bound == "count" and now - self._last_sweep >= 1.0 and self._sweep(now, sweep)[0]:
            return True
        return self._evict_terminal(keep) or self._sweep(now, sweep)[0] > 0

    def _free_owner(self, owner: str, now: float) -> bool:
        """Drop from the owner's live set what is no longer live (expired, gone, failed
        for a dead runner); whether any was. Reads each task's plain fields only (one
        round trip): an owner at its bound who keeps asking must not make every attempt
        read all its payloads."""
        live = self._keys.live(owner)
        ids = [_text(raw) for raw in self._redis.smembers(live)]
        with self._redis.pipeline(transaction=False) as pipe:
            for task_id in ids:
                pipe.hget(self._keys.task(task_id), "r")
            plains = pipe.execute()
        freed = False
        for task_id, raw in zip(ids, plains, strict=True):
            record = _plain(raw)
            if record is None or record.terminal:
                self._redis.srem(live, task_id)
                freed = True
            elif record.expired(now):
                freed = self._forget(task_id, now) or freed
            elif self._runner_dead(self._redis, record.runner):
                after = self._fail_dead(task_id)
                freed = freed or after is None or after.record.terminal
        return freed

    def _full_message(self, bound: str) -> str:
        if bound == "owner":
            return (f"this client has {self.max_live_per_owner} tasks running; wait for "
                    f"one to finish or cancel one")
        if bound == "count":
            return f"the server is running {self.max_tasks} tasks; try again later"
        return "the server's task store is full; try again later"
