"""What ``mcpsync.django`` puts on a server it serves: the receive middleware that makes
the Django user ``ctx.user`` (:func:`~mcpsync.http.embedded.bind_user`) and the request
scope that handles database connections on handler threads
(:func:`~mcpsync.django.orm.database_scope`). Once per server, whichever way it is served
first (the endpoint view, ``manage.py mcp stdio``)."""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from ..http.embedded import install_bind_user
from .orm import database_scope

if TYPE_CHECKING:
    from ..server.server import ServerCore

_installed: weakref.WeakSet[ServerCore] = weakref.WeakSet()
_lock = threading.Lock()


def install(server: ServerCore) -> None:
    """Put ``bind_user`` and the database scope on ``server`` (once per server)."""
    install_bind_user(server)
    with _lock:
        if server in _installed:
            return
        _installed.add(server)
    server.request_scope(database_scope)


__all__ = ["install"]
