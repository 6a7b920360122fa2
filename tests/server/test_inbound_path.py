"""One inbound path: the server's middleware sees the same traffic on every transport and
in both eras, and handlers and middleware see the request's transport context."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from mcpsync import Client, Server
from mcpsync.protocol.jsonrpc import Message
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.serving import RunningServer

from .traffic_server import build

MODERN = MODERN_VERSIONS[0]
HANDSHAKE = "2025-11-25"
WAIT = 30.0
ROOT = Path(__file__).resolve().parents[2]


def test_server_middleware_runs_for_2026_07_28_requests_over_http() -> None:
    """The bug: ``_run_modern`` called the handler directly, so recv and send middleware
    saw nothing over HTTP in 2026-07-28 (the default era of ``Client.http``)."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    server = Server("mw", modern_versions=MODERN_VERSIONS, request_state_key="mw")

    def recv(message: Message, next_: Any) -> None:
        with lock:
            seen.append(("recv", type(message).__name__))
        next_(message)

    def send(message: Message, next_: Any) -> None:
        with lock:
            seen.append(("send", type(message).__name__))
        next_(message)

    server.recv_middleware.append(recv)
    server.send_middleware.append(send)

    @server.tool()
    def hello() -> str:
        return "hi"

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=MODERN, timeout=WAIT) as client:
        assert client.call_tool("hello").content[0].text == "hi"  # type: ignore[union-attr]
    assert ("recv", "Request") in seen
    assert ("send", "Response") in seen


def _session(client: Client) -> list[tuple[Any, ...]]:
    """The same client script on every transport; the tool's view of its transport."""
    assert "work" in {tool.name for tool in client.list_tools()}
    progress: list[Any] = []
    seen = json.loads(client.call_tool("work", {"steps": 2}, on_progress=progress.append).text)
    assert [p.progress for p in progress] == [1, 2]
    assert client.call_tool("fail").is_error
    return [seen]


def _run(transport: str, version: str, tmp_path: Path) -> tuple[list[dict[str, Any]],
                                                                  dict[str, Any]]:
    records: list[dict[str, Any]] = []
    lock = threading.Lock()

    def record(entry: dict[str, Any]) -> None:
        with lock:
            records.append(entry)

    if transport == "stdio":
        log = tmp_path / f"traffic-{version}.jsonl"
        with Client.stdio([sys.executable, "-m", "tests.server.traffic_server"], cwd=ROOT,
                          env={"MCPSYNC_TRAFFIC_LOG": str(log)}, protocol_version=version,
                          timeout=WAIT) as client:
            seen = _session(client)[0]
        # The process has exited (closing the client reaps it): its records are whole.
        lines = log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines], seen
    server = build(record)
    if transport == "memory":
        with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
            seen = _session(client)[0]
        return records, seen
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + ("/sse" if transport == "http-sse" else "/mcp")
        with Client.http(url, protocol_version=version, timeout=WAIT,
                         headers={"User-Agent": "traffic-test"}) as client:
            seen = _session(client)[0]
    with lock:
        return list(records), seen


def _traffic(records: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(r["dir"], r["kind"], r["method"]) for r in records]


CASES = [("stdio", HANDSHAKE), ("memory", HANDSHAKE), ("http", HANDSHAKE),
         ("http-sse", "2024-11-05"), ("stdio", MODERN), ("memory", MODERN), ("http", MODERN)]


def test_same_middleware_sees_the_same_traffic_on_every_transport_and_era(
        tmp_path: Path) -> None:
    runs = {case: _run(*case, tmp_path) for case in CASES}
    handshake = _traffic(runs["stdio", HANDSHAKE][0])
    assert handshake == [
        ("recv", "request", "initialize"), ("send", "response", "initialize"),
        ("recv", "notification", "notifications/initialized"),
        ("recv", "request", "tools/list"), ("send", "response", "tools/list"),
        ("recv", "request", "tools/call"),
        ("send", "notification", "notifications/progress"),
        ("send", "notification", "notifications/progress"),
        ("send", "response", "tools/call"),
        ("recv", "request", "tools/call"), ("send", "response", "tools/call"),
    ]
    modern = _traffic(runs["stdio", MODERN][0])
    assert [entry for entry in modern if entry[2] != "server/discover"] == [
        entry for entry in handshake
        if entry[2] not in ("initialize", "notifications/initialized")]
    for (transport, version), (records, seen) in runs.items():
        era = modern if version == MODERN else handshake
        assert _traffic(records) == era, (transport, version)
        kind = "http" if transport.startswith("http") else transport
        # Middleware saw the same context as the handler, on every message.
        assert {r["transport"] for r in records} == {kind}, (transport, version)
        assert {r["reverse"] for r in records} == {version != MODERN}, (transport, version)
        assert seen["kind"] == kind and seen["reverse"] == (version != MODERN)
        assert seen["auth"] is None
        if kind == "http":
            assert seen["remote"] == "127.0.0.1"
            assert seen["agent"] == "traffic-test"
            assert {r["agent"] for r in records if r["dir"] == "recv"} == {"traffic-test"}
            assert (seen["session"] is not None) == (version != MODERN)
            assert {r["session"] for r in records} == {version != MODERN}
        else:
            assert seen["remote"] is None and seen["agent"] is None
            assert seen["session"] is None
