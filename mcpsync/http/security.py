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
_MAX_VERDICTS: Final = 256
_MAX_VERDICT_KEY: Final = 255


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
        #: Verdicts already reached, by ``Host`` value: every request asks, and a client
        #: sends the same value each time. The policy never changes, so a verdict never
        #: goes stale. Bounded (clients choose the values): at most ``_MAX_VERDICTS``
        #: values of at most ``_MAX_VERDICT_KEY`` characters (~80 KiB at worst); the
        #: rest are checked each time.
        self._host_verdicts: dict[str, bool] = {}

    def host_allowed(self, host_header: str | None) -> bool:
        if "*" in self.allowed_hosts:
            return True
        if not host_header:
            return False
        verdicts = self._host_verdicts
        verdict = verdicts.get(host_header)
        if verdict is None:
            verdict = self._name_allowed(host_header)
            if len(verdicts) < _MAX_VERDICTS and len(host_header) <= _MAX_VERDICT_KEY:
                verdicts[host_header] = verdict  # a racing thread writes the same value
        return verdict

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
