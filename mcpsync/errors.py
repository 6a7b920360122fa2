"""The exception tree of mcpsync.

Every error mcpsync raises derives from :class:`MCPSyncError`::

    MCPSyncError
    ├── MCPError                  a JSON-RPC error: from the peer, or raised to send one
    │   ├── ResourceNotFoundError -32002 (handshake era) / -32602 (2026-07-28)
    │   ├── ParseError            -32700
    │   ├── InvalidRequestError   -32600
    │   ├── MethodNotFoundError   -32601
    │   ├── InvalidParamsError    -32602
    │   ├── InternalError         -32603
    │   └── PeerRequestError      the peer answered our reverse call with an error (-32603)
    ├── TransportError            a local failure: the peer could not be reached, or its
    │   │                         answer could not be read (also an OSError)
    │   ├── ConnectionClosedError     the connection ended or was refused (also a ConnectionError)
    │   │   └── ServerExitedError     ... because the stdio server process ended (status, stderr)
    │   ├── TransportTimeoutError     the peer sent nothing for too long (also a TimeoutError)
    │   └── MessageTooLargeError      the peer's message exceeds our size bound
    ├── RequestCancelledError     the request was cancelled (by us, the peer, or a deadline)
    │   └── RequestTimeoutError   our own deadline expired (also a TimeoutError)
    ├── ContextClosedError        a HandlerContext was used after its request ended
    ├── UnencodableMessageError   a message we were to send is not JSON (nothing was sent)
    └── ProtocolStateError        a call that the negotiated session does not allow

``MCPError`` means *the peer said so*; ``TransportError`` means *we could not hear it*. A
local failure (a refused or broken connection, a silent peer, an answer too large or too
deep to read, our own deadline) is never an ``MCPError``, so ``except MCPError`` can not
mistake a dead server for a refusal, on any transport: stdio, memory and HTTP fail the same
way for the same failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .display import DisplayableError

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002  # handshake era only
URL_ELICITATION_REQUIRED = -32042  # 2025-11-25 only
HEADER_MISMATCH = -32020  # 2026-07-28
MISSING_CLIENT_CAPABILITY = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION = -32022  # 2026-07-28


class MCPSyncError(Exception):
    """Base of every exception mcpsync raises."""


class MCPError(MCPSyncError, DisplayableError):
    """A JSON-RPC error object.

    Raise it from a handler to answer with exactly this error; the client raises it when the
    peer answers with an error. ``code``, ``message`` and ``data`` are the wire fields.
    """

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """The error object as it goes on the wire."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_wire(cls, error: Any) -> MCPError:
        """Build the most specific subclass for an error object received from a peer."""
        if not isinstance(error, dict):
            return InternalError(f"malformed error object: {error!r}")
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = "(no message)"
        klass = _BY_CODE.get(code, MCPError)
        return klass(message, code=code, data=error.get("data"))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class ParseError(MCPError):
    """The bytes received were not valid JSON."""

    code = PARSE_ERROR


class InvalidRequestError(MCPError):
    """The JSON was not a valid JSON-RPC request."""

    code = INVALID_REQUEST


class MethodNotFoundError(MCPError):
    """The method does not exist or is not available."""

    code = METHOD_NOT_FOUND


class InvalidParamsError(MCPError):
    """The method exists but its parameters are wrong (also: unknown tool)."""

    code = INVALID_PARAMS


class InternalError(MCPError):
    """The peer failed while handling the request."""

    code = INTERNAL_ERROR


class ResourceNotFoundError(MCPError):
    """Raise from a resource function when the URI names nothing: mcpsync answers with the
    negotiated revision's code (-32002 in the handshake era, -32602 in 2026-07-28)."""

    code = RESOURCE_NOT_FOUND


class PeerRequestError(MCPError):
    """The peer answered a request we sent it on behalf of a handler (``ctx.elicit``,
    ``ctx.sample``, ``ctx.list_roots``, ``ctx.request``) with an error.

    Its own ``code`` is -32603: the error is ours to report, not the peer's to relay. A
    ``-32601`` from the client for ``elicitation/create`` must not answer the ``tools/call``
    that asked with ``-32601``, which would say that ``tools/call`` does not exist. Left
    uncaught, it becomes an ``isError`` result in a tool and a -32603 error elsewhere.
    ``method`` is the reverse call's method; ``peer_error`` the peer's error as received
    (an :class:`MCPError`), with ``peer_code``, ``peer_message`` and ``peer_data``.
    """

    code = INTERNAL_ERROR

    def __init__(self, method: str, peer_error: MCPError) -> None:
        super().__init__(
            f"Internal error: the client answered {method} with error {peer_error.code}: "
            f"{peer_error.message}",
            data={"method": method, "error": peer_error.to_wire()})
        self.method = method
        self.peer_error = peer_error

    @property
    def peer_code(self) -> int:
        return self.peer_error.code

    @property
    def peer_message(self) -> str:
        return self.peer_error.message

    @property
    def peer_data(self) -> Any:
        return self.peer_error.data


