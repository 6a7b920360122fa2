"""The engine over a real in-process transport pair: threads, futures, cancellation."""

from __future__ import annotations

import threading

import pytest

from mcpsync.engine.connection import Connection, ConnectionLimits
from mcpsync.engine.hooks import ConnectionEvents
from mcpsync.errors import (
    ConnectionClosedError,
    MCPError,
    MethodNotFoundError,
    RequestCancelledError,
    RequestTimeoutError,
)
from mcpsync.protocol.jsonrpc import ErrorResponse, Request, Response
from mcpsync.transports.memory import memory_pair
from tests.helpers import WAIT, run_threads, wait_until


class Pair:
    """Two connections wired together; ``b`` serves with ``handler``."""

    def __init__(self, handler, *, max_handlers=64, recv_middleware=(), send_middleware=(),
                 a_handler=None):
        ta, tb = memory_pair()
        self.a_notes = []
        self.a = Connection(ta, on_request=a_handler or _no_methods, name="a",
                            send_middleware=send_middleware,
                            events=ConnectionEvents(notification=self.a_notes.append)).start()
        self.b = Connection(tb, on_request=handler, name="b",
                            limits=ConnectionLimits(max_handlers=max_handlers),
                            recv_middleware=recv_middleware).start()

    def close(self):
        self.a.close()
        self.b.close()


def _no_methods(inbound):
    raise MethodNotFoundError(f"Method not found: {inbound.method}")


def test_request_response(pairs):
    p = pairs(lambda r: {"echo": r.params, "method": r.method})
    assert p.a.request("x/y", {"k": 1}) == {"echo": {"k": 1}, "method": "x/y"}


def test_error_response_raises_typed_error(pairs):
    p = pairs(_no_methods)
    with pytest.raises(MethodNotFoundError) as info:
        p.a.request("nope")
    assert info.value.code == -32601


def test_handler_crash_is_internal_error_without_internals(pairs):
    def handler(r):
        raise RuntimeError("secret database password")

    p = pairs(handler)
    with pytest.raises(MCPError) as info:
        p.a.request("x")
    assert info.value.code == -32603
    assert "secret" not in info.value.message


def test_handlers_run_concurrently_never_on_the_reader(pairs):
    barrier = threading.Barrier(8, timeout=WAIT)
    names = []

    def handler(r):
        names.append(threading.current_thread().name)
        barrier.wait()  # breaks (→ error) unless all 8 run at the same time
        return {}

    p = pairs(handler)
    results = run_threads(lambda i: p.a.request("block"), 8, name="t-caller", timeout=WAIT)
    assert len(results) == 8
    assert all(name.startswith("b-handler-") for name in names)


def test_handler_cap_is_enforced(pairs):
    started = threading.Semaphore(0)
    release = threading.Event()
    running = []
    peak = []

    def handler(r):
        running.append(1)
        peak.append(len(running))
        started.release()
        release.wait(WAIT)
        running.pop()
        return {}

    p = pairs(handler, max_handlers=2)
    threads = [threading.Thread(target=p.a.request, args=("x",)) for _ in range(5)]
    for t in threads:
        t.start()
    assert started.acquire(timeout=WAIT) and started.acquire(timeout=WAIT)
    assert not started.acquire(timeout=0.2)  # a third must wait for a free handler
    release.set()
    for t in threads:
        t.join(WAIT)
    assert max(peak) == 2 and len(peak) == 5


def test_timeout_cancels_on_the_peer_and_connection_stays_usable(pairs):
    saw_cancel = threading.Event()

    def handler(r):
        if r.method == "slow":
            if r.cancelled.wait(WAIT):
                saw_cancel.set()
            return {"late": True}  # must never be sent: the request was cancelled
        return {"ok": True}

    p = pairs(handler)
    with pytest.raises(RequestTimeoutError) as info:
        p.a.request("slow", timeout=0.2)
    assert isinstance(info.value, TimeoutError)
    assert saw_cancel.wait(WAIT)
    assert p.a.request("fast") == {"ok": True}
    assert p.a.pending_count == 0


def test_close_fails_pending_calls(pairs):
    entered = threading.Event()

    def handler(r):
        entered.set()
        r.cancelled.wait(WAIT)
        return {}

    p = pairs(handler)
    errors = []
    t = threading.Thread(target=lambda: _capture(errors, p.a.request, "x"))
    t.start()
    assert entered.wait(WAIT)
    p.a.close()
    t.join(WAIT)
    assert len(errors) == 1 and isinstance(errors[0], ConnectionClosedError)
    with pytest.raises(ConnectionClosedError):
        p.a.request("x")


