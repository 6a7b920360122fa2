"""Everything the app reads and checks about an HTTP request before it is dispatched.

In the order a request meets them:

* **Headers and transport context** (:func:`request_headers`, :func:`transport_context`):
  what one HTTP request looks like to the rest of mcpsync, read from its WSGI ``environ``.
  Shared by the app's router (``wsgi.py``) and the era handlers (``modern.py``,
  ``legacy.py``, ``legacy_sse.py``).
* **DNS-rebinding protection** (:class:`HostPolicy`): which ``Host`` and ``Origin``
  headers a server accepts. A browser page on ``evil.example`` can resolve that name to
  127.0.0.1 and talk to a local server; checking ``Host`` (the name the browser thinks it
  is talking to) and ``Origin`` (the page that sent the request) stops it. The default
  accepts only loopback names.
* **Authorization** (``wsgi_app(auth=ResourceServer(...))``, :class:`AuthGate`): it serves
  the Protected Resource Metadata, checks each request's bearer token (401/403 with a
  ``WWW-Authenticate`` challenge, which never repeats the token), remembers on the
  request's thread who it is (the owner a handshake-era session is created with and
  checked against), and refuses before dispatch a request needing per-item OAuth scopes
  the token lacks (a 403 the client can step up with). The resource server itself
  (:class:`~mcpsync.auth.server.ResourceServer`) holds no state per request; this does.
* **The body** (:class:`BodyReader`): never more than ``max_body_bytes`` of it read,
  whatever its framing claims. Malformed framing is a 400 with a JSON-RPC body, too large
  a body a 413, before any of it reaches a parser.

They live together because each is one step of the app's intake, run in turn by the
router before a request reaches its era's handler; the refusals they raise are the
app's :class:`~mcpsync.http.replies._HttpError`, answered like every other.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ..auth.server.resource import SERVER_ERROR, Refusal
from ..dispatch.inbound import Headers, TransportContext
from ..dispatch.principal import Principal
from ..errors import INTERNAL_ERROR, INVALID_REQUEST
from ..protocol.decoding import parse_decimal
from ..protocol.jsonrpc import Request
from ..server.scopes import Catalog, required_scopes
from .replies import Environ, StartResponse, _HttpError, method_not_allowed

if TYPE_CHECKING:
    from ..auth.server.resource import ResourceServer

logger = logging.getLogger("mcpsync.http")

# -- headers and the transport context ----------------------------------------------------

#: Where the verified AccessToken of a request sits in its WSGI environ.
AUTH_ENVIRON_KEY: Final = "mcpsync.auth"

#: WSGI environ key -> header name (``HTTP_MCP_SESSION_ID`` -> ``mcp-session-id``; ``""``
#: for a key that is not a header). Every request walks the whole environ, and some servers
#: put far more than headers in it (granian copies the process environment into each one),
#: so the translation is looked up, not redone. Bounded in entries and in bytes: clients
#: choose header names, so only keys up to ``_MAX_CACHED_KEY`` characters are remembered,
#: at most ``_MAX_HEADER_NAMES`` of them (~125 KiB at worst); the rest are translated each
#: time.
_HEADER_NAMES: dict[str, str] = {}
_MAX_HEADER_NAMES: Final = 512
_MAX_CACHED_KEY: Final = 64


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers from a WSGI ``environ``, lower-cased names with dashes, plus
    ``content-type`` and ``content-length`` (which WSGI keeps without the ``HTTP_``)."""
    names = _HEADER_NAMES
    headers: dict[str, str] = {}
    for key, value in environ.items():
        name = names.get(key)
        if name is None:
            name = key[5:].replace("_", "-").lower() if key.startswith("HTTP_") else ""
            if len(names) < _MAX_HEADER_NAMES and len(key) <= _MAX_CACHED_KEY:
                names[key] = name  # a racing thread writes the same value: harmless
        if name:
            headers[name] = value
    if "CONTENT_TYPE" in environ:
        headers["content-type"] = environ["CONTENT_TYPE"]
    if "CONTENT_LENGTH" in environ:
        headers["content-length"] = environ["CONTENT_LENGTH"]
    return headers


def transport_context(environ: dict[str, Any], headers: dict[str, str],
                      session_id: str | None) -> TransportContext:
    """The TransportContext of the messages of one HTTP request: a handshake-era
    session's (``session_id``) can be sent requests, a 2026-07-28 one's can not."""
    remote = environ.get("REMOTE_ADDR")
    return TransportContext("http", headers=Headers.lowered(
                                _without_credentials(headers) if AUTH_ENVIRON_KEY in environ
                                else headers),
                            remote_addr=remote if isinstance(remote, str) else None,
                            session_id=session_id, can_receive_requests=session_id is not None,
                            auth=environ.get(AUTH_ENVIRON_KEY))


def _without_credentials(headers: dict[str, str]) -> dict[str, str]:
    """The headers handlers and middleware see: with ``auth=`` the verified token is
    ``ctx.auth``, and the raw ``Authorization`` value is not handed on (so it cannot end
    up in a log line that prints the headers)."""
    if "authorization" not in headers:
        return headers
    return {k: v for k, v in headers.items() if k != "authorization"}


