"""What a client keeps, across its tasks, to follow them: who waits on which task, and
which tools need a task.

Both are fed every server notification (see :meth:`.task_calls.ClientTasks.on_notification`):
a status notification wakes the waits on its task, a tool list change forgets what was
learnt about the tools.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

#: The v1 notification a server may send when a task's status changes.
V1_STATUS_NOTIFICATION: Final = "notifications/tasks/status"
#: The v2 one, delivered on a ``subscriptions/listen`` stream that follows the task.
V2_STATUS_NOTIFICATION: Final = "notifications/tasks"
#: How many tools' ``execution.taskSupport`` a client remembers (v1 only needs it).
MAX_KNOWN_TOOLS: Final = 10_000


class Watchers:
    """Wakes the waits on a task when a status notification for it arrives (v1
    ``notifications/tasks/status`` on the session, v2 ``notifications/tasks`` on a listen
    stream). Holds one Event per wait in progress, no more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, list[threading.Event]] = {}

    @contextmanager
    def watch(self, task_id: str) -> Iterator[threading.Event]:
        event = threading.Event()
        with self._lock:
            self._events.setdefault(task_id, []).append(event)
        try:
            yield event
        finally:
            with self._lock:
                events = self._events.get(task_id, [])
                if event in events:
                    events.remove(event)
                if not events:
                    self._events.pop(task_id, None)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        """Feed every server notification; the ones about a watched task wake its waits."""
        if method not in (V1_STATUS_NOTIFICATION, V2_STATUS_NOTIFICATION):
            return
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            return
        with self._lock:
            events = list(self._events.get(task_id, ()))
        for event in events:
            event.set()


class ToolTaskSupport:
    """``execution.taskSupport`` by tool name, learnt from ``tools/list`` (v1 needs it to
    know when to send ``params.task``). Bounded (:data:`MAX_KNOWN_TOOLS`); forgotten when
    the server says its tool list changed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}
        self._complete = False

    def learn(self, tools: list[dict[str, Any]]) -> None:
        """Record a full listing (every page)."""
        known: dict[str, str] = {}
        for tool in tools[:MAX_KNOWN_TOOLS]:
            name = tool.get("name") if isinstance(tool, dict) else None
            execution = tool.get("execution") if isinstance(tool, dict) else None
            support = execution.get("taskSupport") if isinstance(execution, dict) else None
            if isinstance(name, str):
                known[name] = support if isinstance(support, str) else "forbidden"
        with self._lock:
            self._known = known
            self._complete = len(tools) <= MAX_KNOWN_TOOLS

    def get(self, name: str) -> str | None:
        """The tool's task support, or None when no listing told (list the tools first)."""
        with self._lock:
            if name in self._known:
                return self._known[name]
            return "forbidden" if self._complete else None

    @property
    def listed(self) -> bool:
        with self._lock:
            return self._complete or bool(self._known)

    def forget(self) -> None:
        with self._lock:
            self._known = {}
            self._complete = False

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tools/list_changed":
            self.forget()
