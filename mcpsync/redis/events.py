"""Resumable SSE streams on Redis: a client whose stream died with its worker resumes with
``Last-Event-ID`` through any other worker and gets every later event, exactly once.

:class:`RedisEventStore` keeps the semantics of
:class:`~mcpsync.http.events.InMemoryEventStore`: event ids are ``<stream>_<seq>`` (a
stream id has no ``_``), sequence numbers count from 1 per stream, a stream keeps its newest
``max_events_per_stream`` events and at most ``max_bytes_per_stream`` bytes of event data
(evicted oldest first), a single event larger than that is not kept (its number is still
used, so a resume cannot be taken past it unnoticed), and :meth:`forget` drops a stream.

What is per process in memory is per stream here: Redis is shared, and counting streams
across workers would cost a scan. The whole store is bounded by the per-stream bounds and
by age instead: a stream's keys expire ``max_age`` seconds after its last event, so the
store holds at most the streams written in the last ``max_age`` seconds, each within its
bounds. (The app also forgets a stream as soon as no resume can need it.)

Keys (``<sid>`` is the SHA-256 of the stream id: a hostile ``Last-Event-ID`` can never
name another key)::

    <prefix>:events:<sid>:meta   hash: seq (the last number given), bytes (data kept)
    <prefix>:events:<sid>        sorted set: "<seq>:<data>" scored by seq

Each operation is one Lua script (number, append, trim and expiry are atomic).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time
from collections.abc import Iterator

import redis

from ..errors import StoreUnavailableError
from ..http.events import DEFAULT_MAX_BYTES
from ..protocol.decoding import parse_decimal
from ..stores.events import EventStoreCapabilities
from .client import DEFAULT_CALL_BUDGET, connect, describe, require_bytes, unavailable

#: How long a stream is kept after its last event, in seconds, by default.
DEFAULT_MAX_AGE = 600.0

_STORE = """
local ttl = tonumber(ARGV[4])
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
if seq == 1 then redis.call('DEL', KEYS[2]) end  -- a new stream: nothing left of an old one
local data = ARGV[1]
local max_events, max_bytes = tonumber(ARGV[2]), tonumber(ARGV[3])
if #data <= max_bytes then
  redis.call('ZADD', KEYS[2], seq, seq .. ':' .. data)
  local bytes = redis.call('HINCRBY', KEYS[1], 'bytes', #data)
  local count = redis.call('ZCARD', KEYS[2])
  while count > 0 and (count > max_events or bytes > max_bytes) do
    local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
    redis.call('ZREMRANGEBYRANK', KEYS[2], 0, 0)
    local size = #oldest - string.find(oldest, ':', 1, true)
    bytes = redis.call('HINCRBY', KEYS[1], 'bytes', -size)
    count = count - 1
  end
end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return seq
"""

_AFTER = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
return redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. ARGV[1], '+inf')
"""


class RedisEventStore:
    """An :class:`~mcpsync.http.events.EventStore` on Redis, shared by every worker.
    Thread-safe; see the module docstring for semantics, keys and bounds.

    ``redis`` is a URL or a ready :class:`redis.Redis` (see :func:`mcpsync.redis.connect`;
    it must not decode responses). Every method raises
    :class:`~mcpsync.errors.StoreUnavailableError` when Redis cannot be reached, within
    the budget in force: the request's that waits for the event (``wsgi_app(
    store_budget=)``), else ``call_budget`` seconds per call (see
    :mod:`mcpsync.redis.budget`).
    """

    def __init__(self, redis: str | redis.Redis, *, prefix: str = "mcpsync",
                 max_events_per_stream: int = 256,
                 max_bytes_per_stream: int = DEFAULT_MAX_BYTES,
                 max_age: float = DEFAULT_MAX_AGE,
                 call_budget: float = DEFAULT_CALL_BUDGET) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        if max_events_per_stream < 0:
            raise ValueError("max_events_per_stream must not be negative")
        if max_bytes_per_stream < 0:
            raise ValueError("max_bytes_per_stream must not be negative")
        if not max_age > 0:
            raise ValueError("max_age must be positive")
        if not call_budget > 0:
            raise ValueError("call_budget must be positive")
        self.redis = connect(redis)
        require_bytes(self.redis)
        self.prefix = prefix
        self.max_events_per_stream = max_events_per_stream
        self.max_bytes_per_stream = max_bytes_per_stream
        self.max_age = max_age
        #: Seconds one call made outside a request's budget may wait on Redis.
        self.call_budget = call_budget
        self._failed_at = -math.inf  # when a call last found Redis unavailable (monotonic)
        self._ttl_ms = max(1, round(max_age * 1000))
        self._store = self.redis.register_script(_STORE)
        self._after = self.redis.register_script(_AFTER)

    def _keys(self, stream_id: str) -> list[str]:
        digest = hashlib.sha256(stream_id.encode("utf-8", "surrogatepass")).hexdigest()
        key = f"{self.prefix}:events:{digest}"
        return [key + ":meta", key]

    @contextlib.contextmanager
    def _call(self, what: str) -> Iterator[None]:
        """One call to Redis, bounded (see ``call_budget``); a failure is noted for
        :meth:`forget`."""
        try:
            with unavailable(self.redis, what, self.call_budget):
                yield
        except StoreUnavailableError:
            self._failed_at = time.monotonic()
            raise

    @property
    def capabilities(self) -> EventStoreCapabilities:
        """It forgets a stream at once (:meth:`forget`)."""
        return EventStoreCapabilities(forgets=self)

    def store_event(self, stream_id: str, data: bytes) -> str:
        if "_" in stream_id:
            raise ValueError("stream ids must not contain '_'")
        with self._call("storing an SSE event"):
            seq = self._store(keys=self._keys(stream_id),
                              args=[data, self.max_events_per_stream,
                                    self.max_bytes_per_stream, self._ttl_ms])
        return f"{stream_id}_{int(seq)}"

    def events_after(self, last_event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        stream_id, _, seq_text = last_event_id.rpartition("_")
        seq = parse_decimal(seq_text)
        if not stream_id or seq is None:
            return None
        with self._call("reading SSE events"):
            found = self._after(keys=self._keys(stream_id), args=[seq])
        if found is None:
            return None
        events: list[tuple[str, bytes]] = []
        for member in found:
            number, _, data = bytes(member).partition(b":")
            events.append((f"{stream_id}_{int(number)}", data))
        return stream_id, events

    def forget(self, stream_id: str) -> None:
        """Drop a stream's events (no resume can need them any more).

        Only a clean-up (the stream's keys expire ``max_age`` after its last event anyway):
        within ``call_budget`` seconds of a call that found Redis unavailable it is not
        tried but refused at once, so that ending many sessions while Redis is stopped (an
        app closing) costs one call's budget, not one per stream."""
        since = time.monotonic() - self._failed_at
        if since < self.call_budget:
            raise StoreUnavailableError(
                f"forgetting an SSE stream: not tried, Redis at {describe(self.redis)} was "
                f"unavailable {since:.1f} s ago (the stream's keys expire by themselves)")
        with self._call("forgetting an SSE stream"):
            self.redis.delete(*self._keys(stream_id))

    def __repr__(self) -> str:
        return (f"RedisEventStore(<{describe(self.redis)}>, prefix={self.prefix!r}, "
                f"max_events_per_stream={self.max_events_per_stream}, "
                f"max_bytes_per_stream={self.max_bytes_per_stream}, max_age={self.max_age})")


__all__ = ["DEFAULT_MAX_AGE", "RedisEventStore"]
