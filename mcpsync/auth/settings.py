"""What an :class:`~mcpsync.auth.OAuth` object was told about itself: who the client is
and what it asks for.

:class:`OAuthSettings` groups the constructor's arguments that the flows read, fixed once
the object is made, so that the parts that run the flows (:mod:`.grants`,
:mod:`.code_flow`) take one value instead of ten. :class:`Grant` is which grant the object
uses and the material it needs (a classmethod constructor of ``OAuth`` chooses it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .enterprise import EnterpriseIdP
from .redirect import RedirectHandler, console_redirect_handler

#: Where the authorization server sends the browser back, unless told otherwise. A loopback
#: URI: RFC 8252 lets a native client use any port there; with the console handler the page
#: need not load, the user copies its URL.
DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1:33418/callback"

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
