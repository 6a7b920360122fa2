"""The method handlers of a proxy: each forwards its request to the remote server.

A forwarded request keeps what the caller sent, minus what belongs to the hop
(``_meta``'s protocol keys and progress token, a 2026-07-28 retry's ``inputResponses`` and
``requestState``, a task request); the remote's result comes back as it was, minus what
belongs to the other hop (``resultType``, caching hints, the remote's ``serverInfo``),
which the proxy's own serving adds again for its caller's era. Cursors pass through
untouched: a page of the proxy's list is a page of the remote's.

What the remote says comes back as it said it: an error keeps its code, message and data
(a -32602 stays -32602), a tool result with ``isError`` is a result. Failures of the hop
itself are -32603 saying what failed (unreachable, dead, silent past the timeout), never
where the remote is: its command line or URL is logged, for the operator.
Progress is passed on to the caller (when it asked for progress); cancelling the request
cancels the remote call. A call the remote runs as a task is followed to its end here, and
answered with its result (the remote's task ids are the proxy's client's, shared by every
caller); so the proxy lists no tool's task support.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..client.client import Client
from ..client.tasks import TaskHandle
from ..client.tracking import CallTracker
from ..codec import to_wire
from ..dispatch.context import HandlerContext
from ..dispatch.questions import InputRequired
from ..dispatch.registry import KNOWS_NAME, SERVES_EVERY_NAME
from ..engine.requests import CancelEvent
from ..errors import (
    INTERNAL_ERROR,
    MCPError,
    MCPSyncError,
    RequestCancelledError,
    RequestTimeoutError,
    TransportError,
)
from ..protocol.deadline import budget_text
from ..protocol.methods import VIEWS
from ..protocol.versions import META_SERVER_INFO
from ..types import Progress
from .call_table import CallTable, ForwardedCall
from .link import RemoteLink
from .param_headers import lister

logger = logging.getLogger("mcpsync.proxy")

if TYPE_CHECKING:
    from .host import Handler, ProxyHost

#: The methods a proxy forwards (the method table's forwarded rows).
FORWARDED: Final = VIEWS.forwarded
#: Request params that belong to the hop from the caller to the proxy.
_HOP_PARAMS: Final = frozenset({"_meta", "inputResponses", "requestState", "task"})
#: Result fields that belong to the hop from the proxy to the remote.
_HOP_RESULT: Final = frozenset({"resultType", "ttlMs", "cacheScope"})
_PROTOCOL_META: Final = "io.modelcontextprotocol/"
#: The longest cancelling a remote task (the caller cancelled its call) may take.
CANCEL_WAIT: Final = 5.0


def install(server: ProxyHost, link: RemoteLink, calls: CallTable, tracker: CallTracker) -> None:
    """Make ``server`` forward :data:`FORWARDED` through ``link``: installed as built-ins,
    so that a ``method_handler`` of the same name still replaces one (to filter, say)."""
    for method in FORWARDED:
        server.methods.set_default(method, _forwarder(method, link, calls, tracker))


def _forwarder(method: str, link: RemoteLink, calls: CallTable,
               tracker: CallTracker) -> Handler:
    def forward(ctx: HandlerContext, params: dict[str, Any]) -> dict[str, Any]:
        return _forward(method, ctx, params, link, calls, tracker)

    # Every name is the remote's to judge: a server that mounts the proxy routes them all.
    setattr(forward, SERVES_EVERY_NAME, True)
    if method == "tools/call":  # telemetry names a tool the remote listed
        setattr(forward, KNOWS_NAME, link.param_headers.knows)
    return forward


def _forward(method: str, ctx: HandlerContext, params: dict[str, Any], link: RemoteLink,
             calls: CallTable, tracker: CallTracker) -> dict[str, Any]:
    ctx.check_cancelled()
    client = link.client()
    if method == "tools/call":  # the caller's Mcp-Param-* headers, as for own tools
        list_all = lister(
            lambda page, wait: client.request("tools/list", page, timeout=wait, cache=False),
            client.timeout)
        link.refuse_hidden(ctx, params.get("name"), list_all, client.timeout)
        link.param_headers.check(ctx, params, list_all, client.timeout)
    with tracker.tracking(client) as tracked:
        call = ForwardedCall(ctx, tracked)
        cancelled = ctx.cancelled
        if isinstance(cancelled, CancelEvent):
            cancelled.add_callback(lambda: tracked.cancel("cancelled by the proxy's client"))
        with calls.entered(call):
            try:
                # A progress callback always: the client then hands over every notification
                # that came before the answer (a log line too) before the call returns.
                result = client.request(method, _outbound(params),
                                        on_progress=_progress_to(ctx), cache=False)
                if method == "tools/call" and result.get("resultType") == "task":
                    result = _followed(client, result, ctx)
            except RequestTimeoutError as exc:
                logger.warning("proxy of %s: %s: %s", link.target, method, exc)
                raise MCPError(f"the proxied server did not answer {method} in time ("
                               f"{budget_text(client.timeout)})", code=INTERNAL_ERROR) from None
            except RequestCancelledError:
                _after_cancel(call, method, link)
                raise
            except MCPError:
                raise  # the remote's own error: its code, message and data
            except TransportError as exc:
                link.lost(client)
                logger.warning("proxy of %s: %s: unreachable: %s", link.target, method, exc)
                raise MCPError("the proxied server is unreachable",
                               code=INTERNAL_ERROR) from None
            except MCPSyncError as exc:  # a protocol breach (e.g. endless input rounds)
                logger.warning("proxy of %s: %s: %s", link.target, method, exc)
                raise MCPError(f"the proxied server failed to answer {method}: "
                               f"{link.scrub(str(exc))}", code=INTERNAL_ERROR) from None
    if method == "tools/list":
        link.param_headers.record(result.get("tools"))
        result = link.shown(ctx, _without_task_support(result))
    return _inbound(result)


def _followed(client: Client, created: dict[str, Any], ctx: HandlerContext) -> dict[str, Any]:
    """The remote ran the call as a task: follow it to its end, within the proxy client's
    timeout, and answer with its result. The proxy's callers see plain calls: the remote's
    task ids are the proxy client's (every caller shares that client), so handing them out
    would let one caller reach another's task. Cancelling the call cancels the task."""
    handle = client.task(str(created.get("taskId")), timeout=client.timeout)
    cancelled = ctx.cancelled
    if isinstance(cancelled, CancelEvent):
        cancelled.add_callback(lambda: _cancel_quietly(handle))
    return dict(to_wire(handle.result(timeout=client.timeout)))


