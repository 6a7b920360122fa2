"""Each python block of the guides a newcomer copies first imports what it uses from
mcpsync and the standard library (issue 41: client.md and wsgi.md blocks used ``Client``,
``sys`` or ``Root`` without importing them). A block may use the reader's own ``client``,
``server`` or ``app`` only when an earlier block of its page made one."""

from __future__ import annotations

import ast
import builtins
import re
import sys
from pathlib import Path

import pytest

import mcpsync

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/client.md", "docs/wsgi.md", "docs/quickstart.md",
         "docs/observability.md", "docs/auth.md", "docs/celery.md"]
_BLOCK = re.compile(r"```python\n(.*?)```", re.S)
#: Names a block must import when it uses them: mcpsync's public API, and stdlib modules
#: (those only where the block reads an attribute of the name: ``cmd`` may be a variable).
API = set(mcpsync.__all__)
STDLIB = set(sys.stdlib_module_names)
#: The reader's objects a block may take from an earlier block of its page.
OBJECTS = {"client", "server", "app"}


def _blocks() -> list[tuple[str, str, tuple[str, ...]]]:
    """(where, the block, the page's earlier blocks)."""
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        earlier: list[str] = []
        for match in _BLOCK.finditer(text):
            line = text[: match.start()].count("\n") + 2
            found.append((f"{page}:{line}", _code(match.group(1)), tuple(earlier)))
            earlier.append(_code(match.group(1)))
    return found


def _code(block: str) -> str:
    return "\n".join(line for line in block.splitlines() if not line.startswith("$ "))


BLOCKS = _blocks()


def _names(code: str) -> tuple[set[str], set[str], set[str]]:
    """What the block reads and binds, and the names it reads an attribute of."""
    tree = ast.parse(code)
    bound = set(dir(builtins))
    read: set[str] = set()
    modules = {node.value.id for node in ast.walk(tree)
               if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                args = node.args
                bound.update(a.arg for a in [*args.posonlyargs, *args.args,
                                             *args.kwonlyargs])
                bound.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read, bound, modules


def _bound_in(code: str) -> set[str]:
    try:
        return _names(code)[1]
    except SyntaxError:
        return set()


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


# A fragment (an indented part of a larger file) is not a block: it gets no id at all,
# rather than one that skips on every run (tests/expected_skips.txt).
WHOLE = [block for block in BLOCKS if _parses(block[1])]


@pytest.mark.parametrize(("where", "code", "earlier"), WHOLE, ids=[w for w, _, _ in WHOLE])
def test_a_block_imports_what_it_uses(where, code, earlier):
    read, bound, modules = _names(code)
    unbound = read - bound
    missing = (unbound & API) | (unbound & STDLIB & modules)
    assert not missing, f"{where} uses {sorted(missing)} without importing them"
    made_before = set().union(*(_bound_in(block) for block in earlier))
    orphans = (unbound & OBJECTS) - made_before
    assert not orphans, f"{where} uses {sorted(orphans)}, which no block before it makes"
