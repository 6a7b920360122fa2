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

from ._version import __version__
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
