"""Composition: ``parent.mount(child, prefix="weather")`` serves ``child``'s tools,
resources, templates and prompts as ``parent``'s own, under a prefix.

Why through method handlers: the parent never copies the child's registries. Each of the
eight surface methods (the lists, ``tools/call``, ``resources/read``, ``prompts/get``,
``completion/complete``) of the parent becomes a merging handler that asks its own former
handler and each mounted server's *handler* of that method, at the time of the request.
So a child whose surface is defined by method handlers (``Server.proxy``) mounts like any
other, and mounting is live: what the child registers later is served at once.

The rules (names and URIs cross the mount as :mod:`.mounted` says):

* **Lists** collect every page of the parent's own list and of each mount's, in mount
  order, and page the merged list with the parent's ``page_size`` and cursors.
* **Clashes**: the parent's own item wins (its call is never routed); between mounts, the
  one mounted first. A name the parent lists is the one a call reaches.
* **Routing**: a name the parent's own registry holds is the parent's; otherwise the first
  mount whose prefix it carries and which knows the un-prefixed name gets it (a server
  whose method is a custom handler, or a default one marked :data:`SERVES_EVERY_NAME`
  as a proxy's are, is taken to know every name). Anything
  else is answered by the parent's own handler: an unknown prefixed name fails exactly as
  an unknown name of the parent's own.
* **Results**: resource contents' ``uri`` and the URIs of resource links and embedded
  resources in tool results and prompt messages are prefixed again; a mounted server's
  "unknown" error is told about the name the client sent.
* **Changes**: a list change of a mounted server (its registries, or its own mounts) is
  a list change of the parent, sent to the parent's clients; a mounted server's
  ``notify_resource_updated(uri)`` reaches the parent's subscribers of the prefixed URI.
* **Capabilities**: the parent declares resources, prompts or completions when a mounted
  server provides them.
* **Lifespan**: the parent's startup starts each mounted server (a server mounted into
  a started parent starts at once), its shutdown stops them. A mounted server's handler
  sees the mounted server's state as ``ctx.state``.
* **Subscriptions** to resources are the parent's (its sessions and listen streams, with
  the prefixed URI); while a URI has subscribers, the mounted server a read of it reaches
  records the parent as a subscriber of its own URI, so a mounted proxy subscribes on
  its remote (:meth:`Mounts.subscription_changed`).
* **Ids a server made** (a task's, for ``tasks/get``, ``tasks/result``, ``tasks/cancel``,
  ``tasks/update``: the methods whose target is neither a name nor a URI) are the
  parent's when its own handler knows them; otherwise the first mount that does gets the
  request. So a mounted tool that runs as a task (listed with its ``execution``; the
  client's capabilities cross a mount unchanged) is a task of the mounted server, found
  through the parent. Its status notifications reach the client on a handshake-era
  session; a 2026-07-28 client polls ``tasks/get`` (the mounted server's listens are its
  own). ``tasks/list`` lists the parent's own tasks only.
* **Not routed**: a mount's custom methods.

Mounting a server into itself, or into a server it mounts (however deep), or twice into
the same parent is a ``ValueError``. Register the parent's own custom handlers of the
eight methods before mounting: one registered after replaces the merging handler.
Thread-safe: mounting may happen while serving.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.pagination import listing
from ..dispatch.registry import KNOWS_NAME, SERVES_EVERY_NAME
from ..errors import INTERNAL_ERROR, INVALID_PARAMS, MCPError, MethodNotFoundError
from ..frozen import Frozen
from ..protocol.methods import VIEWS
from ..protocol.prefixes import PREFIX, content_out, name_in, name_out, uri_in, uri_out, view_out
from .handlers import HandlerRunner, MethodHandler
from .lifespan import Lifespan, Named
from .mounted import call_mounted, error_out
from .options import ServerLimits
from .subscribers import ResourceSubscribers

#: Guards every parent's list of mounts: a cycle check spans servers.
_GRAPH = threading.Lock()
#: Pages read of one list before giving up on a server whose cursors never end.
MAX_PAGES = 1000
#: The longest a subscription waits for another thread passing the same URI on to a mounted
#: server (a mounted proxy's remote subscription, itself bounded by the proxy's timeout).
PASS_WAIT = 300.0
#: Items a parent's merged list reads from its mounts, at most, in all (its own items are
#: in its registries already, and not counted).
MAX_MERGED_ITEMS = 10_000
#: Bytes (as JSON) of the items a parent's merged list reads from its mounts, at most.
MAX_MERGED_BYTES = 16 * 1024 * 1024
logger = logging.getLogger("mcpsync.server")

#: The list methods: the key of their items and the field that names an item (the method
#: table's merged lists).
_LISTS = VIEWS.mount_lists
#: The methods a mount routes to the server their target names.
_ROUTED = VIEWS.mount_routed
#: The requests whose target is an id the server that answered made (not a name, not a
#: URI): served by whichever of the parent and its mounts knows it.
_BY_ID = tuple(method for method, param in VIEWS.target_param.items()
               if param not in ("name", "uri") and method not in _ROUTED
               and not method.startswith("notifications/"))


# A Protocol for the type checker only: defining one costs every server's start tens of
# µs, and nothing checks it at run time.
if TYPE_CHECKING:
    from .host import Registered
    from .mounted import MountedServer

    class Mountable(MountedServer, Registered, Protocol):
        """What mounting needs of a parent and of the server mounted into it (each a
        ``ServerCore``), besides serving a request handed across: its registries and list
        changes, its startup and shutdown. What is not public (the lifespan, what it provides,
        how its handlers run, who hears of its changes) its :class:`Mounts` is handed."""

        @property
        def subscribers(self) -> ResourceSubscribers: ...

        @property
        def limits(self) -> ServerLimits: ...

        def notify_list_changed(self, kind: str) -> None: ...

        def notify_resource_updated(self, uri: str) -> None: ...

        def on_startup(self, fn: Callable[[], Any]) -> Callable[[], Any]: ...

        def on_shutdown(self, fn: Callable[[], Any]) -> Callable[[], Any]: ...

        def start(self) -> Any: ...

        def stop(self) -> None: ...

        def __hash__(self) -> int: ...  # a parent subscribes to its mounts' URIs as itself


def _own(server: Mountable, kind: str, key: str) -> bool:
    """Whether ``server``'s own registry holds ``key`` (a "tool", "prompt", "resource"
    URI or resource "template")."""
    if kind == "tool":
        return server.tools.get(key) is not None
    if kind == "prompt":
        return server.prompts.get(key) is not None
    if kind == "resource":
        return server.resources.resolve(key) is not None
    return server.resources.template(key) is not None


class Mount(Frozen):
    """One mounted server (its :class:`Mounts`) and its prefix (None: names unchanged).
    Immutable, so thread-safe. A :class:`~mcpsync.frozen.Frozen` class, not a frozen
    dataclass: every server imports this module, and defining a dataclass cost its start
    about 0.3 ms."""

    __slots__ = ("mounts", "prefix")

    mounts: Mounts
    prefix: str | None

    def __init__(self, mounts: Mounts, prefix: str | None) -> None:
        self._init(mounts, prefix)

    @property
    def server(self) -> Mountable:
        """The mounted server."""
        return self.mounts.server

    def call(self, method: str, params: dict[str, Any],
             ctx: HandlerContext) -> dict[str, Any]:
        """Hand ``method`` to the mounted server (:func:`.mounted.call_mounted`)."""
        return call_mounted(self.mounts.server, self.mounts.run_handler, method, params, ctx)

    def key_in(self, kind: str, key: str) -> str | None:
        if kind in ("tool", "prompt"):
            return name_in(self.prefix, key)
        return uri_in(self.prefix, key)

    def item_out(self, field: str, item: Any) -> Any:
        if not self.prefix or not isinstance(item, dict) or not isinstance(
                item.get(field), str):
            return item
        value = item[field]
        renamed = name_out(self.prefix, value) if field == "name" else uri_out(
            self.prefix, value)
        return view_out(self.prefix, {**item, field: renamed}) if field == "name" else {
            **item, field: renamed}


def knows(mounts: Mounts, method: str, kind: str, key: str) -> bool:
    """Whether the server of ``mounts`` serves ``key`` (of ``kind``) through ``method``:
    its registry or its own mounts when the method is its built-in; always, for a custom
    handler."""
    server = mounts.server
    handler = server.methods.request_handler(method)
    if handler is None:
        return False
    if (not server.methods.is_default(method) or getattr(handler, SERVES_EVERY_NAME, False)
            or _own(server, kind, key)):
        return True
    return mounts.find(method, kind, key) is not None


def mounted_tool(mounts: Mounts, name: str) -> dict[str, Any] | None:
    """The description of the tool of a mount (of ``mounts``) that a ``tools/call`` of
    ``name`` reaches (its ``inputSchema`` crosses a mount unchanged), however deep; None
    when no registry holds it (unknown, or behind a handler: a proxy checks its own).
    For the ``Mcp-Param-*`` check of a mounted tool as of the parent's own."""
    found = mounts.find("tools/call", "tool", name)
    if found is None:
        return None
    mount, inner = found
    tool = mount.server.tools.get(inner)
    return tool.description if tool is not None else mounted_tool(mount.mounts, inner)


