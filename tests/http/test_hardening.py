"""Issue #11, server hardening: what a hostile or careless client can make the HTTP app
hold (event store bytes, session slots, threads), whose streams it can read, what it can
make the app read, and whether leaving cancels its call. Real sockets, werkzeug in this
process and gunicorn in a subprocess."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from freezegun import freeze_time

from mcpsync import HandlerContext, Server, ServerLimits
from mcpsync.http.events import InMemoryEventStore
from tests.helpers import run_threads, wait_until
from tests.serving import running_gunicorn

from .raw import (
    BOTH,
    LEGACY,
    WAIT,
    LegacySession,
    SseReader,
    answer_of,
    modern_headers,
    modern_request,
    post_modern,
)

ROOT = Path(__file__).resolve().parents[2]


# -- defect 4: the event store is bounded in bytes and freed with its session -------------


def test_event_store_is_bounded_in_bytes():
    store = InMemoryEventStore(max_bytes=1024 * 1024)
    blob = b"x" * (64 * 1024)
    for stream in range(40):
        for _ in range(4):
            store.store_event(f"s{stream}", blob)
    assert store.size_bytes <= 1024 * 1024
    assert store.size_bytes >= 1024 * 1024 - 4 * len(blob)  # it did keep the newest
    assert store.events_after("s39_0") is not None  # the newest stream survives
    assert store.events_after("s0_0") is None  # the oldest was evicted
    # One event larger than the whole bound is not kept (and evicts nothing else).
    before = store.size_bytes
    store.store_event("huge", b"y" * (2 * 1024 * 1024))
    assert store.size_bytes == before
    assert InMemoryEventStore().max_bytes == 16 * 1024 * 1024  # the documented default


def _legacy_big_calls(url: str, count: int, size: int) -> LegacySession:
    session = LegacySession(url)
    for _ in range(count):
        answer = session.call("tools/call", {"name": "echo", "arguments": {"text": "z" * size}})
        assert answer["result"]["content"][0]["text"] == "z" * size
    return session


def test_plain_json_answers_are_not_kept(serve):
    served = serve()
    _legacy_big_calls(served.url, 16, 256 * 1024)
    assert served.app.store.size_bytes < 16 * 1024


def test_finished_sse_stream_is_not_kept(serve):
    served = serve()
    session = LegacySession(served.url)
    request_id, response = session.request("tools/call", {"name": "progress",
                                                          "arguments": {"steps": 50},
                                                          "_meta": {"progressToken": 7}},
                                           stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    assert SseReader(response).messages(request_id)[-1]["id"] == request_id
    response.close()
    wait_until(lambda: served.app.store.size_bytes < 1024, timeout=WAIT,
               message=lambda: served.app.store.size_bytes)


def _interrupted_stream(session: LegacySession, gate: threading.Event) -> str:
    """A POST stream the server closes early (ctx.close_sse_stream): its events stay in
    the store for a resume. Returns the priming event id."""
    _, response = session.request("tools/call", {"name": "big_after_close",
                                                 "arguments": {}}, stream=True)
    priming = SseReader(response).next_event()
    assert priming is not None and priming["id"]
    response.close()
    gate.set()
    return str(priming["id"])


def _resumable_server() -> tuple[Server, threading.Event, threading.Event]:
    srv = Server("resumable")
    gate = threading.Event()
    finished = threading.Event()

    @srv.tool()
    def big_after_close(ctx: HandlerContext) -> str:
        ctx.close_sse_stream()
        gate.wait(WAIT)
        finished.set()
        return "b" * (256 * 1024)

    return srv, gate, finished


def test_delete_frees_everything_the_session_stored(serve):
    srv, gate, finished = _resumable_server()
    served = serve(srv)
    session = LegacySession(served.url)
    _interrupted_stream(session, gate)
    assert finished.wait(WAIT)
    wait_until(lambda: served.app.store.size_bytes > 256 * 1024, timeout=WAIT)
    assert session.delete().status_code == 200
    assert served.app.store.size_bytes == 0


def test_expiry_frees_everything_the_session_stored(serve):
    srv, gate, finished = _resumable_server()
    with freeze_time("2026-01-01 12:00:00", tick=True) as frozen:
        served = serve(srv, session_idle_timeout=60.0)
        session = LegacySession(served.url)
        _interrupted_stream(session, gate)
        assert finished.wait(WAIT)
        wait_until(lambda: served.app.store.size_bytes > 256 * 1024, timeout=WAIT)
        frozen.tick(120)
        LegacySession(served.url)  # any request sweeps expired sessions
        assert served.app.store.size_bytes == 0
        assert session.get().status_code == 404


# -- defect 5: Last-Event-ID replays only the requesting session's streams ---------------


def _first_event(response: requests.Response) -> dict[str, object] | None:
    try:
        return SseReader(response).next_event()
    finally:
        response.close()


def test_last_event_id_of_another_session_is_not_replayed(serve):
    srv, gate, finished = _resumable_server()
    served = serve(srv, keepalive_interval=0.2)
    victim = LegacySession(served.url)
    event_id = _interrupted_stream(victim, gate)
    assert finished.wait(WAIT)
    # The owner can resume its stream.
    own = _first_event(victim.get(headers={"Last-Event-ID": event_id}))
    assert own is not None and "bbbb" in str(own.get("data"))
    for when in ("live", "deleted"):
        attacker = LegacySession(served.url)
        response = attacker.get(headers={"Last-Event-ID": event_id})
        assert response.status_code in (200, 404), response.text
        if response.status_code == 200:
            event = _first_event(response)
            assert event is None or "bbbb" not in str(event.get("data")), when
        assert victim.delete().status_code in (200, 404)


# -- defect 6: max_handlers bounds the whole app; idle sessions park nothing ---


def _counting_server(cap: int, expected: int) -> tuple[Server, dict[str, int]]:
    srv = Server("counted", limits=ServerLimits(max_handlers=cap))
    state = {"running": 0, "max": 0}
    lock = threading.Condition()

    @srv.tool()
    def hold(ctx: HandlerContext) -> str:
        with lock:
            state["running"] += 1
            state["max"] = max(state["max"], state["running"])
            lock.notify_all()
            # Wait until every call runs at once: only the cap can stop that (bounded).
            lock.wait_for(lambda: state["running"] >= expected, timeout=1.5)
            state["running"] -= 1
        return "held"

    return srv, state


def _hold(session: LegacySession) -> dict[str, object]:
    request_id, response = session.request("tools/call", {"name": "hold", "arguments": {}},
                                           stream=True)
    assert response.status_code == 200, response.text
    return answer_of(response, request_id)


def _run_all(calls: list[Callable[[], dict[str, object]]]) -> list[dict[str, object]]:
    results = run_threads(lambda i: calls[i](), len(calls), name="t-call", timeout=WAIT * 2)
    assert len(results) == len(calls)
    return results


def test_handler_cap_spans_handshake_sessions(serve):
    srv, state = _counting_server(cap=4, expected=8)
    url = serve(srv).url
    sessions = [LegacySession(url) for _ in range(8)]
    results = _run_all([lambda s=s: _hold(s) for s in sessions])
    assert all(r["result"]["content"][0]["text"] == "held" for r in results), results
    assert state["max"] <= 4, state


def test_handler_cap_spans_both_eras(serve):
    srv, state = _counting_server(cap=4, expected=8)
    url = serve(srv).url
    sessions = [LegacySession(url) for _ in range(4)]
    legacy = [lambda s=s: _hold(s) for s in sessions]
    modern = [lambda i=i: answer_of(post_modern(url, "tools/call", {"name": "hold",
                                                                    "arguments": {}},
                                                request_id=i, stream=True), i)
              for i in range(4)]
    results = _run_all(legacy + modern)
    assert all(r["result"]["content"][0]["text"] == "held" for r in results), results
    assert state["max"] <= 4, state


def test_idle_sessions_park_no_threads(serve):
    url = serve().url
    LegacySession(url).call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    before = threading.active_count()
    sessions = [LegacySession(url) for _ in range(40)]
    for s in sessions:
        s.call("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    wait_until(lambda: threading.active_count() - before < 10, timeout=WAIT,
               message=lambda: threading.active_count() - before)


# -- defect 7: a 2026-07-28 client that accepts only JSON cancels by leaving --------------


def _raw_post(port: int, body: bytes, headers: dict[str, str]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def _json_only_slow_call(port: int, marker: Path, started: Path) -> None:
    body = json.dumps(modern_request("tools/call", {"name": "slow", "arguments": {
        "seconds": 30, "marker": str(marker), "started": str(started)}})).encode()
    headers = modern_headers("tools/call", "slow")
    headers["Accept"] = "application/json"
    sock = _raw_post(port, body, headers)
    wait_until(started.exists, timeout=WAIT, message="the call never started")
    sock.close()
    wait_until(marker.exists, timeout=WAIT,
               message="closing the connection did not cancel the call")


def test_json_only_disconnect_cancels_on_werkzeug(serve, tmp_path):
    served = serve()
    port = int(served.base.rsplit(":", 1)[1])
    _json_only_slow_call(port, tmp_path / "cancelled", tmp_path / "started")


@pytest.fixture(scope="module")
def gunicorn_base() -> Iterator[str]:
    with running_gunicorn("tests.http.gunicorn_fixture:app", workers=1) as base:
        yield base


def test_json_only_disconnect_cancels_on_gunicorn(gunicorn_base, tmp_path):
    port = int(gunicorn_base.rsplit(":", 1)[1])
    _json_only_slow_call(port, tmp_path / "cancelled", tmp_path / "started")


@pytest.fixture
def waitress_port() -> Iterator[Callable[..., int]]:
    """``start(**adjustments)``: the fixture server under waitress in this process."""
    from waitress.server import create_server

    from tests.server.fixture_server import server as fixture_server

    running: list[tuple[object, threading.Thread, object]] = []

    def start(**adjustments: object) -> int:
        app = fixture_server.wsgi_app(path="/mcp")
        httpd = create_server(app, host="127.0.0.1", port=0, threads=8, **adjustments)
        thread = threading.Thread(target=httpd.run, name="mcpsync-test-waitress", daemon=True)
        thread.start()
        running.append((httpd, thread, app))
        return int(httpd.effective_port)  # type: ignore[union-attr]

    yield start
    for httpd, thread, app in running:
        httpd.close()  # type: ignore[attr-defined]
        thread.join(WAIT)
        app.close()  # type: ignore[attr-defined]


def test_json_only_disconnect_cancels_on_waitress_reading_ahead(waitress_port, tmp_path):
    port = waitress_port(channel_request_lookahead=1)
    _json_only_slow_call(port, tmp_path / "cancelled", tmp_path / "started")


# -- defect 8: malformed framing is a 400 with a JSON-RPC body, the limit holds ----------


def _raw_exchange(port: int, request: bytes, then: Callable[[socket.socket], None] | None = None
                  ) -> tuple[int, bytes]:
    """Send ``request`` raw; return the status code and the body of the response."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(request)
        if then is not None:
            then(sock)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        while length is not None and len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, body


