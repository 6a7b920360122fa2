"""``async def`` tools, resources and prompts; handlers refused at registration; binary and
unencodable results. Each behaviour on memory, stdio and HTTP, in both eras."""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from mcpsync import (
    Audio,
    Client,
    HandlerContext,
    HostHandlers,
    Image,
    InvalidParamsError,
    MCPError,
    ProtocolOptions,
    RequestTimeoutError,
    Server,
)
from mcpsync.protocol.versions import MODERN_VERSIONS
from tests.helpers import WAIT
from tests.serving import RunningServer

from . import types_server
from .types_server import PNG, WAV

MODERN = MODERN_VERSIONS[0]
HANDSHAKE = "2025-11-25"
ROOT = Path(__file__).resolve().parents[2]
TRANSPORTS = ["memory", "stdio", "http"]
ERAS = [HANDSHAKE, MODERN]
UUID_1 = UUID(int=1)


@contextmanager
def connect(transport: str, version: str, **options: Any) -> Iterator[Client]:
    """A client of tests/server/types_server.py over ``transport`` at ``version``."""
    if transport == "memory":
        with Client.memory(types_server.server, protocol_version=version, timeout=WAIT,
                           **options) as client:
            yield client
    elif transport == "stdio":
        with Client.stdio([sys.executable, "-m", "tests.server.types_server"], cwd=ROOT,
                          protocol_version=version, timeout=WAIT, **options) as client:
            yield client
    else:
        app = types_server.server.wsgi_app(path="/mcp")
        with RunningServer(app, on_stop=app.close) as running, Client.http(
                running.base + "/mcp", protocol_version=version, timeout=WAIT,
                **options) as client:
            yield client


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_async_handlers_run_on_every_transport_and_era(transport: str, version: str) -> None:
    """The bug: an ``async def`` tool answered the text ``<coroutine object ...>``."""
    def elicit(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    with connect(transport, version, host=HostHandlers(elicitation=elicit)) as client:
        progress: list[Any] = []
        added = client.call_tool("add_later", {"a": 2, "b": 3}, on_progress=progress.append)
        assert added.structured_content == {"result": 5} and added.text == "5"
        assert added.is_error is False
        assert [p.progress for p in progress] == [1]
        assert client.call_tool("ask_name").text == "hello Ada"
        read = client.read_resource("types://async/x")
        assert read.contents[0].text == "resource x"
        assert client.read_resource("types://bytes").contents[0].blob == base64.b64encode(
            b"\x00\xff").decode()
        prompt = client.get_prompt("async_prompt", {"topic": "tea"})
        assert prompt.messages[0].content.text == "Talk about tea"


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_binary_and_unencodable_results(transport: str, version: str) -> None:
    with connect(transport, version) as client:
        bad = client.call_tool("anything")  # was an InternalError on the client
        assert bad.is_error is True
        # mcpsync's words on what failed; the encoder's text (which value) is the log's,
        # under the tool-error policy (protocol/tool_outcome.py)
        assert bad.text.endswith("the result cannot be encoded as JSON"), bad.text
        png = client.call_tool("raw_png").content
        assert [(b.type, b.mime_type, b.data) for b in png] == [
            ("image", "image/png", base64.b64encode(PNG).decode())]
        blob = client.call_tool("raw_blob").content[0]
        assert blob.type == "resource"
        assert base64.b64decode(blob.resource.blob) == b"\x00\x01binary"
        assert blob.resource.mime_type == "application/octet-stream"
        mixed = client.call_tool("pictures").content
        assert [(b.type, getattr(b, "mime_type", None)) for b in mixed] == [
            ("image", "image/png"), ("audio", "audio/wav"), ("text", None)]
        assert base64.b64decode(mixed[1].data) == WAV


@pytest.mark.parametrize("version", ERAS)
def test_cancelling_the_request_cancels_the_coroutine(version: str) -> None:
    server = Server("cancel", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="k")
    started, cancelled = threading.Event(), threading.Event()

    @server.tool()
    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    @server.tool()
    async def quick() -> str:
        return "quick"

    with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
        with pytest.raises(RequestTimeoutError):
            client.call_tool("slow", timeout=0.5)
        assert started.is_set()
        assert cancelled.wait(WAIT)
        assert client.call_tool("quick").text == "quick"


def test_async_handler_sees_its_thread_and_a_private_loop() -> None:
    """The coroutine runs on the request's thread (thread-bound state works) and each call
    gets its own loop, closed afterwards."""
    server = Server("where")
    seen: list[tuple[str, Any]] = []

    @server.tool()
    async def where(ctx: HandlerContext) -> str:
        seen.append((threading.current_thread().name, asyncio.get_running_loop()))
        return ctx.transport.kind

    with Client.memory(server, timeout=WAIT) as client:
        assert client.call_tool("where").text == "memory"
        assert client.call_tool("where").text == "memory"
    assert all(name != threading.current_thread().name for name, _ in seen)
    assert seen[0][1] is not seen[1][1] and seen[0][1].is_closed()


def _generator() -> Iterator[str]:
    yield "a"


async def _async_generator() -> Any:
    yield "a"


def _positional(a: int, /, b: int) -> int:
    return a + b


@pytest.mark.parametrize("fn", [_generator, _async_generator])
def test_generator_functions_are_refused_at_registration(fn: Any) -> None:
    server = Server("gen")
    with pytest.raises(TypeError, match=r"tool '_.*generator'.*generator function"):
        server.add_tool(fn)
    with pytest.raises(TypeError, match=r"resource 'r://x'.*generator function"):
        server.resource("r://x")(fn)
    with pytest.raises(TypeError, match=r"prompt 'p'.*generator function"):
        server.prompt("p")(fn)


def test_positional_only_parameters_are_refused_at_registration() -> None:
    server = Server("pos")
    with pytest.raises(TypeError, match=r"tool '_positional'.*'a' is positional-only"):
        server.add_tool(_positional)
    with pytest.raises(TypeError, match=r"resource 'r://\{a\}/\{b\}'.*'a' is positional-only"):
        server.resource("r://{a}/{b}")(_positional)
    with pytest.raises(TypeError, match=r"prompt '_positional'.*'a' is positional-only"):
        server.prompt()(_positional)


def test_bytes_return_has_no_output_schema_and_helpers_detect_types(tmp_path: Path) -> None:
    server = Server("b")

    @server.tool()
    def raw() -> bytes:
        return b"x"

    assert "outputSchema" not in server.tools.get("raw").description  # type: ignore[union-attr]
    picture = tmp_path / "chart.png"
    picture.write_bytes(PNG)
    assert Image(picture).mime_type == "image/png"
    assert Image(path=str(picture)).data == base64.b64encode(PNG).decode()
    jpeg_named = tmp_path / "noise.jpg"
    jpeg_named.write_bytes(b"no magic here")
    assert Image(jpeg_named).mime_type == "image/jpeg"  # from the extension
    assert Audio(WAV).mime_type == "audio/wav"
    assert Image(b"raw", mime_type="image/x-custom").mime_type == "image/x-custom"
    with pytest.raises(ValueError, match="cannot tell the image type"):
        Image(b"plain bytes")
    with pytest.raises(ValueError, match="cannot tell the audio type"):
        Audio(PNG)
    with pytest.raises(TypeError, match="exactly one"):
        Image()


EVERY = {"when": "2026-07-28T10:00:00Z", "day": "2026-07-28", "at": "10:11:12", "id": str(
    UUID_1), "path": "notes/a.txt", "price": 0.1, "data": "AAH/", "span": [3], "count": 2.0,
    "names": {"1": "one", "-2": "minus two"}, "event": {"when": "2026-01-01T00:00:00",
                                                        "id": str(UUID_1), "size": "large"},
    "options": {"mode": "fast"}}


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_every_type_in_and_out(transport: str, version: str) -> None:
    with connect(transport, version) as client:
        tools = {t.name: t for t in client.list_tools()}
        props = tools["every_type"].input_schema["properties"]
        assert props["when"] == {"type": "string", "format": "date-time"}
        assert props["data"] == {"type": "string", "contentEncoding": "base64"}
        result = client.call_tool("every_type", EVERY)
        assert result.is_error is False, result.text
        out = json.loads(result.text)
        assert out["types"] == {"when": "datetime", "day": "date", "at": "time", "id": "UUID",
                                "path": "PosixPath", "price": "Decimal", "data": "bytes",
                                "span": "Span", "count": "int", "names": "dict",
                                "event": "Event", "options": "dict"}
        assert out["key_types"] == ["int"]
        assert out["event_types"] == ["datetime", "UUID", "Size"]
        assert out["values"] == {
            "when": "2026-07-28T10:00:00+00:00", "day": "2026-07-28", "at": "10:11:12",
            "id": str(UUID_1), "path": "notes/a.txt", "price": "0.1", "data": "AAH/",
            "span": [3, -1], "count": 2, "names": {"1": "one", "-2": "minus two"},
            "event": {"when": "2026-01-01T00:00:00", "id": str(UUID_1), "size": "large"},
            "options": {"mode": "fast"}}
        bad = client.call_tool("every_type", {**EVERY, "count": 1.5, "names": {"x": "?"}})
        assert bad.is_error and "1.5 is not of type 'integer'" in bad.text
        assert "'x' does not match" in bad.text
        bad_date = client.call_tool("every_type", {**EVERY, "when": "yesterday"})
        assert bad_date.is_error and "'when'" in bad_date.text
        bad_b64 = client.call_tool("every_type", {**EVERY, "data": "not base64!"})
        assert bad_b64.is_error and "base64" in bad_b64.text
        event = client.call_tool("next_event", {"after": "2026-07-28T00:00:00+02:00"})
        assert event.structured_content == {"when": "2026-07-29T00:00:00+02:00",
                                            "id": str(UUID_1), "size": "large"}
        assert tools["next_event"].output_schema["properties"]["when"] == {
            "type": "string", "format": "date-time"}
        assert client.read_resource("types://day/2026-07-28").contents[0].text == "Tuesday"
        with pytest.raises(InvalidParamsError, match="'day'"):
            client.read_resource("types://day/someday")


@pytest.mark.parametrize("version", ERAS)
def test_async_tool_runs_as_a_task_and_a_task_cancel_cancels_it(version: str) -> None:
    """Tasks run the tool on a worker with a task context (a plain threading.Event for
    ``cancelled``): the coroutine still completes, and cancelling the task cancels it."""
    server = Server("tasks", protocol=ProtocolOptions(modern_versions=MODERN_VERSIONS),
                    request_state_key="k")
    started, cancelled = threading.Event(), threading.Event()

    @server.tool(task="optional")
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n

    @server.tool(task="optional")
    async def forever() -> str:
        started.set()
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    with Client.memory(server, protocol_version=version, timeout=WAIT) as client:
        result = client.start_task("double", {"n": 21}).result(timeout=WAIT)
        assert result.structured_content == {"result": 42} and result.is_error is False
        handle = client.start_task("forever")
        assert started.wait(WAIT)
        handle.cancel(timeout=WAIT)
        assert cancelled.wait(WAIT)


@pytest.mark.parametrize("version", ERAS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_resources_encode_these_types_and_completers_may_be_async(transport: str,
                                                                  version: str) -> None:
    with connect(transport, version) as client:
        dated = client.read_resource("types://dated").contents[0]
        assert json.loads(dated.text) == {"at": "2026-07-28", "id": str(UUID_1)}
        with pytest.raises(MCPError, match="types://opaque cannot be encoded as JSON") as err:
            client.read_resource("types://opaque")
        assert err.value.code == -32603
        completion = client.complete("types://day/{day}", "day", "2026-07-2")
        assert completion.values == ["2026-07-28", "2026-07-29"]
        raw = client.call_tool("raw_structured")
        assert raw.structured_content == {"result": "AAE="}
