"""How a :class:`~mcpsync.Client` names what it is connected to: in its ``repr`` and in
the warning about a client dropped unclosed. Never a credential: headers are not shown, a
URL's credentials are redacted, and server strings are shown escaped and cut short.
"""

from __future__ import annotations

from ..engine.connection import Connection
from ..protocol.redact import redact
from ..transports.base import Transport
from ..types import InitializeResult


def client_repr(connection: Connection | None, init: InitializeResult | None) -> str:
    """``<Client 'weather' 1.0.0 over stdio: python server.py, 2025-11-25>``; before the
    handshake ends (or when the client could not be made), ``<Client (connecting) ...>``
    or ``<Client (closed) ...>``."""
    target = _target(connection.transport) if connection is not None else "?"
    if connection is None or init is None:
        state = "closed" if connection is None or connection.closed else "connecting"
        return f"<Client ({state}) {target}>"
    info = init.server_info
    version = "".join(ch for ch in str(info.version)[:40] if ch.isprintable())
    era = "closed" if connection.closed else init.protocol_version
    return f"<Client {str(info.name)[:80]!r} {version} {target}, {era}>"


def describe(transport: Transport) -> str:
    """Which connection a warning is about: the server command or URL."""
    kind, where = _where(transport)
    return {"stdio": f"stdio to {where}", "http": f"HTTP to {where}"}.get(kind, kind)


def _target(transport: object) -> str:
    """What a client is connected to, for its repr: ``over stdio: <command>``, ``over http:
    <url>`` or ``in memory``."""
    kind, where = _where(transport)
    return f"over {kind}: {where}" if where else (
        "in memory" if kind == "MemoryTransport" else f"over {kind}")


def _where(transport: object) -> tuple[str, str]:
    """What kind of connection ``transport`` is (``"stdio"``, ``"http"``, else its class
    name) and to where (the command or URL, fit to print: credentials redacted, at most
    200 characters; empty when it has neither)."""
    command = getattr(transport, "command", None)
    if isinstance(command, list):
        return "stdio", redact(" ".join(map(str, command)))[:200]
    url = getattr(transport, "url", None)
    if isinstance(url, str):
        return "http", redact(url)[:200]
    return type(transport).__name__, ""
