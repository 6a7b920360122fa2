"""The HTTP client against servers that are broken or hostile, on a raw socket server:
each misbehaviour fails the one call it concerns, quickly, with a clear local error
(a TransportError, never an MCPError), and costs bounded memory and threads."""

from __future__ import annotations

import json
import threading
import time

import pytest

from mcpsync import (
    Client,
    MCPError,
    MessageTooLargeError,
    RequestTimeoutError,
    TransportError,
    TransportTimeoutError,
)
from mcpsync.transports.http.io import Backoff
from tests.helpers import WAIT, stack_probe

from .hostile import LEGACY, MODERN, RawHttpServer, RawRequest, modern_script

MiB = 1024 * 1024


def text_result(text: str) -> dict:
    return {"resultType": "complete", "content": [{"type": "text", "text": text}]}


def answer_bytes(request: RawRequest, text: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request.rpc_id,
                       "result": text_result(text)}).encode()


def big_or_small(request: RawRequest) -> None:
    """``tools/call big`` is answered with 40 MiB, without a Content-Length; ``small`` fine."""
    name = (request.json.get("params") or {}).get("name")
    if name != "big":
        request.answer(text_result("small"))
        return
    body = answer_bytes(request, "x" * (40 * MiB))
    request.send_head(200, "application/json")  # no length: the body ends at close
    view = memoryview(body)
    for offset in range(0, len(body), MiB):
        request.sock.sendall(view[offset:offset + MiB])


@pytest.fixture
def client_for():
    made: list[tuple[RawHttpServer, Client]] = []

    def make(script, **options) -> tuple[RawHttpServer, Client]:
        server = RawHttpServer(script)
        options.setdefault("protocol_version", MODERN)
        options.setdefault("timeout", WAIT)
        try:
            client = Client.http(server.url, **options)
        except BaseException:
            server.stop()
            raise
        made.append((server, client))
        return server, client

    yield make
    for server, client in reversed(made):
        client.close()
        server.stop()


def test_a_json_answer_over_the_bound_fails_that_call(client_for):
    _, client = client_for(modern_script(big_or_small))
    started = time.monotonic()
    with pytest.raises(MessageTooLargeError) as caught:
        client.call_tool("big")
    assert "16777216" in str(caught.value)
    assert not isinstance(caught.value, MCPError)
    assert time.monotonic() - started < WAIT
    assert client.call_tool("small").text == "small"  # the connection is still good


def test_a_declared_length_over_the_bound_is_refused_unread(client_for):
    def declared(request: RawRequest) -> None:
        request.send_head(200, "application/json", length=300 * MiB)
        request.sock.sendall(b'{"jsonrpc": "2.0", ')
        request.wait_for_hangup(WAIT)

    _, client = client_for(modern_script(declared))
    with pytest.raises(MessageTooLargeError, match="314572800 bytes"):
        client.call_tool("huge")


def test_the_bound_is_a_client_option(client_for):
    _, client = client_for(modern_script(big_or_small), max_message_bytes=64 * 1024)
    assert client.call_tool("small").text == "small"
    with pytest.raises(MessageTooLargeError, match="65536"):
        client.call_tool("big")


def test_an_sse_event_over_the_bound_fails_that_call(client_for):
    def streams(request: RawRequest) -> None:
        request.send_head(200, "text/event-stream")
        request.sock.sendall(b"data: " + answer_bytes(request, "y" * (17 * MiB)) + b"\n\n")

    _, client = client_for(modern_script(streams))
    with pytest.raises(MessageTooLargeError):
        client.call_tool("big")


def test_a_silent_server_frees_the_thread_after_the_read_timeout(client_for):
    hung_up: list[bool] = []

    def silent(request: RawRequest) -> None:
        hung_up.append(request.wait_for_hangup(WAIT))

    server, client = client_for(modern_script(silent), read_timeout=1.0)
    with pytest.raises(RequestTimeoutError):
        client.call_tool("silent", timeout=0.3)
    # The call's worker gave up on the socket: the server sees the client hang up.
    assert server.wait_for(lambda: bool(hung_up), WAIT)
    assert hung_up == [True]


