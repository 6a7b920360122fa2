"""DNS-rebinding protection: which ``Host`` and ``Origin`` headers a server accepts.

A browser page on ``evil.example`` can resolve that name to 127.0.0.1 and talk to a local
server; checking ``Host`` (the name the browser thinks it is talking to) and ``Origin``
(the page that sent the request) stops it. The default accepts only loopback names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

LOOPBACK: Final = ("localhost", "127.0.0.1", "[::1]", "::1")


def _split_host(value: str) -> tuple[str, str | None]:
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        host, rest = value[:end + 1], value[end + 1:]
        return host, rest[1:] if rest.startswith(":") else None
    host, colon, port = value.rpartition(":")
    if colon and port.isdigit():
        return host, port
    return value, None


class HostPolicy:
    """Allowed ``Host`` and ``Origin`` values. Immutable, thread-safe.

    ``allowed_hosts`` entries are ``name`` (any port), ``name:port``, ``*.suffix``, or
    ``*`` (no check: only behind a proxy that checks). ``allowed_origins`` entries are
    origins such as ``https://app.example.com`` or ``*``; by default an origin is accepted
    when its host is an allowed host.
    """

    def __init__(self, allowed_hosts: Iterable[str] | None = None,
                 allowed_origins: Iterable[str] | None = None) -> None:
        self.allowed_hosts = tuple(h.lower() for h in (allowed_hosts or LOOPBACK))
        self.allowed_origins = tuple(o.lower().rstrip("/") for o in (allowed_origins or ()))

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        return self._name_allowed(host_header)

    def _name_allowed(self, value: str) -> bool:
        host, port = _split_host(value)
        for entry in self.allowed_hosts:
            entry_host, entry_port = _split_host(entry)
            if entry_host.startswith("*."):
                if not host.endswith(entry_host[1:]):
                    continue
            elif entry_host != host:
                continue
            if entry_port is None or entry_port == port:
                return True
        return False

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True  # not a browser, or a same-origin GET: nothing to check
        origin = origin.strip().lower().rstrip("/")
        if "*" in self.allowed_origins or origin in self.allowed_origins:
            return True
        if origin == "null":
            return False
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return False
        return "*" in self.allowed_hosts or self._name_allowed(parts.netloc)
