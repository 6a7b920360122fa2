"""``Client``: a blocking MCP client with no event loop.

One Client is one connection to one server. Every method blocks the calling thread until
the answer arrives or its deadline passes, and any number of threads may call methods of
the same Client at once: requests are correlated by id, each caller waits on its own
Future. Ctrl-C while a call waits cancels that call on the server, then raises
``KeyboardInterrupt`` as usual. Thread-safe.

This module makes and ends a Client; the requests it sends are its base class's,
:class:`~.surface.ClientSurface`. ``Client`` composes collaborators that own their state
and never see the ``Client``: :class:`~.negotiate.Negotiation` (the era, its envelope, what
the server said), :class:`~.calls.Calls` (the request path: envelope, cache, multi
round-trip), :class:`~.inbound.Inbound` (what the server sends: its requests,
notifications, input requests), :class:`~.subscribe.Subscriptions` (``listen`` in each
era), :class:`~.task_calls.ClientTasks` and :class:`~.lifetime.Lifetime` (what closing
ends, and the finalizer of a client dropped unclosed). The transports of
:meth:`Client.stdio` and :meth:`Client.http` are made in :mod:`.factory`, the ``repr`` in
:mod:`.describe`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from .._version import __version__
from ..dispatch.registry import MethodRegistry
from ..engine.connection import DEFAULT_TIMEOUT, Connection, ConnectionLimits
from ..engine.hooks import ConnectionEvents, ConnectionThreads
from ..errors import ConnectionClosedError, ProtocolStateError
from ..protocol import levels
from ..protocol.versions import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS
from ..telemetry.config import Telemetry
from ..telemetry.instrumentation import Instrumentation
from ..transports.base import Transport
from ..transports.memory import InProcessServer, memory_pair
from ..types import Implementation, InitializeResult
from .cache import ResponseCache
from .calls import INPUT_MODES, CallOptions, Calls, ProgressHandler
from .describe import client_repr, describe
from .factory import http_transport, stdio_transport
from .host import ClientMethodHandler, ClientNotificationHandler
from .inbound import (
    ElicitationHandler,
    Inbound,
    InboundHandlers,
    LogHandler,
    NotificationCallback,
    RootsSource,
    SamplingHandler,
)
from .lifetime import Lifetime, WeakInbound
from .listen import Listens
from .negotiate import Negotiation
from .options import ClientLimits, ClientMiddleware, HostHandlers
from .subscribe import Subscriptions
from .surface import ClientSurface
from .task_calls import ClientTasks

if TYPE_CHECKING:
    from ..hub.hub import Hub

logger = logging.getLogger("mcpsync.client")

__all__ = ["Client", "ConnectionClosedError", "ElicitationHandler", "LogHandler",
           "NotificationCallback", "ProgressHandler", "RootsSource", "SamplingHandler"]


class Client(ClientSurface):
    """A connected MCP client. Make one with :meth:`stdio`, :meth:`memory` or from a transport.

    ``timeout`` is the default deadline (seconds) of every request; each method takes its
    own ``timeout=`` too. ``on_log`` receives the server's log messages and
    ``on_notification(method, params)`` every other notification; both run on the
    connection's notification thread, in arrival order.

    ``log_level`` (``"debug"`` … ``"emergency"``) is the least severe log message the
    server should send. In 2026-07-28 it goes as ``logLevel`` in every request's ``_meta``
    (without one a server sends no logs at all, so with ``on_log`` given it defaults to
    ``"debug"``: the handshake era's servers send every level until told otherwise); in
    the handshake era it is sent as ``logging/setLevel`` right after ``initialize`` when
    the server declares ``logging``.

    The options few clients change are grouped: ``host``
    (:class:`~mcpsync.client.options.HostHandlers`: the elicitation and sampling
    handlers, roots, custom methods, who answers 2026-07-28 questions), ``limits``
    (:class:`~mcpsync.client.options.ClientLimits`: handler threads, input rounds, the
    notification queue, the :class:`~mcpsync.client.options.RetryPolicy` of idempotent
    calls) and ``middleware`` (:class:`~mcpsync.client.options.ClientMiddleware`).
    Custom methods registered after the connection starts: :meth:`method_handler`,
    :meth:`notification_handler`; all live in :attr:`methods`.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        protocol_version: str | None = None,
        client_info: Implementation | None = None,
        name: str = "mcpsync-client",
        on_log: LogHandler | None = None,
        log_level: str | None = None,
        on_notification: NotificationCallback | None = None,
        cache: bool | ResponseCache = True,
        host: HostHandlers | None = None,
        limits: ClientLimits | None = None,
        middleware: ClientMiddleware | None = None,
        telemetry: bool | Telemetry = True,
    ) -> None:
        host = host or HostHandlers()
        limits = limits or ClientLimits()
        middleware = middleware or ClientMiddleware()
        input_mode = host.input_mode
        self.client_info = client_info or Implementation("mcpsync", __version__)
        known = (*LEGACY_VERSIONS, *MODERN_VERSIONS, "auto")
        if protocol_version is not None and protocol_version not in known:
            raise ValueError(f"protocol_version {protocol_version!r} is not one of {known}")
        if log_level is not None and not levels.is_level(log_level):
            raise ValueError(f"log_level {log_level!r} is not one of {levels.LEVELS}")
        if input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode {input_mode!r} is not one of {INPUT_MODES}")
        options = CallOptions(timeout, input_mode, limits.max_input_rounds, limits.retry)
        #: The response cache for ``ttlMs`` hints (None when turned off with cache=False).
        self.cache: ResponseCache | None = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None)
        listens = Listens()
        tasks = ClientTasks(
            request=lambda method, params, wait: self.request(method, params, timeout=wait,
                                                              cache=False),
            answer=lambda method, params: self._inbound.answer_input(method, params),
            capabilities=lambda: (self.server_capabilities,
                                  self._negotiation.envelope is not None),
            list_tools=self.list_tools, request_timeout=lambda: self.timeout,
            listen=lambda task_id, wait: self.listen(
                tools=False, prompts=False, resources=False, task_ids=[task_id],
                timeout=wait))
        #: Every method this client answers and notification it hears: the built-ins
        #: (``ping`` and the host handlers given above), then custom ones.
        self.methods: MethodRegistry[ClientMethodHandler, ClientNotificationHandler] = (
            MethodRegistry(f"client {name!r}"))
        self._inbound = Inbound(self.methods, InboundHandlers(
            elicitation=host.elicitation, sampling=host.sampling,
            sampling_tools=host.sampling_tools, roots=host.roots, on_log=on_log,
            on_notification=on_notification, extra_capabilities=host.extra_capabilities),
            cache=self.cache, listens=listens, tasks=tasks)
        for method, handler in (host.methods or {}).items():
            self.methods.add_request(method, handler)
        for method, handlers in (host.notifications or {}).items():
            for one in [handlers] if callable(handlers) else handlers:
                self.methods.add_notification(method, one)
        # The connection's threads reach what answers them only through a weak reference,
        # so that a client dropped without close() can be collected and its finalizer end
        # the connection (and a stdio server): a notebook cell run again leaks no processes.
        inbound = WeakInbound(self._inbound)
        connection = Connection(
            transport, on_request=inbound.on_request,
            events=ConnectionEvents(notification=inbound.on_notification),
            send_middleware=middleware.send, recv_middleware=middleware.recv,
            limits=ConnectionLimits(
                max_handlers=limits.max_handlers, request_timeout=timeout,
                max_queued_notifications=limits.max_queued_notifications,
                max_queued_notification_bytes=limits.max_queued_notification_bytes),
            name=name,
            # Over stdio a caller reads its own answer (engine/reading.py's ReadRole).
            threads=ConnectionThreads(caller_reads=True),
            telemetry=Instrumentation(Telemetry.of(telemetry), "client"),
        )
        deliver_to = getattr(transport, "deliver_to", None)
        if callable(deliver_to):
            deliver_to(connection.deliver)
        negotiation = Negotiation(
            connection, requested_version=protocol_version or LATEST_LEGACY,
            client_info=self.client_info, capabilities=self.capabilities,
            log_level=log_level, logs_wanted=on_log is not None,
            timeout=lambda: self.timeout)
        calls = Calls(connection, negotiation, self.cache, options, self._inbound.answer_input)
        super().__init__(connection, negotiation, calls, tasks,
                         Subscriptions(connection, listens, calls, negotiation), options)
        self._lifetime = Lifetime(self, connection, describe(transport))
        self._connection.start()
        try:
            self._negotiation.connect()
        except BaseException:
            self.close()
            raise

    # -- constructors --------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        command: str | Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[str] | None = None,
        inherit_env: bool = True,
        **options: Any,
    ) -> Client:
        """Spawn a server process and connect to it over its stdin/stdout.

        ``command``: its arguments (``[sys.executable, "server.py"]``), or one string split
        as a shell splits it (``"python server.py"``; no shell runs it), as
        :meth:`Server.proxy <mcpsync.Server.proxy>` and the ``mcpsync`` command take it.

        ``env`` adds to (or with ``inherit_env=False`` replaces) this process's environment.
        The server's stderr goes to ``stderr`` if given, else to the
        ``mcpsync.server_stderr`` logger. Closing the client reaps the process.
        """
        return cls._over(stdio_transport(command, options, env=env, cwd=cwd, stderr=stderr,
                                         inherit_env=inherit_env), options)

    @classmethod
    def memory(cls, server: InProcessServer, **options: Any) -> Client:
        """Connect to ``server`` in this process (for tests and embedding)."""
        client_end, server_end = memory_pair()
        session = server.connect(server_end, name="mcpsync-memory-server")
        try:
            client = cls(client_end, **options)
        except BaseException:
            session.close()
            raise
        client._lifetime.add_cleanup(session.close)
        return client

    @classmethod
    def http(
        cls,
        url: str,
        *,
        session: Any = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float | None = None,
        max_in_flight: int = 256,
        max_message_bytes: int = 16 * 1024 * 1024,
        auth: Any = None,
        **options: Any,
    ) -> Client:
        """Connect to a Streamable HTTP endpoint (either era; 2024-11-05 HTTP+SSE too).

        ``session`` is a ``requests.Session`` to send with (its auth, proxies, certificates
        and adapters apply; mcpsync never modifies it); ``headers`` are added to every
        request. ``protocol_version`` defaults to ``"auto"`` here: 2026-07-28 when the
        server speaks it, else the handshake.

        ``read_timeout`` is the longest the server may stay silent while answering one call
        before that call fails with :class:`~mcpsync.errors.TransportTimeoutError` and its
        thread is freed; it defaults to the client's ``timeout`` plus 10 s (at least 70 s).
        ``max_message_bytes`` bounds one answer (a JSON body or one SSE event); a larger one
        fails its call with :class:`~mcpsync.errors.MessageTooLargeError`.

        ``auth`` is a ``requests`` auth object for a protected server, usually
        :class:`mcpsync.auth.OAuth` (see docs/auth.md); with your own ``session``, set
        ``session.auth`` instead.
        """
        return cls._over(http_transport(
            url, options, session=session, headers=headers, connect_timeout=connect_timeout,
            read_timeout=read_timeout, max_in_flight=max_in_flight,
            max_message_bytes=max_message_bytes, auth=auth), options)

    @classmethod
    def from_config(cls, config: str | os.PathLike[str] | Mapping[str, Any],
                    **options: Any) -> Hub:
        """A client over every server of an ``mcpServers`` configuration (a path to a
        host's JSON file, comments allowed, or the dict): a :class:`~mcpsync.hub.Hub`,
        whose names carry their server's prefix (``calc_add``). See docs/hub.md."""
        from ..hub.hub import Hub

        return Hub.from_config(config, cls, **options)

    @classmethod
    def _over(cls, transport: Transport, options: dict[str, Any]) -> Client:
        """A client over a transport made for it, which is closed if the client is not."""
        try:
            return cls(transport, **options)
        except BaseException:
            transport.close()
            raise

    # -- lifecycle -----------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared at ``initialize``: those given handlers serve."""
        return self._inbound.capabilities()

    @property
    def requested_version(self) -> str:
        """The revision asked for (settled to one revision once connected)."""
        return self._negotiation.requested_version

    def method_handler(
        self, method: str, *, replace: bool = False
    ) -> Callable[[ClientMethodHandler], ClientMethodHandler]:
        """Register ``fn(request, params) -> result dict`` for a request the server sends.

        ``request`` is a :class:`~mcpsync.HostRequest` (id, method, ``cancelled``);
        ``params`` the raw params dict. The handler runs on one of the client's handler
        threads. An :class:`~mcpsync.errors.MCPError` it raises is the error answer with
        its code; any other exception is answered -32603 ``Internal error`` (and logged).
        It may replace a built-in (``elicitation/create``, ``sampling/createMessage``,
        ``roots/list``, ``ping``); a second custom handler for one method raises
        :class:`~mcpsync.DuplicateHandlerError` unless ``replace=True``. Nothing is added
        to the declared capabilities (use ``extra_capabilities=``). Only handshake-era
        connections carry server requests: 2026-07-28 has none.
        """

        def register(fn: ClientMethodHandler) -> ClientMethodHandler:
            self.methods.add_request(method, fn, replace=replace)
            return fn

        return register

    def notification_handler(
        self, method: str
    ) -> Callable[[ClientNotificationHandler], ClientNotificationHandler]:
        """Register ``fn(params)`` for the notification ``method`` from the server.

        Several handlers per method may be registered: each runs, in order, on the
        connection's notification thread (one that raises is logged; the next still runs).
        ``on_notification`` then no longer receives that method: it gets only the
        notifications nobody registered for. ``notifications/progress`` and
        ``notifications/cancelled`` are consumed by the connection (use ``on_progress=``).
        """

        def register(fn: ClientNotificationHandler) -> ClientNotificationHandler:
            self.methods.add_notification(method, fn)
            return fn

        return register

    def set_roots(self, roots: RootsSource) -> None:
        """Replace the roots and tell the server (``notifications/roots/list_changed``)."""
        self._inbound.set_roots(roots)
        self.notify("notifications/roots/list_changed")

    def close(self) -> None:
        """End the connection (and reap a stdio server). Idempotent.

        A client dropped without it is closed when garbage-collected (or at interpreter
        exit), with a :class:`ResourceWarning`.
        """
        self._lifetime.close()
        self._subscriptions.close_all(ConnectionClosedError("the client was closed"))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._connection.closed

    @property
    def dropped_notifications(self) -> int:
        """Notifications dropped because the queue in front of the callbacks was full."""
        return self._connection.dropped_notifications

    # -- what the server said at initialize ------------------------------------------------

    @property
    def initialize_result(self) -> InitializeResult:
        init = self._negotiation.init
        if init is None:
            raise ProtocolStateError("not initialized")
        return init

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return self.initialize_result.protocol_version

    @property
    def server_info(self) -> Implementation:
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        return self.initialize_result.instructions

    def __repr__(self) -> str:
        """Which server, over what, in which era: ``<Client 'weather' 1.0.0 over stdio:
        python server.py, 2025-11-25>``. Never a credential (headers are not shown, a URL's
        credentials are redacted); server strings are shown escaped."""
        negotiation = getattr(self, "_negotiation", None)
        return client_repr(getattr(self, "_connection", None),
                           negotiation.init if negotiation is not None else None)

