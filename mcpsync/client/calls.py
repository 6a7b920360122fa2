"""The request path of a :class:`~mcpsync.Client`: how each API call is sent and answered.

Every typed method (``call_tool``, ``read_resource``, ``list_tools``…) and the raw
``request`` go through :func:`send_request`: the 2026-07-28 envelope, the response cache
(``ttlMs`` hints), the conversion of the result, and multi round-trip ``input_required``
results followed to the end. :func:`all_pages` walks a paginated list. Apart from the API
in ``client.py`` so that the class there reads as what an application calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..codec import from_wire
from ..display import progress_bar
from ..errors import InvalidParamsError, MCPSyncError
from ..types import Progress
from .cache import cache_key
from .mrtr import INPUT_MODES, resolve

if TYPE_CHECKING:
    from .client import Client, ProgressHandler

logger = logging.getLogger("mcpsync.client")

_MAX_PAGES = 10_000


def send_request(client: Client, method: str, params: dict[str, Any] | None,
                 timeout: float | None, on_progress: ProgressHandler | str | None,
                 input_mode: str | None, use_cache: bool,
                 convert: Callable[[dict[str, Any]], Any]) -> Any:
    """One call as every API method makes it: the 2026-07-28 envelope added to
    ``_meta``, a fresh cached result returned without asking, the answer converted, and
    ``input_required`` results followed (answered by the host handlers in "auto" mode)."""
    mode = client.input_mode if input_mode is None else input_mode
    if mode not in INPUT_MODES:
        raise ValueError(f"input_mode {mode!r} is not one of {INPUT_MODES}")
    if isinstance(on_progress, str):
        if on_progress != "bar":
            raise ValueError(f"on_progress {on_progress!r}: a callable or 'bar'")
        name = (params or {}).get("name")
        bar = progress_bar(name if isinstance(name, str) else method)
        try:
            # Every progress notification is handed over before the call returns, so the
            # bar is complete when it is closed.
            return send_request(client, method, params, timeout, bar, input_mode, use_cache,
                                convert)
        finally:
            bar.close()
    progress = _progress_adapter(on_progress) if on_progress is not None else None
    params = dict(params or {})
    if client._envelope is not None:
        params["_meta"] = {**client._envelope, **(params.get("_meta") or {})}
    cache = client.cache if use_cache else None
    key = cache_key(method, params) if cache is not None else None
    generation = 0
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return convert(hit)
        generation = cache.generation()
    try:
        result = client._connection.request(method, params or None, timeout=timeout,
                                            on_progress=progress)
    except InvalidParamsError:
        if cache is not None and key is not None and key[1] is not None and (
                method.endswith("/list")):
            cache.invalidate(method)  # an invalid cursor: every page is suspect
        raise
    if cache is not None and key is not None:
        cache.store(key, result, generation)  # never an MRTR retry: those are not keyed

    def send(retry: dict[str, Any], retry_timeout: float | None) -> dict[str, Any]:
        return client._connection.request(
            method, retry, timeout=timeout if retry_timeout is None else retry_timeout,
            on_progress=progress)

    return resolve(method, params, result, send=send,
                   answer=client._answer_input if mode == "auto" else None,
                   max_rounds=client.max_input_rounds, convert=convert)


def all_pages(client: Client, method: str, key: str,
              timeout: float | None) -> list[dict[str, Any]]:
    """Every item of a paginated list, following ``nextCursor`` (bounded, never in a loop)."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(_MAX_PAGES):
        params = {"cursor": cursor} if cursor is not None else None
        result = client.request(method, params, timeout=timeout)
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


def _raw(result: dict[str, Any]) -> dict[str, Any]:
    return result


def _typed(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
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
