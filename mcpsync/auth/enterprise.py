"""Enterprise-managed authorization (SEP-990): the user's enterprise identity provider
vouches for them, so the MCP client needs no browser.

Two token requests: at the IdP, an RFC 8693 token exchange of the user's ID token for an
Identity Assertion JWT Authorization Grant (ID-JAG) addressed to the MCP server's
authorization server and resource; at that authorization server, the RFC 7523 JWT-bearer
grant with the ID-JAG, authenticated as the pre-registered client.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import quote

from .errors import TokenRequestError
from .fetch import FETCH_ERRORS, Fetcher

TOKEN_EXCHANGE_GRANT: Final = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE: Final = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE: Final = "urn:ietf:params:oauth:token-type:id-jag"


@dataclass(frozen=True)
class EnterpriseIdP:
    """The identity provider side: where to exchange, as which IdP client, and the user's
    ID token (or a callable returning a current one)."""

    token_endpoint: str
    client_id: str
    id_token: str | Callable[[], str] = field(repr=False)
    client_secret: str | None = field(default=None, repr=False)

    def exchange(self, fetcher: Fetcher, audience: str, resource: str,
                 scope: str | None) -> str:
        """The ID-JAG for ``audience`` (the authorization server's issuer) and
        ``resource``; :class:`TokenRequestError` when the IdP refuses."""
        subject = self.id_token() if callable(self.id_token) else self.id_token
        form = {"grant_type": TOKEN_EXCHANGE_GRANT, "subject_token": subject,
                "subject_token_type": ID_TOKEN_TYPE, "requested_token_type": ID_JAG_TYPE,
                "audience": audience, "resource": resource}
        if scope:
            form["scope"] = scope
        headers: dict[str, str] = {}
        if self.client_secret is not None:
            pair = f"{quote(self.client_id, safe='')}:{quote(self.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        else:
            form["client_id"] = self.client_id
        try:
            answer = fetcher.request("POST", self.token_endpoint, data=form, headers=headers)
        except FETCH_ERRORS as exc:
            raise TokenRequestError(f"the token exchange at {self.token_endpoint} failed: "
                                    f"{exc}") from None
        body = answer.body
        if (answer.status != 200 or body is None
                or not isinstance(body.get("access_token"), str)
                or body.get("issued_token_type") not in (None, ID_JAG_TYPE)):
            code = body.get("error") if body else None
            code = code if isinstance(code, str) else None
            raise TokenRequestError(
                f"the identity provider {self.token_endpoint} refused the token exchange "
                f"(HTTP {answer.status}{', ' + code if code else ''})", code)
        return str(body["access_token"])
