"""Credentials out of log lines: :func:`redact` for any text the project logs about a
request (an access-log line, an error that quotes the request line, a URL).

A client may put a token in the query string (``?access_token=``, which mcpsync refuses,
RFC 6750 §2.3 discourages and RFC 9700 forbids) or send an OAuth ``code`` to a redirect
endpoint. The request is refused or served either way, but its request line is what an
access log prints, and a log lives longer and travels further than a request: whoever
reads it could replay the token. So every line mcpsync writes about a request goes through
:func:`redact` first, which keeps the parameter's *name* (the operator still sees what was
sent) and replaces its value. An ``Authorization`` header is never logged at all; should
one appear in a line anyway (an error quoting raw request bytes), its value is replaced too.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote

#: Query (or form) parameter names whose values are credentials, compared after
#: percent-decoding, case-insensitively, with ``-`` and ``_`` treated alike.
SECRET_PARAMETERS: Final = frozenset({
    "access_token", "refresh_token", "id_token", "token", "code", "client_secret",
    "password", "passwd", "pwd", "secret", "api_key", "apikey", "key", "auth",
    "authorization", "session", "sessionid", "session_id", "sig", "signature",
    "assertion", "client_assertion", "code_verifier", "state",
})

REDACTED: Final = "[redacted]"

# name=value inside a query string, form body or a logged request line: the name starts
# after ``?``, ``&``, ``;`` or whitespace/quote, and the value runs to the next separator.
_PARAMETER = re.compile(r"(?P<lead>[?&;\s\"'(]|^)(?P<name>[^=&;?#\s\"']{1,64})="
                        r"(?P<value>[^&;#\s\"')]*)")
_AUTH_HEADER = re.compile(r"(?i)\b(?P<name>authorization|proxy-authorization|cookie|"
                          r"x-api-key|mcp-session-id)(?P<sep>\s*[:=]\s*)(?P<value>[^\r\n\"']*)")
_BEARER = re.compile(r"(?i)\b(?P<scheme>bearer|basic|dpop)\s+(?P<value>[A-Za-z0-9._~+/=-]{8,})")
# ``scheme://userinfo@`` in a URL: the user name and password are credentials. Dropped
# whole, so the URL still reads as an address.
_USERINFO = re.compile(r"\b(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#@\s]*@")


def is_secret(name: str) -> bool:
    """Whether a parameter called ``name`` (raw, maybe percent-encoded) holds a credential."""
    plain = unquote(name).strip().lower().replace("-", "_")
    return plain in SECRET_PARAMETERS or plain.endswith(("_token", "_secret", "_key",
                                                         "password"))


def redact(text: str) -> str:
    """``text`` with the value of every credential parameter, ``Authorization``-like header,
    and bearer token replaced by ``[redacted]``, and a URL's ``user:password@`` dropped;
    everything else untouched."""
    if "=" not in text and ":" not in text and " " not in text:
        return text

    def parameter(match: re.Match[str]) -> str:
        if not is_secret(match["name"]) or not match["value"]:
            return match[0]
        return f"{match['lead']}{match['name']}={REDACTED}"

    text = _USERINFO.sub(r"\g<scheme>", text)
    text = _PARAMETER.sub(parameter, text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{m['sep']}{REDACTED}", text)
    return _BEARER.sub(lambda m: f"{m['scheme']} {REDACTED}", text)


__all__ = ["REDACTED", "SECRET_PARAMETERS", "is_secret", "redact"]
