"""The authorization server's state in one SQLite file, through the standard library.

``SqlIssuerStore(path)`` is shared by the workers of a site on one machine (gunicorn
``-w N``): a code issued by one is taken by another. As in the task store
(:mod:`mcpsync.tasks.sqlite`): one connection per store guarded by a lock (every
operation is one short statement or transaction), WAL so readers never wait for a
writer, ``busy_timeout`` so a writer waits its turn, and every read-modify-write (taking
a code, rotating a refresh token) inside ``BEGIN IMMEDIATE``, so the write lock is held
from the read on: two workers cannot both take one code.

``":memory:"`` keeps the state in this process only (tests, a single-process site).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

from .store import (
    GRANT_GRACE,
    ClientRecord,
    CodeRecord,
    GrantRecord,
    KeyRecord,
    RefreshOutcome,
    StoreFullError,
    TokenRecord,
)

#: At most this many dynamic and metadata-document clients (registration past it is
#: refused with ``StoreFullError``; pre-registered clients do not count).
DEFAULT_MAX_CLIENTS = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS oauth_clients (
    client_id TEXT PRIMARY KEY, metadata TEXT NOT NULL, source TEXT NOT NULL,
    secret_hash TEXT, created_at REAL NOT NULL, expires_at REAL);
CREATE TABLE IF NOT EXISTS oauth_codes (
    code_hash TEXT PRIMARY KEY, record TEXT NOT NULL, expires_at REAL NOT NULL,
    used INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS oauth_grants (
    grant_id TEXT PRIMARY KEY, client_id TEXT NOT NULL, subject TEXT NOT NULL,
    scope TEXT NOT NULL, resource TEXT NOT NULL, created_at REAL NOT NULL,
    claims TEXT NOT NULL, revoked INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS oauth_grants_subject ON oauth_grants (subject);
CREATE TABLE IF NOT EXISTS oauth_tokens (
    token_hash TEXT PRIMARY KEY, kind TEXT NOT NULL, grant_id TEXT NOT NULL,
    expires_at REAL NOT NULL, rotated INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE TABLE IF NOT EXISTS oauth_keys (
    kid TEXT PRIMARY KEY, private_pem TEXT NOT NULL, created_at REAL NOT NULL);
"""


def _code_json(code: CodeRecord) -> str:
    return json.dumps({"client_id": code.client_id, "redirect_uri": code.redirect_uri,
                       "scope": code.scope, "resource": code.resource,
                       "subject": code.subject, "code_challenge": code.code_challenge,
                       "grant_id": code.grant_id, "claims": code.claims})


def _code(code_hash: str, text: str, expires_at: float) -> CodeRecord:
    data: dict[str, Any] = json.loads(text)
    return CodeRecord(code_hash=code_hash, expires_at=expires_at, **data)


def _grant(row: tuple[Any, ...]) -> GrantRecord:
    return GrantRecord(grant_id=row[0], client_id=row[1], subject=row[2], scope=row[3],
                       resource=row[4], created_at=row[5], claims=json.loads(row[6]),
                       revoked=bool(row[7]))


_GRANT_COLUMNS = "grant_id, client_id, subject, scope, resource, created_at, claims, revoked"


