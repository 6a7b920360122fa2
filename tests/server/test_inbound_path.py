"""One inbound path: the server's middleware sees the same traffic on every transport and
in both eras, and handlers and middleware see the request's transport context."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import requests

from mcpsync import (
    Client,
    HandlerContext,
    HostHandlers,
    InvalidRequestError,
    MCPError,
    ProtocolOptions,
    Server,
    TransportContext,
    current_transport,
)
from mcpsync.errors import INTERNAL_ERROR, INVALID_REQUEST
from mcpsync.protocol.jsonrpc import Message, Request
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.helpers import WAIT
from tests.http.raw import BOTH, envelope, modern_headers, post_modern
from tests.serving import RunningServer

from .traffic_server import build

MODERN = MODERN_VERSIONS[0]
HANDSHAKE = "2025-11-25"
ROOT = Path(__file__).resolve().parents[2]


def test_server_middleware_runs_for_2026_07_28_requests_over_http() -> None:
    """The bug: ``_run_modern`` called the handler directly, so recv and send middleware
    saw nothing over HTTP in 2026-07-28 (the default era of ``Client.http``)."""
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()
    server = Server("mw", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="mw")

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
        if transport == "http-sse":
            # The client first POSTs to the old transport's stream URL (the spec's
            # fallback): that refusal is an answer like any other, through the send
            # middleware too (it has no request method: no handler saw it).
            assert _traffic(records)[0] == ("send", "error", None)
            records = records[1:]
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


# -- refusing in receive middleware, and the auth slot -------------------------------------


def _api_key_server() -> Server:
    """The docs' example: over HTTP, no X-Api-Key header, no service."""
    server = Server("keyed", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="keyed")

    def require_api_key(message: Message, next_: Any) -> None:
        transport = current_transport()
        if transport is not None and transport.kind == "http" and isinstance(message, Request):
            key = transport.headers.get("X-Api-Key")
            if key is None:
                raise InvalidRequestError("Unauthorized: send an X-Api-Key header")
            transport.auth = {"key": key, "from": transport.remote_addr}
        next_(message)

    server.recv_middleware.append(require_api_key)

    @server.tool()
    def whoami(ctx: HandlerContext) -> str:
        return json.dumps(ctx.auth)

    return server


@pytest.mark.parametrize("version", [MODERN, HANDSHAKE])
def test_receive_middleware_refuses_over_http_and_fills_the_auth_slot(version: str) -> None:
    app = _api_key_server().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        if version == MODERN:
            refused = post_modern(url, "tools/list", {})
        else:
            refused = requests.post(url, timeout=WAIT, headers={
                "Content-Type": "application/json", "Accept": BOTH}, data=json.dumps({
                    "jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
                        "protocolVersion": version, "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"}}}))
        # An answer for that request, the middleware's error: no hang, no 500.
        assert refused.status_code == 400
        body = refused.json()
        assert body["error"] == {"code": INVALID_REQUEST,
                                 "message": "Unauthorized: send an X-Api-Key header"}
        assert body["id"] == (1 if version == MODERN else 7)
        with Client.http(url, protocol_version=version, timeout=WAIT,
                         headers={"X-Api-Key": "k-1"}) as client:
            assert json.loads(client.call_tool("whoami").text) == {"key": "k-1",
                                                                    "from": "127.0.0.1"}


