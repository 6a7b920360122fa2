"""Who the client is to an authorization server, in the specification's order.

1. Pre-registered credentials given to :class:`~mcpsync.auth.OAuth` (``client_id``, and
   ``client_secret`` for a confidential client).
2. A Client ID Metadata Document: when the authorization server advertises
   ``client_id_metadata_document_supported`` and the client was given the HTTPS URL of its
   document, that URL *is* the ``client_id`` (no registration request).
3. Dynamic Client Registration (RFC 7591) at the ``registration_endpoint``.

A registration belongs to the issuer that made it: it is kept per issuer and never sent to
another authorization server (when a server moves to a new one, the client registers
there anew).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .discovery import ServerMetadata
from .errors import RegistrationError
from .fetch import FETCH_ERRORS, Fetcher

CLIENT_AUTH_METHODS = ("client_secret_basic", "client_secret_post", "none")


@dataclass(frozen=True)
class ClientInfo:
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    how: str = "pre-registered"   # "pre-registered", "metadata-document" or "dynamic"

    def to_record(self) -> dict[str, Any]:
        return {"client_id": self.client_id, "client_secret": self.client_secret,
                "token_endpoint_auth_method": self.token_endpoint_auth_method,
                "how": self.how}

    @classmethod
    def from_record(cls, record: Any) -> ClientInfo | None:
        if not isinstance(record, dict) or not isinstance(record.get("client_id"), str):
            return None
        secret = record.get("client_secret")
        method = record.get("token_endpoint_auth_method")
        return cls(record["client_id"], secret if isinstance(secret, str) else None,
                   method if isinstance(method, str) else None,
                   str(record.get("how") or "dynamic"))


def application_type(redirect_uri: str) -> str:
    """``native`` for a loopback or custom-scheme redirect (a CLI, a desktop app), else
    ``web`` (SEP-837: clients must say which they are)."""
    parts = urlsplit(redirect_uri)
    if parts.scheme not in ("http", "https"):
        return "native"
    return "native" if (parts.hostname or "") in ("localhost", "127.0.0.1", "::1") else "web"


def preferred_auth_method(metadata: ServerMetadata, has_secret: bool) -> str:
    """The token endpoint authentication to use (or to register for) with this server:
    among what it lists (RFC 8414's default is ``client_secret_basic``), basic before post
    for a client with a secret; ``none`` for a public one when it is allowed."""
    listed = metadata.listed("token_endpoint_auth_methods_supported")
    supported = listed if listed is not None else ["client_secret_basic"]
    order = (("client_secret_basic", "client_secret_post", "none") if has_secret
             else ("none", "client_secret_basic", "client_secret_post"))
    for method in order:
        if method in supported:
            return method
    return supported[0] if supported else "client_secret_basic"


def register_dynamically(fetcher: Fetcher, metadata: ServerMetadata,
                         client_metadata: dict[str, Any]) -> ClientInfo:
    """RFC 7591 registration; :class:`RegistrationError` when refused or unreadable."""
    endpoint = metadata.registration_endpoint
    if not endpoint:
        raise RegistrationError(
            f"the authorization server {metadata.issuer!r} supports neither Client ID "
            f"Metadata Documents (for this client) nor Dynamic Client Registration, and no "
            f"client_id was given: pass OAuth(client_id=...)")
    body = dict(client_metadata)
    body.setdefault("token_endpoint_auth_method", preferred_auth_method(metadata, False))
    try:
        answer = fetcher.request("POST", endpoint, json_body=body)
    except FETCH_ERRORS as exc:
        raise RegistrationError(f"dynamic client registration at {endpoint} failed: "
                                f"{exc}") from None
    reply = answer.body
    if answer.status not in (200, 201) or reply is None or not isinstance(
            reply.get("client_id"), str):
        code = reply.get("error") if reply else None
        raise RegistrationError(f"dynamic client registration at {endpoint} was refused "
                                f"(HTTP {answer.status}{', ' + str(code) if code else ''})")
    secret = reply.get("client_secret")
    method = reply.get("token_endpoint_auth_method")
    return ClientInfo(reply["client_id"], secret if isinstance(secret, str) else None,
                      method if isinstance(method, str) else None, "dynamic")
