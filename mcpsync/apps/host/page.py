"""The preview: a host page that shows one tool's view, as a web host must (SEP-1865,
"Sandbox proxy"): the page (one origin) frames a sandbox proxy served from ANOTHER origin
(a second loopback port) with ``sandbox="allow-scripts allow-same-origin"``; the proxy
loads the view's HTML into an inner ``srcdoc`` iframe with ``sandbox="allow-scripts"`` (an
opaque origin: it reaches neither the proxy nor the page) and relays messages both ways.

The view's Content-Security-Policy is enforced twice: the proxy document is served with
it as a header (a ``srcdoc`` document inherits its parent's policy), and it is put in
front of the view's HTML as a ``<meta>`` (:func:`.csp.with_policy`).

Each ``GET /`` of the host app starts a session (one tool call, one :class:`.Bridge`);
the page carries the view's messages to ``POST /s/<token>/message`` and asks for the
tool's result at ``POST /s/<token>/result``. At most :data:`MAX_SESSIONS` are kept (the
oldest is forgotten); a request body is at most :data:`MAX_BODY` bytes.
"""

from __future__ import annotations

import html as html_escape
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ...errors import MCPSyncError
from .assets import HOST_PAGE, PROXY_PAGE, json_for_script
from .csp import allow_attribute, declared, policy, with_policy

if TYPE_CHECKING:
    from .bridge import Bridge

Environ = dict[str, Any]
StartResponse = Callable[..., Any]

#: Views kept at once (each holds its HTML and its tool's result).
MAX_SESSIONS: Final = 16
#: The largest message a page may post, in bytes.
MAX_BODY: Final = 4 * 1024 * 1024


class Preview:
    """The host app and the sandbox app of one preview, and the sessions they share.

    ``start()`` makes the :class:`.Bridge` of a new page load (it may call the server:
    list tools, read the view). ``host_origin`` and ``sandbox_origin`` are set once both
    servers listen (:meth:`bind`)."""

    def __init__(self, start: Callable[[], Bridge], *, title: str = "mcpsync apps preview"
                 ) -> None:
        self._start = start
        self.title = title
        self.host_origin = ""
        self.sandbox_origin = ""
        self._lock = threading.Lock()
        self._sessions: OrderedDict[str, tuple[Bridge, str]] = OrderedDict()

    def bind(self, host_origin: str, sandbox_origin: str) -> None:
        if host_origin == sandbox_origin:
            raise ValueError("the sandbox must be served from another origin than the page")
        self.host_origin = host_origin.rstrip("/")
        self.sandbox_origin = sandbox_origin.rstrip("/")

    # -- sessions -------------------------------------------------------------------------

    def _open(self) -> tuple[str, Bridge, str]:
        bridge = self._start()
        view_policy = policy(bridge.view.csp)  # CspError for a bad declaration
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._sessions[token] = (bridge, view_policy)
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        return token, bridge, view_policy

    def _find(self, token: str) -> tuple[Bridge, str] | None:
        with self._lock:
            return self._sessions.get(token)

    def _forget(self, token: str) -> None:
        with self._lock:
            self._sessions.pop(token, None)

    # -- the host app ---------------------------------------------------------------------

    def host_app(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO") or "/"
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/" and method in ("GET", "HEAD"):
            return self._page(start_response)
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "s" and method == "POST":
            return self._post(environ, start_response, parts[1], parts[2])
        return _plain(start_response, "404 Not Found", "not found")

    def _page(self, start_response: StartResponse) -> Iterable[bytes]:
        try:
            token, bridge, view_policy = self._open()
        except (ValueError, LookupError, MCPSyncError) as exc:  # CspError, ViewError too
            return _plain(start_response, "502 Bad Gateway", f"cannot show the view: {exc}")
        view = bridge.view
        nonce = secrets.token_urlsafe(16)
        config = {
            "base": f"/s/{token}", "tool": bridge.tool.name,
            "proxyUrl": f"{self.sandbox_origin}/proxy/{token}",
            "sandboxOrigin": self.sandbox_origin,
            "html": with_policy(view.html, view_policy),
            "csp": {k: v for k, v in declared(view.csp).items() if v},
            "permissions": dict(view.permissions or {}),
            "allow": allow_attribute(view.permissions),
            "prefersBorder": view.prefers_border,
        }
        body = HOST_PAGE.format(nonce=nonce, config=json_for_script(config),
                                title=html_escape.escape(f"{self.title}: {bridge.tool.name}"))
        page_policy = (f"default-src 'none'; script-src 'nonce-{nonce}'; "
                       "style-src 'unsafe-inline'; connect-src 'self'; "
                       f"frame-src {self.sandbox_origin}; base-uri 'none'; form-action 'none'")
        return _send(start_response, "200 OK", body.encode(), "text/html; charset=utf-8",
                     [("Content-Security-Policy", page_policy)])

    def _post(self, environ: Environ, start_response: StartResponse, token: str,
              action: str) -> Iterable[bytes]:
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin != self.host_origin:
            return _plain(start_response, "403 Forbidden", "another origin may not post here")
        found = self._find(token)
        if found is None:
            return _plain(start_response, "404 Not Found", "no such view (closed or expired)")
        bridge = found[0]
        try:
            message = _json_body(environ)
        except ValueError as exc:
            return _plain(start_response, "400 Bad Request", str(exc))
        if action == "message":
            out: list[dict[str, Any]] = bridge.handle(message)
        elif action == "result":
            out = [bridge.tool_result()]
        elif action == "close":
            self._forget(token)
            out = []
        else:
            return _plain(start_response, "404 Not Found", "not found")
        return _send(start_response, "200 OK", json.dumps(out).encode(), "application/json")

    # -- the sandbox app ------------------------------------------------------------------

    def sandbox_app(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        parts = (environ.get("PATH_INFO") or "/").strip("/").split("/")
        found = self._find(parts[1]) if len(parts) == 2 and parts[0] == "proxy" else None
        if found is None or environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _plain(start_response, "404 Not Found", "not found")
        body = PROXY_PAGE.format(host_origin=json_for_script(self.host_origin))
        # The view's policy: the srcdoc view inherits it; the proxy's own inline script is
        # allowed by it ('unsafe-inline' is in every view policy).
        return _send(start_response, "200 OK", body.encode(), "text/html; charset=utf-8",
                     [("Content-Security-Policy", found[1])])


def _json_body(environ: Environ) -> Any:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise ValueError("bad Content-Length") from None
    if length > MAX_BODY:
        raise ValueError(f"a message is at most {MAX_BODY} bytes")
    raw = environ["wsgi.input"].read(length) if length > 0 else b""
    try:
        return json.loads(raw or b"null")
    except ValueError:
        raise ValueError("the body is not JSON") from None


def _send(start_response: StartResponse, status: str, body: bytes, content_type: str,
          headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))),
                            ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
                            *(headers or [])])
    return [body]


def _plain(start_response: StartResponse, status: str, text: str) -> Iterable[bytes]:
    return _send(start_response, status, (text + "\n").encode(), "text/plain; charset=utf-8")


def session_bridges(preview: Preview) -> Mapping[str, Bridge]:
    """The bridges of the sessions a preview keeps (for tests and tools)."""
    with preview._lock:
        return {token: found[0] for token, found in preview._sessions.items()}


__all__ = ["MAX_BODY", "MAX_SESSIONS", "Preview", "session_bridges"]
