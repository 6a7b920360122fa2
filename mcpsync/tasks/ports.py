"""The port pair of a task's context: its lifetime and its outlet both live in the store.

A task outlives the request that created it, and ``tasks/cancel``, ``tasks/get`` and
``tasks/update`` may be served by another worker process sharing the store, so the store is
the one meeting point:

* :class:`TaskLifetime`: cancellation comes from the record. ``check_cancelled`` reads it
  (at most every 100 ms), ``sleep`` waits on the store's change signal; a record that is
  gone (expired) or a server that stops cancels too.
* :class:`TaskOutlet`: on the v2 surface a question becomes the task's ``inputRequests``
  (status ``input_required``) and blocks until ``tasks/update`` delivers the answer; on
  v1 it is a real request to the client over the session, tagged with the related-task
  ``_meta``. Progress and logs go to the session's own channel when there is one (stdio,
  a handshake-era session); a progress message is also the task's ``statusMessage``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..dispatch.ports import SessionHandle, progress_params
from ..dispatch.questions import INPUT_REQUEST_METHODS, InputRequired
from ..errors import MCPError, PeerRequestError, ProtocolStateError, RequestCancelledError
from ..stores.tasks import TaskRecord, TaskStore
from .wire import related, v1_task

logger = logging.getLogger("mcpsync.tasks")

#: How long one wait on the store lasts before the runner looks at its own stop flag.
_WAIT_SLICE = 0.25
#: How often ``check_cancelled`` may read the store (a tight loop must not hammer it).
_CHECK_EVERY = 0.1


class TaskLifetime:
    """A task's lifetime: until it is cancelled (by ``tasks/cancel`` on any worker), gone
    (expired), or the server is stopping. Never closed: the request that created it is
    long answered, and the task sends on its own account. Thread-safe."""

    def __init__(self, store: TaskStore, task_id: str, stop: threading.Event) -> None:
        self._store = store
        self._task_id = task_id
        self._stop = stop
        #: Set once the task is known to be cancelled (here or by another worker).
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._version = 0
        self._last_check = 0.0

    @property
    def cancelled(self) -> threading.Event:
        return self._cancelled

    @property
    def closed(self) -> bool:
        return False

    def note(self, version: int, status: str) -> None:
        """What a store write (ours or another worker's) said of the record."""
        with self._lock:
            self._version = max(self._version, version)
        if status == "cancelled":
            self._cancelled.set()

    def check_cancelled(self) -> None:
        if self._stop.is_set():
            self._cancelled.set()
        if not self._cancelled.is_set():
            now = time.monotonic()
            if now - self._last_check >= _CHECK_EVERY:
                self._last_check = now
                record = self._store.get(self._task_id)
                if record is None:
                    self._cancelled.set()
                else:
                    self.note(record.version, record.status)
        if self._cancelled.is_set():
            raise RequestCancelledError(f"task {self._task_id} was cancelled")

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.check_cancelled()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.wait_change(min(remaining, _WAIT_SLICE))

    def wait_change(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the record to change past the version last seen."""
        if self._stop.wait(0):
            self._cancelled.set()
            return
        with self._lock:
            version = self._version
        record = self._store.wait(self._task_id, version, timeout)
        if record is None:
            self._cancelled.set()
        else:
            self.note(record.version, record.status)


class TaskOutlet:
    """Where a task's messages go: its questions and status through the store, its
    notifications on the session's channel while there is one. Thread-safe."""

    def __init__(
        self,
        lifetime: TaskLifetime,
        *,
        task_id: str,
        surface: str,
        store: TaskStore,
        session: SessionHandle,
        channel_usable: bool,
        request_timeout: float,
        publish: Callable[[TaskRecord], None] | None,
    ) -> None:
        self._lifetime = lifetime
        self._task_id = task_id
        self._surface = surface
        self._store = store
        self._session = session
        self._channel_usable = channel_usable
        self._request_timeout = request_timeout
        self._publish = publish
        self._lock = threading.Lock()
        self._next_key = 0
        self._asked: dict[str, Any] = {}
        self._last_progress: float | None = None
        # ask_all: questions collected on this thread instead of asked one by one.
        self._collecting: dict[int, dict[str, Any]] = {}
        self._prepared: dict[int, list[dict[str, Any]]] = {}

    def _noted(self, record: TaskRecord | None, *, announce: bool = False) -> None:
        if record is not None:
            self._lifetime.note(record.version, record.status)
            if announce:
                self.announce(record)

    def announce(self, record: TaskRecord | None) -> None:
        """Tell the client its task's new status: v1, ``notifications/tasks/status`` on
        the session that created it; v2, ``notifications/tasks`` on the listens following
        the task. Both are optional: a client that misses one polls."""
        if record is None:
            return
        if self._surface == "v2":
            if self._publish is not None:
                self._publish(record)
            return
        try:
            self.notify("notifications/tasks/status", v1_task(record))
        except Exception:  # the session went away meanwhile: the client polls instead
            logger.debug("task %s: status notification not sent", self._task_id)

    # -- talking back --------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        # Dropped where there is no channel (a 2026-07-28 HTTP request's ended with its
        # response).
        if self._channel_usable and not self._session.ended.is_set():
            self._session.connection.notify(method, params)

    def progress(self, token: str | int | None, progress: float, total: float | None,
                 message: str | None) -> None:
        # The message becomes the task's ``statusMessage``; with a ``progressToken`` and a
        # session channel, a progress notification goes out too.
        with self._lock:
            if self._last_progress is not None and progress <= self._last_progress:
                return
            self._last_progress = progress
        if message is not None:
            self._noted(self._store.update(self._task_id, status_message=message))
        if token is None:
            return
        self.notify("notifications/progress", progress_params(token, progress, total, message))

    def close_stream(self) -> bool:
        return False  # the request that created the task is long answered

    # -- asking the client -----------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        """Ask the client ``method`` on behalf of the task; block for the answer."""
        if self._surface == "v1":
            return self._request_v1(method, params, timeout)
        if method not in INPUT_REQUEST_METHODS:
            raise ProtocolStateError(f"a task cannot ask {method}: an input request is one "
                                     "of " + ", ".join(INPUT_REQUEST_METHODS))
        request: dict[str, Any] = {"method": method}
        if params is not None:
            request["params"] = params
        ident = threading.get_ident()
        prepared = self._prepared.get(ident)
        if prepared:
            return prepared.pop(0)
        with self._lock:
            key = f"q{self._next_key}"
            self._next_key += 1
        collecting = self._collecting.get(ident)
        if collecting is not None:
            collecting[key] = request
            raise InputRequired({key: request})
        return self._await_answers({key: request}, timeout)[key]

    def _await_answers(self, requests: dict[str, Any],
                       timeout: float | None) -> dict[str, dict[str, Any]]:
        """Publish ``requests`` as the task's ``inputRequests`` and block until
        ``tasks/update`` answered every one; the answers by key."""
        with self._lock:
            self._asked.update(requests)
            asked = dict(self._asked)
        record = self._store.update(self._task_id, status="input_required",
                                    input_requests=asked)
        if record is None or record.terminal:
            self._lifetime.cancelled.set()
            self._lifetime.check_cancelled()
        assert record is not None
        self._noted(record, announce=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        answers: dict[str, dict[str, Any]] = {}
        try:
            while len(answers) < len(requests):
                missing = [key for key in requests if key not in answers]
                taken = {key: value for key, value in
                         self._store.take_responses(self._task_id, missing).items()
                         if isinstance(value, dict)}
                if len(answers) + len(taken) == len(requests):
                    answers.update(taken)
                    break
                if taken:
                    # Answered keys leave inputRequests at once; the rest stay pending.
                    answers.update(taken)
                    with self._lock:
                        for key in taken:
                            self._asked.pop(key, None)
                        asked = dict(self._asked)
                    self._noted(self._store.update(self._task_id, input_requests=asked))
                self._lifetime.check_cancelled()
                if deadline is not None and time.monotonic() >= deadline:
                    raise MCPError(f"no answer to the task's input requests within {timeout} s")
                self._lifetime.wait_change(_WAIT_SLICE)
        finally:
            with self._lock:
                for key in requests:
                    self._asked.pop(key, None)
                asked = dict(self._asked)
            status = "input_required" if asked else "working"
            self._noted(self._store.update(self._task_id, status=status,
                                           input_requests=asked or None), announce=True)
        return answers

    def _request_v1(self, method: str, params: dict[str, Any] | None,
                    timeout: float | None) -> dict[str, Any]:
        if not self._channel_usable or self._session.ended.is_set():
            raise ProtocolStateError(f"cannot ask {method}: the session that created task "
                                     f"{self._task_id} has ended")
        sent = dict(params or {})
        sent["_meta"] = {**dict(sent.get("_meta") or {}), **related(self._task_id)}
        self._noted(self._store.update(self._task_id, status="input_required"), announce=True)
        try:
            return self._session.connection.request(
                method, sent, timeout=timeout if timeout is not None else self._request_timeout)
        except MCPError as exc:
            raise PeerRequestError(method, exc) from exc
        finally:
            self._noted(self._store.update(self._task_id, status="working"), announce=True)

    def ask_all(self, questions: Sequence[Callable[[], Any]]) -> list[Any]:
        """On the v2 surface every question is an ``inputRequests`` entry at the same time
        (a client may answer them one by one; the task stays ``input_required`` until the
        last answer). On v1 they are asked one after another, as real requests."""
        if self._surface == "v1":
            return [ask() for ask in questions]
        ident = threading.get_ident()
        collected: dict[str, Any] = {}
        self._collecting[ident] = collected
        answers: list[Any] = []
        unanswered: dict[int, list[str]] = {}
        try:
            for index, ask in enumerate(questions):
                before = set(collected)
                try:
                    answers.append(ask())
                except InputRequired:
                    answers.append(None)
                    unanswered[index] = [key for key in collected if key not in before]
        finally:
            del self._collecting[ident]
        if not collected:
            return answers
        got = self._await_answers(collected, None)
        # Run each unanswered question again with its own answers ready: its request()
        # returns them in order (a question that asks more after that asks afresh).
        try:
            for index, keys in unanswered.items():
                self._prepared[ident] = [got[key] for key in keys]
                answers[index] = questions[index]()
        finally:
            self._prepared.pop(ident, None)
        return answers