def _post_head(port: int, framing: str) -> bytes:
    headers = modern_headers("tools/call", "echo")
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items()) + framing + "\r\n").encode()


def _json_rpc_error(status: int, body: bytes, expected: int) -> None:
    assert status == expected, body[:300]
    message = json.loads(body)
    assert message["jsonrpc"] == "2.0" and "code" in message["error"], message


def _send_megabytes(count: int) -> Callable[[socket.socket], None]:
    def send(sock: socket.socket) -> None:
        block = b"x" * (1024 * 1024)
        try:
            for _ in range(count):
                sock.sendall(block)
        except OSError:
            pass  # the server answered and closed: fine, read its answer

    return send


def _framing_cases(port: int, *, server_owns_negative: bool) -> None:
    small = json.dumps(modern_request("tools/call", {"name": "echo",
                                                     "arguments": {"text": "hi"}})).encode()
    # Content-Length: -1 must not mean "read to EOF".
    status, body = _raw_exchange(port, _post_head(port, "Content-Length: -1\r\n"),
                                 _send_megabytes(8))
    if server_owns_negative:
        # gunicorn refuses it itself, with its own HTML 400, before the app runs.
        assert status == 400, body[:300]
    else:
        _json_rpc_error(status, body, 400)
    # A chunk size that is not hex.
    status, body = _raw_exchange(port, _post_head(port, "Transfer-Encoding: chunked\r\n")
                                 + b"zz\r\n" + small + b"\r\n0\r\n\r\n")
    _json_rpc_error(status, body, 400)
    # A chunked body far above the limit: 413, having read at most a little past it.
    status, body = _raw_exchange(port, _post_head(port, "Transfer-Encoding: chunked\r\n")
                                 + b"100000\r\n", _send_megabytes(64))
    _json_rpc_error(status, body, 413)
    # A chunked body with a truncated chunk (the client promised more than it sent).
    status, body = _raw_exchange(port, _post_head(port, "Transfer-Encoding: chunked\r\n")
                                 + b"ffff\r\n" + small,
                                 lambda sock: sock.shutdown(socket.SHUT_WR))
    _json_rpc_error(status, body, 400)
    # A Content-Length the body never reaches.
    status, body = _raw_exchange(port, _post_head(port, "Content-Length: 5000\r\n") + small,
                                 lambda sock: sock.shutdown(socket.SHUT_WR))
    _json_rpc_error(status, body, 400)
    # The server is still serving.
    answer = post_modern(f"http://127.0.0.1:{port}/mcp", "tools/call",
                         {"name": "echo", "arguments": {"text": "ok"}})
    assert answer.status_code == 200, answer.text


