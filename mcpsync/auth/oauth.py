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
"""

from __future__ import annotations

import base64
import functools
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote, urlencode

import requests
from requests.auth import AuthBase

from ..protocol.deadline import Deadline
from .assertion import ASSERTION_TYPE, client_assertion, jwt_library
from .challenge import Challenge, parse
from .discovery import (
    ResourceInfo,
    ServerMetadata,
    discover_resource,
    discover_server,
    origin_of,
)
from .dpop import ALGORITHM as DPOP_ALGORITHM
from .dpop import DPoPKey
from .dpop import available as dpop_available
from .enterprise import EnterpriseIdP
from .errors import (
    AuthorizationError,
    AuthorizationResponseError,
    InsufficientScopeError,
    PKCENotSupportedError,
    RegistrationError,
    TokenRequestError,
    UnauthorizedError,
)
from .fetch import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, FETCH_ERRORS, Fetcher
from .pkce import PKCE, new_state
from .redirect import RedirectHandler, console_redirect_handler, parse_callback
from .registration import (
    ClientInfo,
    application_type,
    preferred_auth_method,
    register_dynamically,
)
from .tokens import MemoryTokenStorage, Token, TokenStorage

logger = logging.getLogger("mcpsync.auth")

#: Where the authorization server sends the browser back, unless told otherwise. A loopback
#: URI: RFC 8252 lets a native client use any port there; with the console handler the page
#: need not load, the user copies its URL.
DEFAULT_REDIRECT_URI: Final = "http://127.0.0.1:33418/callback"
#: Authorizations (refresh, code flow or step-up) one request may trigger before it fails.
DEFAULT_MAX_REAUTHORIZATIONS: Final = 3
#: How long a thread waits for another thread's authorization of the same server (s).
DEFAULT_FLIGHT_TIMEOUT: Final = 600.0
#: RFC 7523's grant type: a JWT (a workload identity token) as the authorization grant.
JWT_BEARER_GRANT: Final = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: Servers (origins) one OAuth object keeps in memory; the least recently added go first
#: (their records stay in the storage and are loaded again when needed).
MAX_SERVERS: Final = 1024
#: The most scopes one authorization request asks for (step-ups add to them).
MAX_SCOPES: Final = 100
#: How much of a refused response's body is read before it is dropped (bytes).
_DRAIN_BYTES: Final = 64 * 1024
_PROTOCOL_HEADER: Final = "MCP-Protocol-Version"


@dataclass
class _Server:
    """What the client knows about one MCP server (by origin). Mutated only by the thread
    running that server's flight; other threads only read ``token`` (one reference)."""

    token: Token | None = None
    resource: str | None = None
    clients: dict[str, ClientInfo] = field(default_factory=dict)
    requested: list[str] = field(default_factory=list)
    metadata: ServerMetadata | None = None

    def to_record(self) -> dict[str, Any]:
        # A DPoP-bound token is useless without the in-memory key: it is not stored.
        keep = self.token is not None and self.token.token_type.lower() != "dpop"
        return {"token": self.token.to_record() if self.token and keep else None,
                "resource": self.resource, "requested": list(self.requested),
                "clients": {issuer: c.to_record() for issuer, c in self.clients.items()}}

    @classmethod
    def from_record(cls, record: dict[str, Any] | None) -> _Server:
        if not isinstance(record, dict):
            return cls()
        clients: dict[str, ClientInfo] = {}
        raw_clients = record.get("clients")
        if isinstance(raw_clients, dict):
            for issuer, raw in raw_clients.items():
                info = ClientInfo.from_record(raw)
                if info is not None:
                    clients[str(issuer)] = info
        requested = record.get("requested")
        resource = record.get("resource")
        return cls(Token.from_record(record.get("token")),
                   resource if isinstance(resource, str) else None, clients,
                   [s for s in requested if isinstance(s, str)]
                   if isinstance(requested, list) else [])


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None


def _bearer_of(request: requests.PreparedRequest) -> str | None:
    value = request.headers.get("Authorization")
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if value and value[:7].lower() == "bearer ":
        return value[7:]
    if value and value[:5].lower() == "dpop ":
        return value[5:]
    return None


