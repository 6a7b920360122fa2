"""The resource-server side of MCP authorization: ``server.wsgi_app(auth=ResourceServer(...))``.

A server verifies bearer tokens (:class:`TokenVerifier`; :class:`JwtVerifier` checks JWTs
against an authorization server's JWKS), publishes RFC 9728 Protected Resource Metadata,
challenges requests without a valid token, and hands the verified :class:`AccessToken`
to handlers as ``ctx.auth``. See docs/auth.md, "Protecting a server".
"""

from .introspection import IntrospectionVerifier
from .resource import ResourceServer
from .verify import AccessToken, InvalidTokenError, JwtVerifier, TokenVerifier

__all__ = ["AccessToken", "IntrospectionVerifier", "InvalidTokenError", "JwtVerifier",
           "ResourceServer", "TokenVerifier"]