def known_name(mounts: Mounts, kind: str, name: str) -> bool:
    """Whether a ``tools/call`` (``kind`` "tool") or ``prompts/get`` ("prompt") of ``name``
    reaches an item that exists beyond the own registry of the server of ``mounts``: in a
    mount's registry, however deep, or known to the handler that serves it (a proxy's: its
    remote listed it). Telemetry names such an item as the client called it, like an own
    one."""
    method = "tools/call" if kind == "tool" else "prompts/get"
    knows = getattr(mounts.server.methods.request_handler(method), KNOWS_NAME, None)
    if callable(knows) and knows(name):
        return True
    found = mounts.find(method, kind, name)
    if found is None:
        return False
    mount, inner = found
    return _own(mount.server, kind, inner) or known_name(mount.mounts, kind, inner)


class ChangeHooks:
    """Who hears of a server's changes besides its own sessions, listens and relay: the
    servers it is mounted in (:func:`mount` adds them), and an HTTP app that relays
    between workers (it tells the subscribed sessions held elsewhere). Appended to at
    set-up; the server calls a copy of each list."""

    def __init__(self) -> None:
        #: Called with the kind ("tools", "resources", "prompts") of each list change.
        self.list_changed: list[Callable[[str], None]] = []
        #: Called with each URI given to ``notify_resource_updated``.
        self.resource_updated: list[Callable[[str], None]] = []


