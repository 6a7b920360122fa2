"""The relay between the workers of one deployment for handshake-era sessions.

With ``server.wsgi_app(bus=..., session_store=..., event_store=...)`` (all three shared by
every worker), a session is no longer pinned to the worker that holds a stream of it:

* **answers and cancellations.** A client's answer to one of our requests (elicitation,
  sampling, roots) or its ``notifications/cancelled`` may reach another worker than the
  one waiting or running. The receiving worker feeds it locally first; an answer to a
  request it did not make (our request ids carry the asking worker's prefix, see
  :meth:`~mcpsync.engine.connection.Connection.use_id_prefix`) and every cancellation is
  published, and the worker holding the session feeds it there.
* **the standalone GET stream.** A session's GET stream has one event-store key, derived
  from its id (:func:`standalone_key`). Every worker sends to it by storing the event under
  that key and ringing the bus; the worker whose GET is connected *follows* the key (a
  :class:`Follower`): at each ring and each keep-alive tick it puts the events after the
  last one it delivered on the stream, with their store ids. So a message sent while no
  GET is connected waits in the store (bounded as every stream is), a GET resumed with
  ``Last-Event-ID`` continues through any worker, and nothing is delivered twice.
* **a POST stream resumed elsewhere** follows its key the same way until its answer.
* **DELETE** is published: every worker holding the session ends it at once.
* ``logging/setLevel`` and ``resources/(un)subscribe`` are written to the shared session
  state and published, so every holder applies them at once.

The bus is at most once; whatever must not be lost is in a store first, and the bus only
rings. A lost ring delays a GET stream by one keep-alive tick; it never loses an event.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from collections.abc import Callable
from typing import Any, Final, Protocol

from ..dispatch.inbound import TransportContext
from ..errors import StoreUnavailableError
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ErrorResponse, Message, RequestId, Response
from ..server.session import ServerSession
from ..stores.events import EventStore
from .bus import Bus, BusMessage, MessageQueue
from .streams import ResponseStream

logger = logging.getLogger("mcpsync.http")

#: Bus messages waiting for a worker's relay thread, at most (oldest dropped beyond), in
#: count and in bytes of the relayed JSON-RPC messages they carry.
MAX_QUEUED: Final = 10_000
MAX_QUEUED_BYTES: Final = 64 * 1024 * 1024
#: The 16 characters after a session's key prefix that name its standalone stream (not
#: hex, so no random POST-stream key can ever be it).
_STANDALONE: Final = "standalonestream"


class _AnyAnswer:
    """The ``final_id`` of a followed POST stream: the worker that follows it does not know
    the request's id, so the first response it reads is the final one."""

    def __repr__(self) -> str:
        return "<any answer>"


ANY_ANSWER: Final = _AnyAnswer()


def standalone_key(key_prefix: str) -> str:
    """The event-store key of the standalone stream of the session whose stream keys start
    with ``key_prefix``: the same on every worker."""
    return key_prefix + _STANDALONE


def cursor_key(key_prefix: str) -> str:
    """Where the session's GET streams note, as they close, the last standalone event they
    were given: a GET *without* ``Last-Event-ID`` starts after it, on whichever worker.
    (Not a stream key a client could resume: it is too short for ``owns``.)"""
    return key_prefix + "cursor"


def read_cursor(store: EventStore, key: str) -> str | None:
    """The last cursor noted under ``key`` (see :func:`cursor_key`), if any."""
    try:
        found = store.events_after(f"{key}_0")
    except Exception as exc:
        raise unavailable(exc) from exc
    if found is None or not found[1]:
        return None
    return found[1][-1][1].decode("utf-8", "replace") or None


def note_cursor(store: EventStore, key: str, cursor: str) -> None:
    """Note ``cursor`` under ``key``; a failure is logged (a later fresh GET may then
    repeat what this one was given, never lose it)."""
    try:
        store.store_event(key, cursor.encode("utf-8"))
    except Exception as exc:
        logger.warning("relay: the GET stream's position was not noted: %s", exc)


