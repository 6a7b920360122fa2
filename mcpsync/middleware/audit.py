"""``AuditLog``: one structured record per request: who called what, and how it ended.

A record is a ``logging`` record on the logger you give (``"mcpsync.audit"`` by default)
whose message is the record as one line of JSON, and whose ``mcp_audit`` attribute is the
same as a dict (for a JSON formatter or a handler of your own)::

    {"method": "tools/call", "tool": "search", "principal": "5be0...", "client": "10.0.0.7",
     "outcome": "ok", "durationMs": 12.3, "traceId": "4bf92f35...", "arguments":
     {"query": "[redacted]"}}

``outcome``: ``ok``; ``tool_error`` (a result with ``isError``); ``refused`` (a guard's
limit, -32029); ``error`` (with ``code``: any other JSON-RPC error); ``cancelled``;
``input_required`` (a 2026-07-28 handler asked the client a question). ``principal`` is the
opaque key mcpsync binds sessions and tasks to (never a token). ``traceId``: the
OpenTelemetry trace the request belongs to: its server span when telemetry records, else
the caller's ``traceparent`` from the request's ``_meta``. Arguments are redacted by
default: their names are kept, their values replaced (``redact=False`` logs them, which
may put secrets in the log).

Add it first (outermost) to record what the other guards refuse.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from collections.abc import Iterable
from typing import Any

from ..dispatch.context import HandlerContext
from ..dispatch.questions import InputRequired
from ..errors import INTERNAL_ERROR, RATE_LIMITED, MCPError, RequestCancelledError
from ..server.handlers import MethodHandler
from ..telemetry.operation import current as current_operation
from .request import client_address, networks, principal, target

REDACTED = "[redacted]"
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")


def trace_id(params: dict[str, Any]) -> str | None:
    """The trace this request belongs to (see the module docstring), as 32 hex digits."""
    operation = current_operation.get()
    parent = operation.traceparent() if operation is not None else None
    if parent is None:
        parent = _otel_traceparent()
    if parent is None:
        meta = params.get("_meta")
        parent = meta.get("traceparent") if isinstance(meta, dict) else None
    found = _TRACEPARENT.match(parent) if isinstance(parent, str) else None
    if found is None or found.group(1) == "0" * 32:
        return None
    return found.group(1)


def _otel_traceparent() -> str | None:
    """The current OpenTelemetry span's context, if the API is installed and one is set
    (a WSGI instrumentation's span, say). The import is tried once per process."""
    trace = _otel_trace()
    if trace is None:
        return None
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


@functools.cache
def _otel_trace() -> Any:
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    return trace


class AuditLog:
    """``AuditLog(logger=None, redact=True, level=logging.INFO)``: see the module.

    ``logger``: a ``logging.Logger`` or its name (default ``"mcpsync.audit"``).
    ``redact``: replace argument values (default); ``False`` logs them as sent.
    ``trusted_proxies``: as for RateLimit: ``client`` is then the address the proxy saw.
    """

    def __init__(self, logger: logging.Logger | str | None = None, *, redact: bool = True,
                 level: int = logging.INFO, trusted_proxies: Iterable[str] = ()) -> None:
        self._proxies = networks(trusted_proxies)
        self.logger = logger if isinstance(logger, logging.Logger) else \
            logging.getLogger(logger or "mcpsync.audit")
        self.redact = redact
        self.level = level

    def __call__(self, ctx: HandlerContext, params: dict[str, Any],
                 next_: MethodHandler) -> dict[str, Any]:
        if not self.logger.isEnabledFor(self.level):
            return next_(ctx, params)
        started = time.perf_counter()
        outcome: dict[str, Any] = {"outcome": "error"}
        try:
            result = next_(ctx, params)
        except RequestCancelledError:
            outcome = {"outcome": "cancelled"}
            raise
        except MCPError as exc:
            outcome = {"outcome": "refused" if exc.code == RATE_LIMITED else "error",
                       "code": exc.code}
            raise
        except InputRequired:
            outcome = {"outcome": "input_required"}
            raise
        except Exception:
            outcome = {"outcome": "error", "code": INTERNAL_ERROR}
            raise
        else:
            outcome = {"outcome": "tool_error" if result.get("isError") is True else "ok"}
            return result
        finally:
            self._emit(ctx, params, outcome, time.perf_counter() - started)

    def _emit(self, ctx: HandlerContext, params: dict[str, Any], outcome: dict[str, Any],
              elapsed: float) -> None:
        method = ctx.method
        record: dict[str, Any] = {"method": method}
        item = target(method, params)
        if item is not None:
            record["uri" if "uri" in params else "tool" if method == "tools/call"
                   else "name"] = item
        record["principal"] = principal(ctx) or None
        record["client"] = client_address(ctx, self._proxies)
        record.update(outcome)
        record["durationMs"] = round(elapsed * 1000, 3)
        record["traceId"] = trace_id(params)
        arguments = params.get("arguments")
        if isinstance(arguments, dict):
            record["arguments"] = ({key: REDACTED for key in arguments} if self.redact
                                   else arguments)
        try:
            line = json.dumps(record, separators=(",", ":"), default=str)
            self.logger.log(self.level, line, extra={"mcp_audit": record})
        except Exception:  # an audit handler that fails must not fail the request
            logging.getLogger("mcpsync.middleware").exception("audit record not written")

    def __repr__(self) -> str:
        return f"AuditLog({self.logger.name!r})"


__all__ = ["REDACTED", "AuditLog", "trace_id"]
