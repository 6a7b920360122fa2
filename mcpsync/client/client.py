"""``Client``: a blocking MCP client with no event loop.

One Client is one connection to one server. Every method blocks the calling thread until
the answer arrives or its deadline passes, and any number of threads may call methods of
the same Client at once: requests are correlated by id, each caller waits on its own
Future. Ctrl-C while a call waits cancels that call on the server, then raises
``KeyboardInterrupt`` as usual. Thread-safe.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import IO, TYPE_CHECKING, Any, Union

from .._version import __version__
from ..codec import from_wire, to_wire
from ..dispatch.registry import MethodRegistry
from ..engine.connection import (
    DEFAULT_MAX_QUEUED_NOTIFICATION_BYTES,
    DEFAULT_MAX_QUEUED_NOTIFICATIONS,
    DEFAULT_TIMEOUT,
    Connection,
    InboundRequest,
    Middleware,
)
from ..errors import (
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosedError,
    InvalidParamsError,
    MCPError,
    MCPSyncError,
    MethodNotFoundError,
    ProtocolStateError,
    RequestCancelledError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol.envelope import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_VERSION,
)
from ..protocol.jsonrpc import Notification
from ..protocol.versions import LATEST_LEGACY, LEGACY_VERSIONS, MODERN_VERSIONS, features
from ..transports.base import Transport
from ..transports.memory import memory_pair
from ..types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Implementation,
    InitializeResult,
    LogMessage,
    Progress,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)
from .cache import ResponseCache, cache_key
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
from .listen import Listens, Subscription, SubscriptionCallback
from .mrtr import INPUT_MODES, resolve

if TYPE_CHECKING:
    from ..server.server import Server
    from ..server.session import ServerSession

logger = logging.getLogger("mcpsync.client")

ProgressHandler = Callable[[Progress], None]
#: ``fn(params)`` or ``fn(params, request)``: gets the typed params, returns the typed result
#: or a dict in wire shape. ``request`` (a :class:`HostRequest`) tells of cancellation.
ElicitationHandler = Callable[..., Any]
SamplingHandler = Callable[..., Any]
RootsSource = Union[Sequence[Any], Callable[[], Sequence[Any]]]  # noqa: UP007
LogHandler = Callable[[LogMessage], None]
NotificationCallback = Callable[[str, dict[str, Any]], None]

_MAX_PAGES = 10_000


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
        self.requested_version = protocol_version or LATEST_LEGACY
        #: The per-request ``_meta`` envelope when speaking 2026-07-28, else ``None``.
        self._envelope: dict[str, Any] | None = None
        #: Bound on 2026-07-28 multi round-trip rounds for one call.
        self.max_input_rounds = max_input_rounds
        if input_mode not in INPUT_MODES:
            raise ValueError(f"input_mode {input_mode!r} is not one of {INPUT_MODES}")
        #: "auto": host handlers answer MRTR questions; "manual": calls raise
        #: :class:`~mcpsync.client.mrtr.InputRequiredError` (see :mod:`mcpsync.client.mrtr`).
        self.input_mode = input_mode
        #: Declared on top of what the handlers serve (e.g. for manual-mode answers).
        self._extra_capabilities = dict(extra_capabilities or {})
        #: The response cache for ``ttlMs`` hints (None when turned off with cache=False).
        self.cache: ResponseCache | None = (
            cache if isinstance(cache, ResponseCache) else ResponseCache() if cache else None)
        self._listens = Listens()
        #: Held across a handshake-era subscribe/unsubscribe and the count change that
        #: called for it, so that the server applies them in the order the counts changed.
        self._subscribe_lock = threading.Lock()
        self.timeout = timeout
        self._on_log = on_log
        self._on_notification = on_notification
        self._elicitation_handler = elicitation_handler
        self._sampling_handler = sampling_handler
        self._sampling_tools = sampling_tools
        self._roots = roots
        self._roots_lock = threading.Lock()
        self._cleanup: list[Callable[[], None]] = []
        #: Every method this client answers and notification it hears: the built-ins
        #: (``ping`` and the host handlers given above), then custom ones.
        self.methods: MethodRegistry[ClientMethodHandler, ClientNotificationHandler] = (
            MethodRegistry(f"client {name!r}"))
        self._install_builtin_methods()
        for method, handler in (method_handlers or {}).items():
            self.methods.add_request(method, handler)
        for method, handlers in (notification_handlers or {}).items():
            for one in [handlers] if callable(handlers) else handlers:
                self.methods.add_notification(method, one)
        self._connection = Connection(
            transport,
            on_request=self._on_request,
            on_notification=self._dispatch_notification,
            send_middleware=send_middleware,
            recv_middleware=recv_middleware,
            max_handlers=max_handlers,
            default_timeout=timeout,
            name=name,
            max_queued_notifications=max_queued_notifications,
            max_queued_notification_bytes=max_queued_notification_bytes,
        )
        self._init: InitializeResult | None = None
        self._connection.start()
        try:
            self._initialize()
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
    def memory(cls, server: Server, **options: Any) -> Client:
        """Connect to ``server`` in this process (for tests and embedding)."""
        client_end, server_end = memory_pair()
        session: ServerSession = server.connect(server_end, name="mcpsync-memory-server")
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

    def _initialize(self) -> None:
        if self.requested_version == "auto":
            # Probe with server/discover; a handshake-only server answers with some error
            # (or nothing), and then the handshake follows. Never keyed on one error code.
            self.requested_version = MODERN_VERSIONS[0]
            try:
                if self._discover_negotiated(timeout=min(self.timeout, 5.0)):
                    return
            except MCPError as exc:
                if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                    raise  # a modern server that speaks none of our revisions
            except ConnectionClosedError:
                raise  # nobody there: the handshake would fail the same way
            except (RequestTimeoutError, ProtocolStateError, TransportError):
                pass  # no answer we can read: try the handshake
            self._envelope = None
            self.requested_version = LATEST_LEGACY
        if features(self.requested_version).era == "modern":
            if not self._discover_negotiated():
                raise ProtocolStateError(
                    f"the server does not speak {self.requested_version}; it asks for the "
                    "handshake era (connect with protocol_version='auto' or a handshake "
                    "version)")
            return
        params = {
            "protocolVersion": self.requested_version,
            "capabilities": self.capabilities(),
            "clientInfo": to_wire(self.client_info),
        }
        raw = self._connection.request("initialize", params)
        result = from_wire(InitializeResult, raw)
        if result.protocol_version not in LEGACY_VERSIONS:
            raise ProtocolStateError(
                f"server chose protocol {result.protocol_version!r}, which mcpsync does not "
                f"speak (it speaks {', '.join(LEGACY_VERSIONS)})"
            )
        self._init = result
        self._connection.notify("notifications/initialized")

    def _discover_negotiated(self, timeout: float | None = None) -> bool:
        """``server/discover``, retried once with a revision from the server's
        ``supported`` list when it refuses ours. False when that list names only
        handshake-era revisions."""
        for attempt in range(2):
            try:
                self._discover(timeout=timeout)
                return True
            except MCPError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or attempt:
                    raise
                data = exc.data if isinstance(exc.data, dict) else {}
                supported = [v for v in data.get("supported") or () if isinstance(v, str)]
                modern = [v for v in MODERN_VERSIONS if v in supported]
                if modern:
                    self.requested_version = modern[0]
                    continue
                if any(v in LEGACY_VERSIONS for v in supported):
                    return False
                raise
        return False

    def _discover(self, timeout: float | None = None) -> None:
        """2026-07-28: no handshake; ``server/discover`` tells who the server is."""
        version = self.requested_version
        caps = self.capabilities()
        if "roots" in caps:
            caps["roots"] = {}  # roots.listChanged does not exist in this era
        self._envelope = {
            META_VERSION: version,
            META_CAPABILITIES: caps,
            META_CLIENT_INFO: to_wire(self.client_info),
        }
        raw = self.request("server/discover", timeout=timeout)
        supported = raw.get("supportedVersions")
        if not isinstance(supported, list) or version not in supported:
            raise ProtocolStateError(
                f"server does not support {version} (it supports {supported!r})")
        meta = raw.get("_meta") or {}
        info = meta.get(META_SERVER_INFO) or {"name": "", "version": ""}
        self._init = from_wire(InitializeResult, {
            "protocolVersion": version, "serverInfo": info,
            "capabilities": raw.get("capabilities") or {},
            **({"instructions": raw["instructions"]} if raw.get("instructions") else {}),
        })

    def capabilities(self) -> dict[str, Any]:
        """The client capabilities declared at ``initialize``: those given handlers serve."""
        caps: dict[str, Any] = {}
        if self._elicitation_handler is not None:
            caps["elicitation"] = {"form": {}, "url": {}}
        if self._sampling_handler is not None:
            caps["sampling"] = {"tools": {}} if self._sampling_tools else {}
        if self._roots is not None:
            caps["roots"] = {"listChanged": True}
        caps.update(self._extra_capabilities)
        return caps

    def _install_builtin_methods(self) -> None:
        methods = self.methods
        methods.set_default("ping", ping_method)
        if self._elicitation_handler is not None:
            methods.set_default("elicitation/create",
                                elicitation_method(self._elicitation_handler))
        if self._sampling_handler is not None:
            methods.set_default("sampling/createMessage",
                                sampling_method(self._sampling_handler, self._sampling_tools))
        if self._roots is not None:
            methods.set_default("roots/list", roots_method(self._current_roots))
        if self._on_log is not None:
            methods.add_notification("notifications/message", self._log_notification)

    def _current_roots(self) -> RootsSource | None:
        with self._roots_lock:
            return self._roots

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
        if self._roots is None:
            raise ProtocolStateError("roots were not declared at connect time (pass roots=)")
        with self._roots_lock:
            self._roots = roots
        self.notify("notifications/roots/list_changed")

    def close(self) -> None:
        """End the connection (and reap a stdio server). Idempotent."""
        self._connection.close()
        for subscription in self._listens.all():
            subscription._finish(ConnectionClosedError("the client was closed"))
        for cleanup in self._cleanup:
            cleanup()
        self._cleanup.clear()

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
        if self._init is None:
            raise ProtocolStateError("not initialized")
        return self._init

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

    # -- requests ------------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | None = None,
        input_mode: str | None = None,
        cache: bool = True,
    ) -> dict[str, Any]:
        """Send any request and return the raw result dict (the escape hatch).

        Under 2026-07-28 the per-request envelope is added to ``params._meta``, a fresh
        cached result is returned without asking (``cache=False`` always asks), and
        ``input_required`` results are followed (``input_mode``, default the client's).
        """
        result: dict[str, Any] = self._request(method, params, timeout, on_progress,
                                               input_mode, cache, _raw)
        return result

    def _request(self, method: str, params: dict[str, Any] | None, timeout: float | None,
                 on_progress: ProgressHandler | None, input_mode: str | None,
                 use_cache: bool, convert: Callable[[dict[str, Any]], Any]) -> Any:
        mode = self.input_mode if input_mode is None else input_mode
        if mode not in INPUT_MODES:
            raise ValueError(f"input_mode {mode!r} is not one of {INPUT_MODES}")
        progress = _progress_adapter(on_progress) if on_progress is not None else None
        params = dict(params or {})
        if self._envelope is not None:
            params["_meta"] = {**self._envelope, **(params.get("_meta") or {})}
        cache = self.cache if use_cache else None
        key = cache_key(method, params) if cache is not None else None
        generation = 0
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                return convert(hit)
            generation = cache.generation()
        try:
            result = self._connection.request(method, params or None, timeout=timeout,
                                              on_progress=progress)
        except InvalidParamsError:
            if cache is not None and key is not None and key[1] is not None and (
                    method.endswith("/list")):
                cache.invalidate(method)  # an invalid cursor: every page is suspect
            raise
        if cache is not None and key is not None:
            cache.store(key, result, generation)  # never an MRTR retry: those are not keyed

        def send(retry: dict[str, Any], retry_timeout: float | None) -> dict[str, Any]:
            return self._connection.request(
                method, retry, timeout=timeout if retry_timeout is None else retry_timeout,
                on_progress=progress)

        return resolve(method, params, result, send=send,
                       answer=self._answer_input if mode == "auto" else None,
                       max_rounds=self.max_input_rounds, convert=convert)

    def _answer_input(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
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

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send any notification."""
        self._connection.notify(method, params)

    def ping(self, *, timeout: float | None = None) -> None:
        """Check the server answers; raises on timeout or error.

        2026-07-28 has no ``ping``: ``server/discover`` serves as the liveness check.
        """
        self.request("ping" if self._envelope is None else "server/discover", timeout=timeout,
                     cache=False)

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every tool the server offers (all pages)."""
        return [from_wire(Tool, item) for item in self._all_pages("tools/list", "tools", timeout)]

    def _all_pages(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            result = self.request(method, params, timeout=timeout)
            page = result.get(key)
            if not isinstance(page, list):
                raise MCPSyncError(f"{method}: result has no {key!r} list")
            items.extend(page)
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
            if cursor in seen:
                raise MCPSyncError(f"{method}: the server repeated cursor {cursor!r}")
            seen.add(cursor)
        raise MCPSyncError(f"{method}: more than {_MAX_PAGES} pages")

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressHandler | None = None,
        meta: dict[str, Any] | None = None,
        input_mode: str | None = None,
    ) -> CallToolResult:
        """Call a tool and return its result.

        A tool that failed is a result with ``is_error`` true (its text says why), not an
        exception; protocol failures (unknown tool, bad params) raise
        :class:`~mcpsync.errors.MCPError`. ``on_progress`` receives
        :class:`~mcpsync.types.Progress` updates, all of them before this returns.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if meta:
            params["_meta"] = dict(meta)
        result: CallToolResult = self._request("tools/call", params, timeout, on_progress,
                                               input_mode, True, _typed(CallToolResult))
        return result

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every resource with a fixed URI (all pages)."""
        return [from_wire(Resource, item)
                for item in self._all_pages("resources/list", "resources", timeout)]

    def list_resource_templates(self, *, timeout: float | None = None) -> list[ResourceTemplate]:
        """Every resource template (all pages)."""
        return [from_wire(ResourceTemplate, item) for item in
                self._all_pages("resources/templates/list", "resourceTemplates", timeout)]

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      input_mode: str | None = None) -> ReadResourceResult:
        """Read a resource; a missing one raises :class:`~mcpsync.errors.MCPError`."""
        result: ReadResourceResult = self._request(
            "resources/read", {"uri": uri}, timeout, None, input_mode, True,
            _typed(ReadResourceResult))
        return result

    def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (see ``on_notification``)."""
        self.request("resources/subscribe", {"uri": uri}, timeout=timeout)

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        self.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every prompt (all pages)."""
        return [from_wire(Prompt, item)
                for item in self._all_pages("prompts/list", "prompts", timeout)]

    def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        timeout: float | None = None, input_mode: str | None = None,
    ) -> GetPromptResult:
        """Render a prompt with ``arguments`` (strings)."""
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        result: GetPromptResult = self._request("prompts/get", params, timeout, None,
                                                input_mode, True, _typed(GetPromptResult))
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

    def set_logging_level(self, level: str, *, timeout: float | None = None) -> None:
        """Ask the server to send only log messages at ``level`` or above."""
        self.request("logging/setLevel", {"level": level}, timeout=timeout)

    # -- subscriptions -------------------------------------------------------------------

    def listen(
        self,
        *,
        tools: bool = True,
        prompts: bool = True,
        resources: bool = True,
        resource_uris: Sequence[str] = (),
        on_notification: SubscriptionCallback | None = None,
        timeout: float | None = None,
    ) -> Subscription:
        """Subscribe to list changes and resource updates; returns once acknowledged.

        Under 2026-07-28 this opens a ``subscriptions/listen`` request that stays open
        until :meth:`Subscription.close`. In the handshake era it follows the session's
        list_changed notifications and ``resources/subscribe`` for ``resource_uris``.
        Iterate the subscription, or pass ``on_notification(note)`` to have every
        notification handed to it on the subscription's own thread. ``acknowledged``
        says what the server agreed to send.
        """
        wanted: dict[str, Any] = {field: True for field, on in (
            ("toolsListChanged", tools), ("promptsListChanged", prompts),
            ("resourcesListChanged", resources)) if on}
        if resource_uris:
            wanted["resourceSubscriptions"] = list(dict.fromkeys(resource_uris))
        wait = self.timeout if timeout is None else timeout
        if self._envelope is None:
            return self._listen_handshake(wanted, on_notification, wait)
        params = {"notifications": wanted,
                  "_meta": dict(self._envelope)}
        request_id = self._connection.new_request_id()
        subscription = Subscription(
            request_id, wanted,
            lambda: self._connection.cancel_request(request_id, "subscription closed"),
            on_notification, self._connection.name)
        self._listens.add(subscription)
        try:
            _, future = self._connection.begin_request(
                "subscriptions/listen", params, request_id=request_id, ordered=True)
        except BaseException:
            self._listens.pop(request_id)
            subscription._finish(ConnectionClosedError("not sent"))
            raise
        future.add_done_callback(lambda done: self._listen_ended(request_id, done))
        if not subscription.wait_acknowledged(wait):
            if subscription.error is not None:
                raise subscription.error
            subscription.close()
            raise RequestTimeoutError(f"subscriptions/listen not acknowledged in {wait} s")
        return subscription

    def _listen_ended(self, request_id: Any, done: Future[dict[str, Any]]) -> None:
        subscription = self._listens.pop(request_id)
        if subscription is None:
            return
        error = done.exception()
        by_server = error is None
        if isinstance(error, RequestCancelledError):
            error = None  # closed here
        subscription._finish(error, by_server=by_server)

    def _listen_handshake(self, wanted: dict[str, Any],
                          on_notification: SubscriptionCallback | None,
                          wait: float) -> Subscription:
        caps = self.server_capabilities
        granted: dict[str, Any] = {field: True for field, kind in (
            ("toolsListChanged", "tools"), ("promptsListChanged", "prompts"),
            ("resourcesListChanged", "resources"))
            if wanted.get(field) and (caps.get(kind) or {}).get("listChanged")}
        uris: list[str] = []
        if "resourceSubscriptions" in wanted and (caps.get("resources") or {}).get("subscribe"):
            uris = list(wanted["resourceSubscriptions"])
            granted["resourceSubscriptions"] = uris
        holder: list[Subscription] = []

        def closer() -> None:
            with self._subscribe_lock:
                for uri in self._listens.remove_legacy(holder[0], uris):
                    if not self.closed:
                        self.unsubscribe(uri, timeout=wait)

        subscription = Subscription(None, wanted, closer, on_notification,
                                    self._connection.name)
        holder.append(subscription)
        subscription._acknowledge(granted)
        try:
            with self._subscribe_lock:
                for uri in self._listens.add_legacy(subscription, uris):
                    self.subscribe(uri, timeout=wait)
        except BaseException:
            subscription.close()
            raise
        return subscription

    # -- from the server -----------------------------------------------------------------

    def _on_request(self, inbound: InboundRequest) -> dict[str, Any]:
        """A request from the server (handshake era), on a handler thread: the registry's
        handler answers; a method nobody registered is -32601."""
        method = inbound.method
        handler = self.methods.request_handler(method)
        if handler is None:
            raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})
        request = HostRequest(inbound.id, method, inbound.cancelled)
        return _checked(method, handler(request, inbound.params))

    def _log_notification(self, params: dict[str, Any]) -> None:
        assert self._on_log is not None
        try:
            message = from_wire(LogMessage, params)
        except ValueError:
            logger.warning("malformed log message: %r", params)
            return
        self._on_log(message)

    def _dispatch_notification(self, message: Notification) -> None:
        params = message.params or {}
        if self.cache is not None:
            self.cache.on_notification(message.method, params)
        if self._listens.route(message.method, params):
            return  # it belonged to a subscriptions/listen stream
        if self.methods.notify(message.method, params):
            return
        if self._on_notification is not None:
            self._on_notification(message.method, params)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<Client {state} protocol={self._init.protocol_version if self._init else None}>"


def _checked(method: str, result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"the handler of {method} returned {type(result).__name__}, "
                        "not a result dict")
    return result


def _raw(result: dict[str, Any]) -> dict[str, Any]:
    return result


def _typed(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
    def convert(result: dict[str, Any]) -> Any:
        return from_wire(cls, result)

    return convert


def _progress_adapter(handler: ProgressHandler) -> Callable[[dict[str, Any]], None]:
    def adapt(params: dict[str, Any]) -> None:
        try:
            progress = from_wire(Progress, params)
        except ValueError:
            logger.warning("malformed progress notification: %r", params)
            return
        handler(progress)

    return adapt


__all__ = ["Client", "ConnectionClosedError"]
