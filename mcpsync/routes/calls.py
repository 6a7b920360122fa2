"""From a tool's arguments to the HTTP request of its operation, and from the answer to
the tool's result.

The request follows OpenAPI's serialization rules for the common styles: path values
percent-encoded (an array joined with commas); query arrays repeated (``form``, exploded:
the default) or comma-joined (``explode: false``), space- or pipe-delimited, objects as
their keys (``form``) or ``name[key]`` (``deepObject``); headers and cookies as text. A
JSON body is the body properties as one object (or the ``body`` argument as it is); a form
body is URL-encoded; a multipart body sends each property as a part.

The answer: 2xx JSON becomes structured content (wrapped as ``{"result": ...}`` when the
output schema says so) and a text block of the JSON; text stays text; anything else is
binary, an embedded resource with a base64 blob. Any other status is an ``isError``
result naming the status and quoting at most ``error_excerpt_bytes`` of the body, so the
model sees what the API said.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final

from ..protocol import jsonrpc
from .operations import Operation

__all__ = ["HttpAnswer", "HttpRequest", "build_request", "result_of"]

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_DELIMITERS: Final = {"spaceDelimited": " ", "pipeDelimited": "|"}


@dataclass
class HttpRequest:
    """One request to make: ``path`` is expanded and percent-encoded, relative to the base."""

    method: str
    path: str
    query: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    content_type: str | None = None

    @property
    def target(self) -> str:
        """The path with its query string."""
        if not self.query:
            return self.path
        return f"{self.path}?{urllib.parse.urlencode(self.query)}"


@dataclass(frozen=True)
class HttpAnswer:
    """What came back: the status, the headers (lower-case names) and the body read."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return _dumps(value)
    return str(value)


def _query_pairs(name: str, value: Any, style: str | None,
                 explode: bool | None) -> list[tuple[str, str]]:
    style = style or "form"
    explode = style == "form" if explode is None else explode
    if isinstance(value, list):
        if style in _DELIMITERS:
            return [(name, _DELIMITERS[style].join(_text(v) for v in value))]
        if explode:
            return [(name, _text(v)) for v in value]
        return [(name, ",".join(_text(v) for v in value))]
    if isinstance(value, dict):
        if style == "deepObject":
            return [(f"{name}[{k}]", _text(v)) for k, v in value.items()]
        if explode:
            return [(str(k), _text(v)) for k, v in value.items()]
        return [(name, ",".join(f"{k},{_text(v)}" for k, v in value.items()))]
    return [(name, _text(value))]


def _flat(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k},{_text(v)}" for k, v in value.items())
    return _text(value)


def _segment(value: str) -> str:
    """A path value percent-encoded, ``/`` included; a value of only dots encoded too, so
    that no argument can climb out of its route (``/files/..`` is another resource)."""
    if value and set(value) == {"."}:
        return "%2E" * len(value)
    return urllib.parse.quote(value, safe="")


def build_request(operation: Operation, arguments: Mapping[str, Any]) -> HttpRequest:
    """The request ``arguments`` (already validated against the input schema) make."""
    path = operation.path
    request = HttpRequest(operation.method, path)
    body: dict[str, Any] = {}
    whole: Any = None
    has_whole = False
    for argument in operation.arguments:
        if argument.name not in arguments:
            continue
        value = arguments[argument.name]
        where = argument.location
        if where == "path":
            path = path.replace("{" + argument.wire_name + "}", _segment(_flat(value)))
        elif where == "query":
            if value is not None:
                request.query.extend(_query_pairs(argument.wire_name, value, argument.style,
                                                  argument.explode))
        elif where == "header":
            request.headers[argument.wire_name] = _flat(value)
        elif where == "cookie":
            request.cookies[argument.wire_name] = _flat(value)
        elif where == "body":
            body[argument.wire_name] = value
        else:
            whole, has_whole = value, True
    request.path = path
    media = operation.body_type
    if media is None:
        return request
    if has_whole:
        if isinstance(whole, (dict, list)) or media.endswith("json"):
            request.body, request.content_type = _dumps(whole).encode(), media
        elif isinstance(whole, str) and media not in ("application/octet-stream",):
            request.body, request.content_type = whole.encode(), media
        else:  # bytes arrive as base64 text
            request.body = base64.b64decode(str(whole)) if whole is not None else b""
            request.content_type = media
        return request
    if media == "application/x-www-form-urlencoded":
        pairs = [pair for name, value in body.items()
                 for pair in _query_pairs(name, value, "form", None)]
        request.body, request.content_type = urllib.parse.urlencode(pairs).encode(), media
    elif media == "multipart/form-data":
        request.body, request.content_type = _multipart(body)
    else:
        request.body, request.content_type = _dumps(body).encode(), media
    return request


