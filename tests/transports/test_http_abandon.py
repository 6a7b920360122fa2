"""A call given up on (timed out, cancelled, interrupted, the client closed) has its HTTP
exchange ended at once: its POST thread returns, the server sees the connection hang up,
and the next call goes out on a new connection. Before, each such call left its thread
blocked until the server answered or ``read_timeout`` (>= 70 s) ran out: five timed-out
calls against a server that never answers left five threads.

"Busy" below is a POST thread of the transport's pool (``mcpsync-http-client-N``) still in
transport code: an idle pool thread waits for work outside it, and is reused."""

from __future__ import annotations

import re
import signal
import sys
import threading

import pytest
import requests

from mcpsync import (
    Client,
    ClientMiddleware,
    ConnectionClosedError,
    RequestCancelledError,
    RequestTimeoutError,
)
from tests.helpers import WAIT, wait_until

from .hostile import LEGACY, MODERN, RawHttpServer, RawRequest, modern_script

FREED = 2.0  # seconds after a call ends by which its thread must be back (it takes ~0)
_POST_THREAD = re.compile(r"mcpsync-http-client-\d+")


def post_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if _POST_THREAD.fullmatch(t.name)]


def busy_posts() -> list[str]:
    """The POST threads still inside transport code (blocked on a socket, say)."""
    frames = sys._current_frames()
    busy = []
    for thread in post_threads():
        frame = frames.get(thread.ident or -1)
        while frame is not None:
            if "mcpsync/transports/" in frame.f_code.co_filename.replace("\\", "/"):
                busy.append(thread.name)
                break
            frame = frame.f_back
    return busy


def text_result(text: str) -> dict:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


class Tools:
    """``tools/call hang`` is never answered (the server waits for the client to hang up,
    and records that it did); ``quick`` is answered at once; ``stall`` opens an SSE
    answer, sends a keep-alive comment every 50 ms (no read timeout ever fires) and
    never the answer."""

    def __init__(self) -> None:
        self.hung_up: list[bool] = []

    def __call__(self, request: RawRequest) -> None:
        name = (request.json.get("params") or {}).get("name")
        if name == "quick":
            request.answer(text_result("quick"))
        elif name == "stall":
            request.send_head(200, "text/event-stream")
            request.sock.sendall(b"id: e-1\ndata: \n\n")
            while not request.server.stopping.wait(0.05):
                request.sock.sendall(b": still thinking\n\n")
        else:
            self.hung_up.append(request.wait_for_hangup(WAIT))


def handshake_script(tools: Tools, *, answer_initialize: bool = True):
    """A 2025-11-25 server with a session: no standalone GET stream (405)."""

    def script(request: RawRequest) -> None:
        if request.method == "GET":
            request.send_body(b"", status=405)
        elif request.method == "DELETE":
            request.send_body(b"", status=200)
        elif request.rpc_method == "initialize":
            if not answer_initialize:
                tools.hung_up.append(request.wait_for_hangup(WAIT))
                return
            request.answer({"protocolVersion": LEGACY, "capabilities": {"tools": {}},
                            "serverInfo": {"name": "raw", "version": "1"}},
                           Mcp_Session_Id="s-1")
        elif request.rpc_id is None or request.rpc_method is None:
            request.accepted()
        else:
            tools(request)

    return script


ERAS = {MODERN: lambda tools: modern_script(tools), LEGACY: handshake_script}


@pytest.fixture(params=[MODERN, LEGACY], ids=["2026-07-28", "2025-11-25"])
def raw(request):
    tools = Tools()
    server = RawHttpServer(ERAS[request.param](tools))
    client = Client.http(server.url, protocol_version=request.param, timeout=WAIT)
    try:
        yield server, client, tools
    finally:
        client.close()
        server.stop()


