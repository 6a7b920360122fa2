"""The one way mcpsync talks to Redis: a client that cannot hang, and one translation of
"Redis is not there" into :class:`~mcpsync.errors.StoreUnavailableError`.

Every store on Redis shares a worker's requests with a network service that may be down,
restarting, still loading its data, or full. None of that may hang a request or surface
as a 500 with a traceback: the client is built with short socket timeouts and a single
quick retry (which is also how a pooled connection left dead by a Redis restart is
replaced, so the process recovers by itself), and every call goes through
:func:`unavailable`, which turns the client's connection-class failures into the one
error the WSGI app answers with ``503``. The error names the server without its password.

Socket timeouts bound one read; they do not bound a call (a timeout, a retry, a reconnect
and its handshake add up) nor a request that makes several calls. So the waits are also
*budgeted* (:mod:`mcpsync.redis.budget`): the WSGI app gives each request one
:class:`~mcpsync.protocol.budget.Budget` for all its Redis work (``store_budget``, 10 s by
default), and a store call made outside any request (a handler thread storing an SSE
event, a background sweep) gets :data:`DEFAULT_CALL_BUDGET` of its own. Only the time
spent waiting on Redis is charged; when the budget is spent the call is refused at once
with ``StoreUnavailableError``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from ..errors import StoreUnavailableError
from ..protocol.budget import Budget, current_budget
from .budget import install

#: Seconds to wait for a TCP connection to Redis.
DEFAULT_CONNECT_TIMEOUT = 2.0
#: Seconds to wait for one reply (the stores' scripts are short: anything longer is an
#: unwell server).
DEFAULT_SOCKET_TIMEOUT = 5.0
#: Seconds a pooled connection may sit idle before it is PINGed on its next use.
DEFAULT_HEALTH_CHECK_INTERVAL = 15
#: Seconds one store call made outside a request's budget (a handler thread storing an SSE
#: event, a bus publish from a background thread, a sweep) may spend waiting on Redis, its
#: retry and reconnect included.
DEFAULT_CALL_BUDGET = 5.0
#: Longest pause between a channel listener's reconnect attempts (seconds; from 50 ms).
RECONNECT_MAX = 2.0

#: What "the store cannot be reached now" looks like from the client: connection and
#: timeout failures (which include a server still loading its data, refused credentials
#: and an exhausted pool), and the replies of a server that is up but cannot take writes
#: (a read-only replica, out of memory, a cluster or master that is down, "try again").
UNAVAILABLE: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.TryAgainError,
    OSError,
)


def redact(url: str) -> str:
    """``url`` without its password (``redis://user:***@host:port/db``)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        return "<unparsable URL>"
    if "@" not in netloc:
        return url
    userinfo, _, hostport = netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    hidden = f"{user}:***" if user else "***"
    return urlunsplit((parts.scheme, f"{hidden}@{hostport}", parts.path, parts.query,
                       parts.fragment))


def connect(url_or_client: str | redis.Redis, **options: Any) -> redis.Redis:
    """A client for the stores: ``url_or_client`` as it is if it is a ready
    :class:`redis.Redis`, else a new one for the URL (``redis://``, ``rediss://``,
    ``unix://``) with ``options`` passed to :meth:`redis.Redis.from_url`.

    Unless ``options`` say otherwise, the client has a 2 s connect and 5 s reply timeout,
    health checks on idle connections, and one quick retry of a failed command (a pooled
    connection that a Redis restart left dead is replaced on that retry). Responses stay
    bytes: the stores keep binary event data.

    Either way the client's connections end their waits by the caller's budget (see
    :mod:`mcpsync.redis.budget`): a ready client's pool is switched to the budgeted
    variant of its connection class (which behaves as redis-py's own outside a budget),
    unless that class is not one of redis-py's stock ones (a Sentinel pool, a class of
    the application's): such a client is left as it is, bounded by its own timeouts only.
    """
    if isinstance(url_or_client, redis.Redis):
        if options:
            raise TypeError("options apply only when connecting by URL")
        install(url_or_client)
        return url_or_client
    if not isinstance(url_or_client, str):
        raise TypeError(f"a Redis URL or a redis.Redis client, not {type(url_or_client)!r}")
    options.setdefault("socket_connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    options.setdefault("socket_timeout", DEFAULT_SOCKET_TIMEOUT)
    options.setdefault("health_check_interval", DEFAULT_HEALTH_CHECK_INTERVAL)
    options.setdefault("retry", Retry(ExponentialBackoff(cap=0.25, base=0.05), 1))
    options.setdefault("decode_responses", False)
    try:
        client = redis.Redis.from_url(url_or_client, **options)
    except ValueError as exc:  # its message may quote the URL: never the password
        if _has_password(url_or_client):
            raise ValueError(f"not a usable Redis URL: {redact(url_or_client)}") from None
        raise ValueError(f"not a usable Redis URL: {exc}") from None
    install(client)
    return client


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return True


def require_bytes(client: redis.Redis) -> None:
    """Refuse a client that decodes replies to ``str``: the stores keep raw bytes."""
    if client.get_connection_kwargs().get("decode_responses"):
        raise ValueError("the Redis client must not decode responses (decode_responses=False)")


def describe(client: redis.Redis) -> str:
    """Where ``client`` connects, for messages: host, port and db, never credentials."""
    kwargs = client.get_connection_kwargs()
    if kwargs.get("path"):
        return f"unix://{kwargs['path']}"
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"


@contextlib.contextmanager
def unavailable(client: redis.Redis, what: str,
                budget: float | None = DEFAULT_CALL_BUDGET) -> Iterator[None]:
    """Run the block; a failure to reach ``client``'s server becomes
    :class:`~mcpsync.errors.StoreUnavailableError` saying ``what`` failed and where (no
    password: the client's own message is replaced, not quoted, when it could hold one).

    The block's Redis waits spend the budget in force (a request's), or, outside one,
    ``budget`` seconds of their own: a call refused because it is spent fails at once."""
    spending = current_budget()
    scope: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if spending is None:
        spending = Budget(budget, what)
        scope = spending.applied()
    try:
        with scope:
            yield
    except StoreUnavailableError:
        raise
    except UNAVAILABLE as exc:
        reason = _reason(client, exc)
        if spending.spent_out:  # a read cut short by the budget: say which budget
            reason += f"; {spending.describe()} is spent"
        raise StoreUnavailableError(
            f"{what}: Redis at {describe(client)} is unavailable ({reason})") from exc


def follow_channel(client: redis.Redis, channel: str, stop: threading.Event, *,
                   deliver: Callable[[Any], None], up: Callable[[], None],
                   down: Callable[[], None], log: logging.Logger, what: str,
                   poll: float = 0.2) -> None:
    """Deliver each message published on ``channel`` (its raw data) until ``stop`` is set;
    run on a thread of the caller's. ``up`` is called each time the subscription is in
    place, ``down`` each time Redis is lost; then it reconnects with a backoff from 50 ms
    to :data:`RECONNECT_MAX`, saying so once per outage (and once when Redis is back). The
    one listener loop of the bus and of the task store's change channel.

    Each step (subscribing, one poll) spends at most :data:`DEFAULT_CALL_BUDGET` waiting on
    Redis, its reconnect included, so ``stop`` is seen within about that long even while
    Redis hangs. (A stopped Redis that keeps the connection open looks like a quiet
    channel: nothing is lost by it that pub/sub would have kept.)"""
    delay, outage = 0.05, False
    while not stop.is_set():
        pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]
        try:
            with Budget(DEFAULT_CALL_BUDGET, f"{what}: subscribing").applied():
                pubsub.subscribe(channel)
            subscribed = False
            while not stop.is_set():
                with Budget(DEFAULT_CALL_BUDGET, f"{what}: listening").applied():
                    message = pubsub.get_message(timeout=poll)
                if not subscribed and pubsub.subscribed:
                    subscribed = True
                    up()
                    if outage:
                        log.warning("%s: Redis is back", what)
                    outage, delay = False, 0.05
                if message is not None and message.get("type") == "message":
                    deliver(message["data"])
        except UNAVAILABLE as exc:
            down()
            if not outage:
                log.warning("%s: Redis is unavailable (%s); reconnecting until it is back",
                            what, type(exc).__name__)
            outage = True
            stop.wait(delay)
            delay = min(delay * 2, RECONNECT_MAX)
        finally:
            with contextlib.suppress(*UNAVAILABLE):
                pubsub.close()


def _reason(client: redis.Redis, exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    password = client.get_connection_kwargs().get("password")
    if isinstance(password, str) and password and password in text:
        text = text.replace(password, "***")
    return f"{type(exc).__name__}: {text[:200]}"


__all__ = [
    "DEFAULT_CALL_BUDGET",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_HEALTH_CHECK_INTERVAL",
    "DEFAULT_SOCKET_TIMEOUT",
    "RECONNECT_MAX",
    "UNAVAILABLE",
    "connect",
    "describe",
    "follow_channel",
    "redact",
    "require_bytes",
    "unavailable",
]
