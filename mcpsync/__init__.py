"""mcpsync: a synchronous, thread-based SDK for the Model Context Protocol.

Plain blocking functions are tools; there is no event loop anywhere::

    from mcpsync import Server, HandlerContext

    server = Server("weather", version="1.0.0")

    @server.tool()
    def forecast(ctx: HandlerContext, city: str, days: int = 3) -> str:
        \"\"\"Forecast for a city.\"\"\"
        return f"{city}: sunny"

    if __name__ == "__main__":
        server.run_stdio()
"""

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from .auth import (
        AuthorizationError,
        AuthorizationResponseError,
        DiscoveryError,
        FileTokenStorage,
        FollowRedirects,
        InsufficientScopeError,
        IssuerMismatchError,
        LoopbackRedirect,
        MemoryTokenStorage,
        OAuth,
        PKCENotSupportedError,
        RegistrationError,
        ResourceMismatchError,
        TokenRequestError,
        TokenStorage,
    )
    from .auth.server import (
        AccessToken,
        IntrospectionVerifier,
        JwtVerifier,
        ResourceServer,
        TokenVerifier,
    )
    from .client import Client
    from .client.host import HostRequest
    from .client.tasks import TaskCancelledError, TaskHandle, TaskState
    from .dispatch.context import DetachedContext, HandlerContext, SessionInfo
    from .dispatch.registry import DuplicateHandlerError, MethodRegistry
    from .dispatch.transport import TransportContext, current_transport
    from .display import ToolList, progress_bar
    from .errors import (
        ConnectionClosedError,
        ContextClosedError,
        InternalError,
        InvalidParamsError,
        InvalidRequestError,
        MCPError,
        MCPSyncError,
        MessageTooLargeError,
        MethodNotFoundError,
        ParseError,
        PeerRequestError,
        ProtocolStateError,
        RequestCancelledError,
        RequestTimeoutError,
        ResourceNotFoundError,
        ServerExitedError,
        StoreUnavailableError,
        TransportError,
        TransportTimeoutError,
        UnencodableMessageError,
    )
    from .server.lifespan import StartupError
    from .server.paths import UnsafePathError, safe_join
    from .server.server import Server
    from .server.session import ServerSession
    from .tasks import MemoryTaskStore, RunAsTask, SqliteTaskStore, TaskContext
    from .types import (
        Annotations,
        Audio,
        AudioContent,
        BlobResourceContents,
        CallToolResult,
        Completion,
        CreateMessageRequestParams,
        CreateMessageResult,
        ElicitRequestParams,
        ElicitResult,
        EmbeddedResource,
        GetPromptResult,
        Icon,
        Image,
        ImageContent,
        Implementation,
        LogMessage,
        Progress,
        Prompt,
        PromptArgument,
        PromptMessage,
        ReadResourceResult,
        Resource,
        ResourceLink,
        ResourceTemplate,
        Root,
        SamplingMessage,
        TextContent,
        TextResourceContents,
        Tool,
        ToolAnnotations,
    )

