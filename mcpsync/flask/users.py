"""Who is calling through the Flask route: the user the route found, as ``ctx.user``
(a receive middleware, run on the request's thread before any handler), and the Flask
request kept for handlers that need it while its response lasts."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dispatch.inbound import TransportContext, current_transport
from ..protocol.jsonrpc import Message, Request

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext


@dataclass
class ViewCall:
    """One call of the route: the Flask request, its user, and the transport contexts its
    MCP requests were given (forgotten when the response ends)."""

    request: Any
    user: Any
    transports: list[TransportContext] = field(default_factory=list)


current_call: contextvars.ContextVar[ViewCall | None] = contextvars.ContextVar(
    "mcpsync_flask_view_call", default=None)
_requests: dict[int, tuple[TransportContext, Any]] = {}
_requests_lock = threading.Lock()


def bind_user(message: Message, next_: Callable[[Message], None]) -> None:
    """Receive middleware: a message that came through the route acts as its user."""
    call = current_call.get()
    transport = current_transport()
    if call is not None and transport is not None:
        transport.user = call.user
        if isinstance(message, Request):
            with _requests_lock:
                _requests[id(transport)] = (transport, call.request)
            call.transports.append(transport)
    next_(message)


def forget(call: ViewCall) -> None:
    with _requests_lock:
        for transport in call.transports:
            _requests.pop(id(transport), None)
    call.transports.clear()


def acting_as(user: Any) -> Callable[[Message, Callable[[Message], None]], None]:
    """Receive middleware: every message acts as ``user`` (``flask mcp stdio --user``)."""
    def middleware(message: Message, next_: Callable[[Message], None]) -> None:
        transport = current_transport()
        if transport is not None:
            transport.user = user
        next_(message)

    return middleware


def current_request(ctx: HandlerContext) -> Any:
    """The Flask ``Request`` the request of ``ctx`` came in, while its response lasts;
    ``None`` when it came another way (stdio) or has been answered."""
    with _requests_lock:
        found = _requests.get(id(ctx.transport))
    if found is None or found[0] is not ctx.transport:
        return None
    return found[1]


__all__ = ["ViewCall", "acting_as", "bind_user", "current_call", "current_request", "forget"]
