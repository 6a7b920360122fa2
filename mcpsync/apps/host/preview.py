"""``mcpsync apps preview``: serve the preview of one tool's view on two loopback ports
(the page's and the sandbox's: two origins, as the revision requires of a web host)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .bridge import Bridge
from .page import Preview
from .view import ViewError, fetch_view, find_tool

if TYPE_CHECKING:
    from ...client.client import Client
    from ...http.devserver.server import DevServer


def preview_of(client: Client, tool: str, arguments: Mapping[str, Any], *,
               timeout: float | None = None) -> Preview:
    """The :class:`Preview` of ``tool`` called with ``arguments`` through ``client`` (a
    client that declared the apps extension: see :func:`mcpsync.apps.host_capabilities`).
    Each page load lists the tools, reads the view and makes a new bridge."""

    def start() -> Bridge:
        tools = client.list_tools(timeout=timeout)
        found = next((t for t in tools if t.name == tool), None)
        if found is None:
            raise LookupError(f"the server lists no tool {tool!r}")
        from ..wire import view_uri
        uri = view_uri(found)
        if uri is None:
            raise ViewError(f"the tool {tool!r} has no view (no _meta.ui.resourceUri)")
        return Bridge(client, found, arguments, fetch_view(client, uri, timeout=timeout),
                      tools=tools, timeout=timeout)

    return Preview(start)


class PreviewServers:
    """The two development servers of a preview: ``start()`` listens and serves the
    sandbox on a named thread; :meth:`serve_forever` serves the page on the caller's;
    :meth:`close` stops both and joins the thread."""

    def __init__(self, preview: Preview, host: str = "127.0.0.1", port: int = 0, *,
                 timeout: float = 10.0, max_connections: int = 64) -> None:
        from ...http.devserver.server import DevServer

        self.preview = preview
        self.page: DevServer = DevServer(host, port, preview.host_app, timeout=timeout,
                                         max_connections=max_connections)
        try:
            self.sandbox: DevServer = DevServer(host, 0, preview.sandbox_app, timeout=timeout,
                                                max_connections=max_connections)
        except BaseException:
            self.page.server_close()
            raise
        # A wildcard address is no origin a browser can open: the page is this machine's.
        shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(
            host, f"[{host}]" if ":" in host else host)
        self.url = f"http://{shown}:{self.page.server_port}/"
        preview.bind(f"http://{shown}:{self.page.server_port}",
                     f"http://{shown}:{self.sandbox.server_port}")
        self._thread = threading.Thread(target=self.sandbox.serve_forever,
                                        name="mcpsync-apps-sandbox", daemon=True)
        self._page_thread: threading.Thread | None = None
        self._timeout = timeout

    def start(self, *, page_too: bool = False) -> PreviewServers:
        self._thread.start()
        if page_too:
            self._page_thread = threading.Thread(target=self.page.serve_forever,
                                                 name="mcpsync-apps-page", daemon=True)
            self._page_thread.start()
        return self

    def serve_forever(self, run: Callable[[Callable[[], None]], object] | None = None) -> None:
        """Serve the page on this thread (through ``run``: a signal handler's runner)."""
        if run is None:
            self.page.serve_forever()
        else:
            run(self.page.serve_forever)

    def close(self) -> None:
        for server, thread in ((self.page, self._page_thread), (self.sandbox, self._thread)):
            if thread is not None and thread.is_alive():
                server.shutdown()
                thread.join(self._timeout)
            server.server_close()
            server.join_connections(self._timeout)

    def __enter__(self) -> PreviewServers:
        return self.start(page_too=True)

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["PreviewServers", "find_tool", "preview_of"]
