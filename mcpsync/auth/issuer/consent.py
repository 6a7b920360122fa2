"""The consent page: what it shows, its CSRF token, and the headers it is served with.

The page is the user's only chance to see *which* client asks for *what*, and the one
form on the site whose submission hands out a code, so:

* **Everything a client supplied is escaped.** Its name, id, redirect URI and the scopes
  come from the client (a registration, a metadata document: anyone on the internet), so
  they are data, never markup. The built-in page escapes each one; the Jinja2 and Django
  templates rely on their autoescaping (never mark these values safe).
* **CSRF.** The form carries a token: an HMAC, under the server's secret, of the
  signed-in user, the exact authorization request and an expiry. A POST without it, with
  another user's, another request's or an expired one is refused (403): another site
  cannot submit "approve" in the user's name, nor swap the request under the token.
* **No framing.** ``X-Frame-Options: DENY`` and ``Content-Security-Policy:
  frame-ancestors 'none'``: a page of another site cannot show this one in a frame and
  trick the user into clicking "Allow" (clickjacking). Also ``Cache-Control: no-store``
  and ``Referrer-Policy: no-referrer`` (the URL carries the request).
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CONSENT_HEADERS", "ConsentView", "csrf_token", "csrf_valid", "render_builtin"]

#: Headers of every consent page and of the authorization endpoint's own pages.
CONSENT_HEADERS: tuple[tuple[str, str], ...] = (
    ("X-Frame-Options", "DENY"),
    # No form-action: the form's answer redirects to the client (any scheme), which
    # form-action would govern too.
    ("Content-Security-Policy", "frame-ancestors 'none'; default-src 'none'; "
                                "style-src 'self' 'unsafe-inline'; img-src 'self' https:"),
    ("Cache-Control", "no-store"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
)

#: Seconds a consent form may be submitted after it was shown.
CSRF_SECONDS = 600


@dataclass(frozen=True)
class ConsentView:
    """What a consent template is given (strings from the client: escape them)."""

    client_id: str
    client_name: str
    client_uri: str | None
    redirect_uri: str
    scopes: tuple[str, ...]
    resource: str
    user_name: str
    action: str  # where the form posts
    fields: tuple[tuple[str, str], ...]  # hidden fields: the request and the CSRF token
    loopback_warning: bool  # a loopback redirect: any local program could be the client


def _request_digest(params: Mapping[str, str]) -> str:
    canonical = json.dumps(sorted(params.items()), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def csrf_token(secret: bytes, subject: str, params: Mapping[str, str],
               now: float | None = None) -> str:
    """The token of a consent form: bound to the user, the request and an expiry."""
    expires = int((time.time() if now is None else now) + CSRF_SECONDS)
    message = f"{expires}|{subject}|{_request_digest(params)}".encode()
    mac = hmac.new(secret, message, hashlib.sha256).hexdigest()
    return f"{expires}.{mac}"


def csrf_valid(secret: bytes, token: str | None, subject: str,
               params: Mapping[str, str]) -> bool:
    expires, _, mac = (token or "").partition(".")
    if not expires.isdigit() or int(expires) < time.time():
        return False
    message = f"{expires}|{subject}|{_request_digest(params)}".encode()
    expected = hmac.new(secret, message, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, mac)


def render_builtin(view: ConsentView) -> str:
    """The plain built-in page (used when the site gives no template)."""
    e = html.escape
    scopes = "".join(f"<li><code>{e(scope)}</code></li>" for scope in view.scopes) or \
        "<li>no particular scope</li>"
    hidden = "".join(f'<input type="hidden" name="{e(name)}" value="{e(value)}">'
                     for name, value in view.fields)
    warning = ("<p><strong>This application runs on a computer, not a website: only allow "
               "it if you started it yourself.</strong></p>" if view.loopback_warning else "")
    link = (f' (<a href="{e(view.client_uri)}" rel="noopener noreferrer">'
            f"{e(view.client_uri)}</a>)" if view.client_uri else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorize {e(view.client_name)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: sans-serif; max-width: 36em; margin: 2em auto">
<h1>Authorize <span class="client-name">{e(view.client_name)}</span>?</h1>
<p>Signed in as <strong>{e(view.user_name)}</strong>.</p>
<p>The application <strong>{e(view.client_name)}</strong>{link}
(client <code>{e(view.client_id)}</code>) asks to use <code>{e(view.resource)}</code>
as you, with these permissions:</p>
<ul>{scopes}</ul>
<p>If you allow it, you will be sent to <code>{e(view.redirect_uri)}</code>.</p>
{warning}
<form method="post" action="{e(view.action)}">{hidden}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></body></html>
"""


def render_error(title: str, description: str) -> str:
    """The page for an authorization request that cannot be redirected back (unknown
    client, unregistered redirect URI): a code must never go to an unverified URI."""
    e = html.escape
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}'
            f'</title></head><body><h1>{e(title)}</h1><p>{e(description)}</p></body></html>')