class SqlIssuerStore:
    """An :class:`~mcpsync.auth.issuer.store.IssuerStore` in one SQLite file (or
    ``":memory:"``). ``busy_timeout``: seconds a writer waits for another process's
    write lock before failing."""

    def __init__(self, path: str, *, max_clients: int = DEFAULT_MAX_CLIENTS,
                 busy_timeout: float = 5.0) -> None:
        self.path = path
        self.max_clients = max_clients
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None,
                                   check_same_thread=False)
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding SQLite's write lock from its first statement."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return list(self._db.execute(sql, args).fetchall())

    # -- clients ----------------------------------------------------------------------
    def put_client(self, client: ClientRecord) -> None:
        with self._write() as db:
            if client.source != "registered":
                exists = db.execute("SELECT 1 FROM oauth_clients WHERE client_id = ?",
                                    (client.client_id,)).fetchone()
                count = db.execute("SELECT COUNT(*) FROM oauth_clients "
                                   "WHERE source != 'registered'").fetchone()[0]
                if not exists and count >= self.max_clients:
                    raise StoreFullError(f"the store holds {count} clients, its bound")
            db.execute("INSERT OR REPLACE INTO oauth_clients VALUES (?, ?, ?, ?, ?, ?)",
                       (client.client_id, json.dumps(client.metadata), client.source,
                        client.secret_hash, client.created_at, client.expires_at))

    def get_client(self, client_id: str, now: float) -> ClientRecord | None:
        rows = self._read("SELECT client_id, metadata, source, secret_hash, created_at, "
                          "expires_at FROM oauth_clients WHERE client_id = ?", (client_id,))
        if not rows:
            return None
        row = rows[0]
        if row[5] is not None and row[5] <= now:
            return None
        return ClientRecord(client_id=row[0], metadata=json.loads(row[1]), source=row[2],
                            secret_hash=row[3], created_at=row[4], expires_at=row[5])

    def delete_client(self, client_id: str) -> None:
        with self._write() as db:
            db.execute("DELETE FROM oauth_clients WHERE client_id = ?", (client_id,))

    # -- codes ------------------------------------------------------------------------
    def put_code(self, code: CodeRecord) -> None:
        with self._write() as db:
            db.execute("INSERT INTO oauth_codes VALUES (?, ?, ?, 0)",
                       (code.code_hash, _code_json(code), code.expires_at))

    def take_code(self, code_hash: str, now: float) -> tuple[CodeRecord | None, bool]:
        with self._write() as db:
            row = db.execute("SELECT record, expires_at, used FROM oauth_codes "
                             "WHERE code_hash = ?", (code_hash,)).fetchone()
            if row is None:
                return None, False
            record = _code(code_hash, row[0], row[1])
            if row[2]:
                return record, True
            if row[1] <= now:
                return None, False
            db.execute("UPDATE oauth_codes SET used = 1 WHERE code_hash = ?", (code_hash,))
            return record, False

    # -- grants and tokens --------------------------------------------------------------
    def put_grant(self, grant: GrantRecord) -> None:
        with self._write() as db:
            db.execute("INSERT INTO oauth_grants VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (grant.grant_id, grant.client_id, grant.subject, grant.scope,
                        grant.resource, grant.created_at, json.dumps(grant.claims),
                        int(grant.revoked)))

    def get_grant(self, grant_id: str) -> GrantRecord | None:
        rows = self._read(f"SELECT {_GRANT_COLUMNS} FROM oauth_grants WHERE grant_id = ?",
                          (grant_id,))
        return _grant(rows[0]) if rows else None

    def grants_of(self, subject: str) -> list[GrantRecord]:
        rows = self._read(f"SELECT {_GRANT_COLUMNS} FROM oauth_grants WHERE subject = ? "
                          "AND revoked = 0 ORDER BY created_at", (subject,))
        return [_grant(row) for row in rows]

    def revoke_grant(self, grant_id: str) -> None:
        with self._write() as db:
            self._revoke(db, grant_id)

    @staticmethod
    def _revoke(db: sqlite3.Connection, grant_id: str) -> None:
        db.execute("UPDATE oauth_grants SET revoked = 1 WHERE grant_id = ?", (grant_id,))
        db.execute("DELETE FROM oauth_tokens WHERE grant_id = ?", (grant_id,))

    def put_token(self, token: TokenRecord) -> None:
        with self._write() as db:
            db.execute("INSERT INTO oauth_tokens VALUES (?, ?, ?, ?, ?)",
                       (token.token_hash, token.kind, token.grant_id, token.expires_at,
                        int(token.rotated)))

    def get_token(self, token_hash: str, now: float) -> TokenRecord | None:
        rows = self._read("SELECT token_hash, kind, grant_id, expires_at, rotated "
                          "FROM oauth_tokens WHERE token_hash = ?", (token_hash,))
        if not rows or rows[0][3] <= now:
            return None
        row = rows[0]
        return TokenRecord(token_hash=row[0], kind=row[1], grant_id=row[2],
                           expires_at=row[3], rotated=bool(row[4]))

    def rotate_refresh(self, old_hash: str, new: TokenRecord,
                       now: float) -> tuple[RefreshOutcome, GrantRecord | None]:
        with self._write() as db:
            row = db.execute("SELECT grant_id, expires_at, rotated FROM oauth_tokens "
                             "WHERE token_hash = ? AND kind = 'refresh'",
                             (old_hash,)).fetchone()
            if row is None or row[1] <= now:
                return "unknown", None
            grant_row = db.execute(f"SELECT {_GRANT_COLUMNS} FROM oauth_grants "
                                   "WHERE grant_id = ?", (row[0],)).fetchone()
            if grant_row is None or grant_row[7]:
                return "unknown", None
            grant = _grant(grant_row)
            if row[2]:
                self._revoke(db, grant.grant_id)
                return "reused", grant
            db.execute("UPDATE oauth_tokens SET rotated = 1 WHERE token_hash = ?",
                       (old_hash,))
            db.execute("INSERT INTO oauth_tokens VALUES (?, 'refresh', ?, ?, 0)",
                       (new.token_hash, grant.grant_id, new.expires_at))
            return "rotated", grant

    # -- signing keys -----------------------------------------------------------------
    def signing_keys(self) -> list[KeyRecord]:
        rows = self._read("SELECT kid, private_pem, created_at FROM oauth_keys "
                          "ORDER BY created_at DESC, kid")
        return [KeyRecord(kid=row[0], private_pem=row[1], created_at=row[2]) for row in rows]

    def add_key(self, key: KeyRecord, *, keep: int) -> None:
        with self._write() as db:
            db.execute("INSERT OR IGNORE INTO oauth_keys VALUES (?, ?, ?)",
                       (key.kid, key.private_pem, key.created_at))
            db.execute("DELETE FROM oauth_keys WHERE kid NOT IN (SELECT kid FROM oauth_keys "
                       "ORDER BY created_at DESC, kid LIMIT ?)", (keep,))

    # -- housekeeping -----------------------------------------------------------------
    def purge(self, now: float) -> None:
        with self._write() as db:
            db.execute("DELETE FROM oauth_codes WHERE expires_at <= ?", (now,))
            db.execute("DELETE FROM oauth_tokens WHERE expires_at <= ?", (now,))
            db.execute("DELETE FROM oauth_clients WHERE expires_at IS NOT NULL "
                       "AND expires_at <= ?", (now,))
            db.execute("DELETE FROM oauth_grants WHERE revoked = 1 OR (created_at <= ? AND "
                       "grant_id NOT IN (SELECT grant_id FROM oauth_tokens))",
                       (now - GRANT_GRACE,))
