"""``ResourceServer``: what an MCP endpoint needs to be an OAuth 2.1 protected resource.

It knows this resource's URL, its authorization servers and scopes (published as RFC
9728 Protected Resource Metadata), checks the ``Authorization: Bearer`` header of each
request with a :class:`~mcpsync.auth.server.TokenVerifier`, and builds the RFC 6750
``WWW-Authenticate`` challenges (401 for no/bad token, 403 ``insufficient_scope``) that
let a client discover where to get a token and which scopes to ask for. The WSGI app
(``server.wsgi_app(auth=...)``) does the serving; this class holds no state per request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .verify import NO_PRINCIPAL, AccessToken, InvalidTokenError, TokenVerifier, expired

logger = logging.getLogger("mcpsync.auth.server")

WELL_KNOWN = "/.well-known/oauth-protected-resource"
MAX_TOKEN_CHARS = 16 * 1024  # a header longer than this is refused unread by the verifier


#: The error of a :class:`Refusal` for a verifier that raised: not the token's fault.
SERVER_ERROR = "server_error"


@dataclass(frozen=True)
class Refusal:
    """Why a request is refused: the HTTP status, the OAuth error code (``None`` when no
    token was sent, per RFC 6750 §3.1; :data:`SERVER_ERROR` when the verifier failed)
    and the ``WWW-Authenticate`` value (empty when there is no challenge to answer)."""

    status: str
    error: str | None
    challenge: str


def _redacted(exc: BaseException, token: str) -> str:
    """``exc``'s traceback and message with ``token`` replaced wherever it occurs, and so
    is each of its dot-separated parts (a JWT's header, claims, signature) long enough
    to be a secret, which a parser's message may quote alone."""
    import traceback

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    parts = {part for part in token.split(".") if len(part) >= 8}
    for secret in sorted({token, *parts} - {""}, key=len, reverse=True):
        text = text.replace(secret, "[token redacted]")
    return text


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ResourceServer:
    """The protection of one MCP endpoint.

    ``verifier``: checks tokens. ``resource``: this endpoint's canonical URL, e.g.
    ``https://mcp.example.com/mcp`` (the ``aud`` tokens must carry, RFC 8707; give it
    explicitly behind a proxy: the URL a client uses is not what the WSGI server sees).
    ``authorization_servers``: issuer URLs clients may get tokens from.
    ``scopes_supported``: published in the metadata. ``required_scopes``: needed for every
    request (and named in the 401 challenge, so clients ask for them).
    ``resource_name``/``resource_documentation``: optional metadata fields.
    """

    def __init__(self, verifier: TokenVerifier, *, resource: str,
                 authorization_servers: Iterable[str],
                 scopes_supported: Iterable[str] | None = None,
                 required_scopes: Iterable[str] = (),
                 resource_name: str | None = None,
                 resource_documentation: str | None = None) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError(f"resource must be an absolute http(s) URL without a fragment, "
                             f"not {resource!r}")
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        if not self.authorization_servers:
            raise ValueError("authorization_servers must name at least one issuer")
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.required_scopes = tuple(required_scopes)
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        #: Where the metadata is served: path-suffixed (RFC 9728 §3.1) and at the root.
        self.metadata_paths = tuple(dict.fromkeys((WELL_KNOWN + path, WELL_KNOWN)))
        self.metadata_url = origin + WELL_KNOWN + path

    # -- metadata ------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        body: dict[str, Any] = {"resource": self.resource,
                                "authorization_servers": self.authorization_servers,
                                "bearer_methods_supported": ["header"]}
        if self.scopes_supported is not None:
            body["scopes_supported"] = self.scopes_supported
        if self.resource_name:
            body["resource_name"] = self.resource_name
        if self.resource_documentation:
            body["resource_documentation"] = self.resource_documentation
        return body

    def metadata_json(self) -> bytes:
        return json.dumps(self.metadata()).encode()

    # -- checking a request --------------------------------------------------------------

    def authenticate(self, authorization: str | None) -> AccessToken | Refusal:
        """The verified token of an ``Authorization`` header value, or the refusal."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if not authorization:
            return self.refusal("401 Unauthorized", None, self.required_scopes)
        if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
            return self.refusal("401 Unauthorized", "invalid_request", self.required_scopes)
        try:
            verified = self.verifier.verify(token)
        except InvalidTokenError as exc:  # a refusal the verifier explains to the client
            return self.refusal("401 Unauthorized", "invalid_token", self.required_scopes,
                                exc.description)
        except Exception as exc:
            # A bug in the verifier (or what it calls), not a bad token: a 500, as the
            # official SDKs answer it. An invalid_token 401 would send the client off to
            # get a new token and hide the bug; the log has the whole story, token
            # redacted (an exception's message or a frame may quote it).
            logger.error("mcpsync: the token verifier %s raised %s; the request was "
                         "answered 500 (a bug in the verifier, not a bad token):\n%s",
                         type(self.verifier).__name__, type(exc).__name__,
                         _redacted(exc, token))
            return Refusal("500 Internal Server Error", SERVER_ERROR, "")
        if verified is None or expired(verified):
            return self.refusal("401 Unauthorized", "invalid_token", self.required_scopes)
        if verified.names_nobody:  # whatever the verifier: its principal would be shared
            return self.refusal("401 Unauthorized", "invalid_token", self.required_scopes,
                                NO_PRINCIPAL)
        if not verified.has_scopes(self.required_scopes):
            return self.refusal("403 Forbidden", "insufficient_scope", self.required_scopes)
        return verified

    def refusal(self, status: str, error: str | None, scopes: Iterable[str],
                description: str | None = None) -> Refusal:
        parts = []
        if error is not None:
            parts.append(f"error={_quoted(error)}")
        if description is not None:
            parts.append(f"error_description={_quoted(description)}")
        scope = " ".join(dict.fromkeys(scopes))
        if scope:
            parts.append(f"scope={_quoted(scope)}")
        parts.append(f"resource_metadata={_quoted(self.metadata_url)}")
        return Refusal(status, error, "Bearer " + ", ".join(parts))

    def insufficient_scope(self, token: AccessToken, needed: Iterable[str]) -> Refusal:
        """The 403 for a call needing ``needed``: the challenge names them (and the scopes
        every request needs); a client stepping up adds them to what it holds."""
        return self.refusal("403 Forbidden", "insufficient_scope",
                            [*self.required_scopes, *needed])