# Names are imported on first use (PEP 562): a stdio server that only needs ``Server``
# does not pay at start-up for the client, the OAuth stack and ``requests``.
_LAZY: dict[str, str] = {
    "AccessToken": ".auth.server",
    "Annotations": ".types",
    "Audio": ".types",
    "AudioContent": ".types",
    "AuthorizationError": ".auth",
    "AuthorizationResponseError": ".auth",
    "BlobResourceContents": ".types",
    "CallToolResult": ".types",
    "Client": ".client",
    "Completion": ".types",
    "ConnectionClosedError": ".errors",
    "ContextClosedError": ".errors",
    "CreateMessageRequestParams": ".types",
    "CreateMessageResult": ".types",
    "DetachedContext": ".dispatch.context",
    "DiscoveryError": ".auth",
    "DuplicateHandlerError": ".dispatch.registry",
    "ElicitRequestParams": ".types",
    "ElicitResult": ".types",
    "EmbeddedResource": ".types",
    "FileTokenStorage": ".auth",
    "FollowRedirects": ".auth",
    "GetPromptResult": ".types",
    "HandlerContext": ".dispatch.context",
    "HostRequest": ".client.host",
    "Icon": ".types",
    "Image": ".types",
    "ImageContent": ".types",
    "Implementation": ".types",
    "InsufficientScopeError": ".auth",
    "InternalError": ".errors",
    "IntrospectionVerifier": ".auth.server",
    "InvalidParamsError": ".errors",
    "InvalidRequestError": ".errors",
    "IssuerMismatchError": ".auth",
    "JwtVerifier": ".auth.server",
    "LogMessage": ".types",
    "LoopbackRedirect": ".auth",
    "MCPError": ".errors",
    "MCPSyncError": ".errors",
    "MemoryTaskStore": ".tasks",
    "MemoryTokenStorage": ".auth",
    "MessageTooLargeError": ".errors",
    "MethodNotFoundError": ".errors",
    "MethodRegistry": ".dispatch.registry",
    "OAuth": ".auth",
    "PKCENotSupportedError": ".auth",
    "ParseError": ".errors",
    "PeerRequestError": ".errors",
    "Progress": ".types",
    "Prompt": ".types",
    "PromptArgument": ".types",
    "PromptMessage": ".types",
    "ProtocolStateError": ".errors",
    "ReadResourceResult": ".types",
    "RegistrationError": ".auth",
    "RequestCancelledError": ".errors",
    "RequestTimeoutError": ".errors",
    "Resource": ".types",
    "ResourceLink": ".types",
    "ResourceMismatchError": ".auth",
    "ResourceNotFoundError": ".errors",
    "ResourceServer": ".auth.server",
    "ResourceTemplate": ".types",
    "Root": ".types",
    "RunAsTask": ".tasks",
    "SamplingMessage": ".types",
    "Server": ".server.server",
    "ServerExitedError": ".errors",
    "ServerSession": ".server.session",
    "SessionInfo": ".dispatch.context",
    "SqliteTaskStore": ".tasks",
    "StartupError": ".server.lifespan",
    "StoreUnavailableError": ".errors",
    "TaskCancelledError": ".client.tasks",
    "TaskContext": ".tasks",
    "TaskHandle": ".client.tasks",
    "TaskState": ".client.tasks",
    "TextContent": ".types",
    "TextResourceContents": ".types",
    "TokenRequestError": ".auth",
    "TokenStorage": ".auth",
    "TokenVerifier": ".auth.server",
    "Tool": ".types",
    "ToolAnnotations": ".types",
    "ToolList": ".display",
    "TransportContext": ".dispatch.transport",
    "TransportError": ".errors",
    "TransportTimeoutError": ".errors",
    "UnencodableMessageError": ".errors",
    "UnsafePathError": ".server.paths",
    "current_transport": ".dispatch.transport",
    "progress_bar": ".display",
    "safe_join": ".server.paths",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "AccessToken",
    "Annotations",
    "Audio",
    "AudioContent",
    "AuthorizationError",
    "AuthorizationResponseError",
    "BlobResourceContents",
    "CallToolResult",
    "Client",
    "Completion",
    "ConnectionClosedError",
    "ContextClosedError",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "DetachedContext",
    "DiscoveryError",
    "DuplicateHandlerError",
    "ElicitRequestParams",
    "ElicitResult",
    "EmbeddedResource",
    "FileTokenStorage",
    "FollowRedirects",
    "GetPromptResult",
    "HandlerContext",
    "HostRequest",
    "Icon",
    "Image",
    "ImageContent",
    "Implementation",
    "InsufficientScopeError",
    "InternalError",
    "IntrospectionVerifier",
    "InvalidParamsError",
    "InvalidRequestError",
    "IssuerMismatchError",
    "JwtVerifier",
    "LogMessage",
    "LoopbackRedirect",
    "MCPError",
    "MCPSyncError",
    "MemoryTaskStore",
    "MemoryTokenStorage",
    "MessageTooLargeError",
    "MethodNotFoundError",
    "MethodRegistry",
    "OAuth",
    "PKCENotSupportedError",
    "ParseError",
    "PeerRequestError",
    "Progress",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ProtocolStateError",
    "ReadResourceResult",
    "RegistrationError",
    "RequestCancelledError",
    "RequestTimeoutError",
    "Resource",
    "ResourceLink",
    "ResourceMismatchError",
    "ResourceNotFoundError",
    "ResourceServer",
    "ResourceTemplate",
    "Root",
    "RunAsTask",
    "SamplingMessage",
    "Server",
    "ServerExitedError",
    "ServerSession",
    "SessionInfo",
    "SqliteTaskStore",
    "StartupError",
    "StoreUnavailableError",
    "TaskCancelledError",
    "TaskContext",
    "TaskHandle",
    "TaskState",
    "TextContent",
    "TextResourceContents",
    "TokenRequestError",
    "TokenStorage",
    "TokenVerifier",
    "Tool",
    "ToolAnnotations",
    "ToolList",
    "TransportContext",
    "TransportError",
    "TransportTimeoutError",
    "UnencodableMessageError",
    "UnsafePathError",
    "__version__",
    "current_transport",
    "progress_bar",
    "safe_join",
]
