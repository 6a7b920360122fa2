"""A timeout's message names the budget the caller gave, rounded, not the slice of it that
the last wait had left (issue 40: ``timed out after 4.999806030000059 s``)."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, Server
from mcpsync.errors import RequestTimeoutError
from mcpsync.protocol.deadline import budget_text

ERAS = ("2025-11-25", "2026-07-28")


def paging_server(release: threading.Event) -> Server:
    """``tools/list`` answers its first page at once and its second only when released."""
    server = Server("slow-pages")

    @server.method_handler("tools/list")
    def tools_list(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("cursor") is None:
            return {"tools": [{"name": "a", "inputSchema": {"type": "object"}}],
                    "nextCursor": "2"}
        release.wait(10)
        return {"tools": []}

    @server.tool()
    def stall(ctx: HandlerContext) -> str:
        release.wait(10)
        return "late"

    return server


@pytest.mark.parametrize("version", ERAS)
def test_a_listing_names_its_whole_budget(version: str) -> None:
    release = threading.Event()
    try:
        with Client.memory(paging_server(release), protocol_version=version,
                           timeout=10) as client:
            with pytest.raises(RequestTimeoutError) as slow:
                client.list_tools(timeout=1.5)
            release.set()
    finally:
        release.set()
    assert "tools/list timed out after 1.5 s" in str(slow.value), str(slow.value)


@pytest.mark.parametrize("version", ERAS)
def test_a_call_names_its_budget_rounded(version: str) -> None:
    release = threading.Event()
    try:
        with Client.memory(paging_server(release), protocol_version=version,
                           timeout=10) as client:
            with pytest.raises(RequestTimeoutError) as slow:
                client.call_tool("stall", timeout=0.3)
            release.set()
    finally:
        release.set()
    assert "timed out after 0.3 s" in str(slow.value)
    assert not re.search(r"\d\.\d{4,}", str(slow.value)), str(slow.value)


@pytest.mark.parametrize(("seconds", "text"), [
    (5, "5 s"), (4.999806030000059, "5 s"), (0.3, "0.3 s"), (0.0004, "0 s"),
    (1.25, "1.25 s"), (60.0, "60 s"), (None, "no limit")])
def test_budget_text(seconds: float | None, text: str) -> None:
    assert budget_text(seconds) == text
