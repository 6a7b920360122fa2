"""Every MCP method mcpsync knows, one frozen row each: ONE table (sans-IO).

What the rest of the code needs to know about a method (which era has it, what it
targets and which param names the target, whether its result is cached, whether it may
ask the client questions, whether it may wait by design, how mounts and proxies treat
it, what telemetry names it by) is a field of its :class:`Method` row here. The
modules that act on those facts read a *view*: a set or dict of method names built from
the rows (:data:`VIEWS`), never a set of names of their own. Adding a method is adding
a row (docs/architecture.md, "Adding a method"); an extension that adds methods at run
time registers its rows with :func:`register`, which updates every view in place.

Views are plain sets and dicts built once and updated only by :func:`register`
/:func:`unregister` (a definition-time act, like registering a handler): a hot path
pays one membership test in a set, never a look-up through the rows.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Final, Literal

from ..frozen import Frozen

Era = Literal["legacy", "modern"]
#: Who sends the message: a client to a server, a server to a client, or either.
Sender = Literal["client", "server", "both"]
#: What the message acts on, named by one of its params.
Target = Literal["tool", "prompt", "resource", "task"]

LEGACY: Final = "legacy"
MODERN: Final = "modern"
BOTH_ERAS: Final[frozenset[Era]] = frozenset({"legacy", "modern"})
LEGACY_ONLY: Final[frozenset[Era]] = frozenset({"legacy"})
MODERN_ONLY: Final[frozenset[Era]] = frozenset({"modern"})

#: The telemetry attribute (MCP semantic conventions) that carries each kind of target.
TARGET_ATTRIBUTE: Final[dict[str, str]] = {
    "tool": "gen_ai.tool.name", "prompt": "gen_ai.prompt.name",
    "resource": "mcp.resource.uri", "task": "mcpsync.task.id",
}


_FIELDS: Final = ("name", "eras", "sender", "notification", "target", "target_param",
                   "capability", "cacheable", "asks", "streams", "blocks", "mount", "items",
                   "forwarded", "scoped", "telemetry", "before_init", "cancellable",
                   "invalidates")


class Method(Frozen):
    """The facts about one method (a request or a notification).

    Immutable, compared and hashed by its fields. A :class:`~mcpsync.frozen.Frozen` class,
    not a frozen dataclass: every server imports this module before its first answer, and
    defining a 20-field frozen dataclass (its generated methods compiled through ``exec``)
    cost more than the whole rest of the table."""

    __slots__ = _FIELDS

    name: str
    #: The eras that have it; one missing from ``eras`` was removed (or is not there yet).
    eras: frozenset[Era]
    sender: Sender
    notification: bool
    #: What it acts on, and the param that names it (``Mcp-Name`` on 2026-07-28 HTTP).
    target: Target | None
    target_param: str | None
    #: The server capability a client needs to see declared before it sends this.
    capability: str | None
    #: Its 2026-07-28 result carries ``ttlMs``/``cacheScope`` and a client may cache it.
    cacheable: bool
    #: Its handler may ask the client questions: an ``InputRequiredResult`` (MRTR) in
    #: 2026-07-28, reverse requests in the handshake era.
    asks: bool
    #: Its handler may report progress: on HTTP it runs on a handler thread, so the
    #: progress streams while it runs.
    streams: bool
    #: It waits by design (for a task, for events): never run on a reader thread.
    blocks: bool
    #: How a server with mounts serves it: ``"list"`` merges every mount's pages,
    #: ``"route"`` sends it to the mount its target names.
    mount: Literal["list", "route"] | None
    #: A ``"list"``'s result key and the field that names each item in it.
    items: tuple[str, str] | None
    #: A proxy forwards it to its remote.
    forwarded: bool
    #: Per-item scopes (``scopes=`` of a registration) guard it: its target must be
    #: granted to the caller's token.
    scoped: bool
    #: The telemetry attribute its target goes in (the conventions' name for the kind;
    #: by default the one :data:`TARGET_ATTRIBUTE` gives its target).
    telemetry: str | None
    #: It may be sent before the handshake ends (``initialize`` itself, ``ping``).
    before_init: bool
    #: ``notifications/cancelled`` may name it (never ``initialize``).
    cancellable: bool
    #: A notification that makes these cached results stale (a ``list_changed``).
    invalidates: tuple[str, ...]

    def __init__(self, name: str, eras: frozenset[Era], sender: Sender,
                 notification: bool = False, target: Target | None = None,
                 target_param: str | None = None, capability: str | None = None,
                 cacheable: bool = False, asks: bool = False, streams: bool = False,
                 blocks: bool = False, mount: Literal["list", "route"] | None = None,
                 items: tuple[str, str] | None = None, forwarded: bool = False,
                 scoped: bool = False, telemetry: str | None = None,
                 before_init: bool = False, cancellable: bool = True,
                 invalidates: tuple[str, ...] = ()) -> None:
        if (target is None) != (target_param is None):
            raise ValueError(f"{name}: a target needs its param, and a param its target")
        if (mount == "list") != (items is not None):
            raise ValueError(f"{name}: a merged list names its items, nothing else does")
        if not eras:
            raise ValueError(f"{name}: a method exists in at least one era")
        if telemetry is None and target is not None:
            telemetry = TARGET_ATTRIBUTE[target]
        self._init(name, eras, sender, notification, target, target_param, capability,
                   cacheable, asks, streams, blocks, mount, items, forwarded, scoped, telemetry,
                   before_init, cancellable, invalidates)

    @property
    def removed_in(self) -> Era | None:
        """The era that no longer has it (``"modern"`` for ``initialize``), or ``None``."""
        return "modern" if "legacy" in self.eras and "modern" not in self.eras else None


def _request(name: str, eras: frozenset[Era], sender: Sender = "client", **facts: object) -> Method:
    return Method(name, eras, sender, **facts)  # type: ignore[arg-type]


def _notification(name: str, eras: frozenset[Era], sender: Sender,
                  invalidates: tuple[str, ...] = ()) -> Method:
    return Method(name, eras, sender, notification=True, invalidates=invalidates)


#: The built-in rows, in the spec's order of features.
BUILTIN: Final[tuple[Method, ...]] = (
    # lifecycle
    _request("initialize", LEGACY_ONLY, before_init=True, cancellable=False),
    _request("ping", LEGACY_ONLY, "both", before_init=True),
    _request("server/discover", MODERN_ONLY, cacheable=True),
    # tools
    _request("tools/list", BOTH_ERAS, capability="tools", cacheable=True, mount="list",
             items=("tools", "name"), forwarded=True),
    _request("tools/call", BOTH_ERAS, target="tool", target_param="name", capability="tools",
             asks=True, streams=True, mount="route", forwarded=True, scoped=True),
    # prompts
    _request("prompts/list", BOTH_ERAS, capability="prompts", cacheable=True, mount="list",
             items=("prompts", "name"), forwarded=True),
    _request("prompts/get", BOTH_ERAS, target="prompt", target_param="name",
             capability="prompts", asks=True, streams=True, mount="route", forwarded=True,
             scoped=True),
    # resources
    _request("resources/list", BOTH_ERAS, capability="resources", cacheable=True,
             mount="list", items=("resources", "uri"), forwarded=True),
    _request("resources/templates/list", BOTH_ERAS, capability="resources", cacheable=True,
             mount="list", items=("resourceTemplates", "uriTemplate"), forwarded=True),
    _request("resources/read", BOTH_ERAS, target="resource", target_param="uri",
             capability="resources", cacheable=True, asks=True, streams=True, mount="route",
             forwarded=True, scoped=True),
    _request("resources/subscribe", LEGACY_ONLY, target="resource", target_param="uri",
             capability="resources", scoped=True),
    # Unsubscribing needs no scope: a caller whose token lost one can still stop.
    _request("resources/unsubscribe", LEGACY_ONLY, target="resource", target_param="uri",
             capability="resources"),
    _request("subscriptions/listen", MODERN_ONLY, streams=True, blocks=True),
    # completion and logging
    _request("completion/complete", BOTH_ERAS, capability="completions", streams=True,
             mount="route", forwarded=True),
    _request("logging/setLevel", LEGACY_ONLY, capability="logging"),
    # tasks: v1 (2025-11-25, all four) and the 2026-07-28 extension (get, update, cancel)
    _request("tasks/get", BOTH_ERAS, target="task", target_param="taskId", capability="tasks"),
    _request("tasks/update", MODERN_ONLY, target="task", target_param="taskId",
             capability="tasks"),
    _request("tasks/cancel", BOTH_ERAS, target="task", target_param="taskId",
             capability="tasks"),
    _request("tasks/result", LEGACY_ONLY, target="task", target_param="taskId",
             capability="tasks", blocks=True),
    _request("tasks/list", LEGACY_ONLY, capability="tasks"),
    # what a server asks a client (in 2026-07-28: only as an MRTR question)
    _request("elicitation/create", BOTH_ERAS, "server", capability="elicitation"),
    _request("sampling/createMessage", BOTH_ERAS, "server", capability="sampling"),
    _request("roots/list", BOTH_ERAS, "server", capability="roots"),
    # notifications
    _notification("notifications/initialized", LEGACY_ONLY, "client"),
    _notification("notifications/cancelled", BOTH_ERAS, "both"),
    _notification("notifications/progress", BOTH_ERAS, "both"),
    _notification("notifications/message", BOTH_ERAS, "server"),
    _notification("notifications/tools/list_changed", BOTH_ERAS, "server",
                  invalidates=("tools/list",)),
    _notification("notifications/prompts/list_changed", BOTH_ERAS, "server",
                  invalidates=("prompts/list",)),
    _notification("notifications/resources/list_changed", BOTH_ERAS, "server",
                  invalidates=("resources/list", "resources/templates/list")),
    Method("notifications/resources/updated", BOTH_ERAS, "server", notification=True,
           target="resource", target_param="uri"),
    _notification("notifications/roots/list_changed", LEGACY_ONLY, "client"),
    _notification("notifications/elicitation/complete", LEGACY_ONLY, "server"),
    _notification("notifications/subscriptions/acknowledged", MODERN_ONLY, "server"),
    _notification("notifications/tasks/status", LEGACY_ONLY, "server"),
    _notification("notifications/tasks", MODERN_ONLY, "server"),
)


class Views:
    """The sets and dicts the code reads, each derived from the rows. One instance
    (:data:`VIEWS`); its containers are the same objects for the life of the process,
    refilled in place when a row is registered, so a module may bind one at import."""

    def __init__(self) -> None:
        #: Every method name: telemetry records any other as ``_OTHER``.
        self.known: set[str] = set()
        #: Results that carry caching hints (server) and that a client caches.
        self.cacheable: set[str] = set()
        #: Cacheable methods and the param their cache key takes (``None``: one entry).
        self.cache_key: dict[str, str | None] = {}
        #: Methods whose result may be an ``InputRequiredResult`` (2026-07-28).
        self.asks: set[str] = set()
        #: 2026-07-28 methods that run on a handler thread over HTTP (they may stream).
        self.threaded_modern: set[str] = set()
        #: Methods that wait by design: never inline on a reader thread.
        self.never_inline: set[str] = set()
        #: Methods whose target is a tool (their handler is a registered tool's).
        self.tool_methods: set[str] = set()
        #: Methods keyed by a peer-chosen name (a tool, a prompt): the param, by method.
        self.named: dict[str, str] = {}
        #: 2026-07-28 methods whose target travels in ``Mcp-Name``: the param it mirrors.
        self.name_sources: dict[str, str] = {}
        #: Each method with a target: the param that names it.
        self.target_param: dict[str, str] = {}
        #: Each method with a target: (telemetry attribute, param).
        self.telemetry_target: dict[str, tuple[str, str]] = {}
        #: Lists merged across mounts: (result key, item field), by method.
        self.mount_lists: dict[str, tuple[str, str]] = {}
        #: Methods a mount routes by their target (in table order).
        self.mount_routed: list[str] = []
        #: Methods a proxy forwards (in table order).
        self.forwarded: list[str] = []
        #: Methods guarded by per-item scopes: the kind of their target.
        self.scoped: dict[str, str] = {}
        #: Lists whose items are what a named method targets: (target kind, result key,
        #: item field), by list method (``tools/list`` lists what ``tools/call`` names).
        self.lists_named: dict[str, tuple[str, str, str]] = {}
        #: The requests each server capability covers.
        self.by_capability: dict[str, tuple[str, ...]] = {}
        #: Requests a client sends that 2026-07-28 removed (answered -32601 there).
        self.removed_modern: set[str] = set()
        #: What a server may ask a client (2026-07-28: as an MRTR question), in table
        #: order, and the client capability each needs.
        self.questions: list[str] = []
        self.question_needs: dict[str, str] = {}
        #: Requests that may come before the handshake ends.
        self.before_init: set[str] = set()
        #: Requests ``notifications/cancelled`` may not name.
        self.not_cancellable: set[str] = set()
        #: The cached results each notification makes stale.
        self.invalidates: dict[str, tuple[str, ...]] = {}

    def fill(self, rows: Iterable[Method]) -> None:
        """Rebuild every view from ``rows``, in place: each container keeps its identity,
        and a name in both the old and the new view never leaves it meanwhile (a thread
        reading a view while an extension registers a row sees the rows it saw)."""
        if not self.known:  # the first fill (the built-in rows, at import): nothing to keep
            self._build(list(rows))
            return
        fresh = Views()
        fresh._build(list(rows))
        for attribute, view in vars(self).items():
            new = getattr(fresh, attribute)
            if isinstance(view, set):
                view |= new
                view &= new
            elif isinstance(view, dict):
                view.update(new)
                for gone in [key for key in view if key not in new]:
                    del view[gone]
            else:
                view[:] = new

    def _build(self, rows: list[Method]) -> None:
        capability: dict[str, list[str]] = {}
        for row in rows:
            name = row.name
            self.known.add(name)
            if row.cacheable:
                self.cacheable.add(name)
                self.cache_key[name] = row.target_param if row.target_param else (
                    "cursor" if row.mount == "list" else None)
            if row.asks:
                self.asks.add(name)
            if (row.streams or row.blocks) and "modern" in row.eras:
                self.threaded_modern.add(name)
            if row.blocks:
                self.never_inline.add(name)
            if row.target == "tool":
                self.tool_methods.add(name)
            if row.target in ("tool", "prompt") and row.target_param is not None:
                self.named[name] = row.target_param
            if (row.target_param is not None and "modern" in row.eras
                    and not row.notification and row.sender == "client"):
                self.name_sources[name] = row.target_param
            if row.target_param is not None:
                self.target_param[name] = row.target_param
            if row.telemetry is not None and row.target_param is not None:
                self.telemetry_target[name] = (row.telemetry, row.target_param)
            if row.mount == "list" and row.items is not None:
                self.mount_lists[name] = row.items
            elif row.mount == "route":
                self.mount_routed.append(name)
            if row.forwarded:
                self.forwarded.append(name)
            if row.scoped and row.target is not None:
                self.scoped[name] = row.target
            if row.capability is not None and not row.notification:
                capability.setdefault(row.capability, []).append(name)
            if row.removed_in == "modern" and row.sender in ("client", "both") \
                    and not row.notification:
                self.removed_modern.add(name)
            if row.sender == "server" and not row.notification and "modern" in row.eras:
                self.questions.append(name)
                if row.capability is not None:
                    self.question_needs[name] = row.capability
            if row.before_init:
                self.before_init.add(name)
            if not row.cancellable:
                self.not_cancellable.add(name)
            if row.invalidates:
                self.invalidates[name] = row.invalidates
        self.by_capability.update((k, tuple(v)) for k, v in capability.items())
        named_by_capability = {row.capability: row.target for row in rows
                               if row.name in self.named and row.capability is not None}
        for row in rows:
            kind = named_by_capability.get(row.capability) if row.capability else None
            if row.name in self.mount_lists and kind is not None:
                key, item = self.mount_lists[row.name]
                self.lists_named[row.name] = (kind, key, item)


class MethodTable:
    """The rows, by name: the built-ins and any an extension registers."""

    def __init__(self, rows: Iterable[Method], views: Views) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, Method] = {}
        self._builtin = frozenset(row.name for row in rows)
        for row in rows:
            self._add(row)
        self.views = views
        views.fill(self._rows.values())

    def _add(self, row: Method) -> None:
        if row.name in self._rows:
            raise ValueError(f"method {row.name!r} has a row already")
        self._rows[row.name] = row

    def register(self, row: Method) -> Method:
        """Add ``row`` (a method this table did not have) and refresh every view.
        ``ValueError`` when the method has a row already. Returns ``row``."""
        with self._lock:
            self._add(row)
            self.views.fill(self._rows.values())
        return row

    def unregister(self, name: str) -> None:
        """Take out a row :meth:`register` added (a built-in stays)."""
        if name in self._builtin:
            raise ValueError(f"method {name!r} is built in")
        with self._lock:
            self._rows.pop(name, None)
            self.views.fill(self._rows.values())

    def get(self, name: str) -> Method | None:
        return self._rows.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._rows

    def __iter__(self) -> Iterator[Method]:
        return iter(list(self._rows.values()))

    def __len__(self) -> int:
        return len(self._rows)


#: The views every module reads.
VIEWS: Final = Views()
#: The table of this process: the built-in rows, and any registered since.
TABLE: Final = MethodTable(BUILTIN, VIEWS)


def register(row: Method) -> Method:
    """Add a method to :data:`TABLE` (see :meth:`MethodTable.register`)."""
    return TABLE.register(row)


def unregister(name: str) -> None:
    """Take a registered method out of :data:`TABLE`."""
    TABLE.unregister(name)


__all__ = ["BUILTIN", "TABLE", "VIEWS", "Method", "MethodTable", "Views", "register",
           "unregister"]
