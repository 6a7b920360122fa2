"""The spec's objects as dataclasses (see :mod:`mcpsync.codec` for the wire mapping)."""

from .common import Annotations, Icon, Implementation, LogMessage, Progress
from .content import (
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    content_from_wire,
)
from .lifecycle import InitializeResult
from .tools import CallToolResult, ListToolsResult, Tool, ToolAnnotations

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "Icon",
    "ImageContent",
    "Implementation",
    "InitializeResult",
    "ListToolsResult",
    "LogMessage",
    "Progress",
    "ResourceLink",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "content_from_wire",
]
