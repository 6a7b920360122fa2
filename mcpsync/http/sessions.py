"""Handshake-era sessions over HTTP (2024-11-05 … 2025-11-25).

A session begins with an ``initialize`` POST and is named by a random ``Mcp-Session-Id``.
It runs the same engine as stdio: a :class:`~mcpsync.server.session.ServerSession` over a
:class:`SessionTransport` whose "wire" is the HTTP requests of that client. Inbound
messages come from POST bodies; each outbound message goes to exactly one stream: the
POST stream of the request it relates to, else the session's standalone ``GET`` stream
(kept, bounded, until one connects). Idle sessions expire; so, much sooner, do sessions
whose client never came back after ``initialize`` (``handshake_timeout``).

An idle session holds no thread: its messages are routed on the request threads that
bring them (``push`` mode of the engine), and its handlers and notification callbacks run
on the app's one shared handler pool. What a session does hold is memory: its engine
objects (a few KiB) plus whatever its streams keep (the standalone backlog, bounded by
count; the event store, bounded in bytes).

What a session does only when its app relays between workers is in
:mod:`mcpsync.http.session_relay`; the registry of all sessions is
:mod:`mcpsync.http.session_registry`.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

from ..dispatch.inbound import TransportContext
from ..dispatch.principal import Principal
from ..engine.pool import WorkerPool
from ..engine.requests import Routed
from ..errors import ConnectionClosedError
from ..protocol import jsonrpc
from ..protocol.bookkeeping import cancelled_request_id
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, RequestId, Response
from ..server.session import ServerSession
from ..stores.events import EventStore
from ..stores.sessions import SharedSessionState
from ..transports.base import Received
from .relay import Relay, cursor_key, read_cursor, standalone_key
from .session_relay import RelayedSession, _store_failed, is_cancel
from .streams import ResponseStream

if TYPE_CHECKING:
    from ..server.server import ServerCore

logger = logging.getLogger("mcpsync.http")

#: Standalone-stream messages kept while no GET stream is connected.
_BACKLOG = 256
#: Keys a session tracks before it drops those whose events its store has already evicted
#: (streams interrupted and never resumed; each key costs about 100 bytes).
_KEYS_PRUNE = 1024


def key_prefix(session_id: str) -> str:
    """What every stream key of the session ``session_id`` starts with (derived, so that
    any worker holding the session agrees, and one-way, so that event ids do not reveal
    the session id)."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:16]


class SessionTransport:
    """The Transport of one HTTP session. Thread-safe.

    Its engine runs in push mode: :meth:`feed` routes each message on the calling request
    thread, so no reader thread waits on :meth:`receive` for the session's whole life."""

    def __init__(self, session: HttpSession) -> None:
        self._session = session
        self._ended = threading.Event()
        self._closed = False

    def feed(self, item: Received, transport: TransportContext | None = None) -> Routed | None:
        """Route ``item`` (receive middleware first); what the middleware passed on."""
        if self._closed:
            return None
        return self._session.server_session.connection.deliver(item, transport)

    def feed_relayed(self, message: Message, transport: TransportContext | None) -> None:
        """Route a message another worker took in (its receive middleware ran there)."""
        if not self._closed:
            self._session.server_session.connection.deliver_relayed(message, transport)

    def transport_context(self) -> TransportContext:
        """The context of what the session sends on its own (no HTTP request behind it):
        its messages carry the context of the POST that brought them instead."""
        return TransportContext("http", session_id=self._session.id)

    def receive(self) -> Received | None:
        self._ended.wait()  # never called in push mode; a pull would only see the end
        return None

    def close_stream(self, request_id: RequestId) -> bool:
        """:class:`~mcpsync.transports.base.StreamControl`: end the client's connection to
        ``request_id``'s SSE stream; the request runs on and the client resumes it with
        ``Last-Event-ID``. ``False`` without an event store (nothing to resume from)."""
        session = self._session
        if session.store is None:
            return False
        stream = session.stream_for(request_id)
        if stream is None or stream.key is None:
            return False
        stream.disconnect()
        return True

    def unanswered(self, request_id: RequestId) -> None:
        """:class:`~mcpsync.transports.base.StreamControl`: the send middleware dropped
        ``request_id``'s answer; its stream ends as a cancelled request's does."""
        self._session._let_go(request_id)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._ended.set()
            self._session._transport_closed()

    def share(self, kind: str, value: str) -> bool:
        """A change of the session that every worker must see (``"level"``,
        ``"subscribe"``, ``"unsubscribe"``), made by the built-in methods: written through
        to the shared session state and published when the app relays (else nothing).
        ``True`` when the shared state now holds a subscription change for every worker
        (then the session must not keep its own copy: see :meth:`HttpSession.share`)."""
        return self._session.share(kind, value)

    def send(self, message: Message, related_request_id: RequestId | None = None) -> None:
        if self._closed:
            raise ConnectionClosedError("the HTTP session has ended")
        jsonrpc.encode(message)  # UnencodableMessageError now, to the sender (bytes are kept)
        self._session._route(message, related_request_id)


