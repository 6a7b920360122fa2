"""Tools: their description and the results of calling them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import custom, meta_field, optional, wire_type
from ..display.notebook import DisplayableResult, DisplayableTool
from .common import Icon
from .content import content_list_from_wire, content_list_to_wire


@wire_type
@dataclass
class ToolAnnotations:
    """Behaviour hints for clients. Untrusted unless the server is."""

    title: str | None = optional()
    read_only_hint: bool | None = optional()
    destructive_hint: bool | None = optional()
    idempotent_hint: bool | None = optional()
    open_world_hint: bool | None = optional()


@wire_type
@dataclass
class Tool(DisplayableTool):
    """A tool as ``tools/list`` describes it."""

    name: str
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})
    title: str | None = optional()
    description: str | None = optional()
    output_schema: dict[str, Any] | None = optional()
    annotations: ToolAnnotations | None = optional()
    icons: list[Icon] | None = optional()
    execution: dict[str, Any] | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class ListToolsResult:
    """One page of ``tools/list``."""

    tools: list[Tool] = field(default_factory=list)
    next_cursor: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


def _not_true(value: Any) -> bool:
    return value is not True


@wire_type
@dataclass
class CallToolResult(DisplayableResult):
    """What ``tools/call`` returns.

    ``is_error`` is true when the tool failed (bad arguments, an exception): a result meant
    for the model to read and correct itself, not a protocol error.
    """

    content: list[Any] = custom(
        decoder=content_list_from_wire, encoder=content_list_to_wire, default_factory=list
    )
    structured_content: Any = optional()
    #: ``False`` on success, also when the server left ``isError`` out (the spec's default).
    is_error: bool = optional(False, omit=_not_true)
    meta: dict[str, Any] | None = meta_field()

    @property
    def text(self) -> str:
        """All text blocks joined by newlines: the common case in one attribute."""
        return "\n".join(
            block.text for block in self.content if getattr(block, "type", None) == "text"
        )
