"""``OAuth``: a ``requests`` auth object that authorizes an MCP client on demand.

Use it as ``Client.http(url, auth=OAuth(...))`` or with plain ``requests``
(``requests.get(url, auth=oauth)``). Each request carries the current access token; when
the server answers 401 (or 403 ``insufficient_scope``) the response hook runs the flow —
discovery, registration, authorization code with PKCE (or client credentials), token —
and sends the request again, at most ``max_reauthorizations`` times per request.

Why a response hook and not a wrapper around the transport: the hook is how ``requests``
itself retries an HTTP Digest challenge, so the same object works for the MCP transport,
its SSE GET stream, the 2024-11-05 transport and any ``requests`` code, with nothing in
mcpsync's transports knowing about OAuth beyond passing it to the session.

Threads: one authorization (or refresh) per server at a time. The first thread to need it
runs it *without holding any lock* (the redirect handler and the token storage are user
code); the others wait on its completion (at most ``flight_timeout`` seconds), then send
again with whatever token it obtained, or fail with its error.

This module is the hook. ``OAuth`` composes parts that own their state and never see it:
:class:`~.servers.Servers` (what is known per server, and the one flight per server),
:class:`~.grants.Grants` (discovery, scopes and the grants; the browser flow is
:class:`~.code_flow.CodeFlow`) and :class:`~.token_endpoint.TokenEndpoint` (token
requests, client authentication, the DPoP key).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any

import requests
from requests.auth import AuthBase

from .assertion import jwt_library
from .discovery import origin_of
from .enterprise import EnterpriseIdP
from .errors import AuthorizationError, InsufficientScopeError, UnauthorizedError
from .fetch import Fetcher
from .grants import JWT_BEARER_GRANT, MAX_SCOPES, PROTOCOL_HEADER, Grants
from .redirect import RedirectHandler, console_redirect_handler
from .refusals import challenge_of, drain, stale_connection, token_sent
from .servers import MAX_SERVERS, Servers
from .settings import (
    DEFAULT_FLIGHT_TIMEOUT,
    DEFAULT_MAX_REAUTHORIZATIONS,
    DEFAULT_REDIRECT_URI,
    Grant,
    OAuthLimits,
    OAuthSettings,
)
from .token_endpoint import TokenEndpoint
from .tokens import MemoryTokenStorage, Token, TokenStorage

logger = logging.getLogger("mcpsync.auth")

__all__ = ["DEFAULT_FLIGHT_TIMEOUT", "DEFAULT_MAX_REAUTHORIZATIONS", "DEFAULT_REDIRECT_URI",
           "JWT_BEARER_GRANT", "MAX_SCOPES", "MAX_SERVERS", "OAuth", "OAuthLimits"]


class OAuth(AuthBase):
    """OAuth 2.1 for a protected MCP server, as a ``requests`` auth object.

    Interactive (authorization code + PKCE): give ``redirect_handler`` (default:
    :func:`~mcpsync.auth.console_redirect_handler`) and optionally ``redirect_uri``; the
    client is identified by ``client_id``/``client_secret`` when pre-registered, else by
    ``client_metadata_url`` (a Client ID Metadata Document) when the authorization server
    supports it, else by Dynamic Client Registration. Machine-to-machine: see
    :meth:`client_credentials`.

    ``scopes`` are always asked for, on top of what the server's challenge (or, without
    one, its ``scopes_supported``) names; ``offline_access`` is added when the
    authorization server lists it (for a refresh token) unless ``offline_access=False``.
    ``storage`` keeps tokens and registrations (default: memory; see
    :class:`~mcpsync.auth.FileTokenStorage`). ``limits``
    (:class:`~mcpsync.auth.OAuthLimits`): the fetch timeout and answer size, the
    re-authorizations one request may trigger, the wait for another thread's flow.
    ``dpop``: ``None`` (default) uses DPoP-bound tokens
    when the authorization server offers ES256 and PyJWT is installed; ``True`` insists on
    PyJWT; ``False`` never uses DPoP.
    """

    def __init__(
        self,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcpsync",
        client_metadata: dict[str, Any] | None = None,
        redirect_uri: str = DEFAULT_REDIRECT_URI,
        redirect_handler: RedirectHandler | None = None,
        scopes: Sequence[str] = (),
        offline_access: bool = True,
        storage: TokenStorage | None = None,
        dpop: bool | None = None,
        limits: OAuthLimits | None = None,
    ) -> None:
        limits = limits or OAuthLimits()
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        settings = OAuthSettings(
            client_id=client_id, client_secret=client_secret,
            token_endpoint_auth_method=token_endpoint_auth_method,
            client_metadata_url=client_metadata_url, client_name=client_name,
            client_metadata=dict(client_metadata or {}), redirect_uri=redirect_uri,
            redirect_handler=(redirect_handler if redirect_handler is not None
                              else console_redirect_handler),
            scopes=tuple(scopes), offline_access=offline_access)
        self._settings = settings
        #: The bounds it was given (``max_reauthorizations`` below may be changed).
        self.limits = limits
        self.max_reauthorizations = limits.max_reauthorizations
        self._fetcher = Fetcher(limits.fetch_timeout, limits.max_response_bytes)
        self._servers = Servers(storage if storage is not None else MemoryTokenStorage(),
                                limits.flight_timeout)
        if dpop is True:
            jwt_library()  # fail now, not at the first token request, without the extra
        self._dpop = dpop
        self._use(Grant())

    def _use(self, grant: Grant) -> None:
        """Run ``grant`` (the authorization code grant unless a classmethod constructor
        chose another, right after ``__init__``, before any request)."""
        self._grant = grant
        self._tokens = TokenEndpoint(self._fetcher, dpop=self._dpop,
                                     private_key_pem=grant.private_key_pem,
                                     signing_algorithm=grant.signing_algorithm)
        self._grants = Grants(self._settings, grant, self._fetcher, self._servers,
                              self._tokens)

    @classmethod
    def client_credentials(
        cls,
        client_id: str,
        *,
        client_secret: str | None = None,
        private_key_pem: str | None = None,
        signing_algorithm: str = "RS256",
        scopes: Sequence[str] = (),
        storage: TokenStorage | None = None,
        token_endpoint_auth_method: str | None = None,
        limits: OAuthLimits | None = None,
    ) -> OAuth:
        """The client-credentials grant (the MCP ``oauth-client-credentials`` extension):
        no user, no browser. Authenticates with ``client_secret`` (basic or post, as the
        server allows) or with ``private_key_pem`` as ``private_key_jwt`` (needs the
        ``auth`` extra). ``limits``: as for ``OAuth``."""
        if (client_secret is None) == (private_key_pem is None):
            raise ValueError("give exactly one of client_secret and private_key_pem")
        oauth = cls(client_id=client_id, client_secret=client_secret, scopes=scopes,
                    storage=storage, token_endpoint_auth_method=token_endpoint_auth_method,
                    offline_access=False, limits=limits)
        if private_key_pem is not None:
            jwt_library()  # fail now, not at the first 401, when the auth extra is missing
        oauth._use(Grant("client_credentials", private_key_pem=private_key_pem,
                         signing_algorithm=signing_algorithm))
        return oauth

    @classmethod
    def jwt_bearer(
        cls,
        assertion: str | Callable[[], str],
        *,
        client_id: str | None = None,
        scopes: Sequence[str] = (),
        storage: TokenStorage | None = None,
        limits: OAuthLimits | None = None,
    ) -> OAuth:
        """The RFC 7523 JWT-bearer grant (workload identity federation, SEP-1933): the
        workload's identity token (from its platform) is the grant. ``assertion`` is the
        JWT, or a callable returning a current one (platform tokens rotate; it is called
        for each token request). A refusal (``invalid_grant``, ``invalid_scope``,
        ``unauthorized_client``) fails the call: no retry, no other grant. ``limits``: as
        for ``OAuth``."""
        oauth = cls(client_id=client_id, scopes=scopes, storage=storage, offline_access=False,
                    limits=limits)
        oauth._use(Grant("jwt_bearer", assertion=assertion))
        return oauth

    @classmethod
    def enterprise(
        cls,
        *,
        id_token: str | Callable[[], str],
        idp_token_endpoint: str,
        idp_client_id: str,
        client_id: str,
        client_secret: str | None = None,
        idp_client_secret: str | None = None,
        scopes: Sequence[str] = (),
        storage: TokenStorage | None = None,
        limits: OAuthLimits | None = None,
    ) -> OAuth:
        """Enterprise-managed authorization (SEP-990): the user's ``id_token`` from the
        enterprise identity provider is exchanged there (RFC 8693, as ``idp_client_id``)
        for an ID-JAG, which the MCP server's authorization server takes as a JWT-bearer
        grant from ``client_id``/``client_secret``. No browser, no registration.
        ``limits``: as for ``OAuth``."""
        oauth = cls(client_id=client_id, client_secret=client_secret, scopes=scopes,
                    storage=storage, offline_access=False, limits=limits)
        oauth._use(Grant("enterprise", idp=EnterpriseIdP(
            idp_token_endpoint, idp_client_id, id_token, idp_client_secret)))
        return oauth

    # -- what it was given (read-only) --------------------------------------------------

    @property
    def client_id(self) -> str | None:
        return self._settings.client_id

    @property
    def token_endpoint_auth_method(self) -> str | None:
        return self._settings.token_endpoint_auth_method

    @property
    def client_metadata_url(self) -> str | None:
        return self._settings.client_metadata_url

    @property
    def client_name(self) -> str:
        return self._settings.client_name

    @property
    def client_metadata(self) -> dict[str, Any]:
        """A copy of the extra registration metadata."""
        return dict(self._settings.client_metadata)

    @property
    def redirect_uri(self) -> str:
        return self._settings.redirect_uri

    @property
    def redirect_handler(self) -> RedirectHandler:
        return self._settings.redirect_handler

    @property
    def scopes(self) -> list[str]:
        """A copy of the scopes always asked for."""
        return list(self._settings.scopes)

    @property
    def offline_access(self) -> bool:
        return self._settings.offline_access

    @property
    def storage(self) -> TokenStorage:
        return self._servers.storage

    @property
    def flight_timeout(self) -> float:
        return self._servers.flight_timeout

    @property
    def dpop(self) -> bool | None:
        return self._dpop

    def __repr__(self) -> str:
        return (f"OAuth(grant={self._grant.kind!r}, client_id={self.client_id!r}, "
                f"redirect_uri={self.redirect_uri!r})")

    # -- requests hooks ------------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        key = origin_of(str(request.url))
        server = self._servers.get(key)
        token = server.token
        if token is not None and token.expired() and token.refresh_token:
            try:
                self._servers.single_flight(key, token.access_token,
                                            lambda: self._grants.refresh(key, str(request.url)))
            except AuthorizationError as exc:
                logger.info("refreshing the token for %s failed: %s", key, exc)
            token = server.token
        self._present(request, token)
        request.register_hook("response", self._on_response)  # type: ignore[no-untyped-call]
        return request

    def _present(self, request: requests.PreparedRequest, token: Token | None) -> None:
        """Put ``token`` on ``request``: ``Bearer``, or ``DPoP`` with a fresh proof."""
        if token is None:
            return
        if token.token_type.lower() == "dpop" and self._tokens.dpop_key is not None:
            request.headers["Authorization"] = f"DPoP {token.access_token}"
            request.headers["DPoP"] = self._tokens.dpop_key.proof(
                str(request.method or "GET"), str(request.url), token.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {token.access_token}"

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        attempts = 0
        while True:
            nonce = response.headers.get("DPoP-Nonce")
            if self._tokens.dpop_key is not None and nonce:
                # RFC 9449 §8.2: any answer may carry the nonce for the next proofs.
                self._tokens.dpop_key.remember_nonce(str(response.request.url), nonce)
            challenge = challenge_of(response)
            if challenge is None:
                return response
            prepared = response.request
            url = str(prepared.url)
            key = origin_of(url)
            if (challenge.error == "use_dpop_nonce" and self._tokens.dpop_key is not None and nonce
                    and attempts < self.max_reauthorizations):
                # RFC 9449 §9: the same token again, with a proof carrying the nonce.
                attempts += 1
                drain(response)
                response = self._resend(response, self._servers.get(key).token, kwargs)
                continue
            if attempts >= self.max_reauthorizations:
                response.close()
                if challenge.insufficient_scope:
                    raise InsufficientScopeError(
                        f"{url} still answers 403 insufficient_scope (needs "
                        f"{challenge.scope or 'an unnamed scope'}) after {attempts} "
                        f"authorizations", status=403,
                        www_authenticate=response.headers.get("WWW-Authenticate"),
                        scopes=(challenge.scope or "").split())
                refused = (f"{url} still refuses the access token (HTTP "
                           f"{response.status_code}) after {attempts} authorizations")
                if response.status_code == 401:  # what a static token's 401 raises too
                    raise UnauthorizedError(refused, status=401, www_authenticate=(
                        response.headers.get("WWW-Authenticate")))
                raise AuthorizationError(refused)
            attempts += 1
            sent = token_sent(prepared)
            version = prepared.headers.get(PROTOCOL_HEADER)
            drain(response)
            self._servers.single_flight(key, sent, functools.partial(
                self._grants.reauthorize, key, url, challenge, response.status_code, attempts, sent,
                str(version) if version else None))
            response = self._resend(response, self._servers.get(key).token, kwargs)

    def _resend(self, response: requests.Response, token: Token | None,
                kwargs: dict[str, Any]) -> requests.Response:
        """The refused request again, with ``token`` (and a fresh DPoP proof)."""
        retry = response.request.copy()
        retry.headers.pop("DPoP", None)
        self._present(retry, token)
        try:
            new: requests.Response = response.connection.send(retry, **kwargs)
        except requests.ConnectionError as exc:
            if not stale_connection(exc):
                raise
            # The authorization took longer than the server keeps an idle connection
            # (Node: 5 s), so the pooled one was closed under us before anything was sent
            # back: once more, on a new connection.
            self._present(retry, token)  # a fresh DPoP proof (a new jti)
            new = response.connection.send(retry, **kwargs)
        new.history.append(response)
        new.request = retry
        return new

    # -- for applications ----------------------------------------------------------------

    def token_for(self, url: str) -> Token | None:
        """The current token for the server at ``url`` (``None`` before authorization).
        Its ``repr`` shows no secret; ``access_token`` is the bearer value itself."""
        return self._servers.get(origin_of(url)).token
