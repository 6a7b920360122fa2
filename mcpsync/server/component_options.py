"""Per-component options that extensions own: the seam behind ``@server.tool(**options)``.

A tool, resource, resource template or prompt is registered with the core's own keywords
(name, title, schema...) and, besides them, with keywords that extensions declare: the
tasks extension declares ``task=``, ``defer_task=``, ``executor=`` and ``retry_safe=`` on
tools; visibility declares ``permission=`` and ``tags=`` on every kind. The core knows none
of them by name. Each extension declares an :class:`OptionSpec` once
(``server.declare_options(spec)``); at registration the keywords it claims are handed to
its ``parse``, and what that returns is kept on the component under the extension's
``key`` (``tool.options["tasks"]``), a typed value only that extension reads back (at
call or list time, as its own accessor casts it). A keyword nobody declared is a
``TypeError`` naming the known ones, as a misspelt keyword argument would be.

Why a mapping keyed by the extension rather than attributes on the component: a
third-party extension adds an option without a change here, two extensions cannot
collide on a name (a clash is refused when the second one is declared), and a component
no extension claimed carries one shared empty mapping (nothing is allocated per tool).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from ..frozen import Frozen
from ..protocol.versions import features

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext

#: The kinds of registered component an option may be declared on.
Kind = Literal["tool", "resource", "template", "prompt"]
KINDS: Final[tuple[Kind, ...]] = ("tool", "resource", "template", "prompt")

#: The options of a component no extension claimed (shared, read-only).
NO_OPTIONS: Final[Mapping[str, object]] = MappingProxyType({})


# A Frozen value class, not a NamedTuple or a frozen dataclass: every server imports this
# module, and defining either cost its start several hundred µs (see mcpsync/frozen.py).
class OptionSpec(Frozen):
    """The per-component keywords one extension declares.

    ``key``: where its value is kept (``component.options[key]``). ``keywords``: the
    decorator keywords it claims. ``kinds``: the components they are accepted on.
    ``parse(kind, given)``: ``given`` holds only the keywords of this spec that the user
    passed (never empty); returns the value to keep, or ``None`` to keep nothing (the
    defaults); raises ``ValueError``/``TypeError`` for a bad value, at registration.
    ``describe(kind, value, wire)``: optional; adds what the option shows on the wire to
    the component's description (the tasks extension's ``execution.taskSupport``).
    Immutable; equal and hashed by its fields."""

    __slots__ = ("key", "keywords", "kinds", "parse", "describe")  # noqa: RUF023  (__init__'s order)

    key: str
    keywords: frozenset[str]
    kinds: frozenset[Kind]
    parse: Callable[[Kind, dict[str, Any]], object | None]
    describe: Callable[[Kind, Any, dict[str, Any]], None] | None

    def __init__(self, key: str, keywords: frozenset[str], kinds: frozenset[Kind],
                 parse: Callable[[Kind, dict[str, Any]], object | None],
                 describe: Callable[[Kind, Any, dict[str, Any]], None] | None = None) -> None:
        self._init(key, keywords, kinds, parse, describe)


class ComponentOptions:
    """The option specs declared on one server. Thread-safe: declared at set-up (under a
    lock), read at every registration from a replaced-never-changed tuple."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.specs: tuple[OptionSpec, ...] = ()

    def declare(self, spec: OptionSpec) -> None:
        """Add ``spec``; ``ValueError`` when its key or one of its keywords is taken."""
        with self._lock:
            for other in self.specs:
                if other.key == spec.key:
                    raise ValueError(f"component options {spec.key!r} are declared already")
                for kind in spec.kinds & other.kinds:
                    clash = spec.keywords & other.keywords
                    if clash:
                        raise ValueError(f"the {kind} option(s) {sorted(clash)} are declared "
                                         f"already by {other.key!r}")
            self.specs = (*self.specs, spec)

    def known(self, kind: Kind) -> list[str]:
        """The keywords the extensions declared for ``kind``, sorted."""
        return sorted(k for spec in self.specs if kind in spec.kinds for k in spec.keywords)

    def claim(self, kind: Kind, given: dict[str, Any], what: str) -> Mapping[str, object]:
        """The options of one component of ``kind`` from the extension keywords ``given``
        (``what`` names the call in errors: ``"tool()"``). ``TypeError`` for a keyword no
        extension declared for ``kind``, naming the ones that are."""
        if not given:
            return NO_OPTIONS
        specs = self.specs
        claimed: set[str] = set()
        values: dict[str, object] = {}
        for spec in specs:
            if kind not in spec.kinds:
                continue
            mine = {k: v for k, v in given.items() if k in spec.keywords}
            if not mine:
                continue
            claimed.update(mine)
            value = spec.parse(kind, mine)
            if value is not None:
                values[spec.key] = value
        unknown = sorted(set(given) - claimed)
        if unknown:
            raise TypeError(f"{what} got unexpected keyword argument(s) "
                            f"{', '.join(map(repr, unknown))}; the options the server's "
                            f"extensions declare for a {kind} are: "
                            f"{', '.join(self.known(kind)) or 'none'}")
        return MappingProxyType(values) if values else NO_OPTIONS

    def describe(self, kind: Kind, options: Mapping[str, object],
                 wire: dict[str, Any]) -> None:
        """Let each extension that claimed this component add to its ``wire``."""
        if not options:
            return
        for spec in self.specs:
            if spec.describe is not None and spec.key in options:
                spec.describe(kind, options[spec.key], wire)


def modern(ctx: HandlerContext) -> bool:
    """Whether ``ctx``'s request speaks 2026-07-28, whose results carry ``cacheScope``
    (a list that differs by principal is marked private there, and only there)."""
    version = ctx.session.protocol_version
    return version is not None and features(version).era == "modern"


class Gate(Protocol):
    """Who may see a component: set on a registry (``registry.gate``) by the extension
    that decides it (visibility), ``None`` while nothing is hidden from anyone, so the
    lookup of a call costs one attribute test then. A component the gate refuses is
    absent from its list and answered exactly like an unknown one."""

    #: Whether what it allows depends on who asks (a permission, a rule for some
    #: principals): lists are then marked ``cacheScope: "private"``.
    @property
    def private(self) -> bool: ...

    def allows(self, kind: Kind, name: str, options: Mapping[str, object],
               ctx: HandlerContext) -> bool:
        """Whether the caller of ``ctx`` may see the component ``name`` of ``kind``."""


__all__ = ["KINDS", "NO_OPTIONS", "ComponentOptions", "Gate", "Kind", "OptionSpec", "modern"]
