"""What a guard knows of the request it wraps, read once from the handler's context.

Every guard of :mod:`mcpsync.middleware` runs inside ``Dispatcher.run_handler``: the one path
every request takes, on stdio, memory and HTTP, in 2026-07-28 and in the handshake era,
on a mounted server and on a proxy. So what it reads is the same everywhere: the method,
the item the request names (a tool or prompt name, a resource URI), who asked (the
principal an auth layer set, else the framework's user) and from where (the client's
address on HTTP, behind trusted proxies; the transport's kind elsewhere).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..dispatch.context import HandlerContext
from ..dispatch.principal import principal_key

#: The methods whose params name one item, and the key that names it.
_TARGETS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
            "resources/subscribe": "uri", "resources/unsubscribe": "uri"}

#: What a guard's ``key=`` may be: one of the names below, a tuple of them (the key is
#: their combination), or ``fn(ctx, params) -> str``.
KeySpec = str | Sequence[str] | Callable[[HandlerContext, dict[str, Any]], str]
KEY_NAMES = ("principal", "ip", "tool", "method")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def target(method: str, params: dict[str, Any]) -> str | None:
    """The tool or prompt name, or the resource URI, ``params`` names (``None``: none)."""
    field = _TARGETS.get(method)
    value = params.get(field) if field is not None else None
    return value if isinstance(value, str) else None


def principal(ctx: HandlerContext) -> str:
    """An opaque key for who asked: the authenticated principal (``ctx.auth``), else the
    framework's user (``ctx.user``); ``""`` for nobody."""
    key = principal_key(ctx.auth)
    if not key and ctx.user is not None and getattr(ctx.user, "is_authenticated", True):
        key = principal_key(ctx.user)
    return key


def networks(trusted: Iterable[str]) -> tuple[Network, ...]:
    """``trusted_proxies=`` as networks: addresses or CIDR blocks."""
    return tuple(ipaddress.ip_network(item, strict=False) for item in trusted)


def _trusted(address: str, proxies: tuple[Network, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(ctx: HandlerContext, proxies: tuple[Network, ...] = ()) -> str:
    """The client's address. On HTTP: ``REMOTE_ADDR``, or, when that is one of the
    trusted ``proxies``, the right-most ``X-Forwarded-For`` entry that is not (the header
    is believed only as far as the chain of proxies we trust: a client can write any
    left-hand entries it likes). Off HTTP: the transport's kind (one stdio client per
    process, the in-process caller)."""
    transport = ctx.transport
    if transport is None:
        return "local"
    address = transport.remote_addr
    if address is None:
        return transport.kind
    if proxies and _trusted(address, proxies):
        forwarded = transport.headers.get("x-forwarded-for", "")
        for hop in reversed([part.strip() for part in forwarded.split(",") if part.strip()]):
            address = hop
            if not _trusted(hop, proxies):
                break
    return address


def key_function(spec: KeySpec, proxies: tuple[Network, ...] = ()) -> Callable[
        [HandlerContext, dict[str, Any]], str]:
    """``key=`` as a function of the request. ``"principal"`` falls back to the client's
    address for a request nobody authenticated (so anonymous callers do not share one
    bucket)."""
    if callable(spec):
        return spec
    names = (spec,) if isinstance(spec, str) else tuple(spec)
    unknown = [name for name in names if name not in KEY_NAMES]
    if unknown or not names:
        raise ValueError(f"key={spec!r}: expected one of {', '.join(KEY_NAMES)}, a tuple "
                         f"of them, or a function (ctx, params) -> str")

    def part(name: str, ctx: HandlerContext, params: dict[str, Any]) -> str:
        if name == "principal":
            who = principal(ctx)
            return f"p={who}" if who else f"ip={client_address(ctx, proxies)}"
        if name == "ip":
            return f"ip={client_address(ctx, proxies)}"
        if name == "tool":
            return f"t={ctx.method}:{target(ctx.method, params) or ''}"
        return f"m={ctx.method}"

    if len(names) == 1:
        only = names[0]
        return lambda ctx, params: part(only, ctx, params)
    return lambda ctx, params: "|".join(part(name, ctx, params) for name in names)


class Selection:
    """Which requests a guard applies to: ``methods`` (``None``: all) and, for the methods
    that name an item, ``tools`` (names or URIs; ``None``: all)."""

    __slots__ = ("methods", "tools")

    def __init__(self, methods: Iterable[str] | None, tools: Iterable[str] | None) -> None:
        self.methods = None if methods is None else frozenset(methods)
        self.tools = None if tools is None else frozenset(tools)

    def __contains__(self, request: tuple[str, dict[str, Any]]) -> bool:
        method, params = request
        if self.methods is not None and method not in self.methods:
            return False
        if self.tools is None:
            return True
        return target(method, params) in self.tools


__all__ = ["KEY_NAMES", "KeySpec", "Selection", "client_address", "key_function",
           "networks", "principal", "target"]