def test_a_call_longer_than_the_read_timeout_fails_with_a_transport_timeout(client_for):
    def silent(request: RawRequest) -> None:
        request.wait_for_hangup(WAIT)

    _, client = client_for(modern_script(silent), read_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(TransportTimeoutError):
        client.call_tool("silent", timeout=WAIT)
    assert time.monotonic() - started < WAIT / 2


@pytest.mark.parametrize("framing", ["json", "sse"])
def test_json_nested_too_deep_fails_the_call_at_once(client_for, framing):
    deep = b"[" * 100_000 + b"]" * 100_000

    def nested(request: RawRequest) -> None:
        if framing == "json":
            request.send_body(deep)
        else:
            request.send_head(200, "text/event-stream")
            request.sock.sendall(b"data: " + deep + b"\n\n")

    _, client = client_for(modern_script(nested))
    started = time.monotonic()
    with stack_probe() as headroom, pytest.raises(TransportError):
        client.call_tool("deep")
    assert time.monotonic() - started < WAIT / 2, "the call waited for its timeout"
    # The parser never descended far enough to starve what the garbage collector ran
    # meanwhile (once in four CI runs, finalizers failed with RecursionError here).
    assert headroom and all(headroom), "code run during the parse ran out of stack"


@pytest.mark.parametrize("status", [400, 500])
def test_an_error_body_nested_too_deep_fails_the_call_with_its_status(client_for, status):
    # The body of an HTTP error is read for a JSON-RPC error with the same bounds as a
    # message: the parser never descends past the limit (it used to go ~1000 levels deep,
    # starving whatever the garbage collector ran meanwhile), and the call fails with the
    # status.
    deep = b'{"jsonrpc":"2.0","id":null,"error":' + b"[" * 100_000 + b"]" * 100_000 + b"}"

    def refusing(request: RawRequest) -> None:
        request.send_body(deep, status=status)

    _, client = client_for(modern_script(refusing))
    with stack_probe() as headroom, pytest.raises(MCPError, match=f"HTTP {status}"):
        client.call_tool("deep")
    assert headroom and all(headroom), "code run during the parse ran out of stack"


def legacy_script(get_stream) -> object:
    def script(request: RawRequest) -> None:
        if request.method == "GET":
            get_stream(request)
        elif request.method == "DELETE":
            request.send_body(b"", status=200)
        elif request.rpc_method == "initialize":
            request.answer({"protocolVersion": LEGACY, "capabilities": {},
                            "serverInfo": {"name": "raw", "version": "1"}},
                           Mcp_Session_Id="s-1")
        elif request.rpc_id is None or request.rpc_method is None:
            request.accepted()
        else:
            request.answer(text_result("ok"))

    return script


def test_a_get_stream_that_ends_at_once_is_reconnected_with_backoff(client_for):
    def ends_at_once(request: RawRequest) -> None:
        request.send_head(200, "text/event-stream")
        request.sock.sendall(b"retry: 0\n\n")

    server, client = client_for(legacy_script(ends_at_once), protocol_version=LEGACY)
    assert client.call_tool("anything").text == "ok"
    # Without a floor and backoff this was 46 GETs in 2 s; now 0.5 s, 1 s, 2 s, ...
    assert not server.wait_for(lambda: len(server.seen("GET")) > 5, 2.0)
    assert 1 <= len(server.seen("GET")) <= 5


def test_backoff_floor_doubling_cap_and_reset():
    backoff = Backoff(floor=0.5, cap=4.0)
    assert [backoff.next_delay(0) for _ in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    backoff.reset()
    assert backoff.next_delay(3000) == 3.0  # the server's retry: above the floor
    assert backoff.next_delay(None) == 2.0  # no retry: 1 s, doubled once


def test_a_get_stream_that_never_answers_does_not_outlive_close(client_for):
    hung_up: list[bool] = []

    def never_answers(request: RawRequest) -> None:
        hung_up.append(request.wait_for_hangup(WAIT))

    server, client = client_for(legacy_script(never_answers), protocol_version=LEGACY,
                                read_timeout=1.0)
    assert client.call_tool("anything").text == "ok"
    client.close()
    assert server.wait_for(lambda: bool(hung_up) and all(hung_up), WAIT)
    getters = [t for t in threading.enumerate() if t.name == "mcpsync-http-client-get"]
    for thread in getters:
        thread.join(WAIT)
    assert not any(t.is_alive() for t in getters)


def test_close_does_not_read_a_huge_answer_to_delete(client_for):
    def script(request: RawRequest) -> None:
        if request.method == "DELETE":
            request.send_head(200, "application/json", length=300 * MiB)
            try:
                for _ in range(50):
                    request.sock.sendall(b"x" * MiB)
            except OSError:
                return
            request.wait_for_hangup(WAIT)
        else:
            legacy_script(lambda get: get.send_body(b"", status=405))(request)

    server, client = client_for(script, protocol_version=LEGACY)
    assert client.call_tool("anything").text == "ok"
    started = time.monotonic()
    client.close()
    assert len(server.seen("DELETE")) == 1
    assert time.monotonic() - started < 3.0  # reading it (until the 5 s timeout) took longer
