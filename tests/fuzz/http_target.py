"""The fuzz server's WSGI app on a real socket (werkzeug's threaded server), fed raw
fuzz bodies: each frame is one POST.

Three endpoints: ``/mcp`` in 2026-07-28 (headers mirrored from the mutated body where it
has a method, so that the fuzz gets past the header check), ``/mcp`` inside a 2025-03-26
session (batches allowed), and the 2024-11-05 ``/messages`` endpoint whose answers come on
the session's ``GET /sse`` stream. After every case a probe must be answered; every status
is checked (never 500, never HTML), every body and SSE event (``checks.py``), and every
log record of the app: one carrying a traceback fails the case.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
import time
from typing import Any

import requests
import urllib3

from mcpsync.protocol.http_headers import request_headers
from tests.http.raw import BOTH, SseReader
from tests.serving import RunningServer

from .checks import (
    GRACE,
    WAIT,
    answer_problems,
    answered_keys,
    leaks,
    must_answer,
    opens_listen,
)
from .fuzz_server import server as fuzz_server
from .stdio_target import end_listens, probe
from .strategies import HANDSHAKE, MODERN, Case

#: The 2024-11-05 HTTP+SSE revision, served on /sse + /messages.
OLD_SSE = "2024-11-05"
#: How long a listen's quiet stream is read before the fuzzer hangs up (which cancels it).
LISTEN_READ = 2.0
SESSION_NOT_FOUND = -32001


class _TracebackLog(logging.Handler):
    """Collects the app's and the WSGI server's log records that carry a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []
        self._records_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info or "Traceback" in record.getMessage():
            with self._records_lock:
                self.records.append(self.format(record))

    def take(self) -> list[str]:
        with self._records_lock:
            out, self.records = self.records, []
        return out