# -- Host and Origin ----------------------------------------------------------------------

LOOPBACK: Final = ("localhost", "127.0.0.1", "[::1]", "::1")
_MAX_VERDICTS: Final = 256
_MAX_VERDICT_KEY: Final = 255


def _split_host(value: str) -> tuple[str, str | None]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, colon, port = value.rpartition(":")
    if colon and port.isdigit():
        return host, port
    return value, None


class HostPolicy:
    """Allowed ``Host`` and ``Origin`` values. Immutable, thread-safe.

    ``allowed_hosts`` entries are ``name`` (any port), ``name:port``, ``*.suffix``, or
    ``*`` (no check: only behind a proxy that checks). ``allowed_origins`` entries are
    origins such as ``https://app.example.com`` or ``*``; by default an origin is accepted
    when its host is an allowed host.
    """

    def __init__(self, allowed_hosts: Iterable[str] | None = None,
                 allowed_origins: Iterable[str] | None = None) -> None:
        self.allowed_hosts = tuple(h.lower() for h in (allowed_hosts or LOOPBACK))
        self.allowed_origins = tuple(o.lower().rstrip("/") for o in (allowed_origins or ()))
        #: Verdicts already reached, by ``Host`` value: every request asks, and a client
        #: sends the same value each time. The policy never changes, so a verdict never
        #: goes stale. Bounded (clients choose the values): at most ``_MAX_VERDICTS``
        #: values of at most ``_MAX_VERDICT_KEY`` characters (~80 KiB at worst); the
        #: rest are checked each time.
        self._host_verdicts: dict[str, bool] = {}

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        verdicts = self._host_verdicts
        verdict = verdicts.get(host_header)
        if verdict is None:
            verdict = self._name_allowed(host_header)
            if len(verdicts) < _MAX_VERDICTS and len(host_header) <= _MAX_VERDICT_KEY:
                verdicts[host_header] = verdict  # a racing thread writes the same value
        return verdict

    def _name_allowed(self, value: str) -> bool:
        host, port = _split_host(value)
        for entry in self.allowed_hosts:
            entry_host, entry_port = _split_host(entry)
            if entry_host.startswith("*."):
                if not host.endswith(entry_host[1:]):
                    continue
            elif entry_host != host:
                continue
            if entry_port is None or entry_port == port:
                return True
        return False

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        origin = origin.strip().lower().rstrip("/")
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return "*" in self.allowed_hosts or self._name_allowed(parts.netloc)


# -- authorization ------------------------------------------------------------------------

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

    def owner(self) -> Principal | None:
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
        if refusal.error == SERVER_ERROR:  # the verifier failed: no challenge to answer
            return _HttpError(INTERNAL_ERROR, "Internal error: the server could not check "
                              "the access token", msg_id, status=refusal.status)
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


# -- the body -----------------------------------------------------------------------------

class BodyReader:
    """Reads the bodies of one app's requests, up to ``max_body_bytes``. Stateless
    between requests, so thread-safe."""

    def __init__(self, max_body_bytes: int) -> None:
        self.max_body_bytes = max_body_bytes

    def read(self, environ: Environ) -> bytes:
        """The request body, never more than ``max_body_bytes`` of it read, whatever the
        framing claims; malformed framing is a 400 with a JSON-RPC body."""
        try:
            return self._read_framed(environ)
        except _HttpError:
            raise
        except Exception as exc:
            # The WSGI server's own framing errors surface here, as whatever it raises: a
            # chunk size that is not hex, a body cut short, a client gone mid-body.
            logger.debug("unreadable request body: %r", exc)
            raise _HttpError(INVALID_REQUEST,
                             "Bad request: malformed request body framing") from None

    def _read_framed(self, environ: Environ) -> bytes:
        length_text = str(environ.get("CONTENT_LENGTH") or "").strip()
        stream = environ["wsgi.input"]
        if length_text:
            # Digits only: int() would take "-1" (which some servers then read as "to
            # EOF"), "+5" or "1_0".
            length = parse_decimal(length_text)
            if length is None:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: invalid Content-Length")
            if length > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            data = bytes(stream.read(length))
            if len(data) != length:
                raise _HttpError(INVALID_REQUEST,
                                 "Bad request: the body ended before Content-Length bytes")
            return data
        if environ.get("wsgi.input_terminated") or environ.get("HTTP_TRANSFER_ENCODING"):
            data = bytes(stream.read(self.max_body_bytes + 1))
            if len(data) > self.max_body_bytes:
                raise _HttpError(INVALID_REQUEST,
                                 f"Request body larger than {self.max_body_bytes} bytes",
                                 status="413 Content Too Large")
            return data
        return b""

__all__ = ["AUTH_ENVIRON_KEY", "LOOPBACK", "AuthGate", "BodyReader", "HostPolicy",
           "request_headers", "transport_context"]