def test_peer_close_cancels_inbound_handlers(pairs):
    entered, cancelled = threading.Event(), threading.Event()

    def handler(r):
        entered.set()
        if r.cancelled.wait(WAIT):
            cancelled.set()
        return {}

    p = pairs(handler)
    threading.Thread(target=lambda: _capture([], p.a.request, "x"), daemon=True).start()
    assert entered.wait(WAIT)
    p.a.close()
    assert cancelled.wait(WAIT)
    assert p.b.wait_closed(WAIT)


def test_cancelling_a_request_cancels_its_reverse_calls(pairs):
    """b's handler calls back to a; when a cancels the forward call, the child goes too."""
    child_entered, child_cancelled = threading.Event(), threading.Event()
    child_error = []

    def a_handler(r):  # a serves the reverse call
        child_entered.set()
        if r.cancelled.wait(WAIT):
            child_cancelled.set()
        return {}

    def b_handler(r):
        try:
            r.connection.request("reverse", parent=r.id, related_request_id=r.id)
        except RequestCancelledError as exc:
            child_error.append(exc)
            raise
        return {}

    p = pairs(b_handler, a_handler=a_handler)
    with pytest.raises(RequestTimeoutError):
        p.a.request("forward", timeout=0.3)
    assert child_entered.is_set()
    assert child_cancelled.wait(WAIT)
    wait_until(lambda: child_error, timeout=WAIT)
    assert isinstance(child_error[0], RequestCancelledError)


def test_duplicate_inflight_id_is_refused():
    release = threading.Event()
    raw, tb = memory_pair()
    b = Connection(tb, on_request=lambda r: (release.wait(WAIT), {})[1], name="b").start()
    try:
        raw.send(Request(99, "x"))
        raw.send(Request(99, "x"))
        refusal = raw.receive()
        assert isinstance(refusal, ErrorResponse)
        assert refusal.id == 99 and refusal.error["code"] == -32600
        release.set()
        answer = raw.receive()
        assert isinstance(answer, Response) and answer.id == 99
    finally:
        b.close()
        raw.close()


def test_progress_arrives_before_the_result(pairs):
    def handler(r):
        token = r.params["_meta"]["progressToken"]
        for i in range(1, 51):
            r.connection.notify("notifications/progress", {"progressToken": token, "progress": i},
                                related_request_id=r.id)
        return {"done": True}

    p = pairs(handler)
    seen = []
    assert p.a.request("work", on_progress=lambda params: seen.append(params["progress"])) == {
        "done": True}
    assert seen == list(range(1, 51))


def test_middleware_order_and_drop(pairs):
    order = []

    def outer(message, next_):
        order.append(("outer", getattr(message, "method", None)))
        next_(message)

    def inner(message, next_):
        order.append(("inner", getattr(message, "method", None)))
        if getattr(message, "method", None) == "drop/me":
            return
        next_(message)

    p = pairs(lambda r: {"m": r.method}, recv_middleware=[outer, inner])
    assert p.a.request("keep") == {"m": "keep"}
    with pytest.raises(RequestTimeoutError):
        p.a.request("drop/me", timeout=0.2)
    assert order[:2] == [("outer", "keep"), ("inner", "keep")]
    assert ("inner", "drop/me") in order


def test_send_middleware_can_rewrite(pairs):
    def tag(message, next_):
        if isinstance(message, Request):
            message = Request(message.id, message.method, {**(message.params or {}), "tag": 1})
        next_(message)

    p = pairs(lambda r: dict(r.params), send_middleware=[tag])
    assert p.a.request("x", {"a": 2}) == {"a": 2, "tag": 1}


def _capture(sink, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:
        sink.append(exc)


def test_a_call_made_from_a_notification_callback_does_not_wait_on_itself():
    ta, tb = memory_pair()
    done = threading.Event()
    results = []

    def on_note(message):
        results.append(a.request("work", on_progress=lambda p: None, timeout=WAIT))
        done.set()

    a = Connection(ta, on_request=_no_methods, events=ConnectionEvents(notification=on_note),
                   name="a").start()
    b = Connection(tb, on_request=lambda r: {"ok": 1}, name="b").start()
    try:
        b.notify("hello")
        assert done.wait(WAIT)
        assert results == [{"ok": 1}]
    finally:
        a.close()
        b.close()
