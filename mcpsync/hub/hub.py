"""``Client.from_config(...)``: one client over every server of an ``mcpServers``
configuration, each server's names prefixed with its name as a mount prefixes them
(:mod:`mcpsync.protocol.prefixes`: the tool ``add`` of the server ``calc`` is
``calc_add``, its resource ``notes://a`` is ``notes://calc/a``).

Why a hub and not a mounting proxy server: a notebook or a script wants the servers'
answers, not a server of its own; the hub keeps one real :class:`~mcpsync.Client` per
server and routes each call to the one its prefix names, so every feature of the client
(progress, deadlines, Ctrl-C, the notebook display) is the same.

Threads: the servers are started, listed and closed in parallel, on the hub's own
bounded pool (``mcpsync-hub-N``, at most ``max_threads``, joined by :meth:`Hub.close`);
every fan-out ends by one deadline for the whole operation. A call runs on the caller's
thread, on the one server it names. A server that fails to start (or whose entry can not
be used) is reported by name in :attr:`Hub.failures` and a warning; the others serve.
A listing that fails on one server leaves that server's items out, logs a warning and
records the error in :attr:`Hub.errors`. Thread-safe: any number of threads may use one
hub at once (each server's client is thread-safe; the routing table is replaced whole,
under a lock, never changed in place).

This module never imports the ``Client`` class (the client imports it, through
``Client.from_config``): what it needs of one is :class:`ServerClient`, and the class
itself is handed in as a :class:`Connector`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, Protocol, TypeVar

from ..display.notebook import ToolList
from ..errors import ConnectionClosedError, InvalidParamsError, ResourceNotFoundError
from ..protocol.deadline import Deadline
from ..protocol.prefixes import name_in, name_out, uri_in, uri_out, view_meta_out
from ..protocol.uritemplate import is_template
from ..threads.pool import WorkerPool
from ..types import (
    CallToolResult,
    Completion,
    EmbeddedResource,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceLink,
    ResourceTemplate,
    Tool,
)
from .config import ConfigError, ServerEntry, load_entries
from .display import hub_html, hub_markdown, hub_text

logger = logging.getLogger("mcpsync.hub")
T = TypeVar("T")

#: The most threads a hub starts, lists and closes its servers with.
DEFAULT_MAX_THREADS = 8
#: What closing waits for each server (a stdio server: stdin closed, SIGTERM, SIGKILL).
CLOSE_TIMEOUT = 10.0


class ServerClient(Protocol):
    """What the hub needs of one server's client (a :class:`~mcpsync.Client`)."""

    @property
    def server_capabilities(self) -> dict[str, Any]: ...

    @property
    def protocol_version(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]: ...

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                  timeout: float | None = None, on_progress: Any = None,
                  meta: dict[str, Any] | None = None,
                  input_mode: str | None = None) -> CallToolResult: ...

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]: ...

    def list_resource_templates(self, *, timeout: float | None = None
                                ) -> list[ResourceTemplate]: ...

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      input_mode: str | None = None) -> ReadResourceResult: ...

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]: ...

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout: float | None = None,
                   input_mode: str | None = None) -> GetPromptResult: ...

    def complete(self, ref: str, argument: str, value: str, *,
                 context: Mapping[str, str] | None = None,
                 timeout: float | None = None) -> Completion: ...

    def ping(self, *, timeout: float | None = None) -> None: ...

    def close(self) -> None: ...


class Connector(Protocol):
    """How the hub makes a client: ``Client`` itself (its ``stdio`` and ``http``)."""

    def stdio(self, command: Any, *, env: Any = ..., cwd: Any = ...,
              **options: Any) -> ServerClient: ...

    def http(self, url: str, *, headers: Any = ..., **options: Any) -> ServerClient: ...


class ServerUnavailableError(ConnectionClosedError):
    """A name routed to a server of the configuration that is not connected (it failed to
    start, or the hub is closed). ``server`` names it; ``__cause__`` is why."""

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"server {server!r} is not available: {reason}")
        self.server = server


