"""Hypothesis strategies for the fuzzer: valid JSON-RPC messages of both eras, mutated.

A *case* is a few raw frames (a stdio line, an HTTP body). Each frame starts from a valid
message of the era (``TEMPLATES``), then gets one to three mutations at random places of its
JSON tree: a value of another type, a deleted or an extra field, a huge number, a giant
(bounded) string, an id of any JSON type, or a *raw splice* — bytes that ``json.dumps``
cannot produce (a 5000-digit number, ``NaN``, deep nesting, a lone surrogate written as a
JSON escape, invalid UTF-8 inside a string). Frames may also be junk (empty lines, bare
JSON values, random bytes) or, in the era that has them, batches.

The mutations come in *families* so that each known defect of issue #11 lives in exactly
one test (see ``test_*.py``): ``GENERAL`` (everything else), ``SURROGATES``, ``NESTING`` and
``BAD_PARAMS``. ``GENERAL`` leaves the three parameter paths of ``BAD_PARAMS`` alone, and
splices neither lone surrogates nor deep nesting.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

MODERN = "2026-07-28"
#: The handshake revision the fuzzer's sessions speak: the one with batches.
HANDSHAKE = "2025-03-26"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG = "io.modelcontextprotocol/logLevel"

#: Bound on a giant string (bytes): big enough to cross buffer sizes, small enough to
#: keep a case fast.
GIANT = 300_000


def envelope() -> dict[str, Any]:
    return {META_VERSION: MODERN, META_CAPS: {}, META_INFO: {"name": "fuzz", "version": "0"}}


def _modern(method: str, params: dict[str, Any] | None = None,
            request_id: Any = 1) -> dict[str, Any]:
    body = dict(params or {})
    body["_meta"] = {**envelope(), **body.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def _legacy(method: str, params: dict[str, Any] | None = None,
            request_id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


_COMPLETE = {"ref": {"type": "ref/prompt", "name": "greet"},
             "argument": {"name": "tone", "value": "p"},
             "context": {"arguments": {"name": "x"}}}
_WORK = {"name": "work", "arguments": {"steps": 2, "text": "t"},
         "_meta": {"progressToken": "tok"}}

#: Valid messages of each era, as factories (a fresh, mutable tree each time).
TEMPLATES: dict[str, list[Callable[[], dict[str, Any]]]] = {
    MODERN: [
        lambda: _modern("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        lambda: _modern("tools/call", json.loads(json.dumps(_WORK))),
        lambda: _modern("tools/list", {"cursor": None}),
        lambda: _modern("resources/read", {"uri": "fuzz://doc"}),
        lambda: _modern("resources/read", {"uri": "fuzz://items/abc"}),
        lambda: _modern("resources/list"),
        lambda: _modern("resources/templates/list"),
        lambda: _modern("prompts/get", {"name": "greet", "arguments": {"name": "n"}}),
        lambda: _modern("prompts/list"),
        lambda: _modern("completion/complete", json.loads(json.dumps(_COMPLETE))),
        lambda: _modern("server/discover"),
        lambda: _modern("subscriptions/listen", {"notifications": {
            "toolsListChanged": True, "resourceSubscriptions": ["fuzz://doc"]}}),
        lambda: _modern("tools/call", {"name": "echo", "arguments": {"text": "x"},
                                       "_meta": {META_LOG: "debug"}}),
        lambda: _modern("tools/call", {"name": "echo", "arguments": {"text": "x"},
                                       "inputResponses": {"q1": {"action": "accept",
                                                                 "content": {"a": 1}}},
                                       "requestState": "bm90LWEtc3RhdGU"}),
        lambda: _modern("resources/subscribe", {"uri": "fuzz://doc"}),
        lambda: _notification("notifications/cancelled", {"requestId": 1, "reason": "r"}),
        lambda: _notification("notifications/progress", {"progressToken": "t", "progress": 1}),
        lambda: _legacy("ping"),
    ],
    HANDSHAKE: [
        lambda: _legacy("ping"),
        lambda: _legacy("tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
        lambda: _legacy("tools/call", json.loads(json.dumps(_WORK))),
        lambda: _legacy("tools/list", {"cursor": None}),
        lambda: _legacy("resources/read", {"uri": "fuzz://items/abc"}),
        lambda: _legacy("resources/subscribe", {"uri": "fuzz://doc"}),
        lambda: _legacy("resources/unsubscribe", {"uri": "fuzz://doc"}),
        lambda: _legacy("resources/templates/list"),
        lambda: _legacy("prompts/get", {"name": "greet", "arguments": {"name": "n"}}),
        lambda: _legacy("completion/complete", json.loads(json.dumps(_COMPLETE))),
        lambda: _legacy("logging/setLevel", {"level": "debug"}),
        lambda: _legacy("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {},
                                       "clientInfo": {"name": "fuzz", "version": "0"}}),
        lambda: _notification("notifications/cancelled", {"requestId": 1, "reason": "r"}),
        lambda: _notification("notifications/initialized", {}),
        lambda: _notification("notifications/roots/list_changed", {}),
        lambda: _notification("notifications/progress", {"progressToken": "t", "progress": 1}),
        lambda: {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}},
        lambda: {"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": "no"}},
        lambda: _modern("server/discover"),
    ],
}

# -- JSON values ---------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_scalars = st.one_of(
    st.none(), st.booleans(), _text,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63, 2**64 + 1, 10**100]),
    st.floats(allow_nan=False, allow_infinity=False),
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(_text, inner, max_size=3)),
    max_leaves=8,
)
#: Ids of every JSON type (and the integers at the edges).
ids = st.one_of(json_values, st.sampled_from([0, -1, 2**63, 10**30, "", " ", "1", 1.0, 1.5]))

# -- raw splices ---------------------------------------------------------------------------


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


#: Bytes that stand for a JSON value but that json.dumps would never write.
GENERAL_SPLICES: list[bytes] = [
    b"1" + b"0" * 5000,                      # beyond Python's int-string limit
    b"-" + b"9" * 400,
    b"1e999999", b"-1e-999999", b"1E+2", b"-0",
    b"NaN", b"Infinity", b"-Infinity",
    b"[" * 40 + b"]" * 40,                  # moderate nesting: must be served normally
    b'{"a":' * 40 + b"1" + b"}" * 40,
    b'"\xff\xfe"', b'"\xc0\x80"', b'"\xe2\x82"', b'"a\x00b"',
    b'"\\u0000"', b'"\\u202e\\ufeff"', b'"\\uffff"', b'"\\ud83d\\ude00"',
    b'"\\x41"', b'"\\u12"', b"'single'", b"tru", b"nul", b"01", b"+1", b".5",
    b'"\t"', b'"' + "é".encode() * 3 + b'"',
]
SURROGATE_SPLICES: list[bytes] = [
    b'"\xed\xa0\x80"',  # a surrogate encoded as UTF-8 bytes: json reads it as "\ud800"
    b'"\\ud800"', b'"\\udfff"', b'"a\\ud83db"', b'"\\ude00\\ud83d"', b'"\\udbff\\udbff"',
]
NESTING_SPLICES: list[bytes] = [
    b"[" * 1000 + b"]" * 1000, b'{"a":' * 1000 + b"0" + b"}" * 1000,
    b"[" * 100_000 + b"]" * 100_000, b"[" * 5000,  # unclosed, and deep
]
#: The known bad parameters of issue #11 defect 3, at the paths where they bite.
BAD_PARAM_PATHS: dict[tuple[str, ...], list[Any]] = {
    ("params", "cursor"): [_cursor("mcpsync:" + "9" * 5000), _cursor("mcpsync:" + "1" * 4400),
                           _cursor("mcpsync:99999999999999999999")],
    ("params", "context", "arguments"): [["a"], "text", 5, {"a": 1}, [["k", "v"]], True],
    ("params", "context"): [[], "ctx", 3],
    ("params", "_meta", "progressToken"): [["t"], {"t": 1}, 1.5, True, None, 2**70],
    # A client's notifications/progress: the token is looked up in the pending table.
    ("params", "progressToken"): [["t"], {"t": 1}, 1.5, True, None],
}


@dataclass
class Family:
    """Which mutations a strategy may make."""

    name: str
    splices: list[bytes]
    #: Paths the generic mutations must leave alone (another family owns them).
    frozen: set[tuple[str, ...]] = field(default_factory=set)
    #: Targeted replacements: path -> values (the family's point).
    targeted: dict[tuple[str, ...], list[Any]] = field(default_factory=dict)
    #: Junk frames, batches and giant strings too.
    broad: bool = True


GENERAL = Family("general", GENERAL_SPLICES, frozen=set(BAD_PARAM_PATHS))
SURROGATES = Family("surrogates", SURROGATE_SPLICES, broad=False)
NESTING = Family("nesting", NESTING_SPLICES, broad=False)
BAD_PARAMS = Family("bad-params", [], targeted=BAD_PARAM_PATHS, broad=False)

# -- cases ---------------------------------------------------------------------------------


class Frame:
    """One raw frame (a stdio line, an HTTP body); its repr is bounded, because hypothesis
    prints it on failure."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __repr__(self) -> str:
        if len(self.data) <= 400:
            return f"Frame({self.data!r})"
        return f"Frame({self.data[:300]!r}...<{len(self.data)} bytes>...{self.data[-60:]!r})"


