"""Guards through ``Server.mount`` and ``Server.proxy``: a parent's guards see the request
as its client sent it (the prefixed name), a mounted server's guards see it as that server
serves it (its own name), and a proxy's guards hold in front of its remote; a refusal from
behind a mount or a proxy reaches the client as the same RateLimitedError."""

from __future__ import annotations

import logging

import pytest

from mcpsync import Client, Server
from mcpsync.middleware import AuditLog, RateLimit, RateLimitedError


def child(runs: list[int]) -> Server:
    server = Server("child")

    @server.tool()
    def add(a: int, b: int) -> int:
        runs.append(a + b)
        return a + b

    return server


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def audit(name: str) -> tuple[AuditLog, Records]:
    records = Records()
    logger = logging.getLogger(f"tests.audit.mounts.{name}")
    logger.handlers[:] = [records]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return AuditLog(logger), records


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_the_parents_guard_holds_for_a_mounted_tool(version: str) -> None:
    runs: list[int] = []
    parent = Server("parent")
    parent.mount(child(runs), "calc")
    log, records = audit("parent")
    parent.add_middleware(log)
    parent.add_middleware(RateLimit("2/minute", key="tool"))
    with Client.memory(parent, protocol_version=version) as client:
        assert client.call_tool("calc_add", {"a": 1, "b": 2}).structured_content == {
            "result": 3}
        client.call_tool("calc_add", {"a": 1, "b": 2})
        with pytest.raises(RateLimitedError):
            client.call_tool("calc_add", {"a": 1, "b": 2})
    assert runs == [3, 3]
    tools = [line for line in records.lines if '"tools/call"' in line]
    assert len(tools) == 3 and all('"tool":"calc_add"' in line for line in tools)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_mounted_servers_own_guard_holds_behind_the_mount(version: str) -> None:
    runs: list[int] = []
    mounted = child(runs)
    log, records = audit("child")
    mounted.add_middleware(log)
    mounted.add_middleware(RateLimit("1/minute", key="tool"))
    parent = Server("parent")
    parent.mount(mounted, "calc")
    with Client.memory(parent, protocol_version=version) as client:
        client.call_tool("calc_add", {"a": 2, "b": 2})
        with pytest.raises(RateLimitedError) as refused:
            client.call_tool("calc_add", {"a": 2, "b": 2})
    assert refused.value.retry_after > 0
    assert runs == [4]
    assert [line.count('"tool":"add"') for line in records.lines] == [1, 1]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_proxys_guard_holds_in_front_of_its_remote(version: str) -> None:
    runs: list[int] = []
    proxy = Server.proxy(child(runs))
    proxy.add_middleware(RateLimit("2/minute", key="method"))
    try:
        with Client.memory(proxy, protocol_version=version) as client:
            client.call_tool("add", {"a": 1, "b": 1})
            client.call_tool("add", {"a": 1, "b": 1})
            with pytest.raises(RateLimitedError):
                client.call_tool("add", {"a": 1, "b": 1})
    finally:
        proxy.stop()
    assert runs == [2, 2]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_remotes_refusal_reaches_the_proxys_client_with_its_retry_time(
        version: str) -> None:
    runs: list[int] = []
    remote = child(runs)
    remote.add_middleware(RateLimit("1/minute", key="method"))
    proxy = Server.proxy(remote)
    try:
        with Client.memory(proxy, protocol_version=version) as client:
            client.call_tool("add", {"a": 5, "b": 5})
            with pytest.raises(RateLimitedError) as refused:
                client.call_tool("add", {"a": 5, "b": 5})
    finally:
        proxy.stop()
    assert 0 < refused.value.retry_after <= 60
    assert runs == [10]


