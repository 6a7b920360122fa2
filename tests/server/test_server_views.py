"""The server as its parts see it: a part that needs something of the server gets it
through the server's public members or a collaborator object it is handed (the session
set, the mounts with the lifespan), never through a protocol that declares a private
member so that a free function can change it."""

from __future__ import annotations

import ast
from pathlib import Path

import mcpsync

PACKAGE = Path(mcpsync.__file__).parent


def _is_protocol(node: ast.ClassDef) -> bool:
    return any((isinstance(b, ast.Name) and b.id == "Protocol")
               or (isinstance(b, ast.Attribute) and b.attr == "Protocol") for b in node.bases)


def _private_members(node: ast.ClassDef) -> list[str]:
    names = []
    for member in node.body:
        if isinstance(member, ast.FunctionDef):
            names.append(member.name)
        elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
            names.append(member.target.id)
    return [n for n in names if n.startswith("_") and not n.startswith("__")]


def test_no_protocol_declares_a_private_member() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and _is_protocol(node):
                private = _private_members(node)
                if private:
                    found[f"{path.relative_to(PACKAGE)}:{node.name}"] = private
    assert found == {}
