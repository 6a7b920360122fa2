"""The shapes of what a server calls: a raw method handler and a request scope's factory.

Apart from ``server.py`` so that the parts the server is made of (its built-ins, mounts,
sessions) can name them without importing the server class.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ..dispatch.context import HandlerContext

#: A raw method handler: gets the context and the raw params, returns the raw result.
MethodHandler = Callable[[HandlerContext, dict[str, Any]], dict[str, Any]]
#: What ``Server.request_scope`` registers: a context manager around each handler, per
#: request, on its thread.
ScopeFactory = Callable[[HandlerContext], AbstractContextManager[Any]]

__all__ = ["MethodHandler", "ScopeFactory"]
