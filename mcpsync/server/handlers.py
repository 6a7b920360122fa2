"""The shapes of what a server calls: a raw method handler, a request scope's factory, a
guard, and the one way a handler is run.

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
#: What ``Server.add_middleware`` adds (``mcpsync.middleware``): ``guard(ctx, params,
#: next_)`` around each handler, on its thread; ``next_(ctx, params)`` runs the rest.
Guard = Callable[[HandlerContext, dict[str, Any], MethodHandler], dict[str, Any]]
#: ``run(handler, ctx, params)``: a handler run inside its server's guards and request
#: scopes (``dispatcher.py`` ``Dispatcher.run_handler``), as a mount is handed it.
HandlerRunner = Callable[[MethodHandler, HandlerContext, dict[str, Any]], dict[str, Any]]

__all__ = ["Guard", "HandlerRunner", "MethodHandler", "ScopeFactory"]