class HttpSession(RelayedSession):
    """One handshake-era client. Made by :class:`~mcpsync.http.session_registry.SessionRegistry`;
    thread-safe."""

    def __init__(self, server: ServerCore, store: EventStore | None, *, legacy_sse: bool = False,
                 priming: bool = False, session_id: str | None = None,
                 pool: WorkerPool | None = None, owner: Principal | None = None,
                 relay: Relay | None = None, shared: SharedSessionState | None = None) -> None:
        self.id = session_id if session_id is not None else secrets.token_urlsafe(24)
        #: Who created it (the principal of the access token, under ``auth=``): only they
        #: may use it; to anyone else it does not exist.
        self.owner = owner
        self.store = store
        #: The store's forgetting, if it has it (a store declares its capabilities once).
        self._forgets = None if store is None else store.capabilities.forgets
        # Every stream key of this session starts with this (derived, so that any worker
        # holding the session agrees, and one-way, so that event ids do not reveal the
        # session id): a Last-Event-ID naming another session's stream is refused by it.
        self._key_prefix = key_prefix(self.id)
        #: With a relay (and an event store): the one key of the session's standalone
        #: stream on every worker (see :mod:`mcpsync.http.relay`).
        self.relay = relay if store is not None and not legacy_sse else None
        self.shared = shared
        self.standalone_key = standalone_key(self._key_prefix)
        self._cursor_key = cursor_key(self._key_prefix)
        #: Keys of this session's streams that the event store may hold.
        self._keys: set[str] = set()
        self._prune_at = _KEYS_PRUNE
        self.created = time.monotonic()
        #: The client came back after ``initialize`` (any later request of this session).
        self.established = False
        #: 2024-11-05 HTTP+SSE: every message travels on the one GET stream.
        self.legacy_sse = legacy_sse
        self.last_seen = time.monotonic()
        self._lock = threading.Lock()
        self._streams: dict[RequestId, ResponseStream] = {}
        self._by_key: dict[str, ResponseStream] = {}
        self._standalone: ResponseStream | None = None
        self._backlog: deque[Message] = deque(maxlen=_BACKLOG)
        self.transport: SessionTransport = SessionTransport(self)
        # Through connect(): the server then knows the session, so its broadcasts
        # (list_changed, resources/updated) reach it. Nothing is fed before this returns.
        self.server_session: ServerSession = server.connect(
            self.transport, name=f"mcpsync-http-{self.id[:6]}", pool=pool, push=True)
        self.server_session.info.session_id = self.id
        if self.relay is not None:
            # Nothing was sent yet: from now on our requests name this worker.
            self.server_session.connection.use_id_prefix(self.relay.worker)
        self.ended = threading.Event()
        #: Requests being served now, from :meth:`claim` until their streams are open or
        #: their answer written (:meth:`leave`): busy meanwhile, so never evicted or
        #: expired under a request that has found it but not yet opened its stream.
        self._claims = 0
        #: Evicted (see :meth:`retire`): no request may claim it any more.
        self._retired = False
        self.priming = priming
        #: When the shared session store last confirmed this session (monotonic).
        self.confirmed = time.monotonic()

    @property
    def protocol_version(self) -> str | None:
        return self.server_session.info.protocol_version

    def touch(self) -> None:
        self.last_seen = time.monotonic()

    @property
    def streams_held(self) -> int:
        """Response streams this session holds now (in flight, or kept for a resume)."""
        with self._lock:
            return len(set(map(id, self._streams.values())) | set(map(id, self._by_key.values())))

    def busy(self) -> bool:
        """Requests in flight or a connected stream (a GET, a resumed or, with a relay,
        a followed stream): not idle, whatever the clock says."""
        with self._lock:
            return self._busy()

    def _busy(self) -> bool:
        return bool(self._claims) or bool(self._streams) or (
            self._standalone is not None and self._standalone.attached) or any(
            s.attached for s in self._by_key.values())

    def claim(self) -> bool:
        """A request is about to be served on this session (it is busy until
        :meth:`leave`); ``False`` if it has ended or was evicted: to that request it does
        not exist."""
        with self._lock:
            if self._retired or self.ended.is_set():
                return False
            self._claims += 1
        self.last_seen = time.monotonic()  # a request came (see touch)
        return True

    def leave(self) -> None:
        """The request that claimed the session has opened its streams or answered."""
        with self._lock:
            self._claims = max(0, self._claims - 1)

    def evictable(self) -> bool:
        """Whether the table may give this session's slot to another: never while it is
        busy, nor a 2024-11-05 HTTP+SSE session (its life is its stream); always once ended."""
        with self._lock:
            return self.ended.is_set() or not (self.legacy_sse or self._retired or self._busy())

    def retire(self) -> bool:
        """Evict: from now on no request can claim the session (the caller ends it).
        ``False``, and nothing changes, if it became busy since :meth:`evictable`."""
        with self._lock:
            if not self.ended.is_set() and (self.legacy_sse or self._busy()):
                return False
            self._retired = True
            return True

    # -- inbound -------------------------------------------------------------------------

    def _new_key(self) -> str:
        return self._key_prefix + secrets.token_hex(8)

    def owns(self, key: str) -> bool:
        """Whether the stream ``key`` is one of this session's (resumable by it)."""
        return key.startswith(self._key_prefix) and len(key) == len(self._key_prefix) + 16

    def open_stream(self, request_id: RequestId) -> ResponseStream | None:
        """Register the POST stream that will carry ``request_id``'s messages; ``None`` if
        that id is already in flight."""
        key = self._new_key() if self.store is not None else None
        stream = ResponseStream(key, final_id=request_id, on_final=self._forget)
        prune = False
        with self._lock:
            if request_id in self._streams:
                return None
            if self.ended.is_set():
                # Ended (DELETE) after the request found it: no answer will ever come.
                stream.end()
                return stream
            self._streams[request_id] = stream
            if key is not None:
                self._by_key[key] = stream
                self._keys.add(key)
                prune = len(self._keys) >= self._prune_at
        if prune:
            self._prune_keys()
        return stream

    def _prune_keys(self) -> None:
        # A stream interrupted and never resumed keeps its key (a resume may come) after
        # the store has evicted its events: without this, one key per such stream for the
        # session's whole life. Checked when the set doubles, so the scan is amortized.
        with self._lock:
            idle = [k for k in self._keys if k not in self._by_key]
        gone = [k for k in idle if self.store is None
                or self.store.events_after(f"{k}_0") is None]
        with self._lock:
            self._keys.difference_update(gone)
            self._prune_at = max(_KEYS_PRUNE, 2 * len(self._keys))

    def feed(self, message: Received, transport: TransportContext | None = None) -> None:
        """Route ``message`` on this thread; ``transport``: the POST's context. With a
        relay, what the receive middleware passed on may then be published
        (:meth:`RelayedSession._publish`: it may raise ``StoreUnavailableError``)."""
        self.touch()
        routed = self.transport.feed(message, transport)
        if routed is None:
            return  # dropped or refused by the receive middleware (or unreadable)
        self._took(routed.message)
        if self.relay is not None:
            self._publish(routed)

    def _took(self, message: Message) -> None:
        if isinstance(message, Notification) and is_cancel(message):
            assert isinstance(message, Notification)
            self._let_go(cancelled_request_id(message.params))

    def _let_go(self, request_id: RequestId | None) -> None:
        # No answer is coming for ``request_id``: it was cancelled (a cancelled request
        # gets no response), or the send middleware dropped its answer. Its stream would
        # never see the final message that lets go of it (``_forget``): without this,
        # every call a client of a long-lived session cancels (a timeout) kept its stream,
        # its key and its stored events until the session ended, and kept the session
        # ``busy`` (never idle); a dropped answer held its POST open for good. (For a
        # cancellation the engine has already taken it: push mode, ``feed`` routes on this
        # thread.) A consumer still attached is ended.
        if request_id is None:
            return
        with self._lock:
            stream = self._streams.get(request_id)
            if stream is None or stream.finished:
                return  # unknown, or answered already (``_forget`` lets go of it)
            del self._streams[request_id]
            if stream.key is not None:
                self._by_key.pop(stream.key, None)
                self._keys.discard(stream.key)
        stream.end()
        if stream.key is not None:
            self._forget_events([stream.key])

    def stream_by_key(self, key: str) -> ResponseStream | None:
        with self._lock:
            return self._by_key.get(key)

    def stream_for(self, request_id: RequestId) -> ResponseStream | None:
        with self._lock:
            return self._streams.get(request_id)

    def open_standalone(self) -> ResponseStream | None:
        """A fresh GET stream; ``None`` if one is already connected. A GET without
        ``Last-Event-ID`` gives up resuming the earlier ones, so their events are dropped
        (else a client that reconnects that way every few seconds would pile them up).
        With a relay, the stream follows the session's one standalone key from the last
        event an earlier GET stream was given, on any worker (from the first one the store
        holds if none was, or if that worker ended without noting it)."""
        if self.relay is not None:
            assert self.store is not None
            return self.follow_standalone(read_cursor(self.store, self._cursor_key),
                                          fresh=True)
        key = self._new_key() if self.store is not None and not self.legacy_sse else None
        with self._lock:
            if self._standalone is not None and self._standalone.attached:
                return None
            if self.ended.is_set():  # ended since the GET found it: nothing will come
                ended = ResponseStream()
                ended.end()
                return ended
            earlier = [k for k, s in self._by_key.items() if s.final_id is None]
            for old in earlier:
                del self._by_key[old]
                self._keys.discard(old)
            stream = ResponseStream(key)
            self._standalone = stream
            if key is not None:
                self._by_key[key] = stream
                self._keys.add(key)
        self._forget_events(earlier)
        self._flush_backlog(stream)
        return stream

    def resume_standalone(self, stream: ResponseStream) -> bool:
        """Make a resumed GET stream the one that carries the session's messages again;
        ``False`` if another GET stream is connected."""
        with self._lock:
            current = self._standalone
            if current is not None and current is not stream and current.attached:
                return False
            self._standalone = stream
        self._flush_backlog(stream)
        return True

    def _flush_backlog(self, stream: ResponseStream) -> None:
        with self._lock:
            backlog = list(self._backlog)
            self._backlog.clear()
        for message in backlog:
            stream.put(message, self._store(stream, message))

    def close_standalone(self, stream: ResponseStream) -> None:
        with self._lock:
            current = self._standalone is stream
            if current:
                self._standalone = None
        if current:
            self._note_cursor(stream)

    def _forget(self, stream: ResponseStream) -> None:
        # The final response is queued: new messages for that id have nowhere to go. With
        # no consumer, the session lets go of the stream too: a resume replays it from the
        # event store (bounded in bytes), not from this stream's queue (unbounded).
        with self._lock:
            final_id = stream.final_id
            if isinstance(final_id, (str, int)) and self._streams.get(final_id) is stream:
                del self._streams[final_id]
            if stream.key is not None and not stream.attached:
                self._by_key.pop(stream.key, None)

    def done_with(self, stream: ResponseStream, consumer: int | None) -> None:
        """The consumer ``consumer`` of ``stream`` is done with it (its answer written, or
        its connection closed): detach it and :meth:`release` the stream, unless a later
        consumer (a resume) has taken it over, whose it is then."""
        if stream.detach(consumer):
            self.release(stream)

    def release(self, stream: ResponseStream) -> None:
        """The consumer of a stream is done with it. A finished stream can no longer be
        attached to; one whose answer went out whole (``delivered``) cannot need a resume
        either, so its stored events are dropped now rather than when the session ends."""
        key = stream.key
        if key is None or not stream.finished:
            return
        with self._lock:
            self._by_key.pop(key, None)
            if stream.delivered:
                self._keys.discard(key)
        if stream.delivered:
            self._forget_events([key])

    def forget_finished(self, key: str) -> None:
        """A resume replayed the finished POST stream ``key`` up to its answer: drop its
        stored events (and the stream)."""
        with self._lock:
            if key not in self._keys:
                return  # not this session's, or already dropped
            stream = self._by_key.get(key)
            if stream is not None and stream.final_id is None:
                return  # a GET stream never finishes
            self._by_key.pop(key, None)
            self._keys.discard(key)
        self._forget_events([key])

    def _forget_events(self, keys: list[str]) -> None:
        forgets = self._forgets
        if forgets is None:
            return
        for key in keys:
            try:
                forgets.forget(key)
            except OSError as exc:  # the store is down: its own bounds (age) drop them
                _store_failed(exc)
                return
            except Exception:  # a store's failure must not fail the request or the close
                logger.exception("event store: forget(%r) failed", key)

    # -- outbound (called by the engine under its write lock) ----------------------------

    def _route(self, message: Message, related: RequestId | None) -> None:
        with self._lock:
            stream: ResponseStream | None = None
            if not self.legacy_sse:
                if isinstance(message, (Response, ErrorResponse)) and message.id is not None:
                    stream = self._streams.get(message.id)
                if stream is None and related is not None:
                    stream = self._streams.get(related)
            relayed = stream is None and self.relay is not None
            if stream is None:
                stream = self._standalone
                if stream is None and not relayed:
                    self._backlog.append(message)
                    return
        if relayed:
            self._to_standalone_key(message, stream)
            return
        assert stream is not None
        stream.put(message, self._store(stream, message))
        if stream.followed_elsewhere and stream.key is not None and self.relay is not None:
            self.relay.ring(self.id, stream.key)

    def _store(self, stream: ResponseStream, message: Message | None) -> str | None:
        if stream.key is None or self.store is None:
            return None
        data = b"" if message is None else jsonrpc.encode(message)
        try:
            budget = stream.budget  # the waiting request's, spent while it waits
            if budget is None:
                return self.store.store_event(stream.key, data)
            with budget.lent():
                return self.store.store_event(stream.key, data)
        except OSError as exc:
            # The event store is down (Redis): the message still goes out on its stream,
            # only without an event id, so it cannot be resumed. Never lose the answer.
            _store_failed(exc)
            return None

    def prime(self, stream: ResponseStream) -> str | None:
        """The id of a priming event (stored, so a resume right after it works)."""
        return self._store(stream, None)

    # -- ending --------------------------------------------------------------------------

    def close(self) -> None:
        self.server_session.close(timeout=2.0)

    def _transport_closed(self) -> None:
        self.ended.set()
        with self._lock:
            streams = list(self._streams.values())
            standalone = self._standalone
            self._streams.clear()
            keys = list(self._keys)
            self._keys.clear()
            self._by_key.clear()
        for stream in streams:
            stream.end()
        if standalone is not None:
            standalone.end()
        self._forget_events(keys)
