"""``subscriptions/listen`` (2026-07-28): long-lived notification streams, fanned out.

A listen request stays open: the server acknowledges it with
``notifications/subscriptions/acknowledged``, then sends the notifications the client
asked for, each tagged ``_meta["io.modelcontextprotocol/subscriptionId"]`` (the listen
request's id), until the client cancels the request or the server ends the subscription
gracefully with a ``complete`` result.

Slots: a listen parks for as long as the client keeps it, so it must not hold one of the
``max_handlers`` slots that tool calls, prompts and reads need (64 open listens
would otherwise leave every other request waiting). Once registered, the handler gives its
slot back to the pool it runs on (:func:`~mcpsync.engine.pool.release_current_slot`); the
listens have their own bound instead, ``ServerLimits(max_subscriptions=...)`` across all
sessions and transports, past which a new listen is refused at once.

Threads: the request's own handler thread is the subscription's delivery thread. The
server's change announcements (from any thread) only record what changed in each
matching :class:`Listener` and wake it; the handler sends. So nothing is ever sent while
a lock is held, a slow client stalls only its own subscription, and the acknowledgement
is always the subscription's first message. The handler sends through
``ctx.notify`` (``connection.notify(..., related_request_id=<listen id>)``), so a transport
that routes by request (an HTTP SSE response) carries the stream on that request's
response. Pending changes are coalesced: a burst of changes to one list is one
notification.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..engine.pool import release_current_slot
from ..engine.requests import CancelEvent
from ..errors import (
    INTERNAL_ERROR,
    ConnectionClosedError,
    InvalidParamsError,
    MCPError,
    MethodNotFoundError,
    RequestCancelledError,
)
from ..frozen import Frozen
from ..protocol.versions import (
    ACKNOWLEDGED,
    LIST_FIELDS,
    META_SUBSCRIPTION_ID,
    UPDATED,
    features,
    uri_covers,
)
from .subscribers import ResourceSubscribers

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext

logger = logging.getLogger("mcpsync.server")

def parse_filter(params: dict[str, Any], id_fields: Iterable[str] = ()) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request, validated (-32602 otherwise).
    ``id_fields``: the fields of followed items extensions added (arrays of ids)."""
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise InvalidParamsError('Invalid params: "notifications" is required and must be '
                                 "an object")
    for field in LIST_FIELDS:
        if field in wanted and not isinstance(wanted[field], bool):
            raise InvalidParamsError(f'Invalid params: "notifications.{field}" must be a '
                                     "boolean")
    for field in ("resourceSubscriptions", *id_fields):
        items = wanted.get(field)
        if items is not None and (not isinstance(items, list)
                                  or not all(isinstance(u, str) for u in items)):
            raise InvalidParamsError(f'Invalid params: "notifications.{field}" must be an '
                                     "array of strings")
    return wanted


def honoured(wanted: dict[str, Any], capabilities: dict[str, Any],
             followed: Iterable[Followed] = ()) -> dict[str, Any]:
    """The subset of ``wanted`` that a server with ``capabilities`` (and extensions whose
    items may be ``followed``) will deliver."""
    granted: dict[str, Any] = {}
    for field, kind in LIST_FIELDS.items():
        if wanted.get(field) is True and (capabilities.get(kind) or {}).get("listChanged"):
            granted[field] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None and (capabilities.get("resources") or {}).get("subscribe"):
        granted["resourceSubscriptions"] = list(dict.fromkeys(uris))
    for item in followed:  # an extension's items: the status changes of these ids
        ids = wanted.get(item.field)
        if ids is not None:
            granted[item.field] = list(dict.fromkeys(ids))[:item.limit]
    return granted


#: Distinct notifications one listen holds for a client that reads slower than changes
#: come. Past it, a resource update folds into the subscribed URI that covers it (a client
#: told "notes://a changed" re-reads what it follows), so the backlog stays bounded.
MAX_PENDING = 256
#: Item ids one listen may follow in one field by default (the tasks extension's
#: ``notifications.taskIds``); the rest are not granted.
MAX_FOLLOWED_IDS = 256


