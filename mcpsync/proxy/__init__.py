"""Proxies: a :class:`~mcpsync.Server` whose tools, resources and prompts are another
server's, reached through mcpsync's own :class:`~mcpsync.Client`.

Made with :meth:`Server.proxy <mcpsync.Server.proxy>`. The pieces: the connection to the
remote (``link.py``), the forwarding method handlers (``forward.py``), the requests in
flight with the questions the remote asks during them (``calls.py``), and the resource
subscriptions held on the remote for the proxy's subscribers (``subscriptions.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from ..client.tracking import CallTracker
from .call_table import CallTable
from .forward import FORWARDED, install
from .host import ProxyHost, UsedExtensions
from .link import ProxyTarget, RemoteLink
from .subscriptions import Upstream

H = TypeVar("H", bound=ProxyHost)

__all__ = ["FORWARDED", "ProxyHost", "ProxyTarget", "build_proxy"]


def build_proxy(server: H, target: ProxyTarget, *, extensions: UsedExtensions,
                client_options: Mapping[str, Any]) -> H:
    """Make ``server`` (new, made by :meth:`Server.proxy <mcpsync.Server.proxy>`, see
    there) the proxy of ``target``; ``extensions``: the ones ``server`` uses (those in use
    when it connects are declared to the remote). Returns it."""
    calls = CallTable()
    tracker = CallTracker()
    link = RemoteLink(server, target, calls, tracker, client_options, extensions)
    install(server, link, calls, tracker)
    upstream = Upstream(server, link)
    server.subscribers.watchers.append(upstream.changed)
    link.connected_hooks.append(upstream.reconnected)
    server.on_startup(link.start)
    server.on_shutdown(link.close)
    server.on_shutdown(upstream.close)  # runs first: the remote hears the unsubscribes
    return server
