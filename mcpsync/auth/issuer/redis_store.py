"""The authorization server's state on Redis, shared by every worker on every machine.

Keys (under ``prefix``; ``<h>`` is a secret's SHA-256, never the secret)::

    <prefix>:client:<id-hash>      string: the client record (JSON); a cached metadata
                                   document expires with its cache lifetime
    <prefix>:clients               sorted set: dynamic/document clients by expiry (the bound)
    <prefix>:code:<h>              string: the code record (JSON), expires with the code
    <prefix>:code:<h>:used         string: set by the first take (the single-use marker)
    <prefix>:grant:<id>            string: the grant (JSON)
    <prefix>:grant:<id>:tokens     set: the hashes of the grant's tokens
    <prefix>:user:<subject-hash>   sorted set: the user's grant ids by creation time
    <prefix>:token:<h>             string: the token record (JSON), expires with it
    <prefix>:keys                  hash: kid -> key record (JSON)

Taking a code, rotating a refresh token and revoking a grant are each one Lua script, so
they are atomic across workers: of two workers taking one code exactly one wins, and a
reused refresh token revokes its grant in the same step that finds it reused. The scripts
touch keys they derive, so this runs on a standalone Redis (or behind Sentinel), not on
Redis Cluster. Every call goes through :func:`mcpsync.redis.client.unavailable`: Redis
being down is ``StoreUnavailableError`` (a 503), never a hang.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import redis

from ...redis.client import connect, require_bytes, unavailable
from .sql import DEFAULT_MAX_CLIENTS
from .store import (
    ClientRecord,
    CodeRecord,
    GrantRecord,
    KeyRecord,
    RefreshOutcome,
    StoreFullError,
    TokenRecord,
)

#: How long a grant's records are kept after it was made or last refreshed (longer than a
#: refresh token lives, so a grant in use never loses them; then they expire on their own).
GRANT_RECORD_SECONDS = 90 * 24 * 3600

_PUT_CLIENT = """
local limited = ARGV[3] == '1'
if limited then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
  if redis.call('ZSCORE', KEYS[2], KEYS[1]) == false
     and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
  redis.call('ZADD', KEYS[2], ARGV[6], KEYS[1])
end
if ARGV[2] == '' then redis.call('SET', KEYS[1], ARGV[1])
else redis.call('SET', KEYS[1], ARGV[1], 'PXAT', ARGV[2]) end
return 1
"""

_TAKE_CODE = """
local record = redis.call('GET', KEYS[1])
if not record then return false end
if redis.call('SET', KEYS[2], '1', 'NX', 'PXAT', ARGV[1]) then return {record, 0} end
return {record, 1}
"""

# KEYS: old token, new token, the key prefix; ARGV: new record JSON, new expiry (ms),
# new hash, now (ms)
_ROTATE = """
local old = redis.call('GET', KEYS[1])
if not old then return {'unknown'} end
old = cjson.decode(old)
if old.kind ~= 'refresh' then return {'unknown'} end
local gkey = KEYS[3] .. 'grant:' .. old.grant_id
local grant = redis.call('GET', gkey)
if not grant then return {'unknown'} end
local g = cjson.decode(grant)
if g.revoked then return {'unknown'} end
if old.rotated then
  g.revoked = true
  redis.call('SET', gkey, cjson.encode(g), 'KEEPTTL')
  for _, h in ipairs(redis.call('SMEMBERS', gkey .. ':tokens')) do
    redis.call('DEL', KEYS[3] .. 'token:' .. h)
  end
  redis.call('DEL', gkey .. ':tokens')
  redis.call('ZREM', KEYS[3] .. 'user:' .. ARGV[5], old.grant_id)
  return {'reused', grant}
