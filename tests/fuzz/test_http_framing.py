"""Fuzz the HTTP layer under the JSON-RPC one, on a raw socket: request headers (media
types, protocol version, session id, routing headers, Host/Origin) and body framing
(``Content-Length``, chunked transfer encoding). Whatever arrives, the answer is a JSON
body (never a 500, never HTML, no traceback or path) or a plain 202, and the app still
answers a valid request afterwards.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from .checks import WAIT, answer_problems, leaks
from .http_target import HttpTarget
from .settings import fuzz_settings
from .stdio_target import probe
from .strategies import HANDSHAKE, MODERN, envelope

#: How long the start of an SSE answer (a GET stream) is read before hanging up.
SSE_READ = 0.5
BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "hi"},
                              "_meta": envelope()}}).encode()
GOOD_HEADERS = {"Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "echo"}

_header_values = st.one_of(
    st.sampled_from(["", " ", "application/json", "text/event-stream", "*/*", "text/html",
                     "application/json; charset=latin-1", "2025-03-26", "2026-07-28",
                     "1999-01-01", "tools/call", "ping", "echo", "=?base64?ZWNobw==?=",
                     "=?base64?!!?=", "a" * 8000, "127.0.0.1", "evil.example", "null",
                     "http://evil.example", "deadbeef", "\t"]),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=30),
)
_header_names = st.sampled_from(["Content-Type", "Accept", "MCP-Protocol-Version",
                                 "Mcp-Method", "Mcp-Name", "Mcp-Session-Id", "Origin", "Host",
                                 "Last-Event-ID", "Mcp-Param-Text", "Expect",
                                 "Content-Encoding"])


@pytest.fixture(scope="module")
def target() -> Iterator[HttpTarget]:
    server = HttpTarget(MODERN)
    yield server
    server.close()


def exchange(port: int, head: bytes, body: bytes) -> bytes:
    """Send one raw request (half-closing after it, so a server waiting for more body sees
    EOF); return everything it answered, bounded in time."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        try:
            sock.sendall(head + body)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may answer and close before reading it all
        chunks: list[bytes] = []
        deadline = time.monotonic() + WAIT
        streaming = False
        while time.monotonic() < deadline:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                chunk = sock.recv(65536)
            except OSError:  # a timeout, or a reset
                break
            if not chunk:
                break
            chunks.append(chunk)
            if not streaming and b"text/event-stream" in b"".join(chunks).partition(
                    b"\r\n\r\n")[0]:
                # A stream (a GET): read its start only, then hang up.
                streaming = True
                deadline = min(deadline, time.monotonic() + SSE_READ)
        else:
            if not streaming:
                raise AssertionError(f"no end of the answer within {WAIT}s to {head!r:.500}")
    return b"".join(chunks)


def _dechunk(body: bytes, *, partial: bool = False) -> bytes:
    """The payload of a chunked body (``partial``: a stream cut short, keep what came)."""
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            if partial:
                break
            raise
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return out


def check_answer(raw: bytes, sent: bytes) -> None:
    """The raw answer is JSON-RPC in a non-500 response (or a bodiless 202/200)."""
    if not raw:
        return  # the server closed without answering: allowed for a broken request
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in
               (line.partition(":") for line in header_lines)}
    problems = leaks(raw.decode("utf-8", "replace"))
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunk(body, partial=headers.get("content-type", "").startswith(
            "text/event-stream"))
    if status >= 500 and status != 503:
        problems.append(f"HTTP {status}")
    if b"<html" in body.lower() or b"<!doctype" in body.lower():
        problems.append(f"an HTML body (HTTP {status})")
    content_type = headers.get("content-type", "")
    if body and content_type.startswith("application/json"):
        problems.extend(answer_problems(body)[1])
    elif body and content_type.startswith("text/event-stream"):
        for line in body.split(b"\n"):
            if line.startswith(b"data:") and line[5:].strip():
                problems.extend(answer_problems(line[5:].strip())[1])
    elif body:
        problems.append(f"HTTP {status} answered {content_type!r}: {body[:200]!r}")
    assert not problems, f"{problems}\nsent: {sent[:600]!r}\nanswer: {raw[:600]!r}"


def still_answers(target: HttpTarget) -> None:
    problems: list[str] = []
    seen: list[dict] = []
    era = MODERN if target.era == MODERN else HANDSHAKE
    target._exchange(json.dumps(probe(era, "probe")).encode(), problems, seen)
    assert not problems and any(m.get("id") == "probe" and "result" in m for m in seen), (
        problems, seen)
    problems.extend(f"a logged traceback:\n{text[-3000:]}" for text in target.log.take())
    assert not problems, "\n".join(problems)