def _cancel_quietly(handle: TaskHandle) -> None:
    try:
        handle.cancel(timeout=CANCEL_WAIT)
    except MCPSyncError as exc:  # gone already, or the remote with it
        logger.info("proxy: cancelling a remote task failed: %s", exc)


def _without_task_support(result: dict[str, Any]) -> dict[str, Any]:
    """A remote ``tools/list`` page as the proxy lists it: without each tool's
    ``execution`` (its task support), since the proxy runs such calls to their end."""
    tools = result.get("tools")
    if not isinstance(tools, list) or not any(
            isinstance(t, dict) and "execution" in t for t in tools):
        return result
    return {**result, "tools": [{k: v for k, v in t.items() if k != "execution"}
                                if isinstance(t, dict) else t for t in tools]}


def _after_cancel(call: ForwardedCall, method: str, link: RemoteLink) -> None:
    """A cancelled remote call: a question for the caller (2026-07-28), the caller's own
    cancel (no answer: re-raised), or the remote's doing."""
    if call.question is not None:
        raise InputRequired(call.question) from None
    if call.ctx.cancelled.is_set():
        return
    logger.warning("proxy of %s: the remote cancelled %s", link.target, method)
    raise MCPError(f"the proxied server cancelled {method}", code=INTERNAL_ERROR) from None


def _progress_to(ctx: HandlerContext) -> Callable[[Progress], None]:
    if ctx.progress_token is None:
        return lambda progress: None

    def forward(progress: Progress) -> None:
        try:
            ctx.progress(progress.progress, progress.total, progress.message)
        except MCPSyncError:
            pass  # the request ended meanwhile: the spec forbids progress after it

    return forward


def _outbound(params: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in params.items() if key not in _HOP_PARAMS}
    meta = params.get("_meta")
    if isinstance(meta, dict):
        kept = {key: value for key, value in meta.items()
                if key != "progressToken" and not key.startswith(_PROTOCOL_META)}
        if kept:
            out["_meta"] = kept
    return out


def _inbound(result: dict[str, Any]) -> dict[str, Any]:
    out = {key: value for key, value in result.items() if key not in _HOP_RESULT}
    meta = out.get("_meta")
    if isinstance(meta, dict) and META_SERVER_INFO in meta:
        meta = {key: value for key, value in meta.items() if key != META_SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out
