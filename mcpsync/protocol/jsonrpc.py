"""JSON-RPC 2.0 messages: parse, validate, serialize.

Messages are small slotted classes rather than dataclasses: they are created for every
message on the hot path, and they carry ``params``/``result`` as plain JSON values. Typed
views of those values are built above this layer, only where a user needs them.

Every transport decodes with :func:`decode` and encodes with :func:`encode`, so the two
wire-robustness rules live here once:

* **Nesting depth.** A message may nest at most :data:`MAX_DEPTH` arrays/objects (the
  message object itself is level 1). Deeper input is refused at decode time, so nothing
  downstream (typed decoding, JSON Schema validation, our own walkers, re-encoding a result
  that echoes params) can run out of recursion on it, the JSON parser included: the depth
  is measured before parsing (:mod:`.decoding`). A request that is too deep gets ``-32600``
  with its id, however deep it goes; what is not JSON gets ``-32700``.
* **Encodability.** A message that cannot be serialized as UTF-8 JSON (a lone surrogate,
  NaN, an object JSON has no type for) raises :class:`~mcpsync.errors.UnencodableMessageError`
  before a byte is written: a fault of that one message, never of the transport.
  :func:`unencodable_answer` is the encodable ``-32603`` stand-in for an answer. The one
  exception is an *id* the peer chose with a lone surrogate in it: it is echoed back
  ``\\u``-escaped (plain ASCII, valid JSON), so the caller can still match our answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from ..errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, UnencodableMessageError
from . import decoding
from .tool_outcome import tool_error

logger = logging.getLogger("mcpsync.engine")

RequestId = str | int

#: The deepest nesting of arrays and objects a received message may have (the message
#: object is level 1). Read at each decode, so it may be changed at run time; keep it well
#: below Python's recursion limit, which recursive code over params must stay under.
MAX_DEPTH = 64

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_dumps_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


def _one_shot() -> Callable[[Any], str]:
    """``_dumps`` for a message object, without the per-call set-up: ``JSONEncoder.encode``
    builds a new C encoder (and a cycle-marker dict) for every call, about a microsecond
    on every message sent. This one C encoder is built once and keeps no state between
    calls (no markers), so threads may share it; a cycle then ends in RecursionError, and
    :func:`encode` asks ``_dumps`` again for its precise error. ``_dumps`` itself where the
    C encoder is missing or does not answer as ``_dumps`` does."""
    from json import encoder

    make = getattr(encoder, "c_make_encoder", None)
    strings = getattr(encoder, "c_encode_basestring", None)
    if make is None or strings is None:
        return _dumps
    try:
        chunks = make(None, json.JSONEncoder().default, strings, None, ":", ",",
                      False, False, False)

        def dumps(obj: Any) -> str:
            return "".join(chunks(obj, 0))

        probe = {"a": [1, 2.5, "é\n\"", None, True, {"b": -0.0}], "c": 10**20}
        if dumps(probe) != _dumps(probe):
            return _dumps
    except Exception:  # an interpreter whose C encoder takes other arguments
        return _dumps
    return dumps


_dumps_message: Callable[[Any], str] = _one_shot()


class Request:
    """A call that expects exactly one response with the same ``id``."""

    __slots__ = ("_encoded", "id", "method", "params")

    def __init__(self, id: RequestId, method: str, params: dict[str, Any] | None = None) -> None:
        self.id = id
        self.method = method
        self.params = params
        self._encoded: bytes | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r})"


class Notification:
    """A one-way message; the receiver must not answer it."""

    __slots__ = ("_encoded", "method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.method = method
        self.params = params
        self._encoded: bytes | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"jsonrpc": "2.0", "method": self.method}
        if self.params is not None:
            wire["params"] = self.params
        return wire

    def __repr__(self) -> str:
        return f"Notification(method={self.method!r})"


class Response:
    """A successful answer to the request with the same ``id``."""

    __slots__ = ("_encoded", "id", "result")

    def __init__(self, id: RequestId, result: dict[str, Any]) -> None:
        self.id = id
        self.result = result
        self._encoded: bytes | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}

    def __repr__(self) -> str:
        return f"Response(id={self.id!r})"


class ErrorResponse:
    """A failed answer. ``id`` is ``None`` only when the request's id could not be read."""

    __slots__ = ("_encoded", "error", "id")

    def __init__(self, id: RequestId | None, error: dict[str, Any]) -> None:
        self.id = id
        self.error = error
        self._encoded: bytes | None = None

    def to_wire(self) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error}

    def __repr__(self) -> str:
        return f"ErrorResponse(id={self.id!r}, code={self.error.get('code')!r})"


