"""Who is calling through the Flask route: the user the route found, as ``ctx.user`` (the
shared receive middleware of :mod:`mcpsync.http.embedded`, run on the request's thread
before any handler), and the Flask request kept for handlers that need it while its
response lasts (:func:`current_request`).

What is Flask's own here: :func:`user_key`, what identifies a Flask-Login user across
requests (the owner of a handshake-era session)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..http.embedded import acting_as, current_request, is_authenticated


def user_key(user: Any) -> Hashable:
    """What identifies a user across requests (its id; ``None``: anonymous)."""
    if not is_authenticated(user):
        return None
    get_id = getattr(user, "get_id", None)  # Flask-Login's
    return (type(user).__name__, get_id() if callable(get_id) else
            getattr(user, "id", None) or str(user))


__all__ = ["acting_as", "current_request", "user_key"]
