"""What every model SDK's tool helpers share: running a response's tool calls through a
client at once, and a tool result as text and images a model reads.

Why threads and not one after another: a model that asks for three tools wants three
answers, and a blocking tool (a web request, a database query) should not wait behind
another. The calls run on threads named ``mcpsync-llm-N``, at most ``max_parallel`` at
once, all joined before the results are returned; each call has its own deadline
(``timeout``, else the client's), so the whole batch ends by the longest one.

A call that fails is a result the model reads (``is_error``, the reason as text), not an
exception: an unknown tool, bad arguments, a server that went away or a deadline are all
things a model can react to. Ctrl-C is not: it propagates at once, and the calls still
running end by their own deadlines on their threads (which are not waited for).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import MCPSyncError
from ..threads.pool import WorkerPool
from ..types import CallToolResult, ImageContent, TextContent

logger = logging.getLogger("mcpsync.llm")

#: Tool calls of one response run at once, at most.
DEFAULT_MAX_PARALLEL = 8
#: Time given past the longest call's deadline before a call is reported as lost.
GRACE = 5.0


class ToolCaller(Protocol):
    """What the helpers need of a client: a :class:`~mcpsync.Client` or a hub
    (``Client.from_config``)."""

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
                  timeout: float | None = None) -> CallToolResult: ...


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model asked for: its id (echoed in the answer), the tool's name,
    and its arguments (or, when the model's arguments were not a JSON object, why)."""

    id: str
    name: str
    arguments: dict[str, Any]
    invalid: str | None = None


@dataclass(frozen=True)
class ToolOutcome:
    """A call and what came of it: the tool's result, or the error (as text) when it
    could not be made."""

    call: ToolCall
    result: CallToolResult | None
    error: str | None

    @property
    def is_error(self) -> bool:
        return self.error is not None or (self.result is not None and self.result.is_error)


def run_calls(client: ToolCaller, calls: Sequence[ToolCall], *, timeout: float | None,
              max_parallel: int = DEFAULT_MAX_PARALLEL) -> list[ToolOutcome]:
    """Run ``calls`` at once through ``client``; their outcomes in the calls' order."""
    if not calls:
        return []
    pool = WorkerPool(max(1, min(max_parallel, len(calls))), name="mcpsync-llm",
                      max_backlog=len(calls))
    futures: list[concurrent.futures.Future[ToolOutcome]] = []
    try:
        for call in calls:
            future: concurrent.futures.Future[ToolOutcome] = concurrent.futures.Future()
            futures.append(future)
            pool.submit(_job(client, call, timeout, future))
        longest = timeout if timeout is not None else getattr(client, "timeout", None)
        wait = None if longest is None else float(longest) + GRACE
        concurrent.futures.wait(futures, timeout=wait)
    finally:
        pool.shutdown(0.0 if any(not f.done() for f in futures) else GRACE)
    outcomes = []
    for call, future in zip(calls, futures, strict=True):
        if future.done():
            outcomes.append(future.result())
        else:
            outcomes.append(ToolOutcome(call, None, f"the call of {call.name!r} did not "
                                                    f"end by its deadline"))
    return outcomes


def _job(client: ToolCaller, call: ToolCall, timeout: float | None,
         future: concurrent.futures.Future[ToolOutcome]) -> Any:
    def run() -> None:
        future.set_result(_one(client, call, timeout))

    return run


def _one(client: ToolCaller, call: ToolCall, timeout: float | None) -> ToolOutcome:
    if call.invalid is not None:
        return ToolOutcome(call, None, call.invalid)
    try:
        return ToolOutcome(call, client.call_tool(call.name, call.arguments,
                                                  timeout=timeout), None)
    except (MCPSyncError, OSError, TimeoutError) as exc:
        return ToolOutcome(call, None, f"{type(exc).__name__}: {exc}")
    except Exception as exc:  # the model reads it; the log has the traceback
        logger.exception("calling the tool %r failed", call.name)
        return ToolOutcome(call, None, f"{type(exc).__name__}: {exc}")


def arguments_of(raw: Any, name: str) -> tuple[dict[str, Any], str | None]:
    """A model's tool arguments (a dict, or JSON text as OpenAI sends them) as a dict,
    or the reason they are not one."""
    if isinstance(raw, Mapping):
        return dict(raw), None
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return {}, f"the arguments of {name!r} are not JSON: {exc}"
        if isinstance(parsed, dict):
            return parsed, None
    return {}, f"the arguments of {name!r} are not a JSON object"


def result_text(outcome: ToolOutcome) -> str:
    """A result as one text: its text blocks, else its structured content as JSON; other
    blocks described (an image ``[image/png, N bytes of base64]``, a link by its URI)."""
    if outcome.error is not None:
        return outcome.error
    result = outcome.result
    assert result is not None
    parts = [block_text(block) for block in result.content]
    text = "\n".join(p for p in parts if p)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return text


def block_text(block: Any) -> str:
    """One content block as text, for a model that takes text only."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image {block.mime_type}, {len(block.data)} bytes of base64]"
    uri = getattr(block, "uri", None)
    resource = getattr(block, "resource", None)
    if resource is not None:
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[resource {resource.uri}]"
    if isinstance(uri, str):
        return f"[resource link {uri}]"
    return f"[{getattr(block, 'type', 'content')}]"


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj.name`` or ``obj[name]``: SDK objects and the dicts a caller may build alike."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def sampling_text(content: Any) -> str:
    """A sampling message's content (one block or a list) as text."""
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(block_text(b) for b in blocks)


__all__ = ["DEFAULT_MAX_PARALLEL", "GRACE", "ToolCall", "ToolCaller", "ToolOutcome",
           "arguments_of", "block_text", "field", "result_text", "run_calls",
           "sampling_text"]
