"""What a :class:`~mcpsync.Client` does with what its server sends it.

Requests from the server (handshake era) and the input requests of 2026-07-28 multi
round-trip results are answered by the handlers in the client's method registry (the host
handlers themselves are in ``host.py``); notifications go to the response cache, an open
``subscriptions/listen`` stream, the registered notification handlers, or
``on_notification``, in that order. Apart from ``client.py``, which is the API the
application calls.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from ..codec import from_wire
from ..engine.requests import InboundRequest
from ..errors import MethodNotFoundError, ProtocolStateError
from ..protocol.jsonrpc import Notification
from ..types import LogMessage
from .host import (
    INPUT_METHODS,
    HostRequest,
    elicitation_method,
    ping_method,
    roots_method,
    sampling_method,
)

if TYPE_CHECKING:
    from .client import Client, RootsSource

logger = logging.getLogger("mcpsync.client")


def install_builtin_methods(client: Client) -> None:
    """The built-ins, as defaults a custom handler may replace: ``ping``, the host
    handlers given to ``Client(...)``, and ``on_log`` for ``notifications/message``."""
    methods = client.methods
    methods.set_default("ping", ping_method)
    if client._elicitation_handler is not None:
        methods.set_default("elicitation/create",
                            elicitation_method(client._elicitation_handler))
    if client._sampling_handler is not None:
        methods.set_default("sampling/createMessage",
                            sampling_method(client._sampling_handler, client._sampling_tools))
    if client._roots is not None:
        methods.set_default("roots/list", roots_method(lambda: _current_roots(client)))
    if client._on_log is not None:
        methods.add_notification("notifications/message",
                                 lambda params: _log_notification(client, params))


def _current_roots(client: Client) -> RootsSource | None:
    with client._roots_lock:
        return client._roots


def answer_input(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Answer one 2026-07-28 input request with the registered handler."""
    handler = client.methods.request_handler(method) if method in INPUT_METHODS else None
    if handler is None:
        why = ("no handler for it" if method in INPUT_METHODS else
               "2026-07-28 allows only " + ", ".join(INPUT_METHODS))
        raise ProtocolStateError(
            f"the server asked for input this client can not give ({method}: {why})")
    try:
        answer = handler(HostRequest(None, method, threading.Event()), params)
    except MethodNotFoundError as exc:  # a host handler that refuses, as a bridge does
        raise ProtocolStateError(
            f"the server asked for input this client has no handler for "
            f"({exc.message})") from None
    return _checked(method, answer)


def on_request(client: Client, inbound: InboundRequest) -> dict[str, Any]:
    """A request from the server (handshake era), on a handler thread: the registry's
    handler answers; a method nobody registered is -32601."""
    method = inbound.method
    handler = client.methods.request_handler(method)
    if handler is None:
        raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
    request = HostRequest(inbound.id, method, inbound.cancelled)
    return _checked(method, handler(request, inbound.params))


def _log_notification(client: Client, params: dict[str, Any]) -> None:
    assert client._on_log is not None
    try:
        message = from_wire(LogMessage, params)
    except ValueError:
        logger.warning("malformed log message: %r", params)
        return
    client._on_log(message)


def dispatch_notification(client: Client, message: Notification) -> None:
    """A notification from the server, on the notification thread: the cache, then an open
    ``subscriptions/listen`` stream, then the registry's handlers, else ``on_notification``."""
    params = message.params or {}
    if client.cache is not None:
        client.cache.on_notification(message.method, params)
    client._tasks.on_notification(message.method, params)
    if client._listens.route(message.method, params):
        return  # it belonged to a subscriptions/listen stream
    if client.methods.notify(message.method, params):
        return
    if client._on_notification is not None:
        client._on_notification(message.method, params)


def _checked(method: str, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"the handler of {method} returned {type(result).__name__}, "
                        "not a result dict")
    return result
