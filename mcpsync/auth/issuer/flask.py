"""The authorization server in a Flask site: ``init_app(app, server)``.

The user is Flask-Login's ``current_user`` (:func:`flask_login_user`), the login page is
the login manager's ``login_view`` with ``?next=`` (:func:`flask_login_url`), and the
consent page is the Jinja2 template ``mcpsync/consent.html`` (:func:`render_consent`): a
template of that name in the site's own ``templates/`` folder overrides the built-in
one (Flask looks in the app's folder before the blueprint's). ``init_app`` routes the
server's endpoints and the users' page (``grants_path``, default ``/oauth/grants``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from flask import Blueprint, Flask, Response, redirect, render_template, request

from .consent import ConsentView
from .grants_page import HEADERS, render_grants, revoke_for_user
from .server import MAX_BODY_BYTES, AuthorizationServer, IssuerRequest, IssuerResponse, IssuerUser

__all__ = ["flask_login_url", "flask_login_user", "init_app", "issuer_request",
           "render_consent"]


def flask_login_user(issuer_request: IssuerRequest) -> IssuerUser | None:
    """Flask-Login's signed-in user: ``get_id()`` is the subject, ``name`` (or
    ``username``) the name shown."""
    from flask_login import current_user

    if not current_user or not current_user.is_authenticated:
        return None
    name = getattr(current_user, "name", None) or getattr(current_user, "username", None)
    return IssuerUser(subject=str(current_user.get_id()), name=name)


def flask_login_url(issuer_request: IssuerRequest, next_url: str) -> str:
    """The login manager's ``login_view``, with ``next`` set to the path to come back
    to (a relative path: the login view's own open-redirect check must allow it)."""
    from flask import current_app, url_for

    view = current_app.login_manager.login_view  # type: ignore[attr-defined]
    parts = urlsplit(next_url)
    back = parts.path + (f"?{parts.query}" if parts.query else "")
    return str(url_for(view, next=back))


def render_consent(issuer_request: IssuerRequest, view: ConsentView) -> str:
    return render_template("mcpsync/consent.html", view=view)


def issuer_request(issuer: str) -> IssuerRequest:
    """Flask's current request as an :class:`IssuerRequest` (URL on the issuer's
    origin: behind a proxy Flask sees another)."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(issuer))
    query = request.query_string.decode("latin-1")
    url = origin + request.path + (f"?{query}" if query else "")
    body = request.get_json(silent=True) if request.is_json else None
    return IssuerRequest(request.method, url, dict(request.headers),
                         query=request.args.to_dict(flat=False),
                         form=request.form.to_dict(flat=False), json=body, native=request)


def _flask(response: IssuerResponse) -> Response:
    return Response(response.body, status=response.status, headers=response.headers)


def init_app(app: Flask, server: AuthorizationServer, *,
             grants_path: str | None = "/oauth/grants") -> None:
    """Route ``server``'s endpoints (and the users' grants page) in ``app``."""
    import os

    templates = os.path.join(os.path.dirname(__file__), "templates")
    blueprint = Blueprint("mcpsync_issuer", __name__, template_folder=templates)
    base = urlsplit(server.issuer).path

    def endpoint() -> Response:
        if (request.content_length or 0) > MAX_BODY_BYTES:
            return Response('{"error": "invalid_request"}', status=413,
                            content_type="application/json")
        answered = server.handle(issuer_request(server.issuer))
        if answered is None:
            return Response(status=404)
        return _flask(answered)

    for path in (server.metadata_path, *(f"{base}/{name}" for name in
                                         ("authorize", "token", "revoke", "register",
                                          "jwks.json"))):
        blueprint.add_url_rule(path, endpoint="ep" + path.replace("/", "_").replace(".", "_"),
                               view_func=endpoint, methods=["GET", "POST"])

    if grants_path is not None:
        def grants() -> Any:
            user = server.current_user(issuer_request(server.issuer))
            if user is None:
                return redirect(server.login_url(issuer_request(server.issuer),
                                                 request.url))
            if request.method == "POST":
                revoked = revoke_for_user(server, user, request.form.get("grant_id", ""),
                                          request.form.get("csrf_token", ""))
                if not revoked:
                    return Response("refused", status=403, headers=list(HEADERS))
                return redirect(request.path, code=303)
            page = render_grants(server, user, request.path)
            return Response(page, headers=[("Content-Type", "text/html; charset=utf-8"),
                                           *HEADERS])

        blueprint.add_url_rule(grants_path, endpoint="grants", view_func=grants,
                               methods=["GET", "POST"])
    app.register_blueprint(blueprint)
