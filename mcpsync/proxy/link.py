"""The proxy's one connection to the remote server: made at startup (or at the first
forwarded request), shared by every request, made again after the remote was lost.

One :class:`~mcpsync.Client` serves all the proxy's requests at once (a Client is
thread-safe). Its host handlers hand the remote's questions to the forwarded request they
belong to (:mod:`.calls`); its log messages go to the one request in flight (with none or
several, to the ``mcpsync.proxy`` logger: a log line says nothing of the request it is
about, and one caller must not read another's); list changes are announced to the
proxy's own clients.

What the proxy's client declares: the questions it forwards (elicitation, sampling,
roots), and the client side of the extensions the proxy's server uses whose client side
it knows (MCP Apps: ``server.use(Apps())`` on the proxy), or that ``host=``'s
``extra_capabilities`` name. Declaring MCP Apps makes the remote list its app-only tools
to the proxy; the proxy then keeps them from each caller that did not declare the
extension itself (:meth:`RemoteLink.shown`, :meth:`RemoteLink.refuse_hidden`), as a server
does. The remote sees the proxy's declaration, not the caller's: a tool that adapts its
text to a client that shows views adapts it for every caller of such a proxy.

A remote that dies fails the requests in flight (and the next one, which finds it gone)
with a -32603 saying what failed (where the remote is goes to the log only); the request
after that connects again. Nothing is retried: a forwarded ``tools/call`` may have had
effects.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from ..client.client import Client
from ..client.host import HostRequest
from ..client.listen import Subscription, SubscriptionNotification
from ..client.options import ClientMiddleware, HostHandlers
from ..client.tracking import CallTracker
from ..dispatch.context import HandlerContext
from ..errors import INTERNAL_ERROR, InvalidParamsError, MCPError, MCPSyncError
from ..protocol.redact import redact
from ..protocol.ui_meta import EXTENSION as APPS
from ..protocol.ui_meta import MIME_TYPE as APP_MIME_TYPE
from ..protocol.ui_meta import declares_apps, visibility
from ..protocol.versions import META_CAPABILITIES
from ..transports.memory import InProcessServer
from ..transports.subprocess import command_line
from ..types import LogMessage
from .call_table import CallTable
from .param_headers import RemoteParamHeaders

if TYPE_CHECKING:
    from .host import ProxyHost, UsedExtensions

logger = logging.getLogger("mcpsync.proxy")

#: What a proxy forwards to: an http(s) URL, a command line (a list, or a string split
#: like a shell would), or a Server of this process.
ProxyTarget = str | list[str] | tuple[str, ...] | InProcessServer

#: The kinds whose capability the proxy declares when the remote does (tools always are).
_KINDS = ("resources", "prompts", "completions")
#: What the proxy's client declares for the questions it forwards to its callers.
_FORWARDED: Final = {"elicitation": {"form": {}, "url": {}}, "sampling": {},
                     "roots": {"listChanged": True}}
#: The client side of the server extensions a proxy knows: declared to the remote when
#: the proxy's own server uses the extension, so the remote serves what its callers use.
_CLIENT_SIDE: Final = {APPS: {"mimeTypes": [APP_MIME_TYPE]}}


def describe(target: Any) -> str:
    """The target, fit for an error message: a command line or a URL (credentials
    redacted, at most 200 characters), else the server."""
    if isinstance(target, (list, tuple)):
        target = shlex.join(str(part) for part in target)
    return redact(target)[:200] if isinstance(target, str) else repr(target)


def _secrets(target: Any, described: str) -> list[str]:
    """What :meth:`RemoteLink.scrub` takes out of a message, longest first."""
    parts: list[str] = [described]
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        url = urlsplit(target)
        parts += [target, url.netloc, url.hostname or "", url.path]
    elif isinstance(target, (str, list, tuple)):
        command = shlex.split(target) if isinstance(target, str) else list(target)
        parts += [shlex.join(command), *command]
    return sorted({p for p in parts if isinstance(p, str) and len(p) > 2 and p != "/"},
                  key=len, reverse=True)


class RemoteLink:
    """The proxy's connection to its remote server. Thread-safe."""

    def __init__(self, server: ProxyHost, target: ProxyTarget, calls: CallTable,
                 tracker: CallTracker, options: Mapping[str, Any],
                 extensions: UsedExtensions) -> None:
        self._server = server
        #: The extensions the proxy's server uses (read at each connect).
        self._extensions = extensions
        self._connect = _connector(target)
        self.target = describe(target)
        self._secrets = _secrets(target, self.target)
        self._calls = calls
        self._tracker = tracker
        self._options, self._host = _client_options(options)
        self._lock = threading.Lock()  # guards the fields below
        self._connecting = threading.Lock()  # one connect at a time, others wait for it
        self._client: Client | None = None
        self._listen: Subscription | None = None
        self._connected_before = False
        self._closed = False
        #: What the remote declared when last connected (empty before).
        self.capabilities: dict[str, Any] = {}
        #: Called with each new client once connected, by the thread that connected.
        self.connected_hooks: list[Callable[[Client], None]] = []
        #: The remote tools' ``Mcp-Param-*`` maps (forgotten when its tools change).
        self.param_headers = RemoteParamHeaders()
        #: Whether the proxy's client declared MCP Apps when last connected: its callers
        #: without the extension must then be kept from the remote's app-only tools.
        self.declared_apps = False

    def scrub(self, text: str) -> str:
        """``text`` (an error of the hop) without where the remote is: its command line
        and each of its parts, or its URL, host and path, become ``<remote>``."""
        for secret in self._secrets:
            text = text.replace(secret, "<remote>")
        return text

    def client(self) -> Client:
        """The connected client, connecting first if there is none (or it was lost).
        Raises :class:`~mcpsync.errors.MCPError` (-32603) when the remote can't be reached."""
        with self._lock:
            client = self._client
        if client is not None and not client.closed:
            return client
        with self._connecting:
            with self._lock:
                if self._closed:
                    raise MCPError("the proxy is shut down")
                client = self._client
            if client is not None and not client.closed:
                return client  # another thread connected meanwhile
            if client is not None:
                self.lost(client)
            client = self._open()
        for hook in list(self.connected_hooks):  # after the lock: they may use client()
            hook(client)
        return client

    def _capabilities(self) -> dict[str, Any]:
        """What the proxy's client declares besides its handlers (see the module)."""
        caps: dict[str, Any] = {**_FORWARDED, **(self._host.extra_capabilities or {})}
        used = {identifier: settings for identifier, settings in _CLIENT_SIDE.items()
                if identifier in self._extensions.identifiers}
        if used:
            caps["extensions"] = {**used, **(caps.get("extensions") or {})}
        return caps

    def _open(self) -> Client:
        options = dict(self._options)
        given = options.pop("middleware", None) or ClientMiddleware()
        middleware = replace(given, send=[self._tracker.middleware, *given.send])
        capabilities = self._capabilities()
        try:
            client = self._connect(
                middleware=middleware, cache=False, on_log=self._on_log,
                host=replace(self._host, methods=_host_handlers(self._calls),
                             extra_capabilities=capabilities),
                **options)
        # Where the remote is (a command line, an internal URL) is the operator's to
        # know: the log says it, the proxy's callers are told only what failed.
        except MCPSyncError as exc:
            logger.warning("proxy of %s: can not be reached: %s", self.target, exc)
            raise MCPError("the proxied server can not be reached",
                           code=INTERNAL_ERROR) from exc
        except OSError as exc:  # a command that does not exist, say
            logger.warning("proxy of %s: can not be started: %s", self.target, exc)
            raise MCPError("the proxied server can not be started",
                           code=INTERNAL_ERROR) from exc
        caps = dict(client.server_capabilities)
        self._declare(client, caps)
        listen = self._follow(client, caps)
        with self._lock:
            self._client, self._listen, self.capabilities = client, listen, caps
            self.declared_apps = declares_apps(capabilities)
            again, self._connected_before = self._connected_before, True
        if again:  # the remote may have changed while it was away
            for kind in ("tools", "resources", "prompts"):
                self.list_changed(kind)
        return client

    def shown(self, ctx: HandlerContext, result: dict[str, Any]) -> dict[str, Any]:
        """A remote ``tools/list`` page as ``ctx``'s caller may see it: without the
        app-only tools when the proxy declared MCP Apps and the caller did not."""
        tools = result.get("tools")
        if not self.declared_apps or _shows_apps(ctx) or not isinstance(tools, list):
            return result
        kept = [t for t in tools if not isinstance(t, dict) or "model" in visibility(t)]
        return result if len(kept) == len(tools) else {**result, "tools": kept}

    def refuse_hidden(self, ctx: HandlerContext, name: Any, list_all: Callable[[], list[Any]],
                      wait: float) -> None:
        """Refuse a ``tools/call`` of an app-only tool from a caller that can not show
        views (as a server does: an unknown tool), when the proxy declared MCP Apps so the
        remote would run it. The remote's tools are listed first if the name is new."""
        if not self.declared_apps or not isinstance(name, str) or _shows_apps(ctx):
            return
        if self.param_headers.app_only(name, list_all, wait):
            raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})

    def _declare(self, client: Client, caps: dict[str, Any]) -> None:
        server = self._server
        server.protocol = replace(server.protocol,
                                  declare=tuple(kind for kind in _KINDS if kind in caps))
        resources = caps.get("resources")
        server.subscribers.offered = isinstance(resources, dict) and bool(
            resources.get("subscribe"))
        if server.instructions is None and client.instructions:
            server.instructions = client.instructions

    def _follow(self, client: Client, caps: dict[str, Any]) -> Subscription | None:
        """Hear the remote's list changes (a ``subscriptions/listen`` in 2026-07-28, the
        session's notifications in the handshake era)."""
        kinds = [k for k in ("tools", "prompts", "resources")
                 if isinstance(caps.get(k), dict) and caps[k].get("listChanged")]
        if not kinds:
            return None
        try:
            return client.listen(tools="tools" in kinds, prompts="prompts" in kinds,
                                 resources="resources" in kinds,
                                 on_notification=self._on_list_changed)
        except MCPSyncError as exc:
            logger.warning("proxy of %s: list changes will not be followed (%s)",
                           self.target, exc)
            return None

    def _on_list_changed(self, note: SubscriptionNotification) -> None:
        kind = note.method.removeprefix("notifications/").removesuffix("/list_changed")
        if kind in ("tools", "resources", "prompts"):
            self.list_changed(kind)

    def list_changed(self, kind: str) -> None:
        """Tell the proxy's own clients, and servers the proxy is mounted in."""
        if kind == "tools":
            self.param_headers.forget()
        self._server.notify_list_changed(kind)

    def _on_log(self, message: LogMessage) -> None:
        call = self._calls.sole()
        if call is not None:
            try:
                call.ctx.log(message.level, message.data, message.logger)
                return
            except MCPSyncError:
                pass  # the request ended meanwhile
        logger.log(logging.INFO, "remote %s [%s] %s: %r", self.target, message.level,
                   message.logger or "-", message.data)

    def lost(self, client: Client) -> None:
        """Forget ``client`` (its remote died or stopped answering): the next request
        connects again."""
        with self._lock:
            if self._client is not client:
                return
            self._client, listen = None, self._listen
            self._listen = None
        _close(client, listen)

    def start(self) -> None:
        """Connect now (the proxy's startup)."""
        self.client()

    def close(self) -> None:
        """Close the connection (the proxy's shutdown). A later request connects again."""
        with self._lock:
            client, listen = self._client, self._listen
            self._client = self._listen = None
        if client is not None:
            _close(client, listen)


