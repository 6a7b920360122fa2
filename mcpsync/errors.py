"""The exception tree of mcpsync.

Every error mcpsync raises derives from :class:`MCPSyncError`::

    MCPSyncError
    ├── MCPError                  a JSON-RPC error: from the peer, or raised to send one
    │   ├── ResourceNotFoundError -32002 (handshake era) / -32602 (2026-07-28)
    │   │   └── ResourceNotFoundParamsError  -32602 naming a ``uri`` (2026-07-28's code;
    │   │                                    also an InvalidParamsError)
    │   ├── ParseError            -32700
    │   ├── InvalidRequestError   -32600
    │   ├── MethodNotFoundError   -32601
    │   ├── InvalidParamsError    -32602
    │   ├── InternalError         -32603
    │   ├── HeaderMismatchError              -32020 (2026-07-28)
    │   ├── MissingClientCapabilityError     -32021 (2026-07-28)
    │   ├── UnsupportedProtocolVersionError  -32022 (2026-07-28)
    │   ├── UrlElicitationRequiredError      -32042 (2025-11-25)
    │   ├── RateLimitedError      -32029 a guard's limit (mcpsync.middleware; HTTP 429)
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
    ├── ProtocolStateError        a call that the negotiated session does not allow
    └── ToolError                 raised by a tool on purpose: its text is the model's to read

``MCPError`` means *the peer said so*; ``TransportError`` means *we could not hear it*. A
local failure (a refused or broken connection, a silent peer, an answer too large or too
deep to read, our own deadline) is never an ``MCPError``, so ``except MCPError`` can not
mistake a dead server for a refusal, on any transport: stdio, memory and HTTP fail the same
way for the same failure.

Which class an error object received from a peer becomes is decided in one place, the
table :data:`_CLASSES` (code, what ``data`` says → class), so that one failure is one
class whatever the era and the server: a 2026-07-28 server (and the official SDK's, in
every era) answers a missing resource -32602 naming the ``uri`` where a 2025-11-25 mcpsync
server answers -32002, and a client raises :class:`ResourceNotFoundError` for both.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from typing import Any, Final

from .display.notebook import DisplayableError

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
#: A guard of ``mcpsync.middleware`` refused the request for now (a rate or concurrency
#: limit): ``data.retryAfter`` says in how many seconds to try again (HTTP: 429).
RATE_LIMITED = -32029


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
        """Build the most specific subclass for an error object received from a peer (by
        the table :data:`_CLASSES`)."""
        if not isinstance(error, dict):
            return InternalError(f"malformed error object: {error!r}")
        code = error.get("code")
        message = error.get("message")
        if not isinstance(code, int) or isinstance(code, bool):
            code = INTERNAL_ERROR
        if not isinstance(message, str):
            message = "(no message)"
        data = error.get("data")
        return error_class(code, data)(message, code=code, data=data)

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
    negotiated revision's code (-32002 in the handshake era, -32602 in 2026-07-28).

    A client raises it in both eras (for -32602 naming the ``uri``, as 2026-07-28 answers,
    as :class:`ResourceNotFoundParamsError`), so ``except ResourceNotFoundError`` works
    whatever the transport negotiated and whoever wrote the server."""

    code = RESOURCE_NOT_FOUND


class ResourceNotFoundParamsError(ResourceNotFoundError, InvalidParamsError):
    """A missing resource as 2026-07-28 answers it (and the official SDK's servers in
    every era): -32602 whose ``data`` names the ``uri``. Both a
    :class:`ResourceNotFoundError` (what happened, as in the handshake era) and an
    :class:`InvalidParamsError` (what the code says, as older mcpsync raised it), so code
    written for either keeps working."""

    code = INVALID_PARAMS


class HeaderMismatchError(MCPError):
    """2026-07-28, -32020: the HTTP headers do not match the request body (or a required
    one is missing or malformed); the server answered 400."""

    code = HEADER_MISMATCH


class MissingClientCapabilityError(MCPError):
    """2026-07-28, -32021: the request needs a capability the client did not declare.
    (The handshake era has no such error: there, a tool that needs one fails as a tool,
    an ``isError`` result.)"""

    code = MISSING_CLIENT_CAPABILITY

    @property
    def required_capabilities(self) -> dict[str, Any]:
        """``data.requiredCapabilities``: what the server needs declared (``{}`` if it
        did not say)."""
        data = self.data if isinstance(self.data, dict) else {}
        required = data.get("requiredCapabilities")
        return required if isinstance(required, dict) else {}


class UnsupportedProtocolVersionError(MCPError):
    """2026-07-28, -32022: the server does not speak the revision the request named.
    (In the handshake era the server answers ``initialize`` with a revision of its own
    instead, and the client raises :class:`ProtocolStateError` if it does not speak it.)"""

    code = UNSUPPORTED_PROTOCOL_VERSION

    @property
    def requested(self) -> str | None:
        """``data.requested``: the revision the request named."""
        value = self.data.get("requested") if isinstance(self.data, dict) else None
        return value if isinstance(value, str) else None

    @property
    def supported(self) -> list[str]:
        """``data.supported``: the revisions the server speaks (``[]`` if not said)."""
        value = self.data.get("supported") if isinstance(self.data, dict) else None
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


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


