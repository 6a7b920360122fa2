"""Handshake-era sessions shared by several workers through a SessionStore.

Two WSGI apps, each over its own Server (as two worker processes would be), share one
store: each test that is about the contract runs over every store (``shared_store``: a
FileSessionStore directory, and RedisSessionStore on the run's real Redis); then real
gunicorn with two worker processes shares a directory.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
from freezegun import freeze_time

from mcpsync import HandlerContext, Server
from mcpsync.http import FileSessionStore, SessionRecord, SessionStore
from tests.helpers import LONG_WAIT, run_threads
from tests.serving import running_gunicorn
from tests.spec import validate
from tests.stores.backends import session_store_factory

from .raw import LEGACY, WAIT, answer_of

ROOT = Path(__file__).resolve().parents[2]


def worker_server(name: str) -> Server:
    server = Server(name)

    @server.tool()
    def who(ctx: HandlerContext) -> dict[str, Any]:
        """Which worker answered, and what it knows of the client."""
        info = ctx.session
        return {"worker": name, "pid": os.getpid(), "version": info.protocol_version,
                "client": (info.client_info or {}).get("name"),
                "sampling": "sampling" in (info.client_capabilities or {})}

    return server


def initialize(url: str) -> str:
    response = requests.post(url, timeout=WAIT, headers={"Accept": "application/json, "
                                                         "text/event-stream"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {"sampling": {}},
                   "clientInfo": {"name": "roamer", "version": "1"}}})
    assert response.status_code == 200
    session_id = response.headers["Mcp-Session-Id"]
    requests.post(url, timeout=WAIT, headers=session_headers(session_id),
                  json={"jsonrpc": "2.0", "method": "notifications/initialized"}).close()
    return session_id


def session_headers(session_id: str) -> dict[str, str]:
    return {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY,
            "Accept": "application/json, text/event-stream"}


def call_who(url: str, session_id: str, request_id: int = 2) -> requests.Response:
    return requests.post(url, timeout=WAIT, headers={**session_headers(session_id),
                                                     "Connection": "close"}, json={
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": "who", "arguments": {}}})


#: The stores two worker apps share here (the contract of every store, memory included, is
#: tests/stores/test_session_store_contract.py).
STORE_KINDS = ("file", "redis")


@pytest.fixture(params=STORE_KINDS)
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., SessionStore]:
    """A factory of store instances over one shared state, for each kind of store."""
    return session_store_factory(request.param, request, tmp_path)


def test_stores_are_session_stores(shared_store):
    assert isinstance(shared_store(), SessionStore)


def test_a_session_initialized_on_one_worker_is_served_by_another(serve, shared_store):
    store = shared_store()
    a = serve(worker_server("a"), session_store=store)
    b = serve(worker_server("b"), session_store=shared_store())
    session_id = initialize(a.url)
    assert len(b.app.sessions) == 0
    response = call_who(b.url, session_id)
    assert response.status_code == 200
    answer = answer_of(response, 2)
    validate(LEGACY, "CallToolResult", answer["result"])
    # Worker b answers as the same session: version and client as negotiated on a.
    assert answer["result"]["structuredContent"] == {
        "worker": "b", "pid": os.getpid(), "version": LEGACY, "client": "roamer",
        "sampling": True}
    assert len(b.app.sessions) == 1
    # Without a shared store, b has never heard of it.
    c = serve(worker_server("c"))
    assert call_who(c.url, session_id).status_code == 404


def test_delete_on_one_worker_ends_the_session_for_all(serve, shared_store):
    a = serve(worker_server("a"), session_store=shared_store())
    b = serve(worker_server("b"), session_store=shared_store())
    fresh = serve(worker_server("fresh"), session_store=shared_store())
    session_id = initialize(a.url)
    assert call_who(b.url, session_id).status_code == 200
    deleted = requests.delete(b.url, headers=session_headers(session_id), timeout=WAIT)
    assert deleted.status_code == 200
    assert call_who(b.url, session_id).status_code == 404
    assert call_who(fresh.url, session_id).status_code == 404
    # A DELETE of a session only the store knows (initialized elsewhere) works too.
    other = initialize(a.url)
    assert requests.delete(fresh.url, headers=session_headers(other),
                           timeout=WAIT).status_code == 200
    assert call_who(b.url, other).status_code == 404


def test_a_worker_holding_a_deleted_session_lets_go_of_it(serve, shared_store):
    a = serve(worker_server("a"), session_store=shared_store())
    b = serve(worker_server("b"), session_store=shared_store())
    session_id = initialize(a.url)
    assert call_who(a.url, session_id).status_code == 200
    assert requests.delete(b.url, headers=session_headers(session_id),
                           timeout=WAIT).status_code == 200
    # a still holds it, and asks the store again within CONFIRM_INTERVAL (10 s).
    local = a.app.sessions.held(session_id)
    assert local is not None
    local.confirmed -= 11.0
    assert call_who(a.url, session_id).status_code == 404
    assert len(a.app.sessions) == 0


def test_unknown_ids_and_torn_files_are_not_sessions(serve, tmp_path):
    store = FileSessionStore(tmp_path)
    a = serve(worker_server("a"), session_store=store)
    assert call_who(a.url, "../../etc/passwd").status_code == 404
    assert call_who(a.url, "never-issued").status_code == 404
    session_id = initialize(a.url)
    for path in tmp_path.glob("*.json"):
        path.write_text('{"sessionId": ')  # a torn write (never made by save)
    b = serve(worker_server("b"), session_store=store)
    assert call_who(b.url, session_id).status_code == 404
    assert store.load("x") is None and not store.touch("x") and not store.delete("x")


def test_records_expire_when_idle(tmp_path):
    store = FileSessionStore(tmp_path, idle_timeout=60.0)
    now = datetime.datetime.now(datetime.timezone.utc)
    store.save(SessionRecord("s1", LEGACY, {"name": "c"}, {}))
    store.save(SessionRecord("s2", LEGACY))
    with freeze_time(now + datetime.timedelta(seconds=30)):
        assert store.load("s1") == SessionRecord("s1", LEGACY, {"name": "c"}, {})
    with freeze_time(now + datetime.timedelta(seconds=61)):
        assert store.load("s1") is None
        assert not store.touch("s2")
        assert store.sweep() == 1  # s2's file; s1's went when it was found expired
    assert list(tmp_path.glob("*.json")) == []


def test_a_modern_only_record_is_not_taken_up(serve, shared_store):
    store = shared_store()
    store.save(SessionRecord("modern", "2026-07-28"))
    a = serve(worker_server("a"), session_store=store)
    assert call_who(a.url, "modern").status_code == 404


@pytest.fixture
def two_workers(tmp_path) -> Any:
    """examples/gunicorn_app.py under gunicorn with two worker processes."""
    env = {**os.environ, "MCPSYNC_SESSION_DIR": str(tmp_path / "sessions"),
           "MCPSYNC_REQUEST_STATE_KEY": "example-key"}
    with running_gunicorn("examples.gunicorn_app:app", env=env) as base:
        yield base + "/mcp"


def test_gunicorn_workers_share_sessions(two_workers):
    session_id = initialize(two_workers)
    pids: set[int] = set()
    # Every call on a fresh connection, eight at a time: while one worker is busy accepting
    # and answering, the kernel hands connections to the other (one at a time, a worker
    # that answers fast enough may take them all). Go on until both have answered, each
    # call succeeding as the same session. Bounded by a deadline, not a number of calls:
    # the port answers once the first worker is up, and on a loaded machine the second may
    # still be importing the app after hundreds of calls (seen: all 400 to one worker).
    import itertools
    import time
    from concurrent.futures import ThreadPoolExecutor

    deadline = time.monotonic() + LONG_WAIT
    with ThreadPoolExecutor(8, thread_name_prefix="t-who") as calls:
        for first in itertools.count(2, 8):
            if time.monotonic() > deadline:
                break
            ids = range(first, first + 8)
            for request_id, response in zip(ids, calls.map(
                    lambda i: call_who_pid(two_workers, session_id, i), ids), strict=True):
                assert response.status_code == 200, response.text
                answer = answer_of(response, request_id)["result"]["structuredContent"]
                assert answer["protocol"] == LEGACY
                pids.add(answer["pid"])
            if len(pids) == 2:
                break
    assert len(pids) == 2, "only one gunicorn worker ever answered"


def call_who_pid(url: str, session_id: str, request_id: int) -> requests.Response:
    return requests.post(url, timeout=WAIT, headers={**session_headers(session_id),
                                                     "Connection": "close"}, json={
        "jsonrpc": "2.0", "id": request_id, "method": "tools/call",
        "params": {"name": "worker", "arguments": {}}})


def test_an_unwritable_store_costs_only_the_sharing(serve, tmp_path):
    import shutil

    directory = tmp_path / "gone"
    a = serve(worker_server("a"), session_store=FileSessionStore(directory))
    b = serve(worker_server("b"), session_store=FileSessionStore(directory))
    shutil.rmtree(directory)  # every write now fails (FileNotFoundError)
    session_id = initialize(a.url)  # still initialized: on this worker
    assert call_who(a.url, session_id).status_code == 200
    assert call_who(b.url, session_id).status_code == 404  # not shared, and said so
    assert requests.delete(a.url, headers=session_headers(session_id),
                           timeout=WAIT).status_code == 200


def test_concurrent_first_requests_take_the_session_up_once(serve, shared_store):
    a = serve(worker_server("a"), session_store=shared_store())
    b = serve(worker_server("b"), session_store=shared_store())
    session_id = initialize(a.url)

    def first_call(i: int) -> int:
        return call_who(b.url, session_id, 2 + i).status_code  # request ids 2..17

    statuses = run_threads(first_call, 16, name="roamer", timeout=WAIT)
    assert statuses == [200] * 16
    assert len(b.app.sessions) == 1  # the racing restores settled on one session
