"""A handler's failure as the answer a client reads: the one mapping.

A tool that fails is answered with an ``isError`` result, not a JSON-RPC error, so the
model can read what went wrong and try again (the spec's "tool execution errors"). Every
place that makes a tool's result and meets a failure comes here: the typed binding (an
exception from the tool, a result JSON cannot hold), the registry (the client refused a
question the tool asked), the tasks extension (a deferred continuation that raised). Every
other handler's exception comes to :func:`handler_failed`, which applies the same policy to
a JSON-RPC error (-32603, the spec's code for an internal error): a resource's or a
prompt's where it is read, any other (a completer, a raw ``method_handler``, a request
scope) where the server runs every handler (``Dispatcher.run_handler``). So the
policy is changed here, and nowhere else.

The policy: an exception's text reaches the wire only when it was written for the client.
That is a :class:`~mcpsync.errors.ToolError` (raised by a tool on purpose), mcpsync's own
account of the client (it refused a question, did not answer it in time, or its session
does not allow what the tool asked) or of a message to it that JSON cannot hold, and the
binding's argument errors (made by the binding, not here). Any other exception is a bug
whose text may hold what must not leave the server (a path, a query, a key): the client
reads "an internal error occurred" with the request id, and the log has the exception and
its traceback under the same id, once, here (the callers do not log it again). The
server's ``ProtocolOptions(expose_tool_errors=True)`` puts the text on the wire, for
development. ``MCPError`` and cancellation never come here: they are the request's
outcome, not the handler's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import (
    STORE_UNAVAILABLE,
    InternalError,
    PeerRequestError,
    ProtocolStateError,
    RequestTimeoutError,
    StoreUnavailableError,
    ToolError,
    UnencodableMessageError,
)

logger = logging.getLogger("mcpsync.tools")


# A Protocol for the type checker only: defining one costs every server's start tens
# of µs, and nothing checks it at run time.
if TYPE_CHECKING:
    class CallFacts(Protocol):
        """What is read of the request's context (a ``HandlerContext``): its id, for the log
        line and the message, and its server, for ``protocol.expose_tool_errors``."""

        @property
        def request_id(self) -> Any: ...

        @property
        def server(self) -> Any: ...


def tool_error(text: str) -> dict[str, Any]:
    """An ``isError`` result saying ``text`` (a message meant for the model as it is)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _facts(ctx: CallFacts | None) -> tuple[Any, bool]:
    """The request id (``None``: not known) and whether the server exposes details."""
    if ctx is None:
        return None, False
    try:
        server = ctx.server
    except RuntimeError:  # a context no mcpsync Server serves: the safe default
        server = None
    protocol = getattr(server, "protocol", None)
    return ctx.request_id, getattr(protocol, "expose_tool_errors", False) is True


def _masked(request_id: Any) -> str:
    where = f" (request {request_id!r})" if request_id is not None else ""
    return f"an internal error occurred{where}"


def tool_failed(tool: str | None, exc: BaseException, *, doing: str | None = None,
                ctx: CallFacts | None = None) -> dict[str, Any]:
    """The result of the tool ``tool`` that failed with ``exc`` (``doing``: what failed,
    when it was not running the tool, e.g. "the result cannot be encoded as JSON"),
    logged once. ``tool`` None: an answer whose tool is not known here any more. ``ctx``:
    the request's context (its id, its server's ``protocol.expose_tool_errors``)."""
    request_id, expose = _facts(ctx)
    if isinstance(exc, PeerRequestError):
        detail = (f"the client answered {exc.method} with error {exc.peer_code}: "
                  f"{exc.peer_message}")
        logger.info("tool %s: %s", tool, detail)
    elif isinstance(exc, (RequestTimeoutError, ProtocolStateError)):
        # The client did not answer in time, or its session does not allow what the tool
        # asked of it (a capability it did not declare): mcpsync's words, about the client.
        detail = str(exc)
        logger.info("tool %s: %s", tool, detail)
    elif isinstance(exc, StoreUnavailableError):
        # A shared store (Redis) is away, not a bug of the tool: the model reads that it
        # may try again; where the store is stays in the log.
        logger.warning("tool %s (request %r): %s", tool, request_id, exc)
        detail = STORE_UNAVAILABLE
    elif isinstance(exc, ToolError):
        detail = str(exc)
        logger.info("tool %s (request %r) reported: %s", tool, request_id, detail)
    elif isinstance(exc, UnencodableMessageError):
        # mcpsync's account of a message the tool sent this client (a log, a progress
        # note) that JSON cannot hold: what it quotes was bound for this client anyway.
        detail = str(exc)
        logger.warning("tool %s (request %r): %s", tool, request_id, detail)
    else:
        logger.error("tool %s failed%s (request %r)", tool, f" ({doing})" if doing else "",
                     request_id, exc_info=(type(exc), exc, exc.__traceback__))
        if not expose:  # what mcpsync says it was doing is safe; the exception's text not
            return tool_error(_text(tool, doing or _masked(request_id)))
        detail = str(exc)
    return tool_error(_text(tool, f"{doing}: {detail}" if doing else detail))


def _text(tool: str | None, detail: str) -> str:
    return f"Error executing tool {tool}: {detail}" if tool is not None else f"Error: {detail}"


def handler_escaped(what: str, request_id: Any) -> InternalError:
    """The -32603 error a request is answered with when its handler ended by an exception
    that is not an :class:`Exception` (Ctrl-C, ``sys.exit()``): the generic text with the
    request id, never the exception's. Not logged here: the exception goes on, on its
    thread, to whoever logs or acts on it."""
    return InternalError(f"Error in {what}: {_masked(request_id)}")


def handler_failed(what: str, exc: Exception, ctx: CallFacts | None = None) -> InternalError:
    """The -32603 error a handler's exception is answered with (``what``: e.g. "resource
    config://app", or the method: "completion/complete"), logged once with its traceback:
    the text only for a :class:`~mcpsync.errors.ToolError` or when the server exposes
    details."""
    request_id, expose = _facts(ctx)
    if isinstance(exc, StoreUnavailableError):
        # Not a bug of the handler: a shared store (Redis) is away. The client reads that
        # it may try again; where the store is stays in the log.
        logger.warning("%s (request %r): %s", what, request_id, exc)
        return InternalError(STORE_UNAVAILABLE)
    if isinstance(exc, ToolError):
        logger.info("%s (request %r) reported: %s", what, request_id, exc)
        return InternalError(f"Error in {what}: {exc}")
    logger.error("%s failed (request %r)", what, request_id,
                 exc_info=(type(exc), exc, exc.__traceback__))
    detail = str(exc) if expose else _masked(request_id)
    return InternalError(f"Error in {what}: {detail}")


__all__ = ["handler_escaped", "handler_failed", "tool_error", "tool_failed"]
