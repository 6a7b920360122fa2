"""Who is calling through the Flask route: the user the route found, as ``ctx.user``
(a receive middleware, run on the request's thread before any handler), and the Flask
request kept for handlers that need it while its response lasts."""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
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


#: Sessions remembered per route with the user that created them (oldest forgotten first).
MAX_OWNERS = 100_000
#: What another user's session id is replaced with: no session is ever named so (ids are
#: random hex), so mcpsync answers it as an unknown session.
NOT_A_SESSION = "not-a-session"


class SessionOwners:
    """Which user created each handshake-era session seen through the route, so that
    another user presenting its ``Mcp-Session-Id`` is answered as for an unknown session.
    Thread-safe; bounded (``MAX_OWNERS``, the oldest forgotten first)."""

    def __init__(self) -> None:
        self._owners: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def matches(self, session: str, user: Any) -> bool:
        """Whether ``user`` may use ``session`` (one created elsewhere, on another worker,
        or forgotten, is left to mcpsync's own checks)."""
        with self._lock:
            if session not in self._owners:
                return True
            return bool(self._owners[session] == user_key(user))

    def remember(self, session: str, user: Any) -> None:
        with self._lock:
            self._owners[session] = user_key(user)
            while len(self._owners) > MAX_OWNERS:
                self._owners.popitem(last=False)


def user_key(user: Any) -> Any:
    """What identifies a user across requests (its id; ``None``: anonymous)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    get_id = getattr(user, "get_id", None)  # Flask-Login's
    return (type(user).__name__, get_id() if callable(get_id) else
            getattr(user, "id", None) or str(user))


__all__ = ["MAX_OWNERS", "NOT_A_SESSION", "SessionOwners", "ViewCall", "acting_as", "bind_user",
           "current_call", "current_request", "forget", "user_key"]
