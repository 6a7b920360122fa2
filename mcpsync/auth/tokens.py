"""Tokens, and where they are kept between runs.

A :class:`TokenStorage` keeps one JSON-able record per MCP server origin: the issued
tokens, the issuer that issued them, and the client registration per issuer (so a
registration is reused with its own authorization server and never shown to another).
:class:`MemoryTokenStorage` is the default (a process's lifetime);
:class:`FileTokenStorage` keeps records in one JSON file readable by its owner only
(mode 0600), for CLIs and notebooks that should not authorize again on every run.

Access and refresh tokens and client secrets never appear in a ``repr``, a log line or an
exception message.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

#: Refresh this many seconds before a token's stated expiry (clock skew, request time).
EXPIRY_SKEW: Final = 30.0
#: The most servers a :class:`MemoryTokenStorage` remembers (least recently saved go).
MEMORY_MAX_RECORDS: Final = 1024
#: The largest token file :class:`FileTokenStorage` reads (bytes); a larger one is refused.
FILE_MAX_BYTES: Final = 1024 * 1024


@dataclass(frozen=True)
class Token:
    """An access token as the token endpoint issued it."""

    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    expires_at: float | None = None
    refresh_token: str | None = field(default=None, repr=False)
    scope: str | None = None
    issuer: str | None = None

    def expired(self, now: float | None = None) -> bool:
        if self.expires_at is None:
            return False
        return (now if now is not None else time.time()) >= self.expires_at - EXPIRY_SKEW

    @classmethod
    def from_response(cls, body: dict[str, Any], issuer: str,
                      previous: Token | None = None) -> Token:
        """From a token endpoint's JSON (validated by the caller to hold ``access_token``).
        A refresh that issues no new refresh token keeps the old one (RFC 6749 §6)."""
        expires_in = body.get("expires_in")
        expires_at = (time.time() + float(expires_in)
                      if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
                      and 0 < expires_in < 10 ** 9 else None)
        refresh = body.get("refresh_token")
        scope = body.get("scope")
        return cls(str(body["access_token"]), str(body.get("token_type") or "Bearer"),
                   expires_at,
                   refresh if isinstance(refresh, str) else (
                       previous.refresh_token if previous else None),
                   scope if isinstance(scope, str) else (previous.scope if previous else None),
                   issuer)

    def to_record(self) -> dict[str, Any]:
        return {"access_token": self.access_token, "token_type": self.token_type,
                "expires_at": self.expires_at, "refresh_token": self.refresh_token,
                "scope": self.scope, "issuer": self.issuer}

    @classmethod
    def from_record(cls, record: Any) -> Token | None:
        if not isinstance(record, dict) or not isinstance(record.get("access_token"), str):
            return None
        expires = record.get("expires_at")
        return cls(record["access_token"], str(record.get("token_type") or "Bearer"),
                   float(expires) if isinstance(expires, (int, float)) else None,
                   record.get("refresh_token") if isinstance(record.get("refresh_token"), str)
                   else None,
                   record.get("scope") if isinstance(record.get("scope"), str) else None,
                   record.get("issuer") if isinstance(record.get("issuer"), str) else None)


@runtime_checkable
class TokenStorage(Protocol):
    """Where :class:`~mcpsync.auth.OAuth` keeps its record per server (JSON-able dicts).

    ``load`` returns ``None`` for an unknown key. Both may be called from several threads;
    they are never called while the OAuth object holds a lock.
    """

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, record: dict[str, Any]) -> None: ...


class MemoryTokenStorage:
    """Records in memory, for this process only; at most ``max_records`` servers."""

    def __init__(self, max_records: int = MEMORY_MAX_RECORDS) -> None:
        self.max_records = max_records
        self._records: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._records.get(key)
            return json.loads(json.dumps(record)) if record is not None else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        copy = json.loads(json.dumps(record))
        with self._lock:
            self._records[key] = copy
            self._records.move_to_end(key)
            while len(self._records) > self.max_records:
                self._records.popitem(last=False)

    def __repr__(self) -> str:
        return f"MemoryTokenStorage({len(self._records)} servers)"


class FileTokenStorage:
    """Records in one JSON file, created with mode 0600 and replaced atomically.

    Why a file: a CLI or a notebook kernel that restarts should not send its user through
    the browser again while a refresh token is still good. The file holds secrets, so it
    is written readable by its owner only (and re-written so if its mode was widened).
    """

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = FILE_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read(self.max_bytes + 1)
        except FileNotFoundError:
            return {}
        if len(raw) > self.max_bytes:
            raise ValueError(f"{self.path} is larger than {self.max_bytes} bytes; not read")
        try:
            data = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return {}  # a damaged file is treated as empty (it is rewritten on save)
        return data if isinstance(data, dict) else {}

    def load(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._read().get(key)
        return record if isinstance(record, dict) else None

    def save(self, key: str, record: dict[str, Any]) -> None:
        with self._lock:
            data = self._read()
            data[key] = record
            encoded = json.dumps(data, indent=1, sort_keys=True).encode("utf-8")
            if len(encoded) > self.max_bytes:
                raise ValueError(f"the token file would exceed {self.max_bytes} bytes")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".mcpsync-tokens-", dir=str(self.path.parent))
            try:
                os.fchmod(fd, 0o600)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(encoded)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise

    def __repr__(self) -> str:
        return f"FileTokenStorage({str(self.path)!r})"
