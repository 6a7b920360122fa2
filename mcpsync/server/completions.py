"""``completion/complete``: the completers a server registered, and the request's checks.

A completer belongs to a prompt argument or to a resource template variable
(``@server.completer(ref, argument)``); :class:`Completions` owns that table and answers
the request: ``ref`` must name a registered prompt or template, the argument and context
must be strings, and an argument without a completer completes to nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..dispatch.context import HandlerContext
from ..errors import InvalidParamsError
from ..protocol.uritemplate import is_template
from .prompts import Completer, PromptRegistry, complete
from .resources import ResourceRegistry


class Completions:
    """The completers of one server, by (reference kind, prompt or template, argument).
    Thread-safe: the table is replaced, never changed, once published."""

    def __init__(self, prompts: PromptRegistry, resources: ResourceRegistry) -> None:
        self._prompts = prompts
        self._resources = resources
        self._lock = threading.Lock()
        self._table: dict[tuple[str, str, str], Completer] = {}

    def add(self, ref: str, argument: str, fn: Completer) -> None:
        """Complete ``argument`` of ``ref`` (a prompt name, or a resource template) with
        ``fn``, replacing any completer it had."""
        kind = "ref/resource" if is_template(ref) else "ref/prompt"
        with self._lock:
            self._table = {**self._table, (kind, ref, argument): fn}

    def __len__(self) -> int:
        return len(self._table)

    def complete(self, ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        """``completion/complete``: the registered completer of a prompt argument or
        template variable, after the checks of ``ref``, ``argument`` and ``context``."""
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise InvalidParamsError('Invalid params: "ref" and "argument" must be objects')
        kind = ref.get("type")
        key = ref.get("name") if kind == "ref/prompt" else ref.get("uri")
        # A prompt or template hidden from this caller is completed as an unknown one.
        if kind == "ref/prompt" and self._prompts.find(str(key), ctx) is None:
            raise InvalidParamsError(f"Unknown prompt: {key}")
        if kind == "ref/resource" and self._resources.visible_template(str(key), ctx) is None:
            raise InvalidParamsError(f"Unknown resource template: {key}")
        if kind not in ("ref/prompt", "ref/resource"):
            raise InvalidParamsError(f"Invalid params: unknown reference type {kind!r}")
        name, value = argument.get("name"), argument.get("value", "")
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidParamsError("Invalid params: argument name and value must be strings")
        context = params.get("context")
        if context is not None and not isinstance(context, dict):
            raise InvalidParamsError('Invalid params: "context" must be an object')
        context_arguments = (context or {}).get("arguments")
        if context_arguments is not None and not (isinstance(context_arguments, dict) and all(
                isinstance(v, str) for v in context_arguments.values())):
            raise InvalidParamsError(
                'Invalid params: "context.arguments" must map names to strings')
        completer: Callable[[str, dict[str, str]], list[str]] | None = self._table.get(
            (str(kind), str(key), name))
        if completer is None:
            return {"completion": {"values": [], "total": 0, "hasMore": False}}
        return complete(completer, value, dict(context_arguments or {}))


__all__ = ["Completions"]
