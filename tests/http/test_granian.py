"""mcpsync's WSGI app under a real granian process (``--interface wsgi``, its blocking
threads), the server docs/wsgi.md recommends for throughput: what must hold there in both
eras (streamed progress before the result, the standalone GET stream, cancellation), and
what granian cannot tell the app (a JSON-only client that leaves), so the docs stay true.

granian is in the ``test`` extra; without it these tests skip (and fail in CI)."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import Client
from tests.helpers import require_module, wait_until
from tests.serving import free_port, serving_process

from .raw import (
    BOTH,
    LEGACY,
    WAIT,
    LegacySession,
    SseReader,
    envelope,
    modern_headers,
    modern_request,
)

require_module("granian")

ROOT = Path(__file__).resolve().parents[2]
#: The app's keep-alive interval in these tests (GRANIAN_TEST_KEEPALIVE in granian_app.py):
#: granian gives the app no socket, so a stream finds a departed client at its next comment.
KEEPALIVE = 1.0


@pytest.fixture(scope="module")
def granian_url() -> Iterator[str]:
    """``tests.http.granian_app:app`` under granian in a subprocess, stopped by its PID."""
    port = free_port()
    argv = [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
            "--port", str(port), "--workers", "1", "--blocking-threads", "16",
            "--http", "1", "--no-ws", "--log-level", "warning", "--no-access-log",
            "tests.http.granian_app:app"]
    env = dict(os.environ, GRANIAN_TEST_KEEPALIVE=str(KEEPALIVE),
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with serving_process(argv, port, cwd=ROOT, env=env) as base:
        yield f"{base}/mcp"


def _modern_post(url: str, tool: str, arguments: dict[str, Any], *, accept: str = BOTH,
                 meta: dict[str, Any] | None = None, request_id: int = 1) -> requests.Response:
    headers = modern_headers("tools/call", tool)
    headers["Accept"] = accept
    body = modern_request("tools/call", {"name": tool, "arguments": arguments}, request_id,
                          meta=meta)
    return requests.post(url, data=json.dumps(body), headers=headers, stream=True,
                         timeout=WAIT)


def _until_progress(reader: SseReader, steps: int) -> list[dict[str, Any]]:
    """The stream's progress notifications, read until ``steps`` of them arrived (each
    read bounded by the response's timeout: a buffered body fails here)."""
    seen: list[dict[str, Any]] = []
    while len(seen) < steps:
        event = reader.next_event()
        assert event is not None, "the stream ended before its progress arrived"
        if event.get("data") and event["data"].strip():
            message = json.loads(event["data"])
            assert message.get("method") == "notifications/progress", message
            seen.append(message)
    return seen


def _final(reader: SseReader, request_id: Any) -> dict[str, Any]:
    messages = reader.messages(request_id)
    assert messages and messages[-1].get("id") == request_id, messages
    return messages[-1]


# -- streaming ---------------------------------------------------------------------------


def test_modern_progress_streams_before_the_result(granian_url, tmp_path):
    gate = tmp_path / "gate"
    response = _modern_post(granian_url, "gated", {"gate": str(gate), "steps": 2},
                            meta=envelope(progressToken="p1"))
    with response:
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        reader = SseReader(response)
        progress = _until_progress(reader, 2)  # the tool is still waiting on its gate
        assert [m["params"]["progress"] for m in progress] == [1, 2]
        assert not gate.exists()
        gate.touch()
        final = _final(reader, 1)
    assert final["result"]["content"][0]["text"] == "opened"


def test_legacy_progress_streams_before_the_result(granian_url, tmp_path):
    gate = tmp_path / "gate"
    session = LegacySession(granian_url)
    request_id, response = session.request(
        "tools/call", {"name": "gated", "arguments": {"gate": str(gate), "steps": 3},
                       "_meta": {"progressToken": "p2"}}, stream=True)
    with response:
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "text/event-stream"
        reader = SseReader(response)
        progress = _until_progress(reader, 3)
        assert [m["params"]["progress"] for m in progress] == [1, 2, 3]
        gate.touch()
        final = _final(reader, request_id)
    assert final["result"]["content"][0]["text"] == "opened"


def test_legacy_get_stream_carries_list_changed(granian_url):
    session = LegacySession(granian_url)
    session.call("ping")
    stream = session.get()
    with stream:
        assert stream.status_code == 200
        assert stream.headers["Content-Type"] == "text/event-stream"
        reader = SseReader(stream)
        priming = reader.next_event()
        assert priming is not None and priming.get("id"), priming
        added = session.call("tools/call", {"name": "add_tool",
                                            "arguments": {"name": f"t{time.monotonic_ns()}"}})
        assert added["result"]["content"][0]["text"] == "added"
        event = reader.next_event()
        while event is not None and not (event.get("data") or "").strip():
            event = reader.next_event()  # keep-alive comments are skipped by the reader
        assert event is not None, "the GET stream ended"
        assert json.loads(event["data"]) == {"jsonrpc": "2.0",
                                             "method": "notifications/tools/list_changed"}


