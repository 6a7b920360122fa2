"""The extensions a server uses (``server.use(extension)``), and what it asks of each.

An extension (the tasks extension, :class:`mcpsync.tasks.Tasks`, is one; a user's own can
be another) plugs into a server the way user code does: at :meth:`install
<mcpsync.server.server.Extension.install>` it registers its methods in the method registry
and wraps the ones it changes (``server.wrap_method``). Three things only the server can
do for it are asked here, through :class:`Plugged`: its capabilities go into every answer
that declares them, a mount hides its identifier from a mounted server, and it is closed
when the server stops. An extension whose results have a ``resultType`` of its own (the
tasks extension's ``"task"``) names it in an optional ``result_types`` attribute: a
2026-07-28 answer keeps those, and says ``"complete"`` otherwise. The server never
imports an extension: this protocol is the seam.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol


class Plugged(Protocol):
    """What a server asks of an extension once installed."""

    #: The identifier the extension is declared under in ``capabilities.extensions``
    #: (``None``: it declares none there). One extension per identifier per server.
    @property
    def identifier(self) -> str | None: ...

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        """Add what the extension declares to the ``capabilities`` a client speaking
        ``version`` is answered with (``initialize``, ``server/discover``)."""

    def close(self, timeout: float) -> bool:
        """Stop what the extension runs in this process (``server.stop()``); False if some
        of it was still running after ``timeout`` seconds."""


class Extensions:
    """The extensions one server uses, in the order they were installed. Thread-safe: the
    tuple is replaced, never changed, so answers read it without a lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.installed: tuple[Plugged, ...] = ()
        #: The ``resultType`` values the extensions in use declared (``result_types``).
        self.result_types: frozenset[str] = frozenset()

    def add(self, extension: Plugged) -> None:
        """Record ``extension``; ``ValueError`` when one of its identifier is in use."""
        with self._lock:
            if any(e is extension for e in self.installed):
                raise ValueError(f"{extension!r} is already in use on this server")
            if extension.identifier is not None and extension.identifier in self.identifiers:
                raise ValueError(f"an extension {extension.identifier!r} is already in use "
                                 "on this server")
            self.installed = (*self.installed, extension)
            self.result_types |= frozenset(getattr(extension, "result_types", ()))

    def remove(self, extension: Plugged) -> None:
        """Forget ``extension`` (one whose installation failed)."""
        with self._lock:
            self.installed = tuple(e for e in self.installed if e is not extension)
            self.result_types = frozenset(t for e in self.installed
                                          for t in getattr(e, "result_types", ()))

    @property
    def identifiers(self) -> frozenset[str]:
        """The identifiers of the extensions in use (what a mount hides)."""
        return frozenset(e.identifier for e in self.installed if e.identifier is not None)

    def add_capabilities(self, version: str, capabilities: dict[str, Any]) -> None:
        for extension in self.installed:
            extension.add_capabilities(version, capabilities)

    def close(self, timeout: float) -> bool:
        """Close each extension, last installed first; False if one of them was still
        running. One that raises does not keep the others open: the first exception is
        raised again once every one has been closed."""
        done = True
        failure: BaseException | None = None
        for extension in reversed(self.installed):
            try:
                done = extension.close(timeout) and done
            except BaseException as exc:
                failure = failure or exc
        if failure is not None:
            raise failure
        return done


__all__ = ["Extensions", "Plugged"]
