"""The tests' raw HTTP reader (``tests/http/raw.py``) reads an SSE answer whether or not
the request streamed: the server picks JSON or SSE by how soon the answer comes (its
``json_window``), so a test must not depend on which one a loaded machine gets."""

from __future__ import annotations

import json

import pytest
import requests

from mcpsync import HandlerContext, Server
from tests.helpers import WAIT
from tests.http.raw import answer_of, envelope, modern_headers
from tests.serving import RunningServer


@pytest.mark.parametrize("stream", [False, True], ids=["read-whole", "streamed"])
def test_an_sse_answer_is_read_either_way(stream: bool) -> None:
    server = Server("raw", request_state_key="k")

    @server.tool()
    def echo(text: str, ctx: HandlerContext) -> str:
        ctx.progress(1, 2)  # a stream of two messages: SSE, however soon it ends
        return text

    app = server.wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"},
                           "_meta": {**envelope(), "progressToken": "p"}}}
        response = requests.post(running.base + "/mcp", data=json.dumps(body), timeout=WAIT,
                                 stream=stream, headers=modern_headers("tools/call", "echo"))
        assert response.headers["Content-Type"].startswith("text/event-stream")
        assert answer_of(response)["result"]["content"][0]["text"] == "hi"