def _multipart(fields: Mapping[str, Any]) -> tuple[bytes, str]:
    import secrets

    boundary = "mcpsync-" + secrets.token_hex(12)
    out = bytearray()
    for name, value in fields.items():
        quoted = name.replace('"', "%22")
        out += f"--{boundary}\r\nContent-Disposition: form-data; name=\"{quoted}\"\r\n\r\n"\
            .encode()
        out += _text(value).encode() + b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return bytes(out), f"multipart/form-data; boundary={boundary}"


def _is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json")


def _is_text(media: str) -> bool:
    return media.startswith("text/") or media in (
        "application/xml", "application/javascript", "application/yaml",
        "application/x-yaml") or media.endswith("+xml")


def error_text(operation: Operation, answer: HttpAnswer, excerpt_bytes: int) -> str:
    """``GET /pets/{id} answered 404 Not Found: <at most excerpt_bytes of the body>``."""
    try:
        reason = HTTPStatus(answer.status).phrase
    except ValueError:
        reason = ""
    head = f"{operation.label} answered {answer.status} {reason}".rstrip()
    excerpt = answer.body[:excerpt_bytes].decode("utf-8", errors="replace").strip()
    if len(answer.body) > excerpt_bytes:
        excerpt += " …"
    if answer.status in (301, 302, 303, 307, 308) and "location" in answer.headers:
        head += f" (Location: {answer.headers['location'][:200]})"
    return f"{head}: {excerpt}" if excerpt else head


def result_of(operation: Operation, answer: HttpAnswer, *, uri: str,
              excerpt_bytes: int, validate: Any = None) -> dict[str, Any]:
    """The ``CallToolResult`` of ``answer`` (see the module doc). ``validate``: the output
    schema's validator (``errors(value) -> list``), when the tool has one."""
    if not 200 <= answer.status < 300:
        return {"content": [{"type": "text", "text": error_text(operation, answer,
                                                                excerpt_bytes)}],
                "isError": True}
    media = answer.media_type
    if _is_json(media) or (not media and answer.body[:1] in (b"{", b"[")):
        try:
            data = jsonrpc.loads(answer.body) if answer.body else None
        except ValueError as exc:
            return _error(f"{operation.label} answered {answer.status} with JSON that cannot "
                          f"be read: {exc}")
        text = _dumps(data)
        if operation.output_schema is None:
            if isinstance(data, dict):
                return {"content": [{"type": "text", "text": text}], "structuredContent": data}
            return {"content": [{"type": "text", "text": text}]}
        structured = {"result": data} if operation.wrap_result else data
        if validate is not None:
            errors = validate(structured)
            if errors:
                return _error(f"{operation.label} answered {answer.status} with a body that "
                              f"does not match its documented schema: {errors[0]}; "
                              f"the body: {text[:excerpt_bytes]}")
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}
    if operation.output_schema is not None:
        return _error(f"{operation.label} answered {answer.status} with "
                      f"{media or 'no content type'}, not the JSON its documentation "
                      "promises")
    if _is_text(media) or (not media and _utf8(answer.body)):
        return {"content": [{"type": "text", "text": answer.body.decode("utf-8", "replace")}]}
    return {"content": [{"type": "resource", "resource": {
        "uri": uri, "mimeType": media or "application/octet-stream",
        "blob": base64.b64encode(answer.body).decode("ascii")}}]}


def _utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}
