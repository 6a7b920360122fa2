"""The server of tests/server/test_visibility.py, importable and runnable over stdio
(``python -m tests.server.visibility_server``): tools, resources, a template and a prompt
with permissions and tags, and a stand-in framework adapter."""

from __future__ import annotations

from collections.abc import Iterator

from mcpsync import HandlerContext, Server


class User:
    """A framework user as Django and Flask-Login shape it: ``has_perm(codename)``."""

    def __init__(self, name: str, perms: set[str], staff: bool = False) -> None:
        self.name, self.perms, self.is_staff = name, perms, staff

    def has_perm(self, codename: str) -> bool:
        return codename in self.perms


USERS = {"alice": User("alice", {"shop.issue_refund", "notes.read_secret"}, staff=True),
         "bob": User("bob", set())}


def build(name: str = "shop") -> Server:
    """A server whose framework adapter (a request scope here: a real one sets
    ``TransportContext.user`` as the request enters) takes the user from an ``X-User``
    header over HTTP, else from the client's name."""
    server = Server(name)

    @server.request_scope
    def adapter(ctx: HandlerContext) -> Iterator[None]:
        who = ctx.transport.headers.get("x-user") or (ctx.session.client_info or {}).get("name")
        ctx.transport.user = USERS.get(str(who))
        yield

    @server.tool()
    def public() -> str:
        return "for everyone"

    @server.tool(permission="shop.issue_refund")
    def refund(order: int) -> str:
        return f"refunded {order}"

    @server.tool(permission=lambda ctx: bool(getattr(ctx.user, "is_staff", False)))
    def staff_report() -> str:
        return "report"

    @server.tool(tags={"beta"})
    def beta_feature() -> str:
        return "beta"

    @server.resource("notes://secret", permission="notes.read_secret")
    def secret() -> str:
        return "the secret"

    @server.resource("files://{name}", permission="notes.read_secret")
    def files(name: str) -> str:
        return name

    @server.prompt(permission="shop.issue_refund")
    def refund_letter(order: str) -> str:
        return f"Dear customer, order {order}"

    @server.completer("refund_letter", "order")
    def orders(value: str, context: dict[str, str]) -> list[str]:
        return ["1", "2"]

    return server


server = build()

if __name__ == "__main__":
    server.run_stdio()
