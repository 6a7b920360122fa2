"""The authorization server, framework-neutral: requests in, responses out.

:class:`AuthorizationServer` is an OAuth 2.1 authorization server in the MCP profile,
built on authlib: authlib's authorization code grant (with its PKCE extension, S256
only), refresh token grant, revocation endpoint (RFC 7009), registration endpoint
(RFC 7591) and issuer parameter (RFC 9207) do the protocol; this module supplies what
they leave to the application: where the state lives (an
:class:`~mcpsync.auth.issuer.store.IssuerStore`), who the user is (a hook), the consent
page, the RFC 8707 ``resource`` binding, metadata-document clients, and the tokens
(signed JWTs, or opaque tokens kept hashed).

The framework bindings (:mod:`~mcpsync.auth.issuer.wsgi`, ``.flask``, ``.django``) only
turn their requests into :class:`IssuerRequest` and :class:`IssuerResponse` back.
"""

from __future__ import annotations

import logging
import secrets
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from authlib.common.urls import add_params_to_uri  # type: ignore[import-untyped]
from authlib.oauth2 import (  # type: ignore[import-untyped]
    AuthorizationServer as _AuthlibServer,
)
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import JsonPayload, JsonRequest, OAuth2Payload, OAuth2Request  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError  # type: ignore[import-untyped]
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant, RefreshTokenGrant  # type: ignore[import-untyped]
from authlib.oauth2.rfc7009 import RevocationEndpoint  # type: ignore[import-untyped]
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint  # type: ignore[import-untyped]
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError, InvalidRedirectURIError  # type: ignore[import-untyped]
from authlib.oauth2.rfc7636 import CodeChallenge  # type: ignore[import-untyped]
from authlib.oauth2.rfc9207 import IssuerParameter  # type: ignore[import-untyped]

from .clients import ClientMetadataError, IssuerClient, check_metadata
from .consent import (
    CONSENT_HEADERS,
    ConsentView,
    csrf_token,
    csrf_valid,
    render_builtin,
    render_error,
)
from .documents import DocumentError, DocumentPolicy, fetch_metadata_document, is_document_url
from .keys import KeyRing
from .store import (
    GRANT_GRACE,
    ClientRecord,
    CodeRecord,
    GrantRecord,
    IssuerStore,
    StoreFullError,
    TokenRecord,
    secret_hash,
)
from .verify import IssuerVerifier, decode_own

logger = logging.getLogger("mcpsync.auth.issuer")

__all__ = ["AuthorizationServer", "InvalidTargetError", "IssuerRequest", "IssuerResponse",
           "IssuerUser", "add_iss", "error_page"]

#: Metadata documents are accepted, fetched with these bounds, unless told otherwise.
DEFAULT_DOCUMENTS = DocumentPolicy()
#: The longest a refresh token may live (a store keeps a grant's records 90 days after
#: its last use).
MAX_REFRESH_LIFETIME = 90 * 24 * 3600.0
#: The largest request body read by any endpoint (a registration, a token request).
MAX_BODY_BYTES = 64 * 1024


# -- the neutral request and response ---------------------------------------------------

@dataclass
class IssuerRequest:
    """One HTTP request as the server needs it: ``url`` is the full URL the client used,
    ``query`` and ``form`` are the decoded parameters (each name once: a repeated
    parameter is refused), ``json`` the decoded body of a registration. ``native`` is
    the framework's own request (for the login hook)."""

    method: str
    url: str
    headers: Mapping[str, str]
    query: Mapping[str, Sequence[str]] = field(default_factory=dict)
    form: Mapping[str, Sequence[str]] = field(default_factory=dict)
    json: Any = None
    native: Any = None


@dataclass
class IssuerResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""

    @property
    def location(self) -> str | None:
        for name, value in self.headers:
            if name.lower() == "location":
                return value
        return None

    @location.setter
    def location(self, value: str) -> None:
        self.headers = [(n, v) for n, v in self.headers if n.lower() != "location"]
        self.headers.append(("Location", value))


@dataclass(frozen=True)
class IssuerUser:
    """The signed-in user: ``subject`` becomes the tokens' ``sub`` (stable, never
    reassigned: a user id, not an email that may change hands); ``name`` is shown on
    the consent page; ``claims`` are added to the access token."""

    subject: str
    name: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)

    def get_user_id(self) -> str:  # what authlib asks of a user
        return self.subject


