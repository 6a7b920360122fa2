"""Streamable HTTP: the WSGI server side (:class:`McpWsgiApp`), mounting helpers, and a
development server. The client side is :meth:`mcpsync.Client.http`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .bus import Bus, InProcessBus
from .events import EventStore, InMemoryEventStore
from .intake import HostPolicy
from .options import SessionLimits, Stores, Timing, WsgiOptions
from .session_store import (
    FileSessionStore,
    MemorySessionStore,
    SessionRecord,
    SessionStore,
    SharedSessionState,
)
from .wsgi import McpWsgiApp, close_sse_stream

if TYPE_CHECKING:
    from ..server.server import ServerCore
    from .wsgi import Environ, StartResponse


def mount(app: Any, mcp: ServerCore | McpWsgiApp, prefix: str = "/mcp", **options: Any) -> Any:
    """Wrap a WSGI app (Flask's ``app.wsgi_app``, Django's ``get_wsgi_application()``) so
    that ``prefix`` goes to the MCP endpoint and everything else to ``app``::

        flask_app.wsgi_app = mount(flask_app.wsgi_app, server, "/mcp")

    With ``auth=ResourceServer(...)`` (an option of the endpoint) the metadata paths
    under ``/.well-known/oauth-protected-resource`` are routed to it as well.
    """
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    if not prefix.startswith("/"):
        raise ValueError(f"mount prefix must start with '/', got {prefix!r}")
    if isinstance(mcp, McpWsgiApp):
        if options:
            raise TypeError("mount(app, McpWsgiApp, ...) takes no options: pass them to "
                            "server.wsgi_app(...) instead, or pass the Server")
        if mcp.path not in (None, "/"):
            # The dispatcher strips the prefix: the endpoint sees PATH_INFO "" or "/", so an
            # endpoint with its own path would answer 404 to everything.
            raise ValueError(f"mount serves the endpoint at {prefix!r}: create it with "
                             f"path=None, not path={mcp.path!r}")
        endpoint = mcp
    else:
        if options.get("path") not in (None, "/"):
            raise ValueError(f"mount serves the endpoint at {prefix!r}: drop path="
                             f"{options['path']!r}")
        endpoint = McpWsgiApp(mcp, **options)
    mounts: dict[str, Any] = {prefix.rstrip("/"): endpoint}
    if endpoint.auth is not None:
        # The Protected Resource Metadata lives at the origin's /.well-known/, outside the
        # prefix: route those paths to the endpoint too (it answers them by full path).
        mounts.update(dict.fromkeys(endpoint.auth.metadata_paths, endpoint))
    return DispatcherMiddleware(app, mounts)


def serve(server: ServerCore, host: str = "127.0.0.1", port: int = 8000, *, path: str = "/mcp",
          ready: Any = None, timeout: float = 10.0, max_connections: int = 256,
          **options: Any) -> None:
    """Serve ``server`` at ``http://host:port{path}`` on the development server
    (:class:`mcpsync.http.devserver.server.DevServer`: one thread reads whole requests, a pool of
    threads answers them) until SIGINT (Ctrl-C) or SIGTERM, either of which ends the
    sessions and runs the server's shutdown (called on the main thread; elsewhere it
    serves until the process ends). For production use a WSGI server (see
    docs/wsgi.md).

    ``port`` is 1..65535, or 0 for any free port (``ready`` gets the real one).
    ``timeout``: a request's line, headers and body must all arrive within that many
    seconds (else 408), an idle connection lasts no longer, and a response write that
    stalls that long ends the connection; waiting for a tool or a quiet SSE stream is not
    limited. ``max_connections``: requests served at once (a handler thread each; a
    connection still sending its request holds none); more are answered 503.
    ``ready(url)`` is called once the socket listens.
    """
    from ..server.signals import StopSignals
    from .devserver.server import DevServer

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be 0..65535 (0: any free port), got {port!r}")
    app = McpWsgiApp(server, path=path, **options)
    try:
        httpd = DevServer(host, port, app, timeout=timeout, max_connections=max_connections)
    except BaseException:
        app.close()
        raise
    url = f"http://{host}:{httpd.server_port}{path}"
    # SIGTERM (docker stop, systemd) stops serving as SIGINT does, and neither can cut the
    # shutdown below short: the lifespan's exit and the shutdown hooks always run.
    with StopSignals() as signals:
        try:
            if ready is not None:
                ready(url)
            signals.run(httpd.serve_forever)
        finally:
            httpd.server_close()
            app.close()
            httpd.join_connections(timeout)


__all__ = ["Bus", "Environ", "EventStore", "FileSessionStore", "HostPolicy", "InMemoryEventStore",
           "InProcessBus", "McpWsgiApp", "MemorySessionStore", "SessionLimits", "SessionRecord",
           "SessionStore", "SharedSessionState", "StartResponse", "Stores", "Timing",
           "WsgiOptions", "close_sse_stream", "mount", "serve"]
