"""Running a task in another process than the one that created it (a Celery worker, say).

The creating process stores the record and queues :func:`payload` (plain JSON); any
process that imports the same server definition and reaches the same store runs it with
:func:`run_payload`. Nothing but the store joins the two, so ``tasks/get``,
``tasks/cancel``, ``tasks/update`` and ``tasks/result`` work unchanged on any web worker.

What a task can do from there:

* progress, cancellation, ``sleep``, and on the tasks extension (v2) its questions
  (``elicit``, ``sample``, ``ask_all``: ``inputRequests`` answered by ``tasks/update``) all
  go through the store, so they work as on a thread;
* progress and log *notifications* have no session channel here: a progress message is
  still the task's ``statusMessage``, and log messages go to this process's ``logging``
  (logger ``mcpsync.tasks.remote``), where the worker's own logs are;
* a 2025-11-25 (v1) task cannot send requests over the session that created it (that
  session lives in another process): its questions are refused with a clear
  :class:`~mcpsync.errors.ProtocolStateError`.

**Trust.** The broker is not trusted: whoever can write to it could otherwise name any
tool and arguments in a live task's name. So :func:`payload` signs the message (HMAC-SHA256
under a key derived from the server's ``request_state_key``, which web and worker
processes share), and :func:`run_payload` runs nothing whose signature is missing or wrong,
or whose tool, owner or surface differ from the task's record: the task then ends
``failed``, saying why, and the tool never runs.

**Claiming.** A task runs only once it is claimed: its record must still be live. A task
cancelled while queued is never run. A tool that is not ``retry_safe`` is claimed with
this process as its ``runner`` (so a store that watches runners fails it when this
process dies: see the store's heartbeat); met a second time (a redelivery after a lost
worker) it is failed, naming the runner that was lost, instead of run twice. A retry-safe
tool's task has no runner: the queue delivers it again when its worker is lost, and it
runs again, keeping its earlier progress.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import socket
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

from ..dispatch.inbound import TransportContext
from ..dispatch.ports import SessionInfo
from ..errors import INTERNAL_ERROR, ProtocolStateError
from ..protocol.jsonrpc import RequestId
from ..stores.tasks import TaskRecord, runner_id
from .context import TaskContext
from .executor import QUEUED_PREFIX

if TYPE_CHECKING:
    from ..server.server import ServerCore
    from .executor import TaskLaunch
    from .surface import TaskSurfaces

log = logging.getLogger("mcpsync.tasks.remote")

__all__ = ["lost_runner_message", "payload", "run_payload", "sign_payload"]

#: What the server's key is turned into for task messages, so that a signature made for
#: one use (a ``requestState``) can never pass for another (a task message).
_PURPOSE = b"mcpsync task message v1"
#: The field of a task message that holds its signature.
SIGNATURE = "signature"

_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
               "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
               "alert": logging.CRITICAL, "emergency": logging.CRITICAL}


def _signature(key: bytes, body: dict[str, Any]) -> str:
    task_key = hmac.new(key, _PURPOSE, hashlib.sha256).digest()
    canonical = json.dumps({k: v for k, v in body.items() if k != SIGNATURE}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    digest = hmac.new(task_key, canonical, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def sign_payload(key: bytes, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` (a task message) with its signature under ``key`` (the server's
    ``request_state_key``): what :func:`run_payload` checks before running anything."""
    return {**body, SIGNATURE: _signature(key, body)}


def signed(key: bytes, data: dict[str, Any]) -> bool:
    """Whether ``data`` carries the signature ``key`` gives it (compared in constant time)."""
    given = data.get(SIGNATURE)
    return isinstance(given, str) and hmac.compare_digest(given, _signature(key, data))


def payload(launch: TaskLaunch, key: bytes) -> dict[str, Any]:
    """What another process needs to run ``launch``: JSON only (no headers, no tokens),
    signed with ``key`` (the server's ``request_state_key``)."""
    info = launch.info
    return sign_payload(key, {
        "task_id": launch.task_id, "tool": launch.tool, "surface": launch.surface,
        "owner": launch.owner, "params": launch.params,
        "info": {"protocol_version": info.protocol_version, "client_info": info.client_info,
                 "client_capabilities": info.client_capabilities,
                 "session_id": info.session_id},
        "transport": launch.transport, "v1_failed_on_error": launch.v1_failed_on_error,
        "retry_safe": launch.retry_safe,
    })


def lost_runner_message(runner: str) -> str:
    """The ``statusMessage`` of a task whose process was lost mid-run."""
    host, _, rest = runner.partition(":")
    pid = rest.partition(":")[0]
    return (f"the worker running this task was lost (pid {pid} on {host}); the tool is not "
            "retry_safe, so it was not run again")


class _RemoteChannel:
    """The session channel of a task run in another process: notifications it has no
    client for are dropped (log messages go to ``logging``), requests are refused."""

    def __init__(self, task_id: str) -> None:
        self._task_id = task_id

    def notify(self, method: str, params: dict[str, Any] | None = None, *,
               related_request_id: RequestId | None = None) -> None:
        if method == "notifications/message" and params is not None:
            level = _LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            log.log(level, "task %s: %s", self._task_id, params.get("data"))

    def request(self, method: str, params: dict[str, Any] | None = None, *,
                timeout: float | None = None,
                on_progress: Callable[[dict[str, Any]], None] | None = None,
                parent: RequestId | None = None,
                related_request_id: RequestId | None = None) -> dict[str, Any]:
        raise ProtocolStateError(
            f"task {self._task_id} runs in another process than the 2025-11-25 session "
            f"that created it, so it cannot ask the client {method}: ask through the tasks "
            "extension (inputRequests), or run this tool on the thread executor")


