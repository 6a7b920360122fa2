"""Host handlers: how a client serves what a server asks of it.

The same handlers answer real requests (handshake era, on the client's handler threads)
and the input requests of 2026-07-28 multi round-trip results (on the calling thread).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..codec import to_wire
from ..errors import RequestCancelledError

if TYPE_CHECKING:
    from ..engine.connection import InboundRequest


class HostRequest:
    """What a host handler may know about the server's request: its id and cancellation."""

    def __init__(self, request_id: Any, method: str, cancelled: threading.Event) -> None:
        #: The id of the server's request (``None`` for a 2026-07-28 input request).
        self.request_id = request_id
        self.method = method
        self.cancelled = cancelled

    def check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise RequestCancelledError(f"{self.method} was cancelled by the server")


def call_host(handler: Callable[..., Any], params: Any, inbound: InboundRequest | None) -> Any:
    """Call ``fn(params)`` or, when it takes a second required positional, ``fn(params,
    request)`` with a :class:`HostRequest`."""
    try:
        positional = [
            p for p in inspect.signature(handler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        wants_request = len(positional) >= 2 and positional[1].default is inspect.Parameter.empty
    except (TypeError, ValueError):
        wants_request = False
    if wants_request:
        if inbound is not None:
            return handler(params, HostRequest(inbound.id, inbound.method, inbound.cancelled))
        return handler(params, HostRequest(None, "input request", threading.Event()))
    return handler(params)


def wire_result(value: Any) -> dict[str, Any]:
    """A handler's typed result (or wire dict) as the result object to send."""
    wire = to_wire(value)
    if not isinstance(wire, dict):
        raise TypeError(f"a host handler must return a result object, not {type(value)!r}")
    return wire


def with_defaults(answer: dict[str, Any], schema: Any) -> dict[str, Any]:
    """An accepted form answer with the schema's defaults for the fields the user left
    out (SEP-1034: the form starts from the defaults, so an untouched field means its
    default)."""
    if answer.get("action") != "accept" or not isinstance(schema, dict):
        return answer
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return answer
    content = dict(answer.get("content") or {})
    for name, prop in properties.items():
        if name not in content and isinstance(prop, dict) and "default" in prop:
            content[name] = prop["default"]
    return {**answer, "content": content}
