"""The server as its parts see it: a part that needs something of the server gets it
through the server's public members (a protocol of those, where the part may not import
the server class), or through a collaborator object it is handed, which owns that state:
the :class:`~mcpsync.server.dispatcher.Dispatcher` a session, a stateless request and a
mount answer through, the :class:`~mcpsync.server.mount.Mounts` with its change hooks, the
extensions a proxy declares, the session set (docs/architecture.md, section 1.3). Never
through a protocol that declares a private member: no protocol in the package declares
one, whether a method, a property or an attribute (dunders, which a protocol may need to
say, ``__hash__``, are not private)."""

from __future__ import annotations

import ast
from pathlib import Path

import mcpsync
from mcpsync import Client, Server
from mcpsync.server.dispatcher import Dispatcher
from mcpsync.server.server import ServerCore

PACKAGE = Path(mcpsync.__file__).parent

#: What the server's parts used to read of it through protocols, now its collaborators':
#: the server must not hold them again beside the object that owns them.
MOVED = frozenset({
    "_run_handler", "_guards", "_request_state_key", "_request_state_key_shared",
    "_method_handlers", "_notification_handlers", "_telemetry", "_list_changed_hooks",
    "_resource_update_hooks",
})


def _is_protocol(node: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Name) and b.id == "Protocol")
               or (isinstance(b, ast.Attribute) and b.attr == "Protocol") for b in node.bases)


def _private_members(node: ast.ClassDef) -> list[str]:
    """The private members ``node`` declares: a method or a property by its name, an
    attribute (assignable through the protocol) marked ``=attribute``."""
    names = []
    for member in node.body:
        if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.append(member.name)
        elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
            names.append(f"{member.target.id}=attribute")
    return [n for n in names if n.startswith("_") and not n.startswith("__")]


def _declared() -> dict[str, list[str]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and _is_protocol(node):
                private = _private_members(node)
                if private:
                    found[f"{path.relative_to(PACKAGE)}:{node.name}"] = private
    return found


def test_no_protocol_in_the_package_declares_a_private_member() -> None:
    assert _declared() == {}


def test_the_check_sees_a_private_member_of_a_protocol() -> None:
    # What the check reads, on a protocol that declares one of each kind.
    source = ("from typing import Protocol\n"
              "class P(Protocol):\n"
              "    _field: int\n"
              "    @property\n"
              "    def _prop(self) -> int: ...\n"
              "    def _method(self) -> None: ...\n"
              "    def __hash__(self) -> int: ...\n"
              "    def public(self) -> None: ...\n")
    node = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    assert _is_protocol(node)
    assert _private_members(node) == ["_field=attribute", "_prop", "_method"]


def test_sessions_and_mounts_are_handed_the_servers_dispatcher() -> None:
    parent, child = Server("parent"), Server("child")
    parent.mount(child, "c")
    dispatcher = parent._dispatcher
    assert isinstance(dispatcher, Dispatcher)
    assert parent._mounts.run_handler == dispatcher.run_handler
    assert parent._mounts.mounts[0].mounts is child._mounts
    assert child._mounts.run_handler == child._dispatcher.run_handler
    with Client.memory(parent, timeout=10):
        (session,) = parent.sessions()
        assert session.server is parent and session._dispatcher is dispatcher


def test_what_the_collaborators_own_the_server_does_not_hold_again() -> None:
    for server in (ServerCore("core"), Server("full"), Server.proxy(Server("remote"))):
        assert sorted(name for name in MOVED if hasattr(server, name)) == []