class UrlElicitationRequiredError(MCPError):
    """2025-11-25, -32042: the request needs the user to visit URLs first (to authorize
    something, say); retry it when they have. ``elicitations`` are the URL-mode
    elicitation requests (``message``, ``url``, ``elicitationId``). In 2026-07-28 the
    same question is an input request that the client's elicitation handler answers
    during the call."""

    code = URL_ELICITATION_REQUIRED

    @property
    def elicitations(self) -> list[dict[str, Any]]:
        """``data.elicitations``: each a dict as on the wire (``[]`` if not said)."""
        value = self.data.get("elicitations") if isinstance(self.data, dict) else None
        return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _names_uri(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("uri"), str)


def _lacks_scope(data: Any) -> bool:
    return isinstance(data, dict) and data.get("error") == "insufficient_scope"


@functools.cache
def _load(path: str) -> type[MCPError]:
    """A class of the table named ``module:Name``: the authorization errors live in
    :mod:`mcpsync.auth`, which imports this module and is heavy; loaded when first met."""
    module, _, name = path.partition(":")
    klass = getattr(importlib.import_module(module), name)
    assert isinstance(klass, type) and issubclass(klass, MCPError)
    return klass


#: How an error object from a peer becomes an exception: ONE table. A row is (code, test
#: of ``data`` or None, class); the first row whose code matches and whose test passes
#: decides. A code with no row is a plain :class:`MCPError` with that code. Where servers
#: answer one failure with different codes, the rows give both one class: a missing
#: resource is -32002 from a 2025-11-25 mcpsync server and -32602 naming the ``uri`` in
#: 2026-07-28 (and from the official SDK's servers in every era), and a token that lacks
#: a scope is a 403 over HTTP and a -32600 naming the scope off HTTP. The data tells these
#: apart without the era, so a row needs none, and the connection that receives the error
#: (which does not know the era) classes it once. A class given as ``"module:Name"`` is
#: imported when first met. What each era's servers answer: docs/client.md ("Errors").
_CLASSES: Final[tuple[tuple[int, Callable[[Any], bool] | None, type[MCPError] | str],
                      ...]] = (
    (PARSE_ERROR, None, ParseError),
    (INVALID_REQUEST, _lacks_scope, "mcpsync.auth.errors:InsufficientScopeError"),
    (INVALID_REQUEST, None, InvalidRequestError),
    (METHOD_NOT_FOUND, None, MethodNotFoundError),
    (INVALID_PARAMS, _names_uri, ResourceNotFoundParamsError),
    (INVALID_PARAMS, None, InvalidParamsError),
    (INTERNAL_ERROR, None, InternalError),
    (RESOURCE_NOT_FOUND, None, ResourceNotFoundError),
    (HEADER_MISMATCH, None, HeaderMismatchError),
    (MISSING_CLIENT_CAPABILITY, None, MissingClientCapabilityError),
    (UNSUPPORTED_PROTOCOL_VERSION, None, UnsupportedProtocolVersionError),
    (URL_ELICITATION_REQUIRED, None, UrlElicitationRequiredError),
    (RATE_LIMITED, None, "mcpsync.middleware.errors:RateLimitedError"),
)
_ROWS: Final[dict[int, tuple[tuple[Callable[[Any], bool] | None, type[MCPError] | str],
                             ...]]] = {
    code: tuple((test, klass) for c, test, klass in _CLASSES if c == code)
    for code, *_ in _CLASSES
}


def error_class(code: int, data: Any) -> type[MCPError]:
    """The class of an error object with this ``code`` and ``data``."""
    for test, klass in _ROWS.get(code, ()):
        if test is None or test(data):
            return _load(klass) if isinstance(klass, str) else klass
    return MCPError


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


#: What a client reads when a store the server needs is not answering, on every transport
#: and in every era (a 503 over HTTP before dispatch, a -32603 from a handler): where the
#: store is (a host and port, a file's path, a DSN) is the operator's, in the log.
STORE_UNAVAILABLE = ("Service unavailable: a store this server needs is not answering, "
                     "try again")


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
    had not exited a moment later), ``stderr_tail`` its last lines of stderr (bounded) and
    ``stray_output`` the start of the first line it wrote on stdout that was not a JSON-RPC
    message (bounded; None when there was none): a program that is not an MCP server at all.
    """

    def __init__(self, reason: str, *, command: Sequence[str], returncode: int | None,
                 stderr_tail: str, stray_output: str | None = None) -> None:
        self.reason = reason
        self.command = list(command)
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        self.stray_output = stray_output
        import shlex  # here: errors are imported by every server, this message is rare

        lines = [reason, f"  command: {shlex.join(self.command)}"]
        if stray_output is not None:
            lines.append(f"  it wrote on stdout (not JSON-RPC): {stray_output!r}")
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
                                 stderr_tail=self.stderr_tail, stray_output=self.stray_output)


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


class ToolError(MCPSyncError):
    """Raise from a tool to fail it with this message: the client (the model) reads the
    text as it is, in an ``isError`` result.

    Why a class of its own: any other exception a tool lets escape is a bug, whose text may
    hold what the server must not tell (a path, a query, a credential), so it is logged
    with its traceback and answered with a generic message (docs/server.md, "Errors").
    """