class Hub:
    """A client over several servers; make one with ``Client.from_config(config)``.

    ``hub.call_tool("calc_add", {...})`` calls the tool ``add`` of the server ``calc``;
    ``list_tools``, ``list_resources``, ``list_resource_templates`` and ``list_prompts``
    merge every server's list (prefixed, in the configuration's order); ``read_resource``,
    ``get_prompt`` and ``complete`` route like ``call_tool``. ``hub.clients`` maps each connected
    server's name to its :class:`~mcpsync.Client`; ``hub.failures`` each server that
    could not start to why. Thread-safe. Close it (or use ``with``): every server is
    closed once, in parallel.
    """

    def __init__(self, config: Mapping[str, ServerEntry | ConfigError], connector: Connector,
                 *, timeout: float = 60.0, max_threads: int = DEFAULT_MAX_THREADS,
                 options: Mapping[str, Any] | None = None) -> None:
        self.timeout = timeout
        self.entries: dict[str, ServerEntry] = {
            n: e for n, e in config.items() if isinstance(e, ServerEntry)}
        #: Each connected server's client, in the configuration's order.
        self.clients: dict[str, ServerClient] = {}
        #: Each server that could not be started: why (its exception).
        self.failures: dict[str, BaseException] = {
            n: e for n, e in config.items() if isinstance(e, ConfigError)}
        #: The last error of each server in a listing (None for a server that answered).
        self.errors: dict[str, BaseException | None] = {}
        self._order = list(config)
        self._lock = threading.Lock()
        self._closed = False
        self._pool = WorkerPool(max(1, min(max_threads, len(config) or 1)), name="mcpsync-hub",
                                max_backlog=1024, idle_timeout=5.0)
        #: Where the last listings found each prefixed name: kind -> name -> server.
        self._routes: dict[str, dict[str, str]] = {}
        for entry in self.entries.values():
            for line in entry.warnings:
                logger.warning("%s", line)
        try:
            self._start(connector, dict(options or {}))
        except BaseException:
            self.close()
            raise
        for name, why in self.failures.items():
            logger.warning("server %r failed to start: %s", name, why)

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | Mapping[str, Any],
                    connector: Connector, *, timeout: float = 60.0,
                    environ: Mapping[str, str] | None = None,
                    max_threads: int = DEFAULT_MAX_THREADS, **options: Any) -> Hub:
        """A hub over every server of ``source`` (a path to a JSON-with-comments file, or
        the dict): see :func:`mcpsync.hub.config.entries`. ``options`` go to every
        server's client (``protocol_version``, ``host``...); ``timeout`` is each
        operation's deadline, starting included."""
        return cls(load_entries(source, environ), connector, timeout=timeout,
                   max_threads=max_threads, options=options)

    # -- starting and ending ---------------------------------------------------------------

    def _start(self, connector: Connector, options: dict[str, Any]) -> None:
        options.setdefault("timeout", self.timeout)

        def connect(entry: ServerEntry) -> ServerClient:
            named = {"name": f"mcpsync-hub-{entry.name}", **options}
            if entry.kind == "http":
                return connector.http(entry.url or "", headers=dict(entry.headers) or None,
                                      **named)
            return connector.stdio(list(entry.command), env=dict(entry.env) or None,
                                   cwd=entry.cwd, **named)

        deadline = Deadline(self.timeout + 5.0, "starting the servers")
        outcomes = self._fan_out(list(self.entries.values()), connect, deadline,
                                 name=lambda e: e.name, late=lambda client: client.close())
        for name in self._order:
            if name not in outcomes:
                continue
            outcome = outcomes[name]
            if isinstance(outcome, BaseException):
                self.failures[name] = outcome
            else:
                self.clients[name] = outcome
        # Each in the configuration's order.
        self.failures = {n: self.failures[n] for n in self._order if n in self.failures}

    def close(self) -> None:
        """Close every server's client (in parallel, each bounded), then the hub's
        threads. Idempotent: each server is closed once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            clients = list(self.clients.items())
        if clients:
            self._fan_out(clients, lambda item: item[1].close(),
                          Deadline(CLOSE_TIMEOUT, "closing the servers"),
                          name=lambda item: item[0])
        self._pool.shutdown(CLOSE_TIMEOUT)

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Hub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def client(self, server: str) -> ServerClient:
        """The client of one server, by its name in the configuration."""
        return self._client(server)

    # -- listings ----------------------------------------------------------------------

    def list_tools(self, *, timeout: float | None = None) -> list[Tool]:
        """Every server's tools, names prefixed (``calc_add``), as a
        :class:`~mcpsync.ToolList` (a table in a notebook). The view a tool links to (MCP
        Apps, ``_meta.ui.resourceUri``) is prefixed as the view's resource is, so the hub
        reads the URI it lists."""
        found = self._listing("tool", lambda c, t: c.list_tools(timeout=t), timeout,
                              lambda prefix, tool: dataclasses.replace(
                                  tool, name=name_out(prefix, tool.name),
                                  meta=view_meta_out(prefix, tool.meta)),
                              lambda tool: tool.name)
        return ToolList(found)

    def list_resources(self, *, timeout: float | None = None) -> list[Resource]:
        """Every server's resources, URIs prefixed (``notes://calc/a``)."""
        return self._listing("resource", lambda c, t: c.list_resources(timeout=t), timeout,
                             lambda prefix, item: dataclasses.replace(
                                 item, uri=uri_out(prefix, item.uri)),
                             lambda item: item.uri, capability="resources")

    def list_resource_templates(self, *, timeout: float | None = None
                                ) -> list[ResourceTemplate]:
        """Every server's resource templates, prefixed as its resources are."""
        return self._listing("template", lambda c, t: c.list_resource_templates(timeout=t),
                             timeout, lambda prefix, item: dataclasses.replace(
                                 item, uri_template=uri_out(prefix, item.uri_template)),
                             lambda item: item.uri_template, capability="resources")

    def list_prompts(self, *, timeout: float | None = None) -> list[Prompt]:
        """Every server's prompts, names prefixed."""
        return self._listing("prompt", lambda c, t: c.list_prompts(timeout=t), timeout,
                             lambda prefix, item: dataclasses.replace(
                                 item, name=name_out(prefix, item.name)),
                             lambda item: item.name, capability="prompts")

    def ping(self, *, timeout: float | None = None) -> dict[str, BaseException | None]:
        """Ping every connected server at once: each server's name to None (it answered)
        or the error."""
        deadline = Deadline(self._timeout(timeout), "ping")
        outcomes = self._fan_out(list(self.clients.items()),
                                 lambda item: item[1].ping(timeout=deadline.remaining()),
                                 deadline, name=lambda item: item[0])
        return {n: o if isinstance(o, BaseException) else None for n, o in outcomes.items()}

    def _listing(self, kind: str, ask: Callable[[ServerClient, float], list[T]],
                 timeout: float | None, rename: Callable[[str, T], T],
                 key: Callable[[T], str], *, capability: str | None = None) -> list[T]:
        """One listing from every server at once, merged in the configuration's order; a
        name listed twice keeps its first server's item (as a mount does)."""
        deadline = Deadline(self._timeout(timeout), f"listing {kind}s")
        asked = [(n, c) for n, c in self.clients.items()
                 if capability is None or capability in c.server_capabilities]
        outcomes = self._fan_out(asked, lambda item: ask(item[1], deadline.remaining()),
                                 deadline, name=lambda item: item[0])
        merged: list[T] = []
        routes: dict[str, str] = {}
        errors: dict[str, BaseException | None] = {}
        for server, outcome in outcomes.items():
            if isinstance(outcome, BaseException):
                errors[server] = outcome
                logger.warning("listing %ss of server %r failed: %s", kind, server, outcome)
                continue
            errors[server] = None
            for item in outcome:
                renamed = rename(server, item)
                if key(renamed) in routes:
                    continue
                routes[key(renamed)] = server
                merged.append(renamed)
        with self._lock:
            self._routes = {**self._routes, kind: routes}
            self.errors = {**self.errors, **errors}
        return merged

    # -- routed calls ------------------------------------------------------------------

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                  timeout: float | None = None, on_progress: Any = None,
                  meta: dict[str, Any] | None = None,
                  input_mode: str | None = None) -> CallToolResult:
        """Call the tool ``name`` (``server_tool``) on its server; the result's resource
        links and embedded resources carry prefixed URIs. An unknown name raises
        :class:`~mcpsync.InvalidParamsError` as a server does; a name of a server that
        did not start raises :class:`ServerUnavailableError`."""
        server, inner = self._route("tool", name)
        result = self._client(server).call_tool(
            inner, arguments, timeout=self._timeout(timeout), on_progress=on_progress,
            meta=meta, input_mode=input_mode)
        return dataclasses.replace(result, content=[_block_out(server, b)
                                                    for b in result.content])

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *,
                   timeout: float | None = None,
                   input_mode: str | None = None) -> GetPromptResult:
        """Get the prompt ``name`` (``server_prompt``) from its server."""
        server, inner = self._route("prompt", name)
        result = self._client(server).get_prompt(inner, arguments,
                                                 timeout=self._timeout(timeout),
                                                 input_mode=input_mode)
        messages = [dataclasses.replace(m, content=_block_out(server, m.content))
                    for m in result.messages]
        return dataclasses.replace(result, messages=messages)

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      input_mode: str | None = None) -> ReadResourceResult:
        """Read ``uri`` (``scheme://server/rest``) from its server. A URI with no
        ``://`` carries no prefix: each server is asked in order, as a mount does."""
        deadline = Deadline(self._timeout(timeout), "resources/read")
        for server, inner in self._uri_routes(uri):
            try:
                result = self._client(server).read_resource(
                    inner, timeout=deadline.remaining(), input_mode=input_mode)
            except ResourceNotFoundError:
                if "://" in uri:
                    raise
                continue
            contents = [dataclasses.replace(c, uri=uri_out(server, c.uri))
                        if isinstance(getattr(c, "uri", None), str) else c
                        for c in result.contents]
            return dataclasses.replace(result, contents=contents)
        raise ResourceNotFoundError(f"Resource not found: {uri}", data={"uri": uri})

    def complete(self, ref: str, argument: str, value: str, *,
                 context: Mapping[str, str] | None = None,
                 timeout: float | None = None) -> Completion:
        """Suggestions for an argument of the prompt ``ref`` (``server_prompt``) or a
        variable of the resource template ``ref`` (``scheme://server/...{var}``), from
        its server."""
        if is_template(ref):
            routes = list(self._uri_routes(ref))
            server, inner = routes[0]
        else:
            server, inner = self._route("prompt", ref)
        return self._client(server).complete(inner, argument, value, context=context,
                                             timeout=self._timeout(timeout))

    def _route(self, kind: str, name: str) -> tuple[str, str]:
        """The server a prefixed name belongs to, and the server's own name for it.

        A name the last listing saw goes where it was listed. Otherwise the server whose
        prefix the name carries (the longest, when ``a`` and ``a_b`` both could)."""
        with self._lock:
            listed = self._routes.get(kind, {}).get(name)
        if listed is not None:
            inner = name_in(listed, name)
            if inner is not None:
                return listed, inner
        candidates = [(s, name_in(s, name)) for s in self._order]
        found = sorted(((s, inner) for s, inner in candidates if inner is not None),
                       key=lambda pair: -len(pair[0]))
        if not found:
            label = "tool" if kind == "tool" else "prompt"
            raise InvalidParamsError(f"Unknown {label}: {name} (names are SERVER_NAME; "
                                     f"servers: {', '.join(self._order) or 'none'})",
                                     data={"name": name})
        live = [pair for pair in found if pair[0] in self.clients]
        return live[0] if live else found[0]

    def _uri_routes(self, uri: str) -> Iterable[tuple[str, str]]:
        if "://" not in uri:
            return [(s, uri) for s in self.clients]
        routes = [(s, inner) for s in self._order
                  if (inner := uri_in(s, uri)) is not None]
        if not routes:
            raise ResourceNotFoundError(
                f"Resource not found: {uri} (URIs are scheme://SERVER/...; servers: "
                f"{', '.join(self._order) or 'none'})", data={"uri": uri})
        routes.sort(key=lambda pair: -len(pair[0]))
        return routes

    def _client(self, server: str) -> ServerClient:
        if self._closed:
            raise ServerUnavailableError(server, "the hub is closed")
        client = self.clients.get(server)
        if client is not None:
            return client
        why = self.failures.get(server)
        if why is None:
            raise ServerUnavailableError(server, "no server of that name in the configuration")
        raise ServerUnavailableError(server, f"it failed to start: {why}") from why

    def _timeout(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    # -- threads -------------------------------------------------------------------------

    def _fan_out(self, items: list[Any], job: Callable[[Any], T], deadline: Deadline, *,
                 name: Callable[[Any], str],
                 late: Callable[[T], object] | None = None) -> dict[str, T | BaseException]:
        """``job(item)`` for every item at once on the hub's pool; each item's name to
        its result or exception, by ``deadline`` (an item still running then is a
        ``TimeoutError``: its own call ends by its own timeout, on the pool's thread, and
        ``late`` is given what it returns then: a client started too late is closed)."""
        futures: dict[str, concurrent.futures.Future[T]] = {}
        for item in items:
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            futures[name(item)] = future
            self._pool.submit(_job(job, item, future))
        try:
            concurrent.futures.wait(list(futures.values()),
                                    timeout=deadline.remaining() + 1.0)
        except BaseException:  # Ctrl-C: what arrives later is still cleaned up
            for future in futures.values():
                if late is not None:
                    future.add_done_callback(partial(_arrived_late, late))
            raise
        outcomes: dict[str, T | BaseException] = {}
        for key, future in futures.items():
            if not future.done():
                outcomes[key] = TimeoutError(f"{deadline.what}: no answer from {key!r} "
                                             f"in time")
                if late is not None:
                    future.add_done_callback(partial(_arrived_late, late))
                continue
            error = future.exception()
            outcomes[key] = error if error is not None else future.result()
        return outcomes

    # -- display -----------------------------------------------------------------------

    def _rows(self) -> list[tuple[str, str, str]]:
        """One row per server: name, state, and what it is (command or URL)."""
        rows = []
        for server in self._order:
            entry = self.entries.get(server)
            where = entry.describe() if entry is not None else ""
            client = self.clients.get(server)
            if client is not None:
                state = "closed" if self._closed or client.closed else (
                    f"connected, {client.protocol_version}")
            else:
                state = f"failed: {self.failures.get(server)}"
            rows.append((server, state, where))
        return rows

    def __repr__(self) -> str:
        return hub_text(self._rows(), closed=self._closed)

    def _repr_html_(self) -> str:
        return hub_html(self._rows())

    def _repr_markdown_(self) -> str:
        return hub_markdown(self._rows())


def _job(job: Callable[[Any], T], item: Any,
         future: concurrent.futures.Future[T]) -> Callable[[], None]:
    def run() -> None:
        try:
            value = job(item)
        except BaseException as exc:  # handed to the waiting caller
            future.set_exception(exc)
        else:
            future.set_result(value)

    return run


def _arrived_late(late: Callable[[T], object], future: concurrent.futures.Future[T]) -> None:
    if future.exception() is None:
        try:
            late(future.result())
        except Exception:  # a pool thread: nobody to raise to
            logger.exception("cleaning up after a late answer failed")


def _block_out(server: str, block: Any) -> Any:
    """A content block with the URI of a resource link or embedded resource prefixed
    (the typed counterpart of :func:`mcpsync.protocol.prefixes.content_out`)."""
    if isinstance(block, ResourceLink):
        return dataclasses.replace(block, uri=uri_out(server, block.uri))
    if isinstance(block, EmbeddedResource) and isinstance(
            getattr(block.resource, "uri", None), str):
        return dataclasses.replace(block, resource=dataclasses.replace(
            block.resource, uri=uri_out(server, block.resource.uri)))
    return block


__all__ = ["CLOSE_TIMEOUT", "DEFAULT_MAX_THREADS", "Connector", "Hub", "ServerClient",
           "ServerUnavailableError"]