Message = Request | Notification | Response | ErrorResponse


class Invalid:
    """Something that arrived but is not a valid message: answer it with ``reply``.

    ``reply`` is ``None`` when the spec says to stay silent (an invalid *response* or a
    malformed notification has nobody to answer). ``answer_to`` is the id of one of our
    own requests whose answer this was meant to be, when that much could be read: the
    engine fails that call at once, locally (we could not read the answer; the peer did
    not refuse), instead of leaving it to its deadline.
    """

    __slots__ = ("answer_to", "reason", "reply")

    def __init__(self, reason: str, reply: ErrorResponse | None,
                 answer_to: RequestId | None = None) -> None:
        self.reason = reason
        self.reply = reply
        self.answer_to = answer_to

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
    # _valid_id(raw_id), spelt out: this runs for every message.
    id_ok = (isinstance(raw_id, int) and not isinstance(raw_id, bool)) or isinstance(
        raw_id, str)
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
        if not id_ok:
            return Invalid("malformed response", None)
        if not isinstance(result, dict):
            # The answer to one of our calls, unreadable: that call fails at once (a
            # protocol error) rather than wait for an answer that will not come.
            return Invalid('Invalid response: "result" must be an object', None,
                           answer_to=reply_id)
        return Response(raw_id, result)  # type: ignore[arg-type]  # checked by _valid_id
    if "error" in obj:
        error = obj["error"]
        if not (raw_id is None or id_ok):
            return Invalid("malformed error response", None)
        if not isinstance(error, dict):
            return Invalid('Invalid response: "error" must be an object', None,
                           answer_to=reply_id)
        return ErrorResponse(reply_id, error)
    return _invalid('Invalid request: no "method", "result" or "error"', reply_id)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# One decoder, made once (json.loads with an option would make one per message): it
# refuses Infinity/-Infinity/NaN, which Python's parser takes but JSON (RFC 8259) does
# not have; a float that cannot be compared or re-encoded never reaches a handler.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def _parse(text: str) -> Any:
    """``_DECODER.decode(text)``, a third cheaper for what peers send: a value that begins
    at the first character and ends at the last goes to the scanner directly, without
    ``decode``'s two whitespace matches and ``raw_decode``'s frame. Anything else (blank
    around the value, nothing, extra data) takes ``decode`` itself, which parses it or
    raises the error it always raised."""
    try:
        obj, end = _SCAN(text, 0)
    except StopIteration:
        return _DECODER.decode(text)
    if end != len(text):
        return _DECODER.decode(text)
    return obj


def _text(data: bytes | str) -> str:
    """``data`` as text, the way ``json.loads`` reads it: the encoding detected, a UTF-8
    BOM accepted on bytes and refused on text."""
    if isinstance(data, (bytes, bytearray)):
        # Two non-zero leading bytes and no BOM are UTF-8 to detect_encoding: every message
        # starts so ('{"'), and skips the detection.
        encoding = "utf-8" if data[:2] == b'{"' else json.detect_encoding(data)
        return data.decode(encoding, "surrogatepass")
    if data.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    return data


