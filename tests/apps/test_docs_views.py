"""The views of docs/apps.md in a real browser, hosted by the preview: the Flask
template's page shows the tool's result, the chart view draws one bar per row of the data
tool's structured result. (tests/test_docs_runnable.py runs the same blocks for their
server side.)"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcpsync import Client, HostHandlers
from mcpsync.apps.host.preview import PreviewServers, preview_of
from mcpsync.apps.wire import host_capabilities
from tests.helpers import require_module
from tests.serving import ROOT

expect = require_module("playwright.sync_api", package="playwright").expect
require_module("flask")


def _block(name: str) -> str:
    page = (ROOT / "docs" / "apps.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- runnable: {name} -->\s*```python\n(.*?)```", page, re.S)
    assert found is not None, f"docs/apps.md has no runnable block {name!r}"
    return found.group(1)


def _server(name: str) -> Any:
    """Run the block as a module of its own (its dataclasses need one) and return its
    ``server``."""
    module = types.ModuleType(f"docs_apps_{name.replace('-', '_')}")
    sys.modules[module.__name__] = module
    try:
        exec(compile(_block(name), str(Path("docs/apps.md")), "exec"),
             module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.server


def _shown(server: Any, tool: str, arguments: dict[str, Any]) -> Iterator[PreviewServers]:
    host = HostHandlers(extra_capabilities=host_capabilities())
    with Client.memory(server, host=host, timeout=20) as client, PreviewServers(
            preview_of(client, tool, arguments, timeout=20)) as servers:
        yield servers


def test_the_flask_template_view(page: Any) -> None:
    for servers in _shown(_server("flask-template"), "order_total", {"customer": "ada"}):
        page.goto(servers.url)
        view = page.frame_locator("#view").frame_locator("iframe")
        expect(view.locator("li")).to_have_text(["#1 tea", "#2 scones"])
        expect(view.locator("#total")).to_have_text("ada owes 12.50")


def test_the_chart_view(page: Any) -> None:
    for servers in _shown(_server("chart-view"), "monthly_sales", {"region": "north"}):
        page.goto(servers.url)
        view = page.frame_locator("#view").frame_locator("iframe")
        expect(view.locator("#chart rect")).to_have_count(3)
        expect(view.locator("#chart text")).to_have_text(["Jan", "Feb", "Mar"])
        assert view.locator("#chart rect").nth(2).get_attribute("height") == "140"
