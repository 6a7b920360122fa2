"""Host handlers: how a client serves what a server asks of it.

The same handlers answer real requests (handshake era, on the client's handler threads)
and the input requests of 2026-07-28 multi round-trip results (on the calling thread).
Each lives in the client's :class:`~mcpsync.dispatch.registry.MethodRegistry` as a raw
method handler ``fn(request, params) -> result dict``, the shape of a custom method's:
the typed host handlers given to ``Client(...)`` are wrapped into that shape here.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any, Final

from ..codec import from_wire, to_wire
from ..dispatch.questions import INPUT_REQUEST_METHODS
from ..errors import InvalidParamsError, RequestCancelledError
from ..types.client_features import CreateMessageRequestParams, ElicitRequestParams

#: The only requests a 2026-07-28 server may ask as ``inputRequests`` (the schema's
#: ``InputRequest``): a custom method can not travel in that era.
INPUT_METHODS: Final = INPUT_REQUEST_METHODS


class HostRequest:
    """What a host handler may know about the server's request: its id and cancellation.

    The context of a client's method handlers (built-in and custom): ``request_id``,
    ``method``, ``cancelled`` (a ``threading.Event`` set when the server cancels the
    request or the connection ends) and :meth:`check_cancelled`.
    """

    def __init__(self, request_id: Any, method: str, cancelled: threading.Event) -> None:
        #: The id of the server's request (``None`` for a 2026-07-28 input request).
        self.request_id = request_id
        self.method = method
        self.cancelled = cancelled

    def check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise RequestCancelledError(f"{self.method} was cancelled by the server")


#: A client's raw method handler: ``fn(request, params) -> result dict``.
ClientMethodHandler = Callable[[HostRequest, dict[str, Any]], dict[str, Any]]
#: A client's per-method notification handler: ``fn(params)``.
ClientNotificationHandler = Callable[[dict[str, Any]], None]


def call_host(handler: Callable[..., Any], params: Any, request: HostRequest) -> Any:
    """Call ``fn(params)`` or, when it takes a second required positional, ``fn(params,
    request)`` with the :class:`HostRequest`."""
    try:
        positional = [
            p for p in inspect.signature(handler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        wants_request = len(positional) >= 2 and positional[1].default is inspect.Parameter.empty
    except (TypeError, ValueError):
        wants_request = False
    if wants_request:
        return handler(params, request)
    return handler(params)


def elicitation_method(handler: Callable[..., Any]) -> ClientMethodHandler:
    """``elicitation/create`` served by a typed elicitation handler."""

    def serve(request: HostRequest, raw: dict[str, Any]) -> dict[str, Any]:
        params = from_wire(ElicitRequestParams, raw)
        answer = wire_result(call_host(handler, params, request))
        return with_defaults(answer, raw.get("requestedSchema"))

    return serve


def sampling_method(handler: Callable[..., Any], tools: bool) -> ClientMethodHandler:
    """``sampling/createMessage`` served by a typed sampling handler."""

    def serve(request: HostRequest, raw: dict[str, Any]) -> dict[str, Any]:
        if (raw.get("tools") or raw.get("toolChoice")) and not tools:
            raise InvalidParamsError("sampling with tools was not declared by this client")
        params = from_wire(CreateMessageRequestParams, raw)
        return wire_result(call_host(handler, params, request))

    return serve


def roots_method(source: Callable[[], Any]) -> ClientMethodHandler:
    """``roots/list`` served from ``source()``: a sequence of roots, or a callable
    returning one (read at each request)."""

    def serve(request: HostRequest, raw: dict[str, Any]) -> dict[str, Any]:
        roots = source()
        if callable(roots):
            roots = roots()
        return {"roots": [to_wire(r) for r in roots]}

    return serve


def ping_method(request: HostRequest, raw: dict[str, Any]) -> dict[str, Any]:
    return {}


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
