"""What only the Redis session store has: its subscription index, its key layout, expiry
by TTL, its bounds, and Redis going away and coming back.

The contract every session store keeps (this one included) is
tests/stores/test_session_store_contract.py; the two-worker HTTP tests over the same
stores are in tests/http/test_session_store.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync.errors import StoreUnavailableError
from mcpsync.http import SessionRecord
from tests.helpers import WAIT, wait_until
from tests.services import RedisServer, require_redis_library
from tests.stores.backends import session_store_factory

LEGACY = "2025-06-18"

#: Ids a request header may carry: none may reach another session, key or file.
HOSTILE_IDS = ["*", "?", "a:b", "a_b", "a_1", "../../etc/passwd", "s:*", "[a-z]*", "\\",
               "x" * 100_000, "é", "\x00"]


@pytest.fixture
def new_shared(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Any]:
    """Redis session store instances over the test's key prefix."""
    return session_store_factory("redis", request, tmp_path)


def full_record(session_id: str = "s1") -> SessionRecord:
    return SessionRecord(session_id, LEGACY, {"name": "c", "version": "1"},
                         {"sampling": {}, "roots": {"listChanged": True}}, owner="tok:alice",
                         log_level="warning", subscriptions=frozenset({"file:///a", "db://b"}))


# -- the subscription index ----------------------------------------------------------------


def test_subscribers_leave_out_expired_sessions_and_clean_the_index(new_shared):
    live, short = new_shared(), new_shared(idle_timeout=0.5)
    live.save(SessionRecord("stays", LEGACY))
    live.add_subscription("stays", "file:///shared")
    saved = time.monotonic()
    short.save(SessionRecord("goes", LEGACY, subscriptions=frozenset({"file:///shared",
                                                                       "file:///only"})))
    found = live.subscribers("file:///shared")
    # Both, unless the short-lived session had already expired (a host slower than its
    # idle timeout between the save and this read): never without "stays".
    assert found == {"stays", "goes"} or (
        found == {"stays"} and time.monotonic() - saved >= 0.5), found
    wait_until(lambda: live.subscribers("file:///shared") == {"stays"}, timeout=WAIT,
               message=lambda: live.subscribers("file:///shared"))
    assert live.subscribers("file:///only") == set()
    fields = live.redis.hgetall(live.index_key("file:///shared"))
    assert list(fields.values()) == [b"stays"]  # the expired entry was dropped
    wait_until(lambda: not live.redis.exists(live.index_key("file:///only")), timeout=WAIT,
               message="the index of an expired session's only URI was kept")


def test_touch_refreshes_the_record_its_subscriptions_and_their_index(new_shared):
    store = new_shared(idle_timeout=60.0)
    store.save(full_record())
    key = store.record_key("s1")
    index = store.index_key("file:///a")
    for name in (key, key + ":subs", index):
        store.redis.pexpire(name, 1000)
    assert store.touch("s1") is True
    for name in (key, key + ":subs", index):
        assert store.redis.pttl(name) > 50_000, name


def test_subscriptions_are_bounded(new_shared):
    store = new_shared(max_subscriptions=3)
    store.save(SessionRecord("s1", LEGACY))
    for i in range(3):
        store.add_subscription("s1", f"r:{i}")
    with pytest.raises(ValueError, match="at most 3"):
        store.add_subscription("s1", "r:3")
    store.add_subscription("s1", "r:0")  # one it already has is not one more
    with pytest.raises(ValueError, match="at most"):
        store.add_subscription("s1", "r:" + "x" * 10_000)
    with pytest.raises(ValueError, match="surrogate"):
        store.add_subscription("s1", "r:\ud800")
    with pytest.raises(ValueError, match="at most 3"):
        store.save(SessionRecord("s2", LEGACY, subscriptions=frozenset(
            f"r:{i}" for i in range(4))))
    assert store.load("s1").subscriptions == {"r:0", "r:1", "r:2"}  # type: ignore[union-attr]
    assert store.subscribers("r:\ud800") == set() and store.subscribers("y" * 10_000) == set()


def test_a_foreign_hash_under_a_record_key_is_not_a_session(new_shared):
    store = new_shared()
    store.redis.hset(store.record_key("s1"), mapping={"id": "someone-else", "version": LEGACY})
    store.redis.hset(store.record_key("s2"), mapping={"junk": "1"})
    assert store.load("s1") is None and store.load("s2") is None


def test_a_decoding_client_is_refused(redis_url):
    import redis

    from mcpsync.redis import RedisSessionStore

    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        with pytest.raises(ValueError, match="decode"):
            RedisSessionStore(client)
    finally:
        client.close()


# -- a private Redis: every key under the prefix; down and back --------------------------


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    require_redis_library()
    with RedisServer() as server:
        yield server