_BY_CODE: dict[int, type[MCPError]] = {
    klass.code: klass
    for klass in (ParseError, InvalidRequestError, MethodNotFoundError, InvalidParamsError,
                  InternalError, ResourceNotFoundError)
}


class TransportError(MCPSyncError, OSError):
    """A local failure to exchange a message with the peer; nothing the peer said.

    Raised for the one call it concerns (an HTTP answer that could not be read) or, as
    :class:`ConnectionClosedError`, for every call waiting on a connection that ended. An
    ``OSError`` like the socket and pipe failures it stands for.
    """


class ConnectionClosedError(TransportError, ConnectionError):
    """The connection to the peer ended, or could not be made; the call can not complete."""


class TransportTimeoutError(TransportError, TimeoutError):
    """The peer sent nothing for longer than the transport's read timeout.

    Distinct from :class:`RequestTimeoutError`, which is the caller's own deadline.
    """


class MessageTooLargeError(TransportError):
    """A message from the peer exceeds the transport's size bound; it was not read whole.

    Only the call that it answers fails; the connection stays usable.
    """


class StoreUnavailableError(MCPSyncError, OSError):
    """A shared store a request needs (Redis: sessions, events, tasks, the relay between
    workers) cannot be reached now. The HTTP app answers such a request with ``503`` and a
    JSON-RPC error body, never a hang; the next request tries the store again, so the
    process recovers by itself when the store comes back. An ``OSError``, like the
    connection failure it stands for."""


class UnencodableMessageError(MCPSyncError, ValueError):
    """A message could not be serialized as JSON in UTF-8 (a lone surrogate, NaN, an object
    JSON has no type for, nesting too deep for the encoder). Nothing was written, and the
    connection is unharmed: this is a fault of the one message, never of the transport.

    Raised by sending a request or notification; an *answer* that cannot be encoded is
    replaced by an encodable ``-32603`` error for the same id instead.
    """


class ServerExitedError(ConnectionClosedError):
    """The stdio server process ended (or closed its stdout), so the call can not complete.

    The message says what was run, how it ended and what it last wrote to stderr, because
    "the connection closed" alone hides an import error, a syntax error or a wrong
    interpreter. ``command`` is the argument list, ``returncode`` the exit status (negative:
    the signal that killed it, as in :mod:`subprocess`; ``None``: it closed its pipes but
    had not exited a moment later) and ``stderr_tail`` its last lines of stderr (bounded).
    """

    def __init__(self, reason: str, *, command: Sequence[str], returncode: int | None,
                 stderr_tail: str) -> None:
        self.reason = reason
        self.command = list(command)
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        import shlex  # here: errors are imported by every server, this message is rare

        lines = [reason, f"  command: {shlex.join(self.command)}"]
        if stderr_tail:
            lines.append("  last lines of its stderr:")
            lines.extend(f"    {line}" for line in stderr_tail.splitlines())
        else:
            lines.append("  (nothing on its stderr)")
        super().__init__("\n".join(lines))

    @staticmethod
    def describe(returncode: int | None) -> str:
        """How a process ended, in words: ``exited with status 1``, ``was killed by
        signal 9 (SIGKILL)``."""
        if returncode is None:
            return "closed its pipes but has not exited"
        if returncode >= 0:
            return f"exited with status {returncode}"
        import signal

        try:
            name = f" ({signal.Signals(-returncode).name})"
        except ValueError:
            name = ""
        return f"was killed by signal {-returncode}{name}"

    def retitled(self, reason: str) -> ServerExitedError:
        """The same details under another first line: one fresh exception per failed call."""
        return ServerExitedError(reason, command=self.command, returncode=self.returncode,
                                 stderr_tail=self.stderr_tail)


class RequestCancelledError(MCPSyncError):
    """The request was cancelled before it completed.

    Inside a handler this is what ``ctx.check_cancelled()`` raises; mcpsync catches it and
    sends no response, as the spec requires.
    """


class RequestTimeoutError(RequestCancelledError, TimeoutError):
    """Our deadline for an outbound request expired; the peer was told to cancel it."""


class ContextClosedError(MCPSyncError, RuntimeError):
    """A HandlerContext was used after its request was answered.

    Background work that outlives a request must use ``ctx.detach()``.
    """


class ProtocolStateError(MCPSyncError, RuntimeError):
    """The call is not allowed in the session's current state or negotiated capabilities."""
