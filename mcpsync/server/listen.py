"""``subscriptions/listen`` (2026-07-28): long-lived notification streams, fanned out.

A listen request stays open: the server acknowledges it with
``notifications/subscriptions/acknowledged``, then sends the notifications the client
asked for, each tagged ``_meta["io.modelcontextprotocol/subscriptionId"]`` (the listen
request's id), until the client cancels the request or the server ends the subscription
gracefully with a ``complete`` result.

Slots: a listen parks for as long as the client keeps it, so it must not hold one of the
``max_concurrent_handlers`` slots that tool calls, prompts and reads need (64 open listens
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

def parse_filter(params: dict[str, Any]) -> dict[str, Any]:
    """The ``notifications`` filter of a listen request, validated (-32602 otherwise)."""
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise InvalidParamsError('Invalid params: "notifications" is required and must be '
                                 "an object")
    for field in LIST_FIELDS:
        if field in wanted and not isinstance(wanted[field], bool):
            raise InvalidParamsError(f'Invalid params: "notifications.{field}" must be a '
                                     "boolean")
    for field in ("resourceSubscriptions", "taskIds"):
        items = wanted.get(field)
        if items is not None and (not isinstance(items, list)
                                  or not all(isinstance(u, str) for u in items)):
            raise InvalidParamsError(f'Invalid params: "notifications.{field}" must be an '
                                     "array of strings")
    return wanted


def honoured(wanted: dict[str, Any], capabilities: dict[str, Any]) -> dict[str, Any]:
    """The subset of ``wanted`` that a server with ``capabilities`` will deliver."""
    granted: dict[str, Any] = {}
    for field, kind in LIST_FIELDS.items():
        if wanted.get(field) is True and (capabilities.get(kind) or {}).get("listChanged"):
            granted[field] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None and (capabilities.get("resources") or {}).get("subscribe"):
        granted["resourceSubscriptions"] = list(dict.fromkeys(uris))
    task_ids = wanted.get("taskIds")
    if task_ids is not None:  # the tasks extension: status changes of these tasks
        granted["taskIds"] = list(dict.fromkeys(task_ids))[:MAX_TASK_IDS]
    return granted


#: Distinct notifications one listen holds for a client that reads slower than changes
#: come. Past it, a resource update folds into the subscribed URI that covers it (a client
#: told "notes://a changed" re-reads what it follows), so the backlog stays bounded.
MAX_PENDING = 256
#: Task ids one listen may follow (``notifications.taskIds``); the rest are not granted.
MAX_TASK_IDS = 256


class Listener:
    """One open subscription: what it follows, and what changed since it last sent."""

    def __init__(self, subscription_id: Any, granted: dict[str, Any], owner: object,
                 principal: str = "", may_read: Callable[[str], bool] | None = None) -> None:
        self.subscription_id = subscription_id
        self.owner = owner
        #: Whose tasks this listen may hear about (see mcpsync.server.owners.owner_of).
        self.principal = principal
        #: Whether its principal may read a URI (per-resource scopes): a subscription to
        #: ``notes://`` must not hear of ``notes://secret`` it may not read.
        self.may_read = may_read
        self.task_ids = frozenset(granted.get("taskIds") or ())
        self.lists = frozenset(kind for field, kind in LIST_FIELDS.items()
                               if granted.get(field))
        self.uris = tuple(granted.get("resourceSubscriptions") or ())
        self.wake = threading.Event()
        self._lock = threading.Lock()
        #: Pending notifications in first-change order, keyed for coalescing.
        self._pending: dict[tuple[str, str], tuple[str, dict[str, Any] | None]] = {}
        #: The latest version of each followed task posted with its body, or read from the
        #: store, so far (at most one entry per followed task id).
        self._task_versions: dict[str, int] = {}
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

    def post_task(self, task_id: str, version: int | None,
                  params: dict[str, Any] | None) -> None:
        """A status of ``task_id``: ``params`` (its ``DetailedTask``), or ``None`` for
        "read it from the task store" (a status too large for the bus). A ``version`` at
        or below one already posted is the same change heard twice (the worker that
        cancelled a task and the one that ran it both announce it; a relayed event and
        the local one) or a stale one arriving late: dropped. Bounded: one pending entry
        and one version per followed task id."""
        with self._lock:
            if version is not None:
                if version <= self._task_versions.get(task_id, -1):
                    return
                if params is not None:  # one read from the store is noted when read
                    self._task_versions[task_id] = version
            # One pending status per task, the latest, queued after what came before it:
            # a client that reads slower than its task changes gets the task as it is now
            # (never an older status after a newer one).
            key = ("task", task_id)
            self._pending.pop(key, None)
            self._pending[key] = ((FETCH_TASK, {"taskId": task_id}) if params is None
                                  else ("notifications/tasks", params))
        self.wake.set()

    def seen_task(self, task_id: str, version: int) -> bool:
        """Note that ``version`` of ``task_id`` was read from the store and is about to
        be sent; False when that version (or a later one) was posted or sent already."""
        with self._lock:
            if version <= self._task_versions.get(task_id, -1):
                return False
            self._task_versions[task_id] = version
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


#: A pending entry's method for a task status to read from the store when it is sent.
FETCH_TASK = "mcpsync/fetch-task"


def _fetch(registry: ListenRegistry, listener: Listener,
           body: dict[str, Any] | None) -> dict[str, Any] | None:
    """The current status of the task named in ``body``, read with the listen's own
    principal (the owner check of the store), or None: gone, not ours, or sent already."""
    fetch = registry.fetch_task
    task_id = (body or {}).get("taskId")
    if fetch is None or not isinstance(task_id, str):
        return None
    try:
        found = fetch(task_id, listener.principal)
    except Exception:  # the store is down: this status is skipped; the client polls
        logger.warning("task %s: status not read from the task store", task_id,
                       exc_info=True)
        return None
    if found is None or not listener.seen_task(task_id, found[0]):
        return None
    return found[1]


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
        #: ``fetch_task(task_id, owner)``: the task's ``(version, DetailedTask)`` from the
        #: task store, or None (gone, or not this owner's). Set by the Server; called on
        #: a listen's own thread for a status relayed without its body.
        self.fetch_task: Callable[[str, str], tuple[int, dict[str, Any]] | None] | None = None

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

    def task_status(self, task_id: str, owner: str, params: dict[str, Any] | None, *,
                    version: int | None = None) -> None:
        """``notifications/tasks`` (the tasks extension) to every subscription following
        ``task_id`` on behalf of the task's ``owner``; nobody else hears of it. ``params``
        ``None``: each such listen reads the task from the store itself (:attr:`fetch_task`),
        on its own thread. ``version`` (the record's) drops a change heard twice."""
        for listener in self.snapshot():
            if task_id in listener.task_ids and listener.principal == owner:
                listener.post_task(task_id, version, params)

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
    granted = honoured(parse_filter(params), capabilities)
    tag = {META_SUBSCRIPTION_ID: ctx.request_id}
    owner = ctx._session.ended
    listener = Listener(ctx.request_id, granted, owner, principal, may_read)
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
                    if method == FETCH_TASK:
                        method, body = "notifications/tasks", _fetch(registry, listener,
                                                                     body)
                        if body is None:
                            continue
                    ctx.notify(method, {**(body or {}), "_meta": dict(tag)})
                if listener.ending:
                    return {"_meta": dict(tag)}
        except ConnectionClosedError:
            raise RequestCancelledError("the connection closed under a subscription") from None
    finally:
        registry.discard(listener)
