"""The table of our outbound requests awaiting a response.

Each entry is a :class:`concurrent.futures.Future`. The lock guards only dict operations:
futures are resolved by the caller after ``pop``, outside the lock, so a callback on a
future can never run while the table is locked.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from ..protocol.jsonrpc import RequestId


class Pending:
    """One outbound request in flight."""

    __slots__ = ("future", "method", "on_progress", "ordered", "parent", "progress_token")

    def __init__(
        self,
        method: str,
        parent: RequestId | None = None,
        progress_token: Any = None,
        on_progress: Any = None,
    ) -> None:
        self.future: Future[dict[str, Any]] = Future()
        self.method = method
        self.parent = parent
        self.progress_token = progress_token
        self.on_progress = on_progress
        #: Resolve behind queued progress callbacks (False when the caller *is* the thread
        #: that runs them, which would otherwise wait on itself).
        self.ordered = on_progress is not None


class PendingTable:
    """Outbound requests by id, and by parent (the inbound request that made them). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[RequestId, Pending] = {}
        self._by_token: dict[Any, Pending] = {}
        self._children: dict[RequestId, set[RequestId]] = {}
        self._closed = False

    def add(self, request_id: RequestId, entry: Pending) -> bool:
        """Register ``entry``; False when the table is closed (the connection ended)."""
        with self._lock:
            if self._closed:
                return False
            self._by_id[request_id] = entry
            if entry.progress_token is not None:
                self._by_token[entry.progress_token] = entry
            if entry.parent is not None:
                self._children.setdefault(entry.parent, set()).add(request_id)
            return True

    def pop(self, request_id: RequestId) -> Pending | None:
        with self._lock:
            entry = self._by_id.pop(request_id, None)
            if entry is not None:
                self._unlink(request_id, entry)
            return entry

    def _unlink(self, request_id: RequestId, entry: Pending) -> None:
        if entry.progress_token is not None:
            self._by_token.pop(entry.progress_token, None)
        if entry.parent is not None:
            siblings = self._children.get(entry.parent)
            if siblings is not None:
                siblings.discard(request_id)
                if not siblings:
                    del self._children[entry.parent]

    def by_progress_token(self, token: Any) -> Pending | None:
        with self._lock:
            return self._by_token.get(token)

    def has(self, request_id: RequestId) -> bool:
        """Whether ``request_id`` is pending (read without the lock: one dict lookup)."""
        return request_id in self._by_id

    @property
    def empty(self) -> bool:
        """Whether nothing is pending (read without the lock: one length, exact under the
        GIL; the read role asks it under its own lock, see engine/read_role.py)."""
        return not self._by_id

    @property
    def has_children(self) -> bool:
        """Whether any request was made on behalf of an inbound one (read without the
        lock: a hint that lets the common case skip :meth:`pop_children`)."""
        return bool(self._children)

    def pop_children(self, parent: RequestId) -> list[tuple[RequestId, Pending]]:
        """Remove and return the requests made on behalf of inbound request ``parent``."""
        with self._lock:
            ids = self._children.pop(parent, set())
            popped = []
            for request_id in ids:
                entry = self._by_id.pop(request_id, None)
                if entry is not None:
                    if entry.progress_token is not None:
                        self._by_token.pop(entry.progress_token, None)
                    popped.append((request_id, entry))
            return popped

    def close(self) -> list[Pending]:
        """Refuse new entries; remove and return every pending one."""
        with self._lock:
            self._closed = True
            entries = list(self._by_id.values())
            self._by_id.clear()
            self._by_token.clear()
            self._children.clear()
            return entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)
