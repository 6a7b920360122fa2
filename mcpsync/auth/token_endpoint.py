"""Requests to an authorization server's token endpoint, whatever the grant.

Every grant ends in the same POST: the client authenticates (no secret, a secret as
``client_secret_basic`` or ``client_secret_post``, or ``private_key_jwt``), a DPoP proof
goes along when the server offers DPoP (and is sent again once with the nonce the server
asks for, RFC 9449 §8), and the answer must hold a Bearer (or, when asked, DPoP) access
token. :class:`TokenEndpoint` does that, and owns the DPoP key the tokens are bound to.
"""

from __future__ import annotations

import base64
import threading
from urllib.parse import quote

from .assertion import ASSERTION_TYPE, client_assertion
from .discovery import ServerMetadata
from .dpop import ALGORITHM as DPOP_ALGORITHM
from .dpop import DPoPKey
from .dpop import available as dpop_available
from .errors import TokenRequestError
from .fetch import FETCH_ERRORS, Fetcher
from .registration import ClientInfo, preferred_auth_method
from .tokens import Token


class TokenEndpoint:
    """Token requests for one OAuth object. ``dpop`` is the ``OAuth(dpop=)`` choice
    (``None``: DPoP when the authorization server offers ES256 and PyJWT is installed;
    ``False``: never). ``private_key_pem`` (with ``signing_algorithm``) signs
    ``private_key_jwt`` client assertions. Thread-safe."""

    def __init__(self, fetcher: Fetcher, *, dpop: bool | None,
                 private_key_pem: str | None = None, signing_algorithm: str = "RS256") -> None:
        self._fetcher = fetcher
        self.dpop = dpop
        self._private_key_pem = private_key_pem
        self._signing_algorithm = signing_algorithm
        self._lock = threading.Lock()
        self._dpop_key: DPoPKey | None = None

    @property
    def dpop_key(self) -> DPoPKey | None:
        """The DPoP key, once a token request used DPoP (None before, or without DPoP)."""
        return self._dpop_key

    def request(self, metadata: ServerMetadata, client: ClientInfo | None,
                data: dict[str, str], previous: Token | None = None) -> Token:
        """POST ``data`` (the grant) to ``metadata``'s token endpoint as ``client`` (None:
        the grant itself authenticates) and return the token it issues. ``previous`` is
        the token a refresh replaces (its refresh token is kept when no new one comes)."""
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
        dpop, budget = self.dpop_for(metadata), self._fetcher.deadline(f"the {grant} request")
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

    def dpop_for(self, metadata: ServerMetadata) -> DPoPKey | None:
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
