"""The interactive step: sending the user to the authorization server and getting the
redirect back.

A *redirect handler* is any callable ``handler(authorization_url) -> callback`` where
``callback`` is the full redirect URL the authorization server sent the browser to (best:
it carries ``code``, ``state`` and RFC 9207 ``iss``) or a ``(code, state)`` pair. Two come
with mcpsync:

* :func:`console_redirect_handler` (the default): prints the URL, opens a browser when
  there is one, and reads the redirect URL the user pastes back (works in a terminal and
  in a notebook, whose ``input()`` is a text box);
* :class:`LoopbackRedirect`: a desktop or terminal session with a browser on the same
  machine: it listens on ``127.0.0.1`` (a random port) for the one redirect back, so
  nothing needs pasting (use its ``redirect_uri`` in ``OAuth``);
* :class:`FollowRedirects`: for tests and headless hosts whose authorization server
  approves without a person (it follows the server's redirects with ``requests`` until
  they reach the ``redirect_uri``, and never requests that URI itself).

Whatever the handler, ``OAuth`` checks the ``state`` (and RFC 9207 ``iss``) of what comes
back before it uses the code.
"""

from __future__ import annotations

import http.server
import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

from ..protocol.deadline import Deadline
from ..threads.watchdog import WATCHDOG
from ..transports.http.deadline import exchange, timeouts, tracked_session
from .errors import AuthorizationResponseError
from .fetch import DEFAULT_TIMEOUT

RedirectHandler = Callable[[str], "str | tuple[str, str]"]
#: Redirects :class:`FollowRedirects` follows before it gives up.
MAX_REDIRECT_HOPS = 10


def console_redirect_handler(authorization_url: str) -> str:
    """Print the authorization URL (and try a browser), then read the redirect URL."""
    print("Open this URL to authorize the MCP client:\n\n  " + authorization_url + "\n",
          file=sys.stderr, flush=True)
    try:
        webbrowser.open(authorization_url, new=2)
    except webbrowser.Error:
        pass
    return input("Paste the URL your browser was redirected to: ").strip()


class FollowRedirects:
    """A redirect handler that lets ``requests`` play the browser: GET the authorization
    URL and follow its redirects (at most ``max_hops``, each ending within ``timeout`` s,
    all of it: a trickled answer is cut there) until one points at the ``redirect_uri`` of
    the request; that URL is the callback. A ``session`` of the caller's gets per-read
    timeouts only (no adapter is mounted on it)."""

    def __init__(self, session: requests.Session | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_hops: int = MAX_REDIRECT_HOPS) -> None:
        self.session = session if session is not None else tracked_session()
        self.timeout = timeout
        self.max_hops = max_hops

    def __call__(self, authorization_url: str) -> str:
        query = parse_qs(urlsplit(authorization_url).query)
        redirect_uri = (query.get("redirect_uri") or [""])[0]
        url = authorization_url
        for _ in range(self.max_hops):
            if redirect_uri and url.split("?", 1)[0] == redirect_uri.split("?", 1)[0]:
                return url
            hop = Deadline(self.timeout, f"GET {url.split('?', 1)[0]}")
            with exchange(hop), self.session.get(
                    url, allow_redirects=False, stream=True,
                    timeout=timeouts(hop, self.timeout, self.timeout)) as response:
                location = response.headers.get("Location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise AuthorizationResponseError(
                        f"the authorization server answered HTTP {response.status_code} "
                        f"without redirecting back to {redirect_uri!r}")
            url = urljoin(url, location)
        raise AuthorizationResponseError(
            f"more than {self.max_hops} redirects before reaching {redirect_uri!r}")


#: How long :class:`LoopbackRedirect` waits for the browser to come back (seconds).
LOOPBACK_WAIT = 300.0
_PAGE = (b"<!doctype html><title>mcpsync</title><p>Authorization received. "
         b"You can close this window.</p>")


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed
        pass


class LoopbackRedirect:
    """A redirect handler that receives the redirect itself, on ``127.0.0.1``.

    ``redirect_uri`` (``http://127.0.0.1:PORT/callback``, a random free port unless
    ``port`` is given) is what to pass to ``OAuth(redirect_uri=...)``. Calling it shows the
    authorization URL (``opener``, default: print it and open a browser) and then serves
    one request at a time on the loopback port until the callback path is requested, at
    most ``timeout`` seconds; each connection gets ``request_timeout`` seconds in all
    (then its socket is shut down: a connection trickling its request, or a browser's
    idle preconnect, cannot hold the one-at-a-time listener past that). Other paths get
    404. Use it as a context manager (or call :meth:`close`) to free the port.
    """

    def __init__(self, *, path: str = "/callback", port: int = 0,
                 timeout: float = LOOPBACK_WAIT, request_timeout: float = 10.0,
                 opener: Callable[[str], Any] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self._opener = opener if opener is not None else _show
        self._received: str | None = None
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            timeout = request_timeout

            def handle(self) -> None:
                # A per-read timeout alone lets a trickle go on for ever: end it all.
                sock = self.connection
                alarm = WATCHDOG.arm(time.monotonic() + request_timeout,
                                     lambda: _shut_down(sock))
                try:
                    super().handle()
                except OSError:
                    pass  # shut down at its deadline, or the browser hung up
                finally:
                    alarm.cancel()

            def do_GET(self) -> None:
                if urlsplit(self.path).path != outer.path:
                    self.send_error(404)
                    return
                outer._received = self.path
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(_PAGE)))
                self.end_headers()
                self.wfile.write(_PAGE)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the query holds the authorization code: never logged

        self._server = http.server.HTTPServer(("127.0.0.1", port), Handler)
        self.port: int = self._server.server_address[1]
        self.redirect_uri = f"http://127.0.0.1:{self.port}{path}"

    def __call__(self, authorization_url: str) -> str:
        with self._lock:  # one authorization at a time on this port
            self._received = None
            self._opener(authorization_url)
            deadline = time.monotonic() + self.timeout
            while self._received is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AuthorizationResponseError(
                        f"no redirect reached {self.redirect_uri} within {self.timeout} s")
                self._server.timeout = min(left, 1.0)
                self._server.handle_request()
            return f"http://127.0.0.1:{self.port}{self._received}"

    def close(self) -> None:
        self._server.server_close()

    def __enter__(self) -> LoopbackRedirect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _show(authorization_url: str) -> None:
    print("Opening a browser to authorize the MCP client; if none opens, visit:\n\n  "
          + authorization_url + "\n", file=sys.stderr, flush=True)
    try:
        webbrowser.open(authorization_url, new=2)
    except webbrowser.Error:
        pass


@dataclass(frozen=True)
class Callback:
    """What came back on the redirect (the code is kept out of ``repr``)."""

    code: str | None
    state: str | None
    iss: str | None
    error: str | None = None
    error_description: str | None = None

    def __repr__(self) -> str:
        return f"Callback(state=..., iss={self.iss!r}, error={self.error!r})"


def parse_callback(value: object) -> Callback:
    """A redirect URL (or a bare query string) or a ``(code, state)`` pair."""
    if isinstance(value, tuple) and len(value) == 2:
        code, state = value
        return Callback(str(code), str(state), None)
    if not isinstance(value, str):
        raise AuthorizationResponseError("the redirect handler returned neither a URL nor "
                                         "a (code, state) pair")
    query = urlsplit(value).query if "://" in value else value.lstrip("?")
    params = parse_qs(query, keep_blank_values=True)

    def one(name: str) -> str | None:
        values = params.get(name)
        return values[0] if values else None

    return Callback(one("code"), one("state"), one("iss"), one("error"),
                    one("error_description"))
