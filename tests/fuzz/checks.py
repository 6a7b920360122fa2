"""What every answer of a fuzzed server must be, whatever it was sent.

* valid JSON-RPC 2.0: a response (``result`` object, or an ``error`` object with an
  integer ``code`` and a string ``message``) or a notification; a batch answer is an array
  of those;
* never ``-32603`` (the fuzz server's handlers cannot fail: an internal error is the
  server tripping over the input);
* never a traceback, nor a path of the server's files (the repository, site-packages,
  the interpreter's prefix);
* and every request the server could read (an object with ``"jsonrpc": "2.0"``, a method
  and a string or integer id) is answered, unless the case cancelled something or the
  request is a listen (it stays open until ended).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import mcpsync
from tests.helpers import WAIT as WAIT  # every blocking wait of the fuzzer is bounded by it

from .strategies import Case

ROOT = Path(__file__).resolve().parents[2]
#: Substrings that must never reach the wire.
FORBIDDEN: tuple[str, ...] = tuple(dict.fromkeys([
    "Traceback", 'File "', str(ROOT), str(Path(mcpsync.__file__).resolve().parent),
    "site-packages", sys.prefix, sys.base_prefix + "/lib",
]))
INTERNAL_ERROR = -32603
#: How long a request may still be unanswered once the probe sent after it was answered.
GRACE = 3.0


def leaks(text: str) -> list[str]:
    return [f"the answer contains {marker!r}" for marker in FORBIDDEN if marker in text]


def _message_problems(obj: Any) -> list[str]:
    if not isinstance(obj, dict):
        return [f"not a JSON-RPC object: {obj!r:.200}"]
    if obj.get("jsonrpc") != "2.0":
        return [f'"jsonrpc" is not "2.0": {obj!r:.200}']
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            return [f"bad method in {obj!r:.200}"]
        if "params" in obj and not isinstance(obj["params"], dict):
            return [f"bad params in {obj!r:.200}"]
        return []
    if "id" not in obj:
        return [f"a response without an id: {obj!r:.200}"]
    msg_id = obj["id"]
    if not (msg_id is None or isinstance(msg_id, str)
            or (isinstance(msg_id, int) and not isinstance(msg_id, bool))):
        return [f"a response with a bad id: {obj!r:.200}"]
    if ("result" in obj) == ("error" in obj):
        return [f"a response needs exactly one of result and error: {obj!r:.200}"]
    if "result" in obj:
        if not isinstance(obj["result"], dict):
            return [f"a non-object result: {obj!r:.200}"]
        if msg_id is None:
            return [f"a result with id null: {obj!r:.200}"]
        return []
    error = obj["error"]
    if not isinstance(error, dict) or not isinstance(error.get("message"), str) or not (
            isinstance(error.get("code"), int) and not isinstance(error.get("code"), bool)):
        return [f"a malformed error object: {obj!r:.200}"]
    if error["code"] == INTERNAL_ERROR:
        return [f"an internal error (-32603) answered: {obj!r:.300}"]
    return []


def answer_problems(data: bytes) -> tuple[list[Any], list[str]]:
    """Decode one answer frame (a stdio line, a JSON body, an SSE event's data); return the
    messages in it and what is wrong with it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return [], [f"the answer is not UTF-8: {data[:200]!r}"]
    problems = leaks(text)
    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        return [], [*problems, f"the answer is not JSON ({exc}): {data[:200]!r}"]
    items = obj if isinstance(obj, list) else [obj]
    if isinstance(obj, list) and not obj:
        problems.append("an empty batch answer")
    for item in items:
        problems.extend(_message_problems(item))
    return [i for i in items if isinstance(i, dict)], problems


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _readable(obj: Any) -> bool:
    """Whether the server could read ``obj`` as a request it must answer."""
    return (isinstance(obj, dict) and obj.get("jsonrpc") == "2.0"
            and isinstance(obj.get("method"), str) and bool(obj["method"])
            and (("params" not in obj) or isinstance(obj["params"], dict) or
                 obj["params"] is None)
            and (isinstance(obj.get("id"), str) or (
                isinstance(obj.get("id"), int) and not isinstance(obj.get("id"), bool))))


def frame_requests(data: bytes, *, batches: bool = True) -> list[dict[str, Any]]:
    """The requests of one frame that must be answered (see the module docstring).
    ``batches=False``: a batch is refused whole (-32600 with id null: stdio, as
    docs/protocol-versions.md says), so its requests get no answer of their own."""
    try:
        # NaN and Infinity are not JSON (RFC 8259): a frame with one is a parse error.
        obj = json.loads(data, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return []
    if isinstance(obj, list) and not batches:
        return []
    items = obj if isinstance(obj, list) else [obj]
    return [i for i in items if _readable(i)]


def must_answer(case: Case, *, batches: bool = True) -> list[Any]:
    """Ids that some answer of the case must carry."""
    requests = [r for f in case.frames for r in frame_requests(f.data, batches=batches)]
    if any(_cancels(f.data) for f in case.frames):
        return []
    return list(dict.fromkeys(
        _key(r["id"]) for r in requests if r["method"] != "subscriptions/listen"))


def _cancels(data: bytes) -> bool:
    return b"notifications/cancelled" in data or b"cancelled" in data


def _key(msg_id: Any) -> Any:
    """An id as a hashable key that tells 1 from "1"."""
    return (type(msg_id).__name__, msg_id if not isinstance(msg_id, float) or math.isfinite(
        msg_id) else repr(msg_id))


def answered_keys(messages: list[dict[str, Any]]) -> set[Any]:
    return {_key(m["id"]) for m in messages
            if "id" in m and ("result" in m or "error" in m) and "method" not in m}


def opens_listen(case: Case) -> bool:
    return any(b"subscriptions/listen" in f.data for f in case.frames)