def test_malformed_framing_on_werkzeug(serve):
    served = serve(max_body_bytes=64 * 1024)
    port = int(served.base.rsplit(":", 1)[1])
    _framing_cases(port, server_owns_negative=False)


def test_malformed_framing_on_gunicorn(gunicorn_base):
    port = int(gunicorn_base.rsplit(":", 1)[1])
    _framing_cases(port, server_owns_negative=True)


# -- defect 14: half-open sessions expire in seconds ----------------------------------------


#: The handshake timeout of the expiry test: short, so it waits on the real clock.
HANDSHAKE = 1.5


def _initialize_only(url: str) -> requests.Response:
    return requests.post(url, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {},
                   "clientInfo": {"name": "half", "version": "0"}}},
        headers={"Accept": BOTH}, timeout=WAIT)


def test_sessions_that_never_come_back_expire_quickly(serve):
    # On the real clock, with a short handshake timeout. It ran on freezegun's ticking
    # clock, whose tick(11) moves to the frozen start + 11 s, dropping the time already
    # run: "11 s later" was 11 s minus the server's start-up, and on a loaded host (a
    # start-up over a second) a half-open session was not yet 10 s old (a flake).
    served = serve(max_sessions=4, session_handshake_timeout=HANDSHAKE)
    url = served.url
    half_open = [_initialize_only(url) for _ in range(3)]
    assert all(r.status_code == 200 for r in half_open)
    real = LegacySession(url)  # fills the fourth slot, and comes back
    # Full: a half-open session makes room (issue 25), never the one that came back.
    newcomer = _initialize_only(url)
    assert newcomer.status_code == 200
    assert real.call("ping")["result"] == {}

    def only_real_left() -> bool:  # each request may sweep (at most once a second)
        assert real.call("ping")["result"] == {}
        return len(served.app.sessions) == 1

    # The half-open ones go after HANDSHAKE seconds, long before the idle timeout (30 min);
    # the one that came back, made at the same time, stays.
    wait_until(only_real_left, timeout=WAIT, interval=0.1,
               message=lambda: f"{len(served.app.sessions)} sessions held")
    for response in [*half_open, newcomer]:
        gone = requests.post(url, json={"jsonrpc": "2.0", "method":
                                        "notifications/initialized"},
                             headers={"Accept": BOTH, "Mcp-Session-Id":
                                      response.headers["Mcp-Session-Id"]}, timeout=WAIT)
        assert gone.status_code == 404, gone.text
    fresh = [LegacySession(url) for _ in range(3)]  # the slots are free again
    assert all(s.call("ping")["result"] == {} for s in [*fresh, real])


