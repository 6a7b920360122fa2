"""The proxy's one connection to the remote server: made at startup (or at the first
forwarded request), shared by every request, made again after the remote was lost.

One :class:`~mcpsync.Client` serves all the proxy's requests at once (a Client is
thread-safe). Its host handlers hand the remote's questions to the forwarded request they
belong to (:mod:`.calls`); its log messages go to the one request in flight (with none or
several, to the ``mcpsync.proxy`` logger: a log line says nothing of the request it is
about, and one caller must not read another's); list changes are announced to the
proxy's own clients.

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
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..client.client import Client
from ..client.host import HostRequest
from ..client.listen import Subscription, SubscriptionNotification
from ..client.options import ClientMiddleware, HostHandlers
from ..client.tracking import CallTracker
from ..errors import INTERNAL_ERROR, MCPError, MCPSyncError
from ..protocol.redact import redact
from ..transports.memory import InProcessServer
from ..transports.subprocess import command_line
from ..types import LogMessage
from .call_table import CallTable
from .param_headers import RemoteParamHeaders

if TYPE_CHECKING:
    from .host import ProxyHost

logger = logging.getLogger("mcpsync.proxy")

#: What a proxy forwards to: an http(s) URL, a command line (a list, or a string split
#: like a shell would), or a Server of this process.
ProxyTarget = str | list[str] | tuple[str, ...] | InProcessServer

#: The kinds whose capability the proxy declares when the remote does (tools always are).
_KINDS = ("resources", "prompts", "completions")


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
                 tracker: CallTracker, options: Mapping[str, Any]) -> None:
        self._server = server
        self._connect = _connector(target)
        self.target = describe(target)
        self._secrets = _secrets(target, self.target)
        self._calls = calls
        self._tracker = tracker
        self._options = dict(options)
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

    def _open(self) -> Client:
        try:
            client = self._connect(
                middleware=ClientMiddleware(send=[self._tracker.middleware]), cache=False,
                on_log=self._on_log, host=HostHandlers(
                    methods=_host_handlers(self._calls),
                    extra_capabilities={"elicitation": {"form": {}, "url": {}},
                                        "sampling": {}, "roots": {"listChanged": True}}),
                **self._options)
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
            again, self._connected_before = self._connected_before, True
        if again:  # the remote may have changed while it was away
            for kind in ("tools", "resources", "prompts"):
                self.list_changed(kind)
        return client

    def _declare(self, client: Client, caps: dict[str, Any]) -> None:
        server = self._server
        server.declare = frozenset(kind for kind in _KINDS if kind in caps)
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
