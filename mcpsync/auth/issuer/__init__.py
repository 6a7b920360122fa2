"""An OAuth 2.1 authorization server in the MCP profile, for a site's own users.

A Flask or Django site (or any WSGI app) issues the tokens its MCP endpoint accepts: the
user signs in with the site's own login, approves the client on a consent page, and the
client (a hosted assistant's connector, a CLI, mcpsync's ``OAuth``) gets tokens bound to
the MCP endpoint. Built on authlib (the ``auth`` extra). See docs/authorization-server.md.

The pieces: :class:`AuthorizationServer` (framework-neutral), a store
(:class:`SqlIssuerStore`, :class:`RedisIssuerStore`, or Django's models), the bindings
(:func:`with_issuer` for WSGI, ``mcpsync.auth.issuer.flask``, the Django app), and
:class:`UpstreamLogin` for signing users in through another identity provider.
"""

from .consent import ConsentView
from .documents import DocumentPolicy
from .server import AuthorizationServer, IssuerRequest, IssuerResponse, IssuerUser
from .sql import SqlIssuerStore
from .store import (
    ClientRecord,
    CodeRecord,
    GrantRecord,
    IssuerStore,
    KeyRecord,
    StoreFullError,
    TokenRecord,
)
from .upstream import UpstreamLogin, UpstreamProvider, with_upstream
from .wsgi import issuer_app, with_issuer

__all__ = [
    "AuthorizationServer",
    "ClientRecord",
    "CodeRecord",
    "ConsentView",
    "DocumentPolicy",
    "GrantRecord",
    "IssuerRequest",
    "IssuerResponse",
    "IssuerStore",
    "IssuerUser",
    "KeyRecord",
    "SqlIssuerStore",
    "StoreFullError",
    "TokenRecord",
    "UpstreamLogin",
    "UpstreamProvider",
    "issuer_app",
    "with_issuer",
    "with_upstream",
]