def test_timed_out_calls_free_their_threads_at_once(raw):
    server, client, tools = raw
    assert client.call_tool("quick").text == "quick"
    before = len(post_threads())
    for _ in range(5):
        with pytest.raises(RequestTimeoutError):
            client.call_tool("hang", timeout=0.5)
    wait_until(lambda: not busy_posts(), timeout=FREED,
               message=lambda: f"still blocked: {busy_posts()}")
    # Each given-up call's socket was shut down: the server saw all five hang up.
    assert server.wait_for(lambda: len(tools.hung_up) == 5, WAIT)
    assert all(tools.hung_up)
    # The freed threads were reused: a call's thread may still be on its way back to the
    # pool when the next call starts, next to a cancel notification's POST (2025-11-25);
    # on the old code there were five more, all blocked.
    assert len(post_threads()) <= before + 2
    assert client.call_tool("quick").text == "quick"  # a new connection works


def test_a_stalled_sse_answer_is_ended_with_its_call(raw):
    _, client, _ = raw
    with pytest.raises(RequestTimeoutError):
        client.call_tool("stall", timeout=0.5)
    wait_until(lambda: not busy_posts(), timeout=FREED,
               message=lambda: f"still blocked: {busy_posts()}")
    assert client.call_tool("quick").text == "quick"


def test_ctrl_c_while_waiting_frees_the_thread(raw):
    server, client, tools = raw
    assert threading.current_thread() is threading.main_thread()
    seen = threading.Event()

    def interrupt() -> None:
        if server.wait_for(lambda: bool(server.seen("POST", "tools/call")), WAIT):
            seen.set()
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    helper = threading.Thread(target=interrupt, name="t-interrupt", daemon=True)
    helper.start()
    with pytest.raises(KeyboardInterrupt):
        client.call_tool("hang", timeout=WAIT)
    helper.join(WAIT)
    assert seen.is_set()
    wait_until(lambda: not busy_posts(), timeout=FREED,
               message=lambda: f"still blocked: {busy_posts()}")
    assert server.wait_for(lambda: tools.hung_up == [True], WAIT)
    assert client.call_tool("quick").text == "quick"


def test_a_request_cancelled_from_another_thread_frees_its_thread(raw):
    # A request that stays open (no deadline of its own: begin_request) ended by
    # cancel_request, as a subscription's close does.
    server, client, tools = raw
    connection = client._connection
    request_id, future = connection.begin_request(
        "tools/call", {"name": "hang", "arguments": {}})
    assert server.wait_for(lambda: bool(server.seen("POST", "tools/call")), WAIT)
    canceller = threading.Thread(
        target=connection.cancel_request, args=(request_id, "the test is done"),
        name="t-cancel", daemon=True)
    canceller.start()
    canceller.join(WAIT)
    with pytest.raises(RequestCancelledError):
        future.result(WAIT)
    wait_until(lambda: not busy_posts(), timeout=FREED,
               message=lambda: f"still blocked: {busy_posts()}")
    assert server.wait_for(lambda: tools.hung_up == [True], WAIT)
    assert client.call_tool("quick").text == "quick"


def test_closing_the_client_ends_a_call_in_flight(raw):
    server, client, tools = raw
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.call_tool("hang", timeout=WAIT)
        except BaseException as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call, name="t-caller", daemon=True)
    caller.start()
    assert server.wait_for(lambda: bool(server.seen("POST", "tools/call")), WAIT)
    client.close()
    caller.join(WAIT)
    assert len(outcome) == 1 and isinstance(outcome[0], ConnectionClosedError)
    wait_until(lambda: not busy_posts(), timeout=FREED,
               message=lambda: f"still blocked: {busy_posts()}")
    assert server.wait_for(lambda: tools.hung_up == [True], WAIT)


def test_an_initialize_that_times_out_leaves_no_thread():
    # initialize is never cancelled on the server (the spec forbids it), but its exchange
    # ends all the same when the client gives up on it.
    tools = Tools()
    with RawHttpServer(handshake_script(tools, answer_initialize=False)) as server:
        with pytest.raises(RequestTimeoutError):
            Client.http(server.url, protocol_version=LEGACY, timeout=0.5)
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        assert server.wait_for(lambda: tools.hung_up == [True], WAIT)


