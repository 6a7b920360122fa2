"""Clients as authlib sees them, and the one check every client's metadata passes.

Pre-registered, dynamically registered (RFC 7591) and metadata-document clients are all
:class:`~mcpsync.auth.issuer.store.ClientRecord`\\ s and pass :func:`check_metadata`, so
a redirect URI or ``application_type`` rule cannot differ by how the client arrived.
"""

from __future__ import annotations

import hmac
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import ClientMixin  # type: ignore[import-untyped]

from .store import ClientRecord, secret_hash

__all__ = ["ClientMetadataError", "IssuerClient", "check_metadata"]

#: Methods a client may authenticate at the token endpoint with.
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
GRANT_TYPES = ("authorization_code", "refresh_token")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Bounds on what a client may say about itself (it is shown on the consent page).
MAX_NAME_CHARS = 200
MAX_REDIRECT_URIS = 16
MAX_URI_CHARS = 2000


class ClientMetadataError(ValueError):
    """Metadata a client may not have; ``error`` is the RFC 7591 error code."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def _is_loopback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and (parts.hostname or "") in LOOPBACK_HOSTS


def check_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` with its defaults filled in, or :class:`ClientMetadataError`.

    Redirect URIs: absolute, no fragment; HTTPS, or a loopback ``http`` URI, or (native
    applications only) a private-use scheme; ``web`` applications may not use loopback or
    private-use schemes (MCP 2026-07-28 "Client Registration": ``application_type``; OAuth
    2.1 §8.4). Only the code and refresh grants and the ``code`` response type."""
    uris = metadata.get("redirect_uris")
    if (not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS
            or not all(isinstance(uri, str) and 0 < len(uri) <= MAX_URI_CHARS
                       for uri in uris)):
        raise ClientMetadataError("invalid_redirect_uri", "redirect_uris must list 1 to "
                                  f"{MAX_REDIRECT_URIS} URIs")
    application = metadata.get("application_type", "web")
    if application not in ("web", "native"):
        raise ClientMetadataError("invalid_client_metadata",
                                  "application_type must be web or native")
    for uri in uris:
        parts = urlsplit(uri)
        if not parts.scheme or parts.fragment or any(c in uri for c in "\r\n\t <>\"'"):
            raise ClientMetadataError("invalid_redirect_uri", "a redirect URI is not valid")
        if parts.scheme == "https" and parts.hostname and not _is_loopback(uri):
            continue
        if _is_loopback(uri):
            if application == "web":
                raise ClientMetadataError("invalid_redirect_uri", "a web application's "
                                          "redirect URIs must use https")
            continue
        if parts.scheme in ("http", "https", "javascript", "data", "file", "vbscript"):
            raise ClientMetadataError("invalid_redirect_uri", "a redirect URI must use "
                                      "https or be a loopback URI")
        if application == "web" or "." not in parts.scheme:
            raise ClientMetadataError("invalid_redirect_uri", "a private-use scheme must be "
                                      "a reverse domain name, for native applications only")
    method = metadata.get("token_endpoint_auth_method", "client_secret_basic")
    if method not in AUTH_METHODS:
        raise ClientMetadataError("invalid_client_metadata",
                                  f"token_endpoint_auth_method must be one of {AUTH_METHODS}")
    grants = metadata.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not set(grants) <= set(GRANT_TYPES):
        raise ClientMetadataError("invalid_client_metadata", "grant_types may only be "
                                  "authorization_code and refresh_token")
    responses = metadata.get("response_types", ["code"])
    if responses != ["code"]:
        raise ClientMetadataError("invalid_client_metadata", "response_types must be [code]")
    name = metadata.get("client_name", "")
    if not isinstance(name, str) or len(name) > MAX_NAME_CHARS:
        raise ClientMetadataError("invalid_client_metadata",
                                  f"client_name must be a string of at most {MAX_NAME_CHARS}")
    checked = dict(metadata)
    checked.update(application_type=application, token_endpoint_auth_method=method,
                   grant_types=list(grants), response_types=["code"])
    for key in ("client_uri", "logo_uri", "tos_uri", "policy_uri"):
        value = checked.get(key)
        if value is not None and not (isinstance(value, str) and len(value) <= MAX_URI_CHARS
                                      and urlsplit(value).scheme == "https"):
            checked.pop(key)  # a link shown to the user: https only, or not at all
    return checked


def redirect_matches(registered: str, presented: str, application: str) -> bool:
    """Exact string comparison; for a native application's loopback IP literal the port
    may differ (OAuth 2.1 §8.4.2: the port is picked when the app starts)."""
    if hmac.compare_digest(registered.encode(), presented.encode()):
        return True
    if application != "native":
        return False
    a, b = urlsplit(registered), urlsplit(presented)
    return (a.scheme == b.scheme == "http" and a.hostname == b.hostname
            and a.hostname in ("127.0.0.1", "::1") and a.path == b.path
            and a.query == b.query and not b.username and b.port is not None)


class IssuerClient(ClientMixin):  # type: ignore[misc]
    """A :class:`ClientRecord` with the methods authlib's grants call."""

    def __init__(self, record: ClientRecord, scopes_supported: list[str]) -> None:
        self.record = record
        self.metadata = record.metadata
        self._scopes = scopes_supported

    @property
    def name(self) -> str:
        return str(self.metadata.get("client_name") or self.record.client_id)

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_default_redirect_uri(self) -> str | None:
        return None  # MCP clients send redirect_uri; never guess where a code goes

    def get_allowed_scope(self, scope: str | None) -> str:
        asked = (scope or "").split()
        return " ".join(s for s in dict.fromkeys(asked) if s in self._scopes)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        application = str(self.metadata.get("application_type", "web"))
        return any(redirect_matches(uri, redirect_uri, application)
                   for uri in self.metadata.get("redirect_uris", []))

    def check_client_secret(self, client_secret: str) -> bool:
        if self.record.secret_hash is None:
            return False
        return hmac.compare_digest(self.record.secret_hash, secret_hash(client_secret))

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        expected = self.metadata.get("token_endpoint_auth_method", "client_secret_basic")
        return bool(method == expected)

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.metadata.get("grant_types", ["authorization_code"])