end
old.rotated = true
redis.call('SET', KEYS[1], cjson.encode(old), 'KEEPTTL')
redis.call('SET', KEYS[2], ARGV[1], 'PXAT', ARGV[2])
redis.call('SADD', gkey .. ':tokens', ARGV[3])
-- a grant in use lives on: its records expire GRANT_RECORD_SECONDS after its last use
redis.call('EXPIRE', gkey, ARGV[6])
redis.call('EXPIRE', gkey .. ':tokens', ARGV[6])
redis.call('EXPIRE', KEYS[3] .. 'user:' .. ARGV[5], ARGV[6])
return {'rotated', grant}
"""

_REVOKE = """
local grant = redis.call('GET', KEYS[1])
if not grant then return 0 end
local g = cjson.decode(grant)
g.revoked = true
redis.call('SET', KEYS[1], cjson.encode(g), 'KEEPTTL')
for _, h in ipairs(redis.call('SMEMBERS', KEYS[2])) do redis.call('DEL', ARGV[1] .. h) end
redis.call('DEL', KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[2])
return 1
"""


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _grant_json(grant: GrantRecord) -> str:
    return json.dumps({"grant_id": grant.grant_id, "client_id": grant.client_id,
                       "subject": grant.subject, "scope": grant.scope,
                       "resource": grant.resource, "created_at": grant.created_at,
                       "claims": grant.claims, "revoked": grant.revoked})


def _grant(raw: bytes | str) -> GrantRecord:
    data = json.loads(raw)
    if not isinstance(data.get("claims"), dict):  # Lua's cjson writes {} as []
        data["claims"] = {}
    return GrantRecord(**data)


class RedisIssuerStore:
    """An :class:`~mcpsync.auth.issuer.store.IssuerStore` on Redis: ``url_or_client`` is a
    ``redis://`` URL or a ready ``redis.Redis`` (not decoding responses)."""

    def __init__(self, url_or_client: str | redis.Redis, *, prefix: str = "mcpsync:oauth",
                 max_clients: int = DEFAULT_MAX_CLIENTS) -> None:
        self.redis = connect(url_or_client)
        require_bytes(self.redis)
        self.prefix = prefix + ":"
        self.max_clients = max_clients
        self._put_client = self.redis.register_script(_PUT_CLIENT)
        self._take_code = self.redis.register_script(_TAKE_CODE)
        self._rotate = self.redis.register_script(_ROTATE)
        self._revoke = self.redis.register_script(_REVOKE)

    def close(self) -> None:
        self.redis.close()

    def _key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    # -- clients ----------------------------------------------------------------------
    def put_client(self, client: ClientRecord) -> None:
        record = json.dumps({"client_id": client.client_id, "metadata": client.metadata,
                             "source": client.source, "secret_hash": client.secret_hash,
                             "created_at": client.created_at,
                             "expires_at": client.expires_at})
        limited = client.source != "registered"
        # A dynamic client does not expire: its score is +inf in the bound's set.
        score = "+inf" if client.expires_at is None else str(_ms(client.expires_at))
        with unavailable(self.redis, "saving an OAuth client"):
            added = self._put_client(
                keys=[self._key("client", _h(client.client_id)), self._key("clients")],
                args=[record, "" if client.expires_at is None else _ms(client.expires_at),
                      "1" if limited else "0", _ms(time.time()), self.max_clients, score])
        if not added:
            raise StoreFullError(f"the store holds {self.max_clients} clients, its bound")

    def get_client(self, client_id: str, now: float) -> ClientRecord | None:
        with unavailable(self.redis, "loading an OAuth client"):
            raw = self.redis.get(self._key("client", _h(client_id)))
        if raw is None:
            return None
        record = ClientRecord(**json.loads(raw))
        if record.expires_at is not None and record.expires_at <= now:
            return None
        return record

    def delete_client(self, client_id: str) -> None:
        key = self._key("client", _h(client_id))
        with unavailable(self.redis, "deleting an OAuth client"):
            self.redis.delete(key)
            self.redis.zrem(self._key("clients"), key)

    # -- codes ------------------------------------------------------------------------
    def put_code(self, code: CodeRecord) -> None:
        record = json.dumps({"client_id": code.client_id, "redirect_uri": code.redirect_uri,
                             "scope": code.scope, "resource": code.resource,
                             "subject": code.subject, "code_challenge": code.code_challenge,
                             "grant_id": code.grant_id, "claims": code.claims,
                             "expires_at": code.expires_at})
        with unavailable(self.redis, "saving an authorization code"):
            self.redis.set(self._key("code", code.code_hash), record,
                           pxat=_ms(code.expires_at))

    def take_code(self, code_hash: str, now: float) -> tuple[CodeRecord | None, bool]:
        key = self._key("code", code_hash)
        with unavailable(self.redis, "taking an authorization code"):
            # The used marker outlives the code by a day, so a late replay is still seen.
            found = self._take_code(keys=[key, key + ":used"],
                                    args=[_ms(now + 24 * 3600)])
        if not found:
            return None, False
        data = json.loads(found[0])
        if not isinstance(data.get("claims"), dict):
            data["claims"] = {}
        record = CodeRecord(code_hash=code_hash, **data)
        used = bool(int(found[1]))
        if not used and record.expires_at <= now:
            return None, False
        return record, used

    # -- grants and tokens --------------------------------------------------------------
    def put_grant(self, grant: GrantRecord) -> None:
        with unavailable(self.redis, "saving an OAuth grant"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.set(self._key("grant", grant.grant_id), _grant_json(grant),
                     ex=GRANT_RECORD_SECONDS)
            if not grant.revoked:
                user = self._key("user", _h(grant.subject))
                pipe.zadd(user, {grant.grant_id: grant.created_at})
                pipe.expire(user, GRANT_RECORD_SECONDS)
            pipe.execute()

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        with unavailable(self.redis, "loading an OAuth grant"):
            raw = self.redis.get(self._key("grant", grant_id))
        return _grant(raw) if raw is not None else None

    def grants_of(self, subject: str) -> list[GrantRecord]:
        user = self._key("user", _h(subject))
        with unavailable(self.redis, "listing a user's OAuth grants"):
            ids: list[Any] = list(self.redis.zrange(user, 0, -1))
            raws = [self.redis.get(self._key("grant", bytes(gid).decode())) for gid in ids]
            gone = [gid for gid, raw in zip(ids, raws, strict=True) if raw is None]
            if gone:  # grants whose records expired: the index forgets them too
                self.redis.zrem(user, *gone)
        grants = [_grant(raw) for raw in raws if raw is not None]
        return [grant for grant in grants if not grant.revoked]

    def revoke_grant(self, grant_id: str) -> None:
        grant = self.get_grant(grant_id)
        if grant is None:
            return
        gkey = self._key("grant", grant_id)
        with unavailable(self.redis, "revoking an OAuth grant"):
            self._revoke(keys=[gkey, gkey + ":tokens", self._key("user", _h(grant.subject))],
                         args=[self._key("token", ""), grant_id])

    def put_token(self, token: TokenRecord) -> None:
        gkey = self._key("grant", token.grant_id)
        with unavailable(self.redis, "saving an OAuth token"):
            pipe = self.redis.pipeline(transaction=True)
            pipe.set(self._key("token", token.token_hash), self._token_json(token),
                     pxat=_ms(token.expires_at))
            pipe.sadd(gkey + ":tokens", token.token_hash)
            pipe.expire(gkey + ":tokens", GRANT_RECORD_SECONDS)
            pipe.execute()

    @staticmethod
    def _token_json(token: TokenRecord) -> str:
        return json.dumps({"kind": token.kind, "grant_id": token.grant_id,
                           "expires_at": token.expires_at, "rotated": token.rotated})

    def get_token(self, token_hash: str, now: float) -> TokenRecord | None:
        with unavailable(self.redis, "loading an OAuth token"):
            raw = self.redis.get(self._key("token", token_hash))
        if raw is None:
            return None
        record = TokenRecord(token_hash=token_hash, **json.loads(raw))
        return record if record.expires_at > now else None

    def rotate_refresh(self, old_hash: str, new: TokenRecord,
                       now: float) -> tuple[RefreshOutcome, GrantRecord | None]:
        old = self.get_token(old_hash, now)
        if old is None or old.kind != "refresh":
            return "unknown", None
        grant = self.get_grant(old.grant_id)
        if grant is None:
            return "unknown", None
        with unavailable(self.redis, "rotating a refresh token"):
            found: list[Any] = self._rotate(
                keys=[self._key("token", old_hash), self._key("token", new.token_hash),
                      self.prefix],
                args=[self._token_json(new), _ms(new.expires_at), new.token_hash, _ms(now),
                      _h(grant.subject), GRANT_RECORD_SECONDS])
        outcome = bytes(found[0]).decode()
        if outcome == "unknown":
            return "unknown", None
        return ("reused" if outcome == "reused" else "rotated"), _grant(found[1])

    # -- signing keys -----------------------------------------------------------------
    def signing_keys(self) -> list[KeyRecord]:
        with unavailable(self.redis, "loading the signing keys"):
            raws = self.redis.hvals(self._key("keys"))
        keys = [KeyRecord(**json.loads(raw)) for raw in raws]
        return sorted(keys, key=lambda key: (-key.created_at, key.kid))

    def add_key(self, key: KeyRecord, *, keep: int) -> None:
        record = json.dumps({"kid": key.kid, "private_pem": key.private_pem,
                             "created_at": key.created_at})
        with unavailable(self.redis, "adding a signing key"):
            self.redis.hsetnx(self._key("keys"), key.kid, record)
        for old in self.signing_keys()[keep:]:
            with unavailable(self.redis, "retiring a signing key"):
                self.redis.hdel(self._key("keys"), old.kid)

    # -- housekeeping -----------------------------------------------------------------
    def purge(self, now: float) -> None:
        """Codes, tokens and cached documents expire by themselves (key TTLs); only the
        bound's set needs its expired members dropped."""
        with unavailable(self.redis, "purging OAuth state"):
            self.redis.zremrangebyscore(self._key("clients"), "-inf", _ms(now))
