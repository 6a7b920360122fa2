"""RedisTaskStore attacked where Redis shows through: ids and owners become parts of key
names (``:``, ``*``, ``{}``, newlines, NUL, lone surrogates, megabytes), an id of another
prefix, another owner's task through every door, two processes writing one task at once,
a record over the bound, and a Redis whose own memory is full."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from mcpsync.errors import StoreUnavailableError
from mcpsync.redis.tasks import RedisTaskStore
from mcpsync.tasks import TaskResultTooLargeError, TaskStoreFullError
from tests.helpers import LONG_WAIT as WAIT
from tests.helpers import run_threads
from tests.services import RedisServer, require_redis_library
from tests.stores.backends import make_record

ROOT = Path(__file__).resolve().parents[2]

#: Ids and owners that are key syntax somewhere: separators, globs, hash tags, line
#: breaks, NUL, path-looking, empty, and a megabyte.
CRAFTED = ["a:b", "a:*", "*", "?", "[a-z]", "{x}", "}{", "{", "a\r\nPING\r\n", "\x00",
           "../task", "", "é" * 3, "x" * 1_000_000]
#: Lone surrogates: JSON can carry them (``"\\ud800"``), UTF-8 cannot.
UNENCODABLE = ["\ud800", "a\udfffb"]


@pytest.fixture
def make_store(redis_url: str, redis_prefix: str) -> Iterator[Any]:
    made: list[RedisTaskStore] = []

    def make(**options: Any) -> RedisTaskStore:
        store = RedisTaskStore(options.pop("url", redis_url),
                               prefix=options.pop("prefix", redis_prefix), **options)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.mark.parametrize("text", CRAFTED, ids=lambda t: repr(t[:12]))
def test_crafted_ids_and_owners_are_plain_names(make_store, text):
    store = make_store()
    by_id = make_record(task_id=text, owner="alice")
    store.create(by_id)
    mine = make_record(owner=text)
    store.create(mine)
    assert store.get(text, owner="alice") == by_id
    assert store.get(text, owner="bob") is None
    assert store.get(mine.task_id, owner=text) == mine
    assert store.list(text) == ([mine], None)
    assert store.list("alice") == ([by_id], None)
    # nothing that looks like a pattern matches another key
    for near in {text + "x", text[:-1], text.upper()} - {text}:
        assert store.get(near) is None
        assert store.list(near) == ([], None)
    done = store.cancel(text, "alice")
    assert done is not None and done.status == "cancelled"
    assert store.wait(text, 0, timeout=1.0) == done


def test_owners_that_extend_each_other_stay_apart(make_store):
    store = make_store(max_live_per_owner=1)
    for owner in ("a", "a:b", "a:b:c", "a*", "{a}"):
        store.create(make_record(owner=owner))  # each has its own live-task bound
    assert [len(store.list(o)[0]) for o in ("a", "a:b", "a:b:c", "a*", "{a}")] == [1] * 5


@pytest.mark.parametrize("text", UNENCODABLE, ids=repr)
def test_an_id_or_owner_with_a_lone_surrogate_is_an_unknown_task(make_store, text):
    """Before: every method raised ``UnicodeEncodeError`` (a ``tasks/get`` from any client
    with ``"taskId": "\\ud800"`` was an internal error); now absence, as on the memory
    store, and ``create`` refuses such a record with a ``ValueError``."""
    store = make_store()
    real = make_record(owner="alice", status="input_required")
    store.create(real)
    assert store.get(text) is None
    assert store.get(text, owner="alice") is None
    assert store.get(real.task_id, owner=text) is None
    assert store.update(text, status="completed", result={}) is None
    assert store.cancel(text, "alice") is None
    assert store.cancel(real.task_id, text) is None
    assert store.answer(text, "alice", {"k": 1}) is None
    assert store.answer(real.task_id, text, {"k": 1}) is None
    assert store.take_responses(text, ["k"]) == {}
    assert store.wait(text, 0, timeout=1.0) is None
    assert store.list(text) == ([], None)
    with pytest.raises(ValueError):
        store.list(text, "999999")  # an unknown cursor is still refused
    for record in (make_record(task_id=text), make_record(owner=text)):
        with pytest.raises(ValueError, match="Unicode"):
            store.create(record)
    assert store.get(real.task_id) == real


def test_an_id_of_another_prefix_is_unknown_through_every_door(make_store, redis_prefix):
    ours = make_store()
    theirs = make_store(prefix=redis_prefix + "-theirs")
    record = make_record(owner="alice", status="input_required")
    theirs.create(record)
    key = theirs._keys.task(record.task_id)
    for task_id in (record.task_id, key, f"}}:tasks:task:{record.task_id}",
                    f"../{redis_prefix}-theirs}}:tasks:task:{record.task_id}"):
        assert ours.get(task_id) is None
        assert ours.cancel(task_id, "alice") is None
        assert ours.answer(task_id, "alice", {"k": 1}) is None
        assert ours.update(task_id, status="completed", result={}) is None
        assert ours.take_responses(task_id, ["k"]) == {}
    assert theirs.get(record.task_id) == record


def test_another_owner_cannot_read_a_result_or_answers(make_store):
    """The contract's cross-owner test, for what a finished task holds."""
    store = make_store()
    record = make_record(owner="alice", status="input_required")
    store.create(record)
    store.answer(record.task_id, "alice", {"q": {"secret": 1}})
    assert store.answer(record.task_id, "bob", {"q": {"forged": 1}}) is None
    assert store.get(record.task_id, owner="bob") is None
    done = store.update(record.task_id, status="completed", result={"secret": "s3cr3t"})
    assert done is not None and done.input_responses == {"q": {"secret": 1}}
    assert store.get(record.task_id, owner="bob") is None
    assert store.cancel(record.task_id, "bob") is None
    assert store.list("bob") == ([], None)
    assert store.get(record.task_id, owner="alice") == done


