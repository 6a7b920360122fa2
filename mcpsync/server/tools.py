"""The tool registry: registered tools, their wire descriptions, and tools/list + tools/call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..codec import to_wire
from ..dispatch.context import HandlerContext
from ..dispatch.pagination import listing
from ..dispatch.typed import ToolBinding
from ..errors import InvalidParamsError, PeerRequestError
from ..protocol.http_headers import header_params
from ..protocol.tool_outcome import tool_failed
from ..protocol.versions import ALL_VERSIONS, features
from ..types import Icon, ToolAnnotations
from .component_options import NO_OPTIONS, Gate, modern
from .scopes import permits


@dataclass
class RegisteredTool:
    """A tool as the server holds it: the binding that calls it and its wire description."""

    binding: ToolBinding
    description: dict[str, Any]
    #: OAuth scopes the caller's access token must carry (``ctx.auth.scopes``), checked
    #: before dispatch by :mod:`mcpsync.server.scopes`.
    scopes: tuple[str, ...] = ()
    #: What each extension that claimed it keeps of its options, by the extension's key
    #: (see :mod:`mcpsync.server.component_options`).
    options: Mapping[str, object] = field(default_factory=lambda: NO_OPTIONS)

    #: Whether its function takes no context: it can neither report progress nor see
    #: cancellation, so a transport may run it on the request's own thread. (A binding of
    #: another kind, without ``context_param``, is taken to need one.)
    context_free: bool = field(init=False)
    #: The 2026-07-28 ``Mcp-Param-*`` headers its calls carry (``x-mcp-header``
    #: annotations of its input schema: header name → the argument's path); ``None`` for
    #: an invalid annotation. Read once here, as every call is checked against it.
    header_map: dict[str, tuple[str, ...]] | None = field(init=False)

    def __post_init__(self) -> None:
        binding = self.binding
        self.context_free = (hasattr(binding, "context_param")
                             and binding.context_param is None)
        schema = self.description.get("inputSchema")
        self.header_map = header_params(schema) if isinstance(schema, dict) else None

    @property
    def name(self) -> str:
        return self.binding.name


def describe(
    binding: ToolBinding,
    *,
    title: str | None = None,
    annotations: ToolAnnotations | dict[str, Any] | None = None,
    icons: list[Icon] | list[dict[str, Any]] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``Tool`` object of ``tools/list``, built once at registration."""
    wire: dict[str, Any] = {"name": binding.name, "inputSchema": binding.input_schema}
    if title is not None:
        wire["title"] = title
    if binding.description:
        wire["description"] = binding.description
    if binding.output_schema is not None:
        wire["outputSchema"] = binding.output_schema
    if annotations is not None:
        wire["annotations"] = to_wire(annotations)
    if icons:
        wire["icons"] = to_wire(list(icons))
    if meta is not None:
        wire["_meta"] = meta
    return wire


class ToolRegistry:
    """Tools by name, in registration order. Thread-safe; changes may happen at run time."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._tools: dict[str, RegisteredTool] = {}
        self._listing: list[dict[str, Any]] = []
        self._on_change = on_change
        #: Called with each tool added from now on (an extension that must act on a
        #: tool's options when it is registered).
        self.watchers: list[Callable[[RegisteredTool], None]] = []
        #: Who may see which tool (set by visibility when something is hidden).
        self.gate: Gate | None = None
        #: ``tools/list`` leaves out the tools whose ``scopes`` the caller's principal
        #: (``ctx.auth``) lacks. Off by default: the spec lets a client see a tool it must
        #: step up for. On, a 2026-07-28 list is marked ``cacheScope: "private"``.
        self.hide_unauthorized = False

    def add(self, tool: RegisteredTool) -> None:
        with self._lock:
            if tool.name in self._tools:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
            self._listing = [t.description for t in self._tools.values()]
        for watcher in list(self.watchers):
            watcher(tool)
        if self._on_change is not None:
            self._on_change()

    def all(self) -> list[RegisteredTool]:
        """The tools registered now, in registration order."""
        with self._lock:
            return list(self._tools.values())

    def remove(self, name: str) -> None:
        with self._lock:
            if self._tools.pop(name, None) is None:
                raise KeyError(name)
            self._listing = [t.description for t in self._tools.values()]
        if self._on_change is not None:
            self._on_change()

    def get(self, name: str) -> RegisteredTool | None:
        """The tool registered as ``name``, whoever asks (see :meth:`find`)."""
        return self._tools.get(name)

    def find(self, name: str, ctx: HandlerContext) -> RegisteredTool | None:
        """The tool ``name`` if the caller of ``ctx`` may see it, else None (as unknown)."""
        tool = self._tools.get(name)
        gate = self.gate
        if tool is None or gate is None or gate.allows("tool", name, tool.options, ctx):
            return tool
        return None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    # -- the protocol methods ------------------------------------------------------------

    def list(self, ctx: HandlerContext, params: dict[str, Any], page_size: int) -> dict[str, Any]:
        items = self._listing
        gate = self.gate
        hide = self.hide_unauthorized
        if hide or gate is not None:
            with self._lock:
                tools = list(self._tools.values())
            items = [t.description for t in tools if (not hide or _allowed(t, ctx)) and (
                gate is None or gate.allows("tool", t.name, t.options, ctx))]
        result = listing("tools", items, params.get("cursor"), page_size)
        if (hide or (gate is not None and gate.private)) and modern(ctx):
            result["cacheScope"] = "private"  # another principal sees another list
        version = ctx.session.protocol_version
        if version is not None and not features(version).structured_output:
            result["tools"] = [_without(item, "outputSchema") for item in result["tools"]]
        return result

    def call(self, ctx: HandlerContext, params: dict[str, Any],
             found: RegisteredTool | None = None) -> dict[str, Any]:
        """``tools/call``. ``found``: the tool ``params["name"]`` names, when the caller
        has just looked it up with :meth:`find` (a wrapper of this handler): not looked up,
        nor checked against the gate, twice. A tool the gate hides is answered exactly
        like an unknown one."""
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParamsError('Invalid params: "name" must be a string')
        tool = found if found is not None else self._tools.get(name)
        gate = self.gate
        if tool is None or (gate is not None and found is None
                            and not gate.allows("tool", name, tool.options, ctx)):
            raise InvalidParamsError(f"Unknown tool: {name}", data={"name": name})
        refusal = ctx.transport.refusal  # held until the tool is known visible to the caller
        if refusal is not None:
            raise refusal
        arguments = params.get("arguments")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidParamsError('Invalid params: "arguments" must be an object')
        try:
            result = tool.binding.call(arguments, ctx)
        except PeerRequestError as exc:
            # The client refused a question the tool asked (a bridge that answers every
            # server request -32601, say): that is the tool's failure, reported to the
            # model as one, not an error of tools/call.
            return tool_failed(name, exc, ctx=ctx)
        if "structuredContent" in result and ctx.session.protocol_version in _UNSTRUCTURED:
            result = _without(result, "structuredContent")
        return result


#: The revisions without structured tool output (a set: looked up on every call).
_UNSTRUCTURED = frozenset(v for v in ALL_VERSIONS if not features(v).structured_output)


def _allowed(tool: RegisteredTool, ctx: HandlerContext) -> bool:
    return permits(ctx.auth, tool.scopes)


def _without(item: dict[str, Any], key: str) -> dict[str, Any]:
    if key not in item:
        return item
    return {k: v for k, v in item.items() if k != key}
