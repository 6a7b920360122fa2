"""An HTTP exchange that ends by its deadline, or at once when told to: :func:`exchange`.

``requests``' ``timeout=(connect, read)`` bounds each socket read, not the exchange: a
server that sends one byte every half second (of its headers or its body) holds the caller
for ever, and a POST whose caller gave up (its call timed out, or was cancelled) keeps its
thread blocked until the server answers. So the sockets of a session mounted with
:class:`DeadlineAdapter` are tracked: while a thread runs ``with exchange(deadline) as ex:``
every socket its request connects or reuses is noted on ``ex``, and at the deadline the
process's :data:`~mcpsync.threads.watchdog.WATCHDOG` shuts that socket down; the blocked
read returns at once and the block raises :class:`~mcpsync.protocol.deadline.DeadlineExceeded`
(a ``TimeoutError``, so an ``OSError`` too). :meth:`Exchange.end` does the same at once, from
any thread (a cancelled call). A connection whose exchange was ended is closed when it is
given back to the pool (it may have been shut in the middle of a request), never reused.

Only the thread making the exchange gives its connection back. Whoever ends it from another
thread must not close the response too: urllib3's ``release_conn`` is a check then a put, so
two threads closing one response can pool its connection twice, and the next two requests
then share one ``http.client`` connection (``CannotSendRequest('Request-sent')``).
:func:`tracked` tells whether ending the exchange is enough to free a response's thread.

The tracking costs a thread-local read per connection use. A session without the adapter (a
caller's own ``requests.Session``) still gets its per-read timeouts lowered to what is left
of the deadline (:func:`timeouts`), which bounds each wait but not a trickle.
"""

from __future__ import annotations

import socket
import threading
from typing import Any, Final

import requests
from requests.adapters import HTTPAdapter
from urllib3 import HTTPConnectionPool, HTTPSConnectionPool, PoolManager, ProxyManager
from urllib3.connection import HTTPConnection, HTTPSConnection

from ...protocol.deadline import Deadline, DeadlineExceeded
from ...threads.watchdog import WATCHDOG

__all__ = ["DeadlineAdapter", "Exchange", "ExchangeScope", "exchange", "timeouts", "tracked",
           "tracked_session"]

_local = threading.local()


class Exchange:
    """The HTTP exchange one thread is making: the socket it is on now, and whether it has
    been ended (``ended``: ``"deadline"``, or the reason given to :meth:`end`). Thread-safe."""

    __slots__ = ("_lock", "_sock", "deadline", "ended")

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.ended: str | None = None
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None

    def attach(self, sock: socket.socket | None) -> None:
        """The exchange is on ``sock`` now; shut it at once if the exchange has ended."""
        if sock is None:
            return
        with self._lock:
            self._sock = sock
            ended = self.ended is not None
        if ended:
            _shut(sock)

    def detach(self, sock: socket.socket | None) -> bool:
        """The exchange is done with ``sock``: its connection goes back to the pool, where
        another exchange may take it, so ending this one must not shut it any more. False
        when the exchange has ended: the connection may have been shut at any point of a
        request, so it must be closed, not pooled as it is."""
        with self._lock:
            if sock is not None and self._sock is sock:
                self._sock = None
            return self.ended is None

    def end(self, why: str = "ended") -> None:
        """End the exchange now: its socket is shut down, so the thread blocked on it
        returns at once (with an error). Idempotent; the first reason is kept."""
        with self._lock:
            if self.ended is not None:
                return
            self.ended = why
            sock = self._sock
            if sock is not None:
                # Under the lock (a shutdown does not block), so that detach() comes
                # wholly before it or after it: a connection given back to its pool is
                # never shut while another exchange uses it.
                _shut(sock)

    def _expire(self) -> None:
        self.end("deadline")


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:  # already closed, or never connected
        pass


def exchange(deadline: Deadline, *, watch: bool = True) -> ExchangeScope:
    """Make the HTTP requests of the block (on a session with :class:`DeadlineAdapter`)
    end by ``deadline``: past it their socket is shut down and the block raises
    ``deadline.exceeded()``, even when the code in the block swallowed the failure or got a
    truncated answer without one. An exchange already running on this thread is set aside for
    the block and restored after it.

    ``watch=False`` when someone else ends the exchange at the deadline (a call's caller
    waits with that very deadline and gives the exchange up when it passes): no watchdog
    alarm is armed for it, which is most of what an exchange costs."""
    return ExchangeScope(deadline, watch)


