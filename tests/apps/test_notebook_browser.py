"""The notebook widget's browser side in Chromium: its JavaScript (the ``_esm`` an
anywidget front end loads) renders the view with a test page standing in for the
notebook's widget manager: the model's ``get`` reads the widget's state, ``send`` posts to
the kernel side (here the widget object in this process, answered by its bridge), and
what the kernel side sends comes back as ``msg:custom`` events. The comm itself is tested
in a real kernel in test_notebook.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from mcpsync import Client, HostHandlers
from mcpsync.apps.wire import host_capabilities
from tests.apps.views import HAND_VIEW, meta_server
from tests.helpers import require_module
from tests.serving import RunningServer

require_module("anywidget")
expect = require_module("playwright.sync_api", package="playwright").expect

PAGE = """<!DOCTYPE html><html><head><title>notebook stand-in</title></head><body>
<div id="cell"></div>
<script type="module">
import widget from "/widget.js";
const state = await (await fetch("/state")).json();
const listeners = [];
const model = {
  get: key => state[key],
  on: (event, fn) => { if (event === "msg:custom") listeners.push(fn); },
  off: (event, fn) => {},
  send: async (content) => {
    const answer = await fetch("/send", {method: "POST", body: JSON.stringify(content)});
    for (const sent of await answer.json()) listeners.forEach(fn => fn(sent));
  },
};
widget.render({model, el: document.getElementById("cell")});
window.teardown = () => fetch("/teardown", {method: "POST"}).then(r => r.json())
  .then(sent => sent.forEach(s => listeners.forEach(fn => fn(s))));
</script></body></html>"""


class Kernel:
    """The kernel side: the widget, whose ``send`` is collected instead of going on a
    comm, and the WSGI app the page talks to."""

    def __init__(self, client: Client) -> None:
        from mcpsync.apps.notebook import AppView, call_tool

        shown = call_tool(client, "show", {"city": "Oslo"})
        assert isinstance(shown, AppView)
        self.view = shown
        self.sent: list[Any] = []
        self.lock = threading.Lock()
        self.view.send = self._collect

    def _collect(self, content: Any, buffers: Any = None) -> None:
        with self.lock:
            self.sent.append(content)

    def _drain(self) -> list[Any]:
        with self.lock:
            out, self.sent[:] = list(self.sent), []
        return out

    def app(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        kind = "application/json"
        if path == "/":
            body, kind = PAGE.encode(), "text/html"
        elif path == "/widget.js":
            body, kind = self.view._esm.encode(), "text/javascript"
        elif path == "/state":
            body = json.dumps({k: getattr(self.view, k) for k in (
                "html", "tool", "allow", "prefers_border", "csp")}).encode()
        elif path == "/send":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            content = json.loads(environ["wsgi.input"].read(length))
            message = content.get("message", {})
            if "method" in message:  # answered here, in order, as the pool would
                self.view._answer(message)
            else:
                self.view._received(None, content, None)
            body = json.dumps(self._drain()).encode()
        elif path == "/teardown":
            self.view.teardown("the cell was cleared")
            body = json.dumps(self._drain()).encode()
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b""]
        start_response("200 OK", [("Content-Type", kind)])
        return [body]


@pytest.fixture()
def kernel() -> Iterator[Kernel]:
    server = meta_server(HAND_VIEW.replace("{evil}", "http://127.0.0.1:9"))
    with Client.memory(server, host=HostHandlers(extra_capabilities=host_capabilities()),
                       timeout=20) as client:
        side = Kernel(client)
        try:
            yield side
        finally:
            side.view.close()


def test_the_widget_shows_the_view_and_relays_its_messages(page: Any, kernel: Kernel) -> None:
    with RunningServer(kernel.app) as running:
        page.goto(running.base + "/")
        view = page.frame_locator("#cell iframe")
        expect(view.locator("#input")).to_have_text('{"city":"Oslo"}')
        expect(view.locator("#result")).to_have_text("sunny in Oslo")
        view.locator("#call").click()
        expect(view.locator("#out")).to_have_text("refreshed 5")
        view.locator("#read").click()
        expect(view.locator("#read-out")).to_have_text("data from the server")
        # An opaque origin: the notebook's page is out of its reach; its CSP holds.
        expect(view.locator("#parent")).to_have_text("blocked: SecurityError")
        expect(view.locator("#violations")).to_contain_text("script-src")
        expect(view.locator("#evil")).to_have_text("did not run")
        assert page.locator("#cell iframe").get_attribute("sandbox") == "allow-scripts"
        page.wait_for_function(
            "document.querySelector('#cell iframe').style.height === '321px'")
        assert kernel.view.text == "sunny in Oslo"
        # The view answers the teardown (torn_down: its answer came back with our id),
        # then the widget removes it.
        page.evaluate("window.teardown()")
        page.wait_for_function("document.querySelector('#cell iframe') === null")
        assert kernel.view.torn_down.is_set()
