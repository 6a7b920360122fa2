"""Resources and resource templates, and what reading one returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..codec import custom, meta_field, optional, to_wire, wire_type
from ..display.notebook import DisplayableContents
from .common import Annotations, Icon
from .content import resource_contents_from_wire


@wire_type
@dataclass
class Resource:
    """A readable resource with a fixed URI, as ``resources/list`` describes it."""

    uri: str
    name: str
    title: str | None = optional()
    description: str | None = optional()
    mime_type: str | None = optional()
    size: int | None = optional()
    icons: list[Icon] | None = optional()
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class ResourceTemplate:
    """A family of resources named by an RFC 6570 URI template."""

    uri_template: str
    name: str
    title: str | None = optional()
    description: str | None = optional()
    mime_type: str | None = optional()
    icons: list[Icon] | None = optional()
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()


def _contents_from_wire(data: Any) -> list[Any]:
    if not isinstance(data, list):
        raise ValueError("contents must be a list")
    return [resource_contents_from_wire(item) for item in data]


@wire_type
@dataclass
class ReadResourceResult(DisplayableContents):
    """What ``resources/read`` returns: one or more text or blob contents."""

    contents: list[Any] = custom(
        decoder=_contents_from_wire, encoder=to_wire, default_factory=list
    )
    meta: dict[str, Any] | None = meta_field()

    @property
    def text(self) -> str:
        """The text of every text content, joined by newlines."""
        return "\n".join(c.text for c in self.contents if hasattr(c, "text"))


@wire_type
@dataclass
class Root:
    """A filesystem root a client exposes to servers (``file://`` URI)."""

    uri: str
    name: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


__all__ = ["ReadResourceResult", "Resource", "ResourceTemplate", "Root", "field"]
