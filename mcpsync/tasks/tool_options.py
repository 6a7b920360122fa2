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

from ..frozen import Frozen
from ..server.component_options import Kind, OptionSpec

TaskSupport = Literal["forbidden", "optional", "required"]
#: Where a tool's task options are kept (``tool.options[KEY]``).
KEY: Final = "tasks"


# A Frozen value class, not a NamedTuple or a frozen dataclass: every server imports this
# module, and defining either cost its start a few hundred µs (see mcpsync/frozen.py).
class TaskTool(Frozen):
    """How one tool runs as a task. ``support``: ``"optional"`` or ``"required"`` (a tool
    that never does carries none). ``defer``: it runs as a plain call until it raises
    ``RunAsTask``. ``executor``: where its tasks run when not the server's default (a
    :class:`~mcpsync.tasks.executor.TaskExecutor`, checked by the extension).
    ``retry_safe``: it may safely run twice (an executor that lost its process may run it
    again). Immutable; equal and hashed by its fields."""

    __slots__ = ("support", "defer", "executor", "retry_safe")  # noqa: RUF023  (__init__'s order)

    support: TaskSupport
    defer: bool
    executor: object | None
    retry_safe: bool

    def __init__(self, support: TaskSupport, defer: bool = False,
                 executor: object | None = None, retry_safe: bool = False) -> None:
        self._init(support, defer, executor, retry_safe)


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
