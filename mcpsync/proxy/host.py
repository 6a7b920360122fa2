"""What a proxy needs of the server it fills: :class:`ProxyHost`.

A protocol, not ``mcpsync.Server``: ``Server.proxy`` builds proxies, so this package must
not import the server module back (not even for types: that would close an import
circle through the client, which imports neither).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ..dispatch.context import HandlerContext
from ..dispatch.registry import MethodRegistry
from ..server.options import ProtocolOptions
from ..server.subscribers import ResourceSubscribers

#: A request handler as a server registers it.
Handler = Callable[[HandlerContext, dict[str, Any]], dict[str, Any]]


class UsedExtensions(Protocol):
    """The extensions the server uses (``server/extensions.py`` ``Extensions``, handed to
    ``build_proxy``): the proxy declares the client side of those it knows to its
    remote."""

    @property
    def identifiers(self) -> frozenset[str]: ...


class ProxyHost(Protocol):
    """The server a proxy forwards for (a ``mcpsync.Server``)."""

    methods: MethodRegistry[Any, Any]
    protocol: ProtocolOptions
    instructions: str | None
    subscribers: ResourceSubscribers

    def notify_list_changed(self, kind: str) -> None: ...

    def notify_resource_updated(self, uri: str) -> None: ...

    def on_startup(self, fn: Callable[[], Any]) -> Callable[[], Any]: ...

    def on_shutdown(self, fn: Callable[[], Any]) -> Callable[[], Any]: ...
