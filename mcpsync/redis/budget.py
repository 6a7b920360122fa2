"""redis-py connections whose waits end with the caller's deadline.

A Redis that accepts connections but never answers (stopped, swapping, behind a partition)
holds each command for its whole socket timeout, and redis-py then retries it, and
reconnects (sending its handshake, which waits again). A request that makes several store
calls in a row would add all of that up. So each step of a command (connect, send, read)
is one wait that spends the ambient :class:`~mcpsync.protocol.budget.Budget` (the
request's, opened by the WSGI app; or the per-call one :func:`mcpsync.redis.client.
unavailable` opens outside a request): it runs under a
:class:`~mcpsync.protocol.deadline.Deadline` of what is left of it (or of an ambient
deadline ending sooner), and only its own duration is charged. Within a step:

* connecting waits at most ``min(socket_connect_timeout, remaining)``;
* each command's send and each reply's read waits at most ``min(socket_timeout,
  remaining)``, and on TCP and Unix sockets every single ``recv``/``send`` is capped again,
  so a server that trickles a reply cannot stretch it either (TLS sockets are capped per
  command: the TLS layer wraps the socket);
* once the deadline has passed, a connection refuses at once, with
  :class:`~mcpsync.errors.StoreUnavailableError` naming the budget. redis-py does not
  retry that error, so its retry and reconnect never run past the deadline.

Without an ambient budget or deadline the connections behave exactly as redis-py's own.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import redis
from redis.connection import (
    AbstractConnection,
    ConnectionPool,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.utils import SENTINEL

from ..errors import StoreUnavailableError
from ..protocol.budget import current_budget
from ..protocol.deadline import Deadline, current

__all__ = ["BudgetedConnection", "budgeted", "install"]


def _left() -> tuple[Deadline, float] | None:
    """The ambient deadline and what is left of it, or ``None`` without one."""
    deadline = current()
    if deadline is None or not deadline.bounded:
        return None
    return deadline, deadline.remaining()


def _capped(configured: float | None, left: float) -> float:
    return left if configured is None else min(float(configured), left)


class _BudgetSocket(socket.socket):
    """A TCP or Unix socket that lowers its timeout to what is left of the ambient
    deadline before every ``recv``/``send``: a per-read timeout alone would let a peer
    that sends one byte at a time hold a reply for ever."""

    def _cap(self) -> None:
        found = _left()
        if found is None:
            return
        if found[1] <= 0:
            raise TimeoutError("the time budget ran out")  # socket.timeout: redis retries
        timeout = self.gettimeout()
        if timeout != 0 and (timeout is None or timeout > found[1]):
            self.settimeout(found[1])

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        self._cap()
        return super().recv(bufsize, flags)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._cap()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._cap()
        super().sendall(data, flags)


class BudgetedConnection(AbstractConnection):
    """What every budgeted connection class adds to its redis-py base (a mixin; see
    :func:`budgeted`).

    Each step of a command (connecting, sending, reading the reply) is one wait: it spends
    from the ambient :class:`~mcpsync.protocol.budget.Budget` if there is one (so only the
    time actually spent waiting on Redis is charged, never the time between commands),
    and ends by the ambient deadline. Steps nested inside another (the handshake of a
    connection opened to send a command) run within the outer one's deadline and are not
    charged twice."""

    _socket_connect_timeout: float | None
    _lowered = False   # the socket's timeout was lowered for a deadline
    _stepping = False  # inside a step (this connection is used by one thread at a time)

    def _refuse(self, deadline: Deadline) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"{deadline.what}: the time budget ran out before Redis at "
            f"{self._host_error()} answered")  # type: ignore[no-untyped-call]

    @contextlib.contextmanager
    def _step(self, *, reply_pending: bool = False) -> Iterator[float | None]:
        """One wait: refuse at once if nothing is left (dropping the connection when a
        reply is outstanding, since it can no longer be read), else cap the socket's
        timeout to what is left. Yields what is left (``None``: no deadline)."""
        if self._stepping:
            yield self._arm(reply_pending)
            return
        budget = current_budget()
        scope: contextlib.AbstractContextManager[Any] = (
            budget.spend() if budget is not None else contextlib.nullcontext())
        self._stepping = True
        try:
            with scope:
                yield self._arm(reply_pending)
        finally:
            self._stepping = False

    def _arm(self, reply_pending: bool) -> float | None:
        found = _left()
        sock = self._sock
        if found is None:
            if sock is not None and self._lowered:
                sock.settimeout(self.socket_timeout)
                self._lowered = False
            return None
        deadline, left = found
        if left <= 0:
            if reply_pending:
                self.disconnect()  # type: ignore[no-untyped-call]
            raise self._refuse(deadline)
        if sock is not None:
            sock.settimeout(_capped(self.socket_timeout, left))
            self._lowered = True
        return left

    def connect_check_health(self, *args: Any, **kwargs: Any) -> None:
        if self._sock is not None:
            return
        with self._step():
            super().connect_check_health(*args, **kwargs)

    def _connect(self) -> socket.socket:
        configured = self._socket_connect_timeout
        found = _left()
        if found is not None:
            self._socket_connect_timeout = _capped(configured, max(found[1], 1e-3))
        try:
            sock: socket.socket = super()._connect()  # type: ignore[no-untyped-call, safe-super]
        finally:
            self._socket_connect_timeout = configured
        if type(sock) is socket.socket:  # TCP or Unix: cap every recv and send too
            timeout = sock.gettimeout()
            capped = _BudgetSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
            capped.settimeout(timeout)
            return capped
        return sock

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        with self._step():
            super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        with self._step(reply_pending=True) as left:
            timeout = kwargs.get("timeout", SENTINEL)
            if left is not None and timeout is not SENTINEL:
                kwargs["timeout"] = _capped(timeout, left)
            return super().read_response(*args, **kwargs)


class _Connection(BudgetedConnection, redis.Connection):
    """:class:`redis.Connection` (TCP) within the ambient deadline."""


class _SSLConnection(BudgetedConnection, SSLConnection):
    """:class:`redis.SSLConnection` (TLS) within the ambient deadline."""


class _UnixConnection(BudgetedConnection, UnixDomainSocketConnection):
    """:class:`redis.UnixDomainSocketConnection` within the ambient deadline."""


_BUDGETED: dict[type[Any], type[Any]] = {
    redis.Connection: _Connection,
    SSLConnection: _SSLConnection,
    UnixDomainSocketConnection: _UnixConnection,
}


def budgeted(connection_class: type[Any]) -> type[Any] | None:
    """The budgeted class for one of redis-py's three stock connection classes (itself if
    it is budgeted already), or ``None`` for any other (a sentinel or a custom class,
    which mcpsync cannot safely extend)."""
    if issubclass(connection_class, BudgetedConnection):
        return connection_class
    return _BUDGETED.get(connection_class)


def install(client: redis.Redis) -> bool:
    """Make the connections ``client``'s pool opens from now on budgeted; ``False`` (and
    nothing changed) when its connection class is not one of redis-py's stock ones. A
    budgeted connection behaves as redis-py's own outside a deadline, so a client the
    application also uses for its own work is not changed by it. Connections the pool
    opened before keep their class (they are replaced as they are dropped)."""
    pool = client.connection_pool
    if not isinstance(pool, ConnectionPool):
        return False
    target = budgeted(pool.connection_class)
    if target is None:
        return False
    pool.connection_class = target
    return True