class Case:
    """A few frames sent one after the other."""

    def __init__(self, frames: list[Frame]) -> None:
        self.frames = frames

    def __repr__(self) -> str:
        return "Case([\n  " + ",\n  ".join(repr(f) for f in self.frames) + "])"


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(tree, dict):
        for key, value in tree.items():
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            out.extend(_paths(value, (*prefix, index)))
    return out


def _set(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    """``tree`` with the value at ``path`` replaced (creating dicts on the way)."""
    if not path:
        return value
    node = tree
    for key in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(key, {})
        elif isinstance(node, list) and isinstance(key, int) and key < len(node):
            node = node[key]
        else:
            return tree
        if not isinstance(node, (dict, list)):
            return tree
    last = path[-1]
    in_list = isinstance(node, list) and isinstance(last, int) and last < len(node)
    if isinstance(node, dict) or in_list:
        node[last] = value
    return tree


def _exists(tree: Any, path: tuple[Any, ...]) -> bool:
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def _delete(tree: Any, path: tuple[Any, ...]) -> None:
    node = tree
    for key in path[:-1]:
        node = node[key]
    if isinstance(node, dict):
        node.pop(path[-1], None)
    elif isinstance(node, list):
        del node[path[-1]]


def _is_frozen(path: tuple[Any, ...], family: Family) -> bool:
    return any(path[:len(f)] == f for f in family.frozen)


class _Splices:
    """Raw bytes stood in for by unique marker strings until serialization."""

    def __init__(self) -> None:
        self.raw: list[bytes] = []

    def marker(self, data: bytes) -> str:
        self.raw.append(data)
        return f"\x00RAW{len(self.raw) - 1}\x00"

    def apply(self, encoded: bytes) -> bytes:
        for index, data in enumerate(self.raw):
            encoded = encoded.replace(b'"\\u0000RAW%d\\u0000"' % index, data)
        return encoded


@st.composite
def mutated(draw: st.DrawFn, era: str, family: Family, splices: _Splices) -> Any:
    """A template of ``era`` with one to three mutations of ``family``."""
    if family.targeted:
        # Only templates that have one of the targeted fields, replaced where it is.
        trees = [t() for t in TEMPLATES[era]]
        trees = [t for t in trees if any(_exists(t, p) for p in family.targeted)]
        tree = draw(st.sampled_from(trees))
        path = draw(st.sampled_from([p for p in family.targeted if _exists(tree, p)]))
        return _set(tree, path, draw(st.sampled_from(family.targeted[path])))
    tree = draw(st.sampled_from(TEMPLATES[era]))()
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(tree) if not _is_frozen(p, family)]
        path = draw(st.sampled_from(paths))
        kinds = ["splice", "replace", "delete", "extra", "id"] if family.broad else ["splice"]
        if family.broad:
            kinds.append("giant")
        kind = draw(st.sampled_from(kinds))
        if kind == "splice":
            tree = _set(tree, path, splices.marker(draw(st.sampled_from(family.splices))))
        elif kind == "replace":
            tree = _set(tree, path, draw(json_values))
        elif kind == "delete" and path:
            _delete(tree, path)
        elif kind == "extra" and isinstance(tree, dict):
            node = tree
            for key in path:
                if not isinstance(node, (dict, list)):
                    break
                node = node[key]
            if isinstance(node, dict):
                node[draw(_text)] = draw(json_values)
        elif kind == "id" and isinstance(tree, dict):
            tree["id"] = draw(ids)
        elif kind == "giant":
            tree = _set(tree, path, "x" * draw(st.integers(1, GIANT)))
    return tree


