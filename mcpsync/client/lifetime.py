"""How a :class:`~mcpsync.Client` ends: closed, or dropped without ``close()``.

A client dropped without ``close()`` (a notebook cell run again, a forgotten ``with``)
must still end its connection and reap a stdio server. Two parts make that possible, and
neither holds the client:

* :class:`WeakInbound`: the connection's threads reach what answers the server only
  through a weak reference, so nothing they hold keeps the client alive;
* :class:`Lifetime`: what closing ends (the connection, then cleanups such as a memory
  server's session), and a finalizer that does it when the client is collected unclosed
  (or is still alive at interpreter exit), with a :class:`ResourceWarning`.
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any, Final

from ..engine.connection import Connection
from ..engine.requests import InboundRequest
from ..errors import ConnectionClosedError
from ..protocol.jsonrpc import Notification
from .inbound import Inbound

#: How long a finalizer run at interpreter exit waits for a dropped client's connection to
#: close (and a stdio server to exit: stdin closed, then SIGTERM, then SIGKILL, 2 s apart).
FINALIZE_WAIT: Final = 15.0


class WeakInbound:
    """The connection's handlers, forwarding to an :class:`~.inbound.Inbound` held
    weakly. The client holds the ``Inbound``; once the client is collected, a request
    still arriving is refused and a notification dropped while the finalizer closes."""

    def __init__(self, inbound: Inbound) -> None:
        self._ref = weakref.ref(inbound)

    def on_request(self, request: InboundRequest) -> dict[str, Any]:
        inbound = self._ref()
        if inbound is None:  # collected with its client: the finalizer is closing the connection
            raise ConnectionClosedError("the client was dropped without close()")
        return inbound.on_request(request)

    def on_notification(self, message: Notification) -> None:
        inbound = self._ref()
        if inbound is not None:
            inbound.dispatch_notification(message)


class Lifetime:
    """What closing one client ends, and the finalizer that ends it if the client is
    dropped unclosed. ``owner`` (the client) is only watched, never held: the finalizer
    holds the connection and the cleanups, not the client."""

    def __init__(self, owner: object, connection: Connection, description: str) -> None:
        self._connection = connection
        self._cleanup: list[Callable[[], None]] = []
        self._finalizer = weakref.finalize(owner, _dropped, description, connection,
                                           self._cleanup)

    def add_cleanup(self, step: Callable[[], None]) -> None:
        """Run ``step`` after the connection closes (a memory server's ``session.close``)."""
        self._cleanup.append(step)

    def close(self) -> None:
        """Close now; the finalizer then has nothing left to do. Idempotent."""
        self._finalizer.detach()
        _close_parts(self._connection, self._cleanup)


def _close_parts(connection: Connection, cleanup: list[Callable[[], None]]) -> None:
    """What closing ends: the connection (its transport reaps a stdio server), then the
    cleanups (a memory server's session). Shared by :meth:`Lifetime.close` and the
    finalizer, which must not hold the client itself."""
    connection.close()
    for step in list(cleanup):
        step()
    cleanup.clear()


def _dropped(transport: str, connection: Connection,
             cleanup: list[Callable[[], None]]) -> None:
    """The finalizer of a client garbage-collected (or alive at exit) without close()."""
    if not connection.closed or cleanup:
        warnings.warn(f"an mcpsync Client over {transport} was not closed; closing it now "
                      "(use `with Client...` or call close())", ResourceWarning, stacklevel=2)
    # The garbage collector runs this on whichever thread allocated: a user's main thread
    # (waiting here would stall it at a random allocation and swallow a Ctrl-C pressed
    # meanwhile), or one of this very connection's threads while it holds the connection's
    # lock (closing here could deadlock). So a thread of its own closes, and nobody waits
    # for it: it is not a daemon, so the interpreter waits for it at exit. Only when this
    # runs at exit itself (weakref.finalize's atexit hook, after that wait) is it joined
    # here, bounded, so that a stdio server is not left running.
    exiting = not threading.main_thread().is_alive()
    closer = threading.Thread(target=_close_parts, args=(connection, cleanup),
                              daemon=exiting, name=f"{connection.name}-finalizer")
    closer.start()
    if exiting:
        closer.join(FINALIZE_WAIT)
