"""The request path of a :class:`~mcpsync.Client`: how each API call is sent and answered.

Every typed method (``call_tool``, ``read_resource``, ``list_tools``…) and the raw
``request`` go through :func:`send_request`: the 2026-07-28 envelope, the response cache
(``ttlMs`` hints), the conversion of the result, and multi round-trip ``input_required``
results followed to the end. :meth:`Calls.all_pages` walks a paginated list. ``Calls``
never sees the ``Client``, which composes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..codec import from_wire
from ..display import progress_bar
from ..engine.connection import Connection
from ..errors import InvalidParamsError, MCPSyncError
from ..types import Progress
from .budget import budget, left
from .cache import ResponseCache, cache_key
from .mrtr import INPUT_MODES, resolve
from .negotiate import Negotiation

ProgressHandler = Callable[[Progress], None]
#: Answers one 2026-07-28 input request (method, params) with the host's handler.
InputAnswerer = Callable[[str, dict[str, Any]], dict[str, Any]]

logger = logging.getLogger("mcpsync.client")

_MAX_PAGES = 10_000


@dataclass
class CallOptions:
    """The defaults every call reads at the moment it is made (``Client.timeout`` and
    friends write them). Plain data."""

    #: Default deadline of a call, in seconds.
    timeout: float
    #: "auto": the host's handlers answer input requests; "manual": calls raise
    #: :class:`~mcpsync.client.mrtr.InputRequiredError`.
    input_mode: str
    #: Bound on 2026-07-28 multi round-trip rounds for one call.
    max_input_rounds: int


class Calls:
    """How one client sends a call and reads its answer. Thread-safe: it holds no state
    of its own beyond what it is given (the cache and the connection are thread-safe)."""

    def __init__(self, connection: Connection, negotiation: Negotiation,
                 cache: ResponseCache | None, options: CallOptions,
                 answer: InputAnswerer) -> None:
        self._connection = connection
        self._negotiation = negotiation
        self._cache = cache
        self._options = options
        self._answer = answer

    def send(self, method: str, params: dict[str, Any] | None, timeout: float | None,
             on_progress: ProgressHandler | str | None, input_mode: str | None,
             use_cache: bool, convert: Callable[[dict[str, Any]], Any]) -> Any:
        """One call as every API method makes it: the 2026-07-28 envelope added to
        ``_meta``, a fresh cached result returned without asking, the answer converted,
        and ``input_required`` results followed (answered by the host handlers in "auto"
        mode)."""
        options = self._options
        mode = options.input_mode if input_mode is None else input_mode
        if mode not in INPUT_MODES:
            raise ValueError(f"input_mode {mode!r} is not one of {INPUT_MODES}")
        if isinstance(on_progress, str):
            if on_progress != "bar":
                raise ValueError(f"on_progress {on_progress!r}: a callable or 'bar'")
            name = (params or {}).get("name")
            bar = progress_bar(name if isinstance(name, str) else method)
            try:
                # Every progress notification is handed over before the call returns, so
                # the bar is complete when it is closed.
                return self.send(method, params, timeout, bar, input_mode, use_cache, convert)
            finally:
                bar.close()
        progress = _progress_adapter(on_progress) if on_progress is not None else None
        params = dict(params or {})
        envelope = self._negotiation.envelope
        if envelope is not None:
            params["_meta"] = {**envelope, **(params.get("_meta") or {})}
        cache = self._cache if use_cache else None
        key = cache_key(method, params) if cache is not None else None
        generation = 0
        if cache is not None and key is not None:
            hit = cache.get(key)
            if hit is not None:
                return convert(hit)
            generation = cache.generation()
        deadline = budget(timeout, options.timeout, method)  # every round shares it
        connection = self._connection
        try:
            result = connection.request(method, params or None, timeout=timeout,
                                        on_progress=progress)
        except InvalidParamsError:
            if cache is not None and key is not None and key[1] is not None and (
                    method.endswith("/list")):
                cache.invalidate(method)  # an invalid cursor: every page is suspect
            raise
        if cache is not None and key is not None:
            cache.store(key, result, generation)  # never an MRTR retry: those are not keyed

        def send(retry: dict[str, Any], retry_timeout: float | None) -> dict[str, Any]:
            return connection.request(
                method, retry, timeout=timeout if retry_timeout is None else retry_timeout,
                on_progress=progress, follows_previous=True)

        return resolve(method, params, result, send=send,
                       answer=self._answer if mode == "auto" else None,
                       max_rounds=options.max_input_rounds, convert=convert,
                       deadline=deadline)

    def all_pages(self, method: str, key: str, timeout: float | None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``nextCursor`` (bounded, never in a
        loop). ``timeout`` bounds the whole listing, not each page."""
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        deadline = budget(timeout, self._options.timeout, method)  # one budget, all pages
        for _ in range(_MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else None
            result = self.send(method, params, left(deadline), None, None, True, raw)
            page = result.get(key)
            if not isinstance(page, list):
                raise MCPSyncError(f"{method}: result has no {key!r} list")
            items.extend(page)
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
            if cursor in seen:
                raise MCPSyncError(f"{method}: the server repeated cursor {cursor!r}")
            seen.add(cursor)
        raise MCPSyncError(f"{method}: more than {_MAX_PAGES} pages")


def raw(result: dict[str, Any]) -> dict[str, Any]:
    return result


def typed(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
    def convert(result: dict[str, Any]) -> Any:
        return from_wire(cls, result)

    return convert


def _progress_adapter(handler: ProgressHandler) -> Callable[[dict[str, Any]], None]:
    def adapt(params: dict[str, Any]) -> None:
        try:
            progress = from_wire(Progress, params)
        except ValueError:
            logger.warning("malformed progress notification: %r", params)
            return
        handler(progress)

    return adapt
