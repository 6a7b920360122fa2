"""The tasks extension's per-tool options: ``task=``, ``defer_task=``, ``executor=``,
``retry_safe=``, declared on the server through the component-options seam
(:mod:`mcpsync.server.component_options`), kept on a tool as a :class:`TaskTool` under
the key ``"tasks"``, and read back with :func:`task_tool`.

Light on purpose (no import of the surfaces, the runner or a store): it is declared when
a server is made, and a server's start-up must not pay for what runs tasks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from ..server.component_options import Kind, OptionSpec

TaskSupport = Literal["forbidden", "optional", "required"]
#: Where a tool's task options are kept (``tool.options[KEY]``).
KEY: Final = "tasks"


# A plain immutable class with slots, not a NamedTuple or a frozen dataclass: every server
# imports this module, and defining a NamedTuple (each field's string annotation compiled
# into a ForwardRef) cost its start a few hundred µs.
class TaskTool:
    """How one tool runs as a task. ``support``: ``"optional"`` or ``"required"`` (a tool
    that never does carries none). ``defer``: it runs as a plain call until it raises
    ``RunAsTask``. ``executor``: where its tasks run when not the server's default (a
    :class:`~mcpsync.tasks.executor.TaskExecutor`, checked by the extension).
    ``retry_safe``: it may safely run twice (an executor that lost its process may run it
    again). Immutable; equal and hashed by its fields."""

    __slots__ = ("defer", "executor", "retry_safe", "support")

    support: TaskSupport
    defer: bool
    executor: object | None
    retry_safe: bool

    def __init__(self, support: TaskSupport, defer: bool = False,
                 executor: object | None = None, retry_safe: bool = False) -> None:
        _set(self, "support", support)
        _set(self, "defer", defer)
        _set(self, "executor", executor)
        _set(self, "retry_safe", retry_safe)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"TaskTool is immutable: cannot set {name!r}")

    def _fields(self) -> tuple[object, ...]:
        return (self.support, self.defer, self.executor, self.retry_safe)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskTool):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"TaskTool(support={self.support!r}, defer={self.defer!r}, "
                f"executor={self.executor!r}, retry_safe={self.retry_safe!r})")


_set = object.__setattr__


def task_tool(options: Mapping[str, object]) -> TaskTool | None:
    """A tool's task options (from its ``options``), or None: it never runs as a task."""
    found = options.get(KEY)
    return found if isinstance(found, TaskTool) else None


def _parse(kind: Kind, given: dict[str, Any]) -> TaskTool | None:
    support = given.get("task", "forbidden")
    if support not in ("forbidden", "optional", "required"):
        raise ValueError(f"task must be 'forbidden', 'optional' or 'required', not {support!r}")
    executor = given.get("executor")
    retry_safe = bool(given.get("retry_safe", False))
    if (executor is not None or retry_safe) and support == "forbidden":
        raise ValueError("executor= and retry_safe= are for a tool that runs as a task "
                         "(task='optional' or 'required')")
    if support == "forbidden":
        return None
    return TaskTool(support, bool(given.get("defer_task", False)), executor, retry_safe)


def _describe(kind: Kind, value: TaskTool, wire: dict[str, Any]) -> None:
    wire["execution"] = {"taskSupport": value.support}


#: What the tasks extension declares on the server it is installed on.
SPEC: Final = OptionSpec(KEY, frozenset({"task", "defer_task", "executor", "retry_safe"}),
                         frozenset({"tool"}), _parse, _describe)

__all__ = ["KEY", "SPEC", "TaskSupport", "TaskTool", "task_tool"]
