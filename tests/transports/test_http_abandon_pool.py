"""A call given up on while its answer streams hands its connection back to the pool once,
from the thread that was reading the answer, and never from the thread that gave it up.

Before, the thread giving the call up (a caller whose call timed out, or a cancel) closed the
response itself while the POST thread, woken by the socket shut under it, closed it too:
urllib3's ``release_conn`` checks ``_connection`` and clears it after ``_put_conn``, so both
threads could pass the check and the same connection went into the pool twice. The next two
requests then shared one ``http.client`` connection: the one that came second failed with
``CannotSendRequest('Request-sent')`` (or ``ResponseNotReady``, or had its socket closed
under it). Seen as a rare flake of test_matrix.py's
``test_a_timed_out_call_on_the_official_server_leaves_the_client_usable[http-2025-11-25]``
under load, where the second request was the call's cancel notification.

The window is a few bytecodes wide, so the tests hold it open: every hand-back of the given-up
call's connection waits in ``_put_conn`` until a second hand-back of it arrives, or until the
cancel has returned. On the old code the second one always arrives (whichever thread comes
first holds the other's ``release_conn`` check open); now there is only one."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import requests
from urllib3.connectionpool import HTTPConnectionPool

from mcpsync import Client, RequestCancelledError
from mcpsync.engine.connection import Connection
from tests.helpers import wait_until

from .hostile import LEGACY, MODERN, RawHttpServer, RawRequest
from .test_http_abandon import ERAS, FREED, WAIT, Tools, busy_posts, text_result

ERA_IDS = ["2026-07-28", "2025-11-25"]


class HandBacks:
    """``HTTPConnectionPool._put_conn`` of one watched connection, while it is lent: who gave
    it back. Each hand-back waits (bounded) for a second one, or for :meth:`cancel_done`."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.watched: Any = None
        self.by: list[str] = []
        self._cancelled = False
        self._changed = threading.Condition()
        original_put = HTTPConnectionPool._put_conn
        original_get = HTTPConnectionPool._get_conn

        def put(pool: HTTPConnectionPool, conn: Any) -> None:
            with self._changed:
                if conn is not None and conn is self.watched:
                    self.by.append(threading.current_thread().name)
                    self._changed.notify_all()
                    self._changed.wait_for(lambda: len(self.by) >= 2 or self._cancelled,
                                           WAIT)
            original_put(pool, conn)

        def get(pool: HTTPConnectionPool, timeout: float | None = None) -> Any:
            conn = original_get(pool, timeout)
            with self._changed:
                if conn is self.watched:  # lent again: its next hand-back is not ours
                    self.watched = None
            return conn

        monkeypatch.setattr(HTTPConnectionPool, "_put_conn", put)
        monkeypatch.setattr(HTTPConnectionPool, "_get_conn", get)

    def cancel_done(self) -> None:
        with self._changed:
            self._cancelled = True
            self._changed.notify_all()


def give_up_on_a_streaming_call(client: Client, hand_backs: HandBacks) -> None:
    """Call ``stall`` (an SSE answer that never ends); once its POST thread reads the body,
    cancel it from another thread, the way a caller whose call timed out abandons it."""
    connection: Connection = client._connection
    transport: Any = connection.transport
    request_id, future = connection.begin_request(
        "tools/call", {"name": "stall", "arguments": {}})
    wait_until(lambda: request_id in transport._table._open, timeout=WAIT)  # its answer began
    hand_backs.watched = transport._table._open[request_id].raw._connection
    assert hand_backs.watched is not None
    canceller = threading.Thread(target=connection.cancel_request,
                                 args=(request_id, "given up"), name="t-give-up",
                                 daemon=True)
    canceller.start()
    canceller.join(WAIT)
    assert not canceller.is_alive()
    hand_backs.cancel_done()
    with pytest.raises(RequestCancelledError):
        future.result(WAIT)


@pytest.mark.parametrize("session", ["own", "callers"])
@pytest.mark.parametrize("version", [MODERN, LEGACY], ids=ERA_IDS)
def test_a_given_up_call_hands_its_connection_back_once(monkeypatch, version, session):
    hand_backs = HandBacks(monkeypatch)
    theirs = requests.Session() if session == "callers" else None
    with RawHttpServer(ERAS[version](Tools())) as server, Client.http(
            server.url, session=theirs, protocol_version=version, timeout=WAIT) as client:
        give_up_on_a_streaming_call(client, hand_backs)
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        assert hand_backs.by == [hand_backs.by[0]], f"given back by {hand_backs.by}"
        assert hand_backs.by[0].startswith("mcpsync-http-client-")
        assert client.call_tool("quick").text == "quick"
    if theirs is not None:
        theirs.close()


class PairedTools(Tools):
    """Also ``held`` (answered once :attr:`release` is set) and ``pair`` (answered once two
    ``pair`` calls are in: both hold their connection at the same time)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.pairs = 0
        self._paired = threading.Condition()

    def __call__(self, request: RawRequest) -> None:
        name = (request.json.get("params") or {}).get("name")
        if name == "held":
            request.server.stopping.wait(0) or self.release.wait(WAIT)
            request.answer(text_result("held"))
        elif name == "pair":
            with self._paired:
                self.pairs += 1
                self._paired.notify_all()
                self._paired.wait_for(lambda: self.pairs >= 2, FREED)
            request.answer(text_result("pair"))
        else:
            super().__call__(request)


@pytest.mark.parametrize("version", [MODERN, LEGACY], ids=ERA_IDS)
def test_two_calls_after_a_given_up_one_do_not_share_a_connection(monkeypatch, version):
    # The CI failure itself. A call in flight (``held``) keeps a slot of the pool free, so a
    # connection given back twice is pooled twice (a full pool would close the extra one);
    # the next two calls, both held open by the server until the other arrives, then took
    # the same one and the second failed: CannotSendRequest('Request-sent').
    hand_backs = HandBacks(monkeypatch)
    tools = PairedTools()
    with RawHttpServer(ERAS[version](tools)) as server, Client.http(
            server.url, protocol_version=version, timeout=WAIT) as client:
        held: list[object] = []
        holder = threading.Thread(target=lambda: held.append(call(client, "held")),
                                  name="t-held", daemon=True)
        holder.start()
        assert server.wait_for(lambda: any(
            (r.json.get("params") or {}).get("name") == "held"
            for r in server.seen("POST", "tools/call")), WAIT)
        give_up_on_a_streaming_call(client, hand_backs)
        if version == LEGACY:  # its cancel notification is a POST too: let it end first
            assert server.wait_for(
                lambda: bool(server.seen("POST", "notifications/cancelled")), WAIT)
        wait_until(lambda: len(busy_posts()) == 1, timeout=FREED,  # held's alone
                   message=lambda: f"still blocked: {busy_posts()}")
        tools.release.set()
        holder.join(WAIT)
        assert held == ["held"]
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        results: list[object] = []
        pair = [threading.Thread(target=lambda: results.append(call(client, "pair")),
                                 name=f"t-pair-{n}", daemon=True) for n in range(2)]
        for thread in pair:
            thread.start()
        for thread in pair:
            thread.join(WAIT)
        assert results == ["pair", "pair"]


def call(client: Client, name: str) -> object:
    """The call's text, or the exception it raised (kept for the assertion, not lost on a
    thread)."""
    try:
        return client.call_tool(name).text
    except Exception as exc:
        return exc
