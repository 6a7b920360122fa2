"""A resume takes a stream over from a connection the server still holds (issue #17).

A client that resumes with ``Last-Event-ID`` has given its old connection up, but the
server may not know yet: a half-open TCP connection, a proxy that has not noticed, a
client whose read timed out. The resume used to be refused (409) for a GET stream, or to
share a POST stream's messages with the dead connection; now it takes the stream over,
and every event arrives exactly once, in order.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from mcpsync import HandlerContext, Server
from tests.helpers import WAIT
from tests.http.raw import LegacySession, SseReader


def _data(event: dict[str, Any] | None) -> Any:
    assert event is not None, "the stream ended early"
    return json.loads(event["data"])


def _next_message(reader: SseReader) -> tuple[str, Any]:
    while True:
        event = reader.next_event()
        assert event is not None, "the stream ended early"
        if event.get("data") and event["data"].strip():
            return event["id"], json.loads(event["data"])


def _ticker() -> tuple[Server, threading.Semaphore]:
    """A server whose ``start`` tool logs 0, 1, 2, ... on the session's GET stream, one
    tick per release of the semaphore."""
    srv = Server("ticks")
    go = threading.Semaphore(0)

    @srv.tool()
    def start(ctx: HandlerContext, count: int) -> str:
        detached = ctx.detach()

        def run() -> None:
            for i in range(count):
                if not go.acquire(timeout=WAIT):
                    return
                detached.log("info", i)

        threading.Thread(target=run, name="test-ticker", daemon=True).start()
        return "started"

    return srv, go


def test_get_stream_resumed_while_the_old_connection_is_held(serve):
    srv, go = _ticker()
    session = LegacySession(serve(srv, retry_ms=50).url)
    old = session.get()
    assert old.status_code == 200
    old_reader = SseReader(old)
    last_id = old_reader.next_event()["id"]  # the priming event
    session.call("tools/call", {"name": "start", "arguments": {"count": 30}})
    got = []
    for _ in range(10):
        go.release()
        last_id, message = _next_message(old_reader)
        got.append(message["params"]["data"])
    for _ in range(10):
        go.release()  # some of these go to the old connection before the takeover
    # The old connection is left open: the server still holds it.
    resumed = session.get(headers={"Last-Event-ID": last_id})
    assert resumed.status_code == 200, resumed.text  # was 409 Conflict
    reader = SseReader(resumed)
    while len(got) < 20:
        got.append(_next_message(reader)[1]["params"]["data"])
    # The superseded connection is ended by the server, and closing it changes nothing.
    while old_reader.next_event() is not None:
        pass
    old.close()
    for _ in range(10):
        go.release()
    while len(got) < 30:
        got.append(_next_message(reader)[1]["params"]["data"])
    resumed.close()
    assert got == list(range(30))


def test_post_stream_resumed_while_the_old_connection_is_held(serve):
    srv = Server("post-ticks")
    go = threading.Semaphore(0)

    @srv.tool()
    def count(ctx: HandlerContext, n: int) -> str:
        for i in range(n):
            if not go.acquire(timeout=WAIT):
                raise TimeoutError("the test stopped releasing ticks")
            ctx.log("info", i)
        return "done"

    session = LegacySession(serve(srv, retry_ms=50).url)
    request_id, old = session.request(
        "tools/call", {"name": "count", "arguments": {"n": 20}}, stream=True,
        headers={"Accept": "text/event-stream, application/json"})
    assert old.status_code == 200
    old_reader = SseReader(old)
    last_id = old_reader.next_event()["id"]  # the priming event
    got = []
    for _ in range(5):
        go.release()
        last_id, message = _next_message(old_reader)
        got.append(message["params"]["data"])
    for _ in range(5):
        go.release()
    resumed = session.get(headers={"Last-Event-ID": last_id})
    assert resumed.status_code == 200, resumed.text
    reader = SseReader(resumed)
    while len(got) < 10:
        got.append(_next_message(reader)[1]["params"]["data"])
    while old_reader.next_event() is not None:
        pass  # the old connection is ended, having taken nothing more
    old.close()
    for _ in range(10):
        go.release()
    final = None
    while final is None:
        _, message = _next_message(reader)
        if message.get("id") == request_id:
            final = message
        else:
            got.append(message["params"]["data"])
    resumed.close()
    assert got == list(range(20))
    assert final["result"]["content"][0]["text"] == "done"


def test_a_plain_second_get_is_still_refused(serve):
    """Without ``Last-Event-ID`` a second GET is not a resume: one stream per session."""
    session = LegacySession(serve(retry_ms=50).url)
    first = session.get()
    assert first.status_code == 200
    second = session.get()
    assert second.status_code == 409
    second.close()
    first.close()


def test_a_client_that_resumes_from_the_first_event_misses_nothing(serve):
    """Events a handler sent before the SSE answer began were stored first, so their ids
    come before the priming event's. The priming event used to be written ahead of them:
    a client that read only it, dropped, and resumed from its id never got them (here a
    log; had the answer been among them, the answer). Ids now go out in order."""
    srv = Server("early-events")
    go = threading.Event()

    @srv.tool()
    def early(ctx: HandlerContext) -> str:
        ctx.log("info", "before the stream")
        if not go.wait(WAIT):
            raise TimeoutError("the test never let the tool finish")
        return "done"

    session = LegacySession(serve(srv, retry_ms=50, json_window=0.2).url)
    request_id, first = session.request(
        "tools/call", {"name": "early", "arguments": {}}, stream=True,
        headers={"Accept": "text/event-stream, application/json"})
    assert first.status_code == 200
    event = SseReader(first).next_event()
    assert event is not None
    got = [json.loads(event["data"])] if event.get("data", "").strip() else []
    first.close()  # the client drops after its first event
    go.set()
    resumed = session.get(headers={"Last-Event-ID": event["id"]})
    assert resumed.status_code == 200, resumed.text
    reader = SseReader(resumed)
    while not any(message.get("id") == request_id for message in got):
        got.append(_next_message(reader)[1])
    resumed.close()
    logs = [m["params"]["data"] for m in got if m.get("method") == "notifications/message"]
    assert logs == ["before the stream"]
