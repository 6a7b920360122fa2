"""Route maps: which operations become tools, resources, templates, or nothing; and the
names the tools get.

Rules are tried in order and the first that matches decides. A rule matches an operation
when its method is one of ``methods`` (``"*"``: any), ``pattern`` (a regular expression)
is found in its path template (``/pets/{id}``), and the operation carries every tag of
``tags``. An operation no rule matches is a tool.

Why every operation is a tool by default (as FastMCP decided too): a tool is what a model
can call by itself. A resource is read when the *host* decides to (most hosts show them to
the user to attach, not to the model), so a GET made a resource by default would vanish
from what the model can do. And a template's arguments must all fit in its URI, which
query strings, headers and bodies do not. Say ``RouteMap(methods=["GET"],
pattern=r"^/reports/", kind="resource")`` where reading by URI is what you want.

Names follow the MCP tool-name rule (2025-11-25): 1 to 128 characters from
``A-Z a-z 0-9 _ - .``. The ``operationId`` is used, each other character made ``_``; an
operation without one is named from its method and path (``get_pets_id``). A name taken
already gets ``_2``, ``_3``...; names are cut to fit 128 characters with their suffix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from .operations import Operation

__all__ = ["DEFAULT_ROUTE_MAPS", "RouteMap", "kind_of", "tool_names"]

Kind = Literal["tool", "resource", "template", "exclude"]
#: The longest tool name the spec allows.
MAX_NAME: Final = 128
_INVALID: Final = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class RouteMap:
    """One rule (see the module doc). ``methods``: ``"*"`` or HTTP methods (any case);
    ``pattern``: a regular expression searched in the path template; ``tags``: every one
    must be on the operation."""

    methods: Iterable[str] | str = "*"
    pattern: str | re.Pattern[str] = r".*"
    tags: Iterable[str] = ()
    kind: Kind = "tool"
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _methods: frozenset[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("tool", "resource", "template", "exclude"):
            raise ValueError(f"RouteMap kind must be 'tool', 'resource', 'template' or "
                             f"'exclude', not {self.kind!r}")
        compiled = self.pattern if isinstance(self.pattern, re.Pattern) \
            else re.compile(self.pattern)
        methods = None if self.methods == "*" else frozenset(
            m.upper() for m in ([self.methods] if isinstance(self.methods, str)
                                else self.methods))
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_methods", methods)
        object.__setattr__(self, "tags", tuple(self.tags))

    def matches(self, operation: Operation) -> bool:
        if self._methods is not None and operation.method not in self._methods:
            return False
        if not self._compiled.search(operation.path):
            return False
        return set(self.tags) <= set(operation.tags)


#: Every operation is a tool (see the module doc for why).
DEFAULT_ROUTE_MAPS: Final = (RouteMap(kind="tool"),)


def kind_of(operation: Operation, route_maps: Iterable[RouteMap]) -> Kind:
    """The kind of the first rule that matches; ``"tool"`` when none does."""
    for rule in route_maps:
        if rule.matches(operation):
            return rule.kind
    return "tool"


def sanitize(text: str) -> str:
    """``text`` with every run of characters a tool name may not hold made one ``_``."""
    return _INVALID.sub("_", text).strip("_") or "operation"


def fallback_name(operation: Operation) -> str:
    """``get_pets_id`` for ``GET /pets/{id}``."""
    name = sanitize(f"{operation.method.lower()}_{operation.path.replace('/', '_')}")
    return re.sub(r"_{2,}", "_", name)


def tool_names(operations: Iterable[Operation]) -> list[str]:
    """One unique, valid name per operation, in order (see the module doc)."""
    taken: set[str] = set()
    names = []
    for operation in operations:
        base = sanitize(operation.operation_id) if operation.operation_id \
            else fallback_name(operation)
        base = base[:MAX_NAME]
        name, n = base, 1
        while name in taken:
            n += 1
            suffix = f"_{n}"
            name = base[:MAX_NAME - len(suffix)] + suffix
        taken.add(name)
        names.append(name)
    return names