def loads(data: bytes | str) -> Any:
    """A peer's JSON that is not a JSON-RPC message (an HTTP error body, an authorization
    server's answer), read with the same bounds as :func:`decode`: ``ValueError`` when it is
    not JSON or nests deeper than :data:`MAX_DEPTH` (measured before parsing, see
    decoding.py)."""
    text = _text(data)
    if decoding.deeper_than(text, MAX_DEPTH):
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return _parse(text)
    except RecursionError:  # only on a thread already near the limit of its stack
        raise ValueError("no stack left to parse the JSON") from None


def decode(data: bytes | str) -> list[Message | Invalid]:
    """Decode one frame (a stdio line or an HTTP body).

    A JSON array (a 2025-03-26 batch) yields one item per element; an empty array is itself
    invalid. Malformed JSON yields a parse error to send with ``id: null``. A message nested
    deeper than :data:`MAX_DEPTH` is refused (see :func:`_too_deep`).
    """
    limit = MAX_DEPTH
    deep = False
    try:
        text = _text(data)
        deep = decoding.deeper_than(text, limit)
        if deep:
            # Too deep: the parser is only given what shows why (see decoding.py; it never
            # descends far enough to starve the thread's stack), so the message is refused
            # with its id however deep it goes. A single message needs only its top level;
            # a batch keeps two levels past the limit, to judge its elements one by one.
            keep = limit + 2 if is_batch(text) else 1
            pruned = decoding.prune(text, keep)
            if pruned is None:
                return [_parse_error(f"Parse error: JSON nested deeper than {limit} levels")]
            text = pruned
        obj = _parse(text)
    except (ValueError, UnicodeDecodeError) as exc:
        if deep:
            return [_parse_error(f"Parse error: JSON nested deeper than {limit} levels")]
        return [_parse_error(f"Parse error: {exc}")]
    except RecursionError:  # only on a thread already near the limit of its stack
        return [_parse_error("Parse error: no stack left to parse the message")]
    if isinstance(obj, list):
        if not obj:
            return [_invalid("Invalid request: empty batch", None)]
        return [_too_deep(item) if deep and _nests_deeper(item, limit) else parse_object(item)
                for item in obj]
    return [_too_deep(obj) if deep else parse_object(obj)]


def _parse_error(reason: str) -> Invalid:
    return Invalid(reason, ErrorResponse(None, {"code": PARSE_ERROR, "message": reason}))


def _nests_deeper(value: Any, limit: int) -> bool:
    """Whether arrays/objects in ``value`` nest more than ``limit`` levels (``value`` is
    level 1). It recurses at most ``limit`` frames, and stops at the first level too deep."""
    if type(value) is not dict and type(value) is not list:
        return False
    return _deeper(value, limit)


def _deeper(container: Any, budget: int) -> bool:
    # Exact types: json.loads makes only dicts and lists (and this is the hot loop).
    if budget < 1:
        return True
    for item in (container.values() if type(container) is dict else container):
        kind = type(item)
        if (kind is dict or kind is list) and _deeper(item, budget - 1):
            return True
    return False


def _too_deep(obj: Any) -> Message | Invalid:
    """A message nested deeper than the limit: answer a request with ``-32600`` and its id;
    mark a response with the id it answers (its caller learns why at once instead of at its
    deadline); drop anything else (a notification has nobody to answer)."""
    reason = f"Invalid request: nested deeper than {MAX_DEPTH} levels"
    if not isinstance(obj, dict):
        return _invalid(reason, None)
    raw_id = obj.get("id")
    id_ok = _valid_id(raw_id)
    if "method" in obj:
        if "id" not in obj:
            return Invalid(reason, None)
        return _invalid(reason, raw_id if id_ok else None)
    if ("result" in obj or "error" in obj) and id_ok:
        return Invalid(f"Invalid response: nested deeper than {MAX_DEPTH} levels", None,
                       answer_to=raw_id)
    return _invalid(reason, raw_id if id_ok else None)


