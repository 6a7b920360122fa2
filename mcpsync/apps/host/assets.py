"""The browser side of the preview: the host page and the sandbox proxy (HTML and the
JavaScript they run). Plain strings, filled in by :mod:`.page`; no user data is ever
formatted into them except through :func:`json_for_script`."""

from __future__ import annotations

import json
from typing import Any, Final


def json_for_script(value: Any) -> str:
    """``value`` as JSON that is safe inside a ``<script>`` element (no ``</script>``,
    no ``<!--``)."""
    return (json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("&", "\\u0026"))


#: The host page. {nonce}, {config} (JSON), {title} (escaped) are filled in.
HOST_PAGE: Final = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5rem; color: #1b1b1b; }}
#slot iframe {{ display: block; width: 100%; min-height: 80px; border: 0; }}
#slot.border iframe {{ border: 1px solid #c8c8c8; border-radius: 6px; }}
#fallback {{ white-space: pre-wrap; background: #f4f4f4; padding: .5rem; }}
#log {{ font: 12px monospace; color: #555; }}
</style></head>
<body>
<h1>{title}</h1>
<p id="status">loading the view</p>
<div id="slot"></div>
<p><button id="close" type="button">Close the view</button></p>
<h2>What a client without apps shows</h2>
<pre id="fallback"></pre>
<h2>Messages</h2>
<ol id="log"></ol>
<script type="application/json" id="config">{config}</script>
<script nonce="{nonce}">
"use strict";
const C = JSON.parse(document.getElementById("config").textContent);
const slot = document.getElementById("slot");
const status = document.getElementById("status");
const frame = document.createElement("iframe");
frame.id = "view";
frame.setAttribute("sandbox", "allow-scripts allow-same-origin");
if (C.allow) frame.setAttribute("allow", C.allow);
if (C.prefersBorder !== false) slot.className = "border";
frame.src = C.proxyUrl;
slot.append(frame);
const waiting = new Map();
let teardownId = 0;

function log(direction, message) {{
  const li = document.createElement("li");
  li.className = direction;
  li.textContent = direction + " " + (message.method || ("response " + message.id));
  document.getElementById("log").append(li);
}}
function toView(message) {{
  log("to-view", message);
  frame.contentWindow.postMessage(message, C.sandboxOrigin);
}}
async function ask(path, body) {{
  const response = await fetch(C.base + path, {{method: "POST",
    headers: {{"Content-Type": "application/json"}}, body: JSON.stringify(body)}});
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}}
function showFallback(result) {{
  const texts = (result.content || []).filter(b => b.type === "text").map(b => b.text);
  document.getElementById("fallback").textContent = texts.join("\\n");
}}
window.addEventListener("message", async (event) => {{
  if (event.source !== frame.contentWindow || event.origin !== C.sandboxOrigin) return;
  const m = event.data;
  if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
  if (m.method === "ui/notifications/sandbox-proxy-ready") {{
    toView({{jsonrpc: "2.0", method: "ui/notifications/sandbox-resource-ready",
            params: {{html: C.html, sandbox: "allow-scripts", csp: C.csp,
                      permissions: C.permissions}}}});
    return;
  }}
  log("from-view", m);
  if (m.method === undefined) {{
    const resolve = waiting.get(m.id);
    if (resolve) {{ waiting.delete(m.id); resolve(m); }}
    return;
  }}
  if (m.method === "ui/notifications/size-changed") {{
    const p = m.params || {{}};
    if (typeof p.height === "number" && p.height >= 0) {{
      frame.style.height = Math.min(p.height, 10000) + "px";
    }}
    return;
  }}
  try {{
    for (const reply of await ask("/message", m)) toView(reply);
    if (m.method === "ui/notifications/initialized") {{
      status.textContent = "calling " + C.tool;
      const [result] = await ask("/result", {{}});
      toView(result);
      showFallback(result.params);
      status.textContent = result.method === "ui/notifications/tool-cancelled"
        ? "cancelled: " + result.params.reason : "shown";
    }}
  }} catch (error) {{
    status.textContent = "error: " + error.message;
  }}
}});
// Leaving the page ends the view with it: it is told first (no answer can be awaited).
window.addEventListener("pagehide", () => {{
  if (frame.isConnected && frame.contentWindow) {{
    toView({{jsonrpc: "2.0", id: "host-teardown-unload", method: "ui/resource-teardown",
            params: {{reason: "the page was left"}}}});
  }}
}});
document.getElementById("close").addEventListener("click", async () => {{
  const id = "host-teardown-" + (++teardownId);
  const answered = new Promise(resolve => waiting.set(id, resolve));
  const deadline = new Promise(resolve => setTimeout(() => resolve(null), 3000));
  toView({{jsonrpc: "2.0", id: id, method: "ui/resource-teardown",
          params: {{reason: "closed by the user"}}}});
  const answer = await Promise.race([answered, deadline]);
  frame.remove();
  status.textContent = answer ? "closed" : "closed (the view did not answer)";
  ask("/close", {{}}).catch(() => {{}});
}});
</script>
</body></html>
"""

#: The sandbox proxy (served from the sandbox origin). {host_origin} (JSON) is filled in.
PROXY_PAGE: Final = """<!DOCTYPE html>
<html><head><meta charset="utf-8">
<style>html, body {{ margin: 0; height: 100%; overflow: hidden; }}
iframe {{ border: 0; width: 100%; height: 100%; display: block; }}</style></head>
<body><script>
"use strict";
const HOST = {host_origin};
const FEATURES = {{camera: "camera", microphone: "microphone", geolocation: "geolocation",
                  clipboardWrite: "clipboard-write"}};
let inner = null;
const reserved = m => m && typeof m.method === "string"
  && m.method.startsWith("ui/notifications/sandbox-");
window.addEventListener("message", (event) => {{
  const m = event.data;
  if (event.source === window.parent && event.origin === HOST) {{
    if (m && m.method === "ui/notifications/sandbox-resource-ready") {{
      if (inner) return;
      const p = m.params || {{}};
      inner = document.createElement("iframe");
      inner.setAttribute("sandbox", "allow-scripts");
      const granted = p.permissions && typeof p.permissions === "object" ? p.permissions : {{}};
      const allow = Object.keys(FEATURES).filter(k => granted[k] && typeof granted[k] === "object")
        .map(k => FEATURES[k]).join("; ");
      if (allow) inner.setAttribute("allow", allow);
      inner.srcdoc = String(p.html || "");
      document.body.append(inner);
    }} else if (!reserved(m) && inner) {{
      inner.contentWindow.postMessage(m, "*");
    }}
  }} else if (inner && event.source === inner.contentWindow && !reserved(m)) {{
    window.parent.postMessage(m, HOST);
  }}
}});
window.parent.postMessage({{jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready",
                           params: {{}}}}, HOST);
</script></body></html>
"""

__all__ = ["HOST_PAGE", "PROXY_PAGE", "json_for_script"]
