"""RedisTaskStore beyond the contract every store passes
(``tests/stores/test_task_store_contract.py``): two stores on one Redis are two machines
sharing tasks; a cancel through one wakes a wait on the other (a thread here, a real
process); a runner process SIGKILLed mid-task has its task failed once its heartbeat
expires; Redis killed and restarted gives ``StoreUnavailableError`` meanwhile, never a
hang, and the store works again after."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mcpsync.errors import StoreUnavailableError
from mcpsync.redis import task_waits
from mcpsync.redis.tasks import EXPIRY_GRACE_MS, RedisTaskStore
from mcpsync.tasks import RUNNER_EXITED, TaskRecord, runner_id
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import run_threads, wait_until
from tests.services import RedisServer, require_redis_library
from tests.stores.backends import make_record

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: The runners' heartbeat ttl in these tests: short, yet long enough that a loaded machine
#: (a refresh every third of it) does not let a live runner's heartbeat lapse.
HEARTBEAT = 4.0


@pytest.fixture
def make_store(redis_url: str, redis_prefix: str) -> Iterator[Any]:
    """Stores on the run's Redis, all with this test's prefix (one deployment), each with
    its own client (its own connections, as another machine would have)."""
    made: list[RedisTaskStore] = []

    def make(**options: Any) -> RedisTaskStore:
        store = RedisTaskStore(options.pop("url", redis_url),
                               prefix=options.pop("prefix", redis_prefix), **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.redis.task_worker", *args],
                            cwd=ROOT, env=_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _store_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcpsync-redis-task-")]


def _waiting(store: RedisTaskStore, task_id: str) -> bool:
    with store._lock:
        return task_id in store._watchers


def test_a_client_of_another_type_is_refused():
    with pytest.raises(TypeError):
        RedisTaskStore(42)  # type: ignore[arg-type]


def test_two_stores_share_tasks_answers_and_cursors(make_store):
    a, b = make_store(), make_store()
    records = [make_record(owner="alice", status="input_required") for _ in range(3)]
    for record in records:
        a.create(record)
    assert b.get(records[0].task_id, owner="alice") == records[0]
    assert b.get(records[0].task_id, owner="bob") is None
    b.answer(records[0].task_id, "alice", {"q": {"action": "accept"}})
    assert a.take_responses(records[0].task_id, ["q"]) == {"q": {"action": "accept"}}
    page, cursor = b.list("alice", limit=2)
    assert [r.task_id for r in page] == [r.task_id for r in records[:2]]
    rest, end = a.list("alice", cursor, limit=2)  # a cursor handed out by another machine
    assert [r.task_id for r in rest] == [records[2].task_id] and end is None
    done = a.update(records[1].task_id, status="completed", result={"content": []})
    assert b.update(records[1].task_id, status="working") == done  # terminal is final


def test_a_cancel_through_one_store_wakes_a_wait_on_the_other(make_store, monkeypatch):
    monkeypatch.setattr(task_waits, "WAIT_POLL", WAIT)  # only the published change can wake it
    a, b = make_store(), make_store()
    record = make_record()
    a.create(record)
    seen: list[TaskRecord | None] = []
    waiter = threading.Thread(target=lambda: seen.append(b.wait(record.task_id, 0, WAIT)),
                              name="t-redis-waiter")
    waiter.start()
    wait_until(lambda: _waiting(b, record.task_id), timeout=WAIT)
    t0 = time.monotonic()
    a.cancel(record.task_id, record.owner, "stop")
    waiter.join(WAIT)
    assert not waiter.is_alive()
    assert seen[0] is not None and seen[0].status == "cancelled"
    assert time.monotonic() - t0 < WAIT / 2


def test_a_cancel_from_another_process_wakes_a_wait(make_store, redis_url, redis_prefix,
                                                    monkeypatch):
    monkeypatch.setattr(task_waits, "WAIT_POLL", WAIT)
    store = make_store()
    record = make_record()
    store.create(record)
    results = run_threads(
        lambda i: store.wait(record.task_id, 0, WAIT) if i else _cancel_elsewhere(
            store, record, redis_url, redis_prefix), 3, name="t-redis-proc-cancel")
    assert results[0] == "cancelled"
    assert all(r is not None and r.status == "cancelled" for r in results[1:])


def _cancel_elsewhere(store: RedisTaskStore, record: TaskRecord, url: str,
                      prefix: str) -> str:
    wait_until(lambda: _waiting(store, record.task_id), timeout=WAIT)
    child = _worker("cancel", url, prefix, record.task_id, record.owner)
    out, _ = child.communicate(timeout=WAIT)
    assert child.returncode == 0, out
    return out.strip()


def test_task_keys_carry_a_redis_ttl(make_store, redis_url):

    store = make_store()
    short, keep = make_record(ttl_ms=5_000), make_record(ttl_ms=None)
    store.create(short)
    store.create(keep)
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        left = client.pttl(store._keys.task(short.task_id))
        assert 0 < left <= 5_000 + EXPIRY_GRACE_MS
        assert client.pttl(store._keys.task(keep.task_id)) == -1  # kept until evicted
    finally:
        client.close()


def test_a_live_runner_keeps_its_heartbeat_and_close_joins_the_threads(make_store,
                                                                       redis_url):

    before = set(_store_threads())
    store = make_store(heartbeat_ttl=HEARTBEAT)
    record = make_record(runner=runner_id())
    store.create(record)
    other = make_store(heartbeat_ttl=HEARTBEAT)
    # longer than a heartbeat's life later, the task is still working (it was refreshed)
    seen = other.wait(record.task_id, 0, timeout=HEARTBEAT * 1.5)
    assert seen is not None and seen.status == "working"
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        assert 0 < client.pttl(store._keys.runner(runner_id())) <= HEARTBEAT * 1000
    finally:
        client.close()
    started = set(_store_threads()) - before
    assert {t.name for t in started} == {"mcpsync-redis-task-heartbeat",
                                         "mcpsync-redis-task-listener"}
    store.close()
    other.close()
    assert not any(t.is_alive() for t in started)


def test_a_killed_runner_s_task_becomes_failed(make_store, redis_url, redis_prefix):
    store = make_store()
    child = _worker("hold", redis_url, redis_prefix, str(HEARTBEAT))
    try:
        assert child.stdout is not None
        task_id = child.stdout.readline().strip()
        record = store.get(task_id, owner="alice")
        assert record is not None and record.status == "working"
        assert record.runner.split(":")[1] == str(child.pid)
        still = store.wait(task_id, 0, timeout=HEARTBEAT * 1.5)  # alive: refreshed
        assert still is not None and still.status == "working"
        waiter: list[TaskRecord | None] = []
        watching = threading.Thread(target=lambda: waiter.append(
            store.wait(task_id, 0, timeout=WAIT)), name="t-redis-dead-waiter")
        watching.start()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(WAIT)
        watching.join(WAIT)
        assert not watching.is_alive()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(WAIT)
    failed = waiter[0]
    assert failed is not None and failed.status == "failed"
    assert failed.error == RUNNER_EXITED
    # The status names the process that was lost.
    assert failed.status_message == f"{RUNNER_EXITED['message']} (pid {child.pid} on " \
        f"{socket.gethostname()})"
    assert store.get(task_id) == failed
    assert store.list("alice")[0] == [failed]


def test_recover_fails_a_killed_runner_s_tasks(make_store, redis_url, redis_prefix):
    store = make_store()
    child = _worker("hold", redis_url, redis_prefix, str(HEARTBEAT))
    try:
        assert child.stdout is not None
        task_id = child.stdout.readline().strip()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(WAIT)
    counts: list[int] = []

    def recovered() -> bool:
        counts.append(store.recover())
        return counts[-1] > 0

    wait_until(recovered, timeout=WAIT, interval=0.2,
               message="the dead runner's task was never recovered")
    assert counts[-1] == 1
    assert store.recover() == 0
    after = make_store().get(task_id)  # a store opened later (recover=True) sees it failed
    assert after is not None and (after.status, after.error) == ("failed", RUNNER_EXITED)


def test_redis_down_is_store_unavailable_then_the_store_recovers(monkeypatch):
    require_redis_library()
    monkeypatch.setattr(task_waits, "WAIT_POLL", WAIT)
    with RedisServer() as server:
        store = RedisTaskStore(server.url, prefix="down")
        other = RedisTaskStore(server.url, prefix="down")
        try:
            record = make_record()
            store.create(record)
            assert other.wait(record.task_id, 99, timeout=0.01) is not None  # listening
            server.kill()
            for call in (lambda: store.create(make_record()),
                         lambda: store.get(record.task_id),
                         lambda: store.update(record.task_id, status_message="x"),
                         lambda: store.cancel(record.task_id, record.owner),
                         lambda: store.answer(record.task_id, record.owner, {"k": 1}),
                         lambda: store.take_responses(record.task_id, ["k"]),
                         lambda: store.list(record.owner),
                         lambda: store.wait(record.task_id, 0, timeout=1.0),
                         lambda: store.expire(),
                         lambda: store.recover()):
                t0 = time.monotonic()
                with pytest.raises(StoreUnavailableError):
                    call()
                assert time.monotonic() - t0 < 20.0  # never a hang
            assert isinstance(StoreUnavailableError("x"), OSError)
            server.start()

            def back() -> bool:
                try:
                    store.create(fresh := make_record())
                except StoreUnavailableError:
                    return False
                return store.get(fresh.task_id) == fresh

            wait_until(back, timeout=WAIT, interval=0.1,
                       message="the store never worked again after Redis came back")
            assert store.get(record.task_id) is None  # that Redis kept nothing
            # the listener reconnects: a change made through one wakes a wait on the other
            wait_until(other._listening.is_set, timeout=WAIT,
                       message="the listener never subscribed again")
            again = make_record()
            store.create(again)
            seen = run_threads(lambda i: other.wait(again.task_id, 0, WAIT) if i else (
                wait_until(lambda: _waiting(other, again.task_id), timeout=WAIT),
                store.cancel(again.task_id, again.owner))[1], 2, name="t-redis-back")
            assert seen[1] is not None and seen[1].status == "cancelled"
        finally:
            store.close()
            other.close()


def test_a_store_made_while_redis_is_down_starts_and_works_later():
    require_redis_library()
    with RedisServer() as server:
        url = server.url
        server.kill()
        store = RedisTaskStore(url, prefix="later")  # recovery is skipped, not fatal
        try:
            with pytest.raises(StoreUnavailableError):
                store.get("x")
            server.start()
            record = make_record()
            wait_until(lambda: _creates(store, record), timeout=WAIT, interval=0.1)
            assert store.get(record.task_id) == record
        finally:
            store.close()


def _creates(store: RedisTaskStore, record: TaskRecord) -> bool:
    try:
        store.create(record)
    except StoreUnavailableError:
        return False
    return True


def test_prefixes_keep_deployments_apart(make_store, redis_prefix):
    a = make_store()
    b = make_store(prefix=redis_prefix + "-other")
    record = make_record()
    a.create(record)
    assert b.get(record.task_id) is None
    assert b.list(record.owner) == ([], None)
    b.create(record)  # the same id is free there
    assert secrets.compare_digest(a.get(record.task_id).task_id,  # type: ignore[union-attr]
                                  b.get(record.task_id).task_id)  # type: ignore[union-attr]


# -- two servers (two machines) on one Redis task store ------------------------------------


@pytest.fixture
def two_servers(redis_url: str, redis_prefix: str) -> Iterator[tuple[Any, Any]]:
    """Two 2026-07-28 peers of two task servers that share only the Redis task store."""
    from tests.tasks.peers import Peer
    from tests.tasks.task_server import make_server

    servers = [make_server(task_store=RedisTaskStore(redis_url, prefix=redis_prefix))
               for _ in range(2)]
    peers = [Peer("memory", "modern", server=server) for server in servers]
    yield peers[0], peers[1]
    for peer in peers:
        peer.close()
    for server in servers:
        server.close_tasks()
        server.task_store.close()


def _settle(peer: Any, task_id: str, *statuses: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def reached() -> bool:
        seen.update(peer.result("tasks/get", {"taskId": task_id}))
        return seen["status"] in statuses

    wait_until(reached, timeout=WAIT, interval=0.05,
               message=lambda: f"task {task_id} stuck at {seen.get('status')}")
    return seen


def test_a_task_started_on_one_server_is_answered_and_read_through_the_other(two_servers):
    a, b = two_servers
    created = a.result("tools/call", {"name": "ask_name", "arguments": {}})
    task_id = created["taskId"]
    waiting = _settle(b, task_id, "input_required")
    [key] = waiting["inputRequests"]
    b.result("tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"name": "Ada"}}}})
    done = _settle(b, task_id, "completed")
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"
    assert _settle(a, task_id, "completed")["result"] == done["result"]


def test_a_cancel_through_one_server_stops_the_task_running_on_the_other(two_servers):
    a, b = two_servers
    task_id = a.result("tools/call", {"name": "slow", "arguments": {"seconds": WAIT}})["taskId"]
    _settle(b, task_id, "working")
    t0 = time.monotonic()
    b.result("tasks/cancel", {"taskId": task_id})
    assert _settle(a, task_id, "cancelled")["status"] == "cancelled"
    assert time.monotonic() - t0 < WAIT / 2  # the runner's sleep woke, it did not run out


# -- accounting, clients, fork, docs -------------------------------------------------------


def test_the_running_byte_total_matches_the_records(make_store, redis_url):
    """The byte bound reads a running total; every kind of write keeps it right."""

    store = make_store(max_tasks=5, max_bytes=20_000)
    records = [make_record(ttl_ms=1000 if i % 2 else None, status="input_required")
               for i in range(5)]
    for record in records:
        store.create(record)
    store.answer(records[0].task_id, "alice", {"a": "x" * 3000})
    store.take_responses(records[0].task_id, ["a"])
    store.update(records[1].task_id, status="completed", result={"t": "y" * 5000})
    store.cancel(records[2].task_id, "alice")
    store.create(make_record())  # evicts the first to finish
    store.expire(now=records[3].created_at + 2)
    store.create(make_record(runner="elsewhere:1:gone"))
    store.recover()
    client = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        keys = store._keys
        index = {k.decode(): json.loads(v) for k, v in client.hgetall(keys.index).items()}
        assert int(client.get(keys.bytes) or 0) == sum(size for _, size in index.values())
        assert client.zcard(keys.all) == len(index)
        for task_id, (_, size) in index.items():
            stored = store._load(task_id)
            assert stored is not None and stored.size == size
        assert client.scard(keys.live("alice")) == sum(
            1 for task_id in index if not store._load(task_id).record.terminal)  # type: ignore[union-attr]
    finally:
        client.close()


def test_a_client_that_decodes_responses_works_too(redis_url, redis_prefix):

    client = redis.Redis.from_url(redis_url, socket_timeout=5, decode_responses=True)
    store = RedisTaskStore(client, prefix=redis_prefix)
    try:
        record = make_record(input_requests={"q": {"é": "ü"}})
        store.create(record)
        assert store.get(record.task_id) == record
        assert store.list(record.owner) == ([record], None)
        assert store.wait(record.task_id, 0, timeout=0.05) == record
    finally:
        store.close()
        client.close()  # a client given to the store is the caller's to close


def _use_after_fork(store: RedisTaskStore, task_id: str, report: Any) -> None:
    try:
        record = make_record(task_id=task_id, runner=runner_id())
        store.create(record)
        seen = store.wait(task_id, 0, timeout=WAIT)  # the parent cancels it
        report.put(("ok", None if seen is None else seen.status,
                    sorted(t.name for t in _store_threads())))
    except BaseException as exc:  # reported to the parent
        report.put(("error", repr(exc), []))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_store_made_before_a_fork_works_in_the_child(make_store):
    """gunicorn --preload: the store is made in the master, its threads do not follow."""
    store = make_store()
    store.wait("warm-up", 0, timeout=0.01)  # the parent's listener runs
    context = multiprocessing.get_context("fork")
    report = context.Queue()
    task_id = make_record().task_id
    child = context.Process(target=_use_after_fork, name="t-redis-forked",
                            args=(store, task_id, report))
    child.start()
    try:
        wait_until(lambda: store.get(task_id) is not None, timeout=WAIT)
        store.cancel(task_id, "alice")
        outcome = report.get(timeout=WAIT)
        child.join(WAIT)
    finally:
        if child.is_alive():
            child.kill()
            child.join(WAIT)
    assert outcome == ("ok", "cancelled", ["mcpsync-redis-task-heartbeat",
                                           "mcpsync-redis-task-listener"])
    assert child.exitcode == 0


def _doc_block(page: str, needle: str, url: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"),
                        re.S)
    [block] = [b for b in blocks if needle in b]
    return block.replace("redis://redis.internal:6379/0", url)


def test_the_docs_example_of_the_redis_store(redis_url):
    namespace: dict[str, Any] = {}
    exec(compile(_doc_block("tasks.md", "RedisTaskStore(", redis_url), "tasks.md", "exec"),
         namespace)
    server = namespace["server"]
    try:
        assert isinstance(server.task_store, RedisTaskStore)
        assert callable(namespace["app"])
    finally:
        server.task_store.close()
