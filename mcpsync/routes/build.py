"""Put a document's operations on a server: tools, resources and templates as the route
maps say, each calling its operation through a :class:`~.outbound.Caller`.

A tool is registered with the input schema the operation's arguments make (advertised as
it is and every call validated against it), the output schema of its success answer
(checked against each answer: an answer that breaks its own documentation is an
``isError`` result that says how, never structured content a client would refuse), and
hints from its method: GET and HEAD read only; PUT and DELETE idempotent; DELETE
destructive. A deprecated operation says so at the start of its description.

A resource (``kind="resource"``) is a GET without arguments, read at
``<scheme>://<name>``; a template (``kind="template"``) is a GET whose path parameters are
the template's variables and whose query parameters are its optional ``{?...}`` part:
``<scheme>://<name>/{id}{?verbose}``. An operation whose arguments cannot fit a URI (a body,
a required header) named a resource or template is refused when the server is built. A
resource read answered 404 is "resource not found"; any other failure an internal error
quoting the status.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..codec import from_wire
from ..dispatch.context import HandlerContext
from ..dispatch.fastcheck import SchemaValidator
from ..dispatch.typed import ToolBinding
from ..errors import INTERNAL_ERROR, MCPError, ResourceNotFoundError
from ..server.tools import RegisteredTool, describe
from ..types.tools import CallToolResult
from .calls import HttpAnswer, build_request, error_text, result_of
from .document import Document, OpenAPIError
from .limits import RouteLimits
from .maps import DEFAULT_ROUTE_MAPS, RouteMap, kind_of, sanitize, tool_names
from .operations import Operation, operations_of
from .outbound import Caller, CallFailed

if TYPE_CHECKING:
    from ..server.server import ServerCore

__all__ = ["Generated", "install"]

_VARIABLE = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class Generated:
    """What was made of one operation: its name there and its kind."""

    name: str
    kind: str
    operation: Operation


def install(server: ServerCore, document: Document, caller: Caller, *,
            route_maps: Iterable[RouteMap] | None = None, uri_scheme: str = "api",
            limits: RouteLimits | None = None) -> list[Generated]:
    """Register every operation of ``document`` that the route maps keep on ``server``.
    Returns what was made, in document order."""
    limits = limits or document.limits
    maps = tuple(DEFAULT_ROUTE_MAPS if route_maps is None else route_maps)
    operations = operations_of(document)
    kinds = [kind_of(op, maps) for op in operations]
    kept = [(op, kind) for op, kind in zip(operations, kinds, strict=True) if kind != "exclude"]
    names = tool_names(op for op, _ in kept)
    made = []
    for (operation, kind), name in zip(kept, names, strict=True):
        if kind == "tool":
            _add_tool(server, operation, name, caller, limits, uri_scheme)
        else:
            _add_resource(server, operation, name, kind, caller, limits, uri_scheme)
        made.append(Generated(name, kind, operation))
    return made


def _annotations(operation: Operation) -> dict[str, Any]:
    method = operation.method
    hints: dict[str, Any] = {"readOnlyHint": method in ("GET", "HEAD", "OPTIONS")}
    if method in ("PUT", "DELETE", "GET", "HEAD", "OPTIONS"):
        hints["idempotentHint"] = True
    if method in ("POST", "PUT", "PATCH", "DELETE"):
        hints["destructiveHint"] = method == "DELETE"
    return hints


def _add_tool(server: ServerCore, operation: Operation, name: str, caller: Caller,
              limits: RouteLimits, scheme: str) -> None:
    validator = _validator(operation.output_schema, operation) \
        if operation.output_schema is not None else None
    uri = f"{scheme}://{name}/result"

    def call(ctx: HandlerContext, **arguments: Any) -> Any:
        request = build_request(operation, arguments)
        try:
            answer = caller.send(request, ctx, f"{operation.label} ({name})")
        except CallFailed as exc:
            return _failure(str(exc))
        result = result_of(operation, answer, uri=uri, excerpt_bytes=limits.error_excerpt_bytes,
                           validate=None if validator is None else _errors_of(validator))
        from ..codec import from_wire
        from ..types.tools import CallToolResult

        return from_wire(CallToolResult, result)

    call.__name__ = name
    call.__doc__ = None
    text = operation.text(limits.max_description_chars)
    if operation.deprecated:
        text = "(Deprecated.) " + (text or "")
    try:
        binding = ToolBinding.from_function(call, name=name, description=text or "",
                                            structured_output=False, context_type=HandlerContext,
                                            input_schema=operation.input_schema)
    except Exception as exc:  # jsonschema's SchemaError: the document's schema is not valid
        raise OpenAPIError(f"{operation.label}: its parameters' schema is not valid JSON "
                           f"Schema: {str(exc).splitlines()[0]}") from None
    wire = describe(binding, title=operation.summary if operation.summary and len(
        operation.summary) <= 200 else None, annotations=_annotations(operation),
                    meta={"io.mcpsync/route": {"method": operation.method,
                                               "path": operation.path}})
    if operation.output_schema is not None:
        wire["outputSchema"] = operation.output_schema
    server.tools.add(RegisteredTool(binding, wire))


def _failure(text: str) -> Any:
    return from_wire(CallToolResult, {"content": [{"type": "text", "text": text}],
                                      "isError": True})


def _validator(schema: dict[str, Any], operation: Operation) -> SchemaValidator:
    """The answer's check: compiled when the schema is in the fast checker's subset (which
    only compiles what it understands), else jsonschema after a metaschema check."""
    try:
        return SchemaValidator(schema, generated=True)
    except Exception as exc:  # jsonschema's SchemaError
        raise OpenAPIError(f"{operation.label}: its answer's schema is not valid JSON "
                           f"Schema: {str(exc).splitlines()[0]}") from None


def _errors_of(validator: SchemaValidator) -> Any:
    def errors(value: Any) -> list[str]:
        if validator.is_valid(value):
            return []
        found = validator.errors(value)
        return [e.message for e in found] or ["it does not match"]

    return errors


def _add_resource(server: ServerCore, operation: Operation, name: str, kind: str,
                  caller: Caller, limits: RouteLimits, scheme: str) -> None:
    if operation.method != "GET":
        raise OpenAPIError(f"{operation.label}: only a GET can be a {kind}")
    variables = []
    query = []
    for argument in operation.arguments:
        if argument.location == "path":
            variables.append(argument)
        elif argument.location == "query" and _VARIABLE.match(argument.name):
            query.append(argument)
        elif argument.name in operation.input_schema.get("required", ()):
            raise OpenAPIError(f"{operation.label}: its required argument {argument.name!r} "
                               f"({argument.location}) cannot be part of a URI, so it cannot "
                               f"be a {kind}; make it a tool")
    if kind == "resource" and (variables or query):
        raise OpenAPIError(f"{operation.label} takes arguments: it can be a 'template', "
                           "not a 'resource'")
    for argument in variables:
        if not _VARIABLE.match(argument.name):
            raise OpenAPIError(f"{operation.label}: the path parameter {argument.name!r} "
                               "cannot be a URI template variable")
    host = sanitize(name)
    uri = f"{scheme}://{host}"
    if variables:
        uri += "".join("/{" + a.name + "}" for a in variables)
    if query:
        uri += "{?" + ",".join(a.name for a in query) + "}"
    mime = "application/json" if operation.output_schema is not None else None

    def read(ctx: HandlerContext, **arguments: Any) -> Any:
        given = {k: v for k, v in arguments.items() if v not in (None, "")}
        try:
            answer = caller.send(build_request(operation, given), ctx,
                                 f"{operation.label} ({name})")
        except CallFailed as exc:
            raise MCPError(str(exc), code=INTERNAL_ERROR) from None
        return _contents(operation, answer, limits)

    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY,
                                    annotation=HandlerContext)]
    parameters += [inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, annotation=str)
                   for a in variables]
    parameters += [inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                     annotation=str | None) for a in query]
    read.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    read.__annotations__ = {p.name: p.annotation for p in parameters}
    read.__name__ = name
    server.resource(uri, name=name, description=operation.text(limits.max_description_chars),
                    mime_type=mime)(read)


def _contents(operation: Operation, answer: HttpAnswer, limits: RouteLimits) -> Any:
    if answer.status == 404:
        raise ResourceNotFoundError(error_text(operation, answer, limits.error_excerpt_bytes))
    if not 200 <= answer.status < 300:
        raise MCPError(error_text(operation, answer, limits.error_excerpt_bytes),
                       code=INTERNAL_ERROR)
    media = answer.media_type
    if media.startswith("text/") or media.endswith("json") or media.endswith("xml"):
        return answer.body.decode("utf-8", errors="replace")
    return answer.body
