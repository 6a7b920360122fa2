"""The in-flight table of inbound requests, and the id a cancellation names.

Plain data structures: not thread-safe by themselves. The engine owns one table per
connection and guards it with its own lock, keeping every lock scope a dict operation.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from .jsonrpc import RequestId

T = TypeVar("T")


class InflightTable(Generic[T]):
    """Inbound requests being handled, keyed by id, each with a token (a cancel Event).

    ``begin`` refuses an id that is already in flight (the peer broke the uniqueness rule);
    ``cancel`` returns the token of a request still in flight so the caller can signal it;
    unknown or finished ids are ignored, as the spec asks.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[RequestId, T] = {}

    def begin(self, request_id: RequestId, token: T) -> bool:
        if request_id in self._items:
            return False
        self._items[request_id] = token
        return True

    def finish(self, request_id: RequestId) -> T | None:
        return self._items.pop(request_id, None)

    def get(self, request_id: RequestId) -> T | None:
        return self._items.get(request_id)

    def drain(self) -> list[T]:
        """Remove and return every token (the connection closed)."""
        tokens = list(self._items.values())
        self._items.clear()
        return tokens

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, request_id: Any) -> bool:
        return request_id in self._items


def cancelled_request_id(params: dict[str, Any] | None) -> RequestId | None:
    """The id named by a ``notifications/cancelled``; ``None`` when it names none validly."""
    if not params:
        return None
    value = params.get("requestId")
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return value
