"""Issue 25, defect 5: idle initialized sessions cannot fill every slot.

A client that sends ``initialize`` + ``notifications/initialized`` and then nothing used to
hold a ``max_sessions`` slot for the whole idle timeout (30 minutes), so a few hundred such
clients shut everyone else out. Now the table works as a cache: when it is full, the
session idle the longest that has no request in flight and no open stream is evicted (its
client gets 404 on its next request and initializes again, as the spec tells it to), and
only when none can be evicted is the newcomer refused, with 503 and ``Retry-After``.
Optional caps per principal and per remote address apply first: past its own cap, a
principal or address evicts its own longest-idle session, else it gets the 503.

All over real HTTP (werkzeug on loopback); distinct remote addresses are distinct
loopback source addresses (127.0.0.2, 127.0.0.3: still loopback).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from requests.adapters import HTTPAdapter

from mcpsync import AccessToken, HandlerContext, Server
from mcpsync import Client as McpClient
from mcpsync.auth.server import ResourceServer
from mcpsync.http import MemorySessionStore
from tests.helpers import run_threads, wait_until

from .raw import BOTH, LEGACY, WAIT, SseReader, answer_of
from .relay_cluster import Cluster


class _SourceAdapter(HTTPAdapter):
    """Connections from a chosen loopback source address."""

    def __init__(self, source: str) -> None:
        self._source = source
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self._source, 0)
        super().init_poolmanager(*args, **kwargs)


class Client:
    """A handshake-era client that initializes and then, unless asked, does nothing."""

    def __init__(self, url: str, *, source: str = "127.0.0.1", token: str | None = None,
                 complete: bool = True) -> None:
        self.url = url
        self.http = requests.Session()
        self.http.mount("http://", _SourceAdapter(source))
        self.token = token
        self._ids = itertools.count(10)
        self.session_id: str | None = None
        self.init = self._post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "idle", "version": "0"}}})
        if self.init.status_code == 200:
            self.session_id = self.init.headers["Mcp-Session-Id"]
            if complete:
                assert self.initialized() == 202

    def initialized(self) -> int:
        done = self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return done.status_code

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Accept": BOTH, "MCP-Protocol-Version": LEGACY, **extra}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _post(self, body: dict[str, Any], **kwargs: Any) -> requests.Response:
        return self.http.post(self.url, json=body, headers=self.headers(), timeout=WAIT,
                              **kwargs)

    def ping(self) -> int:
        """The status of a ``ping`` on the session (404 once it was evicted)."""
        request_id = next(self._ids)
        response = self._post({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
        if response.status_code == 200:
            assert answer_of(response, request_id)["result"] == {}
        return response.status_code

    def call(self, name: str) -> requests.Response:
        request_id = next(self._ids)
        return self._post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                           "params": {"name": name, "arguments": {}}})

    def get(self) -> requests.Response:
        return self.http.get(self.url, headers=self.headers(Accept="text/event-stream"),
                             stream=True, timeout=WAIT)

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def clients() -> Iterator[list[Client]]:
    made: list[Client] = []
    yield made
    for client in made:
        client.close()


def _blocking_server() -> tuple[Server, threading.Event, threading.Event]:
    """A server whose ``block`` tool waits (bounded) until the test releases it."""
    server = Server("eviction")
    entered, release = threading.Event(), threading.Event()

    @server.tool()
    def block(ctx: HandlerContext) -> str:
        entered.set()
        release.wait(WAIT)
        return "released"

    return server, entered, release


def _statuses(clients: list[Client]) -> list[int]:
    return [c.ping() for c in clients]


def test_a_full_table_of_idle_sessions_lets_a_new_client_in(serve, clients):
    served = serve(max_sessions=4)
    idle = [Client(served.url) for _ in range(4)]
    clients.extend(idle)
    assert idle[0].ping() == 200  # used again: now idle[1] is the one idle the longest
    newcomer = Client(served.url)
    clients.append(newcomer)
    assert newcomer.init.status_code == 200, newcomer.init.text
    assert len(served.app.sessions) == 4
    evicted = idle[1]
    assert evicted.ping() == 404  # its client initializes again, as the spec says
    again = Client(served.url)  # ...and gets in, evicting the next longest idle
    clients.append(again)
    assert again.init.status_code == 200
    assert _statuses([idle[0], newcomer, again]) == [200, 200, 200]


def test_a_flood_of_idle_sessions_never_locks_a_real_client_out(serve, clients):
    served = serve(max_sessions=8)

    def flooder(i: int) -> Client:
        client = Client(served.url, complete=False)
        if client.init.status_code == 503:
            # All 24 start at once: a session answering its own initialize is busy, not
            # idle, so with 8 of them in flight at that instant the next is told to come
            # back (seen on a loaded host). Refused so, never locked out: see below.
            assert client.init.headers.get("Retry-After"), client.init.text
            return client
        assert client.init.status_code == 200, client.init.text
        if i % 2 == 0:  # half complete the handshake; a session evicted before gets 404
            assert client.initialized() in (202, 404)
        return client

    flood = run_threads(flooder, 24, name="flooder")
    clients.extend(flood)
    # Idle ones always make room; only those in flight at once fill all 8 slots.
    assert sum(c.init.status_code == 200 for c in flood) >= 8
    real = Client(served.url)
    clients.append(real)
    assert real.init.status_code == 200 and real.ping() == 200
    assert len(served.app.sessions) == 8


def test_a_session_with_a_request_in_flight_or_an_open_stream_is_never_evicted(
        serve, clients):
    server, entered, release = _blocking_server()
    served = serve(server, max_sessions=3)
    working, streaming, idle = (Client(served.url) for _ in range(3))
    clients.extend([working, streaming, idle])
    stream = streaming.get()
    assert stream.status_code == 200
    reader = SseReader(stream)
    assert reader.next_event() is not None  # the priming event: the stream is open
    answers: list[requests.Response] = []
    caller = threading.Thread(target=lambda: answers.append(working.call("block")),
                              name="test-block-call", daemon=True)
    caller.start()
    assert entered.wait(WAIT)
    try:
        # The two oldest are busy: the newcomer takes the idle one's slot.
        first = Client(served.url)
        clients.append(first)
        assert first.init.status_code == 200
        assert idle.ping() == 404
        # Now the only evictable session is the newcomer, used more recently than any.
        second = Client(served.url)
        clients.append(second)
        assert second.init.status_code == 200
        assert first.ping() == 404
        # Nothing evictable but `second`; busy it with a GET stream: the table is full.
        held = second.get()
        assert SseReader(held).next_event() is not None
        refused = Client(served.url)
        clients.append(refused)
        assert refused.init.status_code == 503, refused.init.text
        assert int(refused.init.headers["Retry-After"]) >= 1
        assert refused.init.json()["error"]["code"] < 0
        held.close()
    finally:
        release.set()
        caller.join(WAIT)
    assert not caller.is_alive()
    assert answers and answers[0].status_code == 200
    assert "released" in answers[0].text  # the request in flight was answered in full
    assert streaming.ping() == 200
    stream.close()


def test_eviction_frees_the_stored_record_and_the_event_streams(serve, clients):
    sessions = MemorySessionStore()
    served = serve(max_sessions=2, session_store=sessions)
    store = served.app.store
    victim = Client(served.url)
    clients.append(victim)
    stream = victim.get()
    prime = SseReader(stream).next_event()
    assert prime is not None and prime.get("id")
    stream.close()  # the stream's events stay for a resume, while the session lives
    held = served.app.sessions.held(victim.session_id)
    assert held is not None
    wait_until(lambda: not held.busy(), timeout=WAIT,
               message="the server never noticed the GET stream close")
    assert store.events_after(prime["id"]) is not None
    assert sessions.load(victim.session_id) is not None
    clients.extend(Client(served.url) for _ in range(2))  # the second one evicts victim
    assert victim.ping() == 404
    assert sessions.load(victim.session_id) is None  # not taken up again by any worker
    assert store.events_after(prime["id"]) is None  # its streams' events are freed


def test_an_evicted_session_is_not_taken_up_again_by_another_worker(serve, clients):
    store = MemorySessionStore()
    a = serve(max_sessions=1, session_store=store)
    b = serve(max_sessions=10, session_store=store)
    victim = Client(a.url)
    clients.append(victim)
    clients.append(Client(a.url))  # evicts victim on a
    victim.url = b.url
    assert victim.ping() == 404


# -- caps per principal and per remote address ----------------------------------------


class _NamedTokens:
    """A verifier for the tests: the token text is the subject."""

    def verify(self, token: str) -> AccessToken | None:
        return AccessToken(token, "test-client", claims={"iss": "https://as.example"})


def _protected(serve: Any, *server: Server, **options: Any) -> Any:
    auth = ResourceServer(_NamedTokens(), resource="http://127.0.0.1/mcp",
                          authorization_servers=["https://as.example"])
    return serve(*server, auth=auth, **options)


def test_past_its_cap_a_principal_evicts_its_own_longest_idle_session(serve, clients):
    served = _protected(serve, max_sessions=10, max_sessions_per_principal=2)
    alice = [Client(served.url, token="alice") for _ in range(2)]
    bob = Client(served.url, token="bob")
    clients.extend([*alice, bob])
    assert alice[0].ping() == 200  # alice[1] is now her longest idle
    third = Client(served.url, token="alice")
    clients.append(third)
    assert third.init.status_code == 200
    assert alice[1].ping() == 404
    assert _statuses([alice[0], third, bob]) == [200, 200, 200]  # bob's was not touched


def test_a_principal_at_its_cap_with_every_session_busy_gets_503(serve, clients):
    server, entered, release = _blocking_server()
    served = _protected(serve, server, max_sessions=10, max_sessions_per_principal=1)
    alice = Client(served.url, token="alice")
    clients.append(alice)
    caller = threading.Thread(target=lambda: alice.call("block"), name="test-block-call",
                              daemon=True)
    caller.start()
    assert entered.wait(WAIT)
    try:
        more = Client(served.url, token="alice")
        clients.append(more)
        assert more.init.status_code == 503
        assert "Retry-After" in more.init.headers
        other = Client(served.url, token="bob")  # the table itself has room
        clients.append(other)
        assert other.init.status_code == 200
    finally:
        release.set()
        caller.join(WAIT)
    assert not caller.is_alive()


def test_past_its_cap_an_address_evicts_its_own_longest_idle_session(serve, clients):
    served = serve(max_sessions=10, max_sessions_per_address=2)
    local = [Client(served.url, source="127.0.0.2") for _ in range(2)]
    other = Client(served.url, source="127.0.0.3")
    clients.extend([*local, other])
    third = Client(served.url, source="127.0.0.2")
    clients.append(third)
    assert third.init.status_code == 200
    assert local[0].ping() == 404  # its own longest idle, not the other address's
    assert _statuses([local[1], third, other]) == [200, 200, 200]
    assert len(served.app.sessions) == 3


def test_caps_are_off_by_default(serve, clients):
    served = serve(max_sessions=10)
    many = [Client(served.url, source="127.0.0.2") for _ in range(6)]
    clients.extend(many)
    assert _statuses(many) == [200] * 6


# -- the other ways into the table ------------------------------------------------------


def test_a_2024_stream_is_never_evicted_and_a_refusal_says_when_to_retry(serve, clients):
    served = serve(max_sessions=1)
    old = requests.get(served.base + "/sse", headers={"Accept": "text/event-stream"},
                       stream=True, timeout=WAIT)
    try:
        assert old.status_code == 200
        endpoint = SseReader(old).next_event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        refused = Client(served.url)
        clients.append(refused)
        assert refused.init.status_code == 503
        assert int(refused.init.headers["Retry-After"]) >= 1
        another = requests.get(served.base + "/sse", headers={"Accept": "text/event-stream"},
                               stream=True, timeout=WAIT)
        assert another.status_code == 503 and "Retry-After" in another.headers
        another.close()
    finally:
        old.close()


def test_a_worker_full_of_busy_sessions_answers_a_roaming_session_503_not_404(
        serve, clients):
    store = MemorySessionStore()
    server, entered, release = _blocking_server()
    a = serve(server, max_sessions=1, session_store=store)
    b = serve(max_sessions=4, session_store=store)
    busy = Client(a.url)
    roaming = Client(b.url)
    clients.extend([busy, roaming])
    caller = threading.Thread(target=lambda: busy.call("block"), name="test-block-call",
                              daemon=True)
    caller.start()
    assert entered.wait(WAIT)
    roaming.url = a.url
    try:
        # No room on a: "try again", never 404 (which would make it drop a live session).
        assert roaming.ping() == 503
    finally:
        release.set()
        caller.join(WAIT)
    assert not caller.is_alive()
    assert roaming.ping() == 200  # taken up now, in the idle one's place
    assert busy.ping() == 404


def test_with_a_relay_an_evicted_session_ends_on_every_worker(clients):
    with Cluster(2, relay=True, max_sessions=1) as cluster:
        victim = Client(cluster.urls[0])
        clients.append(victim)
        victim.url = cluster.urls[1]
        assert victim.ping() == 200
        assert cluster.held_by(victim.session_id) == [0, 1]
        clients.append(Client(cluster.urls[0]))  # evicts it on worker 0...
        wait_until(lambda: cluster.held_by(victim.session_id) == [], timeout=WAIT,
                   message=lambda: cluster.held_by(victim.session_id))  # ...and on 1
        assert victim.ping() == 404


def test_a_connected_mcpsync_client_keeps_its_session(serve, clients):
    """mcpsync's client holds the session's GET stream open while it is connected, so its
    session is busy, never idle: it is not evicted, whatever others initialize."""
    served = serve(max_sessions=1)
    with McpClient.http(served.url, protocol_version=LEGACY, timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        [held] = served.app.sessions.all()
        wait_until(held.busy, timeout=WAIT, message="the client's GET stream never opened")
        newcomer = Client(served.url)
        clients.append(newcomer)
        assert newcomer.init.status_code == 503
        assert client.call_tool("echo", {"text": "after"}).text == "after"
        assert served.app.sessions.all() == [held]
