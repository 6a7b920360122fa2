"""A Flask site that is its own OAuth authorization server, with a protected MCP endpoint.

    python examples/oauth_site.py --port 8000
    # then point an MCP client at http://127.0.0.1:8000/mcp, e.g.
    mcpsync tools http://127.0.0.1:8000/mcp --auth oauth --protocol-version 2026-07-28

Users ``alice`` and ``bob`` (password ``secret``) sign in with the site's own login form.
An MCP client that connects to ``/mcp`` is told (401, then the Protected Resource
Metadata) to get a token from this site: it registers (a client ID metadata document,
or dynamic registration), sends the user's browser to ``/authorize``, where the user
signs in and approves it on the consent page, and exchanges the code for tokens bound to
``/mcp``. The ``whoami`` tool then names the signed-in user. ``/oauth/grants`` lists the
applications a user has let in, each with a "Revoke" button.

Behind a proxy or on a public host, give the URL clients use: ``--base-url
https://mcp.example.com``. Several worker processes (gunicorn) share the state through
``--store PATH`` (an SQLite file) and must share ``OAUTH_SITE_SECRET``::

    OAUTH_SITE_BASE_URL=https://mcp.example.com OAUTH_SITE_STORE=/var/lib/site/oauth.db \\
    OAUTH_SITE_SECRET=... gunicorn -k gthread -w 2 --threads 8 --chdir examples \\
        'oauth_site:create_app_from_env()'

``--allow-loopback-clients`` lets client metadata documents live on this machine (tests,
local development): never in production, where it would let anyone make the site fetch
its own internal addresses.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from dataclasses import dataclass

from flask import Flask, redirect, render_template_string, request
from flask_login import LoginManager, UserMixin, login_user, logout_user
from werkzeug.security import check_password_hash, generate_password_hash

from mcpsync import HandlerContext, Server
from mcpsync.auth.issuer import AuthorizationServer, DocumentPolicy, SqlIssuerStore
from mcpsync.auth.issuer.flask import (
    flask_login_url,
    flask_login_user,
    init_app,
    render_consent,
)
from mcpsync.http import mount


@dataclass
class User(UserMixin):  # type: ignore[misc]
    id: str
    name: str
    password_hash: str


USERS = {name: User(name, name.title(), generate_password_hash("secret"))
         for name in ("alice", "bob")}

LOGIN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Sign in</title></head><body style="font-family: sans-serif">
<h1>Sign in</h1>{% if error %}<p role="alert">{{ error }}</p>{% endif %}
<form method="post"><input type="hidden" name="next" value="{{ next }}">
<label>User <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button type="submit">Sign in</button></form></body></html>"""

mcp = Server("oauth-site", version="1.0.0",
             instructions="A site whose users sign in with the site's own accounts.")


@mcp.tool()
def whoami(ctx: HandlerContext) -> str:
    """Who the signed-in user is, as the access token says."""
    assert ctx.auth is not None  # the endpoint refuses requests without a token
    name = ctx.auth.claims.get("name") or ctx.auth.subject
    return f"You are {name} (user {ctx.auth.subject}), through client {ctx.auth.client_id}."


def _safe_next(target: str | None) -> str:
    """Only a path on this site: never ``//host`` or an absolute URL (open redirect)."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


def create_app(base_url: str, *, store_path: str = ":memory:", secret: str | None = None,
               allow_loopback_clients: bool = False) -> Flask:
    """The site at ``base_url`` (the URL its users and clients use)."""
    base_url = base_url.rstrip("/")
    app = Flask(__name__)
    app.config.update(SECRET_KEY=secret or secrets.token_hex(32),
                      SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_HTTPONLY=True,
                      SESSION_COOKIE_SECURE=base_url.startswith("https://"))
    logins = LoginManager(app)
    logins.login_view = "login"
    logins.user_loader(USERS.get)

    @app.route("/login", methods=["GET", "POST"])
    def login() -> object:
        next_url = _safe_next(request.values.get("next"))
        if request.method == "POST":
            user = USERS.get(request.form.get("username", ""))
            if user and check_password_hash(user.password_hash,
                                            request.form.get("password", "")):
                login_user(user)
                return redirect(next_url, code=303)
            return render_template_string(LOGIN_PAGE, error="Wrong user or password.",
                                          next=next_url), 401
        return render_template_string(LOGIN_PAGE, error=None, next=next_url)

    @app.post("/logout")
    def logout() -> object:
        logout_user()
        return redirect("/", code=303)

    @app.get("/")
    def index() -> str:
        return "This site's MCP endpoint is /mcp; your connected applications: /oauth/grants\n"

    documents = DocumentPolicy(allow_private_addresses=allow_loopback_clients,
                               allow_http=allow_loopback_clients)
    issuer = AuthorizationServer(
        base_url, resources=[base_url + "/mcp"], store=SqlIssuerStore(store_path),
        secret_key=app.config["SECRET_KEY"], scopes_supported=["mcp"],
        current_user=flask_login_user, login_url=flask_login_url,
        render_consent=render_consent, metadata_documents=documents)
    init_app(app, issuer)
    app.extensions["mcpsync_issuer"] = issuer
    # /mcp answers only tokens this site issued for /mcp; its Protected Resource Metadata
    # (/.well-known/oauth-protected-resource/mcp) names this site as the issuer.
    app.wsgi_app = mount(app.wsgi_app, mcp, "/mcp",  # type: ignore[method-assign]
                         auth=issuer.resource_server(scopes_supported=["mcp"]))
    return app


def create_app_from_env() -> Flask:
    """For gunicorn: the settings from ``OAUTH_SITE_*`` environment variables."""
    return create_app(os.environ["OAUTH_SITE_BASE_URL"],
                      store_path=os.environ.get("OAUTH_SITE_STORE", ":memory:"),
                      secret=os.environ.get("OAUTH_SITE_SECRET"),
                      allow_loopback_clients=os.environ.get(
                          "OAUTH_SITE_ALLOW_LOOPBACK_CLIENTS") == "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--base-url", help="the URL clients use (default: http://HOST:PORT)")
    parser.add_argument("--store", default=":memory:", help="SQLite file for the OAuth state")
    parser.add_argument("--allow-loopback-clients", action="store_true",
                        help="accept client metadata documents on loopback (tests only)")
    args = parser.parse_args(argv)
    base_url = args.base_url or f"http://{args.host}:{args.port}"
    app = create_app(base_url, store_path=args.store,
                     secret=os.environ.get("OAUTH_SITE_SECRET"),
                     allow_loopback_clients=args.allow_loopback_clients)
    print(f"serving on {base_url}/ (MCP at /mcp; users alice and bob, password 'secret')",
          file=sys.stderr)
    app.run(host=args.host, port=args.port, threaded=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
