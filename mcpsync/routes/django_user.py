"""``forward_identity="django"``: the MCP caller's Django user becomes ``request.user`` of
the in-process call, so a Django or DRF application's own permissions decide.

Under the Django integration (``mcpsync.django``) the MCP endpoint already knows who calls:
``ctx.user`` is the ``request.user`` of the MCP request. A generated tool's call goes into
the same project in process, as a new WSGI request; that request must see the same user,
and nothing a remote client sends may make it see another.

So the user object travels in the WSGI environ under :data:`ENVIRON_KEY`, a key no HTTP
request can produce (a WSGI server puts a client's headers under ``HTTP_*`` keys, and
``CONTENT_TYPE``/``CONTENT_LENGTH``; a key with a dot is never one of them), and only as a
user object, never a name: a string found there is ignored. Two small adapters read it on
the app's side, named in the project's settings:

* :class:`InProcessUserMiddleware` (Django's ``MIDDLEWARE``, after
  ``AuthenticationMiddleware``) sets ``request.user`` for plain Django views;
* :class:`InProcessUserAuthentication` (DRF's ``DEFAULT_AUTHENTICATION_CLASSES``, first)
  authenticates DRF views as that user. DRF needs its own class because its
  ``SessionAuthentication`` would take ``request.user`` but also demand a CSRF token.

An in-process call carries no browser's ambient credentials, so CSRF (a defence against a
browser sending cookies on another site's behalf) does not apply to it: the middleware
marks such a request exempt, as Django's test client does. A call whose ``ctx.user`` is
anonymous (or absent) goes in with no user: the app treats it as anonymous.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext

__all__ = ["ENVIRON_KEY", "InProcessUserAuthentication", "InProcessUserMiddleware",
           "forward_django_user", "forwarded_user"]

#: Where the caller's user object rides in the in-process call's environ.
ENVIRON_KEY = "mcpsync.routes.django_user"


def forward_django_user(ctx: HandlerContext | None, environ: dict[str, Any]) -> None:
    """The identity hook of ``forward_identity="django"``: ``ctx.user`` into the environ,
    when it is a signed-in user."""
    user = getattr(ctx, "user", None)
    if user is not None and getattr(user, "is_authenticated", False) is True:
        environ[ENVIRON_KEY] = user


def forwarded_user(meta: Any) -> Any:
    """The user an in-process call carries in ``meta`` (a request's ``META``, which is its
    WSGI environ), or ``None``: only a Django user object counts, never a name."""
    from django.contrib.auth.base_user import AbstractBaseUser

    user = meta.get(ENVIRON_KEY) if hasattr(meta, "get") else None
    return user if isinstance(user, AbstractBaseUser) and user.is_authenticated else None


class InProcessUserMiddleware:
    """Django middleware: ``request.user`` is the MCP caller's user on an in-process call
    made with ``forward_identity="django"``; other requests pass untouched."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        user = forwarded_user(request.META)
        if user is not None:
            request.user = user
            request._dont_enforce_csrf_checks = True  # no browser, no ambient credentials
        return self.get_response(request)


class InProcessUserAuthentication:
    """A DRF authentication class: the MCP caller's user on an in-process call made with
    ``forward_identity="django"``; ``None`` (the next class decides) on any other request."""

    def authenticate(self, request: Any) -> tuple[Any, None] | None:
        user = forwarded_user(request.META)
        return None if user is None else (user, None)

    def authenticate_header(self, request: Any) -> str | None:
        return None