class Mounts:
    """The servers mounted into one server, and its merging handlers; every
    ``ServerCore`` has one (``server._mounts``), and it is what a mount holds of the
    server mounted. It is made with the collaborators mounting needs of its server: its
    ``lifespan`` (a server mounted into a started one starts at once), ``provides`` (what
    capabilities the server provides, its mounts included) and ``run_handler`` (how a
    request handed across runs: the server's dispatcher's), and it owns the server's
    :class:`ChangeHooks` (``hooks``). The merging handlers are installed at the first
    mount: a server that mounts nothing serves its own handlers. Thread-safe: the tuple
    of mounts is replaced, never changed, so requests read it without a lock."""

    def __init__(self, server: Mountable, lifespan: Lifespan[Named],
                 provides: Callable[[str], bool], run_handler: HandlerRunner) -> None:
        #: The server these are the mounts of (the parent of each).
        self.server = server
        self._lifespan = lifespan
        #: Whether the server provides a capability (``"resources"``...), mounts included.
        self.server_provides = provides
        #: Runs one of the server's handlers in its guards and request scopes.
        self.run_handler = run_handler
        #: Who hears of the server's changes besides its sessions.
        self.hooks = ChangeHooks()
        self.mounts: tuple[Mount, ...] = ()
        self._own: dict[str, MethodHandler | None] = {}
        #: The parent's subscribed URIs passed on to a mount: its server and its URI.
        self._passed: dict[str, tuple[Mountable, str]] = {}
        #: Guards the two fields; never held while a mounted server records a
        #: subscription (a mounted proxy subscribes on its remote: a network round trip).
        self._passing = threading.Condition(threading.Lock())
        #: The URIs a thread is passing on or taking back now (one thread per URI).
        self._busy: set[str] = set()

    def _activate(self) -> None:
        """At the first mount (under ``_GRAPH``): the merging handlers replace the
        parent's, and its subscriptions are passed on to the mounts."""
        for method in (*_LISTS, *_ROUTED, *_BY_ID):
            self._install(method)
        self.server.subscribers.watchers.append(self.subscription_changed)

    @property
    def started(self) -> bool:
        """Whether the parent has started in this process."""
        return self._lifespan.started

    def _install(self, method: str) -> None:
        registry = self.server.methods
        own = registry.request_handler(method)
        self._own[method] = own
        if method in _LISTS:
            key, field = _LISTS[method]
            handler: MethodHandler = _bound(self.merged_list, method, key, field)
        elif method in _BY_ID:
            handler = _bound(self.by_id, method)
        else:
            handler = _bound(self.routed, method)
        if own is None or registry.is_default(method):
            registry.set_default(method, handler)
        else:
            registry.add_request(method, handler, replace=True)

    def provides(self, kind: str) -> bool:
        return any(m.mounts.server_provides(kind) for m in self.mounts)

    def find(self, method: str, kind: str, key: str) -> tuple[Mount, str] | None:
        """The first mount that serves the parent's ``key``, and its name for it."""
        for mount in self.mounts:
            inner = mount.key_in(kind, key)
            if inner is not None and knows(mount.mounts, method, kind, inner):
                return mount, inner
        return None

    def subscription_changed(self, uri: str) -> None:
        """The watcher of the parent's subscribers: while the parent has subscribers of
        ``uri``, the mounted server a read of it reaches has one too (the parent, of its
        un-prefixed URI), so that a mounted proxy is subscribed on its remote. What that
        server's watchers raise fails the parent's subscription."""
        parent = self.server
        deadline = time.monotonic() + PASS_WAIT
        with self._passing:  # only one thread at a time works on one URI
            while uri in self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MCPError(f"the subscription to {uri} is still being passed on "
                                   "to the mounted server", code=INTERNAL_ERROR)
                self._passing.wait(left)
            self._busy.add(uri)
            passed = self._passed.get(uri)
        try:
            if parent.subscribers.watched(uri) and passed is None:
                found = (None if _own(parent, "resource", uri)
                         else self.find("resources/read", "resource", uri))
                if found is not None:
                    found[0].server.subscribers.add(parent, (found[1],))  # may be I/O
                    with self._passing:
                        self._passed[uri] = (found[0].server, found[1])
            elif not parent.subscribers.watched(uri) and passed is not None:
                with self._passing:
                    del self._passed[uri]
                passed[0].subscribers.remove(parent, (passed[1],))  # may be I/O
        finally:
            with self._passing:
                self._busy.discard(uri)
                self._passing.notify_all()

    # -- the merging handlers ------------------------------------------------------------

    def merged_list(self, method: str, key: str, field: str, ctx: HandlerContext,
                    params: dict[str, Any]) -> dict[str, Any]:
        own = self._own[method]
        items: list[Any] = []
        private = False
        if own is not None:
            items, private = _all_pages(lambda p: own(ctx, p), key)
        seen = {item.get(field) for item in items if isinstance(item, dict)}
        budget = _MergeBudget()  # a mounted proxy's remote may page without end
        for mount in self.mounts:
            if mount.server.methods.request_handler(method) is None:
                continue
            if budget.full:
                break
            theirs, hidden = _all_pages(partial(mount.call, method, ctx=ctx), key, budget)
            if budget.full:
                logger.warning("server %r: its merged %s stops at mounted server %r: the "
                               "mounts' items may fill at most %d items, %d bytes",
                               self.server.name, method, mount.server.name,
                               MAX_MERGED_ITEMS, MAX_MERGED_BYTES)
            private = private or hidden
            for item in theirs:
                item = mount.item_out(field, item)
                name = item.get(field) if isinstance(item, dict) else None
                if name in seen:
                    continue
                seen.add(name)
                items.append(item)
        result = listing(key, items, params.get("cursor"), self.server.limits.page_size)
        if private:
            result["cacheScope"] = "private"  # some part differs by principal
        return result

    def by_id(self, method: str, ctx: HandlerContext,
              params: dict[str, Any]) -> dict[str, Any]:
        """A request about an id some server made (a task's): the parent's own handler
        first, then each mount's, until one does not answer "unknown" (-32602)."""
        own = self._own[method]
        unknown: MCPError | None = None
        if own is not None:
            try:
                return own(ctx, params)
            except MCPError as exc:
                if exc.code != INVALID_PARAMS:
                    raise
                unknown = exc
        for mount in self.mounts:
            if mount.server.methods.request_handler(method) is None:
                continue
            try:
                return mount.call(method, params, ctx)
            except MCPError as exc:
                if exc.code != INVALID_PARAMS:
                    raise
                unknown = unknown or exc
        if unknown is not None:
            raise unknown
        raise MethodNotFoundError(f"Method not found: {method}", data={"method": method})

    def routed(self, method: str, ctx: HandlerContext,
               params: dict[str, Any]) -> dict[str, Any]:
        kind, key, field = _target(method, params)
        found = None
        if isinstance(key, str) and not _own(self.server, kind, key):
            found = self.find(method, kind, key)
        if found is None:
            own = self._own[method]
            if own is None:
                raise MethodNotFoundError(f"Method not found: {method}",
                                          data={"method": method})
            return own(ctx, params)
        mount, inner = found
        assert isinstance(key, str)
        try:
            result = mount.call(method, _renamed(method, params, inner), ctx)
        except MCPError as exc:
            raise error_out(exc, field, inner, key) from None
        if method == "tools/call" and result.get("isError") is True and inner != key:
            result = _tool_error_out(result, inner, key)
        return _result_out(method, mount.prefix, result)