# -- GET streams: a resumed one carries on; fresh ones do not pile up --------------------


def _list_changed(reader: SseReader) -> str:
    event = reader.next_event()
    assert event is not None and event.get("id"), event
    assert json.loads(str(event["data"]))["method"] == "notifications/tools/list_changed"
    return str(event["id"])


def test_resumed_get_stream_keeps_receiving(serve):
    srv = Server("get-resume")
    served = serve(srv)
    session = LegacySession(served.url)
    session.call("ping")
    first = session.get()
    reader = SseReader(first)
    assert reader.next_event() is not None  # priming
    srv.add_tool(lambda: "one", name="one")
    seen = _list_changed(reader)
    first.close()
    # The client reconnects where it left off; what the server sends next reaches it.
    resumed = _get_when_free(session, headers={"Last-Event-ID": seen})
    assert resumed.status_code == 200, resumed.text
    reader = SseReader(resumed)
    srv.add_tool(lambda: "two", name="two")
    _list_changed(reader)
    resumed.close()


def _get_when_free(session: LegacySession, **kwargs: object) -> requests.Response:
    """GET the stream once the server has noticed the previous one is gone (bounded)."""
    got: list[requests.Response] = []

    def free() -> bool:
        response = session.get(**kwargs)
        if response.status_code == 409:
            response.close()
            return False
        got.append(response)
        return True

    wait_until(free, timeout=WAIT, interval=0.05,
               message="the server never let go of the previous GET stream (409)")
    return got[-1]


