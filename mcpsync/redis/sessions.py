"""Handshake-era sessions on Redis, shared by every worker on every machine.

:class:`RedisSessionStore` is the :class:`~mcpsync.http.session_store.SessionStore` and
:class:`~mcpsync.http.session_store.SharedSessionState` of a deployment without sticky
routing: any worker takes up a session another initialized, and sees the log level and
resource subscriptions set through any other.

Keys (every one under ``prefix``; ``<sid>`` is the SHA-256 of the session id and ``<uri>``
that of a URI, so a hostile id or URI can never name another key, whatever its length or
characters)::

    <prefix>:session:<sid>         hash: the record (id, version, client info and
                                   capabilities as JSON, owner, log level)
    <prefix>:session:<sid>:subs    hash: subscribed URI -> <uri>
    <prefix>:subscribers:<uri>     hash: <sid> -> session id (the reverse index)

The first two expire together ``idle_timeout`` seconds after the last :meth:`save` or
:meth:`touch` (after the record's ``lifetime`` when it was saved with one: the app's
handshake timeout, until the session's second request touches it); an index hash lives
as long as its longest-lived subscriber, and :meth:`subscribers` drops the entries of
sessions that have expired since. Every change is one Lua script, so it is atomic (two
workers subscribing at once lose neither). The scripts touch keys they derive, so this
runs on a standalone Redis (or behind Sentinel), not on Redis Cluster.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import redis

from ..protocol.decoding import utf8_encodable
from ..stores.sessions import SessionRecord, SessionStoreCapabilities
from .client import connect, describe, require_bytes, unavailable

#: The longest session id looked up: mcpsync issues 32 characters; a longer id (it
#: comes from a request header) is unknown without a round trip to Redis.
MAX_SESSION_ID_LENGTH = 256
#: The longest URI one can subscribe to.
MAX_URI_LENGTH = 8192
#: The most URIs one session may be subscribed to at once.
DEFAULT_MAX_SUBSCRIPTIONS = 1024

_SAVE = """
local ttl = tonumber(ARGV[1])
local old = redis.call('HGETALL', KEYS[2])
for i = 2, #old, 2 do redis.call('HDEL', ARGV[2] .. old[i], ARGV[3]) end
redis.call('DEL', KEYS[1], KEYS[2])
local n = tonumber(ARGV[5])
redis.call('HSET', KEYS[1], unpack(ARGV, 6, 5 + n))
redis.call('PEXPIRE', KEYS[1], ttl)
for i = 6 + n, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  local index = ARGV[2] .. ARGV[i + 1]
  redis.call('HSET', index, ARGV[3], ARGV[4])
  if redis.call('PTTL', index) < ttl then redis.call('PEXPIRE', index, ttl) end
end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
"""

_TOUCH = """
local ttl = tonumber(ARGV[1])
if redis.call('PEXPIRE', KEYS[1], ttl) == 0 then return 0 end
redis.call('PEXPIRE', KEYS[2], ttl)
for _, d in ipairs(redis.call('HVALS', KEYS[2])) do
  local index = ARGV[2] .. d
  local left = redis.call('PTTL', index)
  if left >= -1 and left < ttl then redis.call('PEXPIRE', index, ttl) end
end
return 1
"""

_DELETE = """
local existed = redis.call('EXISTS', KEYS[1])
for _, d in ipairs(redis.call('HVALS', KEYS[2])) do redis.call('HDEL', ARGV[1] .. d, ARGV[2]) end
redis.call('DEL', KEYS[1], KEYS[2])
return existed
"""

_SET_LEVEL = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'logLevel', ARGV[1])
return 1
"""

_SUBSCRIBE = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl == -2 then return 0 end
if ttl == -1 then ttl = tonumber(ARGV[6]) end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0
    and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[5]) then return -1 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end
return 1
"""

_UNSUBSCRIBE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then redis.call('HDEL', KEYS[2], ARGV[2]) end
return 1
"""

