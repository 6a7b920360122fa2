"""A tool's failure as the ``CallToolResult`` a model reads: the one mapping.

A tool that fails is answered with an ``isError`` result, not a JSON-RPC error, so the
model can read what went wrong and try again (the spec's "tool execution errors"). Every
place that makes a tool's result and meets a failure comes here: the typed binding (an
exception from the tool, a result JSON cannot hold, a result its output schema refuses),
the registry (the client refused a question the tool asked), the tasks extension (a
deferred continuation that raised) and the encoder (an answer that cannot be written).
So the policy is changed in :func:`tool_failed`, and nowhere else.

The policy, as the official SDKs apply it: the exception's text goes to the model
(``Error executing tool NAME: <exception>``), so a tool reports a failure by raising.
What the peer caused (the client refused a question, or did not answer it in time) is
logged at INFO without a traceback; any other exception once, at ERROR, with its
traceback, here and only here (the callers do not log it again). ``MCPError`` and
cancellation never come here: they are the request's outcome, not the tool's.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import PeerRequestError, RequestTimeoutError

logger = logging.getLogger("mcpsync.tools")


def tool_error(text: str) -> dict[str, Any]:
    """An ``isError`` result saying ``text`` (a message meant for the model as it is)."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def tool_failed(tool: str | None, exc: BaseException, *, doing: str | None = None
                ) -> dict[str, Any]:
    """The result of the tool ``tool`` that failed with ``exc`` (``doing``: what failed,
    when it was not running the tool, e.g. "the result cannot be encoded as JSON"),
    logged once. ``tool`` None: an answer whose tool is not known here any more."""
    if isinstance(exc, PeerRequestError):
        detail = (f"the client answered {exc.method} with error {exc.peer_code}: "
                  f"{exc.peer_message}")
        logger.info("tool %s: %s", tool, detail)
    elif isinstance(exc, RequestTimeoutError):
        detail = str(exc)
        logger.info("tool %s: %s", tool, detail)
    else:
        detail = str(exc)
        logger.error("tool %s failed%s", tool, f" ({doing})" if doing else "",
                     exc_info=(type(exc), exc, exc.__traceback__))
    if doing:
        detail = f"{doing}: {detail}"
    return tool_error(f"Error executing tool {tool}: {detail}" if tool is not None
                      else f"Error: {detail}")


__all__ = ["tool_error", "tool_failed"]
