"""``ServerCore``: the definition of an MCP server — its identity, tools and method table.

The user-facing :class:`mcpsync.Server` is this class with the tasks extension and
Streamable HTTP serving added one floor above (:mod:`mcpsync.facade`): nothing here
imports ``mcpsync.http`` or ``mcpsync.tasks``. Extensions plug in through :meth:`use`.

A Server is a definition, not a connection: one Server serves any number of sessions at
once (a stdio stream, many HTTP clients, in-memory test clients). Register tools and
handlers before serving or while serving: registries are thread-safe and a change is
announced to connected clients.

This module holds the class: identity, capabilities, extensions, lifespan and the serving
entry points. Its base, :class:`~mcpsync.server.definition.ServerDefinition`, holds the
registries, the method table and the registration decorators. The built-in method
handlers are in ``builtins.py``; what a tool, resource or prompt is, how it is described
and how it is run, in ``tools.py``, ``resources.py`` and ``prompts.py``; serving itself
in ``session.py``, ``stdio.py`` and ``mcpsync.http``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..codec import to_wire
from ..dispatch.context import HandlerContext
from ..engine.connection import Middleware
from ..engine.pool import WorkerPool
from ..protocol.bus import Bus
from ..protocol.methods import VIEWS
from ..protocol.versions import features
from ..telemetry.config import Telemetry
from ..telemetry.instrumentation import Instrumentation
from ..transports.base import Transport
from ..transports.stream import WRITE_TIMEOUT
from .builtins import core_methods
from .definition import NotificationHandler as NotificationHandler
from .definition import ServerDefinition
from .dispatcher import Dispatcher
from .event_relay import EventRelay
from .extensions import Extensions, Plugged
from .handlers import Guard
from .handlers import MethodHandler as MethodHandler
from .handlers import ScopeFactory as ScopeFactory
from .lifespan import Lifespan
from .listen import Followed, ListenRegistry, serve_listen
from .mount import Mounts, known_name, mount
from .options import ProtocolOptions, ServerDetails, ServerLimits
from .owners import owner_of
from .scopes import reader
from .session import ConnectedSessions, ServerSession
from .stdio import serve_stdio
from .subscribers import ResourceSubscribers
from .visibility import Visibility

if TYPE_CHECKING:
    from typing_extensions import Self

E = TypeVar("E", bound="Extension")


class Extension(Plugged, Protocol):
    """What :meth:`ServerCore.use` takes: an extension that installs itself on one server
    (its methods through ``server.methods``, the handlers it changes through
    :meth:`ServerCore.wrap_method`, its keywords through :meth:`ServerCore.declare_options`)
    and answers the server's questions of
    :class:`~mcpsync.server.extensions.Plugged`."""

    def install(self, server: ServerCore) -> None:
        """Register what the extension serves on ``server`` (called once, by ``use``)."""


class ServerCore(ServerDefinition):
    """An MCP server definition (``mcpsync.Server`` is this with tasks and HTTP serving).

    ``name``, ``version``, ``title`` and ``instructions`` are what ``initialize`` (and
    ``server/discover``) tell clients; ``details`` (:class:`~.options.ServerDetails`) the
    rest of ``serverInfo``. The options few servers change are grouped: ``limits``
    (:class:`~.options.ServerLimits`: the handler cap, listens, timeouts, page size) and
    ``protocol`` (:class:`~.options.ProtocolOptions`: revisions, declared capabilities,
    cache hints). Thread-safe.

    ``lifespan``: ``fn(server)`` returning a context manager (or a generator function
    yielding once) entered at startup and exited at shutdown; what it yields is
    ``server.state`` and ``ctx.state`` in every handler. Startup runs once per process
    (see :meth:`start`); threads arriving while it runs wait up to
    ``limits.startup_timeout``.

    ``request_state_key``: the HMAC key of 2026-07-28 multi round-trip ``requestState``;
    give every process that serves the same clients the same one (see
    :attr:`.dispatcher.Dispatcher.state_key`).

    What a user calls is public (docs/server.md, "What a Server shows"); the parts the
    package's own layers are handed (the :class:`~.dispatcher.Dispatcher` a request is
    answered through, the :class:`~.mount.Mounts`) are underscore names, so
    ``dir(server)`` lists only the former.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        details: ServerDetails | None = None,
        lifespan: Callable[[Self], Any] | None = None,
        request_state_key: bytes | str | None = None,
        limits: ServerLimits | None = None,
        protocol: ProtocolOptions | None = None,
        telemetry: bool | Telemetry = True,
    ) -> None:
        limits = limits or ServerLimits()
        protocol = protocol or ProtocolOptions()
        details = details or ServerDetails()
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        #: The display fields of ``serverInfo`` (:class:`~.options.ServerDetails`).
        self.details = details
        #: The bounds it was given (:class:`~.options.ServerLimits`).
        self.limits = limits
        # OpenTelemetry spans and metrics of everything this server serves (nothing is
        # made until an SDK is configured; ``telemetry=False`` turns it off).
        instrumentation = Instrumentation(Telemetry.of(telemetry), "server", known=self._knows)
        if not protocol.legacy_versions and not protocol.modern_versions:
            raise ValueError("legacy_versions and modern_versions are both empty: the server "
                             "would speak no revision")
        unknown = set(protocol.declare) - set(_DERIVED)
        if unknown:
            raise ValueError(f"declare: unknown capabilities {sorted(unknown)}; "
                             f"use some of {list(_DERIVED)}")
        #: What it speaks and tells clients (:class:`~.options.ProtocolOptions`): the
        #: revisions, the capabilities declared before anything of their kind is
        #: registered, the caching hints, whether handler errors are exposed.
        self.protocol = protocol
        #: Middleware on every message this server sends / receives; outermost first. A
        #: session takes a copy when it connects: change these before serving.
        self.send_middleware: list[Middleware] = []
        self.recv_middleware: list[Middleware] = []
        # The registries, the method table and the request scopes (ServerDefinition).
        super().__init__(name, lambda kind: self.notify_list_changed(kind))
        #: The extensions installed by :meth:`use`.
        self._extensions = Extensions()
        #: What every request is answered through (a session's, a stateless request's, a
        #: mount's): the handlers, the guards and request scopes, the identity and
        #: capabilities by revision, the ``requestState`` key, the telemetry.
        self._dispatcher = Dispatcher(
            self.methods, catalog=self, request_scopes=self._request_scopes,
            extensions=self._extensions, telemetry=instrumentation, info=self._info_for,
            capabilities=self._capabilities_for, request_state_key=request_state_key)
        self._sessions = ConnectedSessions()
        instrumentation.gauges.track("sessions.open", self._sessions, len)
        self.subscribers = ResourceSubscribers()  #: who subscribes to what, either era
        #: Open ``subscriptions/listen`` streams (2026-07-28), across sessions.
        self.listeners = ListenRegistry(limits.max_subscriptions, self.subscribers)
        self._lifespan = Lifespan(self, lifespan, limits.startup_timeout)
        #: The servers :meth:`mount` put here (and the merging handlers, from the first),
        #: and who hears of this server's changes besides its sessions (the servers it is
        #: mounted in, an HTTP app relaying between workers: ``Mounts.hooks``).
        self._mounts = Mounts(self, self._lifespan, self._provides,
                              self._dispatcher.run_handler)
        #: Where this server's events go to (and come from) the other workers.
        self._relay = EventRelay(self.listeners)
        for method, handler in {**core_methods(self, self._completions,
                                               self._dispatcher.capabilities_for),
                                "subscriptions/listen": self._listen}.items():
            self.methods.set_default(method, handler)
        #: Who sees which component (``permission=``, ``tags=``, :meth:`disable`).
        self._visibility = self.use(Visibility())


    def _knows(self, kind: str, name: str) -> bool:
        """Whether ``name`` is a registered tool or prompt (telemetry names only those), or
        one a mounted server or a proxy's remote has (:func:`.mount.known_name`)."""
        if kind == "tool":
            return name in self.tools or known_name(self._mounts, kind, name)
        return self.prompts.get(name) is not None or known_name(self._mounts, kind, name)

    def use(self, extension: E) -> E:
        """Plug ``extension`` in (see :class:`Extension`): it installs its methods now,
        its capabilities are declared from now on, and :meth:`stop` closes it. Returns
        it. ``ValueError`` when an extension of the same identifier is in use already
        (a :class:`mcpsync.Server` uses the tasks extension from the start). Call it
        before serving: like a method handler, an extension is part of the definition."""
        self._extensions.add(extension)  # first: a second one of its identifier is refused
        try:
            extension.install(self)
        except BaseException:
            self._extensions.remove(extension)
            raise
        return extension

    def disable(self, *names: str, tags: Iterable[str] = (),
                principal: Callable[[HandlerContext], bool] | None = None) -> None:
        """Hide the tools, resources, templates and prompts named ``names`` (a resource by
        its URI, a template by its URI template) or tagged with one of ``tags``, from
        everybody or from the callers ``principal(ctx)`` picks: they leave the lists
        (whose sessions are told) and are answered as unknown. See docs/permissions.md."""
        self._visibility.disable(names, tags=tags, principal=principal)

    def enable(self, *names: str, tags: Iterable[str] = (),
               principal: Callable[[HandlerContext], bool] | None = None) -> None:
        """Show again what :meth:`disable` hid (the same selection), or show these
        components past a broader rule (to everybody, or the callers ``principal``
        picks); the last rule that selects a component for a caller decides."""
        self._visibility.enable(names, tags=tags, principal=principal)

    # -- lifespan ------------------------------------------------------------------------

    def on_startup(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Register ``fn()`` to run at startup, after the ``lifespan`` is entered, in the
        order registered; it may fill ``server.state`` (a namespace when there is no
        ``lifespan``). One that raises makes startup fail (:class:`StartupError`)."""
        self._lifespan.on_startup.append(fn)
        return fn

    def on_shutdown(self, fn: Callable[[], Any]) -> Callable[[], Any]:
        """Register ``fn()`` to run at shutdown, last registered first, before the
        ``lifespan`` is exited. One that raises is logged; the others still run. Register
        hooks before serving: a server that had none when it started is not remembered
        for interpreter exit (only an explicit :meth:`stop` then runs a later one)."""
        self._lifespan.on_shutdown.append(fn)
        return fn

    def start(self) -> Any:
        """Run startup in this process if it has not run yet, and return the state.

        Called for you: by ``run_stdio`` before the first message, by :meth:`connect`
        (``Client.memory``), and by the WSGI app at its first request or its ``start()``.
        Once per process: a process forked after it (gunicorn ``--preload``) starts again.
        Raises :class:`StartupError` when startup raised (again on every later call, until
        :meth:`stop`).
        """
        return self._lifespan.start()

    def stop(self) -> None:
        """Close the extensions (the tasks extension stops the tasks running in this
        process: each ends ``failed``, "the server stopped", rather than ``working`` until
        its record expires), then run shutdown (``on_shutdown`` hooks, then the
        lifespan's exit) if startup ran in this process. Called by ``run_stdio`` when it
        returns, by the WSGI app's ``close()`` (so by ``run_http``/``mcpsync serve`` on
        exit), and — shutdown only — at interpreter exit (a gunicorn worker's graceful
        exit)."""
        try:
            self._extensions.close(5.0)
        finally:
            self._lifespan.stop()

    @property
    def state(self) -> Any:
        """What the ``lifespan`` yielded (else a namespace the ``on_startup`` hooks fill),
        starting the server in this process first if needed. Handlers read it as
        ``ctx.state``."""
        return self._lifespan.state

    @classmethod
    def proxy(cls, target: str | list[str] | tuple[str, ...] | ServerCore, *,
              name: str | None = None, server_options: Mapping[str, Any] | None = None,
              **client_options: Any) -> Self:
        """A server whose tools, resources, templates, prompts and completions are those
        of ``target``: an http(s) URL, a command line (a list, or a string split as a shell
        would) or a ``Server`` (in this process). ``client_options`` (``headers``, ``auth``,
        ``protocol_version`` — ``"auto"`` by default —, ``timeout``, ``env``…) make its
        :class:`~mcpsync.Client`; ``server_options`` the proxy (``Server(name, ...)``).
        It connects at startup and closes at shutdown; see docs/server.md, "Proxies"."""
        from ..proxy import build_proxy

        client_options.setdefault("protocol_version", "auto")
        # The tool and prompt names its client sends are its callers': telemetry records
        # only those the remote listed (a made-up one is _OTHER, not a metric series).
        client_options["telemetry"] = replace(
            Telemetry.of(client_options.get("telemetry", True)), listed_names_only=True)
        server = cls(name or "mcpsync-proxy", **(server_options or {}))
        return build_proxy(server, target, extensions=server._extensions,
                           client_options=client_options)

    # -- identity ------------------------------------------------------------------------

    def _info_for(self, version: str | None) -> dict[str, Any]:
        """``serverInfo`` with only the fields ``version`` knows."""
        info: dict[str, Any] = {"name": self.name, "version": self.version}
        rules = features(version) if version else None
        if (rules is None or rules.titles) and self.title:
            info["title"] = self.title
        if rules is None or rules.icons:
            details = self.details
            if details.description:
                info["description"] = details.description
            if details.website_url:
                info["websiteUrl"] = details.website_url
            if details.icons:
                info["icons"] = to_wire(list(details.icons))
        return info

    def capabilities(self) -> dict[str, Any]:
        """What this server declares, derived from what is registered now.

        ``tools`` and ``logging`` always (tools may be registered while serving, and any
        handler may log). ``resources``, ``prompts`` and ``completions`` only when
        something of the kind is registered (a resource or template, a prompt, a
        completer), one of its methods has a ``method_handler``, or
        ``ProtocolOptions(declare=...)`` names it. A session's capabilities are those of
        its ``initialize`` (handshake era); 2026-07-28 clients see the current ones at each
        ``server/discover``.
        """
        caps: dict[str, Any] = {"tools": {"listChanged": True}}
        if self._provides("resources"):
            caps["resources"] = {"subscribe": True, "listChanged": True} if (
                self.subscribers.offered) else {"listChanged": True}
        if self._provides("prompts"):
            caps["prompts"] = {"listChanged": True}
        if self._provides("completions"):
            caps["completions"] = {}
        caps["logging"] = {}
        return caps

    def _provides(self, kind: str) -> bool:
        if kind in self.protocol.declare:
            return True
        registered = {"resources": len(self.resources), "prompts": len(self.prompts),
                      "completions": len(self._completions)}[kind]
        return bool(registered) or any(
            self.methods.request_handler(m) is not None and not self.methods.is_default(m)
            for m in VIEWS.by_capability.get(kind, ())) or (
                self._mounts.provides(kind))

    def _capabilities_for(self, version: str) -> dict[str, Any]:
        """Capabilities as ``version`` can honour them.

        In 2026-07-28 ``listChanged`` and ``resources.subscribe`` mean the
        ``subscriptions/listen`` filters are served; without a listen handler (one
        replaced by ``method_handler`` does not count) they are not declared.
        """
        caps = self.capabilities()
        rules = features(version)
        self._extensions.add_capabilities(version, caps)
        if rules.era == "modern" and (
                self.methods.request_handler("subscriptions/listen") != self._listen):
            for kind in ("tools", "prompts", "resources"):
                if kind in caps:
                    caps[kind] = {}
        return caps

    def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed, and every
        ``subscriptions/listen`` stream whose ``resourceSubscriptions`` cover it (the same
        URI or one it is a sub-resource of)."""
        for session in self.sessions():
            session.send_resource_updated(uri)
        for hook in list(self._mounts.hooks.resource_updated):
            hook(uri)
        self.listeners.resource_updated(uri)
        self._relay.resource_updated(uri)

    def relay_events(self, bus: Bus) -> Callable[[], None]:
        """Share this server's server-wide events with the other workers on ``bus``.

        From now on each resource update (:meth:`notify_resource_updated`), list change
        and 2026-07-28 task status (the tasks extension) raised in this process is also
        published on ``bus``, and each one another process publishes reaches this
        process's ``subscriptions/listen`` streams as if raised here (a task's status
        only those of the task's owner). Handshake-era sessions are not served from the
        bus: their notifications travel with the session. A bus that cannot be reached
        is logged; the change still reaches this process's clients. Call it in each
        worker process (after the fork); returns the function that stops relaying."""
        return self._relay.attach(bus)

    def end_subscriptions(self, sessions: list[ServerSession] | None = None, *,
                          timeout: float | None = 5.0) -> bool:
        """End open ``subscriptions/listen`` streams gracefully: each is answered
        ``{"resultType": "complete"}`` after the notifications already due. All of them,
        or those of ``sessions``. Waits up to ``timeout`` for the answers to be sent;
        False when some were still open then. New listens are served as usual."""
        owners = None if sessions is None else [s.ended for s in sessions]
        self.listeners.end(owners)
        return self.listeners.wait_ended(owners, timeout)

    def mount(self, other: ServerCore, prefix: str | None = None) -> None:
        """Serve ``other``'s tools, prompts, resources and templates as this server's own:
        tools and prompts as ``{prefix}_{name}``, URIs as ``scheme://{prefix}/rest``, live,
        through ``other``'s method handlers (so a proxy mounts too). Thread-safe. The rules
        (clashes, lifespan, cycles): :mod:`mcpsync.server.mount`, docs/server.md."""
        if not isinstance(other, ServerCore):
            raise TypeError(f"mount() takes a Server, not {type(other).__name__}")
        mount(self._mounts, other._mounts, prefix)

    def add_middleware(self, guard: Guard) -> Guard:
        """Run ``guard(ctx, params, next_)`` around every handler this server runs (the
        first added outermost), on every transport and era: the one inbound path is
        :meth:`.dispatcher.Dispatcher.run_handler`. :mod:`mcpsync.middleware` holds the
        stock guards (RateLimit, ResponseCache, AuditLog...); message middleware is
        ``recv_middleware``."""
        dispatcher = self._dispatcher
        dispatcher.guards = (*dispatcher.guards, guard)
        return guard

    # -- serving -------------------------------------------------------------------------

    def connect(
        self, transport: Transport, *, name: str = "mcpsync-server", drain_timeout: float = 0.0,
        pool: WorkerPool | None = None, push: bool = False,
    ) -> ServerSession:
        """Serve one client over ``transport`` on background threads; returns its session.

        ``pool``: run its handlers on this shared pool (whose size then bounds them
        together with everything else on it) instead of one of its own. ``push``: start no
        reader thread; the caller hands each received message to
        ``session.connection.deliver`` (the HTTP app, whose messages arrive on request
        threads). Runs startup first if this process has not (:meth:`start`)."""
        self.start()
        session = ServerSession(self, self._dispatcher, transport, name=name,
                                drain_timeout=drain_timeout, pool=pool, push=push,
                                connected=self._sessions)
        self._sessions.add(session)
        return session.start()

    def sessions(self) -> list[ServerSession]:
        """The sessions connected now."""
        return self._sessions.snapshot()

    def notify_list_changed(self, kind: str) -> None:
        """Tell every client that the list of ``kind`` (``"tools"``, ``"resources"``,
        ``"prompts"``) changed: sessions, ``subscriptions/listen`` streams, the other
        workers, and servers this one is mounted in. Registering or removing an item does
        this already; call it when a list is made by your own method handler (a proxy's
        is)."""
        if kind not in ("tools", "resources", "prompts"):
            raise ValueError(f"kind must be 'tools', 'resources' or 'prompts', not {kind!r}")
        for session in self.sessions():
            session.send_list_changed(kind)
        self.listeners.list_changed(kind)
        self._relay.list_changed(kind)
        for hook in list(self._mounts.hooks.list_changed):
            hook(kind)

    def _follow(self, kind: Followed) -> None:
        """Let ``subscriptions/listen`` streams follow an extension's items by id (the
        tasks extension's ``taskIds``): their statuses then reach the listens following
        them through :meth:`_publish_status`. Called by an extension at install."""
        self.listeners.follow(kind)

    def _publish_status(self, field: str, item_id: str, owner: str, version: int,
                        params: dict[str, Any]) -> None:
        """A followed item's status (``field`` names its kind, see :meth:`_follow`), to
        the listens of its ``owner`` here and, once :meth:`relay_events` joins the
        workers, on every other worker. ``version`` orders the statuses of one item."""
        self.listeners.status(field, item_id, owner, params, version=version)
        self._relay.status(field, item_id, owner, version, params)

    def _listen(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        # A method (not a function of builtins.py): _capabilities_for() compares the
        # registered listen handler with it, and a bound method compares equal each time.
        may_read = reader(self, ctx.auth)
        resources = self.resources

        def may_hear(uri: str) -> bool:  # per-item scopes, and what is hidden from it
            return may_read(uri) and not resources.hidden(uri, ctx)

        return serve_listen(self.listeners, self.capabilities(), ctx, params,
                            principal=owner_of(ctx), may_read=may_hear)

    def run_stdio(self, *, drain_timeout: float = 2.0,
                  write_timeout: float = WRITE_TIMEOUT) -> None:
        """Serve one client over this process's stdin/stdout until EOF or SIGINT/SIGTERM.

        While serving, ``sys.stdout`` (and file descriptor 1) point at stderr, so a stray
        ``print`` can not corrupt the protocol stream. At EOF, running handlers get
        ``drain_timeout`` seconds to answer before they are cancelled. A message the client
        does not take within ``write_timeout`` seconds (it stopped reading our stdout) ends
        the session the same way.
        """
        serve_stdio(self, drain_timeout=drain_timeout, write_timeout=write_timeout)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self.name!r}, version={self.version!r}, "
                f"tools={len(self.tools)})")


#: The capabilities derived from registrations; the methods that serve each are the
#: method table's rows that need it (``VIEWS.by_capability``).
_DERIVED: tuple[str, ...] = ("resources", "prompts", "completions")