def test_the_auth_slot_is_per_message_and_nothing_else_can_change() -> None:
    server = _api_key_server()
    with Client.memory(server, timeout=WAIT) as client:  # not HTTP: no key asked for
        assert json.loads(client.call_tool("whoami").text) is None
    transport = TransportContext("http", headers={"X-Api-Key": "k"}, session_id="s")
    assert transport.headers["x-api-key"] == "k" and "X-API-KEY" in transport.headers
    for name in ("kind", "headers", "remote_addr", "session_id", "can_receive_requests"):
        with pytest.raises(AttributeError):
            setattr(transport, name, None)
    with pytest.raises(TypeError):
        transport.headers["x-api-key"] = "other"  # type: ignore[index]
    transport.auth = "someone"
    fresh = transport.for_message(Request(1, "tools/list", {}))
    assert fresh is not transport and fresh.auth == "someone" and fresh.session_id == "s"
    fresh.auth = "someone else"
    assert transport.auth == "someone"
    stateless = transport.for_message(Request(2, "tools/list", {"_meta": envelope()}))
    assert stateless.session_id is None and not stateless.can_receive_requests
    # A session's context from a request's (the HTTP intake's, before initialize made one).
    sessionless = TransportContext("http", headers={"X-Api-Key": "k"}, remote_addr="10.0.0.1",
                                   can_receive_requests=False, auth="someone")
    session = sessionless.for_session("new")
    assert session.session_id == "new" and session.can_receive_requests
    assert session.headers["x-api-key"] == "k" and session.remote_addr == "10.0.0.1"
    assert session.auth == "someone" and sessionless.session_id is None
    assert current_transport() is None  # nothing is left bound on this thread


def _refusing_server(seen: list[tuple[str, str, Any]]) -> Server:
    """Refuses ``tools/call`` of ``secret`` in receive middleware; records what the send
    middleware sees."""
    server = build(lambda entry: None)

    def refuse(message: Message, next_: Any) -> None:
        if isinstance(message, Request) and (message.params or {}).get("name") == "secret":
            raise MCPError("Forbidden: secret", code=-32050)
        if isinstance(message, Request) and (message.params or {}).get("name") == "boom":
            raise RuntimeError("a middleware bug, with a secret in its text")
        next_(message)

    def send(message: Message, next_: Any) -> None:
        transport = current_transport()
        seen.append((type(message).__name__, transport.kind if transport else None,
                     getattr(message, "error", None)))
        next_(message)

    server.recv_middleware.insert(0, refuse)
    server.send_middleware.insert(0, send)
    return server


@pytest.mark.parametrize("transport,version", [("memory", HANDSHAKE), ("memory", MODERN),
                                                ("http", HANDSHAKE), ("http", MODERN)])
def test_a_request_refused_by_middleware_is_answered_through_send_middleware(
        transport: str, version: str) -> None:
    seen: list[tuple[str, str, Any]] = []
    server = _refusing_server(seen)
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        client = (Client.memory(server, protocol_version=version, timeout=WAIT)
                  if transport == "memory" else
                  Client.http(running.base + "/mcp", protocol_version=version, timeout=WAIT))
        with client:
            with pytest.raises(MCPError) as refused:
                client.call_tool("secret")
            assert refused.value.code == -32050 and "Forbidden" in str(refused.value)
            with pytest.raises(MCPError) as failed:
                client.call_tool("boom")
            assert failed.value.code == INTERNAL_ERROR and "secret" not in str(failed.value)
            assert client.call_tool("work", {"steps": 1}).text  # the session lives on
    errors = [error for name, kind, error in seen if name == "ErrorResponse"]
    assert errors == [{"code": -32050, "message": "Forbidden: secret"},
                      {"code": INTERNAL_ERROR, "message": "Internal error"}]
    assert {kind for _, kind, _ in seen} == {transport}


def test_a_2026_07_28_notification_posted_over_http_runs_through_recv_middleware() -> None:
    seen: list[tuple[str, Any, Any]] = []
    server = Server("notes", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="notes")

    def recv(message: Message, next_: Any) -> None:
        transport = current_transport()
        assert transport is not None
        seen.append((getattr(message, "method", None), transport.session_id,
                     transport.can_receive_requests))
        next_(message)

    server.recv_middleware.append(recv)
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 5, "_meta": envelope()}}
        answer = requests.post(running.base + "/mcp", data=json.dumps(note), timeout=WAIT,
                               headers=modern_headers("notifications/cancelled"))
    assert answer.status_code == 202
    assert seen == [("notifications/cancelled", None, False)]


@pytest.mark.parametrize("stack", ["recv", "send"])
def test_a_2026_07_28_request_dropped_by_middleware_is_answered_at_once_over_http(
        stack: str) -> None:
    server = Server("drops", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="drops")
    # Drops everything: the request (nothing runs), or its answer (there is no other).
    getattr(server, f"{stack}_middleware").append(lambda message, next_: None)
    app = server.wsgi_app(path="/mcp", keepalive_interval=60.0)
    with RunningServer(app, on_stop=app.close) as running:
        answer = post_modern(running.base + "/mcp", "tools/list", {},
                             headers={"Accept": "application/json"})
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == INTERNAL_ERROR


