"""Prompts: registry, prompts/list and prompts/get, and argument completion."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..codec import to_wire
from ..dispatch.context import HandlerContext
from ..dispatch.pagination import listing
from ..dispatch.simple import StringBinding
from ..dispatch.typed import run_coroutine
from ..errors import InvalidParamsError, MCPError, RequestCancelledError
from ..protocol.tool_outcome import handler_failed
from ..types import Icon
from ..types.content import CONTENT_TYPES
from ..types.prompts import GetPromptResult, PromptMessage
from .component_options import NO_OPTIONS, Gate, modern
from .scopes import as_scopes, permits

#: ``fn(value, context_arguments) -> list of suggestions`` for one argument.
Completer = Callable[[str, dict[str, str]], list[str]]
MAX_COMPLETIONS = 100


@dataclass
class RegisteredPrompt:
    binding: StringBinding
    description: dict[str, Any]
    #: OAuth scopes a caller's access token must carry (get, complete), checked before
    #: dispatch by :mod:`mcpsync.server.scopes`.
    scopes: tuple[str, ...] = ()
    #: What each extension that claimed it keeps of its options, by the extension's key.
    options: Mapping[str, object] = field(default_factory=lambda: NO_OPTIONS)

    @property
    def name(self) -> str:
        return str(self.description["name"])


def describe_prompt(fn: Callable[..., Any], *, name: str | None, title: str | None,
                    description: str | None, icons: list[Icon] | None,
                    meta: dict[str, Any] | None,
                    scopes: Iterable[str] = (),
                    options: Mapping[str, object] = NO_OPTIONS) -> RegisteredPrompt:
    """A prompt rendered by ``fn``, described for ``prompts/list``: its parameters are the
    prompt's arguments (required unless they have a default)."""
    binding = StringBinding(fn, HandlerContext, f"prompt {name or fn.__name__!r}")
    wire: dict[str, Any] = {"name": name or fn.__name__}
    text = description or binding.description
    if title is not None:
        wire["title"] = title
    if text:
        wire["description"] = text
    arguments = []
    for p in binding.parameters:
        argument: dict[str, Any] = {"name": p.name, "required": p.required}
        if p.description:
            argument["description"] = p.description
        arguments.append(argument)
    if arguments:
        wire["arguments"] = arguments
    if icons:
        wire["icons"] = to_wire(list(icons))
    if meta is not None:
        wire["_meta"] = meta
    return RegisteredPrompt(binding, wire, as_scopes(scopes), options)


