"""What one HTTP request looks like to the rest of mcpsync, read from its WSGI ``environ``:
its headers (:func:`request_headers`) and the :class:`TransportContext` its messages carry
(:func:`transport_context`). Shared by the app's router (``wsgi.py``) and the era handlers
(``modern.py``, ``legacy.py``, ``legacy_sse.py``).
"""

from __future__ import annotations

from typing import Any, Final

from ..dispatch.transport import Headers, TransportContext

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


__all__ = ["AUTH_ENVIRON_KEY", "request_headers", "transport_context"]
