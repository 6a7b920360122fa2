"""A package's public names, imported on first use (PEP 562).

Why: a server's cold start is mostly imports, and a package that imports all of its
modules to re-export their names makes every user pay for all of them (a stdio server
does not need the OAuth client, the task stores or the sampling types to answer its first
call). The package keeps a ``TYPE_CHECKING`` block with the real imports, so type checkers
and editors see the names, and builds its ``__getattr__``/``__dir__`` here from a map
name → submodule.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, names: Mapping[str, str], namespace: dict[str, Any],
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps each public name to the
    relative module that defines it (``".store"``); ``namespace`` is the package's
    ``globals()``, where a resolved name is stored so the next lookup is a plain one."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
