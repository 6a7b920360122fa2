"""The official Python SDK's client (mcp 2.3.0) against a guarded mcpsync server: a
refusal reaches it as the JSON-RPC error -32029 with the retry time in ``data``, over
HTTP (where it comes with status 429: the SDK reads the JSON-RPC error out of a non-2xx
JSON body) in both eras and over stdio. Each run of the SDK's client is a new process and
a new session: the limit, per client address, counts them all."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.interop.peers import run_official_client
from tests.middleware.guarded_server import build
from tests.serving import RunningServer

MODULE = "tests.middleware.guarded_server"


@pytest.fixture
def url() -> Iterator[str]:
    app = build().wsgi_app(path="/mcp")
    with RunningServer(app, on_stop=app.close) as running:
        yield running.base + "/mcp"


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_the_official_client_gets_the_refusal_and_its_retry_time_over_http(
        url: str, mode: str) -> None:
    for expected in ("1", "2", "3"):
        report = run_official_client(["--mode", mode, "call", "limited", "{}"], url=url)
        assert report["result"]["content"][0]["text"] == expected
    refused = run_official_client(["--mode", mode, "call", "limited", "{}"], url=url,
                                  check=False)
    error = refused["error"]
    assert error["code"] == -32029, refused
    assert 0 < error["data"]["retryAfter"] <= 60 and error["data"]["limit"] == "3 per 1 minute"


def test_the_official_client_gets_the_refusal_over_stdio() -> None:
    report = run_official_client(
        ["--mode", "modern", "concurrent", "limited", "{}", "4"],
        [sys.executable, "-m", MODULE], check=False)
    # Four calls at once in one session: three served, the fourth refused with its wait.
    results = report["results"]
    refused = [item["error"] for item in results if "error" in item]
    assert len(results) == 4 and len(refused) == 1, report
    assert refused[0]["code"] == -32029 and 0 < refused[0]["data"]["retryAfter"] <= 60
