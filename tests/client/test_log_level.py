"""``Client(log_level=...)`` and ``set_logging_level`` in both eras, on every transport:
the level travels as ``logLevel`` in each 2026-07-28 request's ``_meta`` and as
``logging/setLevel`` after the handshake, and the server's log messages follow it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, ClientMiddleware, LogMessage, Server
from tests.helpers import WAIT
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"
ERAS = ["2026-07-28", "2025-11-25"]
TRANSPORTS = ["memory", "stdio", "http"]


@pytest.fixture
def connect() -> Iterator[Callable[..., Client]]:
    """``connect(transport, version, **options)`` to the fixture server; closed at the end."""
    opened: list[Client] = []
    running: list[RunningServer] = []

    def make(transport: str, version: str, **options: Any) -> Client:
        options.update(protocol_version=version, timeout=WAIT)
        if transport == "memory":
            client = Client.memory(fixture_server, **options)
        elif transport == "stdio":
            client = Client.stdio([sys.executable, str(FIXTURE)],
                                  env={"PYTHONPATH": str(ROOT)}, **options)
        else:
            app = fixture_server.wsgi_app(path="/mcp")
            running.append(RunningServer(app, on_stop=app.close))
            client = Client.http(running[-1].base + "/mcp", **options)
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.close()
    for server in running:
        server.stop()


def levels_heard(client_factory: Callable[..., Client], transport: str, version: str,
                 **options: Any) -> tuple[list[str], list[str]]:
    """The levels heard from ``chatty`` before and after ``set_logging_level("error")``."""
    logs: list[LogMessage] = []
    client = client_factory(transport, version, on_log=logs.append, **options)
    client.call_tool("chatty")
    client.set_logging_level("error")
    client.call_tool("chatty")
    client.close()  # joins the notification thread: every callback has run
    first = [m.level for m in logs if m.logger == "fixture"]
    return first[:-1], first[-1:]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_log_level_is_honoured_then_changed(connect, transport, version):
    before, after = levels_heard(connect, transport, version, log_level="warning")
    assert before == ["warning", "error"]
    assert after == ["error"]


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_on_log_alone_hears_every_level_in_both_eras(connect, transport, version):
    before, after = levels_heard(connect, transport, version)
    assert before == ["debug", "info", "warning", "error"]
    assert after == ["error"]


def test_modern_requests_carry_the_level_in_meta():
    seen: list[dict[str, Any]] = []
    server = Server("meta")

    @server.tool()
    def peek() -> str:
        return "ok"

    def record(message: Any, next_: Callable[[Any], None]) -> None:
        params = getattr(message, "params", None)
        if getattr(message, "method", None) == "tools/call" and params is not None:
            seen.append(dict(params.get("_meta") or {}))
        next_(message)

    with Client.memory(server, protocol_version="2026-07-28", log_level="info",
                       middleware=ClientMiddleware(send=[record])) as client:
        assert client.log_level == "info"
        client.call_tool("peek")
        client.set_logging_level("critical")
        client.call_tool("peek")
    assert [m.get("io.modelcontextprotocol/logLevel") for m in seen] == ["info", "critical"]


def test_without_on_log_or_level_modern_requests_ask_for_no_logs():
    with Client.memory(fixture_server, protocol_version="2026-07-28") as client:
        assert client.log_level is None
        assert client._negotiation.envelope is not None
        assert "io.modelcontextprotocol/logLevel" not in client._negotiation.envelope


def test_a_bad_level_is_refused_at_once():
    with pytest.raises(ValueError, match="log_level 'loud'"):
        Client.memory(fixture_server, log_level="loud")
    with Client.memory(fixture_server, protocol_version="2026-07-28") as client, \
            pytest.raises(ValueError, match="'loud'"):
        client.set_logging_level("loud")


@pytest.mark.parametrize(("version", "expected"), [("2026-07-28", "debug"), ("2025-11-25", None)])
def test_log_level_says_what_was_asked_for(version, expected):
    with Client.memory(fixture_server, protocol_version=version, on_log=print) as client:
        assert client.log_level == expected
        client.set_logging_level("notice")
        assert client.log_level == "notice"
