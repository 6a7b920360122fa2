"""The server as its parts see it: a part that needs something of the server gets it
through the server's public members, a collaborator object it is handed (the session
set, the mounts with the lifespan), or the server's package-internal surface: the few
underscore members the package's own layers read (docs/architecture.md, section 1.3),
which a user's ``dir(server)`` does not show (``test_server_surface.py``). Never through
a protocol that declares any other private member, nor a private attribute, so that a
free function can change it."""

from __future__ import annotations

import ast
from pathlib import Path

import mcpsync
from mcpsync.server.server import ServerCore

PACKAGE = Path(mcpsync.__file__).parent

#: The server's package-internal surface a protocol may declare (read-only: a method or a
#: property), as docs/architecture.md, section 1.3 lists it.
INTERNAL = frozenset({
    "_run_handler", "_capabilities_for", "_info_for", "_request_state_key",
    "_method_handlers", "_notification_handlers", "_extensions", "_telemetry", "_mounts",
    "_list_changed_hooks", "_resource_update_hooks",
})


def _is_protocol(node: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Name) and b.id == "Protocol")
               or (isinstance(b, ast.Attribute) and b.attr == "Protocol") for b in node.bases)


def _private_members(node: ast.ClassDef) -> list[str]:
    """The private members ``node`` declares: a method or a property by its name, an
    attribute (assignable through the protocol) marked ``=attribute``."""
    names = []
    for member in node.body:
        if isinstance(member, ast.FunctionDef):
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


def test_no_protocol_declares_a_private_member_but_the_servers_internal_surface() -> None:
    outside = {where: [n for n in names if n not in INTERNAL]
               for where, names in _declared().items()}
    assert {where: names for where, names in outside.items() if names} == {}


def test_the_internal_surface_is_the_servers_own_and_is_read() -> None:
    core = ServerCore("x")
    assert all(hasattr(core, name) for name in INTERNAL)
    read = {name for names in _declared().values() for name in names}
    assert read == INTERNAL, f"listed but no protocol reads them: {sorted(INTERNAL - read)}"