def test_every_key_is_under_the_prefix_and_short(private_redis):
    from mcpsync.redis import RedisSessionStore

    store = RedisSessionStore(private_redis.url, prefix="app1")
    for n, session_id in enumerate(["b", "b_c", "b:c*", "é" * 200]):
        store.save(SessionRecord(session_id, LEGACY, subscriptions=frozenset({f"u:{n}"})))
        store.add_subscription(session_id, "x" * 8000)
        store.set_log_level(session_id, "info")
    for session_id in HOSTILE_IDS:
        store.load(session_id), store.touch(session_id), store.delete(session_id)
    keys = store.redis.keys("*")
    assert keys and all(k.startswith(b"app1:") for k in keys), keys
    assert max(len(k) for k in keys) <= len("app1:subscribers:") + 64 + len(":subs")
    for session_id in ["b", "b_c", "b:c*", "é" * 200]:
        assert store.delete(session_id)
    assert store.redis.keys("*") == []  # nothing left behind


def test_redis_down_is_unavailable_and_recovers(private_redis):
    from mcpsync.redis import RedisSessionStore

    store = RedisSessionStore(private_redis.url, prefix="p")
    store.save(full_record())
    private_redis.kill()
    calls: list[Callable[[], object]] = [
        lambda: store.save(full_record()), lambda: store.load("s1"),
        lambda: store.touch("s1"), lambda: store.delete("s1"),
        lambda: store.set_log_level("s1", "info"),
        lambda: store.add_subscription("s1", "u:1"),
        lambda: store.remove_subscription("s1", "u:1"),
        lambda: store.subscribers("u:1")]
    for call in calls:
        with pytest.raises(StoreUnavailableError, match=r"Redis at 127\.0\.0\.1:") as caught:
            call()
        assert isinstance(caught.value, OSError)
    private_redis.start()  # a fresh, empty server on the same URL: the pool reconnects
    assert store.load("s1") is None
    store.save(full_record())
    assert store.load("s1") == full_record()


def test_unavailable_errors_never_show_the_password(private_redis):
    from mcpsync.redis import RedisSessionStore, connect

    url = private_redis.url.replace("redis://", "redis://user:s3cret-pw@")
    store = RedisSessionStore(url)
    private_redis.kill()
    with pytest.raises(StoreUnavailableError) as caught:
        store.load("s1")
    assert "s3cret-pw" not in str(caught.value) and "s3cret-pw" not in repr(store)
    with pytest.raises(ValueError) as bad:
        connect("redis://user:s3cret-pw@host:notaport/0")
    assert "s3cret-pw" not in str(bad.value) and "***" in str(bad.value)


# -- the session store down under running apps ---------------------------------------------


def test_another_worker_answers_503_not_404_while_redis_is_down(serve, private_redis):
    import requests

    from mcpsync.redis import RedisSessionStore
    from tests.http.test_session_store import call_who, initialize, worker_server

    a = serve(worker_server("a"), session_store=RedisSessionStore(private_redis.url))
    b = serve(worker_server("b"), session_store=RedisSessionStore(private_redis.url))
    session_id = initialize(a.url)
    private_redis.kill()
    assert call_who(a.url, session_id).status_code == 200  # a holds it: keeps serving
    assert call_who(b.url, session_id).status_code == 503
    assert requests.delete(b.url, timeout=WAIT, headers={
        "Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-06-18"}).status_code == 503


def test_a_frozen_redis_times_out_instead_of_hanging(private_redis):
    """A Redis that accepts connections but never answers (stopped, swapping, a network
    partition) is the case that hangs a request without a reply timeout."""
    import os
    import signal
    import time

    from mcpsync.redis import RedisSessionStore, connect

    store = RedisSessionStore(connect(private_redis.url, socket_timeout=0.5), prefix="p")
    store.save(full_record())
    assert private_redis.pid is not None
    os.kill(private_redis.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="Timeout"):
            store.load("s1")
        assert time.monotonic() - started < WAIT
    finally:
        os.kill(private_redis.pid, signal.SIGCONT)
    assert store.load("s1") == full_record()  # it answers again: so does the store


def test_connect_sets_bounded_timeouts_and_keeps_bytes(redis_url):
    from mcpsync.redis import connect

    client = connect(redis_url)
    try:
        kwargs = client.get_connection_kwargs()
        assert kwargs["socket_connect_timeout"] == 2.0 and kwargs["socket_timeout"] == 5.0
        assert kwargs["health_check_interval"] == 15 and not kwargs.get("decode_responses")
        assert connect(client) is client  # a ready client is used as it is
        with pytest.raises(TypeError):
            connect(client, socket_timeout=1)
    finally:
        client.close()


def test_importing_mcpsync_does_not_import_redis():
    import subprocess
    import sys

    code = ("import sys, mcpsync, mcpsync.http, mcpsync.http.session_store; "
            "assert 'redis' not in sys.modules, 'redis imported'; "
            "import mcpsync.redis; assert 'redis' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