def test_fresh_get_streams_do_not_pile_up(serve):
    srv = Server("get-fresh")
    served = serve(srv, keepalive_interval=0.2)
    session = LegacySession(served.url)
    session.call("ping")
    for n in range(20):
        stream = _get_when_free(session)
        assert stream.status_code == 200, stream.text
        reader = SseReader(stream)
        assert reader.next_event() is not None  # priming
        srv.add_tool(lambda: "x", name=f"t{n}")
        _list_changed(reader)
        stream.close()
    # A GET without Last-Event-ID gives up the earlier ones: their events are not kept.
    assert len(served.app.store) <= 2, len(served.app.store)


def test_an_answer_nobody_waits_for_is_not_held_by_the_session(serve):
    srv = Server("late")
    gate = threading.Event()

    @srv.tool()
    def late(ctx: HandlerContext) -> str:
        gate.wait(WAIT)
        return "l" * (256 * 1024)

    served = serve(srv)
    session = LegacySession(served.url)
    held = served.app.sessions.get(session.session_id)
    _, response = session.request("tools/call", {"name": "late", "arguments": {}}, stream=True)
    assert SseReader(response).next_event() is not None  # priming: the answer will stream
    response.close()  # a handshake-era client that leaves does not cancel
    wait_until(lambda: not any(s.attached for s in held._by_key.values()), timeout=WAIT)
    gate.set()
    # The answer waits in the (bounded) event store for a resume, not in the session.
    wait_until(lambda: served.app.store.size_bytes > 256 * 1024, timeout=WAIT)
    wait_until(lambda: held.streams_held == 0, timeout=WAIT,
               message=lambda: held.streams_held)


def test_a_cancelled_call_is_not_held_by_its_long_lived_session(serve):
    # Soak finding: a cancelled call gets no response, so its stream (and its stored
    # events, and its key) stayed in the session until the session ended: a few KiB per
    # timed-out call of a long-lived client, and the session never became idle.
    srv = Server("cancelled")
    started = threading.Semaphore(0)

    @srv.tool()
    def slow(ctx: HandlerContext) -> str:
        started.release()
        ctx.sleep(WAIT)
        return "finished"

    served = serve(srv)
    session = LegacySession(served.url)
    held = served.app.sessions.get(session.session_id)
    for _ in range(5):
        request_id, response = session.request(
            "tools/call", {"name": "slow", "arguments": {}}, stream=True)
        assert started.acquire(timeout=WAIT)
        cancel = session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                               "params": {"requestId": request_id}})
        assert cancel.status_code == 202, cancel.text
        response.close()
    wait_until(lambda: held.server_session.connection.inflight_count == 0, timeout=WAIT)
    wait_until(lambda: held.streams_held == 0, timeout=WAIT,
               message=lambda: held.streams_held)
    assert len(held._keys) == 0, len(held._keys)
    assert not held.busy()
    assert len(served.app.store) == 0, len(served.app.store)


def test_keys_of_streams_the_store_evicted_are_not_kept_by_the_session(serve):
    # Soak finding: a handshake-era stream whose client left keeps its key for a resume;
    # once the store has evicted its events, the session let go of the key only at its end.
    srv = Server("evicted")
    srv.add_tool(lambda: "x", name="quick")
    served = serve(srv, event_store=InMemoryEventStore(max_streams=4))
    session = LegacySession(served.url)
    held = served.app.sessions.get(session.session_id)
    for _ in range(1024 + 10):
        session.call("tools/call", {"name": "quick", "arguments": {}})
        # An interrupted stream's key, as a client that left mid-answer leaves it.
        with held._lock:
            held._keys.add(held._new_key())
    assert len(held._keys) < 1024, len(held._keys)
