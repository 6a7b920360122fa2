"""What an :class:`~mcpsync.auth.OAuth` object was told about itself: who the client is,
what it asks for and how long and how much it waits.

:class:`OAuthSettings` groups the constructor's arguments that the flows read, fixed once
the object is made, so that the parts that run the flows (:mod:`.grants`,
:mod:`.code_flow`) take one value instead of ten. :class:`Grant` is which grant the object
uses and the material it needs (a classmethod constructor of ``OAuth`` chooses it).
:class:`OAuthLimits` is public: the bounds a user may change, one keyword of ``OAuth``
(``limits=``) instead of four (docs/limits.md, "Authorization client").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .enterprise import EnterpriseIdP
from .fetch import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT
from .redirect import RedirectHandler, console_redirect_handler

#: Where the authorization server sends the browser back, unless told otherwise. A loopback
#: URI: RFC 8252 lets a native client use any port there; with the console handler the page
#: need not load, the user copies its URL.
DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1:33418/callback"

#: Authorizations (refresh, code flow or step-up) one request may trigger before it fails.
DEFAULT_MAX_REAUTHORIZATIONS: Final = 3
#: How long a thread waits for another thread's authorization of the same server (s).
DEFAULT_FLIGHT_TIMEOUT: Final = 600.0

GrantKind = Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"]


@dataclass(frozen=True)
class OAuthSettings:
    """The client's identity (pre-registered, a metadata document, or what Dynamic Client
    Registration sends) and what it asks for. Secrets are never shown in a ``repr``."""

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    client_metadata_url: str | None = None
    client_name: str = "mcpsync"
    client_metadata: Mapping[str, Any] = field(default_factory=dict)
    redirect_uri: str = DEFAULT_REDIRECT_URI
    redirect_handler: RedirectHandler = console_redirect_handler
    scopes: tuple[str, ...] = ()
    offline_access: bool = True


@dataclass(frozen=True)
class Grant:
    """The grant one OAuth object uses. ``private_key_pem`` and ``signing_algorithm``:
    ``private_key_jwt`` client authentication (client credentials); ``assertion``: the
    JWT-bearer grant's JWT, or a callable returning a current one; ``idp``: where the
    enterprise grant gets its ID-JAG."""

    kind: GrantKind = "authorization_code"
    private_key_pem: str | None = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    assertion: str | Callable[[], str] | None = field(default=None, repr=False)
    idp: EnterpriseIdP | None = None


@dataclass(frozen=True)
class OAuthLimits:
    """The bounds of one :class:`~mcpsync.auth.OAuth` object (docs/limits.md).

    ``fetch_timeout``: seconds for the whole of a fetch (connect, head, body); discovery
    (every well-known URL of both documents) shares one, and each token request (with
    its DPoP-nonce retry), registration and identity-provider exchange gets one of its
    own (a user's redirect may sit between them). ``max_response_bytes``: one metadata,
    registration, token or IdP answer. ``max_reauthorizations``: authorizations (refresh,
    code flow or step-up) one request may trigger before it fails. ``flight_timeout``:
    seconds a thread waits for another thread's authorization of the same server (a
    person may be typing).

    ``fetch_timeout`` and ``max_response_bytes`` are named as in
    :class:`~mcpsync.routes.RouteLimits`, the other bound of fetching a document over
    HTTP: a bare ``timeout`` beside ``flight_timeout`` would not say which wait it is.
    """

    fetch_timeout: float = DEFAULT_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_BYTES
    max_reauthorizations: int = DEFAULT_MAX_REAUTHORIZATIONS
    flight_timeout: float = DEFAULT_FLIGHT_TIMEOUT

