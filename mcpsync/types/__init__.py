"""The spec's objects as dataclasses (see :mod:`mcpsync.codec` for the wire mapping)."""

from .client_features import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    SamplingMessage,
)
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
from .media import Audio, Image
from .prompts import Completion, GetPromptResult, Prompt, PromptArgument, PromptMessage
from .resources import ReadResourceResult, Resource, ResourceTemplate, Root
from .tools import CallToolResult, ListToolsResult, Tool, ToolAnnotations

__all__ = [
    "Annotations",
    "Audio",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "Completion",
    "ContentBlock",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "Image",
    "ImageContent",
    "Implementation",
    "InitializeResult",
    "ListToolsResult",
    "LogMessage",
    "Progress",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceLink",
    "ResourceTemplate",
    "Root",
    "SamplingMessage",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "content_from_wire",
]
