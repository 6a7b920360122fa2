"""Span names and attributes of the MCP semantic conventions, from a message (pure).

Every value that comes from the peer is bounded in length, and names that the peer
chooses are only used as span names and metric attributes when this side knows them: a
method name when the method table (:mod:`mcpsync.protocol.methods`) has a row for it, a
tool or prompt name when the server has it registered (or, for a client that asks, when
its server listed it). Otherwise a peer sending made-up names would make one metric
stream per name; ``_OTHER`` stands for all of them, as the conventions say.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from .. import errors
from ..protocol.methods import VIEWS
from ..protocol.versions import ALL_VERSIONS, META_VERSION

#: Longest attribute value taken from a message (a tool name, a URI, a request id).
MAX_VALUE: Final = 256
OTHER: Final = "_OTHER"

#: Every method name the table has: any other is recorded as ``_OTHER``.
_KNOWN_METHODS: Final = VIEWS.known
#: The methods with a target: the attribute it goes in, and the param that names it.
_TARGETS: Final = VIEWS.telemetry_target
#: The targets that are peer-chosen names (tools, prompts): span name and metric
#: attribute, vetted by ``known``. Others (URIs, task ids) are span attributes only.
_NAMED_KINDS: Final = {"gen_ai.tool.name": "tool", "gen_ai.prompt.name": "prompt"}
_URI: Final = "mcp.resource.uri"
#: The revisions mcpsync speaks: a version a peer made up is ``_OTHER``.
_VERSIONS: Final = frozenset(ALL_VERSIONS)
#: The error codes recorded as they are: JSON-RPC's, the spec's and mcpsync's own. A peer
#: (or a proxy's remote) can answer any integer: any other code is ``_OTHER``.
_KNOWN_CODES: Final = frozenset({
    errors.PARSE_ERROR, errors.INVALID_REQUEST, errors.METHOD_NOT_FOUND,
    errors.INVALID_PARAMS, errors.INTERNAL_ERROR, errors.RESOURCE_NOT_FOUND,
    errors.URL_ELICITATION_REQUIRED, errors.HEADER_MISMATCH,
    errors.MISSING_CLIENT_CAPABILITY, errors.UNSUPPORTED_PROTOCOL_VERSION,
    errors.RATE_LIMITED,
})

class Peer(Protocol):
    """What a message's transport says of the peer (``dispatch.TransportContext``)."""

    @property
    def kind(self) -> str: ...

    @property
    def session_id(self) -> str | None: ...

    @property
    def remote_addr(self) -> str | None: ...


class _Transport:
    """What a client's spans say of the transport it uses (a server's connection has its
    own TransportContext)."""

    __slots__ = ("kind", "remote_addr", "session_id")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.remote_addr: str | None = None
        self.session_id: str | None = None


def peer_of(transport: object) -> Peer:
    """The :class:`Peer` of a client's transport: ``stdio`` for one that runs a command,
    ``http`` for one with a URL, else ``memory``."""
    kind = getattr(transport, "kind", None)
    if not isinstance(kind, str):
        kind = "stdio" if hasattr(transport, "command") else (
            "http" if hasattr(transport, "url") else "memory")
    return _Transport(kind)


#: Answers whether the server has a tool (``"tool"``) or prompt (``"prompt"``) so named.
Known = Callable[[str, str], bool]


def _text(value: object) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE]


class Described:
    """What one message says about itself: span name, span attributes, and the smaller set
    of attributes metrics may carry (no ids, no URIs). Made once per message."""

    __slots__ = ("metric_attributes", "name", "span_attributes")

    def __init__(self, name: str, span_attributes: dict[str, Any],
                 metric_attributes: dict[str, Any]) -> None:
        self.name = name
        self.span_attributes = span_attributes
        self.metric_attributes = metric_attributes


def describe(method: str, params: Mapping[str, Any] | None, request_id: object, *,
             protocol_version: str | None = None, transport: Peer | None = None,
             known: Known | None = None, uri_in_name: bool = False) -> Described:
    """The conventions' attributes of ``method`` with ``params``. ``request_id`` is
    ``None`` for a notification. ``known`` (server side) vets peer-chosen names;
    a client passes ``None``: the names it sends are its own."""
    if method not in _KNOWN_METHODS:
        method = OTHER  # a name the peer made up (or a custom method without a row)
    common: dict[str, Any] = {"mcp.method.name": method}
    params = params if isinstance(params, Mapping) else None
    target: str | None = None
    found = _TARGETS.get(method)
    kind = _NAMED_KINDS.get(found[0]) if found is not None else None
    if found is not None and kind is not None:
        attribute, param = found
        name = params.get(param) if params is not None else None
        if isinstance(name, str):
            target = _text(name) if known is None or known(kind, name) else OTHER
            common[attribute] = target
        if kind == "tool":
            common["gen_ai.operation.name"] = "execute_tool"
    version = protocol_version
    if version is None and params is not None:
        meta = params.get("_meta")
        if isinstance(meta, Mapping) and isinstance(meta.get(META_VERSION), str):
            version = meta[META_VERSION]
    if version:
        common["mcp.protocol.version"] = version if version in _VERSIONS else OTHER
    if transport is not None:
        if transport.kind == "stdio":
            common["network.transport"] = "pipe"
        elif transport.kind == "http":
            common["network.transport"] = "tcp"
            common["network.protocol.name"] = "http"
    span = dict(common)
    if request_id is not None:
        span["jsonrpc.request.id"] = _text(request_id)
    if found is not None and kind is None and params is not None:  # a URI, a task id
        attribute, param = found
        value = params.get(param)
        if isinstance(value, str):
            span[attribute] = _text(value)
            if uri_in_name and attribute == _URI:
                target = _text(value)
    if transport is not None:
        if transport.session_id:
            span["mcp.session.id"] = _text(transport.session_id)
        if transport.remote_addr:
            span["client.address"] = _text(transport.remote_addr)
    return Described(f"{method} {target}" if target else method, span, common)


def error_attributes(code: int) -> dict[str, str]:
    """A JSON-RPC error answer: its code, as ``error.type`` and the status code; a code
    mcpsync does not know is ``_OTHER`` (the peer chooses it: one series per made-up code
    would crowd out the real ones)."""
    known = isinstance(code, int) and not isinstance(code, bool) and code in _KNOWN_CODES
    text = str(code) if known else OTHER
    return {"error.type": text, "rpc.response.status_code": text}
