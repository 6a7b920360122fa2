"""The authorization server as WSGI: an app of its own, or a layer in front of a site.

``issuer_app(server)`` answers the server's endpoints (404 for anything else);
``with_issuer(app, server)`` answers them and passes every other request to ``app`` (a
Flask or Django WSGI app, an mcpsync MCP endpoint...). Requests are read with bounds: a
body over :data:`~mcpsync.auth.issuer.server.MAX_BODY_BYTES` is refused (413) unread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .server import MAX_BODY_BYTES, AuthorizationServer, IssuerRequest, IssuerResponse

__all__ = ["issuer_app", "read_request", "with_issuer"]

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

_REASONS = {200: "OK", 201: "Created", 302: "Found", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 413: "Content Too Large", 500: "Internal Server Error"}


class _TooLarge(Exception):
    pass


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    headers = {key[5:].replace("_", "-").title(): str(value)
               for key, value in environ.items() if key.startswith("HTTP_")}
    for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        if environ.get(key):
            headers[key.replace("_", "-").title()] = str(environ[key])
    return headers


def read_request(environ: dict[str, Any], issuer: str) -> IssuerRequest:
    """An :class:`IssuerRequest` of a WSGI request. The URL is rebuilt on the issuer's
    origin (behind a proxy the WSGI server sees another scheme and host)."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    path = (environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")) or "/"
    query_string = environ.get("QUERY_STRING", "")
    url = origin + path + (f"?{query_string}" if query_string else "")
    query = parse_qs(query_string, keep_blank_values=True)
    form: dict[str, list[str]] = {}
    body: Any = None
    if environ.get("REQUEST_METHOD") == "POST":
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY_BYTES:
            raise _TooLarge
        raw = environ["wsgi.input"].read(length) if length > 0 else b""
        kind = str(environ.get("CONTENT_TYPE", "")).split(";")[0].strip().lower()
        if kind == "application/x-www-form-urlencoded":
            form = parse_qs(raw.decode("utf-8", "replace"), keep_blank_values=True)
        elif kind == "application/json":
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
    return IssuerRequest(environ.get("REQUEST_METHOD", "GET"), url, _headers(environ),
                         query=query, form=form, json=body, native=environ)


def _send(response: IssuerResponse, start_response: Callable[..., Any]) -> list[bytes]:
    reason = _REASONS.get(response.status, "")
    headers = [*response.headers, ("Content-Length", str(len(response.body)))]
    start_response(f"{response.status} {reason}".strip(), headers)
    return [response.body]


def _answer(server: AuthorizationServer, environ: dict[str, Any],
            start_response: Callable[..., Any]) -> list[bytes] | None:
    path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    if path not in server.paths:  # another path's body is the app's: never read it here
        return None
    try:
        request = read_request(environ, server.issuer)
    except _TooLarge:
        return _send(IssuerResponse(413, [("Content-Type", "application/json")],
                                    b'{"error": "invalid_request"}'), start_response)
    response = server.handle(request)
    return None if response is None else _send(response, start_response)


def issuer_app(server: AuthorizationServer) -> WSGIApp:
    """A WSGI app serving ``server``'s endpoints only."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        answered = _answer(server, environ, start_response)
        if answered is not None:
            return answered
        return _send(IssuerResponse(404, [("Content-Type", "application/json")],
                                    b'{"error": "not_found"}'), start_response)

    return app


def with_issuer(app: WSGIApp, server: AuthorizationServer) -> WSGIApp:
    """``app`` with ``server``'s endpoints answered in front of it."""

    def layered(environ: dict[str, Any],
                start_response: Callable[..., Any]) -> Iterable[bytes]:
        answered = _answer(server, environ, start_response)
        return answered if answered is not None else app(environ, start_response)

    return layered
