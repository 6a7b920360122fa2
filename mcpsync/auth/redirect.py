"""The interactive step: sending the user to the authorization server and getting the
redirect back.

A *redirect handler* is any callable ``handler(authorization_url) -> callback`` where
``callback`` is the full redirect URL the authorization server sent the browser to (best:
it carries ``code``, ``state`` and RFC 9207 ``iss``) or a ``(code, state)`` pair. Two come
with mcpsync:

* :func:`console_redirect_handler` (the default): prints the URL, opens a browser when
  there is one, and reads the redirect URL the user pastes back (works in a terminal and
  in a notebook, whose ``input()`` is a text box);
* :class:`FollowRedirects`: for tests and headless hosts whose authorization server
  approves without a person (it follows the server's redirects with ``requests`` until
  they reach the ``redirect_uri``, and never requests that URI itself).
"""

from __future__ import annotations

import sys
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, urljoin, urlsplit

import requests

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
    URL and follow its redirects (at most ``max_hops``, each within ``timeout`` s) until
    one points at the ``redirect_uri`` of the request; that URL is the callback."""

    def __init__(self, session: requests.Session | None = None,
                 timeout: float = DEFAULT_TIMEOUT, max_hops: int = MAX_REDIRECT_HOPS) -> None:
        self.session = session if session is not None else requests.Session()
        self.timeout = timeout
        self.max_hops = max_hops

    def __call__(self, authorization_url: str) -> str:
        query = parse_qs(urlsplit(authorization_url).query)
        redirect_uri = (query.get("redirect_uri") or [""])[0]
        url = authorization_url
        for _ in range(self.max_hops):
            if redirect_uri and url.split("?", 1)[0] == redirect_uri.split("?", 1)[0]:
                return url
            with self.session.get(url, allow_redirects=False, timeout=self.timeout,
                                  stream=True) as response:
                location = response.headers.get("Location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise AuthorizationResponseError(
                        f"the authorization server answered HTTP {response.status_code} "
                        f"without redirecting back to {redirect_uri!r}")
            url = urljoin(url, location)
        raise AuthorizationResponseError(
            f"more than {self.max_hops} redirects before reaching {redirect_uri!r}")


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
