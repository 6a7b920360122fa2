"""``MCP(app, server, path="/mcp")``: the MCP endpoint as a route of a Flask app.

The route hands the request to mcpsync's WSGI app (:class:`~mcpsync.http.McpWsgiApp`,
one per extension) on the thread Flask serves it on, through
:class:`mcpsync.http.embedded.EmbeddedEndpoint` (the hand-over the Django adapter shares),
so Flask's ``before_request`` hooks, its session and Flask-Login run first; the user found
there (Flask-Login's ``current_user``, or ``load_user()`` of your own) becomes ``ctx.user``
through a receive middleware. The answer is Flask's response: JSON as it is, an SSE
stream streamed (a generator body). What stays here is Flask's own: finding the user,
the body a hook may have read already, the Flask-SQLAlchemy session, the app context.

Handlers that run on mcpsync's handler threads run inside an application context of the
app (a request scope pushes one): ``current_app``, ``g`` (fresh for each handler) and
extensions work as in a view, and whatever the app tears down with the context is torn
down after each handler: Flask-SQLAlchemy removes its scoped session there, returning
the connection to the pool. A handler run on the request's own thread (a tool without a
context, ``tools/list``) already has the request's contexts.

An anonymous request is refused (403, a JSON-RPC error body) unless
``allow_anonymous=True``; with ``auth=`` (bearer tokens, a ResourceServer) a request
without a token gets mcpsync's 401 challenge instead, and ``token_user(access_token)``
says which user a token stands for. A Flask-WTF ``CSRFProtect`` on the app exempts the
route (MCP POSTs are JSON, never simple cross-site requests; the ``Origin`` check of
mcpsync's app applies).
"""

from __future__ import annotations

import contextlib
import io
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..http.embedded import EmbeddedEndpoint, Refused
from ..http.wsgi import McpWsgiApp
from .users import user_key

if TYPE_CHECKING:
    from flask import Flask

    from ..dispatch.context import HandlerContext
    from ..server.server import ServerCore


def _refusal(refused: Refused) -> Any:
    from flask import Response

    return Response(refused.body, status=refused.status, mimetype="application/json")


class MCP:
    """The Flask extension: ``MCP(app, server)`` or ``mcp = MCP(server=server)`` then
    ``mcp.init_app(app)``. ``path``: the route. ``load_user()``: the request's user
    (default: Flask-Login's ``current_user`` when the app has a login manager).
    ``user_by_id(id)``: a user by its id, for ``flask mcp stdio --user ID`` (default:
    Flask-Login's ``user_loader``). ``allow_anonymous``, ``token_user``: see the module.
    Other keywords go to :class:`~mcpsync.http.McpWsgiApp`."""

    def __init__(self, app: Flask | None = None, server: ServerCore | None = None, *,
                 path: str = "/mcp", load_user: Callable[[], Any] | None = None,
                 user_by_id: Callable[[str], Any] | None = None,
                 allow_anonymous: bool = False,
                 token_user: Callable[[Any], Any] | None = None, **options: Any) -> None:
        self.server = server
        self.path = path
        self.load_user = load_user
        self.user_by_id = user_by_id
        self.allow_anonymous = allow_anonymous
        self.token_user = token_user
        self.options = options
        #: The hand-over to mcpsync's app (made by :meth:`init_app`).
        self.embedded: EmbeddedEndpoint | None = None
        self.flask_app: Flask | None = None
        if app is not None:
            self.init_app(app)

    @property
    def wsgi_app(self) -> McpWsgiApp | None:
        """mcpsync's WSGI app serving the route (made by :meth:`init_app`)."""
        return self.embedded.app if self.embedded is not None else None

    def init_app(self, app: Flask, server: ServerCore | None = None) -> None:
        """Add the route, the ``flask mcp`` commands and the handler scope to ``app``."""
        if server is not None:
            self.server = server
        if self.server is None:
            raise TypeError("MCP needs the server to serve: MCP(app, server)")
        self.flask_app = app
        self.embedded = EmbeddedEndpoint(
            McpWsgiApp(self.server, **{**self.options, "path": None}), user_key=user_key,
            allow_anonymous=self.allow_anonymous, token_user=self.token_user)
        app.extensions["mcpsync"] = self
        view = self._view
        app.add_url_rule(self.path, endpoint="mcpsync", view_func=view,
                         methods=["GET", "POST", "DELETE"])
        csrf = app.extensions.get("csrf")
        if csrf is not None and hasattr(csrf, "exempt"):
            csrf.exempt(view)
        _install(self.server, app)
        from .cli import mcp_group

        if "mcp" not in app.cli.commands:
            app.cli.add_command(mcp_group)

    def close(self) -> None:
        """Stop the handler threads and end the sessions (and run the server's shutdown)."""
        if self.embedded is not None:
            self.embedded.app.close()

    def _user(self) -> Any:
        if self.load_user is not None:
            return self.load_user()
        from flask import current_app

        if getattr(current_app, "login_manager", None) is None:
            return None
        from flask_login import current_user

        return current_user._get_current_object()

    def _view(self) -> Any:
        from flask import Response, request

        assert self.embedded is not None
        user = self.embedded.admit(self._user(), request.headers.get("Authorization"))
        if isinstance(user, Refused):
            return _refusal(user)
        _release_session()
        # The body as the client sent it, read (and bounded) by mcpsync; or, when a hook
        # of the app read it first (request.get_json() in a before_request), what it read.
        cached = getattr(request, "_cached_data", None)
        answer = self.embedded.call(
            request.environ, request=request._get_current_object(),  # type: ignore[attr-defined]
            user=user, body=io.BytesIO(cached) if cached is not None else request.stream,
            script_name=request.script_root + request.path)
        if answer.stream is not None:
            return Response(answer.stream, status=answer.status, headers=answer.headers,
                            direct_passthrough=True)
        return Response(answer.data, status=answer.status, headers=answer.headers)


def _release_session() -> None:
    """End the request's Flask-SQLAlchemy session (if the app has one) before the MCP
    request is served: finding the user (Flask-Login's loaders) may have opened a
    transaction, and this thread now waits for a handler on another thread that takes a
    connection of its own; holding both, enough concurrent requests exhaust the pool and
    wait on each other until its timeout. The user object is detached from the session,
    which is also right for a handler thread, which must not use another thread's
    session (load what it needs by the user's id)."""
    from flask import current_app

    extension = current_app.extensions.get("sqlalchemy")
    session = getattr(extension, "session", None)
    if session is not None:
        session.close()


_installed: weakref.WeakSet[ServerCore] = weakref.WeakSet()
_installed_lock = threading.Lock()


def _install(server: ServerCore, app: Flask) -> None:
    """The app-context scope, once per server (``bind_user``, the receive middleware
    that makes the route's user ``ctx.user``, is put there by the embedded endpoint)."""
    with _installed_lock:
        if server in _installed:
            return
        _installed.add(server)
    app_ref = weakref.ref(app)

    @contextlib.contextmanager
    def app_context(ctx: HandlerContext) -> Iterator[None]:
        from flask import has_app_context

        flask_app = app_ref()
        if flask_app is None or has_app_context():
            yield
            return
        with flask_app.app_context():
            yield

    server.request_scope(app_context)


__all__ = ["MCP"]
