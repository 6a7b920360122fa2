"""What a newcomer sees when they look at things (issue 28, "Display"): a client's repr
names its server and target, a tool's parameter types read as types, resource and prompt
results display like tool results, JSON in Markdown stays escaped, and the text progress
bar says which call it is and how far along.

Real servers throughout: in memory, a stdio subprocess and a real HTTP socket."""

from __future__ import annotations

import base64
import html
import io
import os
import pty
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Literal, Optional

import pytest

from mcpsync import (
    CallToolResult,
    Client,
    EmbeddedResource,
    HandlerContext,
    Server,
    TextContent,
    TextResourceContents,
)
from mcpsync.display.notebook import TextBar
from mcpsync.types import GetPromptResult, ReadResourceResult
from tests.helpers import WAIT
from tests.http.conftest import serve  # noqa: F401  (the fixture: a real HTTP server)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "server" / "fixture_server.py"
BREAKOUT = '</code></pre><script>alert("x")</script>'
ERAS = ["2025-11-25", "2026-07-28"]


def make_server() -> Server:
    server = Server("weather", version="1.0.0")

    @server.tool()
    def forecast(city: str, scale: Optional[float] = None,  # noqa: UP045  (the issue's case)
                 days: list[str] | None = None,
                 unit: Literal["c", "f"] = "c", tag: int | str = 0,
                 grid: list[list[int]] | None = None) -> str:
        """The weather."""
        return city

    @server.tool()
    def add(ctx: HandlerContext, n: int) -> str:
        for i in range(1, n + 1):
            ctx.progress(i, total=n, message=f"step {i}")
        return "done"

    @server.resource("note://text", mime_type="text/plain")
    def note() -> str:
        return "a <b>note</b>"

    @server.resource("note://big", mime_type="application/octet-stream")
    def big() -> bytes:
        return b"\x00" * (3 * 1024 * 1024)

    @server.resource("note://json", mime_type="application/json")
    def data() -> str:
        return '{"html": "' + BREAKOUT.replace('"', '\\"') + '"}'

    @server.prompt()
    def greet(name: str) -> str:
        """Say hello."""
        return f"Hello <i>{name}</i>"

    return server


@pytest.fixture(params=ERAS)
def client(request):
    with Client.memory(make_server(), protocol_version=request.param) as client:
        yield client


# -- 1. repr(client) -----------------------------------------------------------------------


def test_the_repr_of_a_stdio_client_names_the_server_its_command_and_era():
    command = [sys.executable, str(FIXTURE), "--api-key=sekrit"]
    client = Client.stdio(command, env={"PYTHONPATH": str(ROOT)}, timeout=WAIT)
    with client:
        shown = repr(client)
        assert shown.startswith("<Client 'fixture' 9.9.9 over stdio: ")
        assert f"{sys.executable} {FIXTURE}" in shown and shown.endswith(", 2025-11-25>")
        assert "sekrit" not in shown and "--api-key=[redacted]" in shown
    assert repr(client).endswith(", closed>")


@pytest.mark.parametrize("era", ERAS)
def test_the_repr_of_an_http_client_names_its_url_never_a_credential(serve, era):  # noqa: F811
    served = serve(make_server())
    secret_url = served.url.replace("http://", "http://user:hunter2@") + "?token=sekrit"
    with Client.http(secret_url, headers={"Authorization": "Bearer sekrit-header"},
                     protocol_version=era, timeout=WAIT) as client:
        shown = repr(client)
    assert shown.startswith("<Client 'weather' 1.0.0 over http: http://127.0.0.1:")
    assert f"{served.url}?token=[redacted], {era}>" in shown
    for secret in ("sekrit", "hunter2", "user:", "Authorization", "Bearer"):
        assert secret not in shown


def test_the_repr_of_a_memory_client_and_of_one_not_connected(client):
    assert repr(client) == f"<Client 'weather' 1.0.0 in memory, {client.protocol_version}>"
    # A half-built client (what a debugger shows inside __init__) still has a repr.
    assert repr(Client.__new__(Client)) == "<Client (closed) ?>"


def test_a_hostile_server_name_is_shown_escaped():
    server = Server("evil\x1b[2J\nname", version="1\x1b[31m")
    with Client.memory(server) as client:
        shown = repr(client)
    assert "\x1b" not in shown and "\n" not in shown
    assert shown.startswith("<Client 'evil\\x1b[2J\\nname' 1[31m in memory")


# -- 2. parameter types ------------------------------------------------------------------


def test_unions_arrays_and_enums_show_as_types(client):
    tool = next(t for t in client.list_tools() if t.name == "forecast")
    markdown = tool._repr_markdown_()
    for shown in ("city*: string", "scale: number \\| null", "days: array of string \\| null",
                  'unit: "c" \\| "f"', "tag: integer \\| string",
                  "grid: array of array of integer \\| null"):
        assert f"`{shown}`" in markdown, markdown
    assert ": any" not in markdown
    assert "<code>scale: number | null</code>" in tool._repr_html_()