def _stale_connection(exc: requests.ConnectionError) -> bool:
    """True when the server dropped a kept-alive connection without answering (reset or
    closed at once), as opposed to being unreachable or timing out."""
    text = repr(exc)
    return any(sign in text for sign in ("Connection aborted", "RemoteDisconnected",
                                         "ConnectionResetError", "BrokenPipeError"))


def _union(*groups: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(scope for group in groups for scope in group if scope))


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
    :class:`~mcpsync.auth.FileTokenStorage`). ``timeout`` (all of a fetch: connect, head,
    body) ends discovery (every well-known URL of both documents together), each token
    request (with its DPoP-nonce retry), registration and an IdP exchange, each on its
    own (a user's redirect may sit between them); ``max_response_bytes`` bounds each
    answer. ``dpop``: ``None`` (default) uses DPoP-bound tokens
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
        max_reauthorizations: int = DEFAULT_MAX_REAUTHORIZATIONS,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_BYTES,
        flight_timeout: float = DEFAULT_FLIGHT_TIMEOUT,
        dpop: bool | None = None,
    ) -> None:
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        self.client_id = client_id
        self._client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.client_metadata = dict(client_metadata or {})
        self.redirect_uri = redirect_uri
        self.redirect_handler: RedirectHandler = (redirect_handler if redirect_handler
                                                  is not None else console_redirect_handler)
        self.scopes = list(scopes)
        self.offline_access = offline_access
        self.storage: TokenStorage = storage if storage is not None else MemoryTokenStorage()
        self.max_reauthorizations = max_reauthorizations
        self.flight_timeout = flight_timeout
        self._fetcher = Fetcher(timeout, max_response_bytes)
        self._grant = "authorization_code"
        self._private_key_pem: str | None = None
        self._signing_algorithm = "RS256"
        self._assertion: str | Callable[[], str] | None = None
        self._idp: EnterpriseIdP | None = None
        self.dpop = dpop
        self._dpop_key: DPoPKey | None = None
        if dpop is True:
            jwt_library()  # fail now, not at the first token request, without the extra
        self._lock = threading.Lock()
        self._servers: dict[str, _Server] = {}
        self._flights: dict[str, _Flight] = {}

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
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_BYTES,
        max_reauthorizations: int = DEFAULT_MAX_REAUTHORIZATIONS,
    ) -> OAuth:
        """The client-credentials grant (the MCP ``oauth-client-credentials`` extension):
        no user, no browser. Authenticates with ``client_secret`` (basic or post, as the
        server allows) or with ``private_key_pem`` as ``private_key_jwt`` (needs the
        ``auth`` extra)."""
        if (client_secret is None) == (private_key_pem is None):
            raise ValueError("give exactly one of client_secret and private_key_pem")
        oauth = cls(client_id=client_id, client_secret=client_secret, scopes=scopes,
                    storage=storage, token_endpoint_auth_method=token_endpoint_auth_method,
                    offline_access=False, timeout=timeout,
                    max_response_bytes=max_response_bytes,
                    max_reauthorizations=max_reauthorizations)
        if private_key_pem is not None:
            jwt_library()  # fail now, not at the first 401, when the auth extra is missing
        oauth._grant = "client_credentials"
        oauth._private_key_pem = private_key_pem
        oauth._signing_algorithm = signing_algorithm
        return oauth

    @classmethod
    def jwt_bearer(
        cls,
        assertion: str | Callable[[], str],
        *,
        client_id: str | None = None,
        scopes: Sequence[str] = (),
        storage: TokenStorage | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_BYTES,
    ) -> OAuth:
        """The RFC 7523 JWT-bearer grant (workload identity federation, SEP-1933): the
        workload's identity token (from its platform) is the grant. ``assertion`` is the
        JWT, or a callable returning a current one (platform tokens rotate; it is called
        for each token request). A refusal (``invalid_grant``, ``invalid_scope``,
        ``unauthorized_client``) fails the call: no retry, no other grant."""
        oauth = cls(client_id=client_id, scopes=scopes, storage=storage, offline_access=False,
                    timeout=timeout, max_response_bytes=max_response_bytes)
        oauth._grant = "jwt_bearer"
        oauth._assertion = assertion
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
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = DEFAULT_MAX_BYTES,
    ) -> OAuth:
        """Enterprise-managed authorization (SEP-990): the user's ``id_token`` from the
        enterprise identity provider is exchanged there (RFC 8693, as ``idp_client_id``)
        for an ID-JAG, which the MCP server's authorization server takes as a JWT-bearer
        grant from ``client_id``/``client_secret``. No browser, no registration."""
        oauth = cls(client_id=client_id, client_secret=client_secret, scopes=scopes,
                    storage=storage, offline_access=False, timeout=timeout,
                    max_response_bytes=max_response_bytes)
        oauth._grant = "enterprise"
        oauth._idp = EnterpriseIdP(idp_token_endpoint, idp_client_id, id_token,
                                   idp_client_secret)
        return oauth

    def __repr__(self) -> str:
        return (f"OAuth(grant={self._grant!r}, client_id={self.client_id!r}, "
                f"redirect_uri={self.redirect_uri!r})")

    # -- requests hooks ------------------------------------------------------------------

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        key = origin_of(str(request.url))
        server = self._server(key)
        token = server.token
        if token is not None and token.expired() and token.refresh_token:
            try:
                self._single_flight(key, token.access_token,
                                    lambda: self._refresh(key, str(request.url)))
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
        if token.token_type.lower() == "dpop" and self._dpop_key is not None:
            request.headers["Authorization"] = f"DPoP {token.access_token}"
            request.headers["DPoP"] = self._dpop_key.proof(
                str(request.method or "GET"), str(request.url), token.access_token)
        else:
            request.headers["Authorization"] = f"Bearer {token.access_token}"

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        attempts = 0
        while True:
            nonce = response.headers.get("DPoP-Nonce")
            if self._dpop_key is not None and nonce:
                # RFC 9449 §8.2: any answer may carry the nonce for the next proofs.
                self._dpop_key.remember_nonce(str(response.request.url), nonce)
            challenge = self._challenge_of(response)
            if challenge is None:
                return response
            prepared = response.request
            url = str(prepared.url)
            key = origin_of(url)
            if (challenge.error == "use_dpop_nonce" and self._dpop_key is not None and nonce
                    and attempts < self.max_reauthorizations):
                # RFC 9449 §9: the same token again, with a proof carrying the nonce.
                attempts += 1
                self._drain(response)
                response = self._resend(response, self._server(key).token, kwargs)
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
            sent = _bearer_of(prepared)
            version = prepared.headers.get(_PROTOCOL_HEADER)
            self._drain(response)
            self._single_flight(key, sent, functools.partial(
                self._reauthorize, key, url, challenge, response.status_code, attempts, sent,
                str(version) if version else None))
            response = self._resend(response, self._server(key).token, kwargs)

    def _resend(self, response: requests.Response, token: Token | None,
                kwargs: dict[str, Any]) -> requests.Response:
        """The refused request again, with ``token`` (and a fresh DPoP proof)."""
        retry = response.request.copy()
        retry.headers.pop("DPoP", None)
        self._present(retry, token)
        try:
            new: requests.Response = response.connection.send(retry, **kwargs)
        except requests.ConnectionError as exc:
            if not _stale_connection(exc):
                raise
            # The authorization took longer than the server keeps an idle connection
            # (Node: 5 s), so the pooled one was closed under us before anything was sent
            # back: once more, on a new connection.
            self._present(retry, token)  # a fresh DPoP proof (a new jti)
            new = response.connection.send(retry, **kwargs)
        new.history.append(response)
        new.request = retry
        return new

    @staticmethod
    def _challenge_of(response: requests.Response) -> Challenge | None:
        header = response.headers.get("WWW-Authenticate")
        if response.status_code == 401:
            if header and "bearer" not in header.lower() and "dpop" not in header.lower():
                return None  # another scheme's challenge (a proxy's Basic): not ours
            return parse(header)
        if response.status_code == 403:
            challenge = parse(header)
            return challenge if challenge.insufficient_scope else None
        return None

    @staticmethod
    def _drain(response: requests.Response) -> None:
        try:
            if response.raw is not None:
                response.raw.read(_DRAIN_BYTES, decode_content=False)
        except FETCH_ERRORS:
            pass
        response.close()

    # -- single flight -------------------------------------------------------------------

    def _server(self, key: str) -> _Server:
        with self._lock:
            server = self._servers.get(key)
        if server is not None:
            return server
        loaded = _Server.from_record(self.storage.load(key))  # user code: outside the lock
        with self._lock:
            server = self._servers.setdefault(key, loaded)
            while len(self._servers) > MAX_SERVERS:
                oldest = next(k for k in self._servers if k not in self._flights or k == key)
                if oldest == key:
                    break
                del self._servers[oldest]
            return server

    def _save(self, key: str) -> None:
        self.storage.save(key, self._server(key).to_record())

    def _single_flight(self, key: str, stale: str | None, work: Callable[[], None]) -> None:
        """Run ``work`` for ``key`` unless another thread already replaced the ``stale``
        token or is running it now (then wait for that one's outcome)."""
        server = self._server(key)
        with self._lock:
            current = server.token.access_token if server.token else None
            if current is not None and current != stale:
                return  # someone else already authorized since this request was sent
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
        if not leader:
            if not flight.done.wait(self.flight_timeout):
                raise AuthorizationError(f"gave up waiting {self.flight_timeout} s for "
                                         f"another thread's authorization of {key}")
            if flight.error is not None:
                error = flight.error
                raise type(error)(str(error)) if isinstance(error, AuthorizationError) else (
                    AuthorizationError(f"the authorization of {key} failed: {error}"))
            return
        try:
            work()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self._flights.pop(key, None)
            flight.done.set()

    # -- the flows -----------------------------------------------------------------------

    def _reauthorize(self, key: str, url: str, challenge: Challenge, status: int,
                     attempt: int, sent: str | None, version: str | None) -> None:
        server = self._server(key)
        headers = {_PROTOCOL_HEADER: version} if version else None
        walk = self._fetcher.deadline(f"OAuth discovery for {key}")  # one, both documents
        info = discover_resource(self._fetcher, url, challenge.resource_metadata, headers, walk)
        token = server.token
        if (status == 401 and attempt == 1 and token is not None and token.refresh_token
                and sent == token.access_token and token.issuer == info.authorization_server):
            try:
                self._refresh(key, url, info, headers, walk)
                return
            except AuthorizationError as exc:
                logger.info("refreshing the token for %s failed (%s); authorizing anew",
                            key, exc)
        self._authorize(key, info, challenge, headers, walk)

    def _metadata(self, server: _Server, info: ResourceInfo, headers: dict[str, str] | None,
                  walk: Deadline | None) -> ServerMetadata:
        cached = server.metadata
        if cached is not None and cached.issuer == info.authorization_server:
            return cached
        metadata = discover_server(self._fetcher, info.authorization_server,
                                   legacy=not info.from_metadata, headers=headers, deadline=walk)
        server.metadata = metadata
        return metadata

    def _authorize(self, key: str, info: ResourceInfo, challenge: Challenge,
                   headers: dict[str, str] | None, walk: Deadline | None) -> None:
        server = self._server(key)
        metadata = self._metadata(server, info, headers, walk)
        if server.token is not None and server.token.issuer != metadata.issuer:
            server.token = None  # issued by another authorization server: useless here
        challenged = challenge.scope.split() if challenge.scope else []
        base = challenged or list(info.scopes_supported or ())
        scopes = _union(self.scopes, server.requested, base)
        if len(scopes) > MAX_SCOPES:
            raise AuthorizationError(f"{len(scopes)} scopes for {key}, over the bound of "
                                     f"{MAX_SCOPES}: refusing to ask for them")
        if (self._grant == "authorization_code" and self.offline_access
                and metadata.supports("scopes_supported", "offline_access")):
            scopes = _union(scopes, ["offline_access"])
        scope = " ".join(scopes) or None
        logger.info("authorizing with %s for %s (scope: %s)", metadata.issuer, info.resource,
                    scope or "none requested")
        if self._grant == "client_credentials":
            token = self._client_credentials_grant(metadata, info.resource, scope)
        elif self._grant in ("jwt_bearer", "enterprise"):
            token = self._jwt_bearer_grant(metadata, info.resource, scope)
        else:
            token = self._code_grant(server, metadata, info.resource, scope)
        server.token = token
        server.resource = info.resource
        server.requested = scopes
        self._save(key)

    def _code_grant(self, server: _Server, metadata: ServerMetadata, resource: str,
                    scope: str | None) -> Token:
        if metadata.from_metadata and not metadata.supports("code_challenge_methods_supported",
                                                            "S256"):
            raise PKCENotSupportedError(
                f"the authorization server {metadata.issuer!r} does not advertise PKCE S256 "
                f"(code_challenge_methods_supported: "
                f"{metadata.raw.get('code_challenge_methods_supported')!r}); refusing to "
                f"authorize with it")
        if not metadata.authorization_endpoint:
            raise AuthorizationError(f"the authorization server {metadata.issuer!r} has no "
                                     f"authorization_endpoint")
        client = self._client_for(server, metadata)
        pkce = PKCE.new()
        state = new_state()
        params = {"response_type": "code", "client_id": client.client_id,
                  "redirect_uri": self.redirect_uri, "code_challenge": pkce.challenge,
                  "code_challenge_method": PKCE.method, "state": state, "resource": resource}
        if scope:
            params["scope"] = scope
        endpoint = metadata.authorization_endpoint
        authorization_url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
        returned = self.redirect_handler(authorization_url)
        callback = parse_callback(returned)
        if callback.error:
            raise AuthorizationResponseError(
                f"the authorization server refused: {callback.error}"
                + (f" ({callback.error_description})" if callback.error_description else ""))
        if callback.state != state:
            raise AuthorizationResponseError("the authorization response's state does not "
                                             "match the request's: refusing it")
        self._check_iss(metadata, callback.iss, isinstance(returned, tuple))
        if not callback.code:
            raise AuthorizationResponseError("the authorization response carries no code")
        data = {"grant_type": "authorization_code", "code": callback.code,
                "redirect_uri": self.redirect_uri, "code_verifier": pkce.verifier,
                "resource": resource}
        return self._token_request(metadata, client, data)

    @staticmethod
    def _check_iss(metadata: ServerMetadata, iss: str | None, bare_pair: bool) -> None:
        """RFC 9207: a present ``iss`` must be the recorded issuer, compared as plain
        strings (no URL normalization), whether or not the server advertised it; an absent
        one is refused when the server advertised that it sends it."""
        if iss is not None:
            if iss != metadata.issuer:
                raise AuthorizationResponseError(
                    f"the authorization response's iss {iss!r} is not the issuer "
                    f"{metadata.issuer!r}: refusing it (RFC 9207)")
            return
        if metadata.raw.get("authorization_response_iss_parameter_supported") is True:
            hint = (" (return the redirect URL, or (code, state, iss), from the redirect "
                    "handler)") if bare_pair else ""
            raise AuthorizationResponseError(
                f"the authorization server {metadata.issuer!r} advertises the iss "
                f"parameter but the authorization response has none: refusing it "
                f"(RFC 9207){hint}")

    def _client_for(self, server: _Server, metadata: ServerMetadata) -> ClientInfo:
        issuer = metadata.issuer
        client = server.clients.get(issuer)
        if client is not None:
            return client
        if self.client_id is not None:
            client = ClientInfo(self.client_id, self._client_secret,
                                self.token_endpoint_auth_method, "pre-registered")
        elif (self.client_metadata_url
              and metadata.raw.get("client_id_metadata_document_supported") is True):
            client = ClientInfo(self.client_metadata_url, None, "none", "metadata-document")
        else:
            body = {"client_name": self.client_name, "redirect_uris": [self.redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "application_type": application_type(self.redirect_uri),
                    **self.client_metadata}
            client = register_dynamically(self._fetcher, metadata, body)
        server.clients[issuer] = client
        return client

    def _client_credentials_grant(self, metadata: ServerMetadata, resource: str,
                                  scope: str | None) -> Token:
        assert self.client_id is not None
        method = self.token_endpoint_auth_method or (
            "private_key_jwt" if self._private_key_pem is not None
            else preferred_auth_method(metadata, True))
        client = ClientInfo(self.client_id, self._client_secret, method, "pre-registered")
        data = {"grant_type": "client_credentials", "resource": resource}
        if scope:
            data["scope"] = scope
        return self._token_request(metadata, client, data)

    def _jwt_bearer_grant(self, metadata: ServerMetadata, resource: str,
                          scope: str | None) -> Token:
        assertion: str | None
        if self._idp is not None:
            assertion = self._idp.exchange(self._fetcher, metadata.issuer, resource, scope)
        else:
            assertion = self._assertion() if callable(self._assertion) else self._assertion
        data = {"grant_type": JWT_BEARER_GRANT, "assertion": str(assertion),
                "resource": resource}
        if scope:
            data["scope"] = scope
        if self._idp is not None and self.client_id is not None:
            return self._token_request(metadata, ClientInfo(
                self.client_id, self._client_secret, self.token_endpoint_auth_method), data)
        if self.client_id is None:
            return self._token_request(metadata, None, data)
        return self._token_request(metadata, ClientInfo(self.client_id, None, "none"), data)

    def _refresh(self, key: str, url: str, info: ResourceInfo | None = None,
                 headers: dict[str, str] | None = None, walk: Deadline | None = None) -> None:
        server = self._server(key)
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
            server.token = self._token_request(metadata, client, data, token)
        except TokenRequestError:
            server.token = None  # the refresh token is spent or revoked: authorize anew
            self._save(key)
            raise
        self._save(key)

    def _token_request(self, metadata: ServerMetadata, client: ClientInfo | None,
                       data: dict[str, str], previous: Token | None = None) -> Token:
        form = dict(data)
        headers: dict[str, str] = {}
        method = "none" if client is None else (
            client.token_endpoint_auth_method
            or preferred_auth_method(metadata, client.client_secret is not None))
        if client is None:
            pass  # the grant itself authenticates (a JWT-bearer assertion)
        elif method == "private_key_jwt" and self._private_key_pem is not None:
            form["client_id"] = client.client_id
            form["client_assertion_type"] = ASSERTION_TYPE
            form["client_assertion"] = client_assertion(
                client.client_id, metadata.issuer, self._private_key_pem,
                self._signing_algorithm)
        elif method == "client_secret_basic" and client.client_secret is not None:
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif method == "client_secret_post" and client.client_secret is not None:
            form["client_id"] = client.client_id
            form["client_secret"] = client.client_secret
        else:
            form["client_id"] = client.client_id
        grant = data["grant_type"]
        endpoint = metadata.token_endpoint
        dpop, budget = self._dpop_for(metadata), self._fetcher.deadline(f"the {grant} request")
        for _ in range(2):  # a second time only for a DPoP nonce (RFC 9449 §8)
            if dpop is not None:
                headers["DPoP"] = dpop.proof("POST", endpoint)
            try:
                answer = self._fetcher.request("POST", endpoint, data=form, headers=headers,
                                               deadline=budget)
            except FETCH_ERRORS as exc:
                raise TokenRequestError(
                    f"the {grant} request to {endpoint} failed: {exc}") from None
            fresh = dpop is not None and dpop.remember_nonce(
                endpoint, answer.headers.get("DPoP-Nonce"))
            if not (fresh and answer.status == 400 and answer.body is not None
                    and answer.body.get("error") == "use_dpop_nonce"):
                break
        body = answer.body
        if answer.status != 200 or body is None or not isinstance(body.get("access_token"), str):
            code = body.get("error") if body else None
            code = code if isinstance(code, str) else None
            raise TokenRequestError(
                f"the token endpoint {endpoint} refused the {grant} grant "
                f"(HTTP {answer.status}{', ' + code if code else ''})", code)
        token_type = str(body.get("token_type") or "Bearer")
        if token_type.lower() != "bearer" and not (dpop is not None
                                                   and token_type.lower() == "dpop"):
            raise TokenRequestError(f"the token endpoint {endpoint} issued a {token_type!r} "
                                    f"token; only Bearer (and DPoP, when asked) are supported")
        return Token.from_response(body, metadata.issuer, previous)

    def _dpop_for(self, metadata: ServerMetadata) -> DPoPKey | None:
        """This object's DPoP key when DPoP is to be used with ``metadata``'s server: it
        lists ES256 in ``dpop_signing_alg_values_supported``, PyJWT is installed, and
        ``dpop`` was not turned off."""
        if self.dpop is False or not metadata.supports("dpop_signing_alg_values_supported",
                                                       DPOP_ALGORITHM):
            return None
        if self.dpop is None and not dpop_available():
            return None
        with self._lock:
            if self._dpop_key is None:
                self._dpop_key = DPoPKey()
            return self._dpop_key

    # -- for applications ----------------------------------------------------------------

    def token_for(self, url: str) -> Token | None:
        """The current token for the server at ``url`` (``None`` before authorization).
        Its ``repr`` shows no secret; ``access_token`` is the bearer value itself."""
        return self._server(origin_of(url)).token
