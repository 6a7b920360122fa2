"""The request-metadata headers of Streamable HTTP (2026-07-28), sans-IO.

The body's method, name and ``x-mcp-header`` tool arguments are mirrored into
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-{Name}`` so that intermediaries can route
without parsing JSON. The client computes them with :func:`request_headers`; the server
checks them against the body with :func:`mismatch`. Values that are not plain visible
ASCII travel as ``=?base64?...?=``.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Final

from .methods import VIEWS

PROTOCOL_VERSION: Final = "MCP-Protocol-Version"
METHOD: Final = "Mcp-Method"
NAME: Final = "Mcp-Name"
#: The two as the intake's lower-cased header names.
_METHOD_KEY: Final = METHOD.lower()
_NAME_KEY: Final = NAME.lower()
PARAM_PREFIX: Final = "Mcp-Param-"
SESSION_ID: Final = "Mcp-Session-Id"

#: Methods whose target travels in ``Mcp-Name``, and the params field it comes from (the
#: method table's 2026-07-28 requests with a target: tools, prompts, resources, and the
#: tasks extension's task ids).
NAME_SOURCES: Final = VIEWS.name_sources
#: Methods whose ``Mcp-Param-*`` headers come from a tool's ``x-mcp-header`` arguments.
_TOOL_METHODS: Final = VIEWS.tool_methods

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_MAX_SAFE_INTEGER: Final = 2**53 - 1


class HeaderValueError(ValueError):
    """A header value that cannot be decoded."""


def encode_value(value: str | int | bool) -> str:
    """A body value as a header value: plain when safe, else the base64 sentinel."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    else:
        text = value
    if _SAFE.match(text) and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    # surrogatepass: JSON can carry a lone surrogate ("\ud800"); its header must still
    # match the body, so it round-trips through decode_value instead of failing the call.
    return "=?base64?" + base64.b64encode(text.encode("utf-8", "surrogatepass")).decode(
        "ascii") + "?="


def decode_value(header: str) -> str:
    """A header value as text (base64 sentinel decoded). Raises HeaderValueError."""
    header = header.strip(" \t")  # RFC 9110 §5.5: optional whitespace is not the value
    if header.startswith("=?base64?") and header.endswith("?=") and len(header) >= 11:
        try:
            return base64.b64decode(header[9:-2], validate=True).decode("utf-8",
                                                                       "surrogatepass")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise HeaderValueError(f"invalid base64 header value {header!r}") from exc
    if header and not _SAFE.match(header):
        raise HeaderValueError(f"header value {header!r} has characters that need encoding")
    return header


