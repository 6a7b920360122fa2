"""A parent's merged list reads a mounted server's pages within a bound of items and
bytes (issue 40: a mounted proxy whose remote pages without end grew the parent by
~200 MiB for one ``tools/list``). Past the bound the parent answers with what it has
(its own items always), logs a warning, and asks the mount for no more pages.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any

import pytest

from mcpsync import Client, HandlerContext, Server
from mcpsync.server import mount
from tests.helpers import WAIT

ERAS = ("2025-11-25", "2026-07-28")


def endless(item_bytes: int, per_page: int) -> tuple[Server, list[int]]:
    """A server (like a proxy: its surface is a method handler) whose ``tools/list``
    pages never end; and the count of pages it was asked for."""
    server = Server("endless")
    asked = [0]
    counter = itertools.count()
    lock = threading.Lock()

    @server.method_handler("tools/list")
    def tools_list(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        with lock:
            asked[0] += 1
            page = next(counter)
        tools = [{"name": f"t{page}_{n}", "description": "x" * item_bytes,
                  "inputSchema": {"type": "object"}} for n in range(per_page)]
        return {"tools": tools, "nextCursor": str(page + 1)}

    return server, asked


def parent_of(child: Server) -> Server:
    parent = Server("parent")
    parent.add_tool(lambda: "own", name="own")
    parent.mount(child, prefix="far")
    return parent


@pytest.mark.parametrize("version", ERAS)
def test_endless_pages_of_many_items_stop_at_the_item_bound(
        version: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mount, "MAX_MERGED_ITEMS", 2000)  # the rule, at a quicker size
    child, asked = endless(item_bytes=10, per_page=500)
    with Client.memory(parent_of(child), protocol_version=version, timeout=WAIT) as client:
        first = client.request("tools/list", {}, cache=False)
        assert first["tools"][0]["name"] == "own"
        assert asked[0] <= mount.MAX_MERGED_ITEMS // 500 + 1, f"{asked[0]} pages read"
        # The merged list ends: every page of it, and the last says no more.
        names = [t.name for t in client.list_tools()]
    assert names[0] == "own"
    assert len(names) - 1 == mount.MAX_MERGED_ITEMS
    assert any("far" in r.getMessage() or "endless" in r.getMessage()
               for r in caplog.records if r.levelno >= logging.WARNING)


@pytest.mark.parametrize("version", ERAS)
def test_endless_pages_of_big_items_stop_at_the_byte_bound(
        version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mount, "MAX_MERGED_BYTES", 4 * 1024 * 1024)
    child, asked = endless(item_bytes=256 * 1024, per_page=4)  # 1 MiB a page
    with Client.memory(parent_of(child), protocol_version=version, timeout=WAIT) as client:
        result = client.request("tools/list", {}, cache=False)
    assert result["tools"][0]["name"] == "own"
    assert asked[0] <= 4 + 1, f"{asked[0]} pages of 1 MiB read"


def test_the_bounds_are_what_the_limits_page_says() -> None:
    assert (mount.MAX_MERGED_ITEMS, mount.MAX_MERGED_BYTES) == (10_000, 16 * 1024 * 1024)
