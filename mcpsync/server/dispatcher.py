"""What a request is answered through: :class:`Dispatcher`.

A request is answered in a session (``session.py``, the handshake era), on its own
(``stateless.py``: 2026-07-28 over stdio and memory, and the HTTP app's 2026-07-28
requests) or across a mount (``mounted.py``). Each needs the same few things of the
server: the handler of a method, to run it in the server's guards and request scopes,
``serverInfo`` and the capabilities as a revision sees them, the key that seals
``requestState``, the ``resultType`` values its extensions declared, and its telemetry.
They are this one object, which every ``ServerCore`` makes and hands to the parts that
answer (a session, a stateless request's host, a mount), rather than the parts reading
the server's private members through a protocol. It imports nothing of ``server.py``,
``session.py`` or ``stateless.py``, which import it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from ..dispatch.context import HandlerContext, check_meta
from ..dispatch.registry import MethodRegistry, NotificationHandlers, RequestHandlers
from ..errors import MCPError, RequestCancelledError
from ..protocol.tool_outcome import handler_failed
from ..telemetry.instrumentation import Instrumentation
from .extensions import Extensions
from .handlers import Guard, MethodHandler, ScopeFactory
from .scopes import Catalog
from .scopes import check as check_scopes
from .state_key import configured_state_key, resolve_state_key


def _guarded(guard: Guard, handler: MethodHandler) -> MethodHandler:
    def run(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return guard(ctx, params, handler)

    return run


class Dispatcher:
    """The one way in to a server's handlers (its ``_dispatcher``). Made by the server
    with what it owns: the method registry (``methods``), its registries for per-item
    OAuth scopes (``catalog``), the request scopes ``request_scope`` appends to (read at
    each request), its extensions, its telemetry, ``info(version)`` and
    ``capabilities(version)`` (the server's identity and what it declares, derived from
    what is registered at the time), and ``request_state_key`` as configured.
    Thread-safe: everything a request reads is replaced whole, never changed in place."""

    def __init__(self, methods: MethodRegistry[MethodHandler, Any], *, catalog: Catalog,
                 request_scopes: list[ScopeFactory], extensions: Extensions,
                 telemetry: Instrumentation, info: Callable[[str | None], dict[str, Any]],
                 capabilities: Callable[[str], dict[str, Any]],
                 request_state_key: bytes | str | None) -> None:
        #: The registry's request handlers as a dict (assigning replaces, ``del`` removes).
        self.handlers: RequestHandlers[MethodHandler] = RequestHandlers(methods)
        #: The handler of one method (``None``: answered -32601), from the registry
        #: directly: what a request looks up (``handlers.get`` through the view).
        self.handler: Callable[[str], MethodHandler | None] = methods.request_handler
        #: The registry's notification handlers as a dict of one callable per method.
        self.notification_handlers = NotificationHandlers(methods)
        #: The guards ``add_middleware`` added, outermost first (replaced, never changed).
        self.guards: tuple[Guard, ...] = ()
        #: The extensions in use: a 2026-07-28 answer keeps a ``resultType`` one of them
        #: declared (``extensions.result_types``).
        self.extensions = extensions
        #: OpenTelemetry spans and metrics of everything the server serves.
        self.telemetry = telemetry
        #: ``serverInfo`` with only the fields a revision (None: any) knows.
        self.info_for = info
        #: The capabilities as a revision can honour them, derived now.
        self.capabilities_for = capabilities
        self._catalog = catalog
        self._scopes = request_scopes
        self._state_key = request_state_key
        self._state_key_lock = threading.Lock()
        self._state_key_configured = isinstance(request_state_key, bytes)

    @property
    def state_key(self) -> bytes:
        """The HMAC key of MRTR ``requestState`` (and of the task messages a
        ``CeleryExecutor`` queues): from ``Server(request_state_key=...)``, else
        ``MCPSYNC_REQUEST_STATE_KEY``, else a random per-process key that only works while
        every retry reaches this process (an HTTP app warns when served by several
        processes: :func:`~mcpsync.server.state_key.warn_unshared_key`)."""
        with self._state_key_lock:
            if not isinstance(self._state_key, bytes):
                self._state_key_configured = configured_state_key(self._state_key) is not None
                self._state_key = resolve_state_key(self._state_key)
            return self._state_key

    @property
    def state_key_shared(self) -> bool:
        """Whether :attr:`state_key` was configured (so several processes can share it)
        rather than made up for this process alone."""
        self.state_key  # noqa: B018  (resolves it once)
        return self._state_key_configured

    def run_handler(self, handler: MethodHandler, ctx: HandlerContext,
                    params: dict[str, Any]) -> dict[str, Any]:
        """Call a method handler inside the guards and the request scopes (the one way in,
        on every transport and era, and across a mount).

        An exception that is not the request's outcome (an ``MCPError``, a cancellation)
        is a failure of the handler (a completer, a raw ``method_handler``, a request
        scope, a guard): it is answered by the one policy of :func:`handler_failed`
        (generic text with the request id, traceback logged once), as a resource's or a
        prompt's is."""
        if params.get("_meta") is not None:
            check_meta(params)
        guards = self.guards
        if guards:
            for guard in reversed(guards):
                handler = _guarded(guard, handler)
        try:
            if not self._scopes:  # the common case, without a context manager
                check_scopes(self._catalog, ctx, ctx.method, params)
                return handler(ctx, params)
            return self._run_scoped(handler, ctx, params)
        except (MCPError, RequestCancelledError):
            raise
        except Exception as exc:
            raise handler_failed(ctx.method, exc, ctx) from None

    def _run_scoped(self, handler: MethodHandler, ctx: HandlerContext,
                    params: dict[str, Any]) -> dict[str, Any]:
        with contextlib.ExitStack() as stack:
            for scope in list(self._scopes):
                stack.enter_context(scope(ctx))
            # Per-item OAuth scopes, on every transport; inside the request scopes, so an
            # auth layer written as one has set ``ctx.auth`` by then.
            check_scopes(self._catalog, ctx, ctx.method, params)
            return handler(ctx, params)


__all__ = ["Dispatcher"]