def test_hostile_schemas_stay_bounded():
    from mcpsync.display.schema import type_name

    deep: dict = {"type": "string"}
    for _ in range(50):
        deep = {"anyOf": [deep, {"type": "null"}]}
    assert len(type_name(deep)) <= 80
    assert type_name({"enum": list(range(1000))}).endswith("| …")
    assert type_name({"type": ["number", "null"]}) == "number | null"
    assert type_name({"$ref": "#/$defs/Point"}) == "Point"
    assert type_name({"anyOf": [{}, {"type": "null"}]}) == "any"
    assert type_name("nonsense") == "any"


# -- 3. resource and prompt results -------------------------------------------------------


def test_a_read_resource_result_displays_its_text_escaped(client):
    result = client.read_resource("note://text")
    assert isinstance(result, ReadResourceResult)
    page = result._repr_html_()
    assert "<code>note://text</code> (text/plain)" in page
    assert "a &lt;b&gt;note&lt;/b&gt;" in page and "<b>note" not in page
    markdown = result._repr_markdown_()
    assert markdown.startswith("`note://text` (text/plain)")
    assert "a &lt;b&gt;note&lt;/b&gt;" in markdown


def test_a_blob_is_summarized_never_dumped(client):
    result = client.read_resource("note://big")
    size = 3 * 1024 * 1024
    for shown in (result._repr_html_(), result._repr_markdown_(), _pretty(result)):
        assert f"blob, application/octet-stream, {size} bytes" in shown
        assert len(shown) < 1000
    assert "note://big" in _pretty(result)


def test_a_get_prompt_result_displays_its_messages_by_role(client):
    result = client.get_prompt("greet", {"name": "<Ann>"})
    assert isinstance(result, GetPromptResult)
    page = result._repr_html_()
    assert "<b>user</b>" in page and "Hello &lt;i&gt;&amp;lt;Ann&amp;gt;" not in page
    assert "Hello &lt;i&gt;&lt;Ann&gt;&lt;/i&gt;" in page
    assert "<i>" not in page and "<Ann>" not in page
    markdown = result._repr_markdown_()
    assert "**user**" in markdown and "<Ann>" not in markdown
    assert _pretty(result).splitlines()[1:] == ["Say hello.", "user: Hello <i><Ann></i>"]


def test_a_tool_result_with_a_big_image_has_a_short_plain_text_display():
    data = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 2_000_000).decode()
    from mcpsync import ImageContent

    result = CallToolResult(content=[ImageContent(data=data, mime_type="image/png")])
    assert len(_pretty(result)) < 200 and "image/png" in _pretty(result)


def _pretty(value: object) -> str:
    """What IPython prints for ``value`` (its ``_repr_pretty_``), without IPython."""
    out: list[str] = []

    class Printer:
        def text(self, text: str) -> None:
            out.append(text)

    value._repr_pretty_(Printer(), False)  # type: ignore[attr-defined]
    return "".join(out)


# -- 4. JSON in Markdown is escaped --------------------------------------------------------


def test_json_in_markdown_cannot_break_out(client):
    """Structured content, a JSON resource and a JSON text block: in the Markdown string
    the server's ``</code>`` and ``<script>`` appear only escaped."""
    tool_result = CallToolResult(content=[TextContent(text='{"a": "' + BREAKOUT.replace(
        '"', "'") + '"}')], structured_content={"html": BREAKOUT})
    embedded = CallToolResult(content=[EmbeddedResource(resource=TextResourceContents(
        uri="note://x", text=BREAKOUT, mime_type="text/html"))])
    for markdown in (tool_result._repr_markdown_(), embedded._repr_markdown_(),
                     client.read_resource("note://json")._repr_markdown_()):
        assert "<script>" not in markdown and "</code></pre><script>" not in markdown
        assert "&lt;script&gt;" in markdown
        assert markdown.count("</code></pre>") == markdown.count("<pre><code")


def test_a_json_text_block_is_shown_as_indented_json():
    result = CallToolResult(content=[TextContent(text='{"a": 1, "b": [1, 2]}')])
    assert result._repr_markdown_() == (
        '<pre><code class="language-json">{\n  &quot;a&quot;: 1,\n  &quot;b&quot;: &#91;\n'
        "    1,\n    2\n  &#93;\n}</code></pre>")
    assert html.unescape(result._repr_markdown_()).count('"a": 1') == 1


# -- 5. the text progress bar -------------------------------------------------------------


