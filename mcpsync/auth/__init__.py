"""OAuth 2.1 for MCP clients: ``Client.http(url, auth=OAuth(...))``.

See ``docs/auth.md``. PyJWT (the ``auth`` extra) is needed only for ``private_key_jwt``
and DPoP (without it, DPoP is simply not offered); everything else uses ``requests`` and
the standard library.
"""

from .discovery import ResourceInfo, ServerMetadata, canonical_resource
from .errors import (
    AuthorizationError,
    AuthorizationResponseError,
    DiscoveryError,
    InsufficientScopeError,
    IssuerMismatchError,
    MissingDependencyError,
    PKCENotSupportedError,
    RegistrationError,
    ResourceMismatchError,
    TokenRequestError,
    UnauthorizedError,
)
from .oauth import OAuth
from .redirect import (
    Callback,
    FollowRedirects,
    LoopbackRedirect,
    RedirectHandler,
    console_redirect_handler,
)
from .registration import ClientInfo
from .server import (
    AccessToken,
    IntrospectionVerifier,
    InvalidTokenError,
    JwtVerifier,
    ResourceServer,
    TokenVerifier,
)
from .settings import OAuthLimits
from .tokens import FileTokenStorage, MemoryTokenStorage, Token, TokenStorage

__all__ = [
    "AccessToken",
    "AuthorizationError",
    "AuthorizationResponseError",
    "Callback",
    "ClientInfo",
    "DiscoveryError",
    "FileTokenStorage",
    "FollowRedirects",
    "InsufficientScopeError",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "IssuerMismatchError",
    "JwtVerifier",
    "LoopbackRedirect",
    "MemoryTokenStorage",
    "MissingDependencyError",
    "OAuth",
    "OAuthLimits",
    "PKCENotSupportedError",
    "RedirectHandler",
    "RegistrationError",
    "ResourceInfo",
    "ResourceMismatchError",
    "ResourceServer",
    "ServerMetadata",
    "Token",
    "TokenRequestError",
    "TokenStorage",
    "TokenVerifier",
    "UnauthorizedError",
    "canonical_resource",
    "console_redirect_handler",
]