def _shows_apps(ctx: HandlerContext) -> bool:
    """Whether the proxy's caller declared MCP Apps (the handshake's capabilities, or a
    2026-07-28 request's ``_meta``)."""
    return declares_apps(ctx.session.client_capabilities) or declares_apps(
        ctx.meta.get(META_CAPABILITIES))


def _client_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], HostHandlers]:
    """The options of the proxy's client, and the ``host=`` given with them. The proxy
    answers its remote's questions by asking its own callers, and hands the remote's log
    to the request in flight: a handler of its own for those would never be called, so
    it is a ``ValueError`` naming it rather than a silent loss. ``host=`` may add
    ``extra_capabilities`` and ``notifications``; ``middleware=`` runs inside the proxy's
    own."""
    rest = dict(options)
    host = rest.pop("host", None) or HostHandlers()
    if not isinstance(host, HostHandlers):
        raise TypeError(f"host= is a HostHandlers, not {host!r}")
    taken = [field for field, value in (
        ("elicitation", host.elicitation), ("sampling", host.sampling),
        ("roots", host.roots), ("methods", host.methods),
        ("input_mode", None if host.input_mode == "auto" else host.input_mode),
        ("sampling_tools", host.sampling_tools or None)) if value]
    if taken:
        raise ValueError(f"a proxy answers its remote's questions by asking its own "
                         f"callers: host= can not set {', '.join(taken)} "
                         "(only extra_capabilities and notifications)")
    if rest.get("on_log") is not None:
        raise ValueError("a proxy hands its remote's log messages to the request they "
                         "belong to: on_log= can not be set")
    if rest.pop("cache", False):
        raise ValueError("a proxy never caches its remote's answers: cache= can not be set")
    rest.pop("on_log", None)
    return rest, host


