"""Calling a user's handler function: plain or ``async def``, checked at registration.

An ``async def`` tool, resource or prompt runs to completion on the request's own handler
thread, in a **private event loop made for that one call** and closed after it. Why not one
shared background loop: everything the thread-per-request design gives a handler keeps
working unchanged (``current_transport()``, ``@server.request_scope`` state, the records
``ctx.forward_logging`` picks by thread, and 2026-07-28 questions, which must be asked from
the handler's thread), and a handler that blocks (``ctx.elicit`` waits for a person) stalls
only its own call, never the other requests' coroutines. The price: an object bound to an
event loop (an ``asyncio.Lock``, an ``aiohttp.ClientSession``) must be made inside the call,
not shared between calls. A new loop costs about 0.1 ms.

Cancellation of the request (``ctx.cancelled``) cancels the coroutine's task, so an
``await`` in progress raises :class:`asyncio.CancelledError` inside it; the call then ends
with :class:`~mcpsync.errors.RequestCancelledError`, as ``ctx.check_cancelled()`` would.
"""

from __future__ import annotations

import inspect
import threading
import types
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

from ..errors import RequestCancelledError

#: How often a private loop looks at a cancellation event that cannot call back (a plain
#: ``threading.Event``, such as a task's); the engine's events call back at once.
CANCEL_POLL_INTERVAL = 0.05


def check_handler(fn: Callable[..., Any], what: str) -> None:
    """Refuse at registration what could only fail at every call, with a clear TypeError.

    ``what`` names the handler (``"tool 'search'"``). Generator functions would return a
    generator object, not a result; positional-only parameters cannot be passed by name,
    which is how arguments arrive.
    """
    target = inspect.unwrap(fn)
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise TypeError(f"{what}: {getattr(fn, '__qualname__', fn)!r} is a generator function; "
                        "a handler must return its result (collect the items into a list)")
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return
    for param in parameters:
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{what}: parameter {param.name!r} is positional-only; arguments "
                            "are passed by name, so remove the '/' from the signature")


def call_handler(fn: Callable[..., Any], kwargs: dict[str, Any], ctx: Any) -> Any:
    """``fn(**kwargs)``; a coroutine it returns is run to completion here (see module doc)."""
    value = fn(**kwargs)
    if isinstance(value, types.CoroutineType):  # inspect.iscoroutine, without the call
        cancelled = getattr(ctx, "cancelled", None)
        return run_coroutine(value, cancelled if isinstance(cancelled, threading.Event)
                             else None)
    return value


def run_coroutine(coro: Coroutine[Any, Any, Any],
                  cancelled: threading.Event | None = None) -> Any:
    """Run ``coro`` in a new event loop on this thread; cancel it when ``cancelled`` is set.

    asyncio is imported here, on the first async handler's first call: importing it costs
    about 50 ms, which every server would otherwise pay at start-up for handlers it may
    never have.
    """
    import asyncio

    loop = asyncio.new_event_loop()
    lock = threading.Lock()
    open_ = [True]
    try:
        task = loop.create_task(coro)

        def cancel_from_any_thread() -> None:
            with lock:  # never after the loop closed: the callback may come much later
                if open_[0]:
                    loop.call_soon_threadsafe(task.cancel)

        if cancelled is not None:
            add_callback = getattr(cancelled, "add_callback", None)
            if callable(add_callback):
                add_callback(cancel_from_any_thread)
            else:
                event = cancelled

                def poll() -> None:
                    if event.is_set():
                        task.cancel()
                    elif not task.done():
                        loop.call_later(CANCEL_POLL_INTERVAL, poll)

                loop.call_soon(poll)
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if cancelled is not None and cancelled.is_set():
                raise RequestCancelledError("the request was cancelled") from None
            raise RuntimeError("the coroutine was cancelled") from None
    finally:
        with lock:
            open_[0] = False
        try:
            _cancel_leftovers(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            loop.close()


def _cancel_leftovers(loop: asyncio.AbstractEventLoop) -> None:
    """Tasks the handler started and did not await die with its loop, as under asyncio.run."""
    import asyncio

    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