def _header_safe(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return value.isprintable()


class HttpTarget:
    """One endpoint of the fuzz server's WSGI app, speaking ``era`` (``MODERN``,
    ``HANDSHAKE`` or ``OLD_SSE``)."""

    def __init__(self, era: str) -> None:
        self.era = era
        self._ids = itertools.count()
        self.app = fuzz_server.wsgi_app(path="/mcp")
        self.running = RunningServer(self.app, on_stop=self.app.close)
        self.url = self.running.base + "/mcp"
        self.log = _TracebackLog()
        for name in ("mcpsync", "werkzeug"):
            logging.getLogger(name).addHandler(self.log)
        self.session_id: str | None = None
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stream: requests.Response | None = None
        self._lost = False
        self._open()

    def _open(self) -> None:
        self._lost = False
        if self.era == HANDSHAKE:
            self._open_session()
        elif self.era == OLD_SSE:
            self._open_old_sse()

    def ensure_alive(self) -> None:
        """Open a new session when an earlier example lost ours (it failed already)."""
        if self._lost:
            if self._stream is not None:
                self._stream.close()
            self._open()

    # -- setup ----------------------------------------------------------------------------

    def _open_session(self) -> None:
        response = requests.post(self.url, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": HANDSHAKE, "capabilities": {},
                       "clientInfo": {"name": "fuzz", "version": "0"}}},
            headers={"Accept": BOTH}, timeout=WAIT)
        assert response.status_code == 200, response.text
        self.session_id = response.headers["Mcp-Session-Id"]
        reply = self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        assert reply.status_code == 202, reply.text

    def _open_old_sse(self) -> None:
        self._events = queue.Queue()
        # Read timeout: well above the keep-alive interval (the stream is quiet between
        # cases); the waits on what it delivers are bounded separately.
        self._stream = requests.get(self.running.base + "/sse", stream=True,
                                    timeout=(WAIT, 120.0),
                                    headers={"Accept": "text/event-stream"})
        assert self._stream.status_code == 200, self._stream.text
        reader = SseReader(self._stream)
        first = reader.next_event()
        assert first is not None and first["event"] == "endpoint", first
        self.messages_url = self.running.base + first["data"]
        threading.Thread(target=self._pump, args=(reader,), name="fuzz-old-sse",
                         daemon=True).start()
        self._post(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                               "params": {"protocolVersion": OLD_SSE, "capabilities": {},
                                          "clientInfo": {"name": "fuzz", "version": "0"}}}
                              ).encode())
        event = self._events.get(timeout=WAIT)
        assert event is not None and '"result"' in event["data"], event
        self._post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def _pump(self, reader: SseReader) -> None:
        try:
            while (event := reader.next_event()) is not None:
                self._events.put(event)
        except Exception:
            pass  # "the stream ended" is reported by whoever waits on it
        self._events.put(None)

    # -- one case -------------------------------------------------------------------------

    def _headers(self, data: bytes) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": BOTH}
        if self.era == MODERN:
            headers["MCP-Protocol-Version"] = MODERN
            try:
                message = json.loads(data)
            except (ValueError, UnicodeDecodeError, RecursionError):
                message = None
            if isinstance(message, dict) and isinstance(message.get("params"), (dict, type(None))):
                headers.update(request_headers(message, MODERN))
            # A header carries latin-1 only (a method with a lone surrogate has no header
            # form): leave such a header out, the server then reports the mismatch.
            headers = {k: v for k, v in headers.items() if _header_safe(v)}
        elif self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        return headers

    def _post(self, data: bytes, **kwargs: Any) -> requests.Response:
        url = self.messages_url if self.era == OLD_SSE else self.url
        # A listen's stream stays quiet after its acknowledgement: read it briefly.
        timeout = (WAIT, LISTEN_READ) if b"subscriptions/listen" in data else WAIT
        return requests.post(url, data=data, headers=self._headers(data), timeout=timeout,
                             **kwargs)

    def _exchange(self, data: bytes, problems: list[str],
                  seen: list[dict[str, Any]]) -> None:
        """POST one frame; check the status and every message of the answer."""
        try:
            response = self._post(data, stream=True)
        except requests.RequestException as exc:
            problems.append(f"the POST failed: {exc!r}")
            return
        with response:
            status = response.status_code
            content_type = response.headers.get("Content-Type", "")
            if status >= 500 and status != 503:
                problems.append(f"HTTP {status}")
            if content_type.startswith("text/event-stream"):
                self._read_sse(response, data, problems, seen)
                return
            body = response.raw.read(decode_content=True)
            problems.extend(leaks(body.decode("utf-8", "replace")))
            if b"<html" in body.lower() or b"<!doctype" in body.lower():
                problems.append(f"an HTML body (HTTP {status}): {body[:300]!r}")
            if not body:
                if status not in (200, 202):
                    problems.append(f"HTTP {status} with an empty body")
                return
            if self.era == OLD_SSE and status == 202:
                return  # "Accepted": the answer comes on the stream
            if not content_type.startswith("application/json"):
                problems.append(f"HTTP {status} answered {content_type!r}: {body[:300]!r}")
                return
            messages, found = answer_problems(body)
            seen.extend(messages)
            problems.extend(found)

    def _read_sse(self, response: requests.Response, data: bytes, problems: list[str],
                  seen: list[dict[str, Any]]) -> None:
        listen = b"subscriptions/listen" in data
        reader = SseReader(response)
        try:
            while (event := reader.next_event()) is not None:
                if event.get("data"):
                    messages, found = answer_problems(event["data"].encode("utf-8",
                                                                           "surrogatepass"))
                    seen.extend(messages)
                    problems.extend(found)
        except UnicodeDecodeError as exc:
            problems.append(f"an SSE event that is not UTF-8: {exc}")
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as exc:
            # A listen is read until it goes quiet; then the fuzzer hangs up (which
            # cancels it in 2026-07-28).
            if not listen:
                problems.append(f"the SSE stream broke: {exc!r}")

    def run(self, case: Case) -> None:
        """Send ``case``, then a probe; fail (AssertionError) on anything wrong."""
        self.ensure_alive()
        self.log.take()
        seen: list[dict[str, Any]] = []
        problems: list[str] = []
        for frame in case.frames:
            self._exchange(frame.data, problems, seen)
        tail = [f"probe-{next(self._ids)}"]
        if opens_listen(case) and self.era != MODERN:
            tail.insert(0, f"end-{next(self._ids)}")
        for request_id in tail:
            message = (end_listens if request_id.startswith("end") else probe)(
                MODERN if self.era == MODERN else HANDSHAKE, request_id)
            self._exchange(json.dumps(message).encode(), problems, seen)
        wanted = set(must_answer(case)) | {("str", t) for t in tail}
        if any(m.get("error", {}).get("code") == SESSION_NOT_FOUND for m in seen):
            self._lost = True
            problems.append("the session was lost")
        elif self.era == OLD_SSE:
            self._collect_stream(wanted, ("str", tail[-1]), seen, problems)
        missing = wanted - answered_keys(seen)
        if missing:
            problems.append(f"no answer to ids {sorted(map(repr, missing))}; answers seen: "
                            f"{seen!r:.1500}")
        problems.extend(f"a logged traceback:\n{text[-3000:]}" for text in self.log.take())
        assert not problems, "\n".join(problems)

    def _collect_stream(self, wanted: set[Any], probe_key: Any, seen: list[dict[str, Any]],
                        problems: list[str]) -> None:
        deadline = time.monotonic() + WAIT
        while not wanted <= answered_keys(seen):
            if probe_key in answered_keys(seen):
                # The probe is answered: what is still missing gets a grace period only.
                deadline = min(deadline, time.monotonic() + GRACE)
            try:
                event = self._events.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                return
            if event is None:
                self._lost = True
                problems.append("the 2024-11-05 SSE stream ended")
                return
            if event.get("data"):
                messages, found = answer_problems(event["data"].encode("utf-8", "surrogatepass"))
                seen.extend(messages)
                problems.extend(found)

    def close(self) -> None:
        for name in ("mcpsync", "werkzeug"):
            logging.getLogger(name).removeHandler(self.log)
        if self._stream is not None:
            self._stream.close()
        self.running.stop()
