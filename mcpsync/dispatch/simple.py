"""Binding for functions that take string arguments: resource templates and prompts.

Their arguments arrive as strings (URI template variables, prompt arguments), so binding
is simpler than for tools: find the context parameter, convert each string to the
parameter's annotated scalar type (``int``, ``float``, ``bool``, ``str``), and call.
"""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParamsError
from .schema import _special
from .typed import call_handler, check_handler, parse_docstring

if TYPE_CHECKING:
    from .context import HandlerContext

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _convert(hint: Any, name: str, value: str) -> Any:
    try:
        if hint is int:
            return int(value)
        if hint is float:
            return float(value)
    except ValueError:
        article = "an" if hint.__name__[0] in "aeiou" else "a"  # "an int", "a float"
        raise InvalidParamsError(
            f"Invalid params: {name!r} must be {article} {hint.__name__}") from None
    special = _special(hint)
    if special is None and isinstance(hint, type) and issubclass(hint, enum.Enum):
        special = ({}, hint)
    if special is not None and special[1] is not None:
        try:
            return special[1](value)
        except (TypeError, ValueError) as exc:
            raise InvalidParamsError(f"Invalid params: {name!r}: {exc}") from None
    if hint is bool:
        lowered = value.lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise InvalidParamsError(f"Invalid params: {name!r} must be true or false")
    return value


@dataclass
class Parameter:
    name: str
    required: bool
    description: str | None
    hint: Any


class StringBinding:
    """Calls ``fn(ctx?, **string_arguments)`` with scalar conversion. Thread-safe."""

    def __init__(self, fn: Callable[..., Any], context_type: type,
                 what: str | None = None) -> None:
        self.fn = fn
        check_handler(fn, what or repr(getattr(fn, "__name__", fn)))
        hints = typing.get_type_hints(fn)
        summary, docs = parse_docstring(inspect.getdoc(fn))
        self.description = summary
        self.context_param: str | None = None
        self.parameters: list[Parameter] = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{fn.__name__}: *args and **kwargs are not supported")
            hint = hints.get(param.name, str)
            if isinstance(hint, type) and issubclass(hint, context_type):
                self.context_param = param.name
                continue
            self.parameters.append(Parameter(
                param.name, param.default is inspect.Parameter.empty, docs.get(param.name), hint))

    def call(self, arguments: dict[str, Any], ctx: HandlerContext | None) -> Any:
        kwargs: dict[str, Any] = {}
        for p in self.parameters:
            if p.name in arguments:
                value = arguments[p.name]
                kwargs[p.name] = _convert(p.hint, p.name, value) if isinstance(value, str) \
                    else value
            elif p.required:
                raise InvalidParamsError(f"Invalid params: missing required argument {p.name!r}")
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return call_handler(self.fn, kwargs, ctx)
