"""``MethodRegistry``: the one table of methods a peer serves, shared by Server and Client.

Both sides of an MCP connection answer requests and receive notifications by method name:
a server answers ``tools/call`` and hears ``notifications/roots/list_changed``; a client
answers ``sampling/createMessage`` and hears ``notifications/message``. One class holds
that table for either side, so that built-in methods, a user's custom methods and
extensions (tasks, auth) all plug in the same way: core never special-cases them.

* **Requests**: one handler per method. A miss returns ``None``; the caller answers
  -32601 (``Method not found``). Registering a method twice is a mistake and raises
  :class:`DuplicateHandlerError` unless ``replace=True``; *built-in* handlers (installed
  with :meth:`MethodRegistry.set_default`) may be replaced without it, since overriding
  one is the point of the escape hatch.
* **Notifications**: any number of handlers per method, called in the order they were
  added, each isolated from the others' exceptions (a notification has nobody to answer,
  so one failing listener must not silence the next). An unknown notification has no
  handler and is ignored, as the spec says.

The registry does not know handler signatures (they differ per side: a server's request
handler takes a ``HandlerContext``, a client's a ``HostRequest``); it is generic in them.

Thread-safe: writers take a lock and publish a fresh dict (copy on write), so a lookup
on the hot path is a plain dict read with no lock, and handlers are never called while
the lock is held.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Final, Generic, TypeVar

#: The attribute a default (built-in-like) handler sets to say it answers for names no
#: registry holds (a proxy's forwarders): a server that mounts its server routes every name
#: under the mount's prefix to it (see :mod:`mcpsync.server.mount`).
SERVES_EVERY_NAME: Final = "serves_every_name"
#: The attribute such a handler may set to ``knows(name) -> bool``: whether ``name`` is one
#: it serves (a proxy: its remote listed it), so that telemetry names it (else ``_OTHER``).
KNOWS_NAME: Final = "knows_name"

logger = logging.getLogger("mcpsync.dispatch")

RequestT = TypeVar("RequestT", bound=Callable[..., Any])
NotificationT = TypeVar("NotificationT", bound=Callable[..., Any])


class DuplicateHandlerError(ValueError):
    """A request method already has a (non built-in) handler; pass ``replace=True`` to
    replace it on purpose."""


def _check_method(method: str) -> None:
    if not isinstance(method, str) or not method:
        raise TypeError(f"a method name must be a non-empty string, not {method!r}")


class MethodRegistry(Generic[RequestT, NotificationT]):
    """Request and notification handlers by method name. Thread-safe (see the module)."""

    def __init__(self, name: str = "methods") -> None:
        self.name = name
        self._lock = threading.Lock()
        # Both dicts are replaced, never mutated, once published: readers need no lock.
        self._requests: dict[str, RequestT] = {}
        self._defaults: frozenset[str] = frozenset()
        self._notifications: dict[str, tuple[NotificationT, ...]] = {}

    # -- requests ------------------------------------------------------------------------

    def set_default(self, method: str, handler: RequestT) -> None:
        """Install a built-in handler: any later :meth:`add_request` may replace it."""
        _check_method(method)
        with self._lock:
            self._requests = {**self._requests, method: handler}
            self._defaults = self._defaults | {method}

    def add_request(self, method: str, handler: RequestT, *, replace: bool = False) -> None:
        """Register the handler of ``method``.

        Raises :class:`DuplicateHandlerError` when a handler that is not a built-in is
        already registered, unless ``replace`` is true.
        """
        _check_method(method)
        if not callable(handler):
            raise TypeError(f"the handler of {method!r} must be callable, not {handler!r}")
        with self._lock:
            if method in self._requests and method not in self._defaults and not replace:
                raise DuplicateHandlerError(
                    f"{self.name}: {method!r} already has a handler "
                    f"({_describe(self._requests[method])}); pass replace=True to replace it")
            self._requests = {**self._requests, method: handler}
            self._defaults = self._defaults - {method}

    def remove_request(self, method: str) -> RequestT:
        """Unregister ``method`` (built-in or not) and return its handler; ``KeyError``
        when it has none. Afterwards the method is answered -32601."""
        with self._lock:
            requests = dict(self._requests)
            handler = requests.pop(method)
            self._requests = requests
            self._defaults = self._defaults - {method}
        return handler

    def request_handler(self, method: str) -> RequestT | None:
        """The handler of ``method``, or ``None`` (the caller answers -32601)."""
        return self._requests.get(method)

    def is_default(self, method: str) -> bool:
        """Whether ``method`` is served by its built-in handler."""
        return method in self._defaults and method in self._requests

    def request_methods(self) -> list[str]:
        """The request methods served, sorted."""
        return sorted(self._requests)

    # -- notifications -------------------------------------------------------------------

    def add_notification(self, method: str, handler: NotificationT) -> None:
        """Add a handler of the notification ``method``, after those already there.

        The same function twice for one method raises :class:`DuplicateHandlerError`
        (it would run twice per notification).
        """
        _check_method(method)
        if not callable(handler):
            raise TypeError(f"the handler of {method!r} must be callable, not {handler!r}")
        with self._lock:
            current = self._notifications.get(method, ())
            if handler in current:
                raise DuplicateHandlerError(
                    f"{self.name}: {_describe(handler)} already handles {method!r}")
            self._notifications = {**self._notifications, method: (*current, handler)}

    def set_notification(self, method: str, handlers: tuple[NotificationT, ...]) -> None:
        """Replace every handler of ``method`` (none: remove them all)."""
        _check_method(method)
        with self._lock:
            notifications = dict(self._notifications)
            if handlers:
                notifications[method] = tuple(handlers)
            else:
                notifications.pop(method, None)
            self._notifications = notifications

    def remove_notification(self, method: str, handler: NotificationT | None = None) -> None:
        """Remove ``handler`` from ``method`` (or, with no handler, all of them);
        ``KeyError`` when it is not registered."""
        with self._lock:
            current = self._notifications.get(method, ())
            if handler is None:
                if not current:
                    raise KeyError(method)
                kept: tuple[NotificationT, ...] = ()
            else:
                if handler not in current:
                    raise KeyError(method)
                kept = tuple(h for h in current if h != handler)
            notifications = dict(self._notifications)
            if kept:
                notifications[method] = kept
            else:
                del notifications[method]
            self._notifications = notifications

    def notification_handlers(self, method: str) -> tuple[NotificationT, ...]:
        """The handlers of ``method`` in calling order (empty: nobody listens)."""
        return self._notifications.get(method, ())

    def notification_methods(self) -> list[str]:
        """The notification methods with at least one handler, sorted."""
        return sorted(self._notifications)

    def notify(self, method: str, *args: Any) -> bool:
        """Call every handler of ``method`` with ``args``, in order, on this thread.

        A handler that raises is logged and the next one still runs. Returns whether
        there was any handler (False: the notification is unknown here).
        """
        handlers = self._notifications.get(method, ())
        for handler in handlers:
            try:
                handler(*args)
            except Exception:
                logger.exception("%s: handler %s of %s failed", self.name,
                                 _describe(handler), method)
        return bool(handlers)

    def __repr__(self) -> str:
        return (f"<MethodRegistry {self.name}: {len(self._requests)} request methods, "
                f"{len(self._notifications)} notification methods>")


class RequestHandlers(MutableMapping[str, RequestT]):
    """A registry's request handlers as a dict (a server dispatcher's ``handlers``).

    Assigning replaces whatever was there, like the dict it stands in for; ``del``
    unregisters. Every operation goes through the registry, so it stays thread-safe.
    """

    def __init__(self, registry: MethodRegistry[RequestT, Any]) -> None:
        self._registry = registry

    def __getitem__(self, method: str) -> RequestT:
        handler = self._registry.request_handler(method)
        if handler is None:
            raise KeyError(method)
        return handler

    def get(self, method: str, default: Any = None) -> Any:
        handler = self._registry.request_handler(method)
        return default if handler is None else handler

    def __setitem__(self, method: str, handler: RequestT) -> None:
        self._registry.add_request(method, handler, replace=True)

    def __delitem__(self, method: str) -> None:
        self._registry.remove_request(method)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.request_methods())

    def __len__(self) -> int:
        return len(self._registry.request_methods())


class NotificationHandlers(MutableMapping[str, Callable[..., None]]):
    """A registry's notification handlers as a dict of one callable per method (a
    server dispatcher's ``notification_handlers``): reading a method gives a callable that
    runs all its handlers in order; assigning replaces them all with one."""

    def __init__(self, registry: MethodRegistry[Any, NotificationT]) -> None:
        self._registry = registry

    def __getitem__(self, method: str) -> Callable[..., None]:
        if not self._registry.notification_handlers(method):
            raise KeyError(method)

        def run_all(*args: Any) -> None:
            self._registry.notify(method, *args)

        return run_all

    def get(self, method: str, default: Any = None) -> Any:
        try:
            return self[method]
        except KeyError:
            return default

    def __setitem__(self, method: str, handler: Callable[..., None]) -> None:
        self._registry.set_notification(method, (handler,))  # type: ignore[arg-type]

    def __delitem__(self, method: str) -> None:
        self._registry.remove_notification(method)

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry.notification_methods())

    def __len__(self) -> int:
        return len(self._registry.notification_methods())


def _describe(handler: Any) -> str:
    return str(getattr(handler, "__qualname__", None) or repr(handler))


__all__ = ["DuplicateHandlerError", "MethodRegistry", "NotificationHandlers",
           "RequestHandlers"]