class Follower:
    """Fills a :class:`ResponseStream` from one key of the event store: each :meth:`pull`
    puts the events stored after :attr:`cursor` (the id of the last one put) on the stream,
    with their ids. Thread-safe; the consumer of the stream runs it (see
    :meth:`ResponseStream.follow`)."""

    def __init__(self, store: EventStore, key: str, stream: ResponseStream,
                 after: str | None = None) -> None:
        self.store = store
        self.key = key
        self.stream = stream
        #: The id of the last event put on the stream (or skipped: a priming event).
        self.cursor = after if after is not None else f"{key}_0"
        self.start = self.cursor
        self._lock = threading.Lock()
        #: The last read failed (the stream is being closed for it).
        self.failing = False

    def pull(self, strict: bool = False) -> None:
        """Put what is new. A store failure raises ``StoreUnavailableError`` when
        ``strict`` (the first pull of a request: it gets a 503); later (an open stream's
        tick) the stream is closed: a stream fed only from the store has nothing to carry
        while the store is away, and each tick would wait on it again. The client resumes
        with ``Last-Event-ID`` (answered 503 until the store is back), and loses nothing.
        Each read is bounded by the store's own per-call budget (the request's, if one is
        in force)."""
        with self._lock:
            try:
                found = self.store.events_after(self.cursor)
                if found is None and self.cursor != f"{self.key}_0":
                    # The store lost the stream (evicted, or restarted) and may have begun
                    # it again: what it holds now is all new to us.
                    found = self.store.events_after(f"{self.key}_0")
            except Exception as exc:
                if strict:
                    raise unavailable(exc) from exc
                logger.warning("relay: reading stream %s… from the event store failed: %s "
                               "(closing it: the client resumes once the store is back)",
                               self.key[:8], exc)
                self.failing = True
                self.stream.disconnect()
                return
            self.failing = False
            if found is None or found[0] != self.key:
                return
            for event_id, data in found[1]:
                self.cursor = event_id
                message = _decode(data)
                if message is None:
                    continue  # a priming event, or nothing we could read
                if (isinstance(message, (Response, ErrorResponse))
                        and self.stream.final_id is ANY_ANSWER):
                    self.stream.final_id = message.id
                self.stream.put(message, event_id)

    def __call__(self) -> None:
        self.pull()


def _decode(data: bytes) -> Message | None:
    if not data:
        return None
    items = jsonrpc.decode(data)
    if len(items) != 1 or isinstance(items[0], jsonrpc.Invalid):
        return None
    return items[0]


def _context(fields: Any, session_id: str) -> TransportContext | None:
    """The context a relayed message arrived in on its worker, from the bus message
    (``None``: none was published, or not in the expected shape)."""
    if not isinstance(fields, dict):
        return None
    headers, remote = fields.get("headers"), fields.get("remote_addr")
    if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        return None
    return TransportContext("http", headers=headers, session_id=session_id,
                            remote_addr=remote if isinstance(remote, str) else None)


def unavailable(exc: BaseException) -> StoreUnavailableError:
    """``exc`` as the error a request that needed the store or bus answers 503 with."""
    if isinstance(exc, StoreUnavailableError):
        return exc
    return StoreUnavailableError(f"the shared store failed: {exc}")


class HeldSession(Protocol):
    """A session this worker holds, as a bus message is applied to it (an
    :class:`~mcpsync.http.sessions.HttpSession`, which imports this module: hence a
    protocol)."""

    @property
    def server_session(self) -> ServerSession: ...

    def ring(self, key: str) -> None: ...

    def let_go(self, key: str) -> None: ...

    def feed_relayed(self, message: Message, transport: TransportContext | None) -> None: ...


class HeldSessions(Protocol):
    """The sessions this worker holds: the app's
    :class:`~mcpsync.http.session_registry.SessionRegistry`, which sets itself as
    :attr:`Relay.sessions`."""

    def held(self, session_id: str) -> HeldSession | None: ...

    def end_here(self, session_id: str) -> None: ...