def _bound(fn: Callable[..., dict[str, Any]], *front: Any) -> MethodHandler:
    def handler(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return fn(*front, ctx, params)

    return handler


class _MergeBudget:
    """What one merged list may still read from the mounts: :data:`MAX_MERGED_ITEMS`
    items and :data:`MAX_MERGED_BYTES` bytes (each item measured as compact JSON). Used by
    one request's thread only."""

    def __init__(self) -> None:
        self.items = MAX_MERGED_ITEMS
        self.bytes = MAX_MERGED_BYTES
        self.full = False

    def take(self, page: list[Any]) -> list[Any]:
        """The items of ``page`` that fit, in order; past the first that does not, none."""
        kept: list[Any] = []
        for item in page:
            size = len(json.dumps(item, separators=(",", ":"), default=str))
            if self.items < 1 or size > self.bytes:
                self.full = True
                break
            self.items -= 1
            self.bytes -= size
            kept.append(item)
        return kept


def _all_pages(call: Callable[[dict[str, Any]], dict[str, Any]], key: str,
               budget: _MergeBudget | None = None) -> tuple[list[Any], bool]:
    """Every item of a paginated list (within ``budget``, when given), and whether a page
    was ``cacheScope: private``."""
    items: list[Any] = []
    private = False
    cursors: set[str] = set()
    params: dict[str, Any] = {}
    for _ in range(MAX_PAGES):
        result = call(params)
        page = result.get(key)
        if isinstance(page, list):
            items.extend(page if budget is None else budget.take(page))
        private = private or result.get("cacheScope") == "private"
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or cursor in cursors or (
                budget is not None and budget.full):
            break
        cursors.add(cursor)
        params = {"cursor": cursor}
    return items, private


def _target(method: str, params: dict[str, Any]) -> tuple[str, Any, str]:
    """What a routed request names: its kind, the parent's key and the error data field."""
    if method == "tools/call":
        return "tool", params.get("name"), "name"
    if method == "prompts/get":
        return "prompt", params.get("name"), "name"
    if method == "resources/read":
        return "resource", params.get("uri"), "uri"
    ref = params.get("ref")
    if not isinstance(ref, dict):
        return "tool", None, "name"  # malformed: the parent's own handler refuses it
    if ref.get("type") == "ref/prompt":
        return "prompt", ref.get("name"), "name"
    if ref.get("type") == "ref/resource":
        return "template", ref.get("uri"), "uri"
    return "tool", None, "name"


def _renamed(method: str, params: dict[str, Any], inner: str) -> dict[str, Any]:
    if method == "completion/complete":
        ref = params["ref"]
        field = "name" if ref.get("type") == "ref/prompt" else "uri"
        return {**params, "ref": {**ref, field: inner}}
    if method == "resources/read":
        return {**params, "uri": inner}
    return {**params, "name": inner}


def _tool_error_out(result: dict[str, Any], inner: str, outer: str) -> dict[str, Any]:
    """A mounted tool's error result (its arguments refused, a call that failed) told about
    ``outer``, the name the client called, where the mounted server named the tool
    ``inner`` (``tool 'add'``, ``tool add:``), as an unknown name's error is."""
    content = result.get("content")
    if not isinstance(content, list):
        return result
    swaps = ((f"tool {inner!r}", f"tool {outer!r}"), (f"tool {inner}:", f"tool {outer}:"))

    def renamed(block: Any) -> Any:
        if not (isinstance(block, dict) and block.get("type") == "text"
                and isinstance(block.get("text"), str)):
            return block
        text = block["text"]
        for old, new in swaps:
            text = text.replace(old, new)
        return {**block, "text": text}

    return {**result, "content": [renamed(block) for block in content]}


def _result_out(method: str, prefix: str | None, result: dict[str, Any]) -> dict[str, Any]:
    if not prefix:
        return result
    if method == "resources/read" and isinstance(result.get("contents"), list):
        return {**result, "contents": [
            {**item, "uri": uri_out(prefix, item["uri"])}
            if isinstance(item, dict) and isinstance(item.get("uri"), str) else item
            for item in result["contents"]]}
    if method == "tools/call" and isinstance(result.get("content"), list):
        return {**result, "content": [content_out(prefix, b) for b in result["content"]]}
    if method == "prompts/get" and isinstance(result.get("messages"), list):
        return {**result, "messages": [
            {**m, "content": content_out(prefix, m.get("content"))}
            if isinstance(m, dict) else m for m in result["messages"]]}
    return result


def mount(parent: Mounts, child: Mounts, prefix: str | None) -> None:
    """``parent.mount(child, prefix)``, each server given by its :class:`Mounts`
    (``child``'s a Server's: the method checks): see the module."""
    if prefix == "":
        prefix = None
    if prefix is not None and not (isinstance(prefix, str) and PREFIX.fullmatch(prefix)):
        raise ValueError(f"a mount prefix is letters, digits, '_', '-' and '.', not {prefix!r}")
    server, into = child.server, parent.server
    with _GRAPH:
        if child is parent or _reaches(child, parent):
            raise ValueError(f"mounting server {server.name!r} into {into.name!r} would "
                             "make a cycle")
        if not parent.mounts:
            parent._activate()
        if any(m.mounts is child for m in parent.mounts):
            raise ValueError(f"server {server.name!r} is already mounted into "
                             f"{into.name!r}")
        parent.mounts = (*parent.mounts, Mount(child, prefix))
    child.hooks.list_changed.append(into.notify_list_changed)
    child.hooks.resource_updated.append(
        lambda uri: into.notify_resource_updated(uri_out(prefix, uri)))
    into.on_startup(server.start)
    into.on_shutdown(server.stop)
    if parent.started:
        server.start()
    for kind in ("tools", "resources", "prompts"):
        if kind == "tools" or child.server_provides(kind):
            into.notify_list_changed(kind)


def _reaches(start: Mounts, target: Mounts) -> bool:
    """Whether ``target``'s server is mounted into ``start``'s, however deep (under
    ``_GRAPH``)."""
    stack, seen = [start], set()
    while stack:
        mounts = stack.pop()
        if id(mounts) in seen:
            continue
        seen.add(id(mounts))
        for m in mounts.mounts:
            if m.mounts is target:
                return True
            stack.append(m.mounts)
    return False