def test_a_resumption_the_server_never_answers_ends_with_its_call():
    # 2025-11-25: the answer's stream breaks after an event id, so the client resumes
    # with a GET (Last-Event-ID) that the server never answers. The GET is part of the
    # call's exchange: giving up on the call ends it too.
    tools = Tools()
    resumed: list[bool] = []

    def script(request: RawRequest) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            resumed.append(request.wait_for_hangup(WAIT))
        elif request.rpc_method == "tools/call":
            request.send_head(200, "text/event-stream")
            request.sock.sendall(b"id: e-1\nretry: 0\ndata: \n\n")  # then the stream ends
        else:
            handshake_script(tools)(request)

    with RawHttpServer(script) as server, Client.http(
            server.url, protocol_version=LEGACY, timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("breaks", timeout=1.5)
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        assert server.wait_for(lambda: resumed == [True], WAIT)


def test_close_ends_a_get_stream_whose_head_trickles():
    # The standalone GET stream's head, one header line every 0.3 s: each read is quick,
    # so no read timeout ever fires (and http.client's 100-header limit takes 30 s).
    # close() used to leave its thread reading.
    tools = Tools()

    def script(request: RawRequest) -> None:
        if request.method != "GET":
            handshake_script(tools)(request)
            return
        request.sock.sendall(b"HTTP/1.1 200 OK\r\n")
        while not request.server.stopping.wait(0.3):
            request.sock.sendall(b"X-Slow: 1\r\n")

    with RawHttpServer(script) as server:
        client = Client.http(server.url, protocol_version=LEGACY, timeout=WAIT)
        assert server.wait_for(lambda: bool(server.seen("GET")), WAIT)
        assert client.call_tool("quick").text == "quick"
        getters = [t for t in threading.enumerate() if t.name == "mcpsync-http-client-get"]
        assert getters
        client.close()
        for thread in getters:
            thread.join(FREED)
        assert not any(t.is_alive() for t in getters)


@pytest.mark.parametrize("version", [MODERN, LEGACY], ids=["2026-07-28", "2025-11-25"])
def test_a_callers_own_session_gets_its_read_timeouts_lowered_to_the_deadline(version):
    # mcpsync never mounts its adapter on a session it was given, so it can not cut that
    # exchange short; but no read of it waits past the call's deadline (it waited 70 s).
    tools = Tools()
    session = requests.Session()
    with RawHttpServer(ERAS[version](tools)) as server, Client.http(
            server.url, session=session, protocol_version=version, timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("hang", timeout=0.5)
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        assert client.call_tool("quick").text == "quick"
    assert all(type(a) is requests.adapters.HTTPAdapter for a in session.adapters.values())
    session.close()


@pytest.mark.parametrize("version", [MODERN, LEGACY], ids=["2026-07-28", "2025-11-25"])
def test_ctrl_c_while_the_call_is_being_sent_frees_the_thread(version):
    """Ctrl-C lands just after the POST went out, before the call waits for its answer
    (on a loaded machine it did: the main thread was still returning from the send). The
    call is given up as one interrupted while waiting is, not left to its timeout."""
    tools = Tools()
    server = RawHttpServer(ERAS[version](tools))

    def interrupt_after_sending(message, next_):
        next_(message)
        if getattr(message, "method", None) == "tools/call" and message.params["name"] == "hang":
            # the server has the POST, the caller is not waiting for the answer yet
            assert server.wait_for(lambda: any(
                (r.json.get("params") or {}).get("name") == "hang"
                for r in server.seen("POST", "tools/call")), WAIT)
            raise KeyboardInterrupt

    client = Client.http(server.url, protocol_version=version, timeout=WAIT,
                         middleware=ClientMiddleware(send=[interrupt_after_sending]))
    try:
        assert client.call_tool("quick").text == "quick"
        with pytest.raises(KeyboardInterrupt):
            client.call_tool("hang", timeout=WAIT)
        wait_until(lambda: not busy_posts(), timeout=FREED,
                   message=lambda: f"still blocked: {busy_posts()}")
        assert server.wait_for(lambda: tools.hung_up == [True], FREED)
        if version == LEGACY:  # and the server was told (2026-07-28: the hang-up tells it)
            assert server.wait_for(
                lambda: bool(server.seen("POST", "notifications/cancelled")), FREED)
        assert client.call_tool("quick").text == "quick"
    finally:
        client.close()
        server.stop()
