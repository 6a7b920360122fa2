"""A lazily exporting package (PEP 562, see ``mcpsync/_lazy.py``) names its public API three
times: the ``TYPE_CHECKING`` imports (what type checkers and editors see), the lazy map
(what an attribute access imports) and ``__all__``. They must agree name for name and
module for module, and every name must resolve; one list drifting from another is an
export that type-checks but fails at run time, or the reverse."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["mcpsync", "mcpsync.types", "mcpsync.tasks"]


def _three_lists(package: str) -> tuple[dict[str, str], dict[str, str], list[str]]:
    path = ROOT / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    typed: dict[str, str] = {}
    lazy: dict[str, str] = {}
    listed: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                for alias in stmt.names:
                    typed[alias.asname or alias.name] = "." * stmt.level + (stmt.module or "")
        elif isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            name = ast.unparse(target)
            if name == "_LAZY":
                lazy = ast.literal_eval(node.value)  # type: ignore[arg-type]
            elif name == "__all__":
                listed = ast.literal_eval(node.value)  # type: ignore[arg-type]
    return typed, lazy, listed


@pytest.mark.parametrize("package", PACKAGES)
def test_the_three_lists_agree(package):
    typed, lazy, listed = _three_lists(package)
    assert lazy, f"{package} has no _LAZY map"
    assert typed == lazy, {
        "only imported for type checkers": sorted(set(typed) - set(lazy)),
        "only in the lazy map": sorted(set(lazy) - set(typed)),
        "in another module": sorted(n for n in set(typed) & set(lazy) if typed[n] != lazy[n])}
    eager = {"__version__"} if package == "mcpsync" else set()
    assert sorted(listed) == sorted(set(lazy) | eager)
    assert len(listed) == len(set(listed)), "a name listed twice in __all__"


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))
