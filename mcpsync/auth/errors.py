"""The ``AuthorizationError`` family: every refusal of the OAuth client, each its own class.

They are :class:`~mcpsync.errors.TransportError` subclasses on purpose: a call that could
not be authorized failed *here*, before the server said anything about it, and the HTTP
transport hands a ``TransportError`` raised inside ``requests`` to the caller unchanged
(so ``client.call_tool`` raises the ``PKCENotSupportedError`` itself, not a wrapper).

Messages name URLs, issuers, scopes and OAuth error codes; never a token, a secret, an
authorization code or a PKCE verifier.
"""

from __future__ import annotations

from ..errors import MCPSyncError, TransportError


class AuthorizationError(TransportError):
    """The client could not obtain (or use) authorization for a protected MCP server."""


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


class InsufficientScopeError(AuthorizationError):
    """The server still answered 403 ``insufficient_scope`` after the bounded number of
    step-up authorizations (``OAuth(max_reauthorizations=...)``)."""


class MissingDependencyError(MCPSyncError, ImportError):
    """An optional dependency of :mod:`mcpsync.auth` (PyJWT with ``cryptography``, for
    ``private_key_jwt``) is not installed: ``pip install 'mcpsync[auth]'``."""
