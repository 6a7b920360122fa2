"""JSON-RPC 2.0 messages: parse, validate, serialize.

Messages are small slotted classes rather than dataclasses: they are created for every
message on the hot path, and they carry ``params``/``result`` as plain JSON values. Typed
views of those values are built above this layer, only where a user needs them.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import INVALID_REQUEST, PARSE_ERROR, MCPError

RequestId = str | int

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class Request:
    """A call that expects exactly one response with the same ``id``."""

    __slots__ = ("id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: dict[str, Any] | None = None) -> None:
        self.id = id
        self.method = method
        self.params = params

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


class Notification:
    """A one-way message; the receiver must not answer it."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.method = method
        self.params = params

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r})"


class Response:
    """A successful answer to the request with the same ``id``."""

    __slots__ = ("id", "result")

    def __init__(self, id: RequestId, result: dict[str, Any]) -> None:
        self.id = id
        self.result = result

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}

    def __repr__(self) -> str:
        return f"Response(id={self.id!r})"


class ErrorResponse:
    """A failed answer. ``id`` is ``None`` only when the request's id could not be read."""

    __slots__ = ("error", "id")

    def __init__(self, id: RequestId | None, error: dict[str, Any]) -> None:
        self.id = id
        self.error = error

    @classmethod
    def from_exception(cls, id: RequestId | None, exc: MCPError) -> ErrorResponse:
        return cls(id, exc.to_wire())

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error}

    def __repr__(self) -> str:
        return f"ErrorResponse(id={self.id!r}, code={self.error.get('code')!r})"


Message = Request | Notification | Response | ErrorResponse


class Invalid:
    """Something that arrived but is not a valid message: answer it with ``reply``.

    ``reply`` is ``None`` when the spec says to stay silent (an invalid *response* or a
    malformed notification has nobody to answer).
    """

    __slots__ = ("reason", "reply")

    def __init__(self, reason: str, reply: ErrorResponse | None) -> None:
        self.reason = reason
        self.reply = reply

    def __repr__(self) -> str:
        return f"Invalid({self.reason!r})"


def _valid_id(value: object) -> bool:
    # Booleans are ints in Python but not in JSON-RPC; null ids are forbidden in MCP.
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _invalid(reason: str, id: RequestId | None) -> Invalid:
    return Invalid(reason, ErrorResponse(id, {"code": INVALID_REQUEST, "message": reason}))


def parse_object(obj: Any) -> Message | Invalid:
    """Classify one decoded JSON value as a message, or say why it is not one."""
    if not isinstance(obj, dict):
        return _invalid("Invalid request: a JSON-RPC message must be an object", None)
    raw_id = obj.get("id")
    id_ok = _valid_id(raw_id)
    reply_id = raw_id if id_ok else None
    if obj.get("jsonrpc") != "2.0":
        return _invalid('Invalid request: "jsonrpc" must be "2.0"', reply_id)
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            return _invalid('Invalid request: "method" must be a non-empty string', reply_id)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            return _invalid('Invalid request: "params" must be an object', reply_id)
        if "id" not in obj:
            return Notification(method, params)
        if not id_ok:
            return _invalid('Invalid request: "id" must be a string or an integer', None)
        return Request(raw_id, method, params)  # type: ignore[arg-type]  # checked by _valid_id
    if "result" in obj:
        result = obj["result"]
        if not id_ok or not isinstance(result, dict):
            return Invalid("malformed response", None)
        return Response(raw_id, result)  # type: ignore[arg-type]  # checked by _valid_id
    if "error" in obj:
        error = obj["error"]
        if not isinstance(error, dict) or not (raw_id is None or id_ok):
            return Invalid("malformed error response", None)
        return ErrorResponse(reply_id, error)
    return _invalid('Invalid request: no "method", "result" or "error"', reply_id)


def decode(data: bytes | str) -> list[Message | Invalid]:
    """Decode one frame (a stdio line or an HTTP body).

    A JSON array (a 2025-03-26 batch) yields one item per element; an empty array is itself
    invalid. Malformed JSON yields a parse error to send with ``id: null``.
    """
    try:
        obj = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the interpreter's stack (a few thousand
        # levels). It is bad input like any other, not a crash of the thread reading it.
        reason = f"Parse error: {exc}"
        return [Invalid(reason, ErrorResponse(None, {"code": PARSE_ERROR, "message": reason}))]
    if isinstance(obj, list):
        if not obj:
            return [_invalid("Invalid request: empty batch", None)]
        return [parse_object(item) for item in obj]
    return [parse_object(obj)]


def is_batch(data: bytes | str) -> bool:
    """Whether a frame is a JSON array, judged by its first non-blank character."""
    stripped = data.lstrip()
    return stripped[:1] in (b"[", "[")


def encode(message: Message) -> bytes:
    """Serialize compactly as UTF-8. JSON escapes newlines, so the result is one line."""
    return _dumps(message.to_wire()).encode("utf-8")


def encode_many(messages: list[Message]) -> bytes:
    """Serialize a batch response (only ever sent in answer to a batch)."""
    return _dumps([message.to_wire() for message in messages]).encode("utf-8")