def test_a_record_over_the_bound_is_refused_when_created(make_store):
    store = make_store(max_record_bytes=10_000)
    big = make_record(input_requests={"q": {"text": "x" * 20_000}})
    with pytest.raises(TaskResultTooLargeError):
        store.create(big)
    assert store.get(big.task_id) is None
    with pytest.raises(TaskResultTooLargeError):
        store.create(make_record(tool="t" * 20_000))
    assert store.list(big.owner) == ([], None)


def test_two_processes_and_threads_writing_one_task_lose_nothing(make_store, redis_url,
                                                                 redis_prefix):
    store = make_store()
    shared = make_record(status="input_required")
    store.create(shared)
    threads, rounds = 3, 40
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    others = [subprocess.Popen([sys.executable, "-m", "tests.redis.task_worker", "hammer",
                                redis_url, redis_prefix, shared.task_id, str(threads),
                                str(rounds)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
              for _ in range(2)]

    def here(i: int) -> None:
        for j in range(rounds):
            own = make_record(owner=f"here-{i}")
            store.create(own)
            store.answer(shared.task_id, "alice", {f"here-{i}-{j}": j})
            store.update(own.task_id, status="completed", result={"n": j})

    try:
        run_threads(here, threads, name="t-redis-hammer", timeout=WAIT)
    finally:
        outs = [p.communicate(timeout=WAIT) for p in others]
    assert [(p.returncode, out) for p, (out, _) in zip(others, outs, strict=True)] == [
        (0, "ok\n")] * 2, [err for _, err in outs]
    after = store.get(shared.task_id)
    assert after is not None
    assert len(after.input_responses) == 3 * threads * rounds  # no answer lost
    assert after.version == 3 * threads * rounds


def test_processes_racing_for_an_owner_s_last_slots_never_pass_the_bound(redis_url,
                                                                        redis_prefix):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    racers = [subprocess.Popen([sys.executable, "-m", "tests.redis.task_worker", "fill",
                                redis_url, redis_prefix, "alice", "7", "3"], cwd=ROOT,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True) for _ in range(3)]
    outs = [p.communicate(timeout=WAIT) for p in racers]
    assert [p.returncode for p in racers] == [0, 0, 0], [err for _, err in outs]
    assert sum(int(out) for out, _ in outs) == 7  # nine threads in three processes
    with RedisTaskStore(redis_url, prefix=redis_prefix) as store:
        assert len(store.list("alice")[0]) == 7


def test_a_redis_out_of_memory_is_store_unavailable_not_a_crash():
    """``max_bytes`` counts what the store writes; Redis's own ``maxmemory`` (noeviction)
    is the operator's bound past it: a write it refuses is a 503, and reads go on."""
    require_redis_library()
    with RedisServer() as server:
        store = RedisTaskStore(server.url, prefix="oom")
        admin = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            kept = make_record()
            store.create(kept)
            used = int(admin.info("memory")["used_memory"])
            admin.config_set("maxmemory-policy", "noeviction")
            admin.config_set("maxmemory", used + 200_000)
            with pytest.raises(StoreUnavailableError, match="OutOfMemory"):
                for _ in range(50):
                    store.create(make_record(input_requests={"q": "x" * 50_000}))
            assert store.get(kept.task_id) == kept
            admin.config_set("maxmemory", 0)
            store.create(make_record())  # and writes work again once there is room
        finally:
            store.close()
            admin.close()


def test_a_create_refused_at_the_owner_bound_does_not_read_the_owner_s_payloads():
    """A client at its live-task bound that keeps asking costs a glance at each task's
    status, not its payload: before, every refused ``create`` read every live task of the
    owner whole (up to 1000 × 16 MiB)."""
    require_redis_library()
    with RedisServer() as server:
        store = RedisTaskStore(server.url, prefix="amplify", max_live_per_owner=20)
        admin = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            for _ in range(20):
                store.create(make_record(owner="mallory", status="input_required",
                                         input_requests={"q": "x" * 100_000}))
            sent = int(admin.info("stats")["total_net_output_bytes"])
            with pytest.raises(TaskStoreFullError):
                store.create(make_record(owner="mallory"))
            cost = int(admin.info("stats")["total_net_output_bytes"]) - sent
            assert cost < 100_000, cost  # less than one payload; the payloads are 2 MB
        finally:
            store.close()
            admin.close()


def test_a_wait_on_a_big_task_does_not_reread_its_payload_every_poll():
    """Each waiter (a ``tasks/result`` long poll, a runner's sleep) re-checks its task at
    least once a second: before, each check read the whole record (16 MiB at most), now
    the plain fields, and the payload once, when the wait ends."""
    require_redis_library()
    with RedisServer() as server:
        store = RedisTaskStore(server.url, prefix="waits")
        admin = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            record = make_record(status="input_required",
                                 input_requests={"q": "x" * 500_000})
            store.create(record)
            sent = int(admin.info("stats")["total_net_output_bytes"])
            assert store.wait(record.task_id, record.version, timeout=3.5) == record
            cost = int(admin.info("stats")["total_net_output_bytes"]) - sent
            assert cost < 2 * 500_000, cost  # the payload once; before, once a second
        finally:
            store.close()
            admin.close()


@pytest.mark.parametrize("how", ["expired", "evicted"])
def test_forgetting_big_tasks_does_not_read_their_payloads(how):
    """A sweep or an eviction deletes a task knowing its owner and size: before, it read
    each record whole first (a sweep of a thousand 16 MiB tasks read 16 GB)."""
    require_redis_library()
    with RedisServer() as server:
        store = RedisTaskStore(server.url, prefix="forget", max_tasks=5)
        admin = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            records = [make_record(ttl_ms=1000, status="completed",
                                   result={"big": "x" * 300_000}) for _ in range(5)]
            for record in records:
                store.create(record)
            sent = int(admin.info("stats")["total_net_output_bytes"])
            if how == "expired":
                assert store.expire(now=records[-1].created_at + 2) == 5
            else:
                for _ in range(5):
                    store.create(make_record())  # each evicts the first finished
            cost = int(admin.info("stats")["total_net_output_bytes"]) - sent
            assert all(store.get(r.task_id) is None for r in records)
            assert cost < 300_000, cost  # less than one payload; they were 1.5 MB
        finally:
            store.close()
            admin.close()


# -- another principal, on another server sharing the Redis task store ---------------------


def _servers_with_principals(url: str, prefix: str) -> list[Any]:
    from mcpsync import AccessToken
    from tests.tasks.task_server import make_server

    servers = []
    for _ in range(2):
        server = make_server(task_store=RedisTaskStore(url, prefix=prefix))

        @server.request_scope
        def authenticate(ctx: Any) -> Any:  # a stand-in for the resource server
            ctx.transport.auth = AccessToken(str(ctx.meta.get("test/sub", "alice")), "c1",
                                             claims={"iss": "https://as.example"})
            yield

        servers.append(server)
    return servers


def test_another_principal_on_another_server_cannot_touch_a_task(redis_url, redis_prefix):
    """2026-07-28: tasks belong to the token's principal; through a second server (another
    machine) on the same Redis, mallory can neither read, answer nor cancel it (``tasks/list``
    is not in the extension; the store's list is owner-scoped, see the contract)."""
    from tests.helpers import wait_until
    from tests.tasks.peers import Peer

    servers = _servers_with_principals(redis_url, redis_prefix)
    alice = Peer("memory", "modern", server=servers[0])
    mallory = Peer("memory", "modern", server=servers[1])
    as_mallory = {"test/sub": "mallory"}
    try:
        task_id = alice.result("tools/call", {"name": "ask_name", "arguments": {}},
                               meta={})["taskId"]
        waiting: dict[str, Any] = {}

        def asked() -> bool:
            waiting.update(alice.result("tasks/get", {"taskId": task_id}, meta={}))
            return waiting["status"] == "input_required"

        wait_until(asked, timeout=WAIT)
        [key] = waiting["inputRequests"]
        forged = {key: {"action": "accept", "content": {"name": "Mallory"}}}
        for method, params in (("tasks/get", {"taskId": task_id}),
                               ("tasks/cancel", {"taskId": task_id}),
                               ("tasks/update", {"taskId": task_id,
                                                 "inputResponses": forged})):
            assert mallory.error(method, params, meta=as_mallory)["code"] == -32602, method
        alice.result("tasks/update", {"taskId": task_id, "inputResponses": {
            key: {"action": "accept", "content": {"name": "Ada"}}}}, meta={})
        done: dict[str, Any] = {}

        def finished() -> bool:
            done.update(alice.result("tasks/get", {"taskId": task_id}, meta={}))
            return done["status"] == "completed"

        wait_until(finished, timeout=WAIT)
        assert done["result"]["content"][0]["text"] == "Hello, Ada!"  # not Mallory's
        assert mallory.error("tasks/get", {"taskId": task_id}, meta=as_mallory)
    finally:
        alice.close()
        mallory.close()
        for server in servers:
            server.close_tasks()
            server.task_store.close()


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "noeviction"])
def test_a_redis_that_evicts_keys_is_warned_about(policy, caplog):
    """Under ``allkeys-*`` Redis may drop the store's indexes (its byte total, its task
    sequence: bounds and cursors then lie), under ``volatile-*`` tasks before their ttl:
    the store says so when it is made (where ``CONFIG GET`` is allowed)."""
    require_redis_library()
    with RedisServer() as server:
        admin = redis.Redis.from_url(server.url, socket_timeout=5)
        try:
            admin.config_set("maxmemory-policy", policy)
            with caplog.at_level("WARNING", logger="mcpsync.redis.tasks"):
                RedisTaskStore(server.url, prefix="policy").close()
        finally:
            admin.close()
    warned = [r.getMessage() for r in caplog.records if "maxmemory-policy" in r.getMessage()]
    assert len(warned) == (policy != "noeviction"), warned
    assert all(policy in message for message in warned)
