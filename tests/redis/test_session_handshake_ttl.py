"""Issue 25, defect 3: ``session_handshake_timeout`` ends a half-open session everywhere.

Two apps (two "workers") share one session store: Redis on a real ``redis-server``, a
FileSessionStore directory, one MemorySessionStore. A session whose client sends
``initialize`` and never comes back must be gone on every worker once the handshake timeout
has passed, not only dropped from the table of the worker that initialized it: its stored
record lives for the handshake timeout until the session's second request arrives (on any
worker), and for the store's idle timeout from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync.http import SessionStore
from tests.helpers import WAIT, wait_until
from tests.http.test_session_store import (
    call_who,
    session_headers,
    worker_server,
)
from tests.stores.backends import session_store_factory

LEGACY = "2025-06-18"
#: Short enough to wait out in a test; the bound on each wait below is ten times it.
HANDSHAKE = 0.5


@pytest.fixture(params=["redis", "file", "memory"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., SessionStore]:
    return session_store_factory(request.param, request, tmp_path)


def _initialize_only(url: str) -> str:
    """``initialize``, and nothing after it (no ``notifications/initialized``)."""
    response = requests.post(url, timeout=WAIT, headers={
        "Accept": "application/json, text/event-stream"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "half-open", "version": "1"}}})
    assert response.status_code == 200, response.text
    return response.headers["Mcp-Session-Id"]


def _initialized(url: str, session_id: str) -> None:
    response = requests.post(url, timeout=WAIT, headers=session_headers(session_id), json={
        "jsonrpc": "2.0", "method": "notifications/initialized"})
    assert response.status_code == 202, response.text


def _workers(serve: Any, shared_store: Callable[..., SessionStore]) -> tuple[Any, Any]:
    options = {"session_handshake_timeout": HANDSHAKE}
    return (serve(worker_server("a"), session_store=shared_store(), **options),
            serve(worker_server("b"), session_store=shared_store(), **options))


def test_a_half_open_session_is_gone_on_every_worker(serve, shared_store):
    a, b = _workers(serve, shared_store)
    store = shared_store()
    session_id = _initialize_only(a.url)
    assert store.load(session_id) is not None  # written down for the other workers
    # The record expires with the handshake timeout, not the 30-minute idle timeout.
    wait_until(lambda: store.load(session_id) is None, timeout=10 * HANDSHAKE,
               message="the half-open session's record outlived the handshake timeout")
    assert call_who(b.url, session_id).status_code == 404  # never taken up
    assert call_who(a.url, session_id).status_code == 404  # nor brought back where it began
    assert len(b.app.sessions) == 0


@pytest.mark.parametrize("second_on", ["a", "b"])
def test_a_completed_handshake_gets_the_idle_lifetime(serve, shared_store, second_on):
    a, b = _workers(serve, shared_store)
    store = shared_store()
    kept = _initialize_only(a.url)
    _initialized((a if second_on == "a" else b).url, kept)  # its second request
    half_open = _initialize_only(a.url)  # initialized after `kept`: expires after it would
    wait_until(lambda: store.load(half_open) is None, timeout=10 * HANDSHAKE,
               message="the half-open session's record outlived the handshake timeout")
    assert store.load(kept) is not None
    for worker in (b, a):
        response = call_who(worker.url, kept)
        assert response.status_code == 200, response.text


def test_the_redis_record_lives_for_the_handshake_timeout_until_the_second_request(
        serve, request):
    """The TTL itself, on the real Redis: the handshake timeout, then the idle timeout."""
    from mcpsync.redis import RedisSessionStore

    url: str = request.getfixturevalue("redis_url")
    prefix: str = request.getfixturevalue("redis_prefix")
    store = RedisSessionStore(url, prefix=prefix)
    a, b = _workers(serve, lambda: RedisSessionStore(url, prefix=prefix))
    session_id = _initialize_only(a.url)
    key = store.record_key(session_id)
    assert 0 < int(store.redis.pttl(key)) <= HANDSHAKE * 1000
    _initialized(b.url, session_id)  # the second request, on the other worker
    assert int(store.redis.pttl(key)) > 60_000  # the idle timeout (1800 s) from now on
    assert call_who(a.url, session_id).status_code == 200
