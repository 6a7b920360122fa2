"""MCP Apps in a notebook: calling a tool that has a view shows the view inline, hosted
by the same :class:`~mcpsync.apps.host.bridge.Bridge` as the preview page, with the
kernel <-> browser channel of an `anywidget <https://anywidget.dev>`_ widget (the extra
``notebook``: ``pip install 'mcpsync[notebook]'``).

    from mcpsync.apps.notebook import call_tool
    call_tool(client, "forecast", {"city": "Oslo"})   # the last line of a cell: shown
    call_tool(hub, "weather_forecast", {"city": "Oslo"})   # a hub: Client.from_config

The browser side frames the view in ``<iframe sandbox="allow-scripts" srcdoc=...>``: an
opaque origin, so it reaches neither the notebook's page nor its cookies or storage,
under the Content-Security-Policy its resource declared (a ``<meta>`` in front of its
HTML: nothing here can set a header). What it posts is relayed to the kernel, where the
bridge answers it (forwarding ``tools/call`` and ``resources/read`` through the
client); the answers are posted back. A notebook page has no second origin to serve a
sandbox proxy from, so the view's origin is opaque rather than a dedicated one (see
docs/apps.md, "Security model").

The bridge's work (the tool call, the view's calls) runs on at most
:data:`MAX_WORKERS` named threads per view, never on the kernel's own: a slow tool does
not block the notebook. :meth:`AppView.close` asks the view to tear down first.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final

import anywidget
import traitlets

from ..protocol.prefixes import name_in
from .host.bridge import Bridge
from .host.csp import allow_attribute, policy, with_policy
from .host.view import fetch_view
from .wire import view_uri

if TYPE_CHECKING:
    from ..client.client import Client
    from ..types import CallToolResult

logger = logging.getLogger("mcpsync.apps")

#: Threads one view's bridge work runs on at most.
MAX_WORKERS: Final = 2

_ESM = """
function render({ model, el }) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  const allow = model.get("allow");
  if (allow) frame.setAttribute("allow", allow);
  frame.style.width = "100%";
  frame.style.height = "120px";
  frame.style.border = model.get("prefers_border") === false ? "0" : "1px solid #ccc";
  frame.srcdoc = model.get("html");
  el.append(frame);
  const fromView = (event) => {
    if (event.source !== frame.contentWindow) return;
    const m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0") return;
    if (m.method === "ui/notifications/size-changed") {
      const h = (m.params || {}).height;
      if (typeof h === "number" && h >= 0) frame.style.height = Math.min(h, 10000) + "px";
      return;
    }
    model.send({ message: m });
  };
  window.addEventListener("message", fromView);
  const fromKernel = (content) => {
    if (content && content.message && frame.contentWindow) {
      frame.contentWindow.postMessage(content.message, "*");
    }
    if (content && content.remove) frame.remove();
  };
  model.on("msg:custom", fromKernel);
  return () => {
    window.removeEventListener("message", fromView);
    model.off("msg:custom", fromKernel);
  };
}
export default { render };
"""


class AppView(anywidget.AnyWidget):
    """The view of one tool call, shown in a notebook cell."""

    _esm = traitlets.Unicode(_ESM).tag(sync=True)
    #: The view's HTML, its Content-Security-Policy in front.
    html = traitlets.Unicode("").tag(sync=True)
    #: The tool whose view this is.
    tool = traitlets.Unicode("").tag(sync=True)
    #: The iframe's ``allow`` attribute (the permissions the view declared).
    allow = traitlets.Unicode("").tag(sync=True)
    prefers_border = traitlets.Bool(None, allow_none=True).tag(sync=True)
    #: The policy the view is shown under.
    csp = traitlets.Unicode("").tag(sync=True)
    #: The tool result's text: what a client without apps shows.
    text = traitlets.Unicode("").tag(sync=True)

    def __init__(self, bridge: Bridge, **kwargs: Any) -> None:
        view_policy = policy(bridge.view.csp)
        super().__init__(html=with_policy(bridge.view.html, view_policy),
                         tool=bridge.tool.name, allow=allow_attribute(bridge.view.permissions),
                         prefers_border=bridge.view.prefers_border, csp=view_policy, **kwargs)
        self.bridge = bridge
        self._pool = ThreadPoolExecutor(MAX_WORKERS, thread_name_prefix="mcpsync-apps-view")
        self._teardown = 0
        #: Set once the view answered a teardown (and was removed).
        self.torn_down = threading.Event()
        self.on_msg(self._received)

    def _received(self, _widget: Any, content: Any, _buffers: Any) -> None:
        message = content.get("message") if isinstance(content, dict) else None
        if not isinstance(message, dict):
            return
        if "method" not in message and str(message.get("id", "")).startswith(
                "kernel-teardown-"):
            self.send({"remove": True})
            self.torn_down.set()
            return
        self._pool.submit(self._answer, message)

    def _answer(self, message: dict[str, Any]) -> None:
        try:
            for reply in self.bridge.handle(message):
                self.send({"message": reply})
            if message.get("method") == "ui/notifications/initialized":
                result = self.bridge.tool_result()
                self.text = "\n".join(b.get("text", "") for b in result["params"].get(
                    "content", []) if isinstance(b, dict) and b.get("type") == "text")
                self.send({"message": result})
        except Exception:  # a widget's thread: log, never lose it silently
            logger.exception("the view of %s: a message could not be answered",
                             self.bridge.tool.name)

    def teardown(self, reason: str = "closed") -> None:
        """Ask the view to tear down (``ui/resource-teardown``); it is removed from the
        page when it answers (:attr:`torn_down` is set then)."""
        self._teardown += 1
        self.send({"message": Bridge.teardown_request(f"kernel-teardown-{self._teardown}",
                                                      reason)})

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        super().close()


def call_tool(client: Client, name: str, arguments: Mapping[str, Any] | None = None, *,
              timeout: float | None = None) -> AppView | CallToolResult:
    """Call ``name`` and return what shows it: its view (an :class:`AppView`, which
    calls the tool once the view is up and hands it the result) when it has one, else
    the plain result. ``client`` should declare the extension
    (``HostHandlers(extra_capabilities=mcpsync.apps.host_capabilities())``) so the
    server knows its views are shown.

    ``client`` may be a hub (``Client.from_config``) and ``name`` a prefixed name
    (``weather_forecast``): the view is then hosted on that server's own client, so it
    calls and reads its own server by the names it knows (the revision scopes a view to
    its server: it reaches no other)."""
    clients = getattr(client, "clients", None)
    if isinstance(clients, dict):
        for prefix, server_client in clients.items():
            inner = name_in(prefix, name)
            if inner is not None:
                return call_tool(server_client, inner, arguments, timeout=timeout)
    tools = client.list_tools(timeout=timeout)
    tool = next((t for t in tools if t.name == name), None)
    uri = view_uri(tool) if tool is not None else None
    if tool is None or uri is None:
        return client.call_tool(name, arguments, timeout=timeout)
    view = fetch_view(client, uri, timeout=timeout)
    return AppView(Bridge(client, tool, arguments or {}, view, tools=tools, timeout=timeout,
                          platform="web"))


__all__ = ["MAX_WORKERS", "AppView", "call_tool"]
