"""A small real authorization server and a protected MCP endpoint, for the OAuth client's
tests: werkzeug WSGI apps served on loopback sockets (``tests/serving.py``), no mocks.

The authorization server (:class:`AuthServer`) issues opaque random tokens, checks PKCE
S256 and the client's authentication, records every request it receives (so tests judge
what the client sent), and can be told to misbehave the ways the specification says a
client must notice. :class:`Protected` wraps an MCP server's WSGI app: it serves
Protected Resource Metadata and answers 401 / 403 ``insufficient_scope`` with the
``WWW-Authenticate`` challenges a resource server sends.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

from werkzeug.wrappers import Request, Response

from tests.serving import RunningServer

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"


def _json(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status=status, headers=headers or {},
                    content_type="application/json")


def check_proof(proof: str, method: str, url: str,
                access_token: str | None = None) -> tuple[dict[str, Any], str]:
    """Verify a DPoP proof (signature by its own ``jwk``, ``typ``, ``htm``, ``htu``,
    ``ath``); its claims and its key as canonical JSON. ``AssertionError`` if bad."""
    import jwt

    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    key = jwt.PyJWK(header["jwk"], algorithm=header["alg"]).key
    claims: dict[str, Any] = jwt.decode(proof, key, algorithms=["ES256"])
    assert claims["htm"] == method and claims["htu"] == url and claims["jti"]
    if access_token is not None:
        digest = hashlib.sha256(access_token.encode()).digest()
        assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    return claims, json.dumps(header["jwk"], sort_keys=True)


@dataclass
class Issued:
    client_id: str
    scopes: list[str]
    resource: str | None
    issuer: str
    dpop_jwk: str | None = None  # the proof key (JSON) a DPoP-bound token is bound to


@dataclass
class Seen:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str] = field(default_factory=dict)


class AuthServer:
    """An OAuth 2.1 authorization server on 127.0.0.1 (``base``; ``issuer`` adds ``path``).

    Options (attributes, changeable between requests): ``pkce_methods`` advertised
    (``None``: the field is omitted), ``iss_mode`` of the redirect (``correct``, ``omit``,
    ``wrong``, ``slash``), ``advertise_iss``, ``metadata_issuer`` (a lie, when set),
    ``registration`` (DCR on/off), ``cimd`` (advertise Client ID Metadata Documents),
    ``auth_methods`` (token endpoint), ``scopes_supported``, ``expires_in``,
    ``refresh`` (issue refresh tokens), ``clients`` (pre-registered id -> secret),
    ``jwt_keys`` (client id -> PEM public key, for ``private_key_jwt``),
    ``metadata_padding`` (bytes of junk to make the metadata document large),
    ``padding`` (path end -> bytes of junk added to that endpoint's JSON answer, e.g.
    ``{"/jwks": 300 * 1024}``; ``chunked_padding`` sends it without a Content-Length),
    ``workload_jwts`` (assertions the JWT-bearer grant accepts), ``id_tokens`` (what it
    exchanges for an ID-JAG when it plays an enterprise IdP), ``trusted_idp`` (whose
    ID-JAGs its JWT-bearer grant accepts), ``jwt_tokens`` (issue RFC 9068 JWT access
    tokens signed by a key published at ``jwks_url``, instead of opaque ones),
    ``introspection_claims`` (merged into every active introspection answer; a ``None``
    value leaves that member out, e.g. ``{"sub": None, "client_id": None}``).
    """

    def __init__(self, path: str = "") -> None:
        self.path = path
        self.pkce_methods: list[str] | None = ["S256"]
        self.iss_mode = "correct"
        self.advertise_iss: bool | None = True
        self.metadata_issuer: str | None = None
        self.registration = True
        #: Fields that replace the metadata's own (an endpoint elsewhere, say).
        self.metadata_overrides: dict[str, Any] = {}
        self.cimd = False
        self.auth_methods = ["none", "client_secret_basic", "client_secret_post"]
        self.scopes_supported: list[str] | None = None
        self.expires_in = 3600
        self.refresh = True
        self.clients: dict[str, str | None] = {}
        self.jwt_keys: dict[str, str] = {}
        self.metadata_padding = 0
        self.padding: dict[str, int] = {}
        self.chunked_padding = False
        self.workload_jwts: set[str] = set()
        self.id_tokens: set[str] = set()
        self.issued_jags: dict[str, tuple[str, str]] = {}
        self.trusted_idp: AuthServer | None = None
        self.dpop = False
        self.jwt_tokens = False
        self.introspection_claims: dict[str, Any] = {}
        self._signing_keys: list[tuple[str, Any]] = []  # (kid, private key), newest last
        self.dpop_nonce: str | None = None
        self.seen: list[Seen] = []
        self.tokens: dict[str, Issued] = {}
        self._codes: dict[str, dict[str, Any]] = {}
        self._refresh: dict[str, Issued] = {}
        self._lock = threading.Lock()
        self.server = RunningServer(self.app)
        self.base = self.server.base
        self.issuer = self.base + path
        self.jwks_url = f"{self.issuer}/jwks"

    def stop(self) -> None:
        self.server.stop()

    def count(self, path_end: str) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.path.endswith(path_end))

    def requests_to(self, path_end: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path.endswith(path_end)]

    # -- JWT access tokens ---------------------------------------------------------------

    def rotate_key(self) -> str:
        """A new RSA signing key (published at once alongside the old ones); its kid."""
        from cryptography.hazmat.primitives.asymmetric import rsa

        kid = "k" + secrets.token_hex(4)
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        with self._lock:
            self._signing_keys.append((kid, key))
        return kid

    def mint(self, *, scopes: list[str] | None = None, audience: Any = None,
             subject: str = "alice", client_id: str = "client-1", expires_in: int = 3600,
             issuer: str | None = None, kid: str | None = None, key: Any = None,
             **claims: Any) -> str:
        """A signed JWT access token (RFC 9068), by default good for an hour."""
        import time

        import jwt

        if not self._signing_keys:
            self.rotate_key()
        with self._lock:
            newest_kid, newest = self._signing_keys[-1]
        now = int(time.time())
        body = {"iss": issuer or self.issuer, "sub": subject, "client_id": client_id,
                "aud": audience, "iat": now, "exp": now + expires_in,
                "scope": " ".join(scopes or []), "jti": secrets.token_hex(8), **claims}
        return jwt.encode({k: v for k, v in body.items() if v is not None},
                          key or newest, algorithm="RS256",
                          headers={"kid": kid or newest_kid, "typ": "at+jwt"})

    def _introspect(self, request: Request, params: dict[str, str]) -> Response:
        """RFC 7662, for resource servers authenticated as a registered client."""
        if self._client_of(request, params) is None:
            return _json({"error": "invalid_client"}, 401)
        issued = self.tokens.get(params.get("token", ""))
        if issued is None:
            return _json({"active": False})
        body: dict[str, Any] = {"active": True, "client_id": issued.client_id,
                                "sub": "user-" + issued.client_id, "iss": issued.issuer,
                                "scope": " ".join(issued.scopes)}
        if issued.resource:
            body["aud"] = issued.resource
        body.update(self.introspection_claims)
        return _json({k: v for k, v in body.items() if v is not None})

    def _jwks(self) -> Response:
        import jwt

        with self._lock:
            keys = list(self._signing_keys)
        return _json({"keys": [{**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(
            key.public_key())), "kid": kid, "use": "sig", "alg": "RS256"}
            for kid, key in keys]})

    # -- the WSGI app --------------------------------------------------------------------

    def app(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        params = dict(request.args) if request.method == "GET" else dict(request.form)
        if request.is_json:
            params = {k: json.dumps(v) if not isinstance(v, str) else v
                      for k, v in (request.get_json(silent=True) or {}).items()}
        with self._lock:
            self.seen.append(Seen(request.method, request.path, params, dict(request.headers)))
        response = self._route(request, params)
        padding = next((n for end, n in self.padding.items() if request.path.endswith(end)),
                       0)
        if padding and response.is_json:
            response = self._padded(response, padding)
        return response(environ, start_response)

    def _padded(self, response: Response, padding: int) -> Response:
        """``response`` with ``padding`` bytes of junk in its JSON object; sent in 16 KiB
        chunks without a Content-Length when ``chunked_padding`` (so a reader must count
        what it reads, not trust a declared length)."""
        body = response.get_json()
        body["padding"] = "x" * padding
        data = json.dumps(body).encode()
        if not self.chunked_padding:
            return Response(data, response.status_code, content_type="application/json")
        chunks = (data[i:i + 16384] for i in range(0, len(data), 16384))
        return Response(chunks, response.status_code, content_type="application/json",
                        direct_passthrough=True)

    def _route(self, request: Request, params: dict[str, str]) -> Response:
        path = request.path
        if path in (f"/.well-known/oauth-authorization-server{self.path}",
                    f"/.well-known/openid-configuration{self.path}"):
            return self._metadata()
        if path == f"{self.path}/introspect" and request.method == "POST":
            return self._introspect(request, params)
        if path == f"{self.path}/jwks":
            return self._jwks()
        if path == f"{self.path}/authorize":
            return self._authorize(params)
        if path == f"{self.path}/token" and request.method == "POST":
            return self._token(request, params)
        if path == f"{self.path}/register" and request.method == "POST" and self.registration:
            body = request.get_json(silent=True) or {}
            client_id = "dcr-" + secrets.token_hex(4)
            method = body.get("token_endpoint_auth_method", "client_secret_basic")
            secret = None if method == "none" else secrets.token_hex(8)
            self.clients[client_id] = secret
            reply = {"client_id": client_id, "token_endpoint_auth_method": method,
                     "redirect_uris": body.get("redirect_uris", [])}
            if secret:
                reply["client_secret"] = secret
            return _json(reply, 201)
        return _json({"error": "not_found"}, 404)

    def _metadata(self) -> Response:
        body: dict[str, Any] = {
            "issuer": self.metadata_issuer or self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token",
                                      "client_credentials"],
            "token_endpoint_auth_methods_supported": self.auth_methods,
        }
        if self.registration:
            body["registration_endpoint"] = f"{self.issuer}/register"
        if self.pkce_methods is not None:
            body["code_challenge_methods_supported"] = self.pkce_methods
        if self.advertise_iss is not None:
            body["authorization_response_iss_parameter_supported"] = self.advertise_iss
        if self.scopes_supported is not None:
            body["scopes_supported"] = self.scopes_supported
        if self.cimd:
            body["client_id_metadata_document_supported"] = True
        if self.metadata_padding:
            body["padding"] = "x" * self.metadata_padding
        if self.dpop:
            body["dpop_signing_alg_values_supported"] = ["ES256"]
        body.update(self.metadata_overrides)
        return _json(body)

    def _authorize(self, params: dict[str, str]) -> Response:
        code = secrets.token_urlsafe(16)
        self._codes[code] = params
        query = {"code": code, "state": params.get("state", "")}
        if self.iss_mode == "correct":
            query["iss"] = self.issuer
        elif self.iss_mode == "wrong":
            query["iss"] = "https://evil.example.com"
        elif self.iss_mode == "slash":
            query["iss"] = self.issuer + "/"
        return Response("", status=302,
                        headers={"Location": params["redirect_uri"] + "?" + urlencode(query)})

    def _client_of(self, request: Request, params: dict[str, str]) -> str | None:
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            raw_id, _, raw_secret = base64.b64decode(header[6:]).decode().partition(":")
            client_id, secret = unquote(raw_id), unquote(raw_secret)
            return client_id if self.clients.get(client_id) == secret else None
        if params.get("client_assertion"):
            import jwt
            unverified = jwt.decode(params["client_assertion"],
                                    options={"verify_signature": False})
            key = self.jwt_keys.get(unverified.get("sub", ""))
            if key is None:
                return None
            claims = jwt.decode(params["client_assertion"], key, algorithms=["ES256", "RS256"],
                                audience=self.issuer)
            return str(claims["sub"]) if claims["iss"] == claims["sub"] else None
        client_id = params.get("client_id", "")
        if "client_secret" in params:
            return client_id if self.clients.get(client_id) == params["client_secret"] else None
        if client_id.startswith("https://") or self.clients.get(client_id, "x") is None:
            return client_id  # a public client (CIMD URL or registered with "none")
        return None

    def _token(self, request: Request, params: dict[str, str]) -> Response:
        grant = params.get("grant_type")
        binding = None
        if self.dpop and request.headers.get("DPoP"):
            claims, binding = check_proof(request.headers["DPoP"], "POST",
                                          f"{self.issuer}/token")
            if self.dpop_nonce and claims.get("nonce") != self.dpop_nonce:
                return _json({"error": "use_dpop_nonce"}, 400, {"DPoP-Nonce": self.dpop_nonce})
        if grant == TOKEN_EXCHANGE:  # acting as an enterprise IdP (SEP-990)
            if (params.get("subject_token") not in self.id_tokens
                    or params.get("requested_token_type") != ID_JAG
                    or not params.get("audience") or not params.get("resource")):
                return _json({"error": "invalid_request"}, 400)
            jag = "idjag-" + secrets.token_urlsafe(8)
            self.issued_jags[jag] = (params["audience"], params["resource"])
            return _json({"access_token": jag, "issued_token_type": ID_JAG,
                          "token_type": "N_A"})
        if grant == JWT_BEARER:  # the assertion is the grant (and for a workload, the client)
            trusted = self.trusted_idp.issued_jags if self.trusted_idp else {}
            if params.get("assertion") not in self.workload_jwts | set(trusted):
                return _json({"error": "invalid_grant"}, 400)
            client_id: str | None = params.get("client_id") or "workload"
            if request.headers.get("Authorization"):
                client_id = self._client_of(request, params)
        else:
            client_id = self._client_of(request, params)
        if client_id is None:
            return _json({"error": "invalid_client"}, 401)
        if grant == JWT_BEARER:
            scopes = (params.get("scope") or "").split()
            resource = params.get("resource")
        elif grant == "authorization_code":
            asked = self._codes.pop(params.get("code", ""), None)
            verifier = params.get("code_verifier", "")
            challenge = base64.urlsafe_b64encode(
                hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if asked is None or asked.get("code_challenge") != challenge:
                return _json({"error": "invalid_grant"}, 400)
            scopes = (asked.get("scope") or "").split()
            resource = asked.get("resource")
        elif grant == "refresh_token":
            issued = self._refresh.pop(params.get("refresh_token", ""), None)
            if issued is None:
                return _json({"error": "invalid_grant"}, 400)
            scopes, resource = issued.scopes, issued.resource
        elif grant == "client_credentials":
            scopes = (params.get("scope") or "").split()
            resource = params.get("resource")
        else:
            return _json({"error": "unsupported_grant_type"}, 400)
        token = "at-" + secrets.token_urlsafe(16)
        if self.jwt_tokens:
            token = self.mint(scopes=scopes, audience=resource, client_id=client_id,
                              subject="user-" + client_id, expires_in=self.expires_in)
        issued = Issued(client_id, scopes, resource, self.issuer, binding)
        self.tokens[token] = issued
        body: dict[str, Any] = {"access_token": token,
                                "token_type": "DPoP" if binding else "Bearer",
                                "expires_in": self.expires_in, "scope": " ".join(scopes)}
        if self.refresh and grant in ("authorization_code", "refresh_token"):
            refresh = "rt-" + secrets.token_urlsafe(16)
            self._refresh[refresh] = issued
            body["refresh_token"] = refresh
        return _json(body)


class Protected:
    """``inner`` (a WSGI app: the MCP endpoint) behind bearer tokens of ``auth`` servers.

    ``resource`` is the URL the metadata names (default: this endpoint's); ``scopes`` are
    needed for everything; ``tool_scopes`` add per-tool needs (403 ``insufficient_scope``
    naming them); ``always_forbid`` answers 403 to every authorized request.
    """

    def __init__(self, inner: Any, auth: AuthServer, *, path: str = "/mcp",
                 scopes: list[str] | None = None, scopes_supported: list[str] | None = None,
                 tool_scopes: dict[str, list[str]] | None = None,
                 challenge_scope: bool = True, resource: str | None = None) -> None:
        self.inner = inner
        self.auth = auth
        self.path = path
        self.scopes = scopes or []
        self.scopes_supported = scopes_supported
        self.tool_scopes = tool_scopes or {}
        self.challenge_scope = challenge_scope
        self.resource_override = resource
        self.always_forbid = False
        self.dpop_nonce: str | None = None
        self.jtis: set[str] = set()
        self.refused = 0
        self.server = RunningServer(self)
        self.url = self.server.base + path

    def stop(self) -> None:
        self.server.stop()

    @property
    def prm_url(self) -> str:
        return f"{self.server.base}/.well-known/oauth-protected-resource{self.path}"

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        request = Request(environ)
        if request.path == f"/.well-known/oauth-protected-resource{self.path}":
            body: dict[str, Any] = {"resource": self.resource_override or self.url,
                                    "authorization_servers": [self.auth.issuer]}
            if self.scopes_supported is not None:
                body["scopes_supported"] = self.scopes_supported
            return _json(body)(environ, start_response)
        if request.path != self.path:
            return _json({"error": "not_found"}, 404)(environ, start_response)
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(raw)
        needed = list(self.scopes)
        try:
            message = json.loads(raw) if raw else {}
        except ValueError:
            message = {}
        if isinstance(message, dict) and message.get("method") == "tools/call":
            needed += self.tool_scopes.get(str((message.get("params") or {}).get("name")), [])
        header = request.headers.get("Authorization", "")
        scheme, _, presented = header.partition(" ")
        issued = self.auth.tokens.get(presented) if scheme in ("Bearer", "DPoP") else None
        if issued is not None and issued.dpop_jwk is not None:
            try:
                assert scheme == "DPoP"
                claims, jwk = check_proof(request.headers.get("DPoP", ""), request.method,
                                          self.url, presented)
                assert jwk == issued.dpop_jwk and claims["jti"] not in self.jtis
                self.jtis.add(claims["jti"])
            except Exception:
                self.refused += 1
                return _json({"error": "invalid_token"}, 401, {
                    "WWW-Authenticate": 'DPoP error="invalid_token"'})(environ, start_response)
            if self.dpop_nonce and claims.get("nonce") != self.dpop_nonce:
                self.refused += 1
                return _json({"error": "use_dpop_nonce"}, 401, {
                    "WWW-Authenticate": 'DPoP error="use_dpop_nonce"',
                    "DPoP-Nonce": self.dpop_nonce})(environ, start_response)
        scope = f', scope="{" ".join(needed)}"' if needed and self.challenge_scope else ""
        if issued is None or issued.issuer != self.auth.issuer:
            self.refused += 1
            challenge = f'Bearer resource_metadata="{self.prm_url}"{scope}'
            return _json({"error": "invalid_token"}, 401,
                         {"WWW-Authenticate": challenge})(environ, start_response)
        if self.always_forbid or not set(needed) <= set(issued.scopes):
            self.refused += 1
            challenge = (f'Bearer error="insufficient_scope"{scope}, '
                         f'resource_metadata="{self.prm_url}"')
            return _json({"error": "insufficient_scope"}, 403,
                         {"WWW-Authenticate": challenge})(environ, start_response)
        return self.inner(environ, start_response)