@pytest.mark.parametrize("version", ["2026-07-28", LEGACY])
def test_client_calls_with_progress(granian_url, version):
    with Client.http(granian_url, protocol_version=version, timeout=WAIT) as client:
        assert client.protocol_version == version
        assert client.call_tool("gated", {"gate": __file__}).text == "opened"
        seen: list[Any] = []
        result = client.call_tool("gated", {"gate": __file__, "steps": 4},
                                  on_progress=seen.append)
        assert result.text == "opened"
        assert [p.progress for p in seen] == [1, 2, 3, 4]


# -- cancellation ------------------------------------------------------------------------


def _raw_post(url: str, body: dict[str, Any], headers: dict[str, str]) -> socket.socket:
    port = int(url.split(":")[2].split("/")[0])
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n" + "".join(
        f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(head.encode() + f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    return sock


def _read_until(sock: socket.socket, needle: bytes) -> bytes:
    got = b""
    while needle not in got:
        chunk = sock.recv(65536)
        assert chunk, f"closed before {needle!r}: {got[-300:]!r}"
        got += chunk
    return got


def test_modern_stream_disconnect_cancels(granian_url, tmp_path):
    """A 2026-07-28 client that closes its SSE response cancels the call: granian gives the
    app no socket to look at, so the stream finds out when its next keep-alive comment
    cannot be written (``keepalive_interval``, 1 s here)."""
    started, marker = tmp_path / "started", tmp_path / "cancelled"
    sock = _raw_post(granian_url, modern_request("tools/call", {"name": "slow", "arguments": {
        "started": str(started), "marker": str(marker)}}), modern_headers("tools/call", "slow"))
    try:
        wait_until(started.exists, timeout=WAIT, message="the call never started")
        _read_until(sock, b"text/event-stream")  # past json_window: it is a stream now
    finally:
        sock.close()
    wait_until(marker.exists, timeout=WAIT,
               message="closing the stream did not cancel the call under granian")


def test_legacy_cancelled_notification_cancels(granian_url, tmp_path):
    """Handshake era: leaving is not cancelling (the spec's rule); notifications/cancelled
    on another POST is, and it reaches the running call under granian."""
    started, marker = tmp_path / "started", tmp_path / "cancelled"
    session = LegacySession(granian_url)
    request_id, response = session.request(
        "tools/call", {"name": "slow", "arguments": {"started": str(started),
                                                     "marker": str(marker)}}, stream=True)
    with response:
        wait_until(started.exists, timeout=WAIT, message="the call never started")
        reply = session.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                              "params": {"requestId": request_id, "reason": "test"}})
        assert reply.status_code == 202
        wait_until(marker.exists, timeout=WAIT, message="notifications/cancelled was lost")


def test_modern_json_only_disconnect_is_not_seen_until_the_answer(granian_url, tmp_path):
    """The limit docs/wsgi.md states for granian: a 2026-07-28 client that accepts only
    JSON and leaves is not noticed (granian exposes neither the socket nor a disconnect
    check, and a JSON wait writes nothing before the answer), so its call runs on; the
    server stays healthy. If granian starts telling the app, this fails: update the docs
    (and the probe in mcpsync/http/replies.py)."""
    started, marker = tmp_path / "started", tmp_path / "cancelled"
    finished = tmp_path / "finished"
    headers = modern_headers("tools/call", "slow")
    headers["Accept"] = "application/json"
    sock = _raw_post(granian_url, modern_request("tools/call", {"name": "slow", "arguments": {
        "started": str(started), "marker": str(marker), "finished": str(finished),
        "seconds": 3 * KEEPALIVE}}), headers)
    wait_until(started.exists, timeout=WAIT, message="the call never started")
    sock.close()
    # The same call on a stream is cancelled within ~2 keep-alives (the test above); this
    # one runs to its end, 3 keep-alives later, uncancelled.
    wait_until(lambda: finished.exists() or marker.exists(), timeout=WAIT,
               message="the call neither finished nor was cancelled")
    assert not marker.exists(), "granian told the app: docs/wsgi.md's limit is out of date"
    with Client.http(granian_url, timeout=WAIT) as client:  # and the server still serves
        assert client.call_tool("gated", {"gate": __file__}).text == "opened"