@dataclass(frozen=True)
class _Principal:
    """The user of a code or grant, carried into token generation with its binding."""

    subject: str
    grant_id: str
    resource: str
    claims: Mapping[str, Any]

    def get_user_id(self) -> str:
        return self.subject


#: ``current_user(request) -> IssuerUser | None``: who is signed in on the site.
CurrentUser = Callable[[IssuerRequest], "IssuerUser | None"]
#: ``login_url(request, next_url) -> str``: the site's login page, coming back to next.
LoginUrl = Callable[[IssuerRequest, str], str]
#: ``render_consent(request, view) -> str``: the consent page's HTML.
RenderConsent = Callable[[IssuerRequest, ConsentView], str]


def _json(status: int, body: Mapping[str, Any], *extra: tuple[str, str]) -> IssuerResponse:
    import json

    return IssuerResponse(status, [("Content-Type", "application/json"),
                                   ("Cache-Control", "no-store"), *extra],
                          json.dumps(body).encode())


def _html(status: int, text: str) -> IssuerResponse:
    return IssuerResponse(status, [("Content-Type", "text/html; charset=utf-8"),
                                   *CONSENT_HEADERS], text.encode())


def _canonical(uri: str) -> str:
    """A resource URI compared case-insensitively in scheme and host (MCP: servers
    SHOULD accept uppercase there), exactly elsewhere."""
    parts = urlsplit(uri)
    netloc = parts.netloc.lower()
    return f"{parts.scheme.lower()}://{netloc}{parts.path}" + (
        f"?{parts.query}" if parts.query else "")


# -- authlib's request types over IssuerRequest -----------------------------------------

def _single(params: Mapping[str, Sequence[str]]) -> dict[str, str]:
    return {name: values[0] for name, values in params.items() if values}


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, params: Mapping[str, Sequence[str]]) -> None:
        self._data = _single(params)
        self._datalist = {name: list(values) for name, values in params.items()}

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


class _OAuthRequest(OAuth2Request):  # type: ignore[misc]
    def __init__(self, request: IssuerRequest) -> None:
        super().__init__(request.method, request.url, headers=dict(request.headers))
        merged: dict[str, list[str]] = {}
        for source in (request.query, request.form):
            for name, values in source.items():
                merged.setdefault(name, []).extend(values)
        self.payload = _Payload(merged)
        self._args = _single(request.query)
        self._form = _single(request.form)
        self.issuer_request = request

    @property
    def args(self) -> dict[str, str]:
        return self._args

    @property
    def form(self) -> dict[str, str]:
        return self._form


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class _JsonRequest(JsonRequest):  # type: ignore[misc]
    def __init__(self, request: IssuerRequest) -> None:
        super().__init__(request.method, request.url, dict(request.headers))
        self.payload = _JsonPayload(request.json if isinstance(request.json, dict) else {})


# -- authlib's grants and endpoints, given the store ------------------------------------

class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707: the ``resource`` is not one this server issues tokens for."""

    error = "invalid_target"


class _S256Only(CodeChallenge):  # type: ignore[misc]
    """PKCE required on every authorization request, S256 only (OAuth 2.1; MCP)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge (S256)")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("code_challenge_method must be S256")
        super().validate_code_challenge(grant, redirect_uri)

    def get_authorization_code_challenge(self, code: _Code) -> str:
        return code.record.code_challenge

    def get_authorization_code_challenge_method(self, code: _Code) -> str:
        return "S256"


class _Code:
    """A taken code, with the methods authlib reads."""

    def __init__(self, record: CodeRecord) -> None:
        self.record = record

    def get_redirect_uri(self) -> str:
        return self.record.redirect_uri

    def get_scope(self) -> str:
        return self.record.scope


