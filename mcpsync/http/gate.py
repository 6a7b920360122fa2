"""The app's authorization (``wsgi_app(auth=ResourceServer(...))``): :class:`AuthGate`.

It serves the Protected Resource Metadata, checks each request's bearer token (401/403
with a ``WWW-Authenticate`` challenge, which never repeats the token), remembers on the
request's thread who it is (the owner a handshake-era session is created with and
checked against), and refuses before dispatch a request needing per-item OAuth scopes
the token lacks (a 403 the client can step up with). The resource server itself
(:class:`~mcpsync.auth.server.ResourceServer`) holds no state per request; this does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..auth.server.resource import Refusal
from ..errors import INVALID_REQUEST
from ..protocol.jsonrpc import Request
from ..server.scopes import Catalog, required_scopes
from .environ import AUTH_ENVIRON_KEY
from .replies import Environ, StartResponse, _HttpError, method_not_allowed

if TYPE_CHECKING:
    from ..auth.server.resource import ResourceServer


class AuthGate:
    """One app's check of bearer tokens and scopes, and who the request this thread is
    serving belongs to. Thread-safe (the principal is kept per thread)."""

    def __init__(self, auth: ResourceServer | None, server: Catalog) -> None:
        self.auth = auth
        self._server = server
        self._local = threading.local()

    def begin(self) -> None:
        """A new request on this thread: nobody, until :meth:`authenticate` says."""
        self._local.owner = self._local.token = None

    def owner(self) -> Any:
        """The principal of the request this thread is serving (``None`` without auth):
        the owner a handshake-era session is created with and checked against."""
        return getattr(self._local, "owner", None)

    def metadata(self, method: str, start_response: StartResponse) -> Iterable[bytes]:
        """RFC 9728 Protected Resource Metadata: public, so that a client without a token
        learns where to get one (CORS-readable, for browser-based clients)."""
        assert self.auth is not None
        if method not in ("GET", "HEAD"):
            raise method_not_allowed()
        body = self.auth.metadata_json()
        start_response("200 OK", [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(body))),
                                  ("Access-Control-Allow-Origin", "*"),
                                  ("Cache-Control", "max-age=3600")])
        return [b""] if method == "HEAD" else [body]

    def authenticate(self, environ: Environ, headers: dict[str, str]) -> None:
        """Check the request's bearer token and store the verified token for this request
        (``ctx.auth``, the session's owner); raise the 401/403 refusal (to be answered
        like every other, through the send middleware). It never repeats the token."""
        assert self.auth is not None
        verdict = self.auth.authenticate(headers.get("authorization"))
        if isinstance(verdict, Refusal):
            raise self.refuse(verdict)
        environ[AUTH_ENVIRON_KEY] = verdict
        self._local.owner = verdict.principal
        self._local.token = verdict
        return None

    def refuse(self, refusal: Refusal, msg_id: Any = None) -> _HttpError:
        """``refusal`` as the app's refusal to raise: its status and challenge kept."""
        message = {None: "Unauthorized: this server needs an OAuth bearer token",
                   "invalid_token": "Unauthorized: the access token is not valid here",
                   "invalid_request": "Unauthorized: send the token as Authorization: Bearer",
                   "insufficient_scope": "Forbidden: the access token lacks a needed scope",
                   }.get(refusal.error, "Unauthorized")
        return _HttpError(INVALID_REQUEST, message, msg_id, status=refusal.status,
                          extra=[("WWW-Authenticate", refusal.challenge)])

    def scope_refusal(self, items: list[Any]) -> Refusal | None:
        """A 403 for a request needing ``scopes`` the token lacks (a tool, a resource read
        or subscribed to, a prompt: :func:`~mcpsync.server.scopes.required_scopes`),
        before it is dispatched, so the client gets the challenge it can step up with."""
        if self.auth is None:
            return None
        token = getattr(self._local, "token", None)
        for item in items:
            if not isinstance(item, Request) or token is None:
                continue
            needed = required_scopes(self._server, item.method, item.params)
            if needed is not None and not token.has_scopes(needed.scopes):
                return self.auth.insufficient_scope(token, needed.scopes)
        return None


__all__ = ["AuthGate"]
