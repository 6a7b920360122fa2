"""``MCP(server=...)`` then ``init_app(app)``, a ``load_user`` of the app's own (no
Flask-Login), ``allow_anonymous``, and ``g`` set by a ``before_request`` hook seen by
the loader: a Flask app in this process on werkzeug's threaded server."""

from __future__ import annotations

import pytest
from flask import Flask, g, request

from mcpsync import Client, HandlerContext, Server
from mcpsync.errors import InvalidRequestError
from mcpsync.flask import MCP
from tests.helpers import WAIT
from tests.serving import RunningServer


class Member:
    def __init__(self, name: str) -> None:
        self.name = name
        self.is_authenticated = True

    def has_perm(self, codename: str) -> bool:
        return self.name == "root"


def build(allow_anonymous: bool) -> tuple[Flask, MCP]:
    server = Server("plain")

    @server.tool()
    def whoami(ctx: HandlerContext) -> str:
        return "nobody" if ctx.user is None else ctx.user.name

    @server.tool(permission="plain.admin")
    def admin() -> str:
        return "ok"

    app = Flask(__name__)

    @app.before_request
    def find_member() -> None:
        name = request.headers.get("X-Member")
        g.member = Member(name) if name else None
        if request.headers.get("X-Peek"):
            g.peeked = request.get_json(silent=True)  # a hook that reads the body first

    extension = MCP(server=server, load_user=lambda: g.member,
                    allow_anonymous=allow_anonymous)
    extension.init_app(app)
    return app, extension


def test_init_app_with_a_user_loader_of_its_own():
    app, extension = build(allow_anonymous=False)
    with RunningServer(app, on_stop=extension.close) as running:
        url = running.base + "/mcp"
        with Client.http(url, timeout=WAIT, headers={"X-Member": "root"}) as root:
            assert root.call_tool("whoami").text == "root"
            assert {t.name for t in root.list_tools()} == {"whoami", "admin"}
        with Client.http(url, timeout=WAIT, headers={"X-Member": "ann"}) as ann:
            assert {t.name for t in ann.list_tools()} == {"whoami"}
        with Client.http(url, timeout=WAIT,
                         headers={"X-Member": "ann", "X-Peek": "1"}) as peeked:
            assert peeked.call_tool("whoami").text == "ann"
        with (pytest.raises(InvalidRequestError, match="signed-in users only"),
              Client.http(url, timeout=WAIT) as anonymous):
            anonymous.list_tools()


def test_allow_anonymous():
    app, extension = build(allow_anonymous=True)
    with (RunningServer(app, on_stop=extension.close) as running,
          Client.http(running.base + "/mcp", timeout=WAIT) as client):
        assert client.call_tool("whoami").text == "nobody"
        assert {t.name for t in client.list_tools()} == {"whoami"}
