"""The option objects of ``Server(...)``: what few servers change, grouped by concern.

Why groups: a server's constructor took 25 keywords, most of which nearly nobody passes;
the ones everyone passes (name, version, title, instructions, lifespan,
``request_state_key``, ``task_store``) stay keywords, and the rest live in a few frozen
objects that the docs name: :class:`ServerLimits` (bounds and timeouts, the table of
docs/limits.md), :class:`ProtocolOptions` (which revisions are spoken and what is declared
and hinted to clients, docs/protocol-versions.md) and :class:`ServerDetails` (the display
fields of ``serverInfo`` added in 2025-11-25). Frozen, so one value can be shared between
servers (every worker of a deployment) and read without a lock.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from reprlib import recursive_repr
from typing import TypeVar

from ..protocol.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from ..types import Icon
from .listen import DEFAULT_MAX_SUBSCRIPTIONS

_Options = TypeVar("_Options", bound=type)


def _compared_by_fields(cls: _Options) -> _Options:
    """Give a frozen dataclass made with ``init=False, repr=False, eq=False`` (its
    ``__init__`` written in its body) the ``__repr__``, ``__eq__`` and ``__hash__`` that
    ``dataclass`` would have written (same text, same comparison, same hash), as closures
    over its fields.

    Why: ``dataclass`` writes each of those methods as source and compiles it with
    ``exec``; for the three option classes that cost every server's start about 2 ms
    before its first answer, compiling methods nobody calls then. They stay dataclasses
    (``fields``, ``replace``, ``asdict``, frozen); ``tests/server/test_options.py`` checks
    each method, ``__init__`` included, against those of a genuine dataclass twin."""
    names = tuple(f.name for f in fields(cls) if f.repr)
    compared = tuple(f.name for f in fields(cls) if f.compare)
    hashed = tuple(f.name for f in fields(cls) if (f.compare if f.hash is None else f.hash))

    @recursive_repr()
    def __repr__(self: object) -> str:
        return self.__class__.__qualname__ + "(" + ", ".join(
            f"{name}={getattr(self, name)!r}" for name in names) + ")"

    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, name) for name in compared) == tuple(
                getattr(other, name) for name in compared)
        return NotImplemented

    def __hash__(self: object) -> int:
        return hash(tuple(getattr(self, name) for name in hashed))

    for method in (__repr__, __eq__, __hash__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    return cls


#: How a frozen dataclass's ``__init__`` sets its fields (``__setattr__`` refuses).
_set = object.__setattr__


@_compared_by_fields
@dataclass(frozen=True, init=False, repr=False, eq=False)
class ServerLimits:
    """How much a server takes on at once and how long it waits (docs/limits.md).

    ``max_handlers``: requests running at once, each on its own thread, per stdio or
    memory connection and for a whole HTTP app; more wait in a bounded queue.
    ``max_subscriptions``: open ``subscriptions/listen`` streams across all sessions (0
    refuses every listen). ``request_timeout``: seconds the server's own requests to the
    client (``ctx.elicit``, ``ctx.sample``, ``ctx.request``) wait by default.
    ``page_size``: items in one page of every ``*/list`` result. ``request_state_ttl``:
    seconds a 2026-07-28 multi round-trip ``requestState`` stays valid.
    ``startup_timeout``: seconds a thread waits for another thread's startup.

    One name per idea, the client's where the idea is the same: ``max_handlers`` as in
    :class:`~mcpsync.client.options.ClientLimits` (threads answering the peer's
    requests; it was ``max_concurrent_handlers``, longer for nothing: a cap on handlers is
    a cap on those running at once), ``request_timeout`` for the default deadline of a
    request this side sends, as the connection under both calls it (it was
    ``default_timeout`` there): a bare ``timeout`` beside ``startup_timeout`` would not
    say which wait it bounds.
    """

    max_handlers: int = 64
    max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS
    request_timeout: float = 60.0
    page_size: int = 100
    request_state_ttl: float = 600.0
    startup_timeout: float = 60.0

    def __init__(self, max_handlers: int = 64,
                 max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
                 request_timeout: float = 60.0, page_size: int = 100,
                 request_state_ttl: float = 600.0, startup_timeout: float = 60.0) -> None:
        _set(self, "max_handlers", max_handlers)
        _set(self, "max_subscriptions", max_subscriptions)
        _set(self, "request_timeout", request_timeout)
        _set(self, "page_size", page_size)
        _set(self, "request_state_ttl", request_state_ttl)
        _set(self, "startup_timeout", startup_timeout)


@_compared_by_fields
@dataclass(frozen=True, init=False, repr=False, eq=False)
class ProtocolOptions:
    """What a server speaks and tells its clients (docs/protocol-versions.md).

    ``legacy_versions``: the handshake-era revisions ``initialize`` may agree to, newest
    first (``()``: 2026-07-28 only). ``modern_versions``: the stateless revisions served
    beside them (``()``: handshake only); not both empty. ``declare``: capabilities
    (``"resources"``, ``"prompts"``, ``"completions"``) declared before anything of the
    kind is registered. ``cache_ttl_ms`` and ``cache_scope``: the caching hints put on
    cacheable 2026-07-28 results (``ttlMs``; ``cacheScope``, ``"public"`` or
    ``"private"``). ``expose_tool_errors``: answer a tool's (or a resource's, a
    prompt's) unexpected exception with its text, for development only; by default the
    client reads a generic message and only the server's log has the exception
    (docs/server.md, "Errors").
    """

    legacy_versions: tuple[str, ...] = LEGACY_VERSIONS
    modern_versions: tuple[str, ...] = MODERN_VERSIONS
    declare: tuple[str, ...] = ()
    cache_ttl_ms: int = 0
    cache_scope: str = "public"
    expose_tool_errors: bool = False

    def __init__(self, legacy_versions: tuple[str, ...] = LEGACY_VERSIONS,
                 modern_versions: tuple[str, ...] = MODERN_VERSIONS,
                 declare: tuple[str, ...] = (), cache_ttl_ms: int = 0,
                 cache_scope: str = "public", expose_tool_errors: bool = False) -> None:
        _set(self, "legacy_versions", legacy_versions)
        _set(self, "modern_versions", modern_versions)
        _set(self, "declare", declare)
        _set(self, "cache_ttl_ms", cache_ttl_ms)
        _set(self, "cache_scope", cache_scope)
        _set(self, "expose_tool_errors", expose_tool_errors)


@_compared_by_fields
@dataclass(frozen=True, init=False, repr=False, eq=False)
class ServerDetails:
    """The display fields of ``serverInfo`` beside its name, version and title, sent to
    sessions at 2025-11-25 or later: a ``description``, the ``website_url`` and ``icons``.
    For people choosing or recognising a server; never used for trust."""

    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None

    def __init__(self, description: str | None = None, website_url: str | None = None,
                 icons: list[Icon] | None = None) -> None:
        _set(self, "description", description)
        _set(self, "website_url", website_url)
        _set(self, "icons", icons)