def test_messages_sent_from_a_handlers_own_thread_carry_its_requests_context() -> None:
    agents: list[tuple[str, Any]] = []
    server = Server("threads", request_state_key="threads")

    def send(message: Message, next_: Any) -> None:
        transport = current_transport()
        agents.append((getattr(message, "method", "answer"),
                       transport.headers.get("User-Agent") if transport else None))
        next_(message)

    server.send_middleware.append(send)

    @server.tool()
    def helper(ctx: HandlerContext) -> str:
        worker = threading.Thread(target=lambda: ctx.progress(1, 1), name="test-helper")
        worker.start()
        worker.join(WAIT)
        return "done"

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=HANDSHAKE, timeout=WAIT,
            headers={"User-Agent": "threads-test"}) as client:
        assert client.call_tool("helper", on_progress=lambda p: None).text == "done"
    assert ("notifications/progress", "threads-test") in agents


def test_the_transport_context_example_in_the_docs_runs() -> None:
    text = (ROOT / "docs" / "server.md").read_text(encoding="utf-8")
    section = text.split("## Transport context", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(code, "docs/server.md", "exec"), namespace)
    app = namespace["server"].wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        url = running.base + "/mcp"
        for version in (MODERN, HANDSHAKE):
            with Client.http(url, protocol_version=version, timeout=WAIT,
                             headers={"X-Api-Key": "k-1"}) as client:
                assert client.call_tool("whoami").text == "alice via http"
        refused = post_modern(url, "tools/call", {"name": "whoami", "arguments": {}},
                              headers={"X-Api-Key": "wrong"})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == INVALID_REQUEST
    with Client.memory(namespace["server"], timeout=WAIT) as client:
        assert client.call_tool("whoami").text == "None via memory"


@pytest.mark.parametrize("transport", ["memory", "http"])
def test_listen_notifications_go_through_send_middleware_with_the_listens_context(
        transport: str) -> None:
    sent: list[tuple[str, Any, Any]] = []
    lock = threading.Lock()
    server = Server("listens", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="listens")

    def send(message: Message, next_: Any) -> None:
        seen = current_transport()
        with lock:
            sent.append((getattr(message, "method", "answer"), seen and seen.kind,
                         seen and seen.can_receive_requests))
        next_(message)

    server.send_middleware.append(send)

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        return name

    updated = threading.Event()
    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        client = (Client.http(running.base + "/mcp", protocol_version=MODERN, timeout=WAIT)
                  if transport == "http" else
                  Client.memory(server, protocol_version=MODERN, timeout=WAIT))
        with client:
            subscription = client.listen(resource_uris=["notes://a"], timeout=WAIT,
                                         on_notification=lambda note: updated.set())
            # From this thread, not the listen's handler thread: still the listen's context.
            server.notify_resource_updated("notes://a")
            assert updated.wait(WAIT)
            subscription.close()
    kind = "http" if transport == "http" else "memory"
    with lock:
        updates = [entry for entry in sent if entry[0] == "notifications/resources/updated"]
    assert updates == [("notifications/resources/updated", kind, False)]


def test_notification_handlers_see_the_notifications_transport_context() -> None:
    seen: list[Any] = []
    done = threading.Event()
    server = Server("notes", request_state_key="notes")

    @server.notification_handler("notifications/roots/list_changed")
    def changed(session: Any, params: dict[str, Any]) -> None:
        transport = current_transport()
        seen.append(transport and (transport.kind, transport.headers.get("User-Agent")))
        done.set()

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running, Client.http(
            running.base + "/mcp", protocol_version=HANDSHAKE, timeout=WAIT,
            headers={"User-Agent": "notes-test"}, host=HostHandlers(roots=[])) as client:
        client.set_roots([])
        assert done.wait(WAIT)
    assert seen == [("http", "notes-test")]