class Relay:
    """One app's end of the bus. Thread-safe.

    Messages from the bus are queued (bounded: ``MAX_QUEUED`` messages and
    ``MAX_QUEUED_BYTES``, oldest dropped with a warning) for this app's own named thread,
    which applies them to the sessions this worker holds; the bus's callback only queues,
    so it never blocks the bus, and a failure while applying one message is logged and
    the thread goes on."""

    def __init__(self, bus: Bus, *, max_queued: int = MAX_QUEUED,
                 max_queued_bytes: int = MAX_QUEUED_BYTES) -> None:
        self.bus = bus
        #: This worker's name on the bus, and the prefix of its request ids.
        self.worker = secrets.token_hex(6)
        #: The process the relay's thread and subscription live in: a fork (gunicorn
        #: ``--preload``) copies neither, so the app refuses to serve from a child.
        self.pid = os.getpid()
        self.sessions: HeldSessions | None = None
        self._queue = MessageQueue(max_queued, max_queued_bytes)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"mcpsync-relay-{self.worker}")
        self._thread.start()
        try:
            self._unsubscribe: Callable[[], None] | None = bus.subscribe(self._on_message)
        except BaseException:
            self.close()
            raise

    # -- sending ---------------------------------------------------------------------------

    def ours(self, request_id: RequestId | None) -> bool:
        """Whether ``request_id`` is one of this worker's requests."""
        return isinstance(request_id, str) and request_id.startswith(self.worker + "-")

    def publish(self, kind: str, session_id: str, **fields: Any) -> None:
        """Publish, or raise :class:`StoreUnavailableError` (the request that needs it gets
        a 503)."""
        message: BusMessage = {"kind": kind, "session": session_id, "origin": self.worker,
                               **fields}
        try:
            self.bus.publish(message)
        except Exception as exc:
            raise unavailable(exc) from exc

    def publish_message(self, kind: str, session_id: str, message: Message,
                        transport: TransportContext | None = None) -> None:
        """Publish a message a POST brought, with what its context holds that crosses a
        process: its headers and the client's address (the worker that routes it
        binds them again). Its ``auth`` stays here: it is whatever object an auth
        layer set, which the receiving worker's middleware has already seen."""
        fields: dict[str, Any] = {"message": jsonrpc.encode(message).decode("utf-8")}
        if transport is not None:
            fields["transport"] = {"headers": dict(transport.headers),
                                   "remote_addr": transport.remote_addr}
        self.publish(kind, session_id, **fields)

    def ring(self, session_id: str, key: str) -> None:
        """Say that events were stored under ``key``. Never raises: a lost ring only delays
        the follower until its next tick."""
        try:
            self.publish("ring", session_id, key=key)
        except StoreUnavailableError as exc:
            logger.warning("relay: ring for stream %s… not sent: %s", key[:8], exc)

    def takeover(self, session_id: str, key: str) -> None:
        """Say that this worker now serves the stream ``key`` (a resume reached it): the
        worker that held it lets its connection go and rings for each event it stores.
        Never raises: without it, the follower still reads at each tick."""
        try:
            self.publish("takeover", session_id, key=key)
        except StoreUnavailableError as exc:
            logger.warning("relay: takeover of stream %s… not published: %s", key[:8], exc)

    # -- receiving -------------------------------------------------------------------------

    def _on_message(self, message: BusMessage) -> None:
        if message.get("origin") == self.worker or not isinstance(message.get("session"), str):
            return
        text = message.get("message")
        size = 256 + (len(text) if isinstance(text, str) else 0)
        _, warn = self._queue.put(message, size)
        if warn:
            logger.warning("relay: %d bus messages dropped (the relay thread is behind)",
                           self.dropped)

    @property
    def dropped(self) -> int:
        """Bus messages dropped so far (this relay's thread fell behind)."""
        return self._queue.dropped

    def _run(self) -> None:
        while (message := self._queue.get()) is not None:
            try:
                self._apply(message)
            except Exception:
                logger.exception("relay: applying a %r message failed", message.get("kind"))

    def _apply(self, message: BusMessage) -> None:
        registry = self.sessions
        if registry is None:
            return
        kind, session_id = message.get("kind"), str(message["session"])
        if kind == "end":
            registry.end_here(session_id)
            return
        session = registry.held(session_id)
        if session is None:
            return
        if kind == "ring" or kind == "takeover":
            key = message.get("key")
            if isinstance(key, str):
                if kind == "ring":
                    session.ring(key)
                else:
                    session.let_go(key)
        elif kind in ("answer", "cancel"):
            text = message.get("message")
            item = _decode(text.encode("utf-8")) if isinstance(text, str) else None
            if item is None:
                return
            if kind == "answer" and not (isinstance(item, (Response, ErrorResponse))
                                         and self.ours(item.id)):
                return
            session.feed_relayed(item, _context(message.get("transport"), session_id))
        elif kind == "level":
            level = message.get("level")
            if isinstance(level, str):
                session.server_session.set_log_level(level)
        elif kind in ("subscribe", "unsubscribe"):
            uri = message.get("uri")
            if isinstance(uri, str):
                if kind == "subscribe":
                    session.server_session.subscribe(uri)
                else:
                    session.server_session.unsubscribe(uri)

    def close(self, timeout: float = 5.0) -> None:
        """Stop listening (the bus itself is the deployment's: not closed here)."""
        unsubscribe, self._unsubscribe = getattr(self, "_unsubscribe", None), None
        if unsubscribe is not None:
            try:
                unsubscribe()
            except Exception as exc:
                logger.warning("relay: unsubscribing from the bus failed: %s", exc)
        self._queue.close()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


__all__ = ["ANY_ANSWER", "Follower", "Relay", "cursor_key", "note_cursor", "read_cursor",
           "standalone_key", "unavailable"]
