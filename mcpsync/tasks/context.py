"""The context a tool handler gets when it runs as a task.

A task outlives the request that created it, so its context cannot be that request's
:class:`~mcpsync.dispatch.context.HandlerContext`: it is a sibling of
:class:`~mcpsync.dispatch.context.DetachedContext` whose state lives in the task store.
The handler is the same plain blocking function either way; what changes underneath:

* **Cancellation** comes from the store: ``tasks/cancel`` may be served by another worker
  process, so the runner cannot rely on an in-memory flag alone. ``check_cancelled`` reads
  the record (at most every 100 ms), ``sleep`` waits on the store's change signal.
* **Questions** (``elicit``, ``sample``, ``list_roots``, ``ask_all``): on the v2 surface
  they become the task's ``inputRequests`` (status ``input_required``) and block until
  ``tasks/update`` delivers the answers; on the v1 surface they are real requests to the
  client over the session, tagged with the related-task ``_meta`` (status
  ``input_required`` while they wait).
* **Progress and logs** go to the session's own channel when there is one (stdio, a
  handshake-era session); a progress message is also the task's ``statusMessage``, which
  every surface shows on ``tasks/get``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..dispatch.context import (
    ServerSideMixin,
    SessionHandle,
    _log_params,
    progress_token_of,
)
from ..dispatch.questions import INPUT_REQUEST_METHODS, InputRequired
from ..dispatch.session_info import SessionInfo
from ..errors import MCPError, PeerRequestError, ProtocolStateError, RequestCancelledError
from .store import TaskRecord, TaskStore
from .wire import related, v1_task

if TYPE_CHECKING:
    from ..dispatch.transport import TransportContext
    from ..types.client_features import CreateMessageResult, ElicitResult
    from ..types.resources import Root

logger = logging.getLogger("mcpsync.tasks")

#: How long one wait on the store lasts before the runner looks at its own stop flag.
_WAIT_SLICE = 0.25
#: How often ``check_cancelled`` may read the store (a tight loop must not hammer it).
_CHECK_EVERY = 0.1


class TaskContext(ServerSideMixin):
    """What a handler running as a task may know and do. Thread-safe.

    Declared like any context (a parameter annotated ``HandlerContext``): the handler is
    the one a plain call runs, so it uses the same methods.
    """

    def __init__(
        self,
        *,
        task_id: str,
        surface: str,
        store: TaskStore,
        session: SessionHandle,
        info: SessionInfo,
        transport: TransportContext,
        method: str,
        params: dict[str, Any],
        channel_usable: bool,
        stop: threading.Event,
        request_timeout: float,
        publish: Callable[[TaskRecord], None] | None = None,
    ) -> None:
        self.task_id = task_id
        #: ``"v1"`` or ``"v2"``: which task surface created this task.
        self.surface = surface
        self._store = store
        self._session = session
        self._info = info
        self.transport = transport
        self.method = method
        self.params = params
        meta = params.get("_meta")
        self.meta: dict[str, Any] = meta if isinstance(meta, dict) else {}
        self._channel_usable = channel_usable
        self._stop = stop
        self._request_timeout = request_timeout
        self._publish = publish
        #: Set once the task is known to be cancelled (here or by another worker).
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._version = 0
        self._last_check = 0.0
        self._next_key = 0
        self._asked: dict[str, Any] = {}
        self._last_progress: float | None = None
        # ask_all: questions collected on this thread instead of asked one by one.
        self._collecting: dict[int, dict[str, Any]] = {}
        self._prepared: dict[int, list[dict[str, Any]]] = {}

    # -- what the request was ------------------------------------------------------------

    @property
    def request_id(self) -> str:
        """The task id (the request that created the task is long answered)."""
        return self.task_id

    @property
    def session(self) -> SessionInfo:
        return self._info

    @property
    def auth(self) -> Any:
        return self.transport.auth

    @property
    def progress_token(self) -> str | int | None:
        return progress_token_of(self.meta)

    @property
    def closed(self) -> bool:
        return False

    # -- cancellation --------------------------------------------------------------------

    def _note(self, version: int, status: str) -> None:
        with self._lock:
            self._version = max(self._version, version)
        if status == "cancelled":
            self.cancelled.set()

    def announce(self, record: TaskRecord | None) -> None:
        """Tell the client its task's new status: v1, ``notifications/tasks/status`` on
        the session that created it; v2, ``notifications/tasks`` on the listens following
        the task. Both are optional: a client that misses one polls."""
        if record is None:
            return
        if self.surface == "v2":
            if self._publish is not None:
                self._publish(record)
            return
        try:
            self.notify("notifications/tasks/status", v1_task(record))
        except Exception:  # the session went away meanwhile: the client polls instead
            logger.debug("task %s: status notification not sent", self.task_id)

    def check_cancelled(self) -> None:
        """Raise :class:`~mcpsync.errors.RequestCancelledError` once the task is cancelled
        (by ``tasks/cancel`` on any worker), gone (expired), or the server is stopping."""
        if self._stop.is_set():
            self.cancelled.set()
        if not self.cancelled.is_set():
            now = time.monotonic()
            if now - self._last_check >= _CHECK_EVERY:
                self._last_check = now
                record = self._store.get(self.task_id)
                if record is None:
                    self.cancelled.set()
                else:
                    self._note(record.version, record.status)
        if self.cancelled.is_set():
            raise RequestCancelledError(f"task {self.task_id} was cancelled")

    def sleep(self, seconds: float) -> None:
        """Sleep like :func:`time.sleep`, but wake and raise as soon as the task is
        cancelled."""
        deadline = time.monotonic() + seconds
        while True:
            self.check_cancelled()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wait_change(min(remaining, _WAIT_SLICE))

    def _wait_change(self, timeout: float) -> None:
        if self._stop.wait(0):
            self.cancelled.set()
            return
        with self._lock:
            version = self._version
        record = self._store.wait(self.task_id, version, timeout)
        if record is None:
            self.cancelled.set()
        else:
            self._note(record.version, record.status)

    # -- talking back --------------------------------------------------------------------

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification on the session's own channel; dropped where there is none
        (a 2026-07-28 HTTP request's channel ended with its response)."""
        if self._channel_usable and not self._session.ended.is_set():
            self._session.connection.notify(method, params)

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """Report progress: the message becomes the task's ``statusMessage``; with a
        ``progressToken`` and a session channel, a progress notification goes out too."""
        with self._lock:
            if self._last_progress is not None and progress <= self._last_progress:
                return
            self._last_progress = progress
        if message is not None:
            record = self._store.update(self.task_id, status_message=message)
            if record is not None:
                self._note(record.version, record.status)
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.notify("notifications/progress", params)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        params = _log_params(self._session, level, data, logger)
        if params is not None:
            self.notify("notifications/message", params)

    # -- asking the client -----------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None) -> dict[str, Any]:
        """Ask the client ``method`` on behalf of the task; block for the answer."""
        if self.surface == "v1":
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
        record = self._store.update(self.task_id, status="input_required", input_requests=asked)
        if record is None or record.terminal:
            self.cancelled.set()
            self.check_cancelled()
        assert record is not None
        self._note(record.version, record.status)
        self.announce(record)
        deadline = None if timeout is None else time.monotonic() + timeout
        answers: dict[str, dict[str, Any]] = {}
        try:
            while len(answers) < len(requests):
                missing = [key for key in requests if key not in answers]
                taken = {key: value for key, value in
                         self._store.take_responses(self.task_id, missing).items()
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
                    record = self._store.update(self.task_id, input_requests=asked)
                    if record is not None:
                        self._note(record.version, record.status)
                self.check_cancelled()
                if deadline is not None and time.monotonic() >= deadline:
                    raise MCPError(f"no answer to the task's input requests within {timeout} s")
                self._wait_change(_WAIT_SLICE)
        finally:
            with self._lock:
                for key in requests:
                    self._asked.pop(key, None)
                asked = dict(self._asked)
            status = "input_required" if asked else "working"
            record = self._store.update(self.task_id, status=status, input_requests=asked or None)
            if record is not None:
                self._note(record.version, record.status)
                self.announce(record)
        return answers

    def _request_v1(self, method: str, params: dict[str, Any] | None,
                    timeout: float | None) -> dict[str, Any]:
        if not self._channel_usable or self._session.ended.is_set():
            raise ProtocolStateError(f"cannot ask {method}: the session that created task "
                                     f"{self.task_id} has ended")
        sent = dict(params or {})
        sent["_meta"] = {**dict(sent.get("_meta") or {}), **related(self.task_id)}
        record = self._store.update(self.task_id, status="input_required")
        if record is not None:
            self._note(record.version, record.status)
            self.announce(record)
        try:
            return self._session.connection.request(
                method, sent, timeout=timeout if timeout is not None else self._request_timeout)
        except MCPError as exc:
            raise PeerRequestError(method, exc) from exc
        finally:
            record = self._store.update(self.task_id, status="working")
            if record is not None:
                self._note(record.version, record.status)
                self.announce(record)

    def elicit(self, message: str, schema: dict[str, Any] | type, *,
               timeout: float | None = None) -> ElicitResult:
        """Ask the user to fill a form (see :meth:`HandlerContext.elicit`)."""
        from ..dispatch.reverse import elicit

        return elicit(self, message, schema, timeout=timeout)

    def elicit_url(self, message: str, url: str, *, elicitation_id: str | None = None,
                   timeout: float | None = None) -> ElicitResult:
        """Ask the user to open ``url`` (see :meth:`HandlerContext.elicit_url`)."""
        from ..dispatch.reverse import elicit_url

        return elicit_url(self, message, url, elicitation_id=elicitation_id, timeout=timeout)

    def detach(self) -> TaskContext:
        """The context itself: a task's context already outlives the request that
        started it (so a handler written for plain calls that detaches still works)."""
        return self

    def sample(self, messages: str | Sequence[Any], *, max_tokens: int,
               **options: Any) -> CreateMessageResult:
        """Ask the client's model (see :meth:`HandlerContext.sample`)."""
        from ..dispatch.reverse import sample

        return sample(self, messages, max_tokens=max_tokens, **options)

    def list_roots(self, *, timeout: float | None = None) -> list[Root]:
        """The client's roots (see :meth:`HandlerContext.list_roots`)."""
        from ..dispatch.reverse import list_roots

        return list_roots(self, timeout=timeout)

    def ask_all(self, *questions: Callable[[], Any]) -> list[Any]:
        """Ask several questions at once; their answers, in order.

        On the v2 surface every question is an ``inputRequests`` entry at the same time (a
        client may answer them one by one; the task stays ``input_required`` until the
        last answer). On v1 they are asked one after another, as real requests.
        """
        if self.surface == "v1":
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