_SUBSCRIBERS = """
local live = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if redis.call('EXISTS', ARGV[1] .. all[i]) == 1 then
    live[#live + 1] = all[i + 1]
  else
    redis.call('HDEL', KEYS[1], all[i])
  end
end
return live
"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class RedisSessionStore:
    """Session records on Redis (see the module docstring for the keys). Thread-safe
    (the client's connection pool is), and shared by any number of processes.

    ``redis`` is a URL or a ready :class:`redis.Redis` (see :func:`mcpsync.redis.connect`;
    it must not decode responses). A record untouched for ``idle_timeout`` seconds (or
    for the ``lifetime`` it was saved with, until a :meth:`touch`) is gone, with its
    subscriptions. A session may hold ``max_subscriptions`` URIs of at most
    :data:`MAX_URI_LENGTH` characters; one more is refused with ``ValueError``. Any
    method raises :class:`~mcpsync.errors.StoreUnavailableError` when Redis cannot be
    reached; the next call tries again.
    """

    def __init__(self, redis: str | redis.Redis, *, prefix: str = "mcpsync",
                 idle_timeout: float = 1800.0,
                 max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS) -> None:
        if not prefix:
            raise ValueError("prefix must not be empty")
        if not idle_timeout > 0:
            raise ValueError("idle_timeout must be positive")
        if max_subscriptions < 0:
            raise ValueError("max_subscriptions must not be negative")
        self.redis = connect(redis)
        require_bytes(self.redis)
        self.prefix = prefix
        self.idle_timeout = idle_timeout
        self.max_subscriptions = max_subscriptions
        self._ttl_ms = max(1, round(idle_timeout * 1000))
        self._save = self.redis.register_script(_SAVE)
        self._touch = self.redis.register_script(_TOUCH)
        self._delete = self.redis.register_script(_DELETE)
        self._set_level = self.redis.register_script(_SET_LEVEL)
        self._subscribe = self.redis.register_script(_SUBSCRIBE)
        self._unsubscribe = self.redis.register_script(_UNSUBSCRIBE)
        self._subscribers = self.redis.register_script(_SUBSCRIBERS)

    # -- keys ----------------------------------------------------------------------------

    @property
    def capabilities(self) -> SessionStoreCapabilities:
        """Shared state: log levels and subscriptions, each change one Lua script."""
        return SessionStoreCapabilities(shared_state=self)

    def record_key(self, session_id: str) -> str:
        """The key of ``session_id``'s record hash (its subscriptions: ``+ ":subs"``)."""
        return f"{self.prefix}:session:{_digest(session_id)}"

    def index_key(self, uri: str) -> str:
        """The key of the reverse index of ``uri``'s subscribers."""
        return f"{self.prefix}:subscribers:{_digest(uri)}"

    @staticmethod
    def _known(session_id: str) -> bool:
        return (isinstance(session_id, str) and 0 < len(session_id) <= MAX_SESSION_ID_LENGTH
                and utf8_encodable(session_id))

    # -- SessionStore --------------------------------------------------------------------

    def save(self, record: SessionRecord) -> None:
        if not self._known(record.session_id):
            raise ValueError(f"session ids are 1..{MAX_SESSION_ID_LENGTH} characters")
        fields: list[str] = ["id", record.session_id, "version", record.protocol_version,
                             "clientInfo", json.dumps(record.client_info),
                             "capabilities", json.dumps(record.client_capabilities),
                             "owner", record.owner]
        if record.log_level is not None:
            fields += ["logLevel", record.log_level]
        uris = sorted(record.subscriptions)
        if len(uris) > self.max_subscriptions:
            raise ValueError(f"a session may hold at most {self.max_subscriptions} "
                             "subscriptions")
        subs: list[str] = []
        for uri in uris:
            self._check_uri(uri)
            subs += [uri, _digest(uri)]
        key = self.record_key(record.session_id)
        ttl_ms = (self._ttl_ms if record.lifetime is None
                  else max(1, round(record.lifetime * 1000)))
        with unavailable(self.redis, "saving a session"):
            self._save(keys=[key, key + ":subs"],
                       args=[ttl_ms, f"{self.prefix}:subscribers:",
                             _digest(record.session_id), record.session_id, len(fields),
                             *fields, *subs])

    def load(self, session_id: str) -> SessionRecord | None:
        if not self._known(session_id):
            return None
        key = self.record_key(session_id)
        with unavailable(self.redis, "loading a session"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.hgetall(key)
            pipe.hkeys(key + ":subs")
            fields, uris = pipe.execute()
        return _record(session_id, fields, uris)

    def touch(self, session_id: str) -> bool:
        if not self._known(session_id):
            return False
        key = self.record_key(session_id)
        with unavailable(self.redis, "touching a session"):
            done = self._touch(keys=[key, key + ":subs"],
                               args=[self._ttl_ms, f"{self.prefix}:subscribers:"])
        return bool(done)

    def delete(self, session_id: str) -> bool:
        if not self._known(session_id):
            return False
        key = self.record_key(session_id)
        with unavailable(self.redis, "deleting a session"):
            existed = self._delete(keys=[key, key + ":subs"],
                                   args=[f"{self.prefix}:subscribers:", _digest(session_id)])
        return bool(existed)

    # -- SharedSessionState --------------------------------------------------------------

    def set_log_level(self, session_id: str, level: str) -> None:
        if not self._known(session_id):
            return
        with unavailable(self.redis, "setting a session's log level"):
            self._set_level(keys=[self.record_key(session_id)], args=[level])

    def add_subscription(self, session_id: str, uri: str) -> None:
        if not self._known(session_id):
            return
        self._check_uri(uri)
        key = self.record_key(session_id)
        with unavailable(self.redis, "subscribing a session"):
            done = self._subscribe(
                keys=[key, key + ":subs", self.index_key(uri)],
                args=[uri, _digest(uri), _digest(session_id), session_id,
                      self.max_subscriptions, self._ttl_ms])
        if done == -1:
            raise ValueError(f"a session may hold at most {self.max_subscriptions} "
                             "subscriptions")

    def remove_subscription(self, session_id: str, uri: str) -> None:
        if not self._known(session_id) or len(uri) > MAX_URI_LENGTH or not utf8_encodable(uri):
            return
        with unavailable(self.redis, "unsubscribing a session"):
            self._unsubscribe(keys=[self.record_key(session_id) + ":subs", self.index_key(uri)],
                              args=[uri, _digest(session_id)])

    def subscribers(self, uri: str) -> set[str]:
        if len(uri) > MAX_URI_LENGTH or not utf8_encodable(uri):
            return set()
        with unavailable(self.redis, "reading a resource's subscribers"):
            ids = self._subscribers(keys=[self.index_key(uri)],
                                    args=[f"{self.prefix}:session:"])
        return {i.decode("utf-8", "replace") for i in ids}

    @staticmethod
    def _check_uri(uri: str) -> None:
        if not isinstance(uri, str) or len(uri) > MAX_URI_LENGTH:
            raise ValueError(f"subscribed URIs are at most {MAX_URI_LENGTH} characters")
        if not utf8_encodable(uri):
            raise ValueError("a subscribed URI must be valid Unicode (no lone surrogates)")

    def __repr__(self) -> str:
        return (f"RedisSessionStore(<{describe(self.redis)}>, prefix={self.prefix!r}, "
                f"idle_timeout={self.idle_timeout})")


def _record(session_id: str, fields: dict[bytes, bytes], uris: list[bytes]) -> SessionRecord | None:
    """The record in a hash as :meth:`RedisSessionStore.save` wrote it; ``None`` if it is
    missing or not one (written by something else under the prefix)."""
    if not fields:
        return None
    text = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
            for k, v in fields.items()}
    if text.get("id") != session_id or "version" not in text:
        return None
    info: Any = _json(text.get("clientInfo"))
    capabilities: Any = _json(text.get("capabilities"))
    return SessionRecord(session_id, text["version"], info if isinstance(info, dict) else None,
                         capabilities if isinstance(capabilities, dict) else {},
                         text.get("owner", ""), text.get("logLevel"),
                         frozenset(u.decode("utf-8", "replace") for u in uris))


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


__all__ = ["DEFAULT_MAX_SUBSCRIPTIONS", "MAX_SESSION_ID_LENGTH", "MAX_URI_LENGTH",
           "RedisSessionStore"]
