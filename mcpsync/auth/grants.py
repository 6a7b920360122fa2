"""Getting a token for one MCP server: refresh when that can work, else authorize anew.

:class:`Grants` runs inside a server's flight (see :meth:`.servers.Servers.single_flight`):
discovery of the protected resource and of its authorization server, the choice of scopes
(what is always asked for, what was asked before, what the challenge names), and the
grant: the code flow (:mod:`.code_flow`), client credentials, or a JWT bearer (given, or
exchanged at an enterprise identity provider). The token is kept in the server's state and
saved to the storage.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from ..protocol.deadline import Deadline
from .challenge import Challenge
from .code_flow import CodeFlow
from .discovery import ResourceInfo, ServerMetadata, discover_resource, discover_server
from .errors import AuthorizationError, RegistrationError, TokenRequestError
from .fetch import Fetcher
from .registration import ClientInfo, preferred_auth_method
from .servers import Servers, ServerState
from .settings import Grant, OAuthSettings
from .token_endpoint import TokenEndpoint
from .tokens import Token

logger = logging.getLogger("mcpsync.auth")

#: RFC 7523's grant type: a JWT (a workload identity token) as the authorization grant.
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: The most scopes one authorization request asks for (step-ups add to them).
MAX_SCOPES: Final = 100
#: The header that carries the MCP revision; discovery sends the one the refused request
#: carried.
PROTOCOL_HEADER: Final = "MCP-Protocol-Version"


def _union(*groups: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(scope for group in groups for scope in group if scope))


class Grants:
    """The flows of one OAuth object. Its own state is fixed (settings, grant); what it
    learns goes into the :class:`~.servers.ServerState` of the server it works for."""

    def __init__(self, settings: OAuthSettings, grant: Grant, fetcher: Fetcher,
                 servers: Servers, tokens: TokenEndpoint) -> None:
        self._settings = settings
        self._grant = grant
        self._fetcher = fetcher
        self._servers = servers
        self._tokens = tokens
        self._code_flow = CodeFlow(settings, fetcher, tokens)

    def reauthorize(self, key: str, url: str, challenge: Challenge, status: int,
                    attempt: int, sent: str | None, version: str | None) -> None:
        """Answer a refusal of the token ``sent`` (``status``, ``challenge``): a refresh
        on the first 401 when the refresh token can be used with this server, else a new
        authorization. ``version`` is the MCP revision the refused request carried."""
        server = self._servers.get(key)
        headers = {PROTOCOL_HEADER: version} if version else None
        walk = self._fetcher.deadline(f"OAuth discovery for {key}")  # one, both documents
        info = discover_resource(self._fetcher, url, challenge.resource_metadata, headers, walk)
        token = server.token
        if (status == 401 and attempt == 1 and token is not None and token.refresh_token
                and sent == token.access_token and token.issuer == info.authorization_server):
            try:
                self.refresh(key, url, info, headers, walk)
                return
            except AuthorizationError as exc:
                logger.info("refreshing the token for %s failed (%s); authorizing anew",
                            key, exc)
        self._authorize(key, info, challenge, headers, walk)

    def refresh(self, key: str, url: str, info: ResourceInfo | None = None,
                headers: dict[str, str] | None = None, walk: Deadline | None = None) -> None:
        """The refresh token grant, for the server at ``key``; a refused refresh forgets
        the token (it is spent or revoked) before the error goes on."""
        server = self._servers.get(key)
        token = server.token
        if token is None or not token.refresh_token or token.issuer is None:
            raise AuthorizationError(f"no refresh token for {key}")
        if info is None:
            info = ResourceInfo(server.resource or url, token.issuer, None)
        metadata = self._metadata(server, info, headers, walk)
        client = server.clients.get(metadata.issuer)
        if client is None:
            raise RegistrationError(f"no registration with {metadata.issuer!r} to refresh with")
        data = {"grant_type": "refresh_token", "refresh_token": token.refresh_token,
                "resource": server.resource or info.resource}
        try:
            server.token = self._tokens.request(metadata, client, data, token)
        except TokenRequestError:
            server.token = None  # the refresh token is spent or revoked: authorize anew
            self._servers.save(key)
            raise
        self._servers.save(key)

    def _metadata(self, server: ServerState, info: ResourceInfo,
                  headers: dict[str, str] | None, walk: Deadline | None) -> ServerMetadata:
        cached = server.metadata
        if cached is not None and cached.issuer == info.authorization_server:
            return cached
        metadata = discover_server(self._fetcher, info.authorization_server,
                                   legacy=not info.from_metadata, headers=headers, deadline=walk)
        server.metadata = metadata
        return metadata

    def _authorize(self, key: str, info: ResourceInfo, challenge: Challenge,
                   headers: dict[str, str] | None, walk: Deadline | None) -> None:
        server = self._servers.get(key)
        metadata = self._metadata(server, info, headers, walk)
        if server.token is not None and server.token.issuer != metadata.issuer:
            server.token = None  # issued by another authorization server: useless here
        challenged = challenge.scope.split() if challenge.scope else []
        base = challenged or list(info.scopes_supported or ())
        scopes = _union(self._settings.scopes, server.requested, base)
        if len(scopes) > MAX_SCOPES:
            raise AuthorizationError(f"{len(scopes)} scopes for {key}, over the bound of "
                                     f"{MAX_SCOPES}: refusing to ask for them")
        kind = self._grant.kind
        if (kind == "authorization_code" and self._settings.offline_access
                and metadata.supports("scopes_supported", "offline_access")):
            scopes = _union(scopes, ["offline_access"])
        scope = " ".join(scopes) or None
        logger.info("authorizing with %s for %s (scope: %s)", metadata.issuer, info.resource,
                    scope or "none requested")
        if kind == "client_credentials":
            token = self._client_credentials_grant(metadata, info.resource, scope)
        elif kind in ("jwt_bearer", "enterprise"):
            token = self._jwt_bearer_grant(metadata, info.resource, scope)
        else:
            token = self._code_flow.grant(server, metadata, info.resource, scope)
        server.token = token
        server.resource = info.resource
        server.requested = scopes
        self._servers.save(key)

    def _client_credentials_grant(self, metadata: ServerMetadata, resource: str,
                                  scope: str | None) -> Token:
        settings = self._settings
        assert settings.client_id is not None
        method = settings.token_endpoint_auth_method or (
            "private_key_jwt" if self._grant.private_key_pem is not None
            else preferred_auth_method(metadata, True))
        client = ClientInfo(settings.client_id, settings.client_secret, method,
                            "pre-registered")
        data = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            data["scope"] = scope
        return self._tokens.request(metadata, client, data)

    def _jwt_bearer_grant(self, metadata: ServerMetadata, resource: str,
                          scope: str | None) -> Token:
        settings, idp, given = self._settings, self._grant.idp, self._grant.assertion
        assertion: str | None
        if idp is not None:
            assertion = idp.exchange(self._fetcher, metadata.issuer, resource, scope)
        else:
            assertion = given() if callable(given) else given
        data = {"grant_type": JWT_BEARER_GRANT, "assertion": str(assertion),
                "resource": resource}
        if scope:
            data["scope"] = scope
        if idp is not None and settings.client_id is not None:
            return self._tokens.request(metadata, ClientInfo(
                settings.client_id, settings.client_secret,
                settings.token_endpoint_auth_method), data)
        if settings.client_id is None:
            return self._tokens.request(metadata, None, data)
        return self._tokens.request(metadata, ClientInfo(settings.client_id, None, "none"),
                                    data)
