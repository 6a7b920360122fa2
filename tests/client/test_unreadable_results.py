"""An answer whose ``result`` is not an object (``"result": [1, 2, 3]``) fails its call at
once, as a protocol error, instead of leaving it to wait for its whole timeout (issue 40:
60 s through a proxy). On stdio and HTTP, in both eras, and through a proxy; the
connection keeps serving the next call."""

from __future__ import annotations

import sys
import time

import pytest

from mcpsync import Client, Server
from mcpsync.errors import MCPError, MCPSyncError
from tests.serving import ROOT, client_over

from .list_result_server import build

ERAS = ("2025-11-25", "2026-07-28")
MODULE = "tests.client.list_result_server"
#: Far longer than a failed read takes, far shorter than the calls' timeout.
QUICK = 10.0
TIMEOUT = 30.0


@pytest.mark.parametrize("tool", ["broken", "broken_streamed"])
@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("kind", ["stdio", "http"])
def test_a_result_that_is_not_an_object_fails_the_call_at_once(kind: str, version: str,
                                                              tool: str) -> None:
    seen: list[object] = []
    with client_over(kind, build(), MODULE, version, timeout=TIMEOUT) as client:
        started = time.monotonic()
        with pytest.raises(MCPSyncError) as failed:
            client.call_tool(tool, on_progress=seen.append)
        assert time.monotonic() - started < QUICK, "the call waited for its timeout"
        assert "result" in str(failed.value)
        assert client.call_tool("fine").text == "fine"


@pytest.mark.parametrize("version", ERAS)
def test_through_a_proxy(version: str) -> None:
    proxy = Server.proxy([sys.executable, "-m", MODULE], cwd=ROOT, timeout=TIMEOUT,
                         protocol_version=version)
    try:
        with Client.memory(proxy, protocol_version=version, timeout=TIMEOUT) as client:
            started = time.monotonic()
            with pytest.raises(MCPError) as failed:
                client.call_tool("broken")
            assert time.monotonic() - started < QUICK, "the proxy waited for its timeout"
            assert failed.value.code == -32603
            assert client.call_tool("fine").text == "fine"
    finally:
        proxy.stop()
