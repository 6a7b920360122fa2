"""Who a task or a ``subscriptions/listen`` stream belongs to: :func:`owner_of`.

The key is shared by two parts that must agree on it: the tasks extension binds every task
to its creator's key (another owner's task id is answered like an unknown one), and a
listen stream hears the statuses of its principal's tasks only. It lives in the server
(below the extension) so that the listen handler needs no import of the tasks extension.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

from ..dispatch.context import HandlerContext
from ..dispatch.ports import SessionHandle
from ..dispatch.principal import principal_key as shared_principal_key
from ..protocol.versions import features

_CONNECTION_OWNERS: weakref.WeakKeyDictionary[SessionHandle, str] = weakref.WeakKeyDictionary()
_OWNERS_LOCK = threading.Lock()


def owner_of(ctx: HandlerContext) -> str:
    """Who a task belongs to: in the handshake era its session (the HTTP session id, or
    this stdio/memory connection); in 2026-07-28 the authenticated principal (a hash of
    its identity), or ``""`` for an anonymous caller."""
    version = ctx.session.protocol_version
    if version is not None and features(version).era == "modern":
        return principal_key(ctx.auth)
    if ctx.session.session_id:
        return "session:" + ctx.session.session_id
    handle = ctx._session
    with _OWNERS_LOCK:
        owner = _CONNECTION_OWNERS.get(handle)
        if owner is None:
            import secrets  # on the first handshake-era task: off a server's start-up

            owner = "connection:" + secrets.token_hex(16)
            _CONNECTION_OWNERS[handle] = owner
    return owner


def principal_key(auth: Any) -> str:
    """A task owner's key for an authenticated principal (``""`` for none): the one key
    of :func:`mcpsync.dispatch.principal.principal_key` (issuer, subject and client of an
    access token), so the same subject from another issuer or client is another owner."""
    key = shared_principal_key(auth)
    return "principal:" + key if key else ""


__all__ = ["owner_of", "principal_key"]