class _CodeGrant(AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    server: _Server

    def save_authorization_code(self, code: str, request: _OAuthRequest) -> None:
        owner: AuthorizationServer = self.server.owner
        user: IssuerUser = request.user
        data = request.payload.data
        owner.store.put_code(CodeRecord(
            code_hash=secret_hash(code), client_id=request.client.get_client_id(),
            redirect_uri=data["redirect_uri"], scope=request.scope or "",
            resource=owner.resource_of(data), subject=user.subject,
            code_challenge=data["code_challenge"], grant_id=uuid.uuid4().hex,
            expires_at=time.time() + owner.code_lifetime,
            claims={"name": user.name, **user.claims} if user.name else dict(user.claims)))

    def query_authorization_code(self, code: str, client: IssuerClient) -> _Code | None:
        """Take the code (single use, atomically); a replay revokes what it gave."""
        owner: AuthorizationServer = self.server.owner
        record, used = owner.store.take_code(secret_hash(code), time.time())
        if record is None or record.client_id != client.get_client_id():
            return None
        if used:
            logger.warning("mcpsync: an authorization code was used twice (client %s); "
                           "its grant is revoked", record.client_id)
            owner.store.revoke_grant(record.grant_id)
            return None
        wanted = self.request.payload.data.get("resource")
        if wanted is not None and _canonical(wanted) != _canonical(record.resource):
            raise InvalidTargetError("the resource is not the one the code was issued for")
        return _Code(record)

    def delete_authorization_code(self, authorization_code: _Code) -> None:
        pass  # taken by query_authorization_code already

    def authenticate_user(self, authorization_code: _Code) -> _Principal:
        record = authorization_code.record
        return _Principal(record.subject, record.grant_id, record.resource, record.claims)


class _RefreshGrant(RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation (OAuth 2.1 §4.3.1; MCP: public clients)

    server: _Server

    def authenticate_refresh_token(self, refresh_token: str) -> _Refresh | None:
        owner: AuthorizationServer = self.server.owner
        record = owner.store.get_token(secret_hash(refresh_token), time.time())
        if record is None or record.kind != "refresh":
            return None
        grant = owner.store.get_grant(record.grant_id)
        if grant is None or grant.revoked:
            return None
        if record.rotated:  # reuse: whoever holds the family now, it ends here
            logger.warning("mcpsync: a rotated refresh token was used again (client %s); "
                           "its grant is revoked", grant.client_id)
            owner.store.revoke_grant(grant.grant_id)
            return None
        wanted = self.request.payload.data.get("resource")
        if wanted is not None and _canonical(wanted) != _canonical(grant.resource):
            raise InvalidTargetError("the resource is not the one the grant is for")
        self.request.presented_refresh = refresh_token
        return _Refresh(record, grant)

    def authenticate_user(self, refresh_token: _Refresh) -> _Principal:
        grant = refresh_token.grant
        return _Principal(grant.subject, grant.grant_id, grant.resource, grant.claims)

    def revoke_old_credential(self, refresh_token: _Refresh) -> None:
        pass  # rotated atomically by save_token


class _Refresh:
    def __init__(self, record: TokenRecord, grant: GrantRecord) -> None:
        self.record = record
        self.grant = grant

    def check_client(self, client: IssuerClient) -> bool:
        return bool(self.grant.client_id == client.get_client_id())

    def get_scope(self) -> str:
        return self.grant.scope


class _Revocation(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    server: _Server

    def query_token(self, token_string: str, token_type_hint: str | None) -> _Refresh | None:
        owner: AuthorizationServer = self.server.owner
        grant_id = owner.grant_of_token(token_string)
        grant = owner.store.get_grant(grant_id) if grant_id else None
        if grant is None:
            return None
        record = TokenRecord(secret_hash(token_string), "refresh", grant.grant_id, 0.0)
        return _Refresh(record, grant)

    def revoke_token(self, token: _Refresh, request: Any) -> None:
        # Revoking any token of a grant ends the grant: RFC 7009 §2.1 lets a refresh
        # token's revocation take its access tokens along; an access token's takes the
        # refresh tokens too, so a client that says "sign me out" is signed out.
        self.server.owner.store.revoke_grant(token.grant.grant_id)


class _Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
    server: _Server

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration (MCP): the consent page is the gate

    def get_server_metadata(self) -> dict[str, Any]:
        return self.server.owner.metadata()

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        data = request.payload.data
        if not isinstance(data, dict) or not data:
            raise InvalidClientMetadataError("the registration must be a JSON object")
        try:
            checked = check_metadata(dict(data))
        except ClientMetadataError as exc:
            if exc.error == "invalid_redirect_uri":
                raise InvalidRedirectURIError(exc.description) from None
            raise InvalidClientMetadataError(exc.description) from None
        # authlib's claims check the rest; the redirect URIs are check_metadata's alone
        # (authlib's refuses a native application's private-use scheme).
        request.payload._data = {k: v for k, v in checked.items() if k != "redirect_uris"}
        metadata: dict[str, Any] = super().extract_client_metadata(request)
        request.payload._data = checked
        for key in ("application_type", "token_endpoint_auth_method", "grant_types",
                    "response_types", "redirect_uris", "client_name"):
            if key in checked:
                metadata[key] = checked[key]
        return metadata

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        info: dict[str, Any] = super().generate_client_info(request)
        if request.payload.data.get("token_endpoint_auth_method") == "none":
            info.pop("client_secret", None)
            info.pop("client_secret_expires_at", None)
        return info

    def save_client(self, client_info: dict[str, Any], client_metadata: dict[str, Any],
                    request: Any) -> ClientRecord:
        secret = client_info.get("client_secret")
        record = ClientRecord(client_id=client_info["client_id"], metadata=client_metadata,
                              source="dynamic",
                              secret_hash=secret_hash(secret) if secret else None,
                              created_at=time.time())
        try:
            self.server.owner.store.put_client(record)
        except StoreFullError:
            raise InvalidClientMetadataError("this server accepts no more registrations "
                                             "now") from None
        return record


class _Server(_AuthlibServer):  # type: ignore[misc]
    """authlib's server, talking IssuerRequest/IssuerResponse and asking ``owner``."""

    def __init__(self, owner: AuthorizationServer) -> None:
        super().__init__(scopes_supported=owner.scopes_supported)
        self.owner = owner

    def query_client(self, client_id: str) -> IssuerClient | None:
        return self.owner.client(client_id)

    def save_token(self, token: dict[str, Any], request: _OAuthRequest) -> None:
        self.owner.save_token(token, request)

    def create_oauth2_request(self, request: Any) -> _OAuthRequest:
        if isinstance(request, _OAuthRequest):
            return request
        return _OAuthRequest(request)

    def create_json_request(self, request: Any) -> _JsonRequest:
        return _JsonRequest(request)

    def handle_response(self, status: int, body: Any, headers: Any) -> IssuerResponse:
        import json

        if isinstance(body, dict):
            body = json.dumps(body)
        data = body.encode() if isinstance(body, str) else bytes(body or b"")
        return IssuerResponse(status, [(str(k), str(v)) for k, v in headers], data)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def generate_token(self, grant_type: str, client: IssuerClient, user: Any = None,
                       scope: str | None = None, expires_in: int | None = None,
                       include_refresh_token: bool = True) -> dict[str, Any]:
        return self.owner.generate_token(client, user, scope or "", include_refresh_token)


class _Issuer(IssuerParameter):  # type: ignore[misc]
    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


# -- the server -------------------------------------------------------------------------

class AuthorizationServer:
    """An OAuth 2.1 authorization server for the MCP server(s) at ``resources``.

    ``issuer``: this server's issuer URL (``https://example.com``, or with a path); its
    endpoints are ``<issuer>/authorize``, ``/token``, ``/register``, ``/revoke``,
    ``/jwks.json``, its metadata ``/.well-known/oauth-authorization-server`` at the
    origin, the issuer's path appended (RFC 8414 §3). ``resources``: the canonical URLs of
    the MCP endpoints tokens may be for (RFC 8707); a request naming no ``resource`` gets
    the first. ``store``: where the state lives. ``secret_key``: signs the consent form's
    CSRF token (the site's secret key; at least 32 bytes).

    ``current_user(request)``: the signed-in :class:`IssuerUser`, or ``None``;
    ``login_url(request, next_url)``: the site's login page, which sends the user back to
    ``next_url`` (its own URL check must accept it: it is on this site).
    ``render_consent(request, view)``: the consent page (default: a plain built-in one).

    ``clients``: pre-registered clients, ``{client_id: metadata}`` (``client_secret``
    in the metadata for a confidential one). ``dynamic_registration`` (RFC 7591) and
    ``metadata_documents`` (a :class:`DocumentPolicy`, or ``None`` to refuse URL client
    ids) say which other clients are accepted.

    ``token_format``: ``"jwt"`` (signed, ES256, verifiable with the JWKS by any resource
    server) or ``"opaque"`` (random, stored hashed; verify with :meth:`verifier`).
    """

    def __init__(self, issuer: str, *, resources: Iterable[str], store: IssuerStore,
                 secret_key: str | bytes, current_user: CurrentUser, login_url: LoginUrl,
                 scopes_supported: Iterable[str] = (),
                 render_consent: RenderConsent | None = None,
                 clients: Mapping[str, Mapping[str, Any]] | None = None,
                 dynamic_registration: bool = True,
                 metadata_documents: DocumentPolicy | None = DEFAULT_DOCUMENTS,
                 token_format: str = "jwt", access_token_lifetime: float = 600.0,
                 refresh_token_lifetime: float = 30 * 24 * 3600.0,
                 code_lifetime: float = 60.0, key_rotation: float = 7 * 24 * 3600.0,
                 service_documentation: str | None = None) -> None:
        parts = urlsplit(issuer)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.query \
                or parts.fragment:
            raise ValueError("issuer must be an http(s) URL without query or fragment")
        if token_format not in ("jwt", "opaque"):
            raise ValueError("token_format must be 'jwt' or 'opaque'")
        key = secret_key.encode() if isinstance(secret_key, str) else bytes(secret_key)
        if len(key) < 32:
            raise ValueError("secret_key must be at least 32 bytes")
        if not 0 < access_token_lifetime <= GRANT_GRACE:
            raise ValueError("access_token_lifetime must be positive and at most a day "
                             "(a stored grant with no token left is dropped after a day)")
        if not 0 < refresh_token_lifetime <= MAX_REFRESH_LIFETIME:
            raise ValueError("refresh_token_lifetime must be positive and at most 90 days")
        if key_rotation * 2 <= access_token_lifetime:
            raise ValueError("key_rotation must exceed half the access token lifetime "
                             "(a retired key stays published for two rotations)")
        self.issuer = issuer.rstrip("/")
        self.resources = [_canonical(r) for r in resources]
        if not self.resources:
            raise ValueError("resources must name at least one MCP endpoint URL")
        self.store = store
        self.secret_key = key
        self.current_user = current_user
        self.login_url = login_url
        self.render_consent = render_consent
        self.scopes_supported = list(scopes_supported)
        self.dynamic_registration = dynamic_registration
        self.documents = metadata_documents
        self.token_format = token_format
        self.access_token_lifetime = access_token_lifetime
        self.refresh_token_lifetime = refresh_token_lifetime
        self.code_lifetime = code_lifetime
        self.service_documentation = service_documentation
        self.keys = KeyRing(store, rotate_after=key_rotation)
        self._last_purge = 0.0
        for client_id, metadata in (clients or {}).items():
            self.register_client(client_id, dict(metadata))
        self._authlib = _Server(self)
        self._authlib.register_grant(_CodeGrant, [_S256Only(required=True)])
        self._authlib.register_grant(_RefreshGrant)
        self._authlib.register_endpoint(_Revocation(self._authlib))
        if dynamic_registration:
            self._authlib.register_endpoint(_Registration(self._authlib))
        self._iss = _Issuer(self.issuer)
        self._authlib.register_extension(self._iss)

    # -- URLs and metadata ------------------------------------------------------------

    def endpoint(self, name: str) -> str:
        return f"{self.issuer}/{name}"

    @property
    def metadata_path(self) -> str:
        """Where the RFC 8414 metadata is served (the issuer's path after the
        well-known prefix, §3.1)."""
        return "/.well-known/oauth-authorization-server" + urlsplit(self.issuer).path

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata, with the MCP profile's fields."""
        body: dict[str, Any] = {
            "issuer": self.issuer,
            "authorization_endpoint": self.endpoint("authorize"),
            "token_endpoint": self.endpoint("token"),
            "revocation_endpoint": self.endpoint("revoke"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic",
                                                      "client_secret_post"],
            "revocation_endpoint_auth_methods_supported": ["none", "client_secret_basic",
                                                           "client_secret_post"],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": self.documents is not None,
        }
        if self.scopes_supported:
            body["scopes_supported"] = self.scopes_supported
        if self.dynamic_registration:
            body["registration_endpoint"] = self.endpoint("register")
        if self.token_format == "jwt":
            body["jwks_uri"] = self.endpoint("jwks.json")
        if self.service_documentation:
            body["service_documentation"] = self.service_documentation
        return body

    def resource_server(self, resource: str | None = None, **options: Any) -> Any:
        """The :class:`~mcpsync.auth.server.ResourceServer` for one of this server's
        MCP endpoints: its Protected Resource Metadata names this issuer (the pairing
        RFC 9728 and RFC 8414 describe), its verifier is :meth:`verifier`."""
        from ..server import ResourceServer

        target = _canonical(resource) if resource is not None else self.resources[0]
        options.setdefault("scopes_supported", self.scopes_supported or None)
        return ResourceServer(self.verifier(target), resource=target,
                              authorization_servers=[self.issuer], **options)

    def verifier(self, resource: str | None = None) -> Any:
        """A :class:`~mcpsync.auth.server.TokenVerifier` for tokens of this server, for a
        resource server in the same deployment: it checks the signature (or the stored
        opaque token), the audience, and that the grant is not revoked, so a revocation
        takes effect at once (a resource server elsewhere, with ``JwtVerifier`` and the
        JWKS, sees it when the access token expires)."""
        return IssuerVerifier(self.store, self.issuer, self.token_format,
                              _canonical(resource) if resource else self.resources[0])

    # -- clients ----------------------------------------------------------------------

    def register_client(self, client_id: str, metadata: dict[str, Any]) -> None:
        """Add (or replace) a pre-registered client."""
        secret = metadata.pop("client_secret", None)
        if secret is None:
            metadata.setdefault("token_endpoint_auth_method", "none")
        checked = check_metadata(metadata)
        checked.setdefault("grant_types", ["authorization_code", "refresh_token"])
        self.store.put_client(ClientRecord(
            client_id=client_id, metadata=checked, source="registered",
            secret_hash=secret_hash(secret) if secret else None, created_at=time.time()))

    def client(self, client_id: str) -> IssuerClient | None:
        """The client ``client_id``: from the store, or fetched as a metadata document
        (when it is a URL and documents are accepted) and cached there. ``None`` when
        unknown or unusable; the reason is logged."""
        if not client_id or len(client_id) > 2048:
            return None
        now = time.time()
        record = self.store.get_client(client_id, now)
        if record is not None:
            return IssuerClient(record, self.scopes_supported)
        if self.documents is None or not is_document_url(client_id):
            return None
        try:
            document, cache = fetch_metadata_document(client_id, self.documents)
            metadata = check_metadata({**document, "token_endpoint_auth_method":
                                       document.get("token_endpoint_auth_method", "none")})
        except (DocumentError, ClientMetadataError) as exc:
            logger.warning("mcpsync: client metadata document %s refused: %s",
                           client_id, exc)
            return None
        if metadata["token_endpoint_auth_method"] != "none":
            logger.warning("mcpsync: client metadata document %s refused: only public "
                           "clients (token_endpoint_auth_method none)", client_id)
            return None
        metadata.setdefault("grant_types", ["authorization_code", "refresh_token"])
        record = ClientRecord(client_id=client_id, metadata=metadata,
                              source="metadata-document", created_at=now,
                              expires_at=now + max(cache, 1.0))
        if cache > 0:
            try:
                self.store.put_client(record)
            except StoreFullError:
                pass  # usable now, just not cached
        return IssuerClient(record, self.scopes_supported)

    # -- tokens -----------------------------------------------------------------------

    def resource_of(self, params: Mapping[str, str]) -> str:
        """The resource a request asks for (checked already): the named one, or the
        default."""
        wanted = params.get("resource")
        return _canonical(wanted) if wanted else self.resources[0]

    def generate_token(self, client: IssuerClient, user: _Principal, scope: str,
                       include_refresh_token: bool) -> dict[str, Any]:
        now = int(time.time())
        if self.token_format == "jwt":
            claims: dict[str, Any] = {
                **{k: v for k, v in user.claims.items() if v is not None},
                "iss": self.issuer, "sub": user.subject, "aud": user.resource,
                "client_id": client.get_client_id(), "scope": scope, "iat": now,
                "exp": now + int(self.access_token_lifetime), "jti": uuid.uuid4().hex,
                "grant_id": user.grant_id}
            access = self.keys.sign(claims)
        else:
            access = secrets.token_urlsafe(32)
        token: dict[str, Any] = {"token_type": "Bearer", "access_token": access,
                                 "expires_in": int(self.access_token_lifetime),
                                 "scope": scope}
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(32)
        token["_grant"] = user  # taken out by save_token
        return token

    def save_token(self, token: dict[str, Any], request: _OAuthRequest) -> None:
        user: _Principal = token.pop("_grant")
        now = time.time()
        presented = getattr(request, "presented_refresh", None)
        refresh = token.get("refresh_token")
        if presented is not None:  # a refresh: rotate, atomically, or catch the reuse
            new = TokenRecord(secret_hash(refresh or secrets.token_urlsafe(32)), "refresh",
                              user.grant_id, now + self.refresh_token_lifetime)
            outcome, _ = self.store.rotate_refresh(secret_hash(presented), new, now)
            if outcome != "rotated":
                raise InvalidGrantError("the refresh token is no longer valid")
        else:
            self.store.put_grant(GrantRecord(
                grant_id=user.grant_id, client_id=request.client.get_client_id(),
                subject=user.subject, scope=token.get("scope", ""), resource=user.resource,
                created_at=now, claims=dict(user.claims)))
            if refresh:
                self.store.put_token(TokenRecord(secret_hash(refresh), "refresh",
                                                 user.grant_id,
                                                 now + self.refresh_token_lifetime))
        if self.token_format == "opaque":
            self.store.put_token(TokenRecord(secret_hash(token["access_token"]), "access",
                                             user.grant_id,
                                             now + self.access_token_lifetime))
        self._purge(now)

    def grant_of_token(self, token: str) -> str | None:
        """The grant a token (refresh, opaque access or JWT access) belongs to."""
        record = self.store.get_token(secret_hash(token), time.time())
        if record is not None:
            return record.grant_id
        if self.token_format == "jwt" and token.count(".") == 2:
            claims = decode_own(self.store, self.issuer, token, audience=None)
            if claims is not None and isinstance(claims.get("grant_id"), str):
                return str(claims["grant_id"])
        return None

    def _purge(self, now: float) -> None:
        if now - self._last_purge > 60:
            self._last_purge = now
            self.store.purge(now)

    # -- the endpoints ----------------------------------------------------------------

    def handle(self, request: IssuerRequest) -> IssuerResponse | None:
        """Answer ``request`` when its path is one of this server's endpoints, else
        ``None``. Every failure is an OAuth error answer, never a traceback."""
        path = urlsplit(request.url).path
        route = self._routes().get(path)
        if route is None:
            return None
        try:
            return route(request)
        except Exception:
            logger.exception("mcpsync: the authorization server failed on %s", path)
            return _json(500, {"error": "server_error"})

    def _routes(self) -> dict[str, Callable[[IssuerRequest], IssuerResponse]]:
        base = urlsplit(self.issuer).path
        return {self.metadata_path: self._metadata, f"{base}/authorize": self.authorize,
                f"{base}/token": self.token, f"{base}/revoke": self.revoke,
                f"{base}/register": self.register, f"{base}/jwks.json": self._jwks}

    @property
    def paths(self) -> frozenset[str]:
        """The URL paths this server answers (a binding routes exactly these)."""
        return frozenset(self._routes())

    def _metadata(self, request: IssuerRequest) -> IssuerResponse:
        return _json(200, self.metadata(), ("Access-Control-Allow-Origin", "*"))

    def _jwks(self, request: IssuerRequest) -> IssuerResponse:
        if self.token_format != "jwt":
            return _json(404, {"error": "not_found"})
        return _json(200, self.keys.jwks(), ("Access-Control-Allow-Origin", "*"))

    def token(self, request: IssuerRequest) -> IssuerResponse:
        if request.method != "POST":
            return _json(405, {"error": "invalid_request"}, ("Allow", "POST"))
        response: IssuerResponse = self._authlib.create_token_response(request)
        return response

    def revoke(self, request: IssuerRequest) -> IssuerResponse:
        if request.method != "POST":
            return _json(405, {"error": "invalid_request"}, ("Allow", "POST"))
        response: IssuerResponse = self._authlib.create_endpoint_response("revocation",
                                                                          request)
        return response

    def register(self, request: IssuerRequest) -> IssuerResponse:
        if not self.dynamic_registration:
            return _json(404, {"error": "not_found"})
        if request.method != "POST":
            return _json(405, {"error": "invalid_request"}, ("Allow", "POST"))
        response: IssuerResponse = self._authlib.create_endpoint_response(
            ClientRegistrationEndpoint.ENDPOINT_NAME, request)
        return response

    def authorize(self, request: IssuerRequest) -> IssuerResponse:
        """GET: check the request, then the login, then show the consent page. POST: the
        consent form's answer (CSRF-checked), then the redirect with a code (or
        ``access_denied``), ``state`` and ``iss``."""
        if request.method not in ("GET", "POST"):
            return _html(405, render_error("Method not allowed", "Use GET."))
        if request.method == "POST":
            params = _single({k: v for k, v in request.form.items()
                              if k not in ("csrf_token", "decision")})
            oauth = _OAuthRequest(IssuerRequest("GET", request.url.split("?")[0] + "?"
                                                + urlencode(params), request.headers,
                                                query={k: [v] for k, v in params.items()},
                                                native=request.native))
        else:
            params = _single(request.query)
            oauth = _OAuthRequest(request)
        for name, values in {**request.query, **request.form}.items():
            if len(values) > 1:
                return _html(400, render_error("Invalid request",
                                               f"The parameter {name} is repeated."))
        try:
            grant = self._authlib.get_authorization_grant(oauth)
        except OAuth2Error as error:
            return _html(400, render_error("Invalid request", str(error.description or
                                                                   error.error)))
        try:
            redirect_uri = grant.validate_authorization_request()
        except OAuth2Error as error:
            if error.redirect_uri:  # the client and its redirect URI are verified
                error.state = params.get("state")
                return self._with_iss(self._authlib.handle_error_response(oauth, error))
            return _html(400, render_error("This application cannot be authorized",
                                           str(error.description or error.error)))
        wanted = params.get("resource")
        if wanted is not None and _canonical(wanted) not in self.resources:
            target = InvalidTargetError("this server issues no tokens for that resource",
                                        redirect_uri=redirect_uri, state=params.get("state"))
            return self._with_iss(self._authlib.handle_error_response(oauth, target))
        user = self.current_user(request)
        if user is None:
            if request.method == "POST":
                return _html(403, render_error("Not signed in", "Sign in and try again."))
            return IssuerResponse(302, [("Location", self.login_url(request, request.url)),
                                        ("Cache-Control", "no-store")])
        if request.method == "GET":
            return self._consent(request, oauth, user, params, redirect_uri)
        if not csrf_valid(self.secret_key, _single(request.form).get("csrf_token"),
                          user.subject, params):
            return _html(403, render_error("Request refused", "The form expired or did not "
                                           "come from this site. Start again from the "
                                           "application."))
        decision = _single(request.form).get("decision")
        response: IssuerResponse = self._authlib.create_authorization_response(
            oauth, grant_user=user if decision == "allow" else None, grant=grant)
        response.headers.append(("Cache-Control", "no-store"))
        return response

    def _with_iss(self, response: IssuerResponse) -> IssuerResponse:
        self._iss.add_issuer_parameter(self._authlib, response)
        return response

    def _consent(self, request: IssuerRequest, oauth: _OAuthRequest, user: IssuerUser,
                 params: dict[str, str], redirect_uri: str) -> IssuerResponse:
        client: IssuerClient = oauth.client
        token = csrf_token(self.secret_key, user.subject, params)
        loopback = urlsplit(redirect_uri).hostname in ("localhost", "127.0.0.1", "::1")
        view = ConsentView(
            client_id=client.get_client_id(), client_name=client.name,
            client_uri=client.metadata.get("client_uri"), redirect_uri=redirect_uri,
            scopes=tuple((oauth.scope or "").split()), resource=self.resource_of(params),
            user_name=user.name or user.subject, action=request.url.split("?")[0],
            fields=(*sorted(params.items()), ("csrf_token", token)),
            loopback_warning=loopback)
        page = (self.render_consent(request, view) if self.render_consent
                else render_builtin(view))
        return _html(200, page)


def add_iss(uri: str, issuer: str) -> str:
    """``uri`` with ``iss`` added (for bindings that build a redirect themselves)."""
    result: str = add_params_to_uri(uri, {"iss": issuer})
    return result


def error_page(title: str, description: str) -> IssuerResponse:
    return _html(400, render_error(title, description))