@st.composite
def message_frame(draw: st.DrawFn, era: str, family: Family) -> Frame:
    splices = _Splices()
    if family.broad and era == HANDSHAKE and draw(st.integers(0, 9)) == 0:
        tree: Any = draw(st.lists(mutated(era, family, splices), min_size=1, max_size=4))
    else:
        tree = draw(mutated(era, family, splices))
    encoded = json.dumps(tree, ensure_ascii=draw(st.booleans())).encode("utf-8")
    return Frame(splices.apply(encoded))


_junk = st.one_of(
    st.sampled_from([b"", b"   ", b"\t", b"\r", b"null", b"[]", b"[[]]", b"{}", b"[{}]",
                     b"1", b'"s"', b"true", b"[1,2]", b'{"jsonrpc":"2.0"}',
                     b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
                     b'{"jsonrpc":"2.0","id":1,"result":{}}',
                     b'{"jsonrpc":"2.0","id":9,"error":{"code":1,"message":"m"}}',
                     b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}']),
    st.binary(max_size=48).map(lambda b: b.replace(b"\n", b" ")),
).map(Frame)


def cases(era: str, family: Family, *, max_frames: int = 3) -> st.SearchStrategy[Case]:
    frame = message_frame(era, family)
    if not family.broad:
        return st.builds(Case, st.lists(frame, min_size=1, max_size=max_frames))
    return _broad_case(st.one_of(frame, frame, frame, _junk), max_frames)


@st.composite
def _broad_case(draw: st.DrawFn, frame: st.SearchStrategy[Frame], max_frames: int) -> Case:
    case = Case(draw(st.lists(frame, min_size=1, max_size=max_frames)))
    return _duplicate_ids(case) if draw(st.booleans()) else case


def _duplicate_ids(case: Case) -> Case:
    """The same case with every request id rewritten to one value (a duplicate-id case)."""
    frames = []
    for frame in case.frames:
        try:
            tree = json.loads(frame.data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            frames.append(frame)
            continue
        items = tree if isinstance(tree, list) else [tree]
        for item in items:
            if isinstance(item, dict) and "id" in item:
                item["id"] = 7
        frames.append(Frame(json.dumps(tree).encode()))
    return Case(frames)
