"""``Client``: a blocking MCP client with no event loop.

One Client is one connection to one server. Every method blocks the calling thread until
the answer arrives or its deadline passes, and any number of threads may call methods of
the same Client at once: requests are correlated by id, each caller waits on its own
Future. Ctrl-C while a call waits cancels that call on the server, then raises
``KeyboardInterrupt`` as usual. Thread-safe.

This module is the API. ``Client`` composes collaborators that own their state and never
see the ``Client``: :class:`~.negotiate.Negotiation` (the era, its envelope, what the
server said), :class:`~.calls.Calls` (the request path: envelope, cache, multi round-trip),
:class:`~.inbound.Inbound` (what the server sends: its requests, notifications, input
requests), :class:`~.subscribe.Subscriptions` (``listen`` in each era) and
:class:`~.task_calls.ClientTasks`.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from .._version import __version__
from ..codec import from_wire
from ..dispatch.registry import MethodRegistry
from ..display import ToolList
from ..engine.connection import (
    DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
    DEFAULT_MAX_QUEUED_NOTIFICATIONS,
    DEFAULT_TIMEOUT,
    Connection,
    ConnectionLimits,
    Middleware,
)
from ..errors import ConnectionClosedError, ProtocolStateError
from ..protocol import levels
from ..protocol.jsonrpc import Notification
from ..protocol.redact import redact
from ..protocol.versions import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS
from ..transports.base import Transport
from ..transports.memory import InProcessServer, memory_pair
from ..types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Implementation,
    InitializeResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from .cache import ResponseCache
from .calls import CallOptions, Calls, ProgressHandler, raw, typed
from .host import ClientMethodHandler, ClientNotificationHandler
from .inbound import (
    ElicitationHandler,
    HostHandlers,
    Inbound,
    LogHandler,
    NotificationCallback,
    RootsSource,
    SamplingHandler,
)
from .listen import Listens, Subscription, SubscriptionCallback
from .mrtr import INPUT_MODES
from .negotiate import Negotiation
from .subscribe import Subscriptions
from .task_calls import ClientTasks
from .tasks import TaskHandle

logger = logging.getLogger("mcpsync.client")

__all__ = ["Client", "ConnectionClosedError", "ElicitationHandler", "LogHandler",
           "NotificationCallback", "ProgressHandler", "RootsSource", "SamplingHandler"]


class Client:
    """A connected MCP client. Make one with :meth:`stdio`, :meth:`memory` or from a transport.

    ``timeout`` is the default deadline (seconds) of every request; each method takes its
    own ``timeout=`` too. ``on_log`` receives the server's log messages and
    ``on_notification(method, params)`` every other notification; both run on the
    connection's notification thread, in arrival order. Notifications waiting for a slow
    callback are bounded (``max_queued_notifications``, ``max_queued_notification_bytes``):
    past either, new ones are dropped with one warning per burst.

    ``method_handlers`` (method -> ``fn(request, params)``) and ``notification_handlers``
    (method -> ``fn(params)`` or a list of them) register custom methods before the
    connection starts; :meth:`method_handler` and :meth:`notification_handler` do so
    afterwards. All live in :attr:`methods`.

    ``log_level`` (``"debug"`` … ``"emergency"``) is the least severe log message the
    server should send. In 2026-07-28 it goes as ``logLevel`` in every request's ``_meta``
    (without one a server sends no logs at all, so with ``on_log`` given it defaults to
    ``"debug"``: the handshake era's servers send every level until told otherwise); in
    the handshake era it is sent as ``logging/setLevel`` right after ``initialize`` when
    the server declares ``logging``.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        client_info: Implementation | None = None,
        protocol_version: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        on_log: LogHandler | None = None,
        on_notification: NotificationCallback | None = None,
        log_level: str | None = None,
        send_middleware: Sequence[Middleware] = (),
        recv_middleware: Sequence[Middleware] = (),
        max_handlers: int = 16,
        name: str = "mcpsync-client",
        elicitation_handler: ElicitationHandler | None = None,
        sampling_handler: SamplingHandler | None = None,
        sampling_tools: bool = False,
        roots: RootsSource | None = None,
        max_input_rounds: int = 8,
        input_mode: str = "auto",
        cache: bool | ResponseCache = True,
        extra_capabilities: Mapping[str, Any] | None = None,
        max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS,
        max_queued_notification_bytes: int = DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
        method_handlers: Mapping[str, ClientMethodHandler] | None = None,
        notification_handlers: Mapping[
            str, ClientNotificationHandler | Sequence[ClientNotificationHandler]] | None = None,
    ) -> None:
        self.client_info = client_info or Implementation("mcpsync", __version__)
        known = (*LEGACY_VERSIONS, *MODERN_VERSIONS, "auto")
        if protocol_version is not None and protocol_version not in known:
            raise ValueError(f"protocol_version {protocol_version!r} is not one of {known}")
        if log_level is not None and not levels.is_level(log_level):
            raise ValueError(f"log_level {log_level!r} is not one of {levels.LEVELS}")
        if input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode {input_mode!r} is not one of {INPUT_MODES}")
        #: ``timeout``, ``input_mode`` and ``max_input_rounds``, read by every call.
        self._options = CallOptions(timeout, input_mode, max_input_rounds)
        #: The response cache for ``ttlMs`` hints (None when turned off with cache=False).
        self.cache: ResponseCache | None = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None)
        listens = Listens()
        self._cleanup: list[Callable[[], None]] = []
        #: Tasks (v1 and the v2 extension): see :mod:`mcpsync.client.task_calls`.
        self._tasks = ClientTasks(
            request=lambda method, params, wait: self.request(method, params, timeout=wait,
                                                              cache=False),
            answer=lambda method, params: self._inbound.answer_input(method, params),
            capabilities=lambda: (self.server_capabilities,
                                  self._negotiation.envelope is not None),
            list_tools=self.list_tools, default_timeout=lambda: self.timeout,
            listen=lambda task_id, wait: self.listen(
                tools=False, prompts=False, resources=False, task_ids=[task_id],
                timeout=wait))
        #: Every method this client answers and notification it hears: the built-ins
        #: (``ping`` and the host handlers given above), then custom ones.
        self.methods: MethodRegistry[ClientMethodHandler, ClientNotificationHandler] = (
            MethodRegistry(f"client {name!r}"))
        self._inbound = Inbound(self.methods, HostHandlers(
            elicitation=elicitation_handler, sampling=sampling_handler,
            sampling_tools=sampling_tools, roots=roots, on_log=on_log,
            on_notification=on_notification, extra_capabilities=extra_capabilities),
            cache=self.cache, listens=listens, tasks=self._tasks)
        for method, handler in (method_handlers or {}).items():
            self.methods.add_request(method, handler)
        for method, handlers in (notification_handlers or {}).items():
            for one in [handlers] if callable(handlers) else handlers:
                self.methods.add_notification(method, one)
        # The connection's threads reach what answers them only through a weak reference,
        # so that a client dropped without close() can be collected and its finalizer end
        # the connection (and a stdio server): a notebook cell run again leaks no processes.
        inbound = weakref.ref(self._inbound)
        self._connection = Connection(
            transport,
            on_request=lambda request: _alive(inbound).on_request(request),
            on_notification=lambda message: _if_alive(inbound, message),
            send_middleware=send_middleware,
            recv_middleware=recv_middleware,
            limits=ConnectionLimits(
                max_handlers=max_handlers, default_timeout=timeout,
                max_queued_notifications=max_queued_notifications,
                max_queued_notification_bytes=max_queued_notification_bytes),
            name=name,
            caller_reads=True,  # over stdio a caller reads its own answer (read_role.py)
        )
        deliver_to = getattr(transport, "deliver_to", None)
        if callable(deliver_to):
            deliver_to(self._connection.deliver)
        self._negotiation = Negotiation(
            self._connection, requested_version=protocol_version or LATEST_LEGACY,
            client_info=self.client_info, capabilities=self.capabilities,
            log_level=log_level, logs_wanted=on_log is not None,
            timeout=lambda: self.timeout)
        self._calls = Calls(self._connection, self._negotiation, self.cache, self._options,
                            self._inbound.answer_input)
        self._subscriptions = Subscriptions(self._connection, listens, self._calls,
                                            self._negotiation)
        self._finalizer = weakref.finalize(self, _dropped, _describe(transport), self._connection,
                                           self._cleanup)
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
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: IO[str] | None = None,
        inherit_env: bool = True,
        **options: Any,
    ) -> Client:
        """Spawn a server process and connect to it over its stdin/stdout.

        ``env`` adds to (or with ``inherit_env=False`` replaces) this process's environment.
        The server's stderr goes to ``stderr`` if given, else to the
        ``mcpsync.server_stderr`` logger. Closing the client reaps the process.
        """
        from ..transports.subprocess import SubprocessTransport

        transport = SubprocessTransport(
            command, env=env, cwd=cwd, stderr=stderr, inherit_env=inherit_env
        )
        options.setdefault("name", "mcpsync-client-stdio")
        try:
            return cls(transport, **options)
        except BaseException:
            transport.close()
            raise

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
        client._cleanup.append(session.close)
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
        from ..transports.http import DEFAULT_READ_TIMEOUT, HttpTransport

        if read_timeout is None:
            timeout = options.get("timeout", DEFAULT_TIMEOUT)
            read_timeout = max(DEFAULT_READ_TIMEOUT, (timeout or 0.0) + 10.0)
        transport = HttpTransport(url, session=session, headers=headers,
                                  connect_timeout=connect_timeout, read_timeout=read_timeout,
                                  max_in_flight=max_in_flight,
                                  max_message_bytes=max_message_bytes, auth=auth)
        options.setdefault("name", "mcpsync-client-http")
        options.setdefault("protocol_version", "auto")
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
    def timeout(self) -> float:
        """The default deadline (seconds) of every request; settable."""
        return self._options.timeout

    @timeout.setter
    def timeout(self, value: float) -> None:
        self._options.timeout = value

    @property
    def input_mode(self) -> str:
        """"auto": host handlers answer MRTR questions; "manual": calls raise
        :class:`~mcpsync.client.mrtr.InputRequiredError` (see :mod:`mcpsync.client.mrtr`)."""
        return self._options.input_mode

    @input_mode.setter
    def input_mode(self, value: str) -> None:
        if value not in INPUT_MODES:
            raise ValueError(f"input_mode {value!r} is not one of {INPUT_MODES}")
        self._options.input_mode = value

    @property
    def max_input_rounds(self) -> int:
        """Bound on 2026-07-28 multi round-trip rounds for one call; settable."""
        return self._options.max_input_rounds

    @max_input_rounds.setter
    def max_input_rounds(self, value: int) -> None:
        self._options.max_input_rounds = value

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
        self._finalizer.detach()
        _close_parts(self._connection, self._cleanup)
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

    @property
    def task_surface(self) -> str | None:
        """The task surface the server offers: ``"v2"`` (the extension), ``"v1"``
        (2025-11-25) or None (no tasks). See :mod:`mcpsync.client.tasks`."""
        return self._tasks.surface

    # -- requests ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | str | None = None,
        input_mode: str | None = None,
        cache: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return the raw result dict (the escape hatch).

        Under 2026-07-28 the per-request envelope is added to ``params._meta``, a fresh
        cached result is returned without asking (``cache=False`` always asks), and
        ``input_required`` results are followed (``input_mode``, default the client's).
        """
        result: dict[str, Any] = self._calls.send(method, params, timeout, on_progress,
                                                  input_mode, cache, raw)
        return result

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        self._connection.notify(method, params)

    def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers; raises on timeout or error.

        2026-07-28 has no ``ping``: ``server/discover`` serves as the liveness check.
        """
        modern = self._negotiation.envelope is not None
        self.request("server/discover" if modern else "ping", timeout=timeout, cache=False)

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool the server offers (all pages), as a :class:`~mcpsync.display.ToolList`:
        a list a notebook shows as a table."""
        items = self._calls.all_pages("tools/list", "tools", timeout)
        self._tasks.support.learn(items)
        return ToolList(from_wire(Tool, item) for item in items)

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | str | None = None,
        meta: dict[str, Any] | None = None,
        input_mode: str | None = None,
    ) -> CallToolResult:
        """Call a tool and return its result.

        A tool that failed is a result with ``is_error`` true (its text says why), not an
        exception; protocol failures (unknown tool, bad params) raise
        :class:`~mcpsync.errors.MCPError`. ``on_progress`` receives
        :class:`~mcpsync.types.Progress` updates, all of them before this returns;
        ``on_progress="bar"`` draws them as a progress bar (tqdm when installed, else a text
        bar on stderr; see :func:`mcpsync.display.progress_bar`).

        A call the server runs as a task (v2: the server decides; v1: the tool requires it)
        is followed to its end: polled, its questions answered by the client's handlers,
        its result returned. ``timeout`` then bounds the whole wait; when it passes (or on
        Ctrl-C) the task is cancelled on the server before the exception propagates.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if meta:
            params["_meta"] = dict(meta)
        convert = self._tasks.converter(self._tasks.prepare_call(name, params), timeout)
        result: CallToolResult = self._calls.send("tools/call", params, timeout, on_progress,
                                                  input_mode, True, convert)
        return result

    def start_task(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                   ttl: float | None = None, timeout: float | None = None,
                   meta: dict[str, Any] | None = None) -> TaskHandle:
        """Start a tool as a task and return at once with its :class:`TaskHandle`.

        ``ttl`` (seconds) asks a v1 server to keep the task that long (v2 servers choose).
        See :mod:`mcpsync.client.tasks`; raises
        :class:`~mcpsync.errors.ProtocolStateError` when the server offers no tasks.
        """
        params = self._tasks.start_params(name, arguments, ttl, meta)
        answer = self._calls.send("tools/call", params, timeout, None, None, False, raw)
        return self._tasks.started(answer)

    def task(self, task_id: str, *, timeout: float | None = None) -> TaskHandle:
        """Re-attach to a task by id (made by this or any other client of the server,
        e.g. before a notebook kernel restarted). Raises the server's error (-32602) when
        the task is unknown, expired or not visible to this client."""
        return self._tasks.attach(task_id, timeout)

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource with a fixed URI (all pages)."""
        return [from_wire(Resource, item)
                for item in self._calls.all_pages("resources/list", "resources", timeout)]

    def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template (all pages)."""
        return [from_wire(ResourceTemplate, item) for item in
                self._calls.all_pages("resources/templates/list", "resourceTemplates", timeout)]

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      input_mode: str | None = None) -> ReadResourceResult:
        """Read a resource; a missing one raises :class:`~mcpsync.errors.ResourceNotFoundError`
        (in either era: see docs/client.md, "Errors")."""
        result: ReadResourceResult = self._calls.send(
            "resources/read", {"uri": uri}, timeout, None, input_mode, True,
            typed(ReadResourceResult))
        return result

    def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_notification``)."""
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt (all pages)."""
        return [from_wire(Prompt, item)
                for item in self._calls.all_pages("prompts/list", "prompts", timeout)]

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        timeout: float | None = None, input_mode: str | None = None,
    ) -> GetPromptResult:
        """Render a prompt with ``arguments`` (strings)."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        result: GetPromptResult = self._calls.send("prompts/get", params, timeout, None,
                                                   input_mode, True, typed(GetPromptResult))
        return result

    def complete(
        self,
        ref: str,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """Suggestions for a prompt argument (``ref`` = prompt name) or a template variable
        (``ref`` = the URI template)."""
        from ..protocol.uritemplate import is_template

        reference = ({"type": "ref/resource", "uri": ref} if is_template(ref)
                     else {"type": "ref/prompt", "name": ref})
        params: dict[str, Any] = {"ref": reference,
                                  "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        result = self.request("completion/complete", params, timeout=timeout)
        return from_wire(Completion, result.get("completion") or {})

    @property
    def log_level(self) -> str | None:
        """The least severe log message the server is asked for (None: the server's
        default in the handshake era, no logs at all in 2026-07-28)."""
        return self._negotiation.log_level

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send only log messages at ``level`` or above.

        Handshake era: ``logging/setLevel`` (the server's answer, or error, is raised).
        2026-07-28 has no such method: ``level`` becomes the ``logLevel`` of every request
        sent from now on (no request is made; ``timeout`` is unused).
        """
        self._negotiation.set_logging_level(level, timeout)

    # -- subscriptions -------------------------------------------------------------------

    def listen(
        self,
        *,
        tools: bool = True,
        prompts: bool = True,
        resources: bool = True,
        resource_uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
        on_notification: SubscriptionCallback | None = None,
        timeout: float | None = None,
    ) -> Subscription:
        """Subscribe to list changes and resource updates; returns once acknowledged.

        Under 2026-07-28 this opens a ``subscriptions/listen`` request that stays open
        until :meth:`Subscription.close`. In the handshake era it follows the session's
        list_changed notifications and ``resources/subscribe`` for ``resource_uris``.
        Iterate the subscription, or pass ``on_notification(note)`` to have every
        notification handed to it on the subscription's own thread. ``acknowledged``
        says what the server agreed to send. ``task_ids`` asks for the status changes
        (``notifications/tasks``) of those tasks (the tasks extension, 2026-07-28 only;
        see :meth:`TaskHandle.subscribe <mcpsync.client.tasks.TaskHandle.subscribe>`).
        """
        wanted: dict[str, Any] = {field: True for field, on in (
            ("toolsListChanged", tools), ("promptsListChanged", prompts),
            ("resourcesListChanged", resources)) if on}
        if resource_uris:
            wanted["resourceSubscriptions"] = list(dict.fromkeys(resource_uris))
        if task_ids:
            wanted["taskIds"] = list(dict.fromkeys(task_ids))
        wait = self.timeout if timeout is None else timeout
        return self._subscriptions.open(wanted, on_notification, wait)

    def __repr__(self) -> str:
        """Which server, over what, in which era: ``<Client 'weather' 1.0.0 over stdio:
        python server.py, 2025-11-25>``. Never a credential (headers are not shown, a URL's
        credentials are redacted); server strings are shown escaped."""
        connection = getattr(self, "_connection", None)
        target = _target(connection.transport) if connection is not None else "?"
        negotiation = getattr(self, "_negotiation", None)
        init = negotiation.init if negotiation is not None else None
        if connection is None or init is None:
            state = "closed" if connection is None or connection.closed else "connecting"
            return f"<Client ({state}) {target}>"
        info = init.server_info
        version = "".join(ch for ch in str(info.version)[:40] if ch.isprintable())
        era = "closed" if connection.closed else init.protocol_version
        return f"<Client {str(info.name)[:80]!r} {version} {target}, {era}>"


