"""TransportContext: what the transport knows about the peer behind one inbound message.

Handlers see it as ``ctx.transport`` (and ``ctx.auth``); middleware, which keeps its
``(message, next_)`` signature, calls :func:`current_transport` while it runs. Made once per
inbound message, so that an auth layer may fill its ``auth`` slot for that message alone:
every other field is fixed when it is made.

It is bound to the thread that runs a middleware chain or a handler for the time it runs
(a :mod:`contextvars` variable: each thread has its own), never longer.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

from ..protocol.envelope import is_stateless

TransportKind = Literal["stdio", "memory", "http"]

_current: contextvars.ContextVar[TransportContext | None] = contextvars.ContextVar(
    "mcpsync_transport", default=None)


class Headers(Mapping[str, str]):
    """Read-only HTTP request headers; names are case-insensitive. Empty off HTTP."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        self._items: dict[str, str] = {key.lower(): value for key, value in (items or {}).items()}

    @classmethod
    def lowered(cls, items: Mapping[str, str]) -> Headers:
        """Headers whose names are already lower-case (the HTTP app's, per request): a
        plain copy, without lower-casing every name again."""
        headers = cls.__new__(cls)
        headers._items = dict(items)
        return headers

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


NO_HEADERS: Final = Headers()
_FIXED: Final = frozenset({"kind", "headers", "remote_addr", "session_id",
                           "can_receive_requests"})


class TransportContext:
    """The transport side of one inbound message. Thread-safe to read.

    ``kind``: ``"stdio"``, ``"memory"`` or ``"http"``. ``headers``: the HTTP request's
    headers (case-insensitive, read-only; empty off HTTP). ``remote_addr``: the client's
    address on HTTP (``REMOTE_ADDR``), else ``None``. ``session_id``: the handshake-era
    session (``Mcp-Session-Id`` on HTTP; ``None`` on stdio, on memory and in 2026-07-28).
    ``can_receive_requests``: whether the peer can be sent requests (elicitation, sampling,
    roots) on a live channel: true in the handshake era, false in 2026-07-28 (where a
    handler asks through ``InputRequiredResult`` instead). ``auth``: the authenticated
    principal, ``None`` until an auth layer (a receive middleware, say) sets it; the only
    field that can change, and only before the handler runs is it meaningful to.
    """

    __slots__ = ("ambient", "auth", "can_receive_requests", "headers", "kind", "remote_addr",
                 "session_id")

    kind: TransportKind
    headers: Headers
    remote_addr: str | None
    session_id: str | None
    can_receive_requests: bool
    auth: Any
    ambient: Any

    def __init__(self, kind: TransportKind, *, headers: Mapping[str, str] | None = None,
                 remote_addr: str | None = None, session_id: str | None = None,
                 can_receive_requests: bool = True, auth: Any = None) -> None:
        set_ = object.__setattr__
        set_(self, "kind", kind)
        set_(self, "headers", headers if isinstance(headers, Headers) else Headers(headers))
        set_(self, "remote_addr", remote_addr)
        set_(self, "session_id", session_id)
        set_(self, "can_receive_requests", can_receive_requests)
        set_(self, "auth", auth)
        #: The OpenTelemetry context of the thread the message arrived on (an HTTP server
        #: span, say), kept for the handler's thread when telemetry is recording; else None.
        set_(self, "ambient", None)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FIXED:
            raise AttributeError(f"TransportContext.{name} is read-only (only auth may be set)")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"TransportContext.{name} cannot be deleted")

    def for_message(self, message: object) -> TransportContext:
        """A fresh context for one inbound message (its own ``auth`` slot, starting from
        this one's). A request or notification carrying the 2026-07-28 envelope is
        stateless: no session, no requests to the peer."""
        stateless = is_stateless(getattr(message, "params", None))
        return TransportContext(
            self.kind, headers=self.headers, remote_addr=self.remote_addr,
            session_id=None if stateless else self.session_id,
            can_receive_requests=False if stateless else self.can_receive_requests,
            auth=self.auth)

    def __repr__(self) -> str:
        return (f"TransportContext({self.kind!r}, remote_addr={self.remote_addr!r}, "
                f"session_id={self.session_id!r}, "
                f"can_receive_requests={self.can_receive_requests!r}, auth={self.auth!r})")


def current_transport() -> TransportContext | None:
    """The transport context of the message being handled on this thread: inside receive
    and send middleware, and inside a handler (where it is ``ctx.transport``). ``None``
    elsewhere (a thread of your own, a client's connection)."""
    return _current.get()


@contextlib.contextmanager
def bound(transport: TransportContext | None) -> Iterator[None]:
    """Make ``transport`` this thread's :func:`current_transport` while inside (``None``
    leaves the current one in place)."""
    if transport is None:
        yield
        return
    token = _current.set(transport)
    try:
        yield
    finally:
        _current.reset(token)