# A Frozen value class, not a NamedTuple or a frozen dataclass: every server imports this
# module, and defining either cost its start a few hundred µs (see mcpsync/frozen.py).
class Followed(Frozen):
    """Items an extension lets a listen follow by id (the tasks extension: tasks), the
    seam through which it announces their statuses without the server knowing them.

    ``field``: the listen filter's array of ids (``"taskIds"``). ``method``: the
    notification a status goes out as (``"notifications/tasks"``). ``limit``: ids granted
    per listen. ``fetch(item_id, owner)``: the item's ``(version, params)`` read from where
    it lives (a shared store), or None (gone, or not ``owner``'s); called on a listen's own
    thread for a status relayed without its body. Immutable; equal and hashed by its
    fields."""

    __slots__ = ("field", "method", "fetch", "limit")  # noqa: RUF023  (__init__'s order)

    field: str
    method: str
    fetch: Callable[[str, str], tuple[int, dict[str, Any]] | None]
    limit: int

    def __init__(self, field: str, method: str,
                 fetch: Callable[[str, str], tuple[int, dict[str, Any]] | None],
                 limit: int = MAX_FOLLOWED_IDS) -> None:
        self._init(field, method, fetch, limit)


class Listener:
    """One open subscription: what it follows, and what changed since it last sent."""

    def __init__(self, subscription_id: Any, granted: dict[str, Any], owner: object,
                 principal: str = "", may_read: Callable[[str], bool] | None = None,
                 followed: Iterable[str] = ()) -> None:
        self.subscription_id = subscription_id
        self.owner = owner
        #: Whose items this listen may hear about (see mcpsync.server.owners.owner_of).
        self.principal = principal
        #: Whether its principal may read a URI (per-resource scopes): a subscription to
        #: ``notes://`` must not hear of ``notes://secret`` it may not read.
        self.may_read = may_read
        #: The ids it follows, by the field (of ``followed``) of the extension owning them.
        self.followed = {field: frozenset(granted[field]) for field in followed
                         if field in granted}
        self.lists = frozenset(kind for field, kind in LIST_FIELDS.items()
                               if granted.get(field))
        self.uris = tuple(granted.get("resourceSubscriptions") or ())
        self.wake = threading.Event()
        self._lock = threading.Lock()
        #: Pending notifications in first-change order, keyed for coalescing.
        self._pending: dict[tuple[str, str], tuple[str, dict[str, Any] | None]] = {}
        #: The latest version of each followed item posted with its body, or read from
        #: its store, so far (at most one entry per followed id).
        self._versions: dict[tuple[str, str], int] = {}
        self.ending = False

    def wants_list(self, kind: str) -> bool:
        return kind in self.lists

    def wants_uri(self, uri: str) -> bool:
        return any(uri_covers(subscribed, uri) for subscribed in self.uris) and (
            self.may_read is None or self.may_read(uri))

    def post(self, key: tuple[str, str], method: str, params: dict[str, Any] | None) -> None:
        with self._lock:
            if (key not in self._pending and len(self._pending) >= MAX_PENDING
                    and key[0] == "uri"):
                covering = next((u for u in self.uris if uri_covers(u, key[1])), key[1])
                key, params = ("uri", covering), {**(params or {}), "uri": covering}
            self._pending.setdefault(key, (method, params))
        self.wake.set()

    def follows(self, field: str, item_id: str) -> bool:
        ids = self.followed.get(field)
        return ids is not None and item_id in ids

    def post_status(self, kind: Followed, item_id: str, version: int | None,
                    params: dict[str, Any] | None) -> None:
        """A status of the followed item ``item_id``: ``params``, or ``None`` for "read
        it from its store" (a status too large for the bus). A ``version`` at or below one
        already posted is the same change heard twice (the worker that cancelled a task
        and the one that ran it both announce it; a relayed event and the local one) or a
        stale one arriving late: dropped. Bounded: one pending entry and one version per
        followed id."""
        key = (kind.field, item_id)
        with self._lock:
            if version is not None:
                if version <= self._versions.get(key, -1):
                    return
                if params is not None:  # one read from the store is noted when read
                    self._versions[key] = version
            # One pending status per item, the latest, queued after what came before it:
            # a client that reads slower than its item changes gets the item as it is now
            # (never an older status after a newer one).
            self._pending.pop(key, None)
            self._pending[key] = ((FETCH, {"field": kind.field, "id": item_id})
                                  if params is None else (kind.method, params))
        self.wake.set()

    def seen(self, field: str, item_id: str, version: int) -> bool:
        """Note that ``version`` of ``item_id`` was read from its store and is about to
        be sent; False when that version (or a later one) was posted or sent already."""
        with self._lock:
            if version <= self._versions.get((field, item_id), -1):
                return False
            self._versions[(field, item_id)] = version
            return True

    def end(self) -> None:
        """Ask the handler to end the subscription gracefully (a ``complete`` result)."""
        self.ending = True
        self.wake.set()

    def take(self) -> list[tuple[str, dict[str, Any] | None]]:
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
        return pending


