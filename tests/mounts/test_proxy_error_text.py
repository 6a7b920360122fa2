"""A proxy's errors tell its callers that the proxied server failed, never where it is
(issue 40: they showed the target's command line, interpreter and script paths, or its
internal URL). The details go to the ``mcpsync.proxy`` log, for the operator.

Each failure of the hop, reached for real: a command that does not exist, a remote that
exits before answering, an unreachable URL, a remote that dies during a call, a remote
too slow for the proxy's timeout. Over the in-memory transport and over HTTP, both eras.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client, Server, StartupError
from mcpsync.errors import MCPError, MCPSyncError
from tests.serving import ROOT, RunningServer

ERAS = ("2025-11-25", "2026-07-28")
SECRET = "secret-place-7f3a"
REMOTE = [sys.executable, "-m", "tests.server.proxy_remote"]


@contextlib.contextmanager
def caller(proxy: Server, kind: str, version: str) -> Iterator[Client]:
    try:
        if kind == "memory":
            with Client.memory(proxy, protocol_version=version, timeout=20) as client:
                yield client
        else:
            app = proxy.wsgi_app(path="/mcp")
            with (RunningServer(app, on_stop=app.close) as running,
                  Client.http(running.base + "/mcp", protocol_version=version,
                              timeout=20) as client):
                yield client
    finally:
        proxy.stop()


def failure_text(proxy: Server, kind: str, version: str, tool: str = "add",
                 arguments: dict[str, Any] | None = None) -> str:
    """Everything the caller is told about a failed call (connecting included)."""
    try:
        with caller(proxy, kind, version) as client:
            client.call_tool(tool, arguments or {"a": 1, "b": 2})
    except (MCPSyncError, StartupError) as exc:  # in process, a failed startup raises
        return f"{exc} {getattr(exc, 'data', '')}"
    raise AssertionError("the call did not fail")


def assert_hidden(text: str, *secrets: str) -> None:
    for secret in secrets:
        assert secret not in text, f"{secret!r} shown to the caller: {text}"
    assert "proxied server" in text, text


def logged(caplog: pytest.LogCaptureFixture, secret: str) -> bool:
    return any(secret in record.getMessage() for record in caplog.records
               if record.name.startswith("mcpsync"))


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["memory", "http"])
def test_a_command_that_does_not_exist(kind: str, version: str,
                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    proxy = Server.proxy([f"/opt/{SECRET}/bin/mcp-server", "--token-file", "/etc/x"],
                         timeout=5)
    text = failure_text(proxy, kind, version)
    assert_hidden(text, SECRET, "/etc/x")
    assert logged(caplog, SECRET)


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["memory", "http"])
def test_a_remote_that_exits_before_answering(kind: str, version: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    proxy = Server.proxy([sys.executable, "-c", "import sys; sys.exit(3)",
                          f"/srv/{SECRET}/server.py"], timeout=5)
    text = failure_text(proxy, kind, version)
    assert_hidden(text, SECRET, sys.executable)
    assert logged(caplog, SECRET)


@pytest.mark.parametrize("version", ERAS)
def test_an_unreachable_url(version: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    proxy = Server.proxy(f"http://127.0.0.1:9/{SECRET}/mcp", timeout=5)
    text = failure_text(proxy, "http", version)
    assert_hidden(text, SECRET, "127.0.0.1:9")
    assert logged(caplog, SECRET)


@pytest.mark.parametrize("version", ERAS)
def test_a_remote_that_dies_during_a_call(version: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    proxy = Server.proxy(REMOTE, cwd=ROOT, timeout=20)
    with caller(proxy, "memory", version) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        with pytest.raises(MCPError) as died:
            client.call_tool("die")
    assert died.value.code == -32603
    assert_hidden(died.value.message, "tests.server.proxy_remote", sys.executable)
    assert logged(caplog, "tests.server.proxy_remote")


@pytest.mark.parametrize("version", ERAS)
def test_a_remote_too_slow_for_the_proxy(version: str,
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    # Long enough to connect on a loaded machine; the remote's tool waits far longer.
    proxy = Server.proxy(REMOTE, cwd=ROOT, timeout=4.0)
    with caller(proxy, "memory", version) as client, pytest.raises(MCPError) as slow:
        client.call_tool("wait")
    assert slow.value.code == -32603
    assert_hidden(slow.value.message, "tests.server.proxy_remote", sys.executable)
    assert "(4 s)" in slow.value.message  # the budget, not a float's last digits
    assert logged(caplog, "tests.server.proxy_remote")
