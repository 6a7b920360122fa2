"""``Server.from_openapi`` and ``Server.from_wsgi``: a server made of an API's routes.

Both take the server to fill (``Server``'s class methods make it), so this package never
imports the class it is used from.

Identity in process (``forward_identity=``): the app's own permissions decide, so what it
needs to know who calls is put in its environ: ``"bearer"`` passes the MCP request's
``Authorization: Bearer`` header through (for an app that verifies the same tokens the
MCP endpoint accepts: the token was issued for this very server, since the app *is* the
server; never pass a token on to another API), ``"remote_user"`` sets ``REMOTE_USER`` to the
authenticated principal's subject (or client id) as a front server would, ``"django"``
forwards the Django user of the MCP request (``ctx.user``, under ``mcpsync.django``) as the
call's ``request.user`` (:mod:`.django_user`), and a callable ``(ctx, environ)`` does what
the app expects. A call without a principal goes in without
one: the app treats it as anonymous.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import requests

from .build import Generated, install
from .document import Document, OpenAPIError, load_document
from .frameworks import AppDocument, django_document, flask_document, is_django, is_flask
from .limits import RouteLimits
from .maps import RouteMap
from .outbound import IdentityHook, RequestsCaller, WsgiCaller

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext
    from ..server.server import ServerCore

__all__ = ["DEFAULT_TIMEOUT", "fill_from_openapi", "fill_from_wsgi", "identity_hook"]

#: Seconds one generated call may take, all of it, unless ``timeout=`` says otherwise.
DEFAULT_TIMEOUT = 30.0

Spec = Mapping[str, Any] | str | os.PathLike[str]
Identity = Literal["bearer", "remote_user", "django"] | Callable[..., None] | None


def fill_from_openapi(server: ServerCore, spec: Spec | Document, *,
                      session: requests.Session | None = None, base_url: str | None = None,
                      route_maps: Iterable[RouteMap] | None = None,
                      timeout: float = DEFAULT_TIMEOUT, uri_scheme: str = "api",
                      limits: RouteLimits | None = None) -> list[Generated]:
    """Register ``spec``'s operations on ``server``, called over HTTP at ``base_url`` (the
    document's first server when not given) with ``session``."""
    document = spec if isinstance(spec, Document) else load_document(
        spec, session=session, limits=limits)
    base = base_url or document.server_url()
    if not base or not base.startswith(("http://", "https://")):
        raise OpenAPIError("no base URL: the document names no absolute server URL, so pass "
                           "base_url='https://...'")
    caller = RequestsCaller(base, session=session, timeout=timeout,
                            max_response_bytes=document.limits.max_response_bytes)
    return install(server, document, caller, route_maps=route_maps, uri_scheme=uri_scheme,
                   limits=document.limits)


def fill_from_wsgi(server: ServerCore, app: Any, *,
                   openapi: Spec | Document | AppDocument | Any = None,
                   route_maps: Iterable[RouteMap] | None = None,
                   forward_identity: Identity = None, timeout: float = DEFAULT_TIMEOUT,
                   base_url: str = "http://localhost", uri_scheme: str = "api",
                   limits: RouteLimits | None = None) -> list[Generated]:
    """Register the operations of ``app``'s document on ``server``, each called into
    ``app`` in process (see the module doc for ``forward_identity``)."""
    limits = limits or RouteLimits()
    hook = identity_hook(forward_identity)
    document = _app_document(app, openapi, limits, base_url, timeout)
    prefix = urllib.parse.urlsplit(document.server_url() or "").path.rstrip("/")
    caller = WsgiCaller(app, base_url=base_url, timeout=timeout, prefix=prefix,
                        max_response_bytes=limits.max_response_bytes, identity=hook)
    return install(server, document, caller, route_maps=route_maps, uri_scheme=uri_scheme,
                   limits=limits)


def _app_document(app: Any, openapi: Any, limits: RouteLimits, base_url: str,
                  timeout: float) -> Document:
    if isinstance(openapi, Document):
        return openapi
    if openapi is None:
        if is_flask(app):
            return Document(flask_document(app), limits)
        if is_django(app):
            return Document(django_document(), limits)
        openapi = AppDocument()
    if isinstance(openapi, AppDocument):
        from .calls import HttpRequest

        fetcher = WsgiCaller(app, base_url=base_url, timeout=timeout, prefix="",
                             max_response_bytes=limits.max_document_bytes, identity=None)
        answer = fetcher.send(HttpRequest("GET", openapi.path,
                                          headers={"Accept": "application/json"}),
                              None, f"GET {openapi.path}")
        if answer.status != 200:
            raise OpenAPIError(f"the app answered GET {openapi.path} with {answer.status}, "
                               "not its OpenAPI document")
        from .document import _parse

        return Document(_parse(answer.body, openapi.path), limits)
    if hasattr(openapi, "to_dict") and not isinstance(openapi, Mapping):  # an APISpec
        return Document(openapi.to_dict(), limits)
    if isinstance(openapi, str) and openapi.startswith("/") and not os.path.exists(openapi):
        raise OpenAPIError(f"no file {openapi}: for a document the app serves, pass "
                           f"openapi=AppDocument({openapi!r})")
    return load_document(openapi, limits=limits)


def identity_hook(forward: Identity) -> IdentityHook | None:
    """The environ hook ``forward_identity=`` names (see the module doc)."""
    if forward is None:
        return None
    if forward == "bearer":
        return _bearer
    if forward == "remote_user":
        return _remote_user
    if forward == "django":
        from .django_user import forward_django_user

        return forward_django_user
    if callable(forward):
        return forward
    raise ValueError(f"forward_identity must be 'bearer', 'remote_user', 'django', a callable "
                     f"or None, not {forward!r}")


def _bearer(ctx: HandlerContext | None, environ: dict[str, Any]) -> None:
    transport = getattr(ctx, "transport", None)
    headers = getattr(transport, "headers", None)
    value = headers.get("authorization") if headers is not None else None
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        environ["HTTP_AUTHORIZATION"] = value


def principal_name(auth: Any) -> str | None:
    """The name a principal goes by: an access token's subject (else its client id), a
    mapping's ``subject``/``sub``/``name``, or a string itself."""
    if auth is None:
        return None
    if isinstance(auth, str):
        return auth or None
    for key in ("subject", "sub", "client_id", "name"):
        value = auth.get(key) if isinstance(auth, Mapping) else getattr(auth, key, None)
        if isinstance(value, str) and value:
            return value
    return None


def _remote_user(ctx: HandlerContext | None, environ: dict[str, Any]) -> None:
    name = principal_name(getattr(ctx, "auth", None))
    if name is not None:
        environ["REMOTE_USER"] = name
