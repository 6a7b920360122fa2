"""A response stream holds at most ``MAX_QUEUED_BYTES`` of messages for its consumer (issue
34: a handler sending progress to a reader that stalled took a server from 36 to 256 MiB
in 20 s). Past it, progress and log notifications are dropped, oldest first; another
message that does not fit ends the stream; the final answer always goes.

First the rule on a stream alone, then over a real socket in both eras: a client that
stops reading while its tool sends 48 MiB of progress gets, once it reads again, far less
than that, and its answer.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from mcpsync import HandlerContext, Server
from mcpsync.http import streams
from mcpsync.http.streams import ResponseStream
from mcpsync.protocol.jsonrpc import Notification, Request, Response
from tests.helpers import WAIT

from .raw import LegacySession, SseReader, envelope, modern_headers, modern_request


def progress(n: int, pad: int = 0) -> Notification:
    return Notification("notifications/progress",
                        {"progressToken": "p", "progress": n, "message": "x" * pad})


def taken(stream: ResponseStream) -> list[Any]:
    items, _ = stream.take(0)
    return [message for _, message in items]


def test_progress_past_the_bound_drops_the_oldest_first() -> None:
    stream = ResponseStream(final_id=1, max_bytes=10_000)
    for n in range(100):
        stream.put(progress(n, pad=900))  # about 1 kB each
    stream.put(Response(1, {"content": []}))
    messages = taken(stream)
    kept = [m.params["progress"] for m in messages[:-1]]
    assert 0 < len(kept) <= 10 and kept == list(range(100 - len(kept), 100))
    assert isinstance(messages[-1], Response) and stream.finished
    assert stream.dropped == 100 - len(kept) and not stream.overflowed


def test_the_final_answer_goes_whatever_its_size() -> None:
    stream = ResponseStream(final_id=1, max_bytes=1000)
    stream.put(progress(1, pad=500))
    stream.put(Response(1, {"content": [{"type": "text", "text": "y" * 100_000}]}))
    messages = taken(stream)
    assert [type(m) for m in messages] == [Notification, Response] and stream.finished


def test_a_message_that_can_not_be_dropped_ends_a_full_stream() -> None:
    stream = ResponseStream(final_id=1, max_bytes=2000)
    stream.put(Request(7, "elicitation/create", {"message": "a" * 900}))
    stream.put(progress(1, pad=500))
    stream.put(Request(8, "elicitation/create", {"message": "b" * 900}))  # drops progress
    assert stream.dropped == 1 and not stream.overflowed
    stream.put(Request(9, "elicitation/create", {"message": "c" * 900}))  # can not fit
    assert stream.overflowed
    stream.put(Response(1, {}))  # after the end: not queued
    items, over = stream.take(0)
    assert [m.id for _, m in items] == [7, 8] and over and not stream.finished


def test_taking_frees_the_room() -> None:
    stream = ResponseStream(final_id=1, max_bytes=5000)
    for n in range(20):
        stream.put(progress(n, pad=900))
        taken(stream)
    assert stream.dropped == 0


# -- over a real socket -------------------------------------------------------------------

TOTAL_NOTES = 768
PAD = 64 * 1024  # 48 MiB of progress in all


def flooding_server(sent: threading.Event) -> Server:
    server = Server("flood")

    @server.tool()
    def flood(ctx: HandlerContext) -> str:
        for n in range(TOTAL_NOTES):
            ctx.progress(n + 1, total=TOTAL_NOTES, message="x" * PAD)
        sent.set()
        return "flooded"

    return server


def read_all(response: Any, request_id: Any) -> tuple[int, list[dict[str, Any]]]:
    """The bytes of the SSE body and its messages, up to the answer to ``request_id``."""
    reader = SseReader(response)
    messages = reader.messages(request_id)
    return sum(len(json.dumps(m)) for m in messages), messages


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_stalled_reader_gets_a_bounded_backlog_and_its_answer(serve: Any, era: str) -> None:
    sent = threading.Event()
    url = serve(flooding_server(sent), event_store=None).url
    params = {"name": "flood", "arguments": {}}
    if era == "2026-07-28":
        params["_meta"] = {**envelope(), "progressToken": "p"}
        body = modern_request("tools/call", params, request_id=5, meta=params["_meta"])
        import requests

        response = requests.post(url, data=json.dumps(body), stream=True, timeout=WAIT,
                                 headers=modern_headers("tools/call", "flood"))
        request_id: Any = 5
    else:
        session = LegacySession(url)
        params["_meta"] = {"progressToken": "p"}
        request_id, response = session.request("tools/call", params, stream=True)
    with response:
        # Not a byte read until the tool has sent everything: the server must queue.
        assert sent.wait(WAIT), "the tool never finished sending"
        size, messages = read_all(response, request_id)
    notes = [m for m in messages if m.get("method") == "notifications/progress"]
    assert messages[-1]["id"] == request_id
    assert messages[-1]["result"]["content"][0]["text"] == "flooded"
    # What the socket buffers held plus the bound: far less than the 48 MiB sent.
    assert size < 24 * 1024 * 1024, f"{size} bytes reached the reader"
    assert len(notes) < TOTAL_NOTES
    assert notes[-1]["params"]["progress"] == TOTAL_NOTES  # the newest went last


def test_the_bound_is_what_the_limits_page_says() -> None:
    assert streams.MAX_QUEUED_BYTES == 4 * 1024 * 1024
