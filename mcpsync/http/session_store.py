"""Where handshake-era sessions are written down, so that any worker process can serve them.

A 2025-era client names its session in ``Mcp-Session-Id`` and may send the next POST to
another gunicorn worker than the one that answered ``initialize``. Without a shared record
that worker has never heard of the session and answers 404 ("Could not find session"), the
most reported failure of multi-worker MCP deployments. With a :class:`SessionStore`, the
worker finds the record (negotiated version, client info and capabilities) and takes the
session up where the other left it.

What a record cannot carry is what lives in one process: an open SSE stream. A request's
progress and answer travel on its own POST, so they work on any worker; but a server
request (elicitation, sampling, roots) is answered by a separate POST, which must reach the
worker that asked, and the standalone GET stream only carries what its own worker sends.
Those need sticky routing, or a bus between the workers (``wsgi_app(bus=...)``, see
:mod:`mcpsync.http.relay`), or the 2026-07-28 era, which has no sessions at all. With a
bus, ``logging/setLevel`` and ``resources/subscribe`` are written to the record too
(:class:`SharedSessionState`), so every worker applies them.

:class:`FileSessionStore` keeps one small JSON file per session in a directory: enough for
several workers on one host. :class:`MemorySessionStore` serves several apps in one
process. Anything else (Redis, a database) is four methods and a ``capabilities`` property,
and four more to share state (the contract, :mod:`mcpsync.stores.sessions`); its ``save``
should honour :attr:`SessionRecord.lifetime` (the handshake timeout of a
session whose client has not come back yet), or such sessions linger until idle expiry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import StoreUnavailableError
from ..protocol.budget import current_budget
from ..protocol.deadline import Deadline
from ..stores.sessions import (
    SessionChange,
    SessionChanges,
    SessionRecord,
    SessionStore,
    SessionStoreCapabilities,
    SharedSessionState,
)

#: Seconds a save, touch or delete waits for :class:`FileSessionStore`'s lock outside a
#: request (inside one it takes what is left of the request's ``store_budget``).
LOCK_WAIT = 5.0

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process's threads only
    fcntl = None  # type: ignore[assignment]


def _positive(seconds: float) -> float:
    return max(0.0, min(seconds, threading.TIMEOUT_MAX))


class FileSessionStore(SessionChanges):
    """One JSON file per session in ``directory``, for workers on one host. Thread- and
    process-safe: files are replaced atomically, and a record idle (untouched) for longer
    than ``idle_timeout`` seconds (or than the ``lifetime`` it was saved with, until it is
    touched) counts as gone. Expired files are removed as they are
    found, and by :meth:`sweep`, which :meth:`save` runs at most once a minute.

    Also :class:`SharedSessionState`: each change is a read-modify-write under an
    exclusive lock on ``directory/.lock`` (``flock``; on a system without it, this
    process's threads only), which ``save`` and ``delete`` take too, so two workers
    subscribing at once lose neither and a change never brings an ended session back.
    :meth:`subscribers` reads every record: fine for the hundreds of sessions of one
    host, not for a large deployment (use Redis there)."""

    def __init__(self, directory: str | os.PathLike[str], *,
                 idle_timeout: float = 1800.0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.idle_timeout = idle_timeout
        self._next_sweep = 0.0
        self._thread_lock = threading.Lock()

    @property
    def capabilities(self) -> SessionStoreCapabilities:
        """Shared state: log levels and subscriptions (see :class:`SharedSessionState`)."""
        return SessionStoreCapabilities(shared_state=self)

    def _path(self, session_id: str) -> Path:
        # The id comes from a request header: hashed, it can never name another path.
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / f"{digest}.json"

    def _expired(self, path: Path) -> bool:
        try:
            return time.time() - path.stat().st_mtime > self.idle_timeout
        except FileNotFoundError:
            return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The directory's lock, for one read-modify-write. Waiting for it is a wait on
        another process (one stopped while holding it holds it for ever), so it ends by a
        deadline: what is left of the request's store budget when there is one, else
        :data:`LOCK_WAIT`; then :class:`~mcpsync.errors.StoreUnavailableError` (503)."""
        budget = current_budget()
        alone = Deadline(LOCK_WAIT, "the session store's lock")

        def waiting() -> contextlib.AbstractContextManager[Deadline]:
            # Each wait spends the request's budget (only the time it waits is charged);
            # outside a request both waits share one deadline.
            return (budget.spend(LOCK_WAIT) if budget is not None
                    else contextlib.nullcontext(alone))

        with waiting() as deadline:
            if not self._thread_lock.acquire(timeout=_positive(deadline.remaining())):
                raise self._busy(deadline)
        try:
            if fcntl is None:
                yield
                return
            fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                with waiting() as deadline:
                    self._flock(fd, deadline)
                yield
            finally:
                os.close(fd)  # releases the lock
        finally:
            self._thread_lock.release()

    def _flock(self, fd: int, deadline: Deadline) -> None:
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline.remaining()
                if left <= 0:
                    raise self._busy(deadline) from None
                time.sleep(min(delay, left))  # flock has no timed wait: poll, backing off
                delay = min(delay * 2, 0.05)

    def _busy(self, deadline: Deadline) -> StoreUnavailableError:
        return StoreUnavailableError(
            f"the session store at {self.directory} is locked by another process or thread "
            f"past its time budget ({deadline.what})")

    def save(self, record: SessionRecord) -> None:
        with self._locked():
            self._write(record)
            if record.lifetime is not None:
                self._expire_in(record.session_id, record.lifetime)
        if time.time() >= self._next_sweep:
            self._next_sweep = time.time() + 60.0
            self.sweep()

    def _write(self, record: SessionRecord) -> None:
        fd, temp = tempfile.mkstemp(dir=self.directory, prefix=".session-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(record.to_json())
            os.replace(temp, self._path(record.session_id))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
            raise

    def _expire_in(self, session_id: str, seconds: float) -> None:
        # A file expires ``idle_timeout`` after its mtime, which every worker reads with
        # one stat() and no parse: a shorter life is an mtime set back by the difference
        # (a :meth:`touch` sets it to now, so the idle timeout again).
        now = time.time()
        os.utime(self._path(session_id), (now, now - self.idle_timeout + seconds))

    def load(self, session_id: str) -> SessionRecord | None:
        path = self._path(session_id)
        if self._expired(path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return None
        try:
            record = SessionRecord.from_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return record if record is not None and record.session_id == session_id else None

    def touch(self, session_id: str) -> bool:
        path = self._path(session_id)
        if self._expired(path):
            return False
        try:
            os.utime(path)
        except FileNotFoundError:
            return False
        return True

    def delete(self, session_id: str) -> bool:
        with self._locked():
            try:
                self._path(session_id).unlink()
            except FileNotFoundError:
                return False
            return True

    def _change(self, session_id: str,
                change: SessionChange) -> None:
        with self._locked():
            record = self.load(session_id)
            if record is not None:
                self._write(change(record))

    def subscribers(self, uri: str) -> set[str]:
        found = set()
        for path in self.directory.glob("*.json"):
            if self._expired(path):
                continue
            try:
                record = SessionRecord.from_json(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            if record is not None and uri in record.subscriptions:
                found.add(record.session_id)
        return found

    def sweep(self) -> int:
        """Remove the files of expired sessions; how many were removed."""
        removed = 0
        for path in self.directory.glob("*.json"):
            if self._expired(path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed += 1
        return removed

    def __repr__(self) -> str:
        return f"FileSessionStore({str(self.directory)!r}, idle_timeout={self.idle_timeout})"


class MemorySessionStore(SessionChanges):
    """A :class:`SessionStore` and :class:`SharedSessionState` in this process's memory:
    for several apps in one process (mounts of one deployment behind an
    :class:`~mcpsync.http.bus.InProcessBus`) and for tests. Thread-safe. Like
    :class:`FileSessionStore`, a record idle (untouched) for longer than ``idle_timeout``
    seconds (or its saved ``lifetime``, until touched) is gone; at most ``max_sessions``
    records are kept (the least recently used goes first), a few hundred bytes each."""

    def __init__(self, *, idle_timeout: float = 1800.0, max_sessions: int = 100_000) -> None:
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self._lock = threading.Lock()
        # session id -> (record, last touched, monotonic); least recently used first.
        self._records: dict[str, tuple[SessionRecord, float]] = {}

    @property
    def capabilities(self) -> SessionStoreCapabilities:
        """Shared state: log levels and subscriptions (see :class:`SharedSessionState`)."""
        return SessionStoreCapabilities(shared_state=self)

    def _live(self, session_id: str, now: float) -> SessionRecord | None:
        entry = self._records.get(session_id)
        if entry is None:
            return None
        if now - entry[1] > self.idle_timeout:
            del self._records[session_id]
            return None
        return entry[0]

    def save(self, record: SessionRecord) -> None:
        now = time.monotonic()
        if record.lifetime is not None:  # as if touched that much longer ago (see _live)
            now -= self.idle_timeout - record.lifetime
        with self._lock:
            self._records.pop(record.session_id, None)
            self._records[record.session_id] = (record, now)
            while len(self._records) > self.max_sessions:
                del self._records[next(iter(self._records))]

    def load(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            return self._live(session_id, time.monotonic())

    def touch(self, session_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            record = self._live(session_id, now)
            if record is None:
                return False
            del self._records[session_id]
            self._records[session_id] = (record, now)
            return True

    def delete(self, session_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            found = self._live(session_id, now) is not None
            self._records.pop(session_id, None)
            return found

    def _change(self, session_id: str,
                change: SessionChange) -> None:
        with self._lock:
            entry = self._records.get(session_id)
            if entry is None or time.monotonic() - entry[1] > self.idle_timeout:
                return
            self._records[session_id] = (change(entry[0]), entry[1])

    def subscribers(self, uri: str) -> set[str]:
        now = time.monotonic()
        with self._lock:
            return {sid for sid, (record, touched) in self._records.items()
                    if uri in record.subscriptions and now - touched <= self.idle_timeout}

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __repr__(self) -> str:
        return f"MemorySessionStore(idle_timeout={self.idle_timeout})"


# The contract's names stay importable here (``mcpsync.http`` and the app take them from
# this module); they are defined in :mod:`mcpsync.stores.sessions`.
__all__ = ["FileSessionStore", "MemorySessionStore", "SessionRecord", "SessionStore",
           "SessionStoreCapabilities", "SharedSessionState"]