class ExchangeScope:
    """What :func:`exchange` returns: a plain context manager (the client enters one per
    call, so not a generator)."""

    __slots__ = ("_alarm", "_current", "_outer", "_watch")

    def __init__(self, deadline: Deadline, watch: bool) -> None:
        self._current = Exchange(deadline)
        self._watch = watch

    def __enter__(self) -> Exchange:
        current = self._current
        self._outer = getattr(_local, "exchange", None)
        _local.exchange = current
        deadline = current.deadline
        self._alarm = (WATCHDOG.arm(deadline.at, current._expire)
                       if self._watch and deadline.bounded else None)
        return current

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 traceback: object) -> None:
        current = self._current
        if self._alarm is not None:
            self._alarm.cancel()
        _local.exchange = self._outer
        deadline = current.deadline
        if exc is None:
            if current.ended == "deadline":
                # Shut down mid-head, http.client takes the EOF for the end of the headers
                # and hands back a truncated answer without an error: it is not an answer.
                raise deadline.exceeded()
            return
        if isinstance(exc, DeadlineExceeded) or not isinstance(exc, Exception):
            return
        if current.ended == "deadline" or (deadline.expired() and _is_io_failure(exc)):
            raise deadline.exceeded() from exc


def _is_io_failure(exc: BaseException) -> bool:
    import requests
    import urllib3

    return isinstance(exc, (OSError, requests.RequestException, urllib3.exceptions.HTTPError))


def timeouts(deadline: Deadline, connect: float, read: float) -> tuple[float, float]:
    """``requests``' ``timeout=`` pair lowered to what is left of ``deadline`` (never 0,
    which urllib3 would take as "non-blocking")."""
    left = deadline.remaining()
    floor = 0.001
    return max(floor, min(connect, left)), max(floor, min(read, left))


def _note(sock: socket.socket | None) -> None:
    current: Exchange | None = getattr(_local, "exchange", None)
    if current is not None:
        current.attach(sock)


def _given_back(conn: Any) -> None:
    current: Exchange | None = getattr(_local, "exchange", None)
    if current is not None and not current.detach(getattr(conn, "sock", None)) and conn:
        conn.close()  # ended: never pooled half-way through an exchange


def tracked(response: requests.Response) -> bool:
    """Whether ``response`` came through a :class:`DeadlineAdapter`'s pool: its socket is
    on the exchange that made it, and ending that exchange frees the thread reading it (who
    then closes it). Any other response can only be shut from outside (:func:`.io.abort`)."""
    return isinstance(getattr(response.raw, "_pool", None), (_TrackedPool, _TrackedHTTPSPool))


class _TrackedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _note(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _note(self.sock)  # a kept-alive connection: no connect() this time
        super().request(*args, **kwargs)


class _TrackedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _note(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _note(self.sock)
        super().request(*args, **kwargs)


class _TrackedPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection

    def _put_conn(self, conn: Any) -> None:
        # The answer was read in full (urllib3 gives the connection back as soon as it
        # is), while the exchange may still run (feeding the answer): it lets go first,
        # and closes the connection if the exchange was ended.
        _given_back(conn)
        super()._put_conn(conn)


class _TrackedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection

    def _put_conn(self, conn: Any) -> None:
        _given_back(conn)
        super()._put_conn(conn)


_POOLS: Final = {"http": _TrackedPool, "https": _TrackedHTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """``requests``' adapter whose connections :func:`exchange` can end. Mount it on a
    session of mcpsync's own (never on a caller's)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _track(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        _track(manager)
        return manager


def tracked_session(**adapter_options: Any) -> requests.Session:
    """A new ``requests.Session`` whose exchanges :func:`exchange` can end: a
    :class:`DeadlineAdapter` (made with ``adapter_options``) for both schemes."""
    session = requests.Session()
    adapter = DeadlineAdapter(**adapter_options)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _track(manager: PoolManager) -> None:
    # A SOCKS manager has pool classes of its own; it keeps them (per-read timeouts only).
    if type(manager) in (PoolManager, ProxyManager):
        manager.pool_classes_by_scheme = _POOLS
