"""Views and servers the apps tests share: a view written by hand against the revision's
postMessage protocol (no library), a static server for scripts (with CORS, as a module
script from an opaque-origin view needs), and a server whose tools link to views with
nothing but the core ``meta=`` (the host's tests need no server extension)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcpsync import Server
from mcpsync.apps.wire import MIME_TYPE
from mcpsync.types import TextResourceContents

#: A view that speaks the protocol by hand. It shows the tool input and result; #call
#: calls the app-only tool ``refresh`` and #read reads ``ui://demo/data``, through the
#: host; it reports whether it could reach its parent's document, whether the script
#: at {evil} ran, and CSP violations; it answers a teardown.
HAND_VIEW = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>demo view</title></head>
<body>
<p id="input">no input</p><p id="result">no result</p>
<button id="call">refresh</button> <p id="out">not called</p>
<button id="read">read</button> <p id="read-out">not read</p>
<button id="forbidden">call model-only</button> <p id="forbidden-out">not called</p>
<p id="parent">unknown</p><p id="evil">did not run</p><p id="violations"></p>
<p id="teardown">up</p>
<script>
"use strict";
let next = 1;
const waiting = new Map();
function request(method, params) {
  const id = next++;
  window.parent.postMessage({jsonrpc: "2.0", id, method, params}, "*");
  return new Promise((resolve, reject) => waiting.set(id, [resolve, reject]));
}
function notify(method, params) {
  window.parent.postMessage({jsonrpc: "2.0", method, params}, "*");
}
const text = r => (r.content || []).filter(b => b.type === "text").map(b => b.text).join(" ");
document.addEventListener("securitypolicyviolation", e => {
  const shown = document.getElementById("violations");
  shown.textContent += e.violatedDirective + " " + e.blockedURI + ";";
});
window.addEventListener("message", (event) => {
  const m = event.data;
  if (!m || m.jsonrpc !== "2.0") return;
  if (m.id !== undefined && m.method === undefined) {
    const [resolve, reject] = waiting.get(m.id) || [];
    waiting.delete(m.id);
    if (m.error) reject(new Error(m.error.message)); else if (resolve) resolve(m.result);
  } else if (m.method === "ui/notifications/tool-input") {
    document.getElementById("input").textContent = JSON.stringify(m.params.arguments);
  } else if (m.method === "ui/notifications/tool-result") {
    document.getElementById("result").textContent = text(m.params);
  } else if (m.method === "ui/resource-teardown") {
    document.getElementById("teardown").textContent = "torn down: " + m.params.reason;
    window.parent.postMessage({jsonrpc: "2.0", id: m.id, result: {}}, "*");
  }
});
try {
  document.getElementById("parent").textContent = "reached " + window.parent.document.title;
} catch (e) {
  document.getElementById("parent").textContent = "blocked: " + e.name;
}
document.getElementById("call").onclick = async () => {
  const r = await request("tools/call", {name: "refresh", arguments: {n: 5}});
  document.getElementById("out").textContent = text(r);
};
document.getElementById("read").onclick = async () => {
  const r = await request("resources/read", {uri: "ui://demo/data"});
  document.getElementById("read-out").textContent = r.contents[0].text;
};
document.getElementById("forbidden").onclick = async () => {
  try { await request("tools/call", {name: "secret", arguments: {}});
        document.getElementById("forbidden-out").textContent = "called"; }
  catch (e) { document.getElementById("forbidden-out").textContent = "refused: " + e.message; }
};
(async () => {
  const init = await request("ui/initialize", {appCapabilities: {},
    appInfo: {name: "demo", version: "1.0.0"}, protocolVersion: "2026-01-26"});
  document.title = "demo view (" + init.hostInfo.name + ")";
  notify("ui/notifications/initialized", {});
  notify("ui/notifications/size-changed", {width: 300, height: 321});
})();
</script>
<script src="{evil}/evil.js"></script>
</body></html>
"""

EVIL_JS = b'document.getElementById("evil").textContent = "ran";\n'


def static_app(files: dict[str, tuple[bytes, str]]) -> Any:
    """A WSGI app serving ``files`` (path -> (body, content type)) to any origin."""

    def app(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        found = files.get(environ.get("PATH_INFO") or "/")
        if found is None:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        body, kind = found
        start_response("200 OK", [("Content-Type", kind), ("Content-Length", str(len(body))),
                                  ("Access-Control-Allow-Origin", "*")])
        return [body]

    return app


def meta_server(view_html: str, *, csp: dict[str, Any] | None = None,
                permissions: dict[str, Any] | None = None) -> Server:
    """A server with views linked by the core ``meta=`` only: ``show`` (model and app,
    its view ``ui://demo/view``), ``refresh`` (app only), ``secret`` (model only) and the
    resource ``ui://demo/data``."""
    server = Server("demo")

    @server.tool(meta={"ui": {"resourceUri": "ui://demo/view"}})
    def show(city: str) -> str:
        """The weather, with a view."""
        return f"sunny in {city}"

    @server.tool(meta={"ui": {"resourceUri": "ui://demo/view", "visibility": ["app"]}})
    def refresh(n: int) -> str:
        return f"refreshed {n}"

    @server.tool(meta={"ui": {"visibility": ["model"]}})
    def secret() -> str:
        return "model only"

    @server.resource("ui://demo/view", mime_type=MIME_TYPE)
    def view() -> TextResourceContents:
        ui = {k: v for k, v in (("csp", csp), ("permissions", permissions)) if v is not None}
        meta = {"ui": ui} if ui else None
        return TextResourceContents(uri="ui://demo/view", mime_type=MIME_TYPE,
                                    text=view_html, meta=meta)

    @server.resource("ui://demo/data", mime_type="text/plain")
    def data() -> str:
        return "data from the server"

    return server
