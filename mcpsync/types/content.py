"""Content blocks: what tools return, prompts contain and sampling exchanges."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..codec import from_wire, meta_field, optional, to_wire, wire_type
from ..display.notebook import Displayable
from ..display.text import elided_repr
from .common import Annotations, Icon


@wire_type
@dataclass
class TextContent(Displayable):
    """Plain text for the model or the user."""

    text: str
    type: str = "text"
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class ImageContent(Displayable):
    """An image; ``data`` is base64."""

    data: str
    mime_type: str
    type: str = "image"
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()

    def __repr__(self) -> str:
        return elided_repr(self, "data")  # never megabytes of base64 in a log line


@wire_type
@dataclass
class AudioContent(Displayable):
    """Audio; ``data`` is base64."""

    data: str
    mime_type: str
    type: str = "audio"
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()

    def __repr__(self) -> str:
        return elided_repr(self, "data")  # never megabytes of base64 in a log line


@wire_type
@dataclass
class ResourceLink(Displayable):
    """A pointer to a resource the client may read; not necessarily in resources/list."""

    uri: str
    name: str
    type: str = "resource_link"
    title: str | None = optional()
    description: str | None = optional()
    mime_type: str | None = optional()
    size: int | None = optional()
    icons: list[Icon] | None = optional()
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class TextResourceContents:
    """The text of a resource."""

    uri: str
    text: str
    mime_type: str | None = optional()
    meta: dict[str, Any] | None = meta_field()


@wire_type
@dataclass
class BlobResourceContents:
    """The bytes of a resource; ``blob`` is base64."""

    uri: str
    blob: str
    mime_type: str | None = optional()
    meta: dict[str, Any] | None = meta_field()

    def __repr__(self) -> str:
        return elided_repr(self, "blob")  # never megabytes of base64 in a log line


ResourceContents = TextResourceContents | BlobResourceContents


def resource_contents_from_wire(data: Any) -> ResourceContents:
    """Decode text or blob contents by which field is present."""
    if isinstance(data, dict) and "blob" in data:
        return from_wire(BlobResourceContents, data)
    return from_wire(TextResourceContents, data)


@wire_type
@dataclass
class EmbeddedResource(Displayable):
    """A resource's contents embedded in a result."""

    resource: ResourceContents = optional(
        decoder=resource_contents_from_wire, encoder=to_wire
    )
    type: str = "resource"
    annotations: Annotations | None = optional()
    meta: dict[str, Any] | None = meta_field()


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource

_BLOCKS: dict[str, type[Any]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}

CONTENT_TYPES: tuple[type[Any], ...] = tuple(_BLOCKS.values())


def content_from_wire(data: Any) -> Any:
    """Decode one content block by its ``type``; an unknown type stays a plain dict."""
    if isinstance(data, dict):
        klass = _BLOCKS.get(data.get("type", ""))
        if klass is not None:
            return from_wire(klass, data)
    return data


def content_list_from_wire(data: Any) -> list[Any]:
    """Decode a list of content blocks (``None`` → empty list)."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError("content must be a list")
    return [content_from_wire(item) for item in data]


def content_list_to_wire(blocks: list[Any]) -> list[Any]:
    """Encode a list of content blocks."""
    return [to_wire(block) for block in blocks]