#: A pending entry's method for an item's status to read from its store when it is sent.
FETCH = "mcpsync/fetch-status"


def _fetch(registry: ListenRegistry, listener: Listener,
           body: dict[str, Any] | None) -> tuple[str, dict[str, Any]] | None:
    """The notification of the current status of the item named in ``body``, read with
    the listen's own principal (the owner check of its store), or None: gone, not ours,
    or sent already."""
    field, item_id = (body or {}).get("field"), (body or {}).get("id")
    kind = registry.followed.get(str(field))
    if kind is None or not isinstance(item_id, str):
        return None
    try:
        found = kind.fetch(item_id, listener.principal)
    except Exception:  # the store is down: this status is skipped; the client polls
        logger.warning("%s %s: status not read from its store", field, item_id,
                       exc_info=True)
        return None
    if found is None or not listener.seen(kind.field, item_id, found[0]):
        return None
    return kind.method, found[1]


#: How many ``subscriptions/listen`` streams one Server keeps open at most, by default.
DEFAULT_MAX_SUBSCRIPTIONS = 1024


class ListenRegistry:
    """Every open subscription of one Server, across sessions and transports. Thread-safe:
    the lock guards only the set; nothing is sent by the callers of this class.

    ``max_subscriptions`` bounds the set: :meth:`add` refuses one more (-32603, "Server
    busy") rather than let listens pile up threads without limit. The resource URIs of
    each open listen are recorded in ``subscribers``, the server's one record of resource
    subscriptions (shared with its handshake-era sessions).
    """

    def __init__(self, max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
                 subscribers: ResourceSubscribers | None = None) -> None:
        if max_subscriptions < 0:
            raise ValueError("max_subscriptions must not be negative")
        self.max_subscriptions = max_subscriptions
        self.subscribers = ResourceSubscribers() if subscribers is None else subscribers
        self._lock = threading.Lock()
        self._gone = threading.Condition(self._lock)
        self._listeners: set[Listener] = set()
        #: The items extensions let a listen follow, by filter field (:meth:`follow`).
        self.followed: dict[str, Followed] = {}

    def follow(self, kind: Followed) -> None:
        """Let listens follow ``kind``'s items from now on (an extension, at install);
        ``ValueError`` when its field is taken."""
        if kind.field in self.followed or kind.field in LIST_FIELDS or (
                kind.field == "resourceSubscriptions"):
            raise ValueError(f"listens follow {kind.field!r} already")
        self.followed = {**self.followed, kind.field: kind}

    def add(self, listener: Listener) -> None:
        """Register ``listener``, or raise :class:`~mcpsync.errors.MCPError` (-32603) when
        ``max_subscriptions`` are open already, or what a watcher of ``subscribers``
        raised on being told of its resource URIs (then it is not registered)."""
        with self._lock:
            if len(self._listeners) >= self.max_subscriptions:
                limit = self.max_subscriptions
                raise MCPError(
                    f"Server busy: {limit} subscriptions are open, the most this server "
                    "allows (max_subscriptions); close one and retry",
                    code=INTERNAL_ERROR, data={"maxSubscriptions": limit})
            self._listeners.add(listener)
        if listener.uris:
            try:
                self.subscribers.add(listener, listener.uris)
            except BaseException:
                self.discard(listener)
                raise

    def discard(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.discard(listener)
            self._gone.notify_all()
        self.subscribers.drop(listener)

    def wait_ended(self, owners: Iterable[object] | None = None,
                   timeout: float | None = None, *, at_most: int = 0) -> bool:
        """Block until at most ``at_most`` subscriptions of ``owners`` (or of anyone) are
        open; False when ``timeout`` passes first."""
        keep = None if owners is None else set(map(id, owners))
        with self._lock:
            return self._gone.wait_for(lambda: sum(
                keep is None or id(lst.owner) in keep for lst in self._listeners) <= at_most,
                timeout)

    def snapshot(self) -> list[Listener]:
        with self._lock:
            return list(self._listeners)

    def __len__(self) -> int:
        with self._lock:
            return len(self._listeners)

    def list_changed(self, kind: str) -> None:
        """``notifications/{kind}/list_changed`` to every subscription that asked for it."""
        method = f"notifications/{kind}/list_changed"
        for listener in self.snapshot():
            if listener.wants_list(kind):
                listener.post(("list", kind), method, None)

    def resource_updated(self, uri: str) -> None:
        """``notifications/resources/updated`` to every subscription that covers ``uri``."""
        for listener in self.snapshot():
            if listener.wants_uri(uri):
                listener.post(("uri", uri), UPDATED, {"uri": uri})

    def status(self, field: str, item_id: str, owner: str, params: dict[str, Any] | None,
               *, version: int | None = None) -> None:
        """A followed item's status (its extension's notification) to every subscription
        following ``item_id`` in ``field`` on behalf of the item's ``owner``; nobody else
        hears of it. ``params`` ``None``: each such listen reads the item from its store
        itself (:attr:`Followed.fetch`), on its own thread. ``version`` drops a change
        heard twice. An unknown ``field`` is ignored (no extension follows it here)."""
        kind = self.followed.get(field)
        if kind is None:
            return
        for listener in self.snapshot():
            if listener.principal == owner and listener.follows(field, item_id):
                listener.post_status(kind, item_id, version, params)

    def end(self, owners: Iterable[object] | None = None) -> int:
        """End subscriptions gracefully: all of them, or those of ``owners`` (the ``ended``
        events of sessions). Returns how many were asked to end."""
        keep = None if owners is None else set(map(id, owners))
        ending = [lst for lst in self.snapshot() if keep is None or id(lst.owner) in keep]
        for listener in ending:
            listener.end()
        return len(ending)


def serve_listen(registry: ListenRegistry, capabilities: dict[str, Any],
                 ctx: HandlerContext, params: dict[str, Any],
                 principal: str = "",
                 may_read: Callable[[str], bool] | None = None) -> dict[str, Any]:
    """The ``subscriptions/listen`` handler: acknowledge, deliver, and end."""
    version = ctx.session.protocol_version
    if version is None or features(version).era != "modern":
        raise MethodNotFoundError("Method not found: subscriptions/listen",
                                  data={"method": "subscriptions/listen"})
    followed = registry.followed
    granted = honoured(parse_filter(params, followed), capabilities, followed.values())
    tag = {META_SUBSCRIPTION_ID: ctx.request_id}
    owner = ctx._session.ended
    listener = Listener(ctx.request_id, granted, owner, principal, may_read, followed)
    cancelled = ctx.cancelled
    # Registered before the acknowledgement, so no change after it can be missed; the
    # handler sends the acknowledgement before anything it collects. Refused at once
    # (nothing sent) when max_subscriptions are open.
    registry.add(listener)
    try:
        # From here the listen is bounded by max_subscriptions, not by the handler slots:
        # give this thread's slot back so tool calls never wait behind parked listens.
        release_current_slot()
        if isinstance(cancelled, CancelEvent):
            cancelled.add_callback(listener.wake.set)
        else:  # a context without the engine's event: the session end is all we watch
            raise RuntimeError("subscriptions/listen needs the engine's CancelEvent")
        if owner.is_set():
            listener.end()
        try:
            ctx.notify(ACKNOWLEDGED, {"notifications": granted, "_meta": dict(tag)})
            while True:
                listener.wake.wait()
                listener.wake.clear()
                if cancelled.is_set():
                    ctx.check_cancelled()
                for method, body in listener.take():
                    if method == FETCH:
                        fetched = _fetch(registry, listener, body)
                        if fetched is None:
                            continue
                        method, body = fetched
                    ctx.notify(method, {**(body or {}), "_meta": dict(tag)})
                if listener.ending:
                    return {"_meta": dict(tag)}
        except ConnectionClosedError:
            raise RequestCancelledError("the connection closed under a subscription") from None
    finally:
        registry.discard(listener)
