"""The authorization code grant with PKCE: the one flow with a person (or a stand-in) in it.

The client is identified first (pre-registered ``client_id``; else a Client ID Metadata
Document when the authorization server supports one; else Dynamic Client Registration),
once per issuer. Then the authorization URL goes to the redirect handler, whose answer
(the redirect URL, or its parts) is checked (``error``, ``state``, RFC 9207 ``iss``)
before the code is exchanged at the token endpoint with the PKCE verifier.
"""

from __future__ import annotations

from urllib.parse import urlencode

from .discovery import ServerMetadata
from .errors import AuthorizationError, AuthorizationResponseError, PKCENotSupportedError
from .fetch import Fetcher
from .pkce import PKCE, new_state
from .redirect import parse_callback
from .registration import ClientInfo, application_type, register_dynamically
from .servers import ServerState
from .settings import OAuthSettings
from .token_endpoint import TokenEndpoint
from .tokens import Token


class CodeFlow:
    """Runs the code grant for one OAuth object; its state is the server's (the
    registrations kept in a :class:`~.servers.ServerState`)."""

    def __init__(self, settings: OAuthSettings, fetcher: Fetcher,
                 tokens: TokenEndpoint) -> None:
        self._settings = settings
        self._fetcher = fetcher
        self._tokens = tokens

    def grant(self, server: ServerState, metadata: ServerMetadata, resource: str,
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
        redirect_uri = self._settings.redirect_uri
        pkce = PKCE.new()
        state = new_state()
        params = {"response_type": "code", "client_id": client.client_id,
                  "redirect_uri": redirect_uri, "code_challenge": pkce.challenge,
                  "code_challenge_method": PKCE.method, "state": state, "resource": resource}
        if scope:
            params["scope"] = scope
        endpoint = metadata.authorization_endpoint
        authorization_url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)
        returned = self._settings.redirect_handler(authorization_url)
        callback = parse_callback(returned)
        if callback.error:
            raise AuthorizationResponseError(
                f"the authorization server refused: {callback.error}"
                + (f" ({callback.error_description})" if callback.error_description else ""))
        if callback.state != state:
            raise AuthorizationResponseError("the authorization response's state does not "
                                             "match the request's: refusing it")
        _check_iss(metadata, callback.iss, isinstance(returned, tuple))
        if not callback.code:
            raise AuthorizationResponseError("the authorization response carries no code")
        data = {"grant_type": "authorization_code", "code": callback.code,
                "redirect_uri": redirect_uri, "code_verifier": pkce.verifier,
                "resource": resource}
        return self._tokens.request(metadata, client, data)

    def _client_for(self, server: ServerState, metadata: ServerMetadata) -> ClientInfo:
        issuer = metadata.issuer
        client = server.clients.get(issuer)
        if client is not None:
            return client
        settings = self._settings
        if settings.client_id is not None:
            client = ClientInfo(settings.client_id, settings.client_secret,
                                settings.token_endpoint_auth_method, "pre-registered")
        elif (settings.client_metadata_url
              and metadata.raw.get("client_id_metadata_document_supported") is True):
            client = ClientInfo(settings.client_metadata_url, None, "none", "metadata-document")
        else:
            body = {"client_name": settings.client_name,
                    "redirect_uris": [settings.redirect_uri],
                    "grant_types": ["authorization_code", "refresh_token"],
                    "response_types": ["code"],
                    "application_type": application_type(settings.redirect_uri),
                    **settings.client_metadata}
            client = register_dynamically(self._fetcher, metadata, body)
        server.clients[issuer] = client
        return client


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
