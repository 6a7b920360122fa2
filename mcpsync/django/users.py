"""Who is calling: the Django user of the request an MCP message came in, as ``ctx.user``.

The endpoint view (:mod:`mcpsync.django.endpoint`) hands the request to mcpsync's app
through :mod:`mcpsync.http.embedded`, whose receive middleware
(:func:`~mcpsync.http.embedded.bind_user`) copies the view's user into the message's
transport context on the request's thread, before any handler. The transport context
travels with the request to its handler thread, so ``ctx.user`` is the Django user
wherever the handler runs, and visibility's ``permission="app.codename"`` is checked
against it. The Django request itself is kept for handlers that need it
(:func:`current_request`: a header, the session, ``request.auth`` set by DRF) while the
view's response lasts.

What is Django's own here: :func:`user_key`, what identifies a Django user across
requests (the owner of a handshake-era session).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..http.embedded import acting_as, current_request, in_call, is_authenticated

#: Whether this thread is running the endpoint view right now (so Django itself manages
#: this thread's database connections, as for any request).
in_view = in_call


def user_key(user: Any) -> Hashable:
    """What identifies a user across requests (its primary key; ``None``: anonymous)."""
    if not is_authenticated(user):
        return None
    return (type(user).__name__, getattr(user, "pk", None) or str(user))


__all__ = ["acting_as", "current_request", "in_view", "user_key"]
