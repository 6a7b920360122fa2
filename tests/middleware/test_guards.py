"""The guards of ``mcpsync.middleware`` (issue 40), the same checks on every transport and
era: memory, a real stdio subprocess (``tests/middleware/guarded_server.py``) and real HTTP,
each in 2025-11-25 and 2026-07-28. The server and its guards: see guarded_server.py.

Over HTTP the app's answer is also checked on the wire: a refusal is a 429 with
``Retry-After`` and the JSON-RPC error (its retry time in ``data``) in the body.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpsync import Client
from mcpsync.middleware import RateLimitedError
from mcpsync.middleware.encoded import encode
from tests.helpers import WAIT
from tests.middleware.guarded_server import AUDIT, build
from tests.serving import ROOT, RunningServer

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
VERSIONS = (LEGACY, MODERN, "2024-11-05")  # the oldest too: the same path
TRANSPORTS = ("memory", "stdio", "http")
MODULE = "tests.middleware.guarded_server"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"

Exchange = tuple[str, dict[str, str], bytes]


class Guarded:
    """A client of a fresh guarded server over one transport; over HTTP, every POST's
    status, headers and body (``exchanges``); the audit records (``audit()``)."""

    def __init__(self, client: Client, audit: Callable[[], list[dict[str, Any]]],
                 exchanges: list[Exchange]) -> None:
        self.client = client
        self.audit = audit
        self.exchanges = exchanges


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(json.loads(record.getMessage()))


def _recording(app: Any, exchanges: list[Exchange]) -> Any:
    """``app`` that keeps (status, headers, body) of every POST it answers."""
    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        seen: dict[str, Any] = {}

        def start(status: str, headers: list[tuple[str, str]], *rest: Any) -> Any:
            seen["status"], seen["headers"] = status, {k.lower(): v for k, v in headers}
            return start_response(status, headers, *rest)

        body = app(environ, start)
        if environ["REQUEST_METHOD"] != "POST" or "json" not in seen.get(
                "headers", {}).get("content-type", ""):
            return body
        data = b"".join(body)
        if hasattr(body, "close"):
            body.close()
        exchanges.append((seen["status"], seen["headers"], data))
        return [data]

    return wrapped


@contextlib.contextmanager
def guarded(kind: str, version: str, tmp_path: Path, **options: Any) -> Iterator[Guarded]:
    options.setdefault("timeout", WAIT)
    exchanges: list[Exchange] = []
    if kind == "stdio":
        path = tmp_path / "audit.jsonl"
        path.touch()

        def from_file() -> list[dict[str, Any]]:
            return [json.loads(line) for line in path.read_text().splitlines() if line]

        with Client.stdio([sys.executable, "-m", MODULE], cwd=ROOT, protocol_version=version,
                          env={"MCPSYNC_TEST_AUDIT": str(path)}, **options) as client:
            yield Guarded(client, from_file, exchanges)
        return
    records = _Records()
    logger = logging.getLogger(f"{AUDIT}.{kind}.{id(records)}")
    logger.addHandler(records)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    server = build(audit=logger)
    try:
        if kind == "memory":
            with Client.memory(server, protocol_version=version, **options) as client:
                yield Guarded(client, lambda: records.records, exchanges)
            return
        app = server.wsgi_app(path="/mcp")
        with (RunningServer(_recording(app, exchanges), on_stop=app.close) as running,
              Client.http(running.base + "/mcp", protocol_version=version,
                          **options) as client):
            yield Guarded(client, lambda: records.records, exchanges)
    finally:
        logger.removeHandler(records)


def text(result: Any) -> str:
    return str(result.content[0].text)


def calls(client: Client) -> dict[str, int]:
    result = client.call_tool("calls_seen")
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(text(result)))  # 2024-11-05: no structured content


every_transport = pytest.mark.parametrize("kind", TRANSPORTS)
every_era = pytest.mark.parametrize("version", VERSIONS)


@every_era
@every_transport
def test_a_rate_limit_refuses_with_the_retry_time_and_the_tool_never_runs(
        kind: str, version: str, tmp_path: Path) -> None:
    with guarded(kind, version, tmp_path) as g:
        assert [text(g.client.call_tool("limited")) for _ in range(3)] == ["1", "2", "3"]
        with pytest.raises(RateLimitedError) as refused:
            g.client.call_tool("limited")
        assert refused.value.code == -32029
        assert 0 < refused.value.retry_after <= 60
        assert refused.value.data["limit"] == "3 per 1 minute"
        assert calls(g.client)["limited"] == 3  # the refused call never reached the tool
        if kind == "http":
            status, headers, body = next(e for e in g.exchanges if e[0].startswith("429"))
            assert status == "429 Too Many Requests"
            assert 1 <= int(headers["retry-after"]) <= 60
            error = json.loads(body)["error"]
            assert error["code"] == -32029 and 0 < error["data"]["retryAfter"] <= 60


@every_era
@every_transport
def test_a_concurrency_limit_refuses_a_second_call_while_the_first_runs(
        kind: str, version: str, tmp_path: Path) -> None:
    with guarded(kind, version, tmp_path) as g:
        holding = threading.Event()
        results: list[str] = []

        def first() -> None:
            results.append(text(g.client.call_tool(
                "hold", on_progress=lambda *_: holding.set())))

        thread = threading.Thread(target=first, name="test-guards-hold")
        thread.start()
        try:
            assert holding.wait(WAIT), "the first call never started"
            with pytest.raises(RateLimitedError) as refused:
                g.client.call_tool("hold")
            assert refused.value.retry_after == 1.0
        finally:
            g.client.call_tool("release")
            thread.join(WAIT)
        assert not thread.is_alive() and results == ["held"]
        assert text(g.client.call_tool("hold")) == "held"  # the slot was given back
        if kind == "http":
            assert any(e[0].startswith("429") and e[1]["retry-after"] == "1"
                       for e in g.exchanges)


@every_era
@every_transport
def test_a_result_over_the_size_limit_is_a_tool_error_or_truncated(
        kind: str, version: str, tmp_path: Path) -> None:
    with guarded(kind, version, tmp_path) as g:
        over = g.client.call_tool("big", {"size": 1000})
        assert over.is_error
        assert "over this server's limit of 300 bytes" in text(over)
        assert text(g.client.call_tool("big", {"size": 10})) == "x" * 10
        cut = g.client.call_tool("big_cut", {"size": 1000})
        assert not cut.is_error
        assert text(cut).startswith("yyy") and text(cut).endswith(
            "[truncated: the result exceeded 300 bytes]")
        wire: dict[str, Any] = {"content": [{"type": "text", "text": text(cut)}]}
        if cut.structured_content is not None:  # cut alike, still a string
            wire["structuredContent"] = cut.structured_content
            assert set(cut.structured_content["result"]) == {"y"}
        assert len(encode(wire)) <= 300


@every_era
@every_transport
def test_the_cache_answers_read_only_calls_per_principal(kind: str, version: str,
                                                         tmp_path: Path) -> None:
    with guarded(kind, version, tmp_path) as g:
        first = text(g.client.call_tool("stamp", {"tag": "a"}))
        assert text(g.client.call_tool("stamp", {"tag": "a"})) == first == "a:1:None"
        assert text(g.client.call_tool("stamp", {"tag": "b"})) == "b:2:None"  # other args
        # Another principal gets an answer of its own, never the first one's.
        bob = text(g.client.call_tool("stamp", {"tag": "a"}, meta={"tests/user": "bob"}))
        assert bob == "a:3:bob"
        assert text(g.client.call_tool("stamp", {"tag": "a"},
                                       meta={"tests/user": "bob"})) == bob
        # Not read-only: never cached.
        assert [text(g.client.call_tool("bump")) for _ in range(2)] == ["1", "2"]
        reads = [g.client.read_resource("guarded://stamp").contents[0].text
                 for _ in range(2)]
        assert reads == ["read 1", "read 1"]
        assert calls(g.client)["stamp"] == 3


@every_era
@every_transport
def test_the_audit_log_has_one_record_per_request_with_redacted_arguments(
        kind: str, version: str, tmp_path: Path) -> None:
    with guarded(kind, version, tmp_path) as g:
        before = len(g.audit())
        g.client.call_tool("secret", {"api_key": "hunter2"}, meta={"traceparent": TRACEPARENT,
                                                                   "tests/user": "carol"})
        for _ in range(4):
            with contextlib.suppress(RateLimitedError):
                g.client.call_tool("limited")
        g.client.read_resource("guarded://stamp")
        # The stdio server writes its records itself; they are there once it answered.
        records = g.audit()[before:]
    assert [(r["method"], r.get("tool") or r.get("uri"), r["outcome"]) for r in records] == [
        ("tools/call", "secret", "ok"),
        ("tools/call", "limited", "ok"), ("tools/call", "limited", "ok"),
        ("tools/call", "limited", "ok"), ("tools/call", "limited", "refused"),
        ("resources/read", "guarded://stamp", "ok")]
    secret = records[0]
    assert secret["arguments"] == {"api_key": "[redacted]"}
    assert "hunter2" not in json.dumps(records)
    assert secret["traceId"] == TRACE
    assert secret["principal"] and len(secret["principal"]) == 32  # a key, not the name
    assert records[4]["code"] == -32029
    assert all(r["durationMs"] >= 0 for r in records)
    assert records[1]["client"] == {"memory": "memory", "stdio": "stdio",
                                    "http": "127.0.0.1"}[kind]
