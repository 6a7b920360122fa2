"""Who is calling: the Django user of the request an MCP message came in, as ``ctx.user``.

The endpoint view (:mod:`mcpsync.django.endpoint`) runs mcpsync's WSGI app on the thread
serving the Django request, inside :func:`serving`. mcpsync runs the server's receive
middleware on that same thread, before any handler, with the message's
:class:`~mcpsync.TransportContext` bound; :func:`bind_user`, installed on the server as
one, copies the view's user into ``transport.user`` there. The transport context travels
with the request to its handler thread, so ``ctx.user`` is the Django user wherever the
handler runs, and visibility's ``permission="app.codename"`` is checked against it.

The Django request itself is kept for handlers that need it (:func:`current_request`) in
a table keyed by the transport context, for as long as the view's response lasts: a
handler may read a header, the session or ``request.auth`` set by DRF. It holds only the
requests being answered now.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..dispatch.inbound import TransportContext, current_transport
from ..protocol.jsonrpc import Message, Request

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext


@dataclass
class ViewCall:
    """One call of the endpoint view: the Django request, the user it acts as, and the
    transport contexts its MCP requests were given (forgotten when the response ends)."""

    request: Any
    user: Any
    transports: list[TransportContext] = field(default_factory=list)


_current: contextvars.ContextVar[ViewCall | None] = contextvars.ContextVar(
    "mcpsync_django_view_call", default=None)
_requests: dict[int, tuple[TransportContext, Any]] = {}
_requests_lock = threading.Lock()


@contextlib.contextmanager
def serving(call: ViewCall) -> Iterator[None]:
    """Within the block, messages received on this thread act as ``call.user``."""
    token = _current.set(call)
    try:
        yield
    finally:
        _current.reset(token)


def in_view() -> bool:
    """Whether this thread is running the endpoint view right now (so Django itself
    manages this thread's database connections, as for any request)."""
    return _current.get() is not None


def forget(call: ViewCall) -> None:
    """The response of ``call`` has ended: its requests are no longer reachable."""
    with _requests_lock:
        for transport in call.transports:
            _requests.pop(id(transport), None)
    call.transports.clear()


def bind_user(message: Message, next_: Callable[[Message], None]) -> None:
    """Receive middleware: a message that arrived through the endpoint view acts as the
    view's user (``ctx.user``), and its request is kept for :func:`current_request`.
    Messages that came another way (the mount beside the app, stdio) are passed on as
    they are."""
    call = _current.get()
    transport = current_transport()
    if call is not None and transport is not None:
        transport.user = call.user
        if isinstance(message, Request):
            with _requests_lock:
                _requests[id(transport)] = (transport, call.request)
            call.transports.append(transport)
    next_(message)


def acting_as(user: Any) -> Callable[[Message, Callable[[Message], None]], None]:
    """Receive middleware: every message acts as ``user`` (``manage.py mcp stdio --user``,
    where there is no request to take a user from)."""
    def middleware(message: Message, next_: Callable[[Message], None]) -> None:
        transport = current_transport()
        if transport is not None:
            transport.user = user
        next_(message)

    return middleware


def current_request(ctx: HandlerContext) -> Any:
    """The Django ``HttpRequest`` the request of ``ctx`` came in, while its response
    lasts; ``None`` when it came another way (stdio, a mount) or has been answered."""
    with _requests_lock:
        found = _requests.get(id(ctx.transport))
    if found is None or found[0] is not ctx.transport:
        return None
    return found[1]


__all__ = ["ViewCall", "acting_as", "bind_user", "current_request", "forget", "in_view",
           "serving"]