def _close(client: Client, listen: Subscription | None) -> None:
    if listen is not None:
        listen.close()
    client.close()


def _host_handlers(calls: CallTable) -> dict[str, Callable[[HostRequest, dict[str, Any]],
                                                          dict[str, Any]]]:
    """The client's answers to the remote's questions: each is asked of the forwarded
    request's own client (see :mod:`.calls`)."""

    def answer(request: HostRequest, params: dict[str, Any]) -> dict[str, Any]:
        return calls.asker().ask(request.method, params)

    return {method: answer for method in ("elicitation/create", "sampling/createMessage",
                                          "roots/list")}


def _connector(target: ProxyTarget) -> Callable[..., Client]:
    """``connect(**options) -> Client`` for ``target``; ``ValueError``/``TypeError`` for a
    target that is none of the kinds."""
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            url = target
            return lambda **options: Client.http(url, **options)
        command = command_line(target)
    elif isinstance(target, (list, tuple)):
        command = command_line(target)
    elif callable(getattr(target, "connect", None)):
        server: InProcessServer = target  # a Server (see InProcessServer)
        return lambda **options: Client.memory(server, **options)
    else:
        raise TypeError("a proxy target is an http(s) URL, a command line (a list of "
                        f"strings or a string) or a Server, not {target!r}")

    def spawn(**options: Any) -> Client:
        for http_only in ("headers", "auth"):
            if options.get(http_only) is not None:
                raise ValueError(f"{http_only}= applies to an http(s) target, not a command")
            options.pop(http_only, None)
        return Client.stdio(command, **options)

    return spawn
