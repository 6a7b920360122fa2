"""Who an extension's item or a ``subscriptions/listen`` stream belongs to: :func:`owner_of`.

The key is shared by parts that must agree on it: an extension binds each item it makes
to its creator's key (another owner's id is answered like an unknown one), and a listen
stream hears the statuses of its principal's items only (``Server._publish_status``). It
lives in the server (below the extensions) so that the listen handler imports none.
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
    """Who an item made for this request belongs to: in the handshake era its session
    (the HTTP session id, or this stdio/memory connection); in 2026-07-28 the
    authenticated principal (a hash of its identity), or ``""`` for an anonymous caller."""
    version = ctx.session.protocol_version
    if version is not None and features(version).era == "modern":
        return principal_key(ctx.auth)
    if ctx.session.session_id:
        return "session:" + ctx.session.session_id
    handle = ctx._session
    with _OWNERS_LOCK:
        owner = _CONNECTION_OWNERS.get(handle)
        if owner is None:
            import secrets  # on the first handshake-era item: off a server's start-up

            owner = "connection:" + secrets.token_hex(16)
            _CONNECTION_OWNERS[handle] = owner
    return owner


def principal_key(auth: Any) -> str:
    """An item owner's key for an authenticated principal (``""`` for none): the one key
    of :func:`mcpsync.dispatch.principal.principal_key` (issuer, subject and client of an
    access token), so the same subject from another issuer or client is another owner."""
    key = shared_principal_key(auth)
    return "principal:" + key if key else ""


__all__ = ["owner_of", "principal_key"]
