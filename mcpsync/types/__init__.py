"""The spec's objects as dataclasses (see :mod:`mcpsync.codec` for the wire mapping).

Imported on first use (PEP 562, see :mod:`mcpsync._lazy`): a server needs the tool and
content types at start-up, not the sampling, elicitation or media ones.
"""

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "Annotations": ".common",
    "Audio": ".media",
    "AudioContent": ".content",
    "BlobResourceContents": ".content",
    "CallToolResult": ".tools",
    "Completion": ".prompts",
    "ContentBlock": ".content",
    "CreateMessageRequestParams": ".client_features",
    "CreateMessageResult": ".client_features",
    "ElicitRequestParams": ".client_features",
    "ElicitResult": ".client_features",
    "EmbeddedResource": ".content",
    "GetPromptResult": ".prompts",
    "Icon": ".common",
    "Image": ".media",
    "ImageContent": ".content",
    "Implementation": ".common",
    "InitializeResult": ".lifecycle",
    "ListToolsResult": ".tools",
    "LogMessage": ".common",
    "Progress": ".common",
    "Prompt": ".prompts",
    "PromptArgument": ".prompts",
    "PromptMessage": ".prompts",
    "ReadResourceResult": ".resources",
    "Resource": ".resources",
    "ResourceLink": ".content",
    "ResourceTemplate": ".resources",
    "Root": ".resources",
    "SamplingMessage": ".client_features",
    "TextContent": ".content",
    "TextResourceContents": ".content",
    "Tool": ".tools",
    "ToolAnnotations": ".tools",
    "content_from_wire": ".content",
}

__getattr__, __dir__ = exports(__name__, _LAZY, globals())

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
