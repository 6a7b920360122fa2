"""``WWW-Authenticate`` Bearer and DPoP challenges (RFC 6750 §3, RFC 9449 §7.1,
RFC 9728 §5.1).

Only what the client acts on is kept: ``error`` (``invalid_token``,
``insufficient_scope``), ``scope`` (what to ask for) and ``resource_metadata`` (where the
protected resource metadata is). A header that is not a Bearer challenge parses to an
empty :class:`Challenge`, which the client treats like a bare 401.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: One item of a challenge list: ``name=value`` / ``name="quoted"`` (an auth-param), or a
#: bare token (an auth-scheme, or a token68 right after one).
_ITEM = re.compile(r'[\s,]*(?:([A-Za-z0-9_\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))'
                   r'|([A-Za-z0-9_\-.~+/]+=*))')
_OURS = ("bearer", "dpop")
#: A header longer than this is not parsed (it is not a challenge anyone meant).
MAX_HEADER_CHARS = 8192


@dataclass(frozen=True)
class Challenge:
    error: str | None = None
    scope: str | None = None
    resource_metadata: str | None = None
    scheme: str | None = None  # "bearer" or "dpop"; None when the header had neither

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def parse(header: str | None) -> Challenge:
    """The first Bearer (or DPoP, RFC 9449) challenge in ``header``."""
    if not header or len(header) > MAX_HEADER_CHARS:
        return Challenge()
    params: dict[str, str] = {}
    scheme: str | None = None
    ours: str | None = None  # the scheme whose parameters are being collected
    position = 0
    while position < len(header):
        match = _ITEM.match(header, position)
        if match is None or match.end() == position:
            break
        position = match.end()
        if match.group(4) is not None:  # a scheme (or a token68 after one)
            if scheme is not None and not params and scheme == ours:
                continue  # a token68 right after our scheme
            if ours is not None:
                break  # the next challenge begins: ours is complete
            scheme = match.group(4).lower()
            if scheme in _OURS:
                ours = scheme
            continue
        if ours is not None and scheme == ours:
            value = match.group(2) if match.group(2) is not None else match.group(3)
            params.setdefault(match.group(1).lower(), re.sub(r"\\(.)", r"\1", value or ""))
    return Challenge(error=params.get("error") or None, scope=params.get("scope") or None,
                     resource_metadata=params.get("resource_metadata") or None,
                     scheme=ours)
