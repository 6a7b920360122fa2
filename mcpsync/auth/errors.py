"""The ``AuthorizationError`` family: every refusal of the OAuth client, each its own class,
and the server's own refusals of a token (401, 403) as a client meets them.

They are :class:`~mcpsync.errors.TransportError` subclasses on purpose: a call that could
not be authorized failed *here*, before the server said anything about it, and the HTTP
transport hands a ``TransportError`` raised inside ``requests`` to the caller unchanged
(so ``client.call_tool`` raises the ``PKCENotSupportedError`` itself, not a wrapper).

:class:`UnauthorizedError` (401) and :class:`InsufficientScopeError` (403
``insufficient_scope``) are what the server answered a call, with no ``OAuth`` to recover
(a static ``Authorization`` header, or none): they are also the
:class:`~mcpsync.errors.InvalidRequestError` of the JSON-RPC body the server sent, so code
that caught that before keeps working. :func:`http_refusal` is the one table from an HTTP
status to one of them.

Messages name URLs, issuers, scopes and OAuth error codes; never a token, a secret, an
authorization code or a PKCE verifier.
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import InvalidRequestError, MCPSyncError, TransportError
from .challenge import parse


class AuthorizationError(TransportError):
    """The client could not obtain (or use) authorization for a protected MCP server."""


class _Refusal(InvalidRequestError):
    """What a refusal of a token carries, for the two classes below: ``status`` (401 or
    403; None off HTTP), ``www_authenticate`` (the raw header; None off HTTP) and
    ``scopes`` (those it names: the challenge's ``scope``, else ``data["scope"]`` of the
    JSON-RPC error, which is how a server refuses off HTTP)."""

    def __init__(self, message: str, *, status: int | None = None,
                 www_authenticate: str | None = None, scopes: list[str] | None = None,
                 code: int | None = None, data: Any = None) -> None:
        super().__init__(message, code=code, data=data)
        self.status = status
        self.www_authenticate = www_authenticate
        if scopes is None:
            said = data.get("scope") if isinstance(data, dict) else None
            scopes = said.split() if isinstance(said, str) else []
        self.scopes = list(scopes)


class UnauthorizedError(AuthorizationError, _Refusal):
    """The server answered 401: no token, or one it does not accept (expired, for another
    resource, garbage). ``www_authenticate`` is its challenge (``error="invalid_token"``,
    ``resource_metadata`` where to find its authorization server), ``scopes`` the scopes
    it names. With ``OAuth`` the client authorizes instead of raising this."""


class DiscoveryError(AuthorizationError):
    """Neither the protected resource metadata nor the authorization server metadata
    could be found or read (all well-known locations tried, each within its bounds)."""


class ResourceMismatchError(AuthorizationError):
    """The protected resource metadata names a ``resource`` that is not the server the
    client connected to (RFC 9728 §3.3): its authorization servers are not trusted."""


class IssuerMismatchError(AuthorizationError):
    """The authorization server metadata's ``issuer`` is not the issuer its well-known URL
    was built from (RFC 8414 §3.3): its endpoints are not used."""


class PKCENotSupportedError(AuthorizationError):
    """The authorization server does not advertise PKCE ``S256`` in
    ``code_challenge_methods_supported``; MCP clients must refuse to proceed."""


class RegistrationError(AuthorizationError):
    """No way to identify the client to the authorization server: no pre-registered
    credentials, no Client ID Metadata Document support, and Dynamic Client Registration
    absent or refused."""


class AuthorizationResponseError(AuthorizationError):
    """The authorization response (the redirect back) was refused: an ``error`` from the
    authorization server, a ``state`` mismatch, a missing code, or an RFC 9207 ``iss``
    that is missing (when advertised) or not the recorded issuer."""


class TokenRequestError(AuthorizationError):
    """The token endpoint refused a grant (``error`` holds its OAuth error code, e.g.
    ``invalid_grant``) or answered with something that is not a token."""

    def __init__(self, message: str, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error


class InsufficientScopeError(AuthorizationError, _Refusal):
    """The server answered 403 ``insufficient_scope``: the token lacks a scope the call
    needs. ``scopes`` are those its ``WWW-Authenticate`` challenge names (what a token
    must hold to be let through), ``www_authenticate`` the raw header. With ``OAuth`` it
    is raised only after the bounded number of step-up authorizations
    (``OAuthLimits(max_reauthorizations=...)``)."""


#: The HTTP statuses that are authorization refusals, and their class: ONE table. A 403
#: is :class:`InsufficientScopeError` only when its challenge says ``insufficient_scope``
#: (another 403, e.g. a refused ``Origin``, is not about the token).
REFUSALS: Final[dict[int, type[UnauthorizedError | InsufficientScopeError]]] = {
    401: UnauthorizedError,
    403: InsufficientScopeError,
}


def http_refusal(status: int, www_authenticate: str | None, message: str, *,
                 code: int | None = None,
                 data: Any = None) -> UnauthorizedError | InsufficientScopeError | None:
    """The exception for an HTTP refusal of a call, by :data:`REFUSALS`; None when the
    status is not an authorization refusal. ``message``, ``code`` and ``data`` are the
    JSON-RPC error of the body (its ``scope``, when the challenge has none)."""
    klass = REFUSALS.get(status)
    if klass is None:
        return None
    challenge = parse(www_authenticate)
    if klass is InsufficientScopeError and not challenge.insufficient_scope and not (
            isinstance(data, dict) and data.get("error") == "insufficient_scope"):
        return None
    scope = challenge.scope
    if scope is None and isinstance(data, dict) and isinstance(data.get("scope"), str):
        scope = data["scope"]
    scopes = (scope or "").split()
    if scopes:
        message += f" (the server asks for the scope(s) {' '.join(scopes)})"
    return klass(message, status=status, www_authenticate=www_authenticate, scopes=scopes,
                 code=code, data=data)


class MissingDependencyError(MCPSyncError, ImportError):
    """An optional dependency of :mod:`mcpsync.auth` (PyJWT with ``cryptography``, for
    ``private_key_jwt``) is not installed: ``pip install 'mcpsync[auth]'``."""
