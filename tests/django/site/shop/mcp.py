"""The shop app's MCP tools, found by mcpsync.django's autodiscovery (as admin.py is by
the admin) and registered into the project's server."""

import threading

from mcpsync import HandlerContext
from mcpsync.django import current_request, get_server

from .apps import open_connections
from .models import Order

server = get_server()
#: Set by the ``release`` tool: ``wait_for_release`` streams its first progress, then waits.
RELEASED = threading.Event()




@server.tool()
def whoami(ctx: HandlerContext) -> str:
    """The caller's username, and how the Django request saw them."""
    user = ctx.user
    request = current_request(ctx)
    via = request.META.get("HTTP_X_REMOTE_USER") and "remote-user" if request else None
    name = user.username if user is not None and user.is_authenticated else "anonymous"
    return f"{name} ({via or 'no header'})"


@server.tool()
def add_order(ctx: HandlerContext, item: str) -> int:
    """Create an order owned by the caller; its id."""
    return Order.objects.create(item=item, owner=ctx.user.username).pk


@server.tool()
def count_orders(ctx: HandlerContext) -> int:
    """How many orders there are (a query from a handler thread)."""
    return Order.objects.count()


@server.tool()
def connections() -> dict:
    """The database connections this process has open, by thread, and the handler
    threads alive."""
    handler_threads = [t.name for t in threading.enumerate()
                       if t.name.startswith("mcpsync-http-handler")]
    return {"open": open_connections(), "handler_threads": handler_threads}


@server.tool()
def wait_for_release(ctx: HandlerContext) -> str:
    """Send a progress notification, then wait until ``release`` is called."""
    RELEASED.clear()
    ctx.progress(1, total=2, message="started")
    if not RELEASED.wait(30):
        return "timed out"
    return "released"


@server.tool()
def release() -> str:
    """Let ``wait_for_release`` finish."""
    RELEASED.set()
    return "ok"


@server.tool(permission="shop.issue_refund")
def refund(ctx: HandlerContext, order: int) -> str:
    """Refund an order (only for users with the shop.issue_refund permission)."""
    return f"order {order} refunded by {ctx.user.username}"
