"""Drive an MCP server with the official Python SDK (mcp 2.3.0) and report what it saw.

The server is a stdio command (``-- CMD ARGS...``) or a Streamable HTTP endpoint
(``--url URL``, the SDK's own ``streamable_http_client``).

Run this with the official SDK's venv python (see ``peers.official_python()``), never with
mcpsync's interpreter: it imports only ``mcp`` and the standard library.

Usage::

    official_client.py [OPTIONS] SCENARIO [SCENARIO_ARGS...] -- CMD [ARGS...]
    official_client.py [OPTIONS] --url URL SCENARIO [SCENARIO_ARGS...]

Scenarios::

    list-tools                      every tool (all pages)
    call NAME JSON_ARGS             one tools/call
    concurrent NAME JSON_ARGS N     N tools/call issued at once in the one session
    progress NAME JSON_ARGS         tools/call with a progress callback
    list-resources                  resources/list + resources/templates/list (all pages)
    read URI                        resources/read
    list-prompts                    prompts/list (all pages)
    get-prompt NAME JSON_ARGS       prompts/get

Options::

    --mode legacy|modern|auto   legacy (default): initialize handshake at 2025-11-25;
                                modern: adopt 2026-07-28 directly, no probe;
                                auto: probe server/discover, fall back to initialize
    --url URL                   connect over Streamable HTTP to URL instead of spawning CMD
    --timeout SECONDS           per-request read timeout (default 30)
    --list-first                send one tools/list before the scenario (``concurrent`` always does)
    --sampling-text TEXT        answer sampling/createMessage with this text (declares sampling)
    --elicit-json JSON          answer elicitation/create with action=accept and this content
                                (declares elicitation); the string "decline" or "cancel" instead
                                answers with that action
    --roots URI[,URI...]        answer roots/list with these file:// URIs (declares roots)

Prints exactly one JSON object on stdout.  Exit status 0 when the scenario ran (a tool result
with ``isError: true`` is still a successful observation), 1 when the client raised, 2 on bad
usage.  The server's stderr passes through to ours.  The server inherits this process's full
environment (the SDK alone would pass only a safe subset such as PATH and HOME).
Over HTTP, a session the server minted is ended with DELETE when the client closes.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import time
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp
import mcp.types as types
from mcp.client.context import ClientRequestContext
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_MODERN_VERSION

if sys.version_info >= (3, 11):
    from builtins import BaseExceptionGroup as _ExceptionGroup
else:  # anyio depends on the backport below 3.11
    from exceptiongroup import (  # type: ignore[import-not-found, unused-ignore]
        BaseExceptionGroup as _ExceptionGroup,
    )

CLIENT_INFO = types.Implementation(
    name="mcpsync-interop-official-client", version=importlib.metadata.version("mcp")
)


def dump(model: Any) -> Any:
    """Wire-shaped JSON-able form of a pydantic model (camelCase aliases, no None fields)."""
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model


class Observer:
    """Collects everything the server sent besides responses: notifications and requests."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.notifications: list[dict[str, Any]] = []
        self.logs: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.wire: list[dict[str, Any]] = []

    def record(self, direction: str, item: Any) -> None:
        """Log one transport item (a SessionMessage, or an Exception from the read side)."""
        if isinstance(item, Exception):
            self.wire.append({"t": self.now(), "dir": direction, "exception": repr(item)})
            return
        msg = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
        self.wire.append({"t": self.now(), "dir": direction, "msg": msg})

    def raw_responses(self, method: str) -> list[dict[str, Any]]:
        """Raw ``result`` (or ``{"error": ...}``) of each answered ``method`` request, in order."""
        ids = [
            w["msg"]["id"]
            for w in self.wire
            if w["dir"] == "send" and w.get("msg", {}).get("method") == method
        ]
        answers: dict[Any, dict[str, Any]] = {}
        for w in self.wire:
            msg = w.get("msg", {})
            if w["dir"] == "recv" and "method" not in msg and msg.get("id") in ids:
                answers[msg["id"]] = (
                    msg["result"] if "result" in msg else {"error": msg.get("error")}
                )
        return [answers[i] for i in ids if i in answers]

    def last_raw(self, method: str) -> dict[str, Any] | None:
        """Raw result of the last answered ``method`` request, or None."""
        found = self.raw_responses(method)
        return found[-1] if found else None

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 4)

    async def message_handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.notifications.append({"t": self.now(), "exception": repr(message)})
        else:
            self.notifications.append({"t": self.now(), "message": dump(message)})

    async def logging_callback(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append({"t": self.now(), "params": dump(params)})


@asynccontextmanager
async def tapped(transport: Any, obs: Observer) -> AsyncIterator[tuple[Any, Any]]:
    """A transport (``stdio_client(...)``, ``streamable_http_client(...)``) with every
    JSON-RPC envelope, both ways, recorded in ``obs.wire``.

    The envelopes' ``params``/``result``/``error`` are plain dicts straight off the wire (the
    typed result models drop unknown fields and fill in defaults; these do neither).
    """
    async with transport as (read, write):
        to_client, from_server = anyio.create_memory_object_stream[Any](0)
        to_server, from_client = anyio.create_memory_object_stream[Any](0)

        async def inbound() -> None:
            async with to_client:
                async for item in read:
                    obs.record("recv", item)
                    await to_client.send(item)

        async def outbound() -> None:
            async with from_client:
                async for item in from_client:
                    obs.record("send", item)
                    await write.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(inbound)
            tg.start_soon(outbound)
            try:
                yield from_server, to_server
            finally:
                tg.cancel_scope.cancel()


def build_callbacks(args: argparse.Namespace, obs: Observer) -> dict[str, Any]:
    """Client keyword arguments for the canned sampling / elicitation / roots answers asked for."""
    kwargs: dict[str, Any] = {}
    if args.sampling_text is not None:
        text = args.sampling_text

        async def sampling(
            ctx: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> Any:
            obs.server_requests.append(
                {"t": obs.now(), "method": "sampling/createMessage", "params": dump(params)}
            )
            return types.CreateMessageResult(
                role="assistant",
                content=types.TextContent(type="text", text=text),
                model="official-client-canned",
                stop_reason="endTurn",
            )

        kwargs["sampling_callback"] = sampling
    if args.elicit_json is not None:
        spec = args.elicit_json

        async def elicitation(ctx: ClientRequestContext, params: Any) -> Any:
            obs.server_requests.append(
                {"t": obs.now(), "method": "elicitation/create", "params": dump(params)}
            )
            if spec in ("decline", "cancel"):
                return types.ElicitResult(action=spec)
            return types.ElicitResult(action="accept", content=json.loads(spec))

        kwargs["elicitation_callback"] = elicitation
    if args.roots is not None:
        uris = [u for u in args.roots.split(",") if u]

        async def list_roots(ctx: ClientRequestContext) -> Any:
            obs.server_requests.append({"t": obs.now(), "method": "roots/list"})
            return types.ListRootsResult(
                roots=[types.Root(uri=u, name=os.path.basename(u)) for u in uris]
            )

        kwargs["list_roots_callback"] = list_roots
    return kwargs


async def all_pages(fetch: Any, key: str) -> list[Any]:
    """Walk a paginated list; ``fetch(cursor)`` gives a result with ``key`` and ``next_cursor``."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await fetch(cursor)
        items.extend(dump(x) for x in getattr(page, key))
        cursor = page.next_cursor
        if cursor is None:
            break
    return items


async def scenario(
    client: mcp.Client, name: str, sargs: list[str], obs: Observer
) -> dict[str, Any]:
    """Run one scenario against a connected client and return its scenario-specific fields."""

    if name == "list-tools":
        # cache_mode="bypass": always hit the wire (the modern response cache could serve a hit).
        tools = await all_pages(lambda c: client.list_tools(cursor=c, cache_mode="bypass"), "tools")
        return {"tools": tools}
    if name == "call":
        result = await client.call_tool(sargs[0], json.loads(sargs[1]))
        return {"result": dump(result), "rawResult": obs.last_raw("tools/call")}
    if name == "concurrent":
        tool, arguments, n = sargs[0], json.loads(sargs[1]), int(sargs[2])

        async def one(i: int) -> dict[str, Any]:
            start = obs.now()
            try:
                result = await client.call_tool(tool, arguments)
                return {"i": i, "start": start, "end": obs.now(), "result": dump(result)}
            except Exception as e:  # report per call, keep the others
                return {"i": i, "start": start, "end": obs.now(), "error": error_dict(e)}

        t = time.monotonic()
        results = await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.monotonic() - t
        return {"n": n, "wallSeconds": round(wall, 4), "results": results}
    if name == "progress":
        seen: list[dict[str, Any]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            item: dict[str, Any] = {"t": obs.now(), "progress": progress}
            if total is not None:
                item["total"] = total
            if message is not None:
                item["message"] = message
            seen.append(item)

        result = await client.call_tool(
            sargs[0], json.loads(sargs[1]), progress_callback=on_progress
        )
        return {
            "progress": seen,
            "resultAt": obs.now(),
            "result": dump(result),
            "rawResult": obs.last_raw("tools/call"),
        }
    if name == "list-resources":
        resources = await all_pages(
            lambda c: client.list_resources(cursor=c, cache_mode="bypass"), "resources"
        )
        templates = await all_pages(
            lambda c: client.list_resource_templates(cursor=c, cache_mode="bypass"),
            "resource_templates",
        )
        return {"resources": resources, "resourceTemplates": templates}
    if name == "read":
        read_result = await client.read_resource(sargs[0], cache_mode="bypass")
        return {"result": dump(read_result), "rawResult": obs.last_raw("resources/read")}
    if name == "list-prompts":
        return {
            "prompts": await all_pages(
                lambda c: client.list_prompts(cursor=c, cache_mode="bypass"), "prompts"
            )
        }
    if name == "get-prompt":
        prompt_result = await client.get_prompt(sargs[0], json.loads(sargs[1]))
        return {"result": dump(prompt_result), "rawResult": obs.last_raw("prompts/get")}
    raise UsageError(f"unknown scenario {name!r}")


class UsageError(Exception):
    """Bad command line."""


SCENARIOS: dict[str, str] = {
    "list-tools": "",
    "call": "NAME JSON_ARGS",
    "concurrent": "NAME JSON_ARGS N",
    "progress": "NAME JSON_ARGS",
    "list-resources": "",
    "read": "URI",
    "list-prompts": "",
    "get-prompt": "NAME JSON_ARGS",
}
"""Scenario name -> its positional arguments (checked before the server is spawned)."""


def check_scenario(name: str, sargs: list[str]) -> None:
    """Raise UsageError unless ``sargs`` fit scenario ``name``."""
    if name not in SCENARIOS:
        raise UsageError(f"unknown scenario {name!r}; one of {', '.join(SCENARIOS)}")
    usage = SCENARIOS[name].split()
    if len(sargs) != len(usage):
        raise UsageError(f"{name}: expected {SCENARIOS[name] or 'no arguments'}")
    for label, value in zip(usage, sargs, strict=True):
        if label == "JSON_ARGS":
            try:
                if not isinstance(json.loads(value), dict):
                    raise ValueError
            except ValueError:
                raise UsageError(
                    f"{name}: JSON_ARGS must be a JSON object, got {value!r}"
                ) from None
        if label == "N" and not (value.isdigit() and int(value) > 0):
            raise UsageError(f"{name}: N must be a positive integer, got {value!r}")


def leaves(e: BaseException) -> list[BaseException]:
    """The non-group exceptions inside ``e`` (``e`` itself when it is not a group)."""
    if isinstance(e, _ExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in leaves(sub)]
    return [e]


def error_dict(e: BaseException) -> dict[str, Any]:
    """JSON form of an exception; MCP errors keep their JSON-RPC code/message/data.

    anyio wraps errors in (nested) exception groups; a group with a single leaf is reported as
    that leaf, so ``error.code`` is directly the JSON-RPC code.
    """
    found = leaves(e)
    if len(found) == 1:
        e = found[0]
    out: dict[str, Any] = {"type": type(e).__name__, "message": str(e)}
    if isinstance(e, mcp.MCPError):
        out["code"] = e.error.code
        out["message"] = e.error.message
        if e.error.data is not None:
            out["data"] = e.error.data
    if isinstance(e, _ExceptionGroup):
        out["exceptions"] = [error_dict(x) for x in found]
    return out


class _Parser(argparse.ArgumentParser):
    """ArgumentParser that raises UsageError, so bad usage still prints one JSON object."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Split ``OPTIONS SCENARIO ARGS [-- CMD...]`` into options (with scenario args) and CMD
    (empty with ``--url``)."""
    if "--" in argv:
        cut = argv.index("--")
        head, cmd = argv[:cut], argv[cut + 1 :]
        if not cmd:
            raise UsageError("empty server command after '--'")
    else:
        head, cmd = argv, []
    p = _Parser(prog="official_client.py", add_help=True)
    p.add_argument("--url")
    p.add_argument("--mode", choices=["legacy", "modern", "auto"], default="legacy")
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--list-first", action="store_true")
    p.add_argument("--sampling-text")
    p.add_argument("--elicit-json")
    p.add_argument("--roots")
    p.add_argument("scenario")
    p.add_argument("sargs", nargs="*")
    # parse_intermixed_args: scenario args such as '{"a": -1}' or N stay positional.
    args = p.parse_intermixed_args(head)
    if args.url is not None and cmd:
        raise UsageError("give either --url URL or '-- CMD ARGS...', not both")
    if args.url is None and not cmd:
        raise UsageError("missing '-- CMD ARGS...' (or --url URL)")
    if args.url is not None and not args.url.startswith(("http://", "https://")):
        raise UsageError(f"--url must be an http:// or https:// URL, got {args.url!r}")
    check_scenario(args.scenario, args.sargs)
    return args, cmd


async def run(args: argparse.Namespace, cmd: list[str], report: dict[str, Any]) -> None:
    """Connect and run the scenario, filling ``report`` as it goes (raises on client failure)."""
    t0 = time.monotonic()
    obs = Observer(t0)
    mode = {"legacy": "legacy", "auto": "auto", "modern": LATEST_MODERN_VERSION}[args.mode]
    if args.url is not None:
        transport: Any = streamable_http_client(args.url)
        report["transport"] = "streamable-http"
    else:
        params = mcp.StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        transport = stdio_client(params)
        report["transport"] = "stdio"
    report.update({"scenario": args.scenario, "mode": args.mode})
    try:
        async with mcp.Client(
            tapped(transport, obs),
            mode=mode,
            read_timeout_seconds=args.timeout,
            client_info=CLIENT_INFO,
            message_handler=obs.message_handler,
            logging_callback=obs.logging_callback,
            **build_callbacks(args, obs),
        ) as client:
            report["protocolVersion"] = client.protocol_version
            report["serverInfo"] = dump(client.server_info)
            report["serverCapabilities"] = dump(client.server_capabilities)
            if client.instructions is not None:
                report["instructions"] = client.instructions
            if args.list_first or args.scenario == "concurrent":
                # The SDK lists tools on its own after the first call of an unlisted tool (to get
                # its outputSchema); listing up front keeps that out of the scenario's traffic.
                await client.list_tools(cache_mode="bypass")
            report.update(await scenario(client, args.scenario, args.sargs, obs))
    finally:
        report["notifications"] = obs.notifications
        report["logs"] = obs.logs
        report["serverRequests"] = obs.server_requests
        report["wire"] = obs.wire
        report["elapsedSeconds"] = round(time.monotonic() - t0, 4)


def find_usage_error(e: BaseException) -> UsageError | None:
    """The UsageError in ``e`` or, when anyio wrapped it, in its exception group."""
    return next((leaf for leaf in leaves(e) if isinstance(leaf, UsageError)), None)


def main(argv: list[str]) -> int:
    try:
        args, cmd = parse(argv)
    except UsageError as e:
        print(json.dumps({"ok": False, "error": {"type": "UsageError", "message": str(e)}}))
        print(__doc__, file=sys.stderr)
        return 2
    report: dict[str, Any] = {"ok": False}
    try:
        asyncio.run(run(args, cmd, report))
        report["ok"] = True
        code = 0
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # report anything, including exception groups from anyio
        if (usage := find_usage_error(e)) is not None:
            report["error"] = {"type": "UsageError", "message": str(usage)}
            code = 2
        else:
            traceback.print_exc(file=sys.stderr)
            report["error"] = error_dict(e)
            code = 1
    print(json.dumps(report))
    return code


if __name__ == "__main__":
    import otel_file  # OTEL_SPANS_FILE: trace into that file (the telemetry interop tests)

    otel_file.configure()
    sys.exit(main(sys.argv[1:]))