def _request(headers: dict[str, str], body: bytes, framing: bytes | None = None,
             method: str = "POST") -> bytes:
    lines = [f"{method} /mcp HTTP/1.1".encode()]
    if method == "GET" and framing is None:
        framing = b"X-No-Body: 1"
    if not any(k.lower() == "host" for k in headers):
        lines.append(b"Host: 127.0.0.1")
    lines += [f"{k}: {v}".encode("latin-1") for k, v in headers.items()]
    lines.append(framing if framing is not None else b"Content-Length: %d" % len(body))
    lines.append(b"Connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


@fuzz_settings(60)
@given(changes=st.dictionaries(_header_names, st.one_of(st.none(), _header_values),
                               max_size=4),
       method=st.sampled_from(["POST", "POST", "POST", "GET", "DELETE", "PUT", "OPTIONS"]))
def test_headers(target: HttpTarget, changes: dict[str, str | None], method: str) -> None:
    target.log.take()
    headers = dict(GOOD_HEADERS)
    for name, value in changes.items():
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    head = _request(headers, BODY, method=method)
    check_answer(exchange(target.running.port, head, BODY), head + BODY)
    still_answers(target)


def _chunked(body: bytes, sizes: list[bytes]) -> bytes:
    out, rest = b"", body
    for size in sizes:
        try:
            n = int(size, 16)
        except ValueError:
            n = 3
        out += size + b"\r\n" + rest[:max(n, 0)] + b"\r\n"
        rest = rest[max(n, 0):]
    return out + rest


_lengths = st.one_of(st.sampled_from([b"-1", b"abc", b"", b" 5", b"1e3", b"0x10", b"+5",
                                      b"99999999999999999999", b"-0"]),
                     st.integers(0, len(BODY) * 2).map(lambda n: str(n).encode()))
_chunk_sizes = st.lists(st.sampled_from([b"zz", b"-1", b"ffffffffffffffff", b"0", b"5",
                                         b"10", b"1;ext=1", b"", b" a", b"0x5"]),
                        min_size=1, max_size=4)


@fuzz_settings(40)
@given(framing=st.one_of(
    _lengths.map(lambda n: (b"Content-Length: " + n, BODY)),
    _chunk_sizes.map(lambda s: (b"Transfer-Encoding: chunked", _chunked(BODY, s))),
    st.tuples(_lengths, _chunk_sizes).map(lambda t: (
        b"Content-Length: " + t[0] + b"\r\nTransfer-Encoding: chunked", _chunked(BODY, t[1]))),
))
def test_body_framing(target: HttpTarget, framing: tuple[bytes, bytes]) -> None:
    target.log.take()
    line, body = framing
    head = _request(GOOD_HEADERS, body, line)
    check_answer(exchange(target.running.port, head, body), head + body)
    still_answers(target)


@pytest.fixture(scope="module")
def session_target() -> Iterator[HttpTarget]:
    server = HttpTarget(HANDSHAKE)
    yield server
    server.close()


_event_ids = st.one_of(
    st.sampled_from(["", "0", "_", "_1", "x_1", "abc_0", "abc_\xb2", "\xb2", "x_\xb9\xb2",
                     "x_" + "9" * 5000, "x_-1", "x_1_2", "x_ 1", "x_00001"]),
    st.tuples(st.text(st.characters(min_codepoint=0x21, max_codepoint=0xFF), max_size=12),
              st.text(st.characters(min_codepoint=0x21, max_codepoint=0xFF), max_size=6)
              ).map(lambda t: f"{t[0]}_{t[1]}"),
)


@fuzz_settings(50)
@example(last_event_id="abc_\xb2", changes={}, method="GET")  # a digit int() refuses
@example(last_event_id="x_" + "9" * 5000, changes={}, method="GET")  # int-string limit
@given(last_event_id=st.one_of(st.none(), _event_ids),
       changes=st.dictionaries(_header_names, st.one_of(st.none(), _header_values),
                               max_size=2),
       method=st.sampled_from(["GET", "GET", "POST"]))
def test_session_headers(session_target: HttpTarget, last_event_id: str | None,
                         changes: dict[str, str | None], method: str) -> None:
    """A handshake-era session's GET (resumption with ``Last-Event-ID``) and POST, with
    fuzzed headers; the session itself survives (no DELETE here)."""
    target = session_target
    target.log.take()
    assert target.session_id is not None
    headers = {"Accept": "text/event-stream" if method == "GET" else GOOD_HEADERS["Accept"],
               "Content-Type": "application/json", "Mcp-Session-Id": target.session_id,
               "MCP-Protocol-Version": HANDSHAKE}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    for name, value in changes.items():
        if name == "Mcp-Session-Id":
            continue  # another session id is the same 404 every time; keep ours
        if value is None:
            headers.pop(name, None)
        else:
            headers[name] = value
    body = b"" if method == "GET" else b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    head = _request(headers, body, method=method)
    check_answer(exchange(target.running.port, head, body), head + body)
    still_answers(target)
