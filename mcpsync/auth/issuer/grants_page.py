"""The users' view, framework-neutral: what each client was granted, and revoking it.

A small page listing the signed-in user's live grants (client, scopes, resource, since
when) with a "Revoke" button each. The revoke form carries a CSRF token (HMAC of the user
and the grant, like the consent form's), so another site cannot revoke in the user's
name; a grant of another user is refused like one that does not exist. The Flask
binding serves it; Django's admin shows the same records.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import time
from typing import TYPE_CHECKING

from .consent import CONSENT_HEADERS

if TYPE_CHECKING:
    from .server import AuthorizationServer, IssuerUser

__all__ = ["render_grants", "revoke_for_user"]


def _token(secret: bytes, subject: str, grant_id: str) -> str:
    return hmac.new(secret, f"revoke|{subject}|{grant_id}".encode(),
                    hashlib.sha256).hexdigest()


def render_grants(server: AuthorizationServer, user: IssuerUser, action: str) -> str:
    e = html.escape
    rows = []
    for grant in server.store.grants_of(user.subject):
        client = server.client(grant.client_id) if not grant.client_id.startswith(
            ("http://", "https://")) else None  # never fetch a document to draw a page
        name = client.name if client is not None else grant.client_id
        since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(grant.created_at))
        rows.append(
            f"<tr><td>{e(name)}<br><small><code>{e(grant.client_id)}</code></small></td>"
            f"<td>{e(grant.scope) or '-'}</td><td><code>{e(grant.resource)}</code></td>"
            f"<td>{e(since)}</td><td><form method=\"post\" action=\"{e(action)}\">"
            f"<input type=\"hidden\" name=\"grant_id\" value=\"{e(grant.grant_id)}\">"
            f"<input type=\"hidden\" name=\"csrf_token\" "
            f"value=\"{_token(server.secret_key, user.subject, grant.grant_id)}\">"
            f"<button type=\"submit\">Revoke</button></form></td></tr>")
    body = ("<table><tr><th>Application</th><th>Scopes</th><th>Resource</th><th>Since</th>"
            "<th></th></tr>" + "".join(rows) + "</table>") if rows else \
        "<p>No application has access.</p>"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Connected '
            f'applications</title></head><body style="font-family: sans-serif">'
            f"<h1>Applications with access to your account</h1>{body}</body></html>")


def revoke_for_user(server: AuthorizationServer, user: IssuerUser, grant_id: str,
                    token: str) -> bool:
    """Revoke the user's grant ``grant_id`` if the form's ``token`` is right and the
    grant is theirs; whether it was revoked."""
    expected = _token(server.secret_key, user.subject, grant_id)
    if not hmac.compare_digest(expected, token):
        return False
    grant = server.store.get_grant(grant_id)
    if grant is None or grant.subject != user.subject:
        return False
    server.store.revoke_grant(grant_id)
    return True


HEADERS = CONSENT_HEADERS
