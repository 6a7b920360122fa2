"""What a :class:`~mcpsync.Client` does with what its server sends it.

Requests from the server (handshake era) and the input requests of 2026-07-28 multi
round-trip results are answered by the handlers in the client's method registry (the host
handlers themselves are in ``host.py``); notifications go to the response cache, an open
``subscriptions/listen`` stream, the registered notification handlers, or
``on_notification``, in that order. :class:`Inbound` owns what that takes (the host
handlers, the roots, the callbacks) and never sees the ``Client``, which composes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

from ..codec import from_wire
from ..dispatch.registry import MethodRegistry
from ..engine.requests import InboundRequest
from ..errors import MethodNotFoundError, ProtocolStateError
from ..protocol.jsonrpc import Notification
from ..types import LogMessage
from .cache import ResponseCache
from .host import (
    INPUT_METHODS,
    ClientMethodHandler,
    ClientNotificationHandler,
    HostRequest,
    elicitation_method,
    ping_method,
    roots_method,
    sampling_method,
)
from .listen import Listens
from .task_calls import ClientTasks

logger = logging.getLogger("mcpsync.client")

#: ``fn(params)`` or ``fn(params, request)``: gets the typed params, returns the typed result
#: or a dict in wire shape. ``request`` (a :class:`HostRequest`) tells of cancellation.
ElicitationHandler = Callable[..., Any]
SamplingHandler = Callable[..., Any]
RootsSource = Union[Sequence[Any], Callable[[], Sequence[Any]]]  # noqa: UP007
LogHandler = Callable[[LogMessage], None]
NotificationCallback = Callable[[str, dict[str, Any]], None]


class InboundHandlers:
    """What one client's inbound side answers with: the public
    :class:`~mcpsync.client.options.HostHandlers` it was given, with ``on_log`` and
    ``on_notification`` (keywords of ``Client``) beside them. Plain data."""

    def __init__(self, *, elicitation: ElicitationHandler | None = None,
                 sampling: SamplingHandler | None = None, sampling_tools: bool = False,
                 roots: RootsSource | None = None, on_log: LogHandler | None = None,
                 on_notification: NotificationCallback | None = None,
                 extra_capabilities: Mapping[str, Any] | None = None) -> None:
        self.elicitation = elicitation
        self.sampling = sampling
        self.sampling_tools = sampling_tools
        self.roots = roots
        self.on_log = on_log
        self.on_notification = on_notification
        #: Declared on top of what the handlers serve (e.g. for manual-mode answers).
        self.extra_capabilities = dict(extra_capabilities or {})


class Inbound:
    """Answers the server's requests and routes its notifications, for one client.
    Thread-safe: requests arrive on handler threads, notifications on the connection's
    notification thread; the roots are replaced under a lock."""

    def __init__(self, methods: MethodRegistry[ClientMethodHandler, ClientNotificationHandler],
                 handlers: InboundHandlers, *, cache: ResponseCache | None, listens: Listens,
                 tasks: ClientTasks) -> None:
        self.methods = methods
        self._handlers = handlers
        self._cache = cache
        self._listens = listens
        self._tasks = tasks
        self._roots = handlers.roots
        self._roots_lock = threading.Lock()
        self._install_builtins()

    def _install_builtins(self) -> None:
        """The built-ins, as defaults a custom handler may replace: ``ping``, the host
        handlers given to ``Client(...)``, and ``on_log`` for ``notifications/message``."""
        methods, handlers = self.methods, self._handlers
        methods.set_default("ping", ping_method)
        if handlers.elicitation is not None:
            methods.set_default("elicitation/create", elicitation_method(handlers.elicitation))
        if handlers.sampling is not None:
            methods.set_default("sampling/createMessage",
                                sampling_method(handlers.sampling, handlers.sampling_tools))
        if self._roots is not None:
            methods.set_default("roots/list", roots_method(self._current_roots))
        if handlers.on_log is not None:
            methods.add_notification("notifications/message", self._log_notification)

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared at ``initialize``: those given handlers serve."""
        handlers = self._handlers
        caps: dict[str, Any] = {}
        if handlers.elicitation is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if handlers.sampling is not None:
            caps["sampling"] = {"tools": {}} if handlers.sampling_tools else {}
        if self._roots is not None:
            caps["roots"] = {"listChanged": True}
        caps.update(handlers.extra_capabilities)
        return caps

    def set_roots(self, roots: RootsSource) -> None:
        """Replace the roots (declared at connect time, else ProtocolStateError)."""
        if self._roots is None:
            raise ProtocolStateError("roots were not declared at connect time (pass roots=)")
        with self._roots_lock:
            self._roots = roots

    def _current_roots(self) -> RootsSource | None:
        with self._roots_lock:
            return self._roots

    def answer_input(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one 2026-07-28 input request with the registered handler."""
        handler = self.methods.request_handler(method) if method in INPUT_METHODS else None
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

    def on_request(self, inbound: InboundRequest) -> dict[str, Any]:
        """A request from the server (handshake era), on a handler thread: the registry's
        handler answers; a method nobody registered is -32601."""
        method = inbound.method
        handler = self.methods.request_handler(method)
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
        request = HostRequest(inbound.id, method, inbound.cancelled)
        return _checked(method, handler(request, inbound.params))

    def _log_notification(self, params: dict[str, Any]) -> None:
        on_log = self._handlers.on_log
        assert on_log is not None
        try:
            message = from_wire(LogMessage, params)
        except ValueError:
            logger.warning("malformed log message: %r", params)
            return
        on_log(message)

    def dispatch_notification(self, message: Notification) -> None:
        """A notification from the server, on the notification thread: the cache, then an
        open ``subscriptions/listen`` stream, then the registry's handlers, else
        ``on_notification``."""
        params = message.params or {}
        if self._cache is not None:
            self._cache.on_notification(message.method, params)
        self._tasks.on_notification(message.method, params)
        if self._listens.route(message.method, params):
            return  # it belonged to a subscriptions/listen stream
        if self.methods.notify(message.method, params):
            return
        if self._handlers.on_notification is not None:
            self._handlers.on_notification(message.method, params)


def _checked(method: str, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"the handler of {method} returned {type(result).__name__}, "
                        "not a result dict")
    return result