def is_batch(data: bytes | str) -> bool:
    """Whether a frame is a JSON array, judged by its first non-blank character."""
    stripped = data.lstrip()
    return stripped[:1] in (b"[", "[")


def encode(message: Message) -> bytes:
    """Serialize compactly as UTF-8. JSON escapes newlines, so the result is one line.

    Raises :class:`~mcpsync.errors.UnencodableMessageError` (nothing is half-written: this
    only makes bytes). The bytes are kept on the message, so that a message checked at
    send time and written later (an HTTP stream, an event store) is serialized once.
    """
    cached = message._encoded
    if cached is not None:
        return cached
    try:
        try:
            text = _dumps_message(message.to_wire())
        except RecursionError:
            # Too deep, or a cycle: the checked encoder says which (or succeeds).
            text = _dumps(message.to_wire())
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        data = _with_escaped_id(message, exc)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UnencodableMessageError(_problem(message, exc)) from None
    message._encoded = data
    return data


def _with_escaped_id(message: Message, exc: UnicodeEncodeError) -> bytes:
    """A lone surrogate that is only in the id (the peer's choice, echoed): escape it."""
    msg_id = getattr(message, "id", None)
    if isinstance(msg_id, str) and not decoding.utf8_encodable(msg_id):
        rest = message.to_wire()
        del rest["id"]
        try:
            body = _dumps(rest).encode("utf-8")
        except (TypeError, ValueError, RecursionError) as inner:
            raise UnencodableMessageError(_problem(message, inner)) from None
        return b'{"id":' + _dumps_ascii(msg_id).encode("ascii") + b"," + body[1:]
    raise UnencodableMessageError(_problem(message, exc)) from None


def _printable(text: str) -> str:
    """``text`` with lone surrogates spelled ``\\udXXX``: safe to encode and to log."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _problem(message: Message, exc: BaseException) -> str:
    if isinstance(exc, UnicodeEncodeError):
        bad = exc.object[exc.start:exc.end] if isinstance(exc.object, str) else ""
        why = f"a string holds a lone surrogate ({_printable(bad)})"
    elif isinstance(exc, RecursionError):
        why = "nested too deeply"
    else:
        why = _printable(str(exc))
    if isinstance(message, (Request, Notification)):
        what = f"{_printable(message.method)}"
    else:
        what = "the result" if isinstance(message, Response) else "the error"
        what += f" for id {_printable(repr(message.id))}"
    return f"cannot encode {what} as JSON: {why}"


def unencodable_answer(message: Response | ErrorResponse,
                       problem: str) -> Response | ErrorResponse:
    """The encodable stand-in for an answer :func:`encode` refused: a tool's result (one
    with a ``content`` list) becomes an ``isError`` result, which the model can read and
    act on, as for any other tool failure; another result becomes ``-32603``; an error
    keeps its code, with its text made encodable and its data dropped."""
    if isinstance(message, Response) and isinstance(message.result.get("content"), list):
        result: dict[str, Any] = tool_error(f"Error: {problem}")
        if message.result.get("resultType") == "complete":
            result["resultType"] = "complete"
        return Response(message.id, result)
    code: Any = INTERNAL_ERROR
    text = f"Internal error: {problem}"
    if isinstance(message, ErrorResponse):
        original = message.error.get("code")
        if isinstance(original, int) and not isinstance(original, bool):
            code = original
        original_text = message.error.get("message")
        text = _printable(original_text) if isinstance(original_text, str) else text
    return ErrorResponse(message.id, {"code": code, "message": text})


def encode_answer(message: Message) -> bytes:
    """:func:`encode`, except that an answer which cannot be encoded is replaced by its
    :func:`unencodable_answer`: for writers with nobody to raise to (an HTTP stream)."""
    try:
        return encode(message)
    except UnencodableMessageError as exc:
        if not isinstance(message, (Response, ErrorResponse)):
            raise
        logger.error("%s", exc)  # (the engine's writer logs its own: one line either way)
        return encode(unencodable_answer(message, str(exc)))