def header_params(input_schema: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
    """The ``x-mcp-header`` annotations of a tool's input schema: header name → the chain
    of ``properties`` keys to the annotated argument. ``None`` when an annotation is
    invalid (the whole tool definition is then invalid)."""
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()

    def walk(schema: dict[str, Any], path: tuple[str, ...]) -> bool:
        properties = schema.get("properties")
        if not isinstance(properties, dict):
            return True
        for prop, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            if "x-mcp-header" in sub:
                name = sub["x-mcp-header"]
                if (not isinstance(name, str) or not _TOKEN.match(name)
                        or name.lower() in seen
                        or sub.get("type") not in ("string", "integer", "boolean")):
                    return False
                seen.add(name.lower())
                found[name] = (*path, prop)
            if not walk(sub, (*path, prop)):
                return False
        return True

    if not walk(input_schema, ()):
        return None
    # An annotation anywhere else (under items, anyOf, $defs, ...) invalidates the tool.
    if _count(input_schema) != len(found):
        return None
    return found


def _count(schema: Any) -> int:
    if isinstance(schema, dict):
        here = 1 if "x-mcp-header" in schema else 0
        return here + sum(_count(v) for k, v in schema.items() if k != "x-mcp-header")
    if isinstance(schema, list):
        return sum(_count(v) for v in schema)
    return 0


def _lookup(arguments: Any, path: tuple[str, ...]) -> Any:
    value = arguments
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def request_headers(message: dict[str, Any], protocol_version: str,
                    tool_headers: dict[str, tuple[str, ...]] | None = None) -> dict[str, str]:
    """The metadata headers a client sends with ``message`` (a request dict)."""
    headers = {PROTOCOL_VERSION: protocol_version}
    method = message.get("method")
    if not isinstance(method, str):
        return headers
    headers[METHOD] = method
    params = message.get("params") or {}
    source = NAME_SOURCES.get(method)
    if source is not None and isinstance(params.get(source), str):
        headers[NAME] = encode_value(params[source])
    if method in _TOOL_METHODS and tool_headers:
        arguments = params.get("arguments") or {}
        for name, path in tool_headers.items():
            value = _lookup(arguments, path)
            if isinstance(value, (str, bool)) or (
                    isinstance(value, int) and abs(value) <= _MAX_SAFE_INTEGER):
                headers[PARAM_PREFIX + name] = encode_value(value)
            elif isinstance(value, float) and value.is_integer():
                headers[PARAM_PREFIX + name] = encode_value(int(value))
    return headers


def mismatch(headers: Mapping[str, str], message: Mapping[str, Any],
             tool_headers: dict[str, tuple[str, ...]] | None = None) -> str | None:
    """Why ``headers`` (lower-cased names) disagree with the body, or ``None`` if they agree.

    ``MCP-Protocol-Version`` is compared with the body's ``_meta`` version by the caller.
    """
    params = message.get("params")
    return body_mismatch(headers, message.get("method"),
                         params if isinstance(params, dict) else {}, tool_headers)


def body_mismatch(headers: Mapping[str, str], method: Any, params: Mapping[str, Any],
                  tool_headers: dict[str, tuple[str, ...]] | None = None) -> str | None:
    """:func:`mismatch` of a request already taken apart (``params`` an object): what the
    envelope check calls for every 2026-07-28 request on HTTP."""
    got = headers.get(_METHOD_KEY)
    if got is None:
        return f"the {METHOD} header is required"
    if got != method:
        return f"{METHOD} header value {got!r} does not match body value {method!r}"
    source = NAME_SOURCES.get(method) if isinstance(method, str) else None
    if source is not None:
        raw = headers.get(_NAME_KEY)
        if raw is None:
            return f"the {NAME} header is required for {method}"
        try:
            name = decode_value(raw)
        except HeaderValueError as exc:
            return str(exc)
        if name != params.get(source):
            return f"{NAME} header value {name!r} does not match body value {params.get(source)!r}"
    if tool_headers and method in _TOOL_METHODS:
        return param_mismatch(headers, params.get("arguments"), tool_headers)
    return None


def param_mismatch(headers: Mapping[str, str], arguments: Any,
                   tool_headers: dict[str, tuple[str, ...]]) -> str | None:
    """Why the ``Mcp-Param-*`` headers (lower-cased names) disagree with a call's
    ``arguments``, or ``None``: the part of :func:`mismatch` a server that finds the
    tool's map later (a proxy, which learns it from its remote) checks on its own."""
    for name, path in tool_headers.items():
        value = _lookup(arguments, path)
        raw = headers.get((PARAM_PREFIX + name).lower())
        if value is None:
            continue  # absent or null: no header expected (an extra one is ignored)
        if raw is None:
            return f"the {PARAM_PREFIX}{name} header is required (the argument is present)"
        try:
            text = decode_value(raw)
        except HeaderValueError as exc:
            return str(exc)
        if not _same(text, value):
            return (f"{PARAM_PREFIX}{name} header value {text!r} does not match body "
                    f"value {value!r}")
    return None


def _same(text: str, value: Any) -> bool:
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        try:
            return bool(float(text) == float(value))
        except ValueError:
            return False
    return bool(text == value)


def valid_tools(tools: list[dict[str, Any]]) -> tuple[list[dict[str, Any]],
                                                      dict[str, dict[str, tuple[str, ...]]]]:
    """Drop tools whose ``x-mcp-header`` annotations are invalid (with a warning); return
    the rest and each tool's header map."""
    kept: list[dict[str, Any]] = []
    maps: dict[str, dict[str, tuple[str, ...]]] = {}
    for tool in tools:
        schema = tool.get("inputSchema")
        found = header_params(schema) if isinstance(schema, dict) else {}
        if found is None:
            warnings.warn(f"tool {tool.get('name')!r} has an invalid x-mcp-header annotation "
                          "and is left out", stacklevel=3)
            continue
        kept.append(tool)
        if found:
            maps[str(tool.get("name"))] = found
    return kept, maps


#: Tool descriptions whose header maps one :class:`HeaderMapCache` keeps, at most.
MAX_CACHED_MAPS: Final = 1024


class HeaderMapCache:
    """The header map of each tool description, computed once while it is in use.

    Keyed by the description's identity, and each entry holds the description itself:
    while cached it stays alive, so its ``id()`` can not be given to another object (a
    map keyed by a bare ``id()`` went to a new tool once the old one was gone). Bounded:
    past :data:`MAX_CACHED_MAPS` the least recently used entry goes (computed again if it
    is asked for). Thread-safe."""

    def __init__(self, limit: int = MAX_CACHED_MAPS) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._maps: OrderedDict[int, tuple[object, dict[str, tuple[str, ...]] | None]] = (
            OrderedDict())

    def get(self, description: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
        """``description``'s header map (:func:`header_params` of its ``inputSchema``)."""
        key = id(description)
        with self._lock:
            entry = self._maps.get(key)
            if entry is not None and entry[0] is description:
                self._maps.move_to_end(key)
                return entry[1]
        schema = description.get("inputSchema")
        found = header_params(schema) if isinstance(schema, dict) else None
        with self._lock:
            self._maps[key] = (description, found)
            self._maps.move_to_end(key)
            while len(self._maps) > self._limit:
                self._maps.popitem(last=False)
        return found

    def __len__(self) -> int:
        return len(self._maps)