class PromptRegistry:
    """Prompts in registration order. Thread-safe."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._prompts: dict[str, RegisteredPrompt] = {}
        self._on_change = on_change
        #: ``prompts/list`` leaves out the prompts whose ``scopes`` the caller's principal
        #: (``ctx.auth``) lacks. Off by default, as for tools; on, a 2026-07-28 list is
        #: marked ``cacheScope: "private"``.
        self.hide_unauthorized = False
        #: Who may see which prompt (set by visibility when something is hidden).
        self.gate: Gate | None = None

    def add(self, prompt: RegisteredPrompt) -> None:
        with self._lock:
            if prompt.name in self._prompts:
                raise ValueError(f"a prompt named {prompt.name!r} is already registered")
            self._prompts[prompt.name] = prompt
        if self._on_change is not None:
            self._on_change()

    def remove(self, name: str) -> None:
        with self._lock:
            if self._prompts.pop(name, None) is None:
                raise KeyError(name)
        if self._on_change is not None:
            self._on_change()

    def __len__(self) -> int:
        return len(self._prompts)

    def get(self, name: str) -> RegisteredPrompt | None:
        """The prompt registered as ``name``, whoever asks (see :meth:`find`)."""
        return self._prompts.get(name)

    def find(self, name: str, ctx: HandlerContext) -> RegisteredPrompt | None:
        """The prompt ``name`` if the caller of ``ctx`` may see it, else None."""
        prompt = self._prompts.get(name)
        gate = self.gate
        if prompt is None or gate is None or gate.allows("prompt", name, prompt.options, ctx):
            return prompt
        return None

    def all(self) -> list[RegisteredPrompt]:
        """The prompts registered now."""
        with self._lock:
            return list(self._prompts.values())

    def list(self, ctx: HandlerContext, params: dict[str, Any], page_size: int) -> dict[str, Any]:
        with self._lock:
            prompts = list(self._prompts.values())
        hide = self.hide_unauthorized
        gate = self.gate
        result = listing("prompts", [p.description for p in prompts
                                     if (not hide or permits(ctx.auth, p.scopes)) and (
                                         gate is None
                                         or gate.allows("prompt", p.name, p.options, ctx))],
                         params.get("cursor"), page_size)
        if (hide or (gate is not None and gate.private)) and modern(ctx):
            result["cacheScope"] = "private"  # another principal sees another list
        return result

    def render(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParamsError('Invalid params: "name" must be a string')
        prompt = self.find(name, ctx)
        if prompt is None:
            raise InvalidParamsError(f"Unknown prompt: {name}", data={"name": name})
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict) or not all(
                isinstance(v, str) for v in arguments.values()):
            raise InvalidParamsError('Invalid params: "arguments" must map names to strings')
        try:
            result = to_prompt_result(prompt.binding.call(arguments, ctx))
        except (MCPError, RequestCancelledError):
            raise
        except Exception as exc:  # the prompt function's failure: one policy (tool_outcome)
            raise handler_failed(f"prompt {name}", exc, ctx) from None
        if "description" not in result and prompt.description.get("description"):
            result["description"] = prompt.description["description"]
        return result


def to_prompt_result(value: Any) -> dict[str, Any]:
    """A prompt function's return value as a GetPromptResult dict.

    ``str`` → one user text message; a content block → one user message; a
    :class:`PromptMessage`, a ``{"role", "content"}`` dict, or a list mixing those (strings
    in a list become user messages); a :class:`GetPromptResult` passes through.
    """
    if isinstance(value, GetPromptResult):
        return to_wire(value)  # type: ignore[no-any-return]
    items = value if isinstance(value, (list, tuple)) else [value]
    messages = [_message(item) for item in items]
    return {"messages": messages}


def _message(item: Any) -> dict[str, Any]:
    if isinstance(item, str):
        return {"role": "user", "content": {"type": "text", "text": item}}
    if isinstance(item, PromptMessage):
        return _checked_message(item.role, item.content)
    if isinstance(item, CONTENT_TYPES):
        return {"role": "user", "content": to_wire(item)}
    if isinstance(item, dict) and "role" in item and "content" in item:
        return _checked_message(item["role"], item["content"])
    raise TypeError(f"a prompt cannot return {type(item).__name__}")


def _checked_message(role: Any, content: Any) -> dict[str, Any]:
    """A message the spec allows: role "user" or "assistant", content a block (a plain
    string is a text block; it used to go out as a bare string, which clients reject)."""
    if role not in ("user", "assistant"):
        raise TypeError(f"a prompt message's role is 'user' or 'assistant', not {role!r}")
    if isinstance(content, str):
        return {"role": role, "content": {"type": "text", "text": content}}
    wire = to_wire(content)
    if not (isinstance(wire, dict) and isinstance(wire.get("type"), str)):
        raise TypeError(f"a prompt message's content is a content block (or a string), "
                        f"not {type(content).__name__}")
    return {"role": role, "content": wire}


def complete(completer: Completer, value: str, context: dict[str, str]) -> dict[str, Any]:
    """Run a completer (plain or ``async def``) and shape the result (at most 100 values,
    with total/hasMore)."""
    suggestions: Any = completer(value, context)
    if inspect.iscoroutine(suggestions):
        suggestions = run_coroutine(suggestions)
    values = [str(v) for v in suggestions]
    completion: dict[str, Any] = {"values": values[:MAX_COMPLETIONS], "total": len(values)}
    completion["hasMore"] = len(values) > MAX_COMPLETIONS
    return {"completion": completion}
