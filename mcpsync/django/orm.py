"""Database connections on handler threads: what Django does around each request, done
around each handler.

Django opens a connection per thread on first use and, around every request it serves
(the ``request_started``/``request_finished`` signals), calls ``close_old_connections``:
a connection that has outlived ``CONN_MAX_AGE``, is broken, or was left in a changed
autocommit state is closed, so the next query opens a fresh one. mcpsync's handler
threads serve no Django request, so nothing would do that for them: a pooled thread would
keep a connection the database has since dropped, or one per thread forever. The request
scope below runs ``close_old_connections`` before and after each handler.

A pool thread that retires (idle for a while) must not take an open connection with it:
Django keeps connections in a thread-local, and its connection wrapper is in reference
cycles, so after the thread ends the socket or file stays open until the garbage
collector happens to run. Each handler thread therefore holds a small sentinel in a
thread-local of its own, dropped (without cycles, so at once) when the thread ends; its
finalizer closes the connections that thread opened.

A handler that runs on the thread serving the Django request itself (a tool without a
context, ``tools/list``) is left alone: Django manages that thread's connections, and
closing one there could end a transaction the request's middleware opened.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .users import in_view

if TYPE_CHECKING:
    from ..dispatch.context import HandlerContext

logger = logging.getLogger("mcpsync.django")


class _ThreadConnections:
    """The connection wrappers one handler thread used (held in that thread's local)."""

    def __init__(self) -> None:
        self.wrappers: list[Any] = []


def _close_raw(wrappers: list[Any]) -> None:
    """Close what a thread that ended left open. It may run on another thread than the
    one that opened them, where Django's ``close()`` refuses (thread-sharing check): the
    DB-API connection itself is closed instead."""
    for wrapper in wrappers:
        raw = getattr(wrapper, "connection", None)
        if raw is None:
            continue
        try:
            raw.close()
        except Exception:  # a connection the server already dropped
            logger.debug("closing a retired thread's connection failed", exc_info=True)
        wrapper.connection = None


_local = threading.local()


def _watch_thread() -> None:
    """Note this thread's open connections, for closing when the thread ends."""
    from django.db import connections

    holder = getattr(_local, "connections", None)
    if holder is None:
        holder = _local.connections = _ThreadConnections()
        weakref.finalize(holder, _close_raw, holder.wrappers)
    for wrapper in connections.all(initialized_only=True):
        if wrapper not in holder.wrappers:
            holder.wrappers.append(wrapper)


@contextmanager
def database_scope(ctx: HandlerContext) -> Iterator[None]:
    """The request scope: ``close_old_connections`` before and after the handler (on a
    handler thread; on the Django request's own thread Django does it)."""
    if in_view():
        yield
        return
    from django.db import close_old_connections

    close_old_connections()
    try:
        yield
    finally:
        close_old_connections()
        _watch_thread()


__all__ = ["database_scope"]