def test_the_text_bar_names_the_tool_and_its_progress_off_a_terminal(client, monkeypatch):
    """Off a terminal (a pipe, a log file) each update is a whole line."""
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    assert client.call_tool("add", {"n": 5}, on_progress="bar").text == "done"
    assert stream.getvalue().splitlines() == [
        f"add: {i}/5 ({i * 20}%) step {i}" for i in range(1, 6)]


def test_the_text_bar_redraws_in_place_on_a_real_terminal():
    leader, follower = pty.openpty()
    try:
        with os.fdopen(follower, "w") as terminal:  # closes the follower
            bar = TextBar("add", terminal)
            for i in (1, 2):
                bar(type("P", (), {"progress": i, "total": 5, "message": "copying"})())
            bar.close()
        # One read may return only the first write; with the follower closed the
        # leader yields everything buffered and then EOF (EIO on Linux).
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        written = b"".join(chunks).decode()
    finally:
        os.close(leader)
    frames = written.replace("\r\n", "\n").split("\r")[1:]
    assert frames[0].startswith("add: [####----------------] 1/5 (20%) copying")
    assert frames[1].startswith("add: [########------------] 2/5 (40%) copying")
    assert written.endswith("\n")


def test_the_cli_tool_listing_names_the_same_types(tmp_path):
    """``mcpsync tools`` (a real subprocess) shares the formatter."""
    (tmp_path / "weather.py").write_text(textwrap.dedent("""\
        from typing import Optional
        from mcpsync import Server

        server = Server("weather")

        @server.tool()
        def forecast(city: str, scale: Optional[float] = None) -> str:
            return city
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mcpsync", "tools", "weather.py:server"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "forecast(city*: string, scale: number | null)"


# -- the plain repr ------------------------------------------------------------------------


def test_the_plain_repr_of_a_blob_does_not_carry_the_payload(client):
    """``repr()`` (a log line, an assertion message, ``print([result])``) of a result
    with a 3 MiB blob or image stays short and says what was left out."""
    from mcpsync import AudioContent, ImageContent

    blob = client.read_resource("note://big")
    data = base64.b64encode(b"\x00" * 3_000_000).decode()
    for value in (blob, ImageContent(data=data, mime_type="image/png"),
                  AudioContent(data=data, mime_type="audio/wav"),
                  CallToolResult(content=[ImageContent(data=data, mime_type="image/png")])):
        shown = repr(value)
        assert len(shown) < 400, shown[:400]
        assert "characters of base64" in shown
    assert repr(ImageContent(data="AAAA", mime_type="image/png")) == (
        "ImageContent(data='AAAA', mime_type='image/png', type='image', annotations=None, "
        "meta=None)")


def test_markdown_syntax_from_the_server_is_text_not_a_link_or_an_image():
    """``![](url)`` in a text block or a tool description would make a Markdown renderer
    fetch the URL (a tracking pixel); ``[text](url)`` would be a link. Both stay text, and a
    text block keeps its line breaks."""
    from mcpsync import Tool
    from mcpsync.display.notebook import ToolList

    lure = "![x](https://tracker.example/p.png) [click](https://evil.example)"
    result = CallToolResult(content=[TextContent(text=lure + "\nsecond line")])
    tools = ToolList([Tool(name="t", description=lure)])
    for markdown in (result._repr_markdown_(), tools._repr_markdown_()):
        assert "![x](" not in markdown and "[click](" not in markdown, markdown
    assert "\nsecond line" in result._repr_markdown_()


def test_the_plain_text_display_is_bounded():
    from mcpsync.display.text import MAX_PLAIN_CHARS

    block = TextContent(text="x" * 1_000_000)
    result = CallToolResult(content=[block] * 30)
    for value in (block, result):
        shown = _pretty(value)
        assert len(shown) < MAX_PLAIN_CHARS + 200
        assert shown.endswith("more characters)")
    assert _pretty(TextContent(text="hi")) == "TextContent:\nhi"


def test_the_repr_while_connecting_and_after_a_failed_connect():
    """During ``initialize`` (a subclass's ``capabilities()`` runs then) the repr says it
    is connecting and names the target, also for a server that then dies at ``initialize``
    (what a debugger or a traceback's locals show)."""
    from mcpsync.errors import ServerExitedError

    seen: list[str] = []

    class Watching(Client):
        def capabilities(self):  # type: ignore[no-untyped-def]
            seen.append(repr(self))
            return super().capabilities()

    raw = ROOT / "tests" / "stdio" / "raw_server.py"
    with Watching.stdio([sys.executable, str(FIXTURE)], env={"PYTHONPATH": str(ROOT)},
                        timeout=WAIT):
        pass
    assert seen[0] == f"<Client (connecting) over stdio: {sys.executable} {FIXTURE}>"
    seen.clear()
    with pytest.raises(ServerExitedError):
        Watching.stdio([sys.executable, str(raw), "--kill-on-initialize"], timeout=WAIT)
    assert seen[0].startswith("<Client (connecting) over stdio: ")
