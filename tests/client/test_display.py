"""Notebook display (``_repr_html_``, ``_repr_markdown_``, ``_repr_png_``) of what a client
gets back, and ``on_progress="bar"``. Server strings are untrusted: they must come out
escaped."""

from __future__ import annotations

import base64
import html
import struct
import sys
import zlib

import pytest

from mcpsync import (
    CallToolResult,
    Client,
    HandlerContext,
    ImageContent,
    MCPError,
    Server,
    ToolError,
)
from mcpsync.display.notebook import TextBar, ToolList, progress_bar
from tests.helpers import require_module
from tests.server.fixture_server import server as fixture_server

EVIL = '<script>alert("x")</script> & <img src=x onerror=alert(1)>'


def tiny_png() -> bytes:
    """A real 1x1 red PNG, built by hand (no image library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))


PNG = tiny_png()


def make_server() -> Server:
    server = Server("display")

    @server.tool(description=EVIL)
    def shady(query: str, limit: int = 3) -> str:
        return EVIL

    @server.tool()
    def picture() -> ImageContent:
        """An image."""
        return ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png")

    @server.tool()
    def bad_picture() -> ImageContent:
        """An image whose MIME type tries to break out of the attribute."""
        return ImageContent(data="AAAA", mime_type='image/png" onload="alert(1)')

    @server.tool()
    def fails() -> str:
        raise ToolError(EVIL)  # on purpose: its text reaches the client, to be escaped

    @server.tool()
    def steps(ctx: HandlerContext) -> str:
        for i in range(1, 5):
            ctx.progress(i, total=4, message=f"step {i}")
        return "done"

    return server


@pytest.fixture(params=["2025-11-25", "2026-07-28"])
def client(request):
    with Client.memory(make_server(), protocol_version=request.param) as client:
        yield client


def assert_escaped(rendered: str) -> None:
    assert "<script>" not in rendered
    assert "<img src=x" not in rendered
    assert "onerror=alert(1)>" not in rendered.replace("&gt;", "")


def test_a_tool_list_is_a_table_with_escaped_descriptions(client):
    tools = client.list_tools()
    assert isinstance(tools, ToolList) and isinstance(tools, list)
    page = tools._repr_html_()
    assert page.startswith("<table>") and "<th>parameters</th>" in page
    assert "<b>shady</b>" in page and "<code>query*: string</code>" in page
    assert "<code>limit: integer</code>" in page
    assert html.escape(EVIL) in page
    assert_escaped(page)
    markdown = tools._repr_markdown_()
    assert markdown.splitlines()[0] == "| name | description | parameters |"
    assert "`query*: string`, `limit: integer`" in markdown
    assert_escaped(markdown)
    one = next(t for t in tools if t.name == "shady")
    assert "<b>shady</b>" in one._repr_html_()
    assert_escaped(one._repr_html_())


def test_an_image_result_renders_as_an_image(client):
    result = client.call_tool("picture")
    assert result._repr_png_() == PNG
    assert result.content[0]._repr_png_() == PNG
    assert result.content[0]._repr_jpeg_() is None
    page = result._repr_html_()
    assert f'<img src="data:image/png;base64,{base64.b64encode(PNG).decode()}"' in page
    assert result._repr_markdown_().startswith("![image](data:image/png;base64,")


def test_an_image_with_a_hostile_mime_type_is_described_not_embedded(client):
    result = client.call_tool("bad_picture")
    page = result._repr_html_()
    assert "<img" not in page and 'onload="' not in page
    assert "not shown" in page
    assert result._repr_png_() is None
    assert "![image]" not in result._repr_markdown_()


def test_text_results_and_tool_errors_are_escaped(client):
    result = client.call_tool("shady", {"query": "q"})
    assert html.escape(EVIL) in result._repr_html_()
    assert_escaped(result._repr_html_())
    assert_escaped(result._repr_markdown_())
    failed = client.call_tool("fails")
    assert failed.is_error and EVIL in failed.text
    assert "Tool error" in failed._repr_html_()
    assert failed._repr_markdown_().startswith("**Tool error**")
    assert_escaped(failed._repr_html_())


def test_protocol_errors_display(client):
    with pytest.raises(MCPError) as caught:
        client.call_tool("no such <tool>")
    page = caught.value._repr_html_()
    assert "InvalidParamsError" in page and "(-32602)" in page
    assert "no such &lt;tool&gt;" in page
    assert caught.value._repr_markdown_().startswith("**InvalidParamsError** (-32602)")


def test_structured_content_is_shown_as_json():
    result = CallToolResult(content=[], structured_content={"a": "<b>"})
    assert "&quot;a&quot;: &quot;&lt;b&gt;&quot;" in result._repr_html_()
    assert ('<pre><code class="language-json">{\n  &quot;a&quot;: &quot;&lt;b&gt;&quot;\n}'
            "</code></pre>") in result._repr_markdown_()


def test_a_markdown_fence_in_text_cannot_close_the_block():
    """JSON goes into Markdown as escaped HTML, not as a fence its text could close."""
    result = CallToolResult(content=[], structured_content={"x": "```\n<script>"})
    markdown = result._repr_markdown_()
    assert "<script>" not in markdown and markdown.count("</pre>") == 1


def test_on_progress_bar_draws_a_text_bar_on_stderr(client, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # as if tqdm were not installed
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert client.call_tool("steps", on_progress="bar").text == "done"
    err = capsys.readouterr().err  # not a terminal: one whole line per update
    assert err.splitlines() == [f"steps: {i}/4 ({i * 25}%) step {i}" for i in range(1, 5)]
    with pytest.raises(ValueError, match="'spinner'"):
        client.call_tool("steps", on_progress="spinner")


def test_on_progress_bar_uses_tqdm_when_installed(client, capsys):
    require_module("tqdm")
    assert client.call_tool("steps", on_progress="bar").text == "done"
    err = capsys.readouterr().err
    assert "steps" in err and "4/4" in err


def test_the_text_bar_without_a_total_shows_the_count(capsys):
    bar = TextBar("work")
    bar(type("P", (), {"progress": 7, "total": None, "message": "files\x1b[2J"})())
    bar.close()
    assert capsys.readouterr().err == "work: 7 files [2J\n"
    assert isinstance(progress_bar(use_tqdm=False), TextBar)


def test_memory_and_stdio_results_display_alike():
    """The fixture server over a real subprocess: a result and the tool table display."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with Client.stdio([sys.executable, str(root / "tests" / "server" / "fixture_server.py")],
                      env={"PYTHONPATH": str(root)}, timeout=30) as remote, \
            Client.memory(fixture_server) as local:
        assert remote.list_tools()._repr_html_() == local.list_tools()._repr_html_()
        assert (remote.call_tool("add", {"a": 1, "b": 2})._repr_markdown_()
                == local.call_tool("add", {"a": 1, "b": 2})._repr_markdown_())