class _RemoteSession:
    """The session a remote task's context sees: the client as the creating request saw
    it, a channel with no client behind it, never ended."""

    def __init__(self, server: ServerCore, info: SessionInfo, task_id: str) -> None:
        self.server = server
        self._info = info
        self._channel = _RemoteChannel(task_id)
        self._ended = threading.Event()

    @property
    def info(self) -> SessionInfo:
        return self._info

    @property
    def connection(self) -> _RemoteChannel:
        return self._channel

    @property
    def ended(self) -> threading.Event:
        return self._ended

    def log_enabled(self, level: str) -> bool:
        return log.isEnabledFor(_LOG_LEVELS.get(level, logging.INFO))


def _claim(surfaces: TaskSurfaces, task_id: str, retry_safe: bool) -> TaskRecord | None:
    """The record, claimed for this process; ``None`` when the task must not run here
    (gone, already ended, or started before by a process that was lost)."""
    store = surfaces.store
    record = store.get(task_id)
    if record is None or record.terminal:
        return None  # expired, cancelled while queued, or already finished
    if retry_safe:
        if not (record.status_message or "").startswith(QUEUED_PREFIX):
            return record  # delivered again after a lost worker: its progress stays
        return store.update(task_id, status_message=f"running on {socket.gethostname()}")
    if record.runner:
        # Delivered again although it started once: its first run was lost with its
        # process. Not retry-safe, so it ends here rather than running twice.
        failure = lost_runner_message(record.runner)
        store.update(task_id, status="failed", status_message=failure, input_requests=None,
                     error={"code": INTERNAL_ERROR, "message": failure})
        return None
    return store.update(task_id, runner=runner_id(),
                        status_message=f"running on {socket.gethostname()}")


def _refusal(surfaces: TaskSurfaces, task_id: str, data: dict[str, Any]) -> str | None:
    """Why the message ``data`` must not run (the task's ``statusMessage`` then), or None.

    The signature first (a forged message is refused whatever it names), then the record:
    a signed message made for another task cannot run in this one's name either."""
    server = surfaces.server
    if not signed(server._dispatcher.state_key, data):
        why = ("carries no signature" if SIGNATURE not in data
               else "does not carry this server's signature")
        return (f"refused: the task's queued message {why}, so its tool was not run (the "
                "web and worker processes need the same request_state_key: "
                "Server(request_state_key=...) or MCPSYNC_REQUEST_STATE_KEY)")
    record = surfaces.store.get(task_id)
    if record is None:
        return None  # expired or gone: claiming skips it
    expected = {"tool": record.tool, "owner": record.owner, "surface": record.surface}
    for field, value in expected.items():
        if data.get(field) != value:
            return (f"refused: the task's queued message names the {field} "
                    f"{data.get(field)!r}, not the task's, so its tool was not run")
    params = data.get("params")
    if not isinstance(params, dict) or params.get("name") != record.tool:
        return ("refused: the task's queued message calls another tool than the task's, "
                "so its tool was not run")
    return None


def run_payload(surfaces: TaskSurfaces, data: dict[str, Any],
                stop: threading.Event | None = None) -> str:
    """Run the task ``data`` describes (made by :func:`payload`) on this thread, through
    ``surfaces`` (those of the same server definition, on the same store); what happened:
    ``"ran"``, ``"skipped"`` when the task was not to run (see the module's claiming), or
    ``"refused"`` when the message is not one this server queued for that task (see the
    module's trust; the task is then failed)."""
    from .surface import _call_plain, _scoped

    task_id = str(data.get("task_id"))
    refusal = _refusal(surfaces, task_id, data)
    if refusal is not None:
        log.warning("task %s: message refused, nothing run: %s", task_id, refusal)
        store = surfaces.store
        record = store.get(task_id)
        if record is not None and not record.terminal:
            store.update(task_id, status="failed", status_message=refusal,
                         input_requests=None, error={"code": INTERNAL_ERROR,
                                                     "message": refusal})
        return "refused"
    retry_safe = bool(data.get("retry_safe"))
    if _claim(surfaces, task_id, retry_safe) is None:
        return "skipped"
    raw_info = data.get("info") or {}
    info = SessionInfo(protocol_version=raw_info.get("protocol_version"),
                       client_info=raw_info.get("client_info"),
                       client_capabilities=dict(raw_info.get("client_capabilities") or {}),
                       session_id=raw_info.get("session_id"))
    raw_transport = data.get("transport") or {}
    kind = raw_transport.get("kind")
    transport = TransportContext(kind if kind in ("stdio", "memory", "http") else "memory",
                                 remote_addr=raw_transport.get("remote_addr"),
                                 session_id=raw_transport.get("session_id"),
                                 can_receive_requests=False)
    server = surfaces.server
    surface: Literal["v1", "v2"] = "v1" if data.get("surface") == "v1" else "v2"
    params = dict(data.get("params") or {})
    stop = stop or threading.Event()
    context = TaskContext(
        task_id=task_id, surface=surface, store=surfaces.store,
        session=_RemoteSession(server, info, task_id), info=info, transport=transport,
        method="tools/call", params=params, channel_usable=True, stop=stop,
        request_timeout=server.limits.request_timeout, publish=surfaces.publish)
    body = partial(_scoped, server, partial(_call_plain, server, params))
    surfaces.runner.execute(context, body, bool(data.get("v1_failed_on_error")), stop)
    return "ran"
