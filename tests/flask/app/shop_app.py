"""The test Flask app: Flask-WTF's CSRFProtect, Flask-Login (a session login form and an
``Authorization: Token`` request loader), Flask-SQLAlchemy on a SQLite file (SHOP_DB), and
the MCP endpoint at /mcp through mcpsync.flask.MCP. Users: alice (may issue refunds), bob;
password secret."""

import os
import threading

from flask import Flask, g, jsonify, request
from flask_login import LoginManager, UserMixin, current_user, login_user
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect

from mcpsync import HandlerContext, Server
from mcpsync.flask import MCP, current_request

app = Flask(__name__)
app.config.update(SECRET_KEY="test-only",
                  SQLALCHEMY_DATABASE_URI="sqlite:///" + os.environ["SHOP_DB"])
db = SQLAlchemy(app)
login = LoginManager(app)
csrf = CSRFProtect(app)  # forms need a token; the MCP route is exempted by MCP()
server = Server("flask-shop")
RELEASED = threading.Event()


class User(UserMixin, db.Model):
    id = db.Column(db.Integer, primary_key=True)
    name = db.Column(db.String(50), unique=True)
    token = db.Column(db.String(50), unique=True)
    perms = db.Column(db.String(200), default="")

    def has_perm(self, codename):
        return codename in self.perms.split()


class Order(db.Model):
    id = db.Column(db.Integer, primary_key=True)
    item = db.Column(db.String(100))


@login.user_loader
def load_user(user_id):
    return db.session.get(User, int(user_id))


@login.request_loader
def user_from_token(req):
    header = req.headers.get("Authorization", "")
    if header.startswith("Token "):
        return User.query.filter_by(token=header[6:]).first()
    return None


@app.post("/login")
@csrf.exempt  # the tests log in without a form
def log_in():
    user = User.query.filter_by(name=request.form["name"]).first()
    if user is None or request.form.get("password") != "secret":
        return "no", 403
    login_user(user)
    return "ok"


@app.post("/orders-form")
def order_form():
    return "created"


@app.get("/whoami")
def whoami_page():
    return jsonify(current_user.name if current_user.is_authenticated else None)


@server.tool()
def whoami(ctx: HandlerContext) -> str:
    """The caller's name (Flask-Login's current_user, as ctx.user)."""
    return ctx.user.name if ctx.user is not None and ctx.user.is_authenticated else "anonymous"


@server.tool()
def request_header(ctx: HandlerContext, name: str) -> str:
    """A header of the Flask request the call came in (mcpsync.flask.current_request)."""
    request = current_request(ctx)
    return "no request" if request is None else request.headers.get(name, "")


@server.tool()
def add_order(ctx: HandlerContext, item: str) -> int:
    """Create an order (Flask-SQLAlchemy from a handler thread, in the app context)."""
    g.touched = True
    order = Order(item=item)
    db.session.add(order)
    db.session.commit()
    return order.id


@server.tool()
def count_orders(ctx: HandlerContext) -> int:
    """How many orders there are."""
    return db.session.query(Order).count()


@server.tool()
def pool_status(ctx: HandlerContext) -> dict:
    """Connections checked out of SQLAlchemy's pool now (this call's own included, if it
    used one: it does not), and the handler threads alive."""
    handler_threads = [t.name for t in threading.enumerate()
                       if t.name.startswith("mcpsync-http-handler")]
    return {"checked_out": db.engine.pool.checkedout(), "handler_threads": handler_threads}


@server.tool()
def wait_for_release(ctx: HandlerContext) -> str:
    """Send a progress notification, then wait until ``release`` is called."""
    RELEASED.clear()
    ctx.progress(1, total=2, message="started")
    return "released" if RELEASED.wait(30) else "timed out"


@server.tool(permission="shop.issue_refund")
def refund(ctx: HandlerContext, order: int) -> str:
    """Refund an order (only for users whose has_perm allows it)."""
    return f"order {order} refunded by {ctx.user.name}"


@server.tool()
def release() -> str:
    """Let ``wait_for_release`` finish."""
    RELEASED.set()
    return "ok"


# SHOP_ALLOW_ANONYMOUS=1: the variant the official SDK's client (no credentials) calls.
mcp = MCP(app, server, allow_anonymous=os.environ.get("SHOP_ALLOW_ANONYMOUS") == "1")



@app.cli.command("seed")
def seed():
    """Create the tables and the users."""
    db.create_all()
    db.session.add_all([User(name="alice", token="alice-token", perms="shop.issue_refund"),
                        User(name="bob", token="bob-token")])
    db.session.commit()
