"""Interop: a view written against the official app-side library
(``@modelcontextprotocol/ext-apps``, its self-contained ``app-with-deps`` module, served
from a local origin the view declares in ``resourceDomains``; no network) is hosted by
mcpsync's preview in a real browser: it connects (``ui/initialize``), gets the tool's
input and result, calls an app-only tool and reads a resource through the bridge, and
answers the teardown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client, HostHandlers
from mcpsync.apps.host.preview import PreviewServers, preview_of
from mcpsync.apps.wire import host_capabilities
from tests.apps.views import meta_server, static_app
from tests.helpers import require_module
from tests.interop import peers
from tests.serving import RunningServer

expect = require_module("playwright.sync_api", package="playwright").expect

VIEW = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>interop view</title></head>
<body>
<p id="input">no input</p><p id="result">no result</p><p id="host">no host</p>
<button id="call">refresh</button> <p id="out">not called</p>
<button id="read">read</button> <p id="read-out">not read</p>
<script type="module">
import { App } from "{lib}/ext-apps.js";
const text = r => (r.content || []).filter(b => b.type === "text").map(b => b.text).join(" ");
const app = new App({name: "interop", version: "1.0.0"});
app.ontoolinput = p => {
  document.getElementById("input").textContent = JSON.stringify(p.arguments);
};
app.ontoolresult = r => { document.getElementById("result").textContent = text(r); };
app.onteardown = async () => ({});
document.getElementById("call").onclick = async () => {
  const r = await app.callServerTool({name: "refresh", arguments: {n: 7}});
  document.getElementById("out").textContent = text(r);
};
document.getElementById("read").onclick = async () => {
  const r = await app.readServerResource({uri: "ui://demo/data"});
  document.getElementById("read-out").textContent = r.contents[0].text;
};
await app.connect();
document.getElementById("host").textContent = app.getHostVersion().name;
</script>
</body></html>
"""


def _library() -> str:
    path = (peers.peers_dir() / "npm" / "node_modules" / "@modelcontextprotocol" / "ext-apps"
            / "dist" / "src" / "app-with-deps.js")
    if not path.is_file():
        raise peers.PeerMissing(f"@modelcontextprotocol/ext-apps not found at {path} "
                                f"({peers.INSTALL_HINT})")
    return str(path)


@pytest.fixture(scope="module")
def library() -> Iterator[RunningServer]:
    body = Path(peers.require(_library)).read_bytes()
    with RunningServer(static_app({"/ext-apps.js": (body, "text/javascript")})) as running:
        yield running


@pytest.fixture()
def hosted(library: RunningServer) -> Iterator[PreviewServers]:
    server = meta_server(VIEW.replace("{lib}", library.base),
                         csp={"resourceDomains": [library.base]})
    host = HostHandlers(extra_capabilities=host_capabilities())
    with Client.memory(server, host=host, timeout=20) as client, PreviewServers(
            preview_of(client, "show", {"city": "Tromsø"}, timeout=20)) as servers:
        yield servers


def test_a_view_on_the_official_library_runs_in_mcpsyncs_host(page: Any,
                                                              hosted: PreviewServers) -> None:
    page.goto(hosted.url)
    view = page.frame_locator("#view").frame_locator("iframe")
    expect(view.locator("#host")).to_have_text("mcpsync")
    expect(view.locator("#input")).to_have_text('{"city":"Tromsø"}')
    expect(view.locator("#result")).to_have_text("sunny in Tromsø")
    view.locator("#call").click()
    expect(view.locator("#out")).to_have_text("refreshed 7")
    view.locator("#read").click()
    expect(view.locator("#read-out")).to_have_text("data from the server")
    page.locator("#close").click()
    expect(page.locator("#status")).to_have_text("closed")