#: How long a finalizer run at interpreter exit waits for a dropped client's connection to
#: close (and a stdio server to exit: stdin closed, then SIGTERM, then SIGKILL, 2 s apart).
_FINALIZE_WAIT = 15.0


def _describe(transport: Transport) -> str:
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


def _alive(ref: weakref.ref[Inbound]) -> Inbound:
    inbound = ref()
    if inbound is None:  # collected with its client: the finalizer is closing the connection
        raise ConnectionClosedError("the client was dropped without close()")
    return inbound


def _if_alive(ref: weakref.ref[Inbound], message: Notification) -> None:
    inbound = ref()
    if inbound is not None:
        inbound.dispatch_notification(message)


def _close_parts(connection: Connection, cleanup: list[Callable[[], None]]) -> None:
    """What closing ends: the connection (its transport reaps a stdio server), then the
    cleanups (a memory server's session). Shared by :meth:`Client.close` and the
    finalizer, which must not hold the client itself."""
    connection.close()
    for step in list(cleanup):
        step()
    cleanup.clear()


def _dropped(transport: str, connection: Connection,
             cleanup: list[Callable[[], None]]) -> None:
    """The finalizer of a client garbage-collected (or alive at exit) without close()."""
    if not connection.closed or cleanup:
        warnings.warn(f"an mcpsync Client over {transport} was not closed; closing it now "
                      "(use `with Client...` or call close())", ResourceWarning, stacklevel=2)
    # The garbage collector runs this on whichever thread allocated: a user's main thread
    # (waiting here would stall it at a random allocation and swallow a Ctrl-C pressed
    # meanwhile), or one of this very connection's threads while it holds the connection's
    # lock (closing here could deadlock). So a thread of its own closes, and nobody waits
    # for it: it is not a daemon, so the interpreter waits for it at exit. Only when this
    # runs at exit itself (weakref.finalize's atexit hook, after that wait) is it joined
    # here, bounded, so that a stdio server is not left running.
    exiting = not threading.main_thread().is_alive()
    closer = threading.Thread(target=_close_parts, args=(connection, cleanup),
                              daemon=exiting, name=f"{connection.name}-finalizer")
    closer.start()
    if exiting:
        closer.join(_FINALIZE_WAIT)

