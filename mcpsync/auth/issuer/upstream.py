"""Signing users in through another identity provider, then issuing this site's tokens.

GitHub, Google and most OpenID Connect providers do not let an MCP client register
itself (no dynamic registration, no metadata documents), so a hosted assistant cannot use
them directly. The site stands in front: its own authorization server does registration,
consent and tokens, and its *login* is the upstream provider's: :class:`UpstreamLogin`
sends the browser there (authorization code + PKCE, through authlib's client), reads who
came back (the provider's userinfo, with the access token it just issued, over its TLS
connection), and keeps that user in a signed cookie of its own. Plug it into the server
as ``current_user=upstream.current_user, login_url=upstream.login_url`` and route its two
paths (:func:`with_upstream`, or call :meth:`UpstreamLogin.handle` from a view).

The upstream token never leaves the site and is not kept: the MCP client gets this
site's tokens, bound to this site's MCP endpoint.

Cookies: the flow cookie (state, PKCE verifier, where to go back) lives 10 minutes; the
user cookie ``session_seconds`` (8 hours). Both are HMAC-signed with the site's secret,
``HttpOnly``, ``SameSite=Lax``, ``Secure`` on https. The callback must carry the
``state`` of the browser's own flow cookie, so another site cannot log the user in as
someone else (login CSRF).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import urlencode, urlsplit

from .server import IssuerRequest, IssuerResponse, IssuerUser, error_page

__all__ = ["UpstreamLogin", "UpstreamProvider", "with_upstream"]

#: Seconds each request to the provider may take (connect and answer).
UPSTREAM_TIMEOUT = 10.0
FLOW_COOKIE = "mcpsync_upstream_flow"
USER_COOKIE = "mcpsync_upstream_user"
FLOW_SECONDS = 600


@dataclass(frozen=True)
class UpstreamProvider:
    """Where a provider's endpoints are, and how its userinfo names a user
    (``subject_claim``, ``name_claims``: the first present is shown)."""

    name: str
    authorize_url: str
    token_url: str
    userinfo_url: str
    scope: str
    subject_claim: str = "sub"
    name_claims: tuple[str, ...] = ("name", "preferred_username", "email")


def _sign(secret: bytes, payload: dict[str, Any]) -> str:
    data = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    mac = hmac.new(secret, data.encode(), hashlib.sha256).hexdigest()
    return f"{data}.{mac}"


def _unsign(secret: bytes, value: str | None) -> dict[str, Any] | None:
    data, _, mac = (value or "").rpartition(".")
    if not data or not hmac.compare_digest(
            hmac.new(secret, data.encode(), hashlib.sha256).hexdigest(), mac):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)))
    except ValueError:
        return None
    if not isinstance(payload, dict) or payload.get("exp", 0) < time.time():
        return None
    return payload


def _cookies(request: IssuerRequest) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    header = next((v for k, v in request.headers.items() if k.lower() == "cookie"), "")
    try:
        jar.load(header)
    except Exception:  # a malformed Cookie header is no cookie
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


class UpstreamLogin:
    """The site's login, done by ``provider``. ``site_url``: this site's URL (the
    callback is ``<site_url><path>/callback``, which you register at the provider).
    ``secret_key``: signs the cookies (the site's secret; at least 32 bytes)."""

    def __init__(self, provider: UpstreamProvider, *, client_id: str, client_secret: str,
                 site_url: str, secret_key: str | bytes, path: str = "/login/upstream",
                 session_seconds: float = 8 * 3600.0) -> None:
        key = secret_key.encode() if isinstance(secret_key, str) else bytes(secret_key)
        if len(key) < 32:
            raise ValueError("secret_key must be at least 32 bytes")
        self.provider = provider
        self.client_id = client_id
        self.client_secret = client_secret
        self.site_url = site_url.rstrip("/")
        self.secret = key
        self.path = path.rstrip("/")
        self.session_seconds = session_seconds
        self.secure = self.site_url.startswith("https://")

    # -- presets ------------------------------------------------------------------------

    @classmethod
    def github(cls, **options: Any) -> UpstreamLogin:
        """GitHub (OAuth, not OpenID Connect): the user is its numeric ``id``."""
        provider = UpstreamProvider("github", "https://github.com/login/oauth/authorize",
                                    "https://github.com/login/oauth/access_token",
                                    "https://api.github.com/user", "read:user",
                                    subject_claim="id", name_claims=("name", "login"))
        return cls(provider, **options)

    @classmethod
    def google(cls, **options: Any) -> UpstreamLogin:
        return cls.oidc("https://accounts.google.com", name="google", **options)

    @classmethod
    def oidc(cls, issuer: str, *, name: str = "oidc", scope: str = "openid profile email",
             **options: Any) -> UpstreamLogin:
        """Any OpenID Connect provider, by its issuer URL (discovery is read now, once,
        and its ``issuer`` must be exactly ``issuer``)."""
        import requests

        url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        answer = requests.get(url, timeout=UPSTREAM_TIMEOUT)
        answer.raise_for_status()
        document = answer.json()
        if document.get("issuer") != issuer:
            raise ValueError(f"the discovery document at {url} is for another issuer")
        provider = UpstreamProvider(name, document["authorization_endpoint"],
                                    document["token_endpoint"],
                                    document["userinfo_endpoint"], scope)
        return cls(provider, **options)

    # -- the hooks of AuthorizationServer ---------------------------------------------

    def current_user(self, request: IssuerRequest) -> IssuerUser | None:
        payload = _unsign(self.secret, _cookies(request).get(USER_COOKIE))
        if payload is None or not isinstance(payload.get("sub"), str):
            return None
        return IssuerUser(subject=payload["sub"], name=payload.get("name"),
                          claims={"idp": self.provider.name})

    def login_url(self, request: IssuerRequest, next_url: str) -> str:
        parts = urlsplit(next_url)
        back = parts.path + (f"?{parts.query}" if parts.query else "")
        return f"{self.site_url}{self.path}?{urlencode({'next': back})}"

    # -- the two routes -----------------------------------------------------------------

    def handle(self, request: IssuerRequest) -> IssuerResponse | None:
        """Answer ``<path>`` (start) and ``<path>/callback``; ``None`` for other paths."""
        path = urlsplit(request.url).path
        if path == self.path:
            return self._start(request)
        if path == self.path + "/callback":
            return self._callback(request)
        return None

    def _session(self) -> Any:
        from authlib.integrations.requests_client import (  # type: ignore[import-untyped]
            OAuth2Session,
        )

        return OAuth2Session(self.client_id, self.client_secret, scope=self.provider.scope,
                             redirect_uri=f"{self.site_url}{self.path}/callback",
                             code_challenge_method="S256")

    def _cookie(self, name: str, value: str, seconds: float) -> tuple[str, str]:
        flags = f"; Max-Age={int(seconds)}; Path=/; HttpOnly; SameSite=Lax"
        return ("Set-Cookie", f"{name}={value}{flags}{'; Secure' if self.secure else ''}")

    def _start(self, request: IssuerRequest) -> IssuerResponse:
        next_url = request.query.get("next", ["/"])[0]
        if not next_url.startswith("/") or next_url.startswith(("//", "/\\")):
            next_url = "/"
        verifier = secrets.token_urlsafe(48)
        url, state = self._session().create_authorization_url(
            self.provider.authorize_url, code_verifier=verifier)
        flow = _sign(self.secret, {"state": state, "verifier": verifier, "next": next_url,
                                   "exp": time.time() + FLOW_SECONDS})
        return IssuerResponse(302, [("Location", url), ("Cache-Control", "no-store"),
                                    self._cookie(FLOW_COOKIE, flow, FLOW_SECONDS)])

    def _callback(self, request: IssuerRequest) -> IssuerResponse:
        flow = _unsign(self.secret, _cookies(request).get(FLOW_COOKIE))
        state = request.query.get("state", [""])[0]
        if flow is None or not hmac.compare_digest(str(flow.get("state")), state):
            return error_page("Sign-in failed", "The sign-in expired or was not started "
                              "here. Start again.")
        if "code" not in request.query:
            return error_page("Sign-in failed", "The identity provider did not sign you in.")
        session = self._session()
        try:
            session.fetch_token(self.provider.token_url, timeout=UPSTREAM_TIMEOUT,
                                code=request.query["code"][0],
                                code_verifier=flow["verifier"],
                                headers={"Accept": "application/json"})
            answer = session.get(self.provider.userinfo_url, timeout=UPSTREAM_TIMEOUT)
            answer.raise_for_status()
            info = answer.json()
        except Exception as exc:  # the provider refused or failed: a page, not a 500
            import logging

            logging.getLogger("mcpsync.auth.issuer").warning(
                "mcpsync: sign-in through %s failed: %s", self.provider.name,
                type(exc).__name__)
            return error_page("Sign-in failed", "The identity provider could not be "
                              "reached or refused the sign-in. Try again.")
        subject = info.get(self.provider.subject_claim) if isinstance(info, dict) else None
        if subject is None or subject == "":
            return error_page("Sign-in failed", "The identity provider did not say who "
                              "you are.")
        name = next((str(info[c]) for c in self.provider.name_claims if info.get(c)), None)
        user = _sign(self.secret, {"sub": f"{self.provider.name}:{subject}", "name": name,
                                   "exp": time.time() + self.session_seconds})
        return IssuerResponse(303, [("Location", self.site_url + str(flow["next"])),
                                    ("Cache-Control", "no-store"),
                                    self._cookie(FLOW_COOKIE, "", 0),
                                    self._cookie(USER_COOKIE, user, self.session_seconds)])


def with_upstream(app: Callable[..., Iterable[bytes]],
                  upstream: UpstreamLogin) -> Callable[..., Iterable[bytes]]:
    """``app`` with ``upstream``'s two routes answered in front of it (WSGI)."""
    from .wsgi import _send, read_request

    def layered(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
        if path in (upstream.path, upstream.path + "/callback"):
            answered = upstream.handle(read_request(environ, upstream.site_url))
            if answered is not None:
                return _send(answered, start_response)
        return app(environ, start_response)

    return layered
