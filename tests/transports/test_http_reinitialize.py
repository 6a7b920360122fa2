"""The HTTP client's session state under concurrency: when the server forgets the session,
any number of concurrent calls re-initialize it exactly once and all succeed."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mcpsync import Client
from tests.helpers import WAIT, run_threads
from tests.server.fixture_server import server as fixture_server
from tests.serving import RunningServer

CALLERS = 8


class Spy:
    """A WSGI wrapper that counts the JSON-RPC methods POSTed to the app."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.posted: list[str] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if environ["REQUEST_METHOD"] == "POST":
            size = int(environ.get("CONTENT_LENGTH") or 0)
            body = environ["wsgi.input"].read(size)
            environ["wsgi.input"] = io.BytesIO(body)
            with self.lock:
                self.posted.append(str(json.loads(body).get("method", "response")))
        return self.app(environ, start_response)

    def count(self, method: str) -> int:
        with self.lock:
            return self.posted.count(method)


@pytest.fixture
def spy() -> Iterator[tuple[Spy, str]]:
    app = fixture_server.wsgi_app(path="/mcp")
    wrapper = Spy(app)
    with RunningServer(wrapper) as running:
        yield wrapper, running.base + "/mcp"
    app.close()


@pytest.mark.parametrize("rounds", [1, 3])
def test_concurrent_calls_after_expiry_reinitialize_once(spy, rounds):
    wrapper, url = spy
    with Client.http(url, protocol_version="2025-11-25", timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "warm"}).text == "warm"
        for round_ in range(rounds):
            wrapper.app.sessions.close_all()  # the server forgets the session

            def call(i: int, round_: int = round_) -> str:
                return client.call_tool("echo", {"text": f"{round_}-{i}"}).text

            texts = run_threads(call, CALLERS, name="t-reinit", timeout=WAIT)
            assert texts == [f"{round_}-{i}" for i in range(CALLERS)]
            assert len(wrapper.app.sessions) == 1
        assert wrapper.count("initialize") == 1 + rounds


@pytest.mark.parametrize(("version", "era"), [
    ("2026-07-28", "modern"), ("auto", "modern"), ("2025-11-25", "streamable")])
def test_the_era_is_settled_by_the_first_answers(spy, version, era):
    _, url = spy
    with Client.http(url, protocol_version=version, timeout=WAIT) as client:
        transport = client._connection.transport
        assert transport.era == era  # type: ignore[attr-defined]
        assert (transport.session_id is None) == (era == "modern")  # type: ignore[attr-defined]
