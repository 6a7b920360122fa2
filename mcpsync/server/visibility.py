"""Who sees which tool, resource, template and prompt: permissions, tags, enable/disable.

Every server uses this extension from its construction. It declares two per-component
options through the component-options seam (:mod:`.component_options`), on every kind:

* ``permission="shop.issue_refund"``: the caller's framework user must have it,
  ``ctx.user.has_perm(codename)`` (Django's users have ``has_perm``; a Flask user class may
  define it). No user, or a user without ``has_perm``: denied. So one rule reads the same
  under Django, Flask or a user object of your own. ``permission=callable``: ``fn(ctx)``
  returns whether the caller may see it (one that raises denies, and is logged).
* ``tags={"admin", "beta"}``: labels that :meth:`Visibility.disable` and
  :meth:`Visibility.enable` select by (``server.disable(tags={"beta"})``).

Rules (``server.disable``/``server.enable``) select components by name (a tool's or
prompt's name, a resource's URI, a template's URI template) or by tag, for everybody or
for the callers a ``principal=fn(ctx)`` picks; the last rule that selects a component for
a caller decides. A component hidden from a caller is absent from its lists and answered
exactly like an unknown one (same code, same message) on a call, read, get or completion:
no oracle of its existence. The check is the registries' ``gate``
(:class:`~.component_options.Gate`), set only while something is hidden from someone: a
server that uses no permission and no rule pays one attribute test per call.

Lists that depend on who asks (a permission anywhere, or a rule with ``principal=``) are
marked ``cacheScope: "private"`` in 2026-07-28. A rule change tells the sessions and
listens of each list it changes (``list_changed``): all of them, since which sessions a
``principal=`` rule picks is only known per request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol, Union

from ..frozen import Frozen
from .component_options import KINDS, Kind, OptionSpec

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext
    from .host import Registered

logger = logging.getLogger("mcpsync.server")

#: A component's permission: a codename checked with ``ctx.user.has_perm``, or
#: ``fn(ctx) -> bool``.
Permission = Union[str, Callable[["HandlerContext"], bool]]  # noqa: UP007 (a runtime alias)
#: Which callers a rule is for: ``fn(ctx) -> bool``.
Principal = Callable[["HandlerContext"], bool]
#: Where a component's visibility options are kept (``component.options[KEY]``).
KEY: Final = "visibility"
#: The most rules one server keeps (``disable``/``enable`` past it: ``ValueError``). A
#: rule of the same names, tags and principal replaces the one before.
MAX_RULES: Final = 1024


# A Protocol for the type checker only: defining one costs every server's start tens
# of µs, and nothing checks it at run time.
if TYPE_CHECKING:
    class Governed(Registered, Protocol):
        """What visibility needs of the server it is installed on (a ``ServerCore``)."""

        def declare_options(self, spec: OptionSpec) -> None: ...

        def notify_list_changed(self, kind: str) -> None: ...


# Frozen value classes, not NamedTuples or frozen dataclasses: every server imports this
# module, and defining either cost its start a few hundred µs (see mcpsync/frozen.py).
class Visible(Frozen):
    """A component's visibility options: its ``permission`` and ``tags``. Immutable;
    equal and hashed by its fields."""

    __slots__ = ("permission", "tags")

    permission: Permission | None
    tags: frozenset[str]

    def __init__(self, permission: Permission | None = None,
                 tags: frozenset[str] = frozenset()) -> None:
        self._init(permission, tags)


class Rule(Frozen):
    """One ``disable`` (``enabled`` False) or ``enable``: what it selects and for whom.
    Immutable; equal and hashed by its fields."""

    __slots__ = ("enabled", "names", "tags", "principal")  # noqa: RUF023  (__init__'s order)

    enabled: bool
    names: frozenset[str]
    tags: frozenset[str]
    principal: Principal | None

    def __init__(self, enabled: bool, names: frozenset[str], tags: frozenset[str],
                 principal: Principal | None) -> None:
        self._init(enabled, names, tags, principal)

    def selects(self, name: str, tags: frozenset[str]) -> bool:
        return name in self.names or bool(self.tags & tags)

    def same(self, other: Rule) -> bool:
        return (self.names, self.tags) == (other.names, other.tags) and (
            self.principal is other.principal)



def has_permission(user: Any, codename: str) -> bool:
    """Whether ``user`` (a framework's user, or None) has the permission ``codename``:
    ``user.has_perm(codename)``; no user, no ``has_perm`` or one that raises: False."""
    check = getattr(user, "has_perm", None)
    if not callable(check):
        return False
    try:
        return bool(check(codename))
    except Exception:
        logger.exception("%r.has_perm(%r) raised: denied", user, codename)
        return False


def _asks(fn: Callable[[HandlerContext], bool], ctx: HandlerContext, what: str) -> bool:
    try:
        return bool(fn(ctx))
    except Exception:
        logger.exception("%s %r raised: treated as False", what, fn)
        return False


def _names(names: str | Iterable[str]) -> frozenset[str]:
    return frozenset([names] if isinstance(names, str) else names)


class Visibility:
    """The visibility extension of one server (``server._visibility``). Thread-safe: rules
    are a tuple replaced under a lock, read without one."""

    identifier: str | None = None

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: Governed | None = None
        self.rules: tuple[Rule, ...] = ()
        #: Whether a component was registered with a permission (so lists differ).
        self._permissions = False
        self._private = False

    # -- Extension -------------------------------------------------------------------------

    def install(self, server: Governed) -> None:
        if self._server is not None:
            raise ValueError("a Visibility extension serves one server only")
        self._server = server
        server.declare_options(OptionSpec(KEY, frozenset({"permission", "tags"}),
                                          frozenset(KINDS), self._parse))

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        """Nothing: visibility changes what is listed, not what is declared."""

    def close(self, timeout: float) -> bool:
        return True

    # -- the options -------------------------------------------------------------------------

    def _parse(self, kind: Kind, given: dict[str, Any]) -> Visible | None:
        permission = given.get("permission")
        if permission is not None and not ((isinstance(permission, str) and permission)
                                           or callable(permission)):
            raise TypeError("permission= is a permission codename (a non-empty string) or "
                            f"a callable(ctx) -> bool, not {permission!r}")
        tags = given.get("tags") or ()
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise TypeError(f"tags= is a set of strings, not {tags!r}")
        if permission is None and not tags:
            return None
        if permission is not None:
            with self._lock:
                self._permissions = True
                self._arm()
        return Visible(permission, frozenset(tags))

    # -- the gate ------------------------------------------------------------------------------

    @property
    def private(self) -> bool:
        return self._private

    def allows(self, kind: Kind, name: str, options: Mapping[str, object],
               ctx: HandlerContext) -> bool:
        visible = options.get(KEY)
        if not isinstance(visible, Visible):
            visible = None
        if visible is not None and visible.permission is not None:
            permission = visible.permission
            if isinstance(permission, str):
                if not has_permission(ctx.user, permission):
                    return False
            elif not _asks(permission, ctx, "permission"):
                return False
        rules = self.rules
        if rules:
            tags = visible.tags if visible is not None else frozenset()
            for rule in reversed(rules):
                if rule.selects(name, tags) and (
                        rule.principal is None or _asks(rule.principal, ctx, "principal")):
                    return rule.enabled
        return True

    def _arm(self) -> None:
        """Under the lock: set (or clear) the registries' gate and the private mark."""
        server = self._server
        self._private = self._permissions or any(r.principal is not None for r in self.rules)
        gate = self if (self._permissions or self.rules) else None
        if server is not None:
            server.tools.gate = gate
            server.resources.gate = gate
            server.prompts.gate = gate

    # -- the rules ---------------------------------------------------------------------------

    def disable(self, names: str | Iterable[str] = (), *, tags: Iterable[str] = (),
                principal: Principal | None = None) -> None:
        """Hide the components named ``names`` or tagged with one of ``tags``, from every
        caller or those ``principal(ctx)`` picks. The lists it changes are announced."""
        self._add(Rule(False, _names(names), frozenset(tags), principal))

    def enable(self, names: str | Iterable[str] = (), *, tags: Iterable[str] = (),
               principal: Principal | None = None) -> None:
        """Show again what a :meth:`disable` of the same selection hid; or, after a broader
        rule, show these components (to every caller, or those ``principal`` picks)."""
        self._add(Rule(True, _names(names), frozenset(tags), principal))

    def _add(self, rule: Rule) -> None:
        if not rule.names and not rule.tags:
            raise ValueError("name the components (by name or tags=) to enable or disable")
        if isinstance(rule.tags, str):
            raise TypeError("tags= is a set of strings")
        with self._lock:
            kept = tuple(r for r in self.rules if not r.same(rule))
            # An enable with no disable left to override is no rule at all.
            needless = rule.enabled and not any(not r.enabled for r in kept)
            rules = kept if needless else (*kept, rule)
            if len(rules) > MAX_RULES:
                raise ValueError(f"at most {MAX_RULES} visibility rules per server")
            changed = rules != self.rules
            self.rules = rules
            self._arm()
        if changed:
            self._announce(rule)

    def _announce(self, rule: Rule) -> None:
        """``list_changed`` for each list holding a component ``rule`` selects."""
        server = self._server
        if server is None:
            return

        def tags_of(options: Mapping[str, object]) -> frozenset[str]:
            visible = options.get(KEY)
            return visible.tags if isinstance(visible, Visible) else frozenset()

        lists = {
            "tools": any(rule.selects(t.name, tags_of(t.options)) for t in server.tools.all()),
            "resources": any(rule.selects(r.key, tags_of(r.options))
                             for r in server.resources.all()),
            "prompts": any(rule.selects(p.name, tags_of(p.options))
                           for p in server.prompts.all()),
        }
        for kind, selected in lists.items():
            if selected:
                server.notify_list_changed(kind)

    def __repr__(self) -> str:
        return f"<Visibility rules={len(self.rules)}>"


__all__ = ["KEY", "MAX_RULES", "Permission", "Principal", "Rule", "Visibility", "Visible",
           "has_permission"]
