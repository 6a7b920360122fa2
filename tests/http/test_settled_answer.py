"""``ResponseStream.settled_answer``: the shortcut a response takes when its request was
answered before the response began (a tool run on the request's own thread). It takes the
final answer only when that is all a finished stream holds and nobody has attached; in
every other case it takes nothing and leaves the stream to ``take``."""

from __future__ import annotations

from mcpsync.http.streams import ResponseStream
from mcpsync.protocol.jsonrpc import ErrorResponse, Notification, Response


def test_a_lone_final_answer_is_taken() -> None:
    stream = ResponseStream(final_id=7)
    answer = Response(7, {"content": []})
    stream.put(answer)
    assert stream.settled_answer() is answer
    assert stream.take(0)[0] == []  # taken: nothing is left to send twice
    # ... and left, as a response's end leaves it: delivered, its consumer gone.
    assert stream.delivered and stream.gone and stream.consumer_gone.is_set()


def test_a_lone_error_answer_is_taken() -> None:
    stream = ResponseStream(final_id="x")
    error = ErrorResponse("x", {"code": -32602, "message": "no"})
    stream.put(error)
    assert stream.settled_answer() is error


def test_nothing_is_taken_before_the_answer() -> None:
    stream = ResponseStream(final_id=1)
    assert stream.settled_answer() is None
    stream.put(Notification("notifications/progress", {"progressToken": 1, "progress": 1}))
    assert stream.settled_answer() is None
    assert not stream.gone and not stream.delivered  # nothing changed
    items, done = stream.take(0)
    assert len(items) == 1 and not done


def test_an_answer_after_notifications_is_left_to_take() -> None:
    stream = ResponseStream(final_id=1)
    note = Notification("notifications/message", {"level": "info", "data": "x"})
    answer = Response(1, {})
    stream.put(note)
    stream.put(answer)
    assert stream.settled_answer() is None
    items, done = stream.take(0)
    assert [message for _, message in items] == [note, answer] and done


def test_an_attached_stream_is_left_to_its_consumer() -> None:
    stream = ResponseStream(final_id=1)
    token = stream.attach()
    answer = Response(1, {})
    stream.put(answer)
    assert stream.settled_answer() is None
    items, done = stream.take(0, token)
    assert [message for _, message in items] == [answer] and done


def test_a_stream_asked_to_disconnect_is_left_alone() -> None:
    stream = ResponseStream(final_id=1)
    stream.put(Response(1, {}))
    stream.disconnect()
    assert stream.settled_answer() is None


def test_a_handler_waiting_for_the_consumer_to_go_is_woken() -> None:
    stream = ResponseStream(final_id=1)
    gone = stream.consumer_gone  # asked for before the answer (a detached worker, say)
    stream.put(Response(1, {}))
    assert not gone.is_set()
    assert stream.settled_answer() is not None
    assert gone.is_set()
