"""The operations of an OpenAPI document, each with what a tool needs of it: its name,
its description, the arguments it takes (and where each goes in the HTTP request), the
input schema they make together, and the output schema of its success answer.

Flattening. A caller gives one object of arguments; the request spreads them over the path,
the query, headers, cookies and the body. Each parameter is one argument named as the
parameter; a JSON or form body whose schema is an object (``allOf`` of objects merged) gives
one argument per property; any other body (an array, a ``oneOf``, text) is one argument
named ``body``. When one name is used in two places (a path ``id`` and a body ``id``),
*every* argument of that name is suffixed with its place: ``id_path`` and ``id_body``, so
neither is silently taken for the other (then ``_2``... if even that is taken).

The output schema is the success answer's JSON schema when every 2xx answer the operation
declares has one: a schema of an object as it is, any other wrapped as
``{"result": ...}`` (the MCP rule: ``structuredContent`` is an object).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .document import Document, OpenAPIError, SchemaCopy

__all__ = ["Argument", "Operation", "operations_of"]

METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
#: Header parameters OpenAPI says to ignore: the request sets them itself.
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})
_FORM: Final = "application/x-www-form-urlencoded"
_MULTIPART: Final = "multipart/form-data"
_LOCATIONS: Final = ("path", "query", "header", "cookie")


@dataclass(frozen=True)
class Argument:
    """One argument of a tool: where it goes (``path``, ``query``, ``header``, ``cookie``,
    ``body`` for a property of an object body, ``body-whole`` for the whole body) and the
    name it has there."""

    name: str
    location: str
    wire_name: str
    style: str | None = None
    explode: bool | None = None
    schema: Any = None


@dataclass
class Operation:
    """One operation of the document, ready to become a tool, resource or template."""

    method: str
    path: str
    operation_id: str | None
    summary: str | None
    description: str | None
    tags: tuple[str, ...]
    deprecated: bool
    arguments: list[Argument] = field(default_factory=list)
    input_schema: dict[str, Any] = field(default_factory=dict)
    #: The success answer's schema (an object, see the module doc), or ``None``.
    output_schema: dict[str, Any] | None = None
    #: Whether the answer's JSON is wrapped as ``{"result": ...}``.
    wrap_result: bool = False
    #: The body's media type (``None``: the operation takes no body).
    body_type: str | None = None

    @property
    def label(self) -> str:
        """``GET /pets/{id}``, for messages."""
        return f"{self.method} {self.path}"

    def text(self, max_chars: int) -> str | None:
        """The description a tool gets: the summary, then the description."""
        parts = [p.strip() for p in (self.summary, self.description) if p and p.strip()]
        if len(parts) == 2 and parts[1].startswith(parts[0]):
            parts = parts[1:]
        text = "\n\n".join(parts)
        if len(text) > max_chars:
            text = text[:max_chars - 1] + "…"
        return text or None


def operations_of(document: Document) -> list[Operation]:
    """Every operation of ``document``, in document order (paths, then methods).
    More than ``limits.max_operations`` is an :class:`OpenAPIError` before any is read."""
    found = list(_walk(document))
    return [_read(document, path, method, item, op) for path, method, item, op in found]


def _walk(document: Document) -> Iterator[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]:
    limit = document.limits.max_operations
    count = 0
    for path, item in document.data.get("paths", {}).items():
        item = document.deref(item, f"path {path}")
        if not isinstance(item, Mapping):
            raise OpenAPIError(f"path {path}: not an object")
        for method in METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            if not isinstance(operation, Mapping):
                raise OpenAPIError(f"{method.upper()} {path}: not an object")
            count += 1
            if count > limit:
                raise OpenAPIError(f"the document declares more than {limit} operations "
                                   "(max_operations): raise the limit, or serve a part of it")
            yield str(path), method.upper(), item, operation


def _read(document: Document, path: str, method: str, item: Mapping[str, Any],
          raw: Mapping[str, Any]) -> Operation:
    tags = raw.get("tags")
    op_id = raw.get("operationId")
    operation = Operation(
        method=method, path=path,
        operation_id=op_id if isinstance(op_id, str) and op_id else None,
        summary=_str(raw.get("summary")), description=_str(raw.get("description")),
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        deprecated=raw.get("deprecated") is True,
    )
    where = operation.label
    copy = SchemaCopy(document, where, "input")
    properties: dict[str, Any] = {}
    required: list[str] = []
    planned: list[tuple[Argument, bool]] = []
    for param in _parameters(document, item, raw, where):
        location = param["in"]
        wire = str(param["name"])
        if location == "header" and wire.lower() in _IGNORED_HEADERS:
            continue
        argument = Argument(wire, location, wire, _str(param.get("style")),
                            param.get("explode") if isinstance(param.get("explode"), bool)
                            else None, copy.copy(_param_schema(param)))
        if isinstance(param.get("description"), str) and isinstance(argument.schema, dict) \
                and "description" not in argument.schema:
            argument.schema["description"] = param["description"]
        planned.append((argument, location == "path" or param.get("required") is True))
    planned.extend(_body(document, raw, operation, copy, where))
    operation.arguments = _unique([a for a, _ in planned])
    for argument, (_, needed) in zip(operation.arguments, planned, strict=True):
        properties[argument.name] = argument.schema if argument.schema is not None else {}
        if needed:
            required.append(argument.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    operation.input_schema = copy.with_defs(schema)
    _output(document, raw, operation)
    return operation


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _parameters(document: Document, item: Mapping[str, Any], raw: Mapping[str, Any],
                where: str) -> list[Mapping[str, Any]]:
    """The path item's parameters, overridden by the operation's (same name and place)."""
    merged: dict[tuple[str, str], Mapping[str, Any]] = {}
    for source in (item.get("parameters"), raw.get("parameters")):
        if source is None:
            continue
        if not isinstance(source, list):
            raise OpenAPIError(f"{where}: 'parameters' is not a list")
        for entry in source:
            param = document.deref(entry, where)
            if not isinstance(param, Mapping) or param.get("in") not in _LOCATIONS \
                    or not isinstance(param.get("name"), str):
                raise OpenAPIError(f"{where}: a parameter needs a 'name' and an 'in' of "
                                   f"{', '.join(_LOCATIONS)}")
            merged[(param["name"], param["in"])] = param
    return list(merged.values())


def _param_schema(param: Mapping[str, Any]) -> Any:
    if "schema" in param:
        return param["schema"]
    content = param.get("content")
    if isinstance(content, Mapping) and content:
        media = next(iter(content.values()))
        if isinstance(media, Mapping) and "schema" in media:
            return media["schema"]
    return {}


def _body(document: Document, raw: Mapping[str, Any], operation: Operation, copy: SchemaCopy,
          where: str) -> list[tuple[Argument, bool]]:
    body = raw.get("requestBody")
    if body is None:
        return []
    body = document.deref(body, where)
    content = body.get("content") if isinstance(body, Mapping) else None
    if not isinstance(content, Mapping) or not content:
        return []
    body_required = body.get("required") is True
    media_type = _pick_media(list(content))
    operation.body_type = media_type
    media = content[media_type]
    schema = media.get("schema", {}) if isinstance(media, Mapping) else {}
    whole = media_type == "application/json" or media_type.endswith("+json") \
        or media_type in (_FORM, _MULTIPART)
    merged = _object_properties(document, schema, where) if whole else None
    if merged is None:
        converted = copy.copy(schema)
        return [(Argument("body", "body-whole", "body", schema=converted), body_required)]
    props, needed = merged
    out = []
    for name, prop in props.items():
        converted = copy.copy(prop)
        if isinstance(converted, dict) and converted.get("readOnly") is True:
            continue
        out.append((Argument(name, "body", name, schema=converted),
                    body_required and name in needed))
    return out


def _pick_media(types: list[str]) -> str:
    """JSON first, then a form, then multipart, then whatever is first."""
    for wanted in ("application/json",):
        if wanted in types:
            return wanted
    for media in types:
        if media.endswith("+json"):
            return media
    for wanted in (_FORM, _MULTIPART):
        if wanted in types:
            return wanted
    return types[0]


def _object_properties(document: Document, schema: Any,
                       where: str) -> tuple[dict[str, Any], set[str]] | None:
    """The properties (and required names) of a body schema that is an object, ``allOf``
    members merged; ``None`` when it is anything else (its arguments: one ``body``)."""
    props: dict[str, Any] = {}
    needed: set[str] = set()
    stack = [(schema, 0)]
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        node = document.deref(node, where)
        if not isinstance(node, Mapping) or id(node) in seen:
            if isinstance(node, Mapping):
                continue
            return None
        if depth > document.limits.max_depth:
            raise OpenAPIError(f"{where}: allOf nests deeper than {document.limits.max_depth}")
        seen.add(id(node))
        if any(k in node for k in ("oneOf", "anyOf", "not")) or \
                node.get("type", "object") != "object":
            return None
        if node.get("readOnly") is True:
            continue
        for key, value in (node.get("properties") or {}).items():
            if isinstance(value, Mapping) and value.get("readOnly") is True:
                continue
            props.setdefault(str(key), value)
        if isinstance(node.get("required"), list):
            needed.update(str(r) for r in node["required"])
        for member in reversed(node.get("allOf") or []):
            stack.append((member, depth + 1))
        if depth == 0 and "allOf" not in node and "properties" not in node:
            return None  # a free-form object: the body as one argument
    return props, needed


def _unique(arguments: list[Argument]) -> list[Argument]:
    """Suffix names used in two places with their place (see the module doc)."""
    counts: dict[str, int] = {}
    for argument in arguments:
        counts[argument.name] = counts.get(argument.name, 0) + 1
    taken: set[str] = {a.name for a in arguments if counts[a.name] == 1}
    out = []
    for argument in arguments:
        name = argument.name
        if counts[name] > 1:
            place = "body" if argument.location.startswith("body") else argument.location
            base = f"{name}_{place}"
            name, n = base, 1
            while name in taken:
                n += 1
                name = f"{base}_{n}"
        taken.add(name)
        out.append(Argument(name, argument.location, argument.wire_name, argument.style,
                            argument.explode, argument.schema))
    return out


_JSON: Final = re.compile(r"^application/(.+\+)?json$")


def _output(document: Document, raw: Mapping[str, Any], operation: Operation) -> None:
    responses = raw.get("responses")
    if not isinstance(responses, Mapping):
        return
    by_code = {str(code).upper(): answer for code, answer in responses.items()}
    success = sorted(code for code in by_code if code.startswith("2"))
    if not success:
        return
    schemas = []
    for code in success:
        answer = document.deref(by_code[code], operation.label)
        content = answer.get("content") if isinstance(answer, Mapping) else None
        if not isinstance(content, Mapping):
            return  # an answer without a body: no schema holds for every success
        json_types = [m for m in content if _JSON.match(str(m).split(";")[0].strip())]
        if not json_types or not isinstance(content[json_types[0]], Mapping) \
                or "schema" not in content[json_types[0]]:
            return
        schemas.append(content[json_types[0]]["schema"])
    schema = schemas[0]
    copy = SchemaCopy(document, f"{operation.label} (its answer)", "output")
    top = document.deref(schema, operation.label)
    converted = copy.copy(top if isinstance(top, Mapping) else schema)
    if isinstance(converted, dict) and _is_object(converted):
        operation.output_schema = copy.with_defs({"type": "object", **converted})
    else:
        operation.output_schema = copy.with_defs({
            "type": "object", "properties": {"result": converted}, "required": ["result"]})
        operation.wrap_result = True


def _is_object(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "object":
        return True
    return kind is None and "properties" in schema and not any(
        k in schema for k in ("oneOf", "anyOf", "items"))
