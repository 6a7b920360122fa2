"""The relay half of a handshake-era HTTP session.

What an :class:`~mcpsync.http.sessions.HttpSession` does only when its app relays between
workers (``wsgi_app(bus=...)``, see :mod:`mcpsync.http.relay`): follow the session's one
standalone-stream key (a GET stream, fresh or resumed on any worker) or a POST stream whose
request runs on another worker, hand a stream over when a resume reached another worker,
send a message for the GET stream through the event store, and write the session's log
level and subscriptions through to the shared session state. Kept apart from
:mod:`mcpsync.http.sessions` (a mixin :class:`HttpSession` inherits) so that what every
session does reads on its own; without a relay none of this runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

from ..dispatch.inbound import TransportContext
from ..engine.requests import Routed
from ..protocol import jsonrpc
from ..protocol.jsonrpc import ErrorResponse, Message, Notification, Response
from ..stores.events import EventStore
from ..stores.sessions import SharedSessionState
from .relay import ANY_ANSWER, Follower, Relay, note_cursor, unavailable
from .streams import ResponseStream

logger = logging.getLogger("mcpsync.http")

_store_warned = 0.0


def _store_failed(exc: OSError) -> None:
    """Say, at most every 10 s, that the event store is down and what that costs."""
    global _store_warned
    now = time.monotonic()
    if now - _store_warned >= 10.0:
        _store_warned = now
        logger.warning("event store unavailable (%s): until it is back, messages go out "
                       "without event ids (not resumable)", exc)


def is_cancel(message: Message) -> bool:
    """Whether ``message`` is a ``notifications/cancelled``."""
    return isinstance(message, Notification) and message.method == "notifications/cancelled"


class RelayedTransport(Protocol):
    """What the relay needs of the session's transport
    (:class:`~mcpsync.http.sessions.SessionTransport`)."""

    def feed_relayed(self, message: Message, transport: TransportContext | None) -> None: ...


class RelayedSession:
    """The relay methods of :class:`~mcpsync.http.sessions.HttpSession` (its only user,
    which sets every attribute below)."""

    id: str
    store: EventStore | None
    relay: Relay | None
    shared: SharedSessionState | None
    standalone_key: str
    _cursor_key: str
    _lock: threading.Lock
    _keys: set[str]
    _by_key: dict[str, ResponseStream]
    _standalone: ResponseStream | None
    _backlog: deque[Message]

    transport: RelayedTransport

    if TYPE_CHECKING:

        def _forget(self, stream: ResponseStream) -> None: ...

        def touch(self) -> None: ...

        def _took(self, message: Message) -> None: ...

    def _publish(self, routed: Routed) -> None:
        """Publish what a POST to this worker brought, as the receive middleware passed
        it on and with its context (the middleware runs once, here): an answer to a
        request another worker made (it waits for it) and every cancellation (the
        request may run elsewhere). Raises ``StoreUnavailableError`` when it cannot."""
        relay, passed = self.relay, routed.message
        assert relay is not None
        if is_cancel(passed):
            relay.publish_message("cancel", self.id, passed, routed.transport)
        elif isinstance(passed, (Response, ErrorResponse)) and passed.id is not None and (
                not relay.ours(passed.id)):
            relay.publish_message("answer", self.id, passed, routed.transport)

    def feed_relayed(self, message: Message, transport: TransportContext | None) -> None:
        """A message another worker took in and published (see :meth:`_publish`):
        routed here in its original context, not through the receive middleware again."""
        self.touch()
        self.transport.feed_relayed(message, transport)
        self._took(message)

    def follow_standalone(self, after: str | None, *,
                          fresh: bool = False) -> ResponseStream | None:
        """Relay: a GET stream that follows the standalone key from the event ``after``.
        ``fresh``: ``None`` if a GET stream of this worker is connected; else (a resume)
        that one is taken over, here and on any other worker. Raises
        :class:`~mcpsync.errors.StoreUnavailableError` when the store cannot be read."""
        assert self.store is not None and self.relay is not None
        key = self.standalone_key
        stream = ResponseStream(key)
        follower = Follower(self.store, key, stream, after)
        stream.follow(follower)
        with self._lock:
            current = self._standalone
            if fresh and current is not None and current.attached:
                return None
            self._standalone = stream
            self._by_key[key] = stream
        try:
            follower.pull(strict=True)
        except BaseException:
            with self._lock:
                if self._standalone is stream:
                    self._standalone = current
                    if current is not None:
                        self._by_key[key] = current
                    else:
                        self._by_key.pop(key, None)
            raise
        if current is not None and current is not stream:
            current.end()  # superseded: its consumer (if any) finishes and stops
        if not fresh:
            self.relay.takeover(self.id, key)
        return stream

    def follow_stream(self, key: str, after: str) -> ResponseStream:
        """Relay: a resumed POST stream whose request runs on another worker: follow its
        key until the answer (then it is over, as a local one would be)."""
        assert self.store is not None and self.relay is not None
        stream = ResponseStream(key, final_id=ANY_ANSWER, on_final=self._forget)
        follower = Follower(self.store, key, stream, after)
        stream.follow(follower)
        follower.pull(strict=True)
        with self._lock:
            old = self._by_key.get(key)
            self._by_key[key] = stream
            self._keys.add(key)
        if old is not None and old is not stream:
            old.end()
        self.relay.takeover(self.id, key)
        return stream

    def ring(self, key: str) -> None:
        """Relay: events were stored under ``key``; a stream here that follows it reads
        them now."""
        with self._lock:
            stream = self._by_key.get(key)
        if stream is not None and stream.follower is not None:
            stream.poke()

    def let_go(self, key: str) -> None:
        """Relay: another worker took over the stream ``key`` (a resume reached it): end
        our connection to it, and ring for each event stored from now on."""
        with self._lock:
            stream = self._by_key.get(key)
        if stream is None:
            return
        stream.followed_elsewhere = True
        if stream.attached:
            stream.detach(stream.attach())  # the old consumer's take() ends at once
        if stream.follower is not None and key != self.standalone_key:
            # A POST stream we only followed: the other worker serves it now, and its
            # events are not ours to forget when this session ends here.
            with self._lock:
                if self._by_key.get(key) is stream:
                    del self._by_key[key]
                    self._keys.discard(key)
            stream.end()
            return
        self._note_cursor(stream)

    def _note_cursor(self, stream: ResponseStream) -> None:
        follower = stream.follower
        if (isinstance(follower, Follower) and follower.key == self.standalone_key
                and follower.cursor != follower.start and self.store is not None
                and not follower.failing):  # closed for a store failure: writing fails too
            note_cursor(self.store, self._cursor_key, follower.cursor)

    def share(self, kind: str, value: str) -> bool:
        """See :meth:`SessionTransport.share`. With shared session state, subscriptions
        live there only: the app that receives ``notify_resource_updated`` sends to every
        subscribed session once from the store's list, wherever the session is held, so a
        copy kept by each holder would send it again. Without it, the holders each keep a
        copy, told by the bus. The log level is applied by every holder (it filters what
        each sends)."""
        relay, shared = self.relay, self.shared
        if relay is None:
            return False
        if shared is not None:
            try:
                if kind == "level":
                    shared.set_log_level(self.id, value)
                elif kind == "subscribe":
                    shared.add_subscription(self.id, value)
                elif kind == "unsubscribe":
                    shared.remove_subscription(self.id, value)
            except Exception as exc:
                raise unavailable(exc) from exc
        if kind == "level":
            relay.publish(kind, self.id, level=value)
            return False
        if shared is not None:
            return True
        relay.publish(kind, self.id, uri=value)
        return False
    # -- outbound (called by the engine under its write lock) ----------------------------

    def _to_standalone_key(self, message: Message, standalone: ResponseStream | None) -> None:
        # Relay: whichever worker holds the GET stream (or none, for now) reads it from
        # the store; this one only rings (and wakes its own GET stream, if it holds it).
        assert self.store is not None and self.relay is not None
        try:
            self.store.store_event(self.standalone_key, jsonrpc.encode(message))
        except OSError as exc:
            # The store is down: a GET stream held here still gets the message live (not
            # resumable); otherwise it waits in this worker's bounded backlog.
            _store_failed(exc)
            with self._lock:
                if standalone is None or standalone.follower is None:
                    self._backlog.append(message)
                    return
            standalone.put(message, None)
            return
        if standalone is not None and standalone.follower is not None:
            standalone.poke()
        self.relay.ring(self.id, self.standalone_key)
